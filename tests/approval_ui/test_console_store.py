"""Which store the console opens: an existing one only, and what it says when it cannot reach it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from amem.cli import main
from amem.config import sqlite_url
from amem.domain.models import ProposalStatus
from amem.memory import Memory
from tests.approval_ui.conftest import APP, open_console, plain, texts
from tests.approval_ui.test_review_queue import hold
from tests.factories import said


def _errors(at: AppTest) -> str:
    return plain(" ".join(e.value for e in at.error))


def _nothing_listens() -> str:
    """A PostgreSQL URL on a loopback port no server listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return f"postgresql+psycopg://amem:secret@127.0.0.1:{port}/ledger"


def test_a_mistyped_store_is_named_and_nothing_is_created(
    mem: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console made an empty ledger at a mistyped AMEM_HOME and said "Nothing waiting for
    review", while the real store's items waited: it now opens an existing store only."""
    hold(mem, said(mem, "Acme: next step is to send the quote."), "next_step", "send the quote")
    typo = tmp_path / "hoem"
    monkeypatch.setenv("AMEM_HOME", str(typo))
    monkeypatch.setenv("AMEM_DATABASE_URL", sqlite_url(typo / "ledger.sqlite3"))  # as `amem ui` passes it
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"no amem ledger at {typo / 'ledger.sqlite3'}" in _errors(at)
    assert "creates none" in _errors(at) and "Nothing waiting" not in texts(at)
    monkeypatch.delenv("AMEM_DATABASE_URL")  # the store found from AMEM_HOME alone: the same
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception and f"no amem ledger at {typo / 'ledger.sqlite3'}" in _errors(at)
    assert not typo.exists()


def test_the_quick_starts_store_opens_in_the_console(
    console_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's order on a fresh machine, `amem init` then `amem ui`, still opens the console."""
    monkeypatch.delenv("AMEM_HOME")
    monkeypatch.delenv("AMEM_DATABASE_URL")
    assert main(["init"]) == 0  # ./.amem, in the test's own directory
    store = tmp_path / ".amem"
    monkeypatch.setenv("AMEM_HOME", str(store))
    monkeypatch.setenv("AMEM_DATABASE_URL", sqlite_url(store / "ledger.sqlite3"))
    at = open_console("alice")
    assert "Nothing waiting for review here." in texts(at) and not at.error


def test_a_store_whose_path_holds_characters_a_url_escapes_opens(
    console_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store in "Team #2, 100% ?" works from the CLI; the console read its file name from the
    escaped URL ("%232", "100%25") and refused it as missing."""
    monkeypatch.delenv("AMEM_DATABASE_URL")
    store = tmp_path / "Team #2, 100% ?"
    assert main(["--home", str(store), "init"]) == 0
    monkeypatch.setenv("AMEM_HOME", str(store))
    monkeypatch.setenv("AMEM_DATABASE_URL", sqlite_url(store / "ledger.sqlite3"))  # as `amem ui` passes it
    at = open_console("alice")
    assert not at.error, _errors(at)
    assert "Nothing waiting for review here." in texts(at)


def test_an_unreachable_ledger_database_is_said_at_the_first_open_and_after_a_click(
    mem: Memory, console_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI says the ledger database cannot be reached; the console showed the driver's
    traceback, at the first open and at a click once the database was gone. Both now say what the
    CLI says, password hidden, and the page comes back once the database answers."""
    note = said(mem, "Acme: next step is to send the quote.")
    p = hold(mem, note, "next_step", "send the quote")
    down = _nothing_listens()
    monkeypatch.setenv("AMEM_DATABASE_URL", down)
    first = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not first.exception, [e.value for e in first.exception]
    said_first = _errors(first)
    assert said_first.startswith("The ledger database cannot be reached (") and "secret" not in said_first
    assert down.replace("secret", "***") in said_first

    monkeypatch.setenv("AMEM_DATABASE_URL", console_env["AMEM_DATABASE_URL"])
    at = open_console("alice")
    monkeypatch.setenv("AMEM_DATABASE_URL", down)  # gone between drawing the page and the click
    at.button(key=f"approve_item_{note.raw_log_ids[0]}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _errors(at).count("The ledger database cannot be reached (") == 1
    monkeypatch.setenv("AMEM_DATABASE_URL", console_env["AMEM_DATABASE_URL"])  # back
    at.run()
    assert not at.error and f"approve_item_{note.raw_log_ids[0]}" in [b.key for b in at.button]
    assert mem.proposal(p.id).status == ProposalStatus.PENDING


def _serving(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The command lines `amem ui` would become (os.execve, recorded instead of run)."""
    started: list[list[str]] = []

    def record(path: str, argv: list[str], env: dict[str, str]) -> None:
        started.append(argv)
        raise SystemExit(0)

    monkeypatch.setattr("amem.cli.ui.os.execve", record)
    return started


def test_amem_ui_on_a_mistyped_store_says_how_to_make_one_and_creates_nothing(
    console_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`amem --home hoem ui` made an empty hoem/ directory, then served a console that refused it.
    It now refuses before serving, naming the store and `amem init`, whether the store is given by
    its directory or by a SQLite URL, and creates nothing."""
    monkeypatch.delenv("AMEM_HOME")
    monkeypatch.delenv("AMEM_DATABASE_URL")
    started = _serving(monkeypatch)
    typo = tmp_path / "hoem"

    assert main(["--home", str(typo), "ui"]) == 2
    said_home = " ".join(capsys.readouterr().err.split())
    assert f"no amem store at {typo} (--home)" in said_home and f"`amem --home {typo} init`" in said_home
    url = sqlite_url(typo / "ledger.sqlite3")
    assert main(["--database-url", url, "ui"]) == 2
    said_url = " ".join(capsys.readouterr().err.split())
    assert f"no amem ledger at {typo / 'ledger.sqlite3'}" in said_url and "`amem init`" in said_url
    assert started == [] and not typo.exists()


def test_the_quick_starts_init_then_ui_serves_the_store(
    console_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's order, `amem init` then `amem ui` in the same directory, starts the console on
    the store init made."""
    monkeypatch.delenv("AMEM_HOME")
    monkeypatch.delenv("AMEM_DATABASE_URL")
    started = _serving(monkeypatch)
    assert main(["init"]) == 0
    with pytest.raises(SystemExit):
        main(["ui"])
    assert len(started) == 1 and started[0][3:5] == ["run", str(APP.resolve())]


def test_reviewers_list_before_init_reads_the_policy_file_and_creates_no_store(
    console_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before `amem init` the policy file is the one init will install: `amem reviewers list`
    refused "no amem store" instead of listing it, and with a SQLite URL made an empty ledger."""
    import json

    monkeypatch.delenv("AMEM_HOME")
    assert main(["reviewers", "list", "--json"]) == 0
    assert {"alice", "bob", "audrey", "carol"} <= {r["reviewer"] for r in json.loads(capsys.readouterr().out)}
    assert not (tmp_path / "ledger.sqlite3").exists()  # console_env's AMEM_DATABASE_URL
    monkeypatch.delenv("AMEM_DATABASE_URL")
    assert main(["reviewers", "list", "--json"]) == 0
    assert "alice" in {r["reviewer"] for r in json.loads(capsys.readouterr().out)}
    assert not (tmp_path / "user-data" / "amem").exists()  # the per-user store, not made
