"""A restore killed midway (SIGKILL, OOM) leaves its temporary copy, a whole ledger, beside the
target: the next restore into that directory and an erasure remove it, never one in use."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from amem.errors import InvalidInputError
from amem.memory import Memory
from amem.services import restore as restoring
from amem.services.restore import copies_of_stopped_restores, restore
from tests.factories import make_note
from tests.services.restore_setups import cli, execute, holding, killed_restore, tables, team_dump

#: Only in the raw log the backup holds: found in a file, that file holds the store's text.
_SECRET = "Zebulon 5551234567"


@pytest.fixture
def backup(lite: Memory, tmp_path: Path) -> Path:
    make_note(lite, f"Initech contact is John {_SECRET}", scope="initech")
    return Path(lite.backup(tmp_path / "b.sqlite3").path)


def test_the_copy_a_killed_restore_left_is_removed_by_the_next_restore(backup: Path, tmp_path: Path) -> None:
    """Before, `.ledger.sqlite3.XXXX.restoring` (with -wal, -shm) stayed in the store directory for
    good, a hidden full copy of the ledger that the next restore neither removed nor mentioned."""
    store = tmp_path / "new"
    killed_restore(backup, f"sqlite:///{store / 'ledger.sqlite3'}")
    left = [p.name for p in store.iterdir() if ".restoring" in p.name]
    assert left and holding(store, _SECRET)

    code, out, err = cli("--home", str(store), "restore", str(backup), "--json")

    assert code == 0, err
    assert sorted(p.name for p in store.iterdir() if ".restoring" in p.name) == []
    report = json.loads(out)
    assert report["restored"] and report["left"] == []
    copy = next(name for name in left if name.endswith(".restoring"))
    assert any(str(store / copy) in line for line in report["cleaned"])
    assert holding(store, _SECRET) == ["ledger.sqlite3"]


def test_an_erasure_can_remove_the_copies_killed_restores_left_beside_the_ledger(
    backup: Path, tmp_path: Path
) -> None:
    """The copy a restore into another file of the store's directory was killed making holds the
    backup's text; what an erasure calls removes it, so the erased text leaves the directory."""
    store = tmp_path / "new"
    restore(backup, f"sqlite:///{store / 'ledger.sqlite3'}")
    killed_restore(backup, f"sqlite:///{store / 'second.sqlite3'}")
    assert ".second.sqlite3." in " ".join(holding(store, _SECRET))

    found = copies_of_stopped_restores(f"sqlite:///{store / 'ledger.sqlite3'}")

    assert found.left == [] and any(".second.sqlite3." in line for line in found.removed)
    assert sorted(p.name for p in store.iterdir() if ".restoring" in p.name) == []
    assert copies_of_stopped_restores("postgresql+psycopg://amem@127.0.0.1/amem").removed == []


def test_a_copy_an_earlier_amem_left_goes_only_when_its_target_holds_a_ledger(
    backup: Path, tmp_path: Path
) -> None:
    """A copy named as the amem before the locks named it (``tempfile.mkstemp``) tells no process:
    its restore may still run, unless the file it restores into holds a ledger by now (then that
    restore will be refused, a restore never overwrites a ledger). The first is reported, kept."""
    store = tmp_path / "new"
    restore(backup, f"sqlite:///{store / 'ledger.sqlite3'}")
    doomed = store / ".ledger.sqlite3.9gxjado2.restoring"
    running = store / ".other.sqlite3.k2m0a7_q.restoring"
    for copy in (doomed, running):
        shutil.copyfile(backup, copy)

    found = copies_of_stopped_restores(f"sqlite:///{store / 'ledger.sqlite3'}")

    assert not doomed.exists() and any(str(doomed) in line for line in found.removed)
    assert running.exists() and len(found.left) == 1 and str(running) in found.left[0]
    assert "may still be running" in found.left[0]


def test_a_restore_leaves_alone_the_copy_a_running_restore_uses(
    backup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second restore into the same directory, run while the first verifies, and an erasure's
    clean-up then, take nothing from the first: it is restored whole, and reported as in use."""
    store = tmp_path / "new"
    verify = restoring.verify_ledger
    beside: list[Any] = []
    started: list[bool] = []

    def another_restore_meanwhile(*args: Any, **kwargs: Any) -> Any:
        if not started:  # once: the second restore verifies as usual
            started.append(True)
            beside.append(restore(backup, f"sqlite:///{store / 'second.sqlite3'}"))
            beside.append(copies_of_stopped_restores(f"sqlite:///{store / 'second.sqlite3'}"))
        return verify(*args, **kwargs)

    monkeypatch.setattr(restoring, "verify_ledger", another_restore_meanwhile)
    first = restore(backup, f"sqlite:///{store / 'ledger.sqlite3'}")

    second, found = beside
    assert first.restored and second.restored and second.cleaned == [] and found.removed == []
    assert len(second.left) == 1 and "in use by process" in second.left[0]
    assert len(found.left) == 1 and "in use by process" in found.left[0]
    assert sorted(p.name for p in store.iterdir()) == ["ledger.sqlite3", "second.sqlite3"]
    with Memory(tmp_path / "home2", database_url=first.ledger_url, create=False) as back:
        assert back.count_raw_logs() == 1 and back.verify().ok


@pytest.mark.postgres
def test_a_postgresql_restore_killed_while_verifying_is_refused_again_saying_how_to_prove_or_drop_it(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """A PostgreSQL restore makes no temporary copy: pg_restore commits into the target itself, so
    one killed while verifying leaves the backup's ledger there, unproven, as a store put into
    service there would look. It is not dropped for the operator; before, the next restore said only
    "holds 17 table(s) already ... restore into a new database", which left that copy behind for
    good, unverified and beyond any erasure's reach."""
    source, target = new_database(), new_database()
    dump = team_dump(source, tmp_path / "team", f"Initech contact is John {_SECRET}")
    killed_restore(dump, target)
    assert tables(target, "public") > 0  # what the kill left: the whole ledger, in the target

    with pytest.raises(InvalidInputError, match=r"holds \d+ table\(s\) already") as refused:
        restore(dump, target)

    said = str(refused.value)
    assert "restore killed while verifying" in said and 'DROP SCHEMA "public" CASCADE' in said
    shown = re.search(r"`amem --database-url '([^']+)' verify`", said)
    assert shown is not None, said
    code, out, err = cli("--home", str(tmp_path / "check"), "--database-url", shown.group(1), "verify")
    assert code == 0 and "TAMPERED" not in out, (out, err)  # the advice proves the ledger left there
    execute(target, 'DROP SCHEMA "public" CASCADE')  # the other way out it names: drop, restore again
    report = restore(dump, target)
    assert report.restored and report.heads["counts"]["raw_log"] == 1
