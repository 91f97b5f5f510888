"""An account's facts as the ledger stood at a past moment: what an auditor asks of the memory
("what did it say about Acme on 1 June, when the agent quoted that price?"). Each fact is the note
as it stood then, retirements and deletions count from when they were applied, and only the
decisions taken by then are listed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from amem.domain.models import Note, utcnow
from amem.errors import InvalidInputError
from amem.memory import Memory
from tests.factories import llm_proposer, said, signed_in


def approved(memory: Memory, note: Note, attribute: str, value: object, source: Note) -> None:
    p = memory.propose(
        note.id,
        attribute,
        value,
        reason="said",
        proposer=llm_proposer(memory),
        raw_log_ids=source.raw_log_ids,
    )
    memory.approve(p.id, reviewer=signed_in(memory, "alice"), comment=f"{attribute} checked")


def test_the_facts_as_they_stood_then_not_as_they_stand_now(memory: Memory) -> None:
    before = utcnow()
    price = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    approved(memory, price, "decision_rationale", "the budget allowed it", price)
    champion = said(memory, "Acme's champion is Priya", at=datetime(2026, 2, 1, tzinfo=UTC))
    first_day = utcnow()

    newer = said(memory, "Acme now pays $49 per seat", at=datetime(2026, 8, 20, tzinfo=UTC))
    # retired from a date before first_day: applied after it, so it did not hold then
    approved(memory, price, "invalid_at", "2026-01-20T00:00:00Z", newer)
    approved(memory, price, "decision_rationale", "a discount for the two-year term", newer)
    gone = memory.delete(champion.id, actor="agent:sales-agent", reason="Priya left")
    memory.approve(gone.id, reviewer=signed_in(memory, "alice"))
    second_day = utcnow()

    then = memory.facts("acme", as_of=first_day)
    assert [f.note_id for f in then.facts] == [champion.id, price.id] and then.total == 2
    old_price = then.facts[1]
    assert old_price.note.decision_rationale == "the budget allowed it"
    assert old_price.note.invalid_at is None and not old_price.retired
    assert [(d.attribute, d.comment) for d in old_price.decisions] == [
        ("decision_rationale", "decision_rationale checked")
    ]
    assert old_price.said_at == datetime(2026, 1, 10, tzinfo=UTC) and old_price.retirement_waiting is None

    later = memory.facts("acme", as_of=second_day)
    assert [f.note_id for f in later.facts] == [newer.id]
    assert [f.note_id for f in memory.facts("acme").facts] == [newer.id]  # now: the same
    everything = memory.facts("acme", as_of=second_day, include_retired=True)
    assert [(f.note_id, f.retired) for f in everything.facts] == [(newer.id, False), (price.id, True)]
    retired = everything.facts[1].note
    assert retired.decision_rationale == "a discount for the two-year term"
    assert len(everything.facts[1].decisions) == 3

    assert memory.facts("acme", as_of=before).total == 0  # nothing was made yet
    assert memory.facts("acme", as_of=before - timedelta(days=1)).facts == []


def test_a_past_page_is_counted_and_paged_like_the_present(memory: Memory) -> None:
    notes = [said(memory, f"Acme call {n}", at=datetime(2026, 3, 1 + n, tzinfo=UTC)) for n in range(5)]
    moment = utcnow()
    said(memory, "Acme call after the moment", at=datetime(2026, 3, 20, tzinfo=UTC))
    pages = [memory.facts("acme", as_of=moment, limit=2, offset=offset) for offset in (0, 2, 4)]
    assert {p.total for p in pages} == {5}
    assert [f.note_id for p in pages for f in p.facts] == [n.id for n in reversed(notes)]
    assert memory.facts("acme", as_of=moment.isoformat(), limit=1).facts[0].note_id == notes[-1].id


def test_a_moment_that_is_not_a_time_is_refused(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="as_of"):
        memory.facts("acme", as_of="last tuesday")


def test_a_note_erased_since_is_in_no_past_moments_facts(memory: Memory) -> None:
    """A data subject's erasure takes their note from the past too, as search as of that moment
    leaves it out; a note deleted since is still a fact of then. Before, the facts as of a moment
    before the erasure listed the erased note as an "[erased]" fact and counted it in the total."""
    price = said(memory, "Acme pays 40 EUR per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    champion = said(
        memory, "Dana Smith is Acme's champion, phone 555-0199", at=datetime(2026, 1, 20, tzinfo=UTC)
    )
    demo = said(memory, "Acme asked for a demo", at=datetime(2026, 2, 1, tzinfo=UTC))
    moment = utcnow()
    alice = signed_in(memory, "alice")
    memory.approve(memory.delete(demo.id, actor="agent:sales-agent", reason="done").id, reviewer=alice)
    memory.erase(by=alice, reason="her request", raw_log_id=champion.raw_log_ids[0])

    then = memory.facts("acme", as_of=moment, include_retired=True)
    assert [f.note_id for f in then.facts] == [demo.id, price.id] and then.total == 2
    first = memory.facts("acme", as_of=moment, limit=1, offset=1)
    assert [f.note_id for f in first.facts] == [price.id] and first.total == 2
    assert [f.note_id for f in memory.facts("acme").facts] == [price.id]
