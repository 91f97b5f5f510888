"""An erasure records each erased row's fields, before and after, so verify can hold what an
erasure never changes (a decision's status, a model call's model) to what it was, on both ledgers;
erasures recorded before these digests still verify."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from amem.domain.hashing import REDACTED, value_digest
from amem.ledger.tables import erased_rows, llm_calls, proposals
from amem.memory import Memory
from tests.factories import signed_in
from tests.ledger import tamper_cases as tc
from tests.services.test_erasure_answers import _said_by


def _entries(mem: Memory, table: str) -> list[dict[str, Any]]:
    with mem.ledger.engine.connect() as conn:
        rows = conn.execute(sa.select(erased_rows).where(erased_rows.c.table_name == table)).all()
    return [dict(r._mapping) for r in rows]


def test_a_rewritten_answer_is_recorded_field_by_field_and_verifies(mem: Memory, scripted_llm) -> None:
    """A later link step's answer loses what it said about the erased note, keeping its shape: the
    erasure records which of its strings it kept, and verify holds the answer to them."""
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    erased, _kept, _third = _said_by(mem, secret, scripted_llm)
    raw = mem.read(erased).raw_log_ids[0]
    mem.erase(by=signed_in(mem, "alice"), reason="GDPR art. 17", raw_log_id=raw)

    rewritten = [e for e in _entries(mem, "llm_calls") if e["detail"] and "answer_before" in e["detail"]]
    assert len(rewritten) == 1  # the third note's link step; the erased input's own calls go whole
    detail = rewritten[0]["detail"]
    with mem.ledger.engine.connect() as conn:
        answer = conn.execute(
            sa.select(llm_calls.c.response_text).where(llm_calls.c.id == rewritten[0]["row_key"])
        ).scalar_one()
    assert secret not in answer and REDACTED in answer
    strings = detail["answer_before"]["strings"]
    assert None in strings and any(d is not None for d in strings)  # some redacted, some kept
    assert detail["fields_before"]["model"] == detail["fields_after"]["model"]
    assert detail["fields_before"]["response_text"] != detail["fields_after"]["response_text"]
    assert all(value_digest(secret) != d for d in strings)  # no digest of what it erased
    result = mem.verify()
    assert result.ok, result.problems


def test_a_decisions_comment_erasure_records_its_fields_and_verifies(memory: Memory) -> None:
    """A reviewer's comment on an erased value: its decision's entry records every field, and only
    the comment differs before and after."""
    scene = tc.build(memory, recent=False)
    memory.erase(by=signed_in(memory, "alice"), reason="GDPR art. 17", raw_log_id=scene.raw_logs[1])
    decisions = _entries(memory, "decisions")
    assert decisions
    for entry in decisions:
        before, after = entry["detail"]["fields_before"], entry["detail"]["fields_after"]
        assert {k for k in before if before[k] != after[k]} == {"review_comment"}
        assert after["review_comment"] == value_digest(REDACTED)
    result = memory.verify()
    assert result.ok, result.problems


def test_erasures_recorded_without_field_digests_still_verify(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ledger whose erasures were made before field digests were recorded is intact, and stays so
    after an erasure that records them."""
    from amem.services import erasure

    with monkeypatch.context() as patched:
        patched.setattr(erasure, "erased_row_detail", lambda *args, **kwargs: None)
        scene = tc.build(memory, recent=False, erased=True)
    assert _entries(memory, "raw_logs") and all(e["detail"] is None for e in _entries(memory, "raw_logs"))
    result = memory.verify()
    assert result.ok, result.problems

    memory.erase(by=signed_in(memory, "alice"), reason="GDPR art. 17", raw_log_id=scene.raw_logs[1])
    assert any(e["detail"] for e in _entries(memory, "raw_logs"))
    result = memory.verify()
    assert result.ok, result.problems


def test_a_list_given_an_item_under_an_erasure_is_reported(memory: Memory) -> None:
    """Of a list an erasure redacted, the items it kept are recorded: a forged erasure that puts a
    tag the list never had beside the marker is named, with the field (a marker in the list was all
    that could be checked before)."""
    scene = tc.build(memory, recent=False)
    with memory.ledger.engine.begin() as conn:
        row = dict(
            conn.execute(
                sa.select(proposals).where(
                    proposals.c.note_id == scene.notes[0], proposals.c.attribute == "tags"
                )
            )
            .one()
            ._mapping
        )
        forged = {**row, "new_value": [REDACTED, "vip"]}
        tc._forged_field_erasure(conn, "proposals", "proposal", row["id"], row, forged)
        conn.execute(
            sa.update(proposals).where(proposals.c.id == row["id"]).values(new_value=forged["new_value"])
        )
    result = memory.verify()
    assert result.bad_row == f"proposals {row['id']}", result.problems
    assert "new value is not a redaction" in result.message
