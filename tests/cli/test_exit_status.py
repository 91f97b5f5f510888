"""A reader that closes the pipe (``amem export events | head``) ends amem quietly with the status a
shell gives a program stopped by SIGPIPE (141), never 1, which means tampering."""

from __future__ import annotations

import errno
import io
import sys

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
