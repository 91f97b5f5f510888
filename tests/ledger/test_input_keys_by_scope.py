"""Migration 0023: an idempotency key names one input per author and scope (``input_keys.scope``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.errors import MigrationRefusedError
from amem.ledger import schema
from amem.memory import Memory


def test_keys_recorded_before_0023_take_their_inputs_scope_and_still_recognise_retries(
    memory: Memory, tmp_path: Path
) -> None:
    """0023 keeps a key per author and scope: the keys recorded before take the scope of the input
    they name, a retry is still kept once, and the table stays append-only (SQLite rebuilds it)."""
    lines = [
        {"content": "Acme wants SSO", "scope": "acme", "idempotency_key": "msg-1"},
        {"content": "Globex wants SSO", "scope": "globex", "idempotency_key": "msg-2"},
    ]
    first = memory.add_notes(lines, actor="agent:mail", wait=False)
    schema.downgrade(memory.ledger.engine, "0022")
    columns = {c["name"] for c in sa.inspect(memory.ledger.engine).get_columns("input_keys")}
    assert "scope" not in columns

    schema.upgrade(memory.ledger.engine)

    with memory.ledger.engine.connect() as conn:
        scoped = conn.execute(sa.text("SELECT scope FROM input_keys ORDER BY scope")).scalars().all()
    assert scoped == ["acme", "globex"]
    with memory.ledger.engine.connect() as conn, pytest.raises(sa.exc.DatabaseError):
        conn.execute(sa.text("UPDATE input_keys SET raw_log_id = 'r_other'"))
    with Memory(tmp_path / "again", database_url=memory.settings.database_url) as reopened:
        again = reopened.add_notes(lines, actor="agent:mail", wait=False)
        assert [a.raw_log_id for a in again] == [f.raw_log_id for f in first]
        assert all(a.recorded_before for a in again) and reopened.count_raw_logs() == 2
        other = reopened.add_notes([lines[0] | {"scope": "initech"}], actor="agent:mail", wait=False)
        assert not other[0].recorded_before and reopened.count_raw_logs() == 3
        assert reopened.verify().ok


def test_a_downgrade_below_0023_is_refused_while_a_key_names_inputs_in_two_scopes(memory: Memory) -> None:
    """0022 keeps one input per author and key: it could not hold both."""
    lines = [
        {"content": "Acme wants SSO", "scope": "acme", "idempotency_key": "ticket-42"},
        {"content": "Globex wants SSO", "scope": "globex", "idempotency_key": "ticket-42"},
    ]
    memory.add_notes(lines, actor="agent:crm", wait=False)
    with pytest.raises(MigrationRefusedError, match="1 idempotency key"):
        schema.downgrade(memory.ledger.engine, "0022")
    assert schema.current_revision(memory.ledger.engine) == schema.head_revision()
