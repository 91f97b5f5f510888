"""A reader that closes the pipe (``amem export events | head``) ends amem quietly with the status a
shell gives a program stopped by SIGPIPE (141), never 1, which means tampering."""

from __future__ import annotations

import errno
import io
import sys
from pathlib import Path

import pytest

from amem.cli import main
from amem.memory import Memory


class ClosedAfter(io.StringIO):
    """Standard output whose reader goes away after ``size`` characters, as ``head -c`` does."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def write(self, text: str) -> int:
        if self.tell() + len(text) > self.size:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        return super().write(text)


@pytest.mark.parametrize(
    "command",
    [["export", "events", "--format", "jsonl"], ["pending"], ["notes", "--json"]],
    ids=["export", "pending", "notes-json"],
)
def test_a_closed_pipe_ends_quietly_with_141_not_the_tampering_status(
    memory: Memory,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: exit 1 (typer's and rich's handling of a broken pipe), what `amem verify` says of a
    tampered ledger, so `set -o pipefail` scripts reading the first lines reported tampering."""
    memory.add_note("Acme decided to renew in March only with SSO", scope="acme", actor="agent:sales")
    options = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    reader = sys.stdout
    monkeypatch.setattr("sys.stdout", ClosedAfter(50))
    assert main([*options, *command]) == 141
    assert capsys.readouterr().err == ""  # nothing to say: the reader asked for no more
    monkeypatch.setattr("sys.stdout", reader)  # the next command prints in full, nothing left over
    assert main([*options, "where"]) == 0
    assert capsys.readouterr().out.startswith("store ")


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_ledger_server_that_cannot_be_reached_is_said_in_words_not_called_a_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "internal error (OperationalError) ... this is a bug in amem, please report it", exit
    70, for a PostgreSQL server that was down or a database name mistyped. Now the reason, the
    ledger (its password hidden) and what to check, exit 69 (EX_UNAVAILABLE)."""
    url = f"postgresql+psycopg://postgres:s3cret@127.0.0.1:{_closed_port()}/amem"
    assert main(["--home", str(tmp_path / "home"), "--database-url", url, "search", "SSO"]) == 69
    said = capsys.readouterr().err
    assert "the ledger database cannot be reached" in said and "Connection refused" in said
    assert "--database-url or AMEM_DATABASE_URL" in said and "bug in amem" not in said
    assert "s3cret" not in said and "postgres:***@127.0.0.1" in said


def test_a_disk_that_refuses_a_write_is_said_in_words_not_called_a_bug(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a full disk under `amem export` was "internal error (OSError) ... a bug in amem",
    exit 70. Now the disk's own words and the file, exit 74 (EX_IOERR)."""
    target = memory.home / "audit.csv"

    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr("amem.services.export.write", full)
    options = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    assert main([*options, "export", "events", "--format", "csv", "--output", str(target)]) == 74
    said = capsys.readouterr().err
    assert said.strip() == f"error: No space left on device: {target}"
