"""An erasure reaches the whole copies of the ledger that restores and backups killed midway left
where the ledger lives (a restore's temporary copy or a backup's partial file beside a SQLite
ledger, a backup's scratch database on a PostgreSQL ledger's server): before, only the next restore
or backup into the same place removed them, and the erased text stayed in them meanwhile."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import sqlalchemy as sa

from amem.memory import Memory
from amem.services import restore as restoring
from amem.services.restore import restore
from tests.conftest import REVIEWER_PASSWORDS
from tests.factories import make_note
from tests.services.restore_setups import cli, holding, killed_backup, killed_restore

#: Only in the raw log erased: found in a file, that file holds the erased text.
_SECRET = "Zebulon 5551234567"


@pytest.fixture(autouse=True)
def _passwords(reviewer_passwords: dict[str, str]) -> None:
    """Every reviewer has a password; `amem erase` gets the eraser's on standard input."""


def _erased(memory: Memory, raw_log_id: str) -> dict[str, Any]:
    """`amem erase --raw-log RAW_LOG_ID --json` by alice, an eraser: the report it prints."""
    argv = ["--home", str(memory.home), "--database-url", memory.settings.database_url]
    argv += ["erase", "--raw-log", raw_log_id, "--reviewer", "alice", "--reason", "GDPR art. 17"]
    with patch("sys.stdin", io.StringIO(REVIEWER_PASSWORDS["alice"] + "\n")):
        code, out, err = cli(*argv, "--password-stdin", "--json")
    assert code == 0, err
    return json.loads(out)


def _databases(memory: Memory) -> set[str]:
    with memory.ledger.engine.connect() as conn:
        return set(conn.execute(sa.text("SELECT datname FROM pg_database")).scalars())


def test_an_erasure_removes_the_copy_a_killed_restore_left_beside_the_ledger_and_names_it(
    lite: Memory, tmp_path: Path
) -> None:
    """A restore into another file of the store's directory (a copy to look at, beside the live
    store), killed while verifying: its hidden `.inspect.sqlite3.*.restoring` is the whole ledger,
    the text to erase included, and the erasure left it there."""
    note = make_note(lite, f"Initech contact is John {_SECRET}", scope="initech")
    make_note(lite, "Initech renewed for two years", scope="initech")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    store = lite.home
    killed_restore(backup, f"sqlite:///{store / 'inspect.sqlite3'}")
    (copy,) = [p.name for p in store.iterdir() if p.name.endswith(".restoring")]
    assert copy in holding(store, _SECRET)

    report = _erased(lite, note.raw_log_ids[0])

    assert report["raw_logs"] == 1 and report["copies_left"] == []
    assert any(line.startswith(f"{store / copy} (") for line in report["copies_removed"])
    assert [p.name for p in store.iterdir() if "restoring" in p.name] == []
    assert holding(store, _SECRET) == []  # the ledger erased and compacted, the copy gone
    assert lite.count_raw_logs() == 2 and lite.verify().ok


def test_a_backup_killed_while_verifying_leaves_no_copy_of_the_erased_text_after_the_erasure(
    memory: Memory, tmp_path: Path
) -> None:
    """SQLite: a backup written into the ledger's own directory, killed, leaves its partial file
    there; PostgreSQL: a killed backup leaves its scratch database, the dump restored, on the
    server. Either is a whole ledger holding the text, and the erasure removes it and says so."""
    note = make_note(memory, f"Initech contact is John {_SECRET}", scope="initech")
    postgres = memory.ledger.dialect == "postgresql"
    beside = tmp_path if postgres else Path(str(sa.make_url(memory.settings.database_url).database)).parent
    scratch = killed_backup(memory, tmp_path / "killed-home", beside / "nightly.backup")
    (partial,) = [p.name for p in beside.iterdir() if p.name.endswith(".partial")]
    if postgres:
        assert scratch in _databases(memory)
    else:
        assert partial in holding(beside, _SECRET)

    report = _erased(memory, note.raw_log_ids[0])

    assert report["raw_logs"] == 1 and report["copies_left"] == []
    if postgres:  # its partial dump lies where the backup was to go, which no erasure knows of
        assert scratch not in _databases(memory)
        assert any(line.startswith(f"database {scratch} (") for line in report["copies_removed"])
    else:
        assert any(line.startswith(f"{beside / partial} (") for line in report["copies_removed"])
        assert [p.name for p in beside.iterdir() if ".partial" in p.name] == []
        assert holding(beside, _SECRET) == []


def test_an_erasure_leaves_the_copy_of_a_restore_still_running_and_says_so(
    lite: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An erasure run while a restore beside the ledger verifies its copy takes nothing from it:
    the restore ends restored, and the report names the copy as in use (the restore removes it)."""
    note = make_note(lite, f"Initech contact is John {_SECRET}", scope="initech")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    verify = restoring.verify_ledger
    erased: list[dict[str, Any]] = []

    def an_erasure_meanwhile(*args: Any, **kwargs: Any) -> Any:
        erased.append(_erased(lite, note.raw_log_ids[0]))
        return verify(*args, **kwargs)

    monkeypatch.setattr(restoring, "verify_ledger", an_erasure_meanwhile)
    restored = restore(backup, f"sqlite:///{lite.home / 'inspect.sqlite3'}")

    (report,) = erased
    assert restored.restored and report["raw_logs"] == 1 and report["copies_removed"] == []
    assert len(report["copies_left"]) == 1 and "in use by process" in report["copies_left"][0]
    assert ".inspect.sqlite3." in report["copies_left"][0]
    assert sorted(p.name for p in lite.home.iterdir() if "restoring" in p.name) == []


def test_amem_erase_says_which_copies_it_removed(lite: Memory, tmp_path: Path) -> None:
    """Read as text, the erasure names each copy it removed, as its JSON report does."""
    note = make_note(lite, f"Initech contact is John {_SECRET}", scope="initech")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    killed_restore(backup, f"sqlite:///{lite.home / 'inspect.sqlite3'}")
    (copy,) = [p.name for p in lite.home.iterdir() if p.name.endswith(".restoring")]
    argv = ["--home", str(lite.home), "--database-url", lite.settings.database_url, "erase"]
    argv += ["--raw-log", note.raw_log_ids[0], "--reviewer", "alice", "--reason", "GDPR art. 17"]
    with patch("sys.stdin", io.StringIO(REVIEWER_PASSWORDS["alice"] + "\n")):
        code, out, err = cli(*argv, "--password-stdin")
    assert code == 0, err
    assert f"removed {lite.home / copy} (" in out
