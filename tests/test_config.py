"""Settings read once, the same from any working directory, and refused when wrong with a message
that names the variable (or the argument) and what it takes: a relative or ``~`` home, a ledger URL
amem cannot use, a number out of its range."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from amem.cli import main
from amem.config import (
    LINK_K_RANGE,
    LLM_CONCURRENCY_RANGE,
    LLM_RETRY_WAIT_RANGE,
    LLM_TRANSIENT_RETRIES_RANGE,
    MAX_CONTENT_CHARS_RANGE,
    NOTES_COUNT_RANGE,
    WORKER_LEASE_SECONDS_RANGE,
    Settings,
)
from amem.errors import ConfigError
from amem.memory import Memory

NOTE = "Vandelay imports latex, the renewal is in June"


def _directories(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    return first, second


def test_a_relative_home_stays_one_store_after_the_working_directory_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the ledger was opened in the first directory's relstore/, and the index, opened lazily
    at the first note, in a second relstore/ under the directory the process had moved to."""
    first, second = _directories(tmp_path)
    monkeypatch.chdir(first)
    with Memory("relstore") as mem:
        monkeypatch.chdir(second)
        note_id = mem.add_note(NOTE, actor="agent:crm", scope="vandelay")
        assert [hit.note_id for hit in mem.search("latex", scope="vandelay")] == [note_id]
    assert list(second.iterdir()) == []
    assert (first / "relstore" / "ledger.sqlite3").is_file() and (first / "relstore" / "index").is_dir()
    assert mem.home == first / "relstore"  # as `amem where` and every message show it


def test_the_index_of_a_relative_home_stays_with_its_ledger_on_both_backends(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _directories(tmp_path)
    monkeypatch.chdir(first)
    with Memory("relstore", database_url=database_url) as mem:
        monkeypatch.chdir(second)
        note_id = mem.add_note(NOTE, actor="agent:crm", scope="vandelay")
        assert [hit.note_id for hit in mem.search("latex", scope="vandelay")] == [note_id]
    assert list(second.iterdir()) == []
    assert (first / "relstore" / "index").is_dir()


def test_a_sqlite_url_with_a_relative_path_names_one_file_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings a process opened its store with, used again after ``os.chdir`` (a worker, a
    second Memory built from them), open the same ledger, not a new empty one beside the new
    working directory."""
    first, second = _directories(tmp_path)
    monkeypatch.chdir(first)
    monkeypatch.setenv("AMEM_DATABASE_URL", "sqlite:///ledger.sqlite3")
    with Memory(tmp_path / "home") as mem:
        mem.add_note(NOTE, actor="agent:crm", scope="vandelay", wait=False)
        monkeypatch.chdir(second)
        with Memory(settings=mem.settings) as again:
            assert again.count_raw_logs() == 1
    assert list(second.iterdir()) == []
    assert (first / "ledger.sqlite3").is_file()


@pytest.mark.parametrize("given_by", ["AMEM_HOME", "argument", "--home"])
def test_a_home_given_with_a_tilde_is_in_the_users_home_directory(
    given_by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: ``AMEM_HOME=~/stores/acme`` from an env file (docker --env-file, systemd's
    Environment=, which no shell expands) made a store under ./~/stores/acme in each working
    directory."""
    user, work = tmp_path / "user", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.chdir(work)
    wanted = user / "stores" / "acme"
    if given_by == "--home":
        assert main(["--home", "~/stores/acme", "add", NOTE, "--scope", "acme", "--actor", "agent:crm"]) == 0
        capsys.readouterr()
        assert main(["--home", "~/stores/acme", "where"]) == 0
        assert f"store   {wanted}" in capsys.readouterr().out
    else:
        if given_by == "AMEM_HOME":
            monkeypatch.setenv("AMEM_HOME", "~/stores/acme")
        with Memory("~/stores/acme" if given_by == "argument" else None) as mem:
            mem.add_note(NOTE, actor="agent:crm", scope="acme", wait=False)
            assert mem.home == wanted
    assert (wanted / "ledger.sqlite3").is_file()
    assert list(work.iterdir()) == []


#: URLs amem cannot open its ledger with, and what the message says of each.
UNUSABLE_URLS = [
    ("notaurl", "'notaurl'", "cannot be read as a database URL"),
    ("postgresql+psycopg://u@h:five/db", "h:five", "cannot be read as a database URL"),
    ("mysql://u@h/db", "'mysql://u@h/db'", "names a mysql database"),
    ("postgresql+asyncpg://u@h/db", "asyncpg", "names a postgresql+asyncpg database"),
    ("sqlite+aiosqlite:///x.db", "aiosqlite", "names a sqlite+aiosqlite database"),
]


@pytest.mark.parametrize(("url", "shown", "said"), UNUSABLE_URLS)
@pytest.mark.parametrize("given_by", ["AMEM_DATABASE_URL", "database_url="])
def test_a_ledger_url_amem_cannot_use_is_refused_naming_where_it_came_from(
    url: str, shown: str, said: str, given_by: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: SQLAlchemy's or the driver's own error (ArgumentError, "No module named 'MySQLdb'"),
    which names neither the variable nor what amem takes; nothing is created either way."""
    if given_by == "AMEM_DATABASE_URL":
        monkeypatch.setenv("AMEM_DATABASE_URL", url)
    with pytest.raises(ConfigError) as refused:
        Memory(tmp_path / "home", database_url=url if given_by == "database_url=" else None)
    message = str(refused.value)
    assert shown in message and said in message and given_by in message, message
    assert "SQLite (sqlite:///PATH) or PostgreSQL" in message and "postgresql+psycopg://" in message
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("option", [[], ["--database-url", "notaurl"]])
def test_the_cli_says_a_wrong_ledger_url_is_the_users_to_fix_not_a_bug(
    option: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "internal error (ArgumentError): Could not parse SQLAlchemy URL ...; this is a bug in
    amem, please report it", exit 70."""
    monkeypatch.setenv("AMEM_HOME", str(tmp_path / "home"))
    if not option:
        monkeypatch.setenv("AMEM_DATABASE_URL", "notaurl")
    code = main([*option, "add", NOTE, "--scope", "acme", "--actor", "agent:crm"])
    err = capsys.readouterr().err
    assert code == 2, err
    source = "--database-url" if option else "AMEM_DATABASE_URL"
    assert err.startswith(f"error: the ledger URL 'notaurl' ({source}") and "bug" not in err, err


def test_a_password_in_a_ledger_url_that_cannot_be_read_is_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMEM_DATABASE_URL", "postgresql+psycopg://crm:s3cret@db:port/amem")
    with pytest.raises(ConfigError) as refused:
        Settings.from_env()
    assert "s3cret" not in str(refused.value) and "crm:***@db" in str(refused.value)


def test_a_postgresql_ledger_without_psycopg_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "No module named 'psycopg'", as a bug. ``amem[postgres]`` installs it."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as on an install without the extra
    with pytest.raises(ConfigError, match=r"needs psycopg: pip install 'amem\[postgres\]'"):
        Memory(tmp_path / "home", database_url="postgresql+psycopg://crm@127.0.0.1:1/amem")


#: Each numeric setting and the range it takes.
NUMERIC_SETTINGS = [
    ("AMEM_MAX_CONTENT_CHARS", MAX_CONTENT_CHARS_RANGE),
    ("AMEM_LINK_K", LINK_K_RANGE),
    ("AMEM_LLM_CONCURRENCY", LLM_CONCURRENCY_RANGE),
    ("AMEM_LLM_TRANSIENT_RETRIES", LLM_TRANSIENT_RETRIES_RANGE),
    ("AMEM_LINK_KEYWORD_WINDOW", NOTES_COUNT_RANGE),
    ("AMEM_LINK_KEYWORD_SCOPE_LIMIT", NOTES_COUNT_RANGE),
    ("AMEM_WORKER_LEASE_SECONDS", WORKER_LEASE_SECONDS_RANGE),
    ("AMEM_LLM_RETRY_WAIT", LLM_RETRY_WAIT_RANGE),
]


@pytest.mark.parametrize(("variable", "allowed"), NUMERIC_SETTINGS)
def test_a_numeric_setting_out_of_its_range_is_refused_naming_the_variable_and_the_range(
    variable: str, allowed: tuple[float, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: AMEM_LINK_K=99999999999999999999 was taken, then every input failed with
    "OverflowError: Python int too large to convert to SQLite INTEGER"."""
    least, most = allowed
    for value in ("99999999999999999999", str(int(most) + 1)):
        monkeypatch.setenv(variable, value)
        with pytest.raises(ConfigError) as refused:
            Settings.from_env()
        assert str(refused.value).startswith(f"{variable}={value!r}: give "), refused.value
        assert f"{int(most):,}" in str(refused.value), refused.value
    for value in (least, most):  # the ends of the range are taken
        monkeypatch.setenv(variable, str(int(value)))
        Settings.from_env()


def test_a_worker_lease_under_a_second_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Renewed at a third of itself, a lease of a millisecond lapses before it can be renewed."""
    monkeypatch.setenv("AMEM_WORKER_LEASE_SECONDS", "0.001")
    with pytest.raises(ConfigError, match="from 1 to 604,800"):
        Settings.from_env()


def test_the_cli_refuses_a_link_k_too_large_before_recording_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reviewer's case: `amem add` with AMEM_LINK_K=99999999999999999999."""
    monkeypatch.setenv("AMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AMEM_LINK_K", "99999999999999999999")
    code = main(["add", NOTE, "--scope", "acme", "--actor", "agent:crm"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(
        "error: AMEM_LINK_K='99999999999999999999': give a whole number, 0 or more, up to 1,000"
    )
    assert not (tmp_path / "home").exists()
