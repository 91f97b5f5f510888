"""An input analysed after a note said later than it (two workers, the earlier input's model call
slower; a retry after an outage; an import of older history into an account with newer facts):
the newer note still makes the older one's fact untrue, as when the two are analysed in order."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from amem.llm.base import AnalystError
from amem.memory import Memory

MARCH_PRICE = "Pricing call: Globex pays $42 per seat per month."
JUNE_PRICE = "As of today Globex pays $55 per seat per month."
MARCH_AT, JUNE_AT = "2026-03-10T10:00:00Z", "2026-06-08T10:00:00Z"


def _add(memory: Memory, text: str, at: str, *, wait: bool = True) -> str:
    return memory.add_note(text, at=at, actor="agent:crm", scope="globex", wait=wait)


def _retirement(memory: Memory, note_id: str) -> tuple[datetime, str] | None:
    """The note's retirement, applied or pending (as the policy routes it): (from when, why)."""
    pending = [p for p in memory.pending(note_id=note_id) if p.attribute == "invalid_at"]
    if pending:
        (proposal,) = pending
        value = proposal.new_value
        when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
        return when.astimezone(UTC), proposal.reason
    note = memory.read(note_id)
    if note.invalid_at is None:
        return None
    why = [e.reason for e in memory.history(note_id) if e.attribute == "invalid_at" and e.reason]
    return note.invalid_at.astimezone(UTC), why[-1]


def test_an_older_price_analysed_after_the_newer_one_is_retired_by_it(memory: Memory) -> None:
    june = _add(memory, JUNE_PRICE, JUNE_AT)
    march = _add(memory, MARCH_PRICE, MARCH_AT)  # an import of older history, with its own date

    retired = _retirement(memory, march)

    assert retired is not None
    when, why = retired
    assert when == datetime(2026, 6, 8, 10, tzinfo=UTC)  # the March price held until June
    assert why.startswith(f"contradicted by newer note {june}: different price per seat")
    assert _retirement(memory, june) is None  # the June price is the current one


def test_in_order_and_in_reverse_the_older_note_is_retired_for_the_same_reason(
    memory: Memory, tmp_path
) -> None:
    in_order = Memory(tmp_path / "in-order")
    try:
        first = _add(in_order, MARCH_PRICE, MARCH_AT)
        _add(in_order, JUNE_PRICE, JUNE_AT)
        expected = _retirement(in_order, first)
    finally:
        in_order.close()
    _add(memory, JUNE_PRICE, JUNE_AT)
    late = _add(memory, MARCH_PRICE, MARCH_AT)

    got = _retirement(memory, late)

    assert expected is not None and got is not None
    # the same change, each reason read from the side of the input its review item shows ("here")
    assert expected[1].endswith("$55/seat here, $42/seat in that note")
    assert got[1].endswith("$42/seat here, $55/seat in that note")


def test_an_input_retried_after_an_outage_is_retired_by_the_newer_one_written_meanwhile(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The March input failed while the model was down; the June one was analysed; `reprocess`
    then analyses March: the caller learns its note is retired by June's, pending review."""
    march_raw = _add(memory, MARCH_PRICE, MARCH_AT, wait=False)
    analyst = memory.pipeline.analyst

    def down(*args: object, **kwargs: object) -> None:
        raise AnalystError("model unreachable (simulated outage)")

    with monkeypatch.context() as outage:
        outage.setattr(analyst, "construct", down)
        memory.worker(batch_size=1).drain()
    assert memory.input_status(march_raw).note_id is None
    june_raw = _add(memory, JUNE_PRICE, JUNE_AT, wait=False)
    memory.worker(batch_size=1).drain()

    memory.reprocess()

    march, june = memory.input_status(march_raw).note_id, memory.input_status(june_raw).note_id
    assert march is not None and june is not None
    retired = _retirement(memory, march)
    assert retired is not None and retired[1].startswith(f"contradicted by newer note {june}:")
    assert _retirement(memory, june) is None


def _model_told_of_later_notes(messages: list[dict[str, str]]) -> str:
    """A model that does what the link prompt tells it: the construct step files a pricing note;
    the link step names a neighbour under contradictions only where the prompt says it was said
    after the new note (the new note's content as the span of the fact it made untrue)."""
    user = messages[-1]["content"]
    if "<neighbours>" not in user:
        construct = {"keywords": ["Globex", "price"], "tags": ["pricing"], "context": "Globex's price."}
        return json.dumps({**construct, "category": "pricing", "decision_rationale": None, "valid_at": None})
    new = json.loads(user.split("<new_note>", 1)[1].split("</new_note>", 1)[0])
    told = re.search(r"said before \d+ of these neighbours \(([^:]*):", user)
    later = told.group(1).split(", ") if told else []
    contradictions = [{"note_id": n, "reason": "a later price", "evidence": new["content"]} for n in later]
    return json.dumps({"links": [], "updates": [], "contradictions": contradictions, "restates": None})


def test_a_model_is_told_which_notes_were_said_after_a_late_input(mem: Memory, scripted_llm) -> None:
    scripted_llm.default = _model_told_of_later_notes
    june = _add(mem, JUNE_PRICE, JUNE_AT)
    march = _add(mem, MARCH_PRICE, MARCH_AT)

    retired = _retirement(mem, march)

    assert retired == (
        datetime(2026, 6, 8, 10, tzinfo=UTC),
        f"contradicted by newer note {june}: a later price",
    )
    assert _retirement(mem, june) is None
