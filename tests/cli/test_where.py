"""The store is where a user expects it: AMEM_HOME / --home, else the nearest .amem, else per user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amem.cli import main


def where(capsys: pytest.CaptureFixture[str], *options: str) -> dict[str, object]:
    assert main([*options, "where", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_nearest_store_above_the_current_directory_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    assert main(["init", str(project)]) == 0
    capsys.readouterr()
    deep = project / "src" / "deep"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)

    found = where(capsys)
    assert found["store"] == str((project / ".amem").resolve())
    assert found["chosen_by"] == "nearest .amem"
    assert found["ledger"] == f"sqlite:///{(project / '.amem' / 'ledger.sqlite3').resolve()}"
    assert found["index"] == str((project / ".amem" / "index").resolve())
    # And commands run there really read that store, not a new one beside them.
    assert main(["pending"]) == 0
    assert f"nothing pending in {(project / '.amem').resolve()}" in capsys.readouterr().out
    assert not (deep / ".amem").exists()


def test_without_a_store_nearby_the_per_user_directory_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    somewhere = tmp_path / "elsewhere"
    somewhere.mkdir()
    monkeypatch.chdir(somewhere)
    found = where(capsys)
    assert found == {
        **found,
        "store": str(tmp_path / "user-data" / "amem"),  # XDG_DATA_HOME, set by tests/conftest.py
        "chosen_by": "per-user data directory",
        "exists": False,
    }
    assert not (somewhere / ".amem").exists(), "`amem where` creates nothing"

    assert main(["add", "Acme renewed", "--scope", "acme"]) == 0  # the first add makes it there
    assert (tmp_path / "user-data" / "amem").is_dir() and not (somewhere / ".amem").exists()


def test_a_command_that_only_reads_names_the_missing_store_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """search, facts, export, the queue, verify, the policy... on no store at all: one line naming the
    store it looked for and how to make one; not "run `amem db upgrade`", and no empty ledger file
    left behind (which would also install the default policy as version 1 before any password)."""
    somewhere = tmp_path / "elsewhere"
    somewhere.mkdir()
    monkeypatch.chdir(somewhere)
    user_store = tmp_path / "user-data" / "amem"
    reads = (
        ["search", "renewal"], ["facts", "--scope", "acme"], ["export", "changes"], ["pending"], ["notes"],
        ["verify"], ["policy", "export"], ["policy", "history"], ["review-stats"],
        ["history", "n_1"], ["show", "n_1"], ["checkpoint"], ["reprocess"],
    )  # fmt: skip
    for command in reads:
        assert main(command) == 2
        line = capsys.readouterr().err.strip()
        assert line == (
            f"error: no amem store at {user_store} (per-user data directory): `amem add` creates it, "
            "`amem init` makes one in this directory; `amem where` says how the store is chosen"
        )
    assert not user_store.exists() and not (somewhere / ".amem").exists()
    assert main(["policy"]) == 0  # the file the first `amem add` would install, creating nothing
    assert "no store yet" in capsys.readouterr().out and not user_store.exists()
    assert main(["search", "renewal", "--json"]) == 2
    assert json.loads(capsys.readouterr().err)["error"].startswith(f"no amem store at {user_store}")


def test_amem_home_and_then_home_option_win_over_the_nearest_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".amem").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AMEM_HOME", str(tmp_path / "from-env"))
    found = where(capsys)
    assert (found["store"], found["chosen_by"]) == (str(tmp_path / "from-env"), "AMEM_HOME")
    found = where(capsys, "--home", str(tmp_path / "from-option"))
    assert (found["store"], found["chosen_by"]) == (str(tmp_path / "from-option"), "--home")


def test_the_policy_in_force_is_named_and_a_store_may_carry_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AMEM_POLICY")
    store = tmp_path / ".amem"
    store.mkdir()
    monkeypatch.chdir(tmp_path)
    assert where(capsys)["policy"].endswith("amem/defaults/policies.yaml")  # type: ignore[union-attr]
    (store / "policies.yaml").write_text("default_mode: auto\n", encoding="utf-8")
    assert where(capsys)["policy"] == str(store / "policies.yaml")
    assert main(["policy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["default_mode"] == "auto"


def test_where_prints_one_line_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["where"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["store", "ledger", "index", "policy"]
    assert "per-user data directory" in lines[0] and "not created yet" in lines[0]


def test_a_missing_note_names_the_store_that_was_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--home", "st", "add", "Acme renewed", "--scope", "acme"]) == 0
    assert main(["--home", "st", "show", "n_nosuchnote"]) == 2
    err = capsys.readouterr().err
    assert f"note n_nosuchnote does not exist in {(tmp_path / 'st').resolve()}" in err


def test_init_never_prints_the_ledger_password(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("a SQLite URL has no password")
    from sqlalchemy.engine import make_url

    with_password = make_url(database_url).set(password="s3cret-pw").render_as_string(hide_password=False)
    monkeypatch.setenv("AMEM_DATABASE_URL", with_password)  # trust auth: any password is accepted
    assert main(["init", str(tmp_path / "project"), "--json"]) == 0
    printed = capsys.readouterr().out
    assert "s3cret-pw" not in printed
    assert json.loads(printed)["ledger"] == make_url(with_password).render_as_string(hide_password=True)


def test_the_cli_and_the_console_show_the_same_mode_for_each_attribute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rule narrowing by the proposer's kind alone: the attribute's own mode is shown (what agents
    and people get), with the rule holding a model's proposal beside it, and `amem policy` and the
    console's policy page (its read model) agree."""
    from amem.memory import Memory

    monkeypatch.delenv("AMEM_POLICY")
    store = tmp_path / ".amem"
    store.mkdir()
    monkeypatch.chdir(tmp_path)
    (store / "policies.yaml").write_text(
        "default_mode: auto\nattributes:\n  context:\n    mode: auto\n    rules:\n"
        "      - when: {proposer_kinds: [llm]}\n        mode: review\n",
        encoding="utf-8",
    )
    assert main(["policy", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["attributes"]
    cli = {a["attribute"]: (a["mode"], a["rules"]) for a in rows}
    with Memory(store) as mem:
        console = {
            a.attribute: (a.mode, [f"{r.when} -> {r.mode}" for r in a.rules])
            for a in mem.policy_overview().attributes
        }
    assert cli["context"] == console["context"] == ("auto", ["proposer is llm -> review"])
    assert cli == console


@pytest.mark.parametrize("name", ["store?mode=ro", "store%41", "store #2 copy"])
def test_a_store_whose_path_reads_as_url_syntax_opens_its_own_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """A "?", "%41" or "#" in the store's path once pointed the ledger URL at another file (or
    options); the ledger is the file in the store, whatever the directory is called."""
    from sqlalchemy import make_url

    home = tmp_path / name
    assert main(["--home", str(home), "add", "Acme renews in March", "--scope", "acme"]) == 0
    capsys.readouterr()
    found = where(capsys, "--home", str(home))
    assert make_url(str(found["ledger"])).database == str((home / "ledger.sqlite3").resolve())
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no stray ledger beside it
    assert (home / "ledger.sqlite3").stat().st_size > 0


def test_init_makes_the_store_that_home_and_amem_home_name_under_the_policy_given(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `amem --home X --policy P init` made ./.amem under the default policy, as version 1."""
    from amem.memory import Memory
    from amem.policy import fingerprint, load_policy

    mine = tmp_path / "mine.yaml"
    mine.write_text("default_mode: auto\n", encoding="utf-8")
    options = ["--home", "x", "--database-url", database_url, "--policy", str(mine)]
    assert main([*options, "init", "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["store"] == str(tmp_path / "x") and (tmp_path / "x").is_dir()
    assert not (tmp_path / ".amem").exists()
    with Memory(tmp_path / "x", database_url=database_url, policy=mine) as mem:
        installed = mem.policy_in_force.installed
        assert installed and installed.version == 1 and installed.sha256 == fingerprint(load_policy(mine))
        assert mem.policy.default_mode.value == "auto"

    monkeypatch.setenv("AMEM_HOME", str(tmp_path / "from-env"))
    assert main(["init"]) == 0
    assert f"store {tmp_path / 'from-env'} ready" in capsys.readouterr().out
    assert (tmp_path / "from-env" / "ledger.sqlite3").is_file() and not (tmp_path / ".amem").exists()
    assert main(["init", "project"]) == 0  # a directory given: its .amem, as `git init DIR`
    assert (tmp_path / "project" / ".amem" / "ledger.sqlite3").is_file()
    capsys.readouterr()
    assert main(["--home", "elsewhere", "init", "project"]) == 2
    assert "give the store's place once" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere").exists()
