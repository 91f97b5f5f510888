"""The database itself refuses to change or delete raw logs, changes and events."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from amem.memory import Memory
from tests.factories import make_note


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE raw_logs SET text = 'rewritten'",
        "DELETE FROM raw_logs",
        "UPDATE changes SET new_value = '\"forged\"'",
        "DELETE FROM changes",
        "UPDATE events SET payload_digest = 'forged'",
        "DELETE FROM events",
    ],
)
def test_append_only_tables_refuse_update_and_delete(memory: Memory, statement: str) -> None:
    note = make_note(memory, "Acme wants SSO before renewal", tags=["sso"])
    with pytest.raises(sa.exc.DatabaseError, match="append-only"), memory.ledger.engine.begin() as conn:
        conn.execute(sa.text(statement))
    # nothing changed: the raw log and the chain are intact
    with memory.ledger.read() as tx:
        assert tx.get_raw_logs(note.raw_log_ids)[0].text == "Acme wants SSO before renewal"
    assert memory.verify().ok
    assert memory.read(note.id).tags == ["sso"]


def test_postgres_refuses_truncate(memory: Memory) -> None:
    if memory.ledger.dialect != "postgresql":
        pytest.skip("TRUNCATE exists only on PostgreSQL")
    make_note(memory, "a raw log that must survive")
    with pytest.raises(sa.exc.DatabaseError, match="append-only"), memory.ledger.engine.begin() as conn:
        conn.execute(sa.text("TRUNCATE raw_logs CASCADE"))
    with pytest.raises(sa.exc.DatabaseError, match="append-only"), memory.ledger.engine.begin() as conn:
        conn.execute(sa.text("TRUNCATE events"))
    assert memory.verify().raw_logs_checked == 1


@pytest.mark.parametrize(
    "statement", ["UPDATE input_keys SET raw_log_id = 'r_other'", "DELETE FROM input_keys"]
)
def test_an_idempotency_key_cannot_be_moved_or_dropped(memory: Memory, statement: str) -> None:
    """A key moved to another raw log would answer a retry with the wrong input; dropped, it would
    let the retry be kept twice."""
    item = {"content": "Acme wants SSO", "scope": "acme", "idempotency_key": "msg-1"}
    (kept,) = memory.add_notes([item], actor="agent:crm", wait=False)
    with pytest.raises(sa.exc.DatabaseError, match="append-only"), memory.ledger.engine.begin() as conn:
        conn.execute(sa.text(statement))
    (again,) = memory.add_notes([item], actor="agent:crm", wait=False)
    assert again.recorded_before and again.raw_log_id == kept.raw_log_id
