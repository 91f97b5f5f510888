"""A backup restored with the checkpoint log kept since it was taken: the statements it reaches are
proven, the later ones said newer than it, with the events the restored ledger lacks, and never
taken for a truncation; `amem verify` of a live ledger still is."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import sqlalchemy as sa

from amem.memory import Memory
from amem.services import checkpoints
from amem.services.restore import restore
from tests.factories import make_note
from tests.ledger import tamper_cases
from tests.services.restore_setups import cli


def _events(mem: Memory) -> int:
    with mem.ledger.read() as tx:
        return int(tx.chain_state()["event_seq"])


def test_last_nights_backup_restores_with_the_checkpoint_log_kept_since(lite: Memory, tmp_path: Path) -> None:
    """The nightly backup, then the next scheduled checkpoint: before, the restore called the later
    statement a truncation ("TAMPERED ... the chain was truncated") and restored nothing, though a
    backup is what undoes the damage checkpoints reveal."""
    key, log = tmp_path / "key.pem", tmp_path / "checkpoints.jsonl"
    checkpoints.init_key(key)
    make_note(lite, "Initech renewed for two years", scope="initech")
    lite.checkpoint(key=key, log=log)
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    held = _events(lite)
    make_note(lite, "Globex asked about EU data residency", scope="globex")
    lite.checkpoint(key=key, log=log)
    signed = _events(lite)
    proof = ["--checkpoints", str(log), "--public-key", str(key)]

    code, out, err = cli("--home", str(tmp_path / "new"), "restore", str(backup), *proof)

    assert code == 0, err
    assert "TAMPERED" not in out and f"newer than this backup (events {held + 1}..{signed} not in it)" in out
    assert f"events {held + 1}..{signed} are not in it" in out and "restoring it loses them" in out
    with Memory(tmp_path / "new", create=False) as back:
        assert back.count_raw_logs() == 1 and back.notes(scope="globex") == []

    code, out, err = cli("--home", str(tmp_path / "json"), "restore", str(backup), *proof, "--json")

    assert code == 0, err
    verified = json.loads(out)["verified"]
    assert verified["ok"] and [(c["proven"], c["newer_than_ledger"]) for c in verified["checkpoints"]] == [
        (True, False),
        (False, True),
    ]


def test_verify_of_a_ledger_still_calls_the_same_gap_a_truncation(lite: Memory, tmp_path: Path) -> None:
    """Only a restore reads a later statement as newer than its backup: `amem verify` of the
    restored store (or any live one) holding fewer events than a statement signed fails as before."""
    key, log = tmp_path / "key.pem", tmp_path / "checkpoints.jsonl"
    checkpoints.init_key(key)
    make_note(lite, "Initech renewed for two years", scope="initech")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    make_note(lite, "Globex asked about EU data residency", scope="globex")
    lite.checkpoint(key=key, log=log)
    proof = ["--checkpoints", str(log), "--public-key", str(key)]
    assert restore(backup, f"sqlite:///{tmp_path / 'new' / 'ledger.sqlite3'}").restored

    code, out, _ = cli("--home", str(tmp_path / "new"), "verify", *proof)

    assert code == 1 and "TAMPERED" in out and "the chain was truncated" in out


def test_a_backup_whose_changes_differ_from_a_later_statement_is_tampered(
    lite: Memory, tmp_path: Path
) -> None:
    """A later statement's events are not in the backup, but the changes it signed are: they must be
    the ones it signed. A backup whose change history was rewritten, every hash recomputed, restores
    nothing, though no statement reaches its events."""
    key, log = tmp_path / "key.pem", tmp_path / "checkpoints.jsonl"
    checkpoints.init_key(key)
    renewal = make_note(lite, "Initech renewed for two years", scope="initech", tags=["renewal"])
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    lite.tokens.create("crm-sync", "agent")  # an event, and no change: the statement's changes are held
    lite.checkpoint(key=key, log=log)
    engine = sa.create_engine(f"sqlite:///{backup}")
    with engine.begin() as conn:  # the note's tags and their change rewritten, both chains rehashed
        tamper_cases.full_rewrite_every_hash(conn, tamper_cases.Scene(notes=[renewal.id] * 3))
    engine.dispose()
    copy = tmp_path / "copy.sqlite3"
    with sqlite3.connect(backup) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    with Memory(tmp_path / "look", database_url=f"sqlite:///{copy}", create=False) as looked:
        assert looked.verify().ok  # without the statement, nothing tells
    proof = ["--checkpoints", str(log), "--public-key", str(key)]

    code, out, _ = cli("--home", str(tmp_path / "new"), "restore", str(backup), *proof)

    assert code == 1 and "nothing restored" in out
    assert "TAMPERED: checkpoint at line 1: change " in out and "no longer has the hash it signed" in out
