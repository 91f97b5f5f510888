"""A hand-edited ledger row makes verify fail and name it."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from amem.cli import main
from amem.memory import Memory
from tests.factories import make_note, signed_in


def _bypass_triggers(conn: sa.Connection, table: str) -> None:
    """What an attacker with database rights would do first."""
    if conn.dialect.name == "sqlite":
        conn.execute(sa.text(f"DROP TRIGGER {table}_no_update"))
    else:
        conn.execute(sa.text(f"ALTER TABLE {table} DISABLE TRIGGER {table}_append_only"))


def _cli(memory: Memory, *args: str) -> list[str]:
    return ["--database-url", memory.settings.database_url, "--home", str(memory.home), *args]


def test_intact_ledger_verifies(memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    make_note(memory, "Globex renewal is due in March", tags=["renewal"], keywords=["globex"])
    assert main(_cli(memory, "verify")) == 0
    assert "OK" in capsys.readouterr().out


def test_edited_change_row_is_named(memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    make_note(memory, "first note", tags=["a"])
    note = make_note(memory, "second note", tags=["b"], keywords=["k"])
    target = memory.changes()[-2]  # a change in the middle of the chain
    assert target.note_id == note.id
    with memory.ledger.engine.begin() as conn:
        _bypass_triggers(conn, "changes")
        conn.execute(
            sa.text("UPDATE changes SET new_value = :v WHERE seq = :s"), {"v": '["forged"]', "s": target.seq}
        )
    result = memory.verify()
    assert not result.ok
    assert result.first_bad_change == target.seq
    assert main(_cli(memory, "verify")) == 1
    out = capsys.readouterr().out
    assert f"change {target.seq}" in out and "TAMPERED" in out


def test_deleted_tail_change_is_detected(memory: Memory) -> None:
    make_note(memory, "a note", tags=["x"], keywords=["y"])
    last = memory.changes()[-1]
    with memory.ledger.engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.execute(sa.text("DROP TRIGGER changes_no_delete"))
        else:
            conn.execute(sa.text("ALTER TABLE changes DISABLE TRIGGER changes_append_only"))
        conn.execute(sa.text("DELETE FROM changes WHERE seq = :s"), {"s": last.seq})
    result = memory.verify()
    assert not result.ok and result.first_bad_change == last.seq


def test_edited_raw_log_is_named(memory: Memory) -> None:
    note = make_note(memory, "We agreed on 50 seats")
    with memory.ledger.engine.begin() as conn:
        _bypass_triggers(conn, "raw_logs")
        conn.execute(sa.text("UPDATE raw_logs SET text = 'We agreed on 500 seats'"))
    result = memory.verify()
    assert not result.ok
    assert result.first_bad_raw_log == note.raw_log_ids[0]


def test_an_altered_decision_names_the_field_that_differs(memory: Memory) -> None:
    note = make_note(memory, "Globex renewal is due in March", tags=["renewal"])
    proposal = memory.propose(note.id, "next_step", "send the quote", reason="r", proposer="agent:bot")
    memory.reject(proposal.id, reviewer=signed_in(memory, "bob"), comment="not agreed")
    with memory.ledger.engine.begin() as conn:
        conn.execute(sa.text("UPDATE proposals SET status = 'approved' WHERE id = :i"), {"i": proposal.id})
    result = memory.verify()
    assert result.bad_row == f"proposals {proposal.id}"
    assert "its status was altered (recorded: 'rejected')" in result.message
    with memory.ledger.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE proposals SET status = 'rejected', reviewer = 'alice' WHERE id = :i"),
            {"i": proposal.id},
        )
    message = memory.verify().message
    assert "its reviewer" in message and "status" not in message.split(":", 1)[1]
