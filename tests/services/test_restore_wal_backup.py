"""A backup an older amem wrote in WAL mode is restored by reading its bytes: nothing is written
beside it (so it restores from read-only media too), and what its write-ahead log holds comes back."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

from amem.memory import Memory
from tests.factories import make_note
from tests.services.restore_setups import cli


def _in_wal_mode(backup: Path) -> None:
    """``backup`` marked WAL, as `amem backup` left its copies before it set rollback-journal mode."""
    conn = sqlite3.connect(backup)
    try:
        assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    finally:
        conn.close()
    assert backup.read_bytes()[18:20] == b"\x02\x02"
    assert [p.name for p in backup.parent.iterdir() if p.name.startswith(backup.name)] == [backup.name]


def test_a_wal_mode_backup_is_restored_without_writing_beside_it(lite: Memory, tmp_path: Path) -> None:
    """Before, the restore opened it with SQLite (mode=ro), which left b.sqlite3-shm and
    b.sqlite3-wal beside it, and from read-only media failed ("unable to open database file",
    exit 70)."""
    renewal = make_note(lite, "Initech renewed for two years", scope="initech")
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    backup = Path(lite.backup(shelf / "b.sqlite3").path)
    _in_wal_mode(backup)
    before = hashlib.sha256(backup.read_bytes()).hexdigest()

    code, out, err = cli("--home", str(tmp_path / "new"), "restore", str(backup), "--json")

    assert code == 0, err
    assert json.loads(out)["restored"]
    assert sorted(p.name for p in shelf.iterdir()) == ["b.sqlite3"]
    assert hashlib.sha256(backup.read_bytes()).hexdigest() == before
    with Memory(tmp_path / "new", create=False) as back:
        assert back.read(renewal.id).content == "Initech renewed for two years" and back.verify().ok
    assert sorted(p.name for p in (tmp_path / "new").iterdir() if "restoring" in p.name) == []


def test_what_the_write_ahead_log_beside_a_backup_holds_is_restored(lite: Memory, tmp_path: Path) -> None:
    """A backup copied with its -wal while a process had it open (its last commit in the log, not
    yet in the file): SQLite reads the two together, and so does the restore."""
    make_note(lite, "Initech renewed for two years", scope="initech")
    (tmp_path / "kept").mkdir()
    backup = Path(lite.backup(tmp_path / "kept" / "b.sqlite3").path)
    _in_wal_mode(backup)
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    with Memory(tmp_path / "writer", database_url=f"sqlite:///{backup}", create=False) as writer:
        later = make_note(writer, "Initech asked for SSO", scope="initech")
        wal = backup.with_name(backup.name + "-wal")
        assert wal.stat().st_size > 0
        for part in (backup, wal):  # as a copy of the files taken while it is open
            shutil.copyfile(part, shelf / part.name)
    copied = shelf / backup.name

    code, _, err = cli("--home", str(tmp_path / "new"), "restore", str(copied))

    assert code == 0, err
    with Memory(tmp_path / "new", create=False) as back:
        assert back.count_raw_logs() == 2 and back.read(later.id).content == "Initech asked for SSO"
        assert back.verify().ok
    assert sorted(p.name for p in shelf.iterdir()) == ["b.sqlite3", "b.sqlite3-wal"]
