"""Ledgers an older amem made, upgraded by this one: `amem db upgrade` finishes what that amem left.

Each test builds the old state as that amem kept it (Alembic to its revision, plus the rows its code
wrote), upgrades, and uses the ledger as a user would: list, search, facts, tokens, verify.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations

from amem.domain.models import ERASURE_RULE
from amem.ledger import schema
from amem.ledger.store import create_engine
from amem.memory import Memory
from amem.services import erasure
from tests.factories import make_note, signed_in
from tests.ledger import older_ledgers


def _without_0006(engine: sa.Engine) -> None:
    """Undo 0006 alone (its leases and API tokens), leaving the stamp: what a ledger stamped 0007 or
    0008 by amem c407e77-591dd53 held, whose 0007 revised 0005 (0006 joined the chain after)."""
    path = schema.migrations_dir() / "versions" / "0006_agents_queue_tokens.py"
    spec = importlib.util.spec_from_file_location("migration_0006", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with engine.begin() as conn, Operations.context(MigrationContext.configure(conn)):
        module.downgrade()


@pytest.mark.parametrize("stamp", ["0007", "0008"])
def test_a_ledger_made_while_0007_revised_0005_upgrades(
    memory: Memory, database_url: str, tmp_path: Path, stamp: str
) -> None:
    """Before, the upgrade stopped at 0015 ("no such table: api_tokens"), and the ledger could not
    be opened by any amem since 2026-12-01 00:18."""
    note = make_note(memory, "Acme wants SSO by March")
    memory.close()
    engine = create_engine(database_url)
    if stamp == "0008":
        schema.downgrade(engine, "0008")
    else:
        older_ledgers.back_to(engine, "0007")
    _without_0006(engine)
    assert "api_tokens" not in sa.inspect(engine).get_table_names()

    schema.upgrade(engine)
    assert schema.current_revision(engine) == schema.head_revision()
    engine.dispose()
    with Memory(tmp_path / "again", database_url=database_url) as mem:
        assert [n.id for n in mem.notes()] == [note.id]
        token, info = mem.tokens.create("crm-sync", "agent")
        assert mem.tokens.authenticate(token).name == info.name
        (queued,) = mem.add_notes(
            [{"content": "Acme renews in May", "scope": "acme"}], actor="crm-sync", wait=False
        )
        assert mem.input_status(queued.raw_log_id).status == "queued"
        assert mem.verify().ok, mem.verify().problems


def _erased_as_before_tombstones(memory: Memory, raw_log_id: str) -> None:
    """Erase as an amem before 2026-12-05 did: the note redacted but not marked deleted (no
    governance), the input's queue state left as it was (``processed``), the index rebuilt."""
    erasure.erase(
        memory.ledger, memory.policy, by="alice", reason="data subject request", raw_log_id=raw_log_id
    )
    with memory.ledger.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE raw_log_states SET state = 'processed' WHERE raw_log_id = :r"), {"r": raw_log_id}
        )
    memory.reindex()


def _upgraded_from_0026(memory: Memory, database_url: str) -> None:
    """The store closed and its ledger upgraded from 0026, as `amem db upgrade` by this amem does."""
    memory.close()
    engine = create_engine(database_url)
    schema.downgrade(engine, "0026")
    schema.upgrade(engine)
    engine.dispose()


def test_notes_an_older_erasure_left_live_are_marked_deleted_by_the_upgrade(
    memory: Memory, database_url: str, tmp_path: Path
) -> None:
    """Before, the erased note stayed "[erased]" after the upgrade: listed, found by search, among
    the account's facts, and its input's status "done" instead of erased."""
    kept = make_note(memory, "Acme wants SSO by March")
    gone = make_note(memory, "Jane Roe is Acme's champion; she prefers Zoom calls")
    (raw_log_id,) = gone.raw_log_ids
    _erased_as_before_tombstones(memory, raw_log_id)
    # a later erasure by this amem marks its note deleted itself: the upgrade leaves that one alone
    later = make_note(memory, "Bob Stone signs for Acme")
    memory.erase(by=signed_in(memory, "alice"), reason="another request", raw_log_id=later.raw_log_ids[0])
    assert gone.id in {n.id for n in memory.notes()}  # the old state, as the older amem left it
    _upgraded_from_0026(memory, database_url)

    with Memory(tmp_path / "again", database_url=database_url) as mem:
        assert [n.id for n in mem.notes(scope="acme")] == [kept.id]
        assert gone.id not in {h.note.id for h in mem.search("erased", scope="acme")}
        assert [f.note.id for f in mem.facts("acme").facts] == [kept.id]
        assert mem.input_status(raw_log_id).status == "erased"
        (tombstone,) = [e for e in mem.history(gone.id) if e.attribute == "deleted" and e.event == "applied"]
        assert tombstone.actor == "person:alice" and tombstone.new_value is True
        with mem.ledger.read() as tx:
            rules = tx.conn.execute(
                sa.text("SELECT note_id, reason FROM proposals WHERE rule = :r ORDER BY seq"),
                {"r": ERASURE_RULE},
            ).all()
        (first_erasure,) = [e.id for e in mem.erasures() if e.reason == "data subject request"]
        assert sorted(n for n, _ in rules) == sorted([later.id, gone.id])  # one tombstone each
        assert (gone.id, f"erasure {first_erasure}") in rules
        assert mem.verify().ok, mem.verify().problems


def test_a_note_of_inputs_two_older_erasures_erased_is_deleted_by_the_first(
    memory: Memory, database_url: str, tmp_path: Path
) -> None:
    """A note drawn from two inputs, each erased by an older amem's erasure: its tombstone names the
    first erasure in time (the upgrade picked by the erasures' random ids, so half the notes named
    the later one)."""
    pairs = [
        (make_note(memory, f"Acme call {i}: SSO by March"), make_note(memory, f"Acme call {i}b"))
        for i in range(8)
    ]
    with memory.ledger.engine.begin() as conn:  # each first note drawn from both inputs, as evolution does
        for first, second in pairs:
            both = [*first.raw_log_ids, *second.raw_log_ids]
            conn.execute(
                sa.update(sa.table("notes", sa.column("id"), sa.column("raw_log_ids", sa.JSON)))
                .where(sa.column("id") == first.id)
                .values(raw_log_ids=both)
            )
    for first, _ in pairs:
        _erased_as_before_tombstones(memory, first.raw_log_ids[0])
    for _, second in pairs:
        _erased_as_before_tombstones(memory, second.raw_log_ids[0])
    _upgraded_from_0026(memory, database_url)

    with Memory(tmp_path / "again", database_url=database_url) as mem:
        first_of = {e.raw_log: e.id for e in mem.erasures()}
        with mem.ledger.read() as tx:
            reasons = dict(
                tx.conn.execute(
                    sa.text("SELECT note_id, reason FROM proposals WHERE rule = :r"), {"r": ERASURE_RULE}
                ).all()
            )
        assert {first.id: reasons[first.id] for first, _ in pairs} == {
            first.id: f"erasure {first_of[first.raw_log_ids[0]]}" for first, _ in pairs
        }
