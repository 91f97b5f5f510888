"""What a killed backup left is removed by the next backup into the same directory, whatever that
one's file is called (backups are named by date), and never what a running backup writes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from amem.memory import Memory
from amem.services.backup import claimed_beside
from tests.conftest import REPO
from tests.factories import make_note

_KILLED_WHILE_VERIFYING = """
import os, signal, sys
from pathlib import Path
from amem.memory import Memory
from amem.services import backup

backup.verify_ledger = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
Memory(Path(sys.argv[1]), database_url=sys.argv[2], create=False).backup(sys.argv[3])
"""


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Memory]:
    mem = Memory(tmp_path / "home")  # the embedded default: a SQLite ledger
    yield mem
    mem.close()


def test_a_killed_backups_partial_is_removed_by_the_next_backup_of_another_date(
    memory: Memory, tmp_path: Path
) -> None:
    """Before, only a later backup to the very same file name removed them: with dated names (the
    README's own ledger-2026-12-05.sqlite3) the partial copy, its lock and SQLite's files stayed."""
    make_note(memory, "Acme pays $42 per seat")
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WHILE_VERIFYING, str(tmp_path / "killed-home"),
         memory.settings.database_url, str(shelf / "ledger-2026-12-05.sqlite3")],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    (partial,) = shelf.glob("ledger-2026-12-05.sqlite3.*.partial")

    report = memory.backup(shelf / "ledger-2026-12-06.sqlite3")

    assert report.verified.ok
    assert sorted(p.name for p in shelf.iterdir()) == ["ledger-2026-12-06.sqlite3"]
    assert any(str(partial) in line for line in report.cleaned)


def test_the_next_backup_leaves_alone_a_running_backup_of_another_name(lite: Memory, tmp_path: Path) -> None:
    """Looking at the whole directory takes nothing from a backup still writing its copy there: it
    holds the lock of its partial file."""
    make_note(lite, "Acme pays $42 per seat")
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    with claimed_beside(shelf / "ledger-2026-12-05.sqlite3") as running:
        running.write_bytes(b"the copy being written")

        report = lite.backup(shelf / "ledger-2026-12-06.sqlite3")

        assert report.verified.ok and report.cleaned == []
        assert running.read_bytes() == b"the copy being written"
    assert sorted(p.name for p in shelf.iterdir()) == ["ledger-2026-12-06.sqlite3"]
