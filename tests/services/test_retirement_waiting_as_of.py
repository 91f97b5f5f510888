"""A read of a past moment says which facts were contested then: a retirement proposed by then and
not decided by then, as the facts and a search made at that moment said it. Before, every read as
of a moment (even now) said none waited, so an auditor could not learn that a fact the agent quoted
was already contradicted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from amem.domain.models import Note, utcnow
from amem.memory import Memory
from tests.factories import contradict, said, signed_in

QUESTION = "how much does Acme pay per seat?"
INSTANT = timedelta(microseconds=1)


def prices(memory: Memory) -> tuple[Note, Note]:
    old = said(memory, "Acme pays $42 per seat on the Pro plan", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(memory, "Acme now pays $55 per seat after the uplift", at=datetime(2026, 4, 2, tzinfo=UTC))
    return old, new


def facts_then(memory: Memory, moment: datetime) -> dict[str, tuple[bool, str | None]]:
    """Each fact as of ``moment``, retired ones too: retired, and the proposal waiting for it."""
    page = memory.facts("acme", as_of=moment, include_retired=True)
    return {
        f.note_id: (f.retired, f.retirement_waiting.proposal_id if f.retirement_waiting else None)
        for f in page.facts
    }


def hits_then(memory: Memory, moment: datetime | None) -> dict[str, tuple[bool, str | None]]:
    hits = memory.search(QUESTION, k=5, scope="acme", as_of=moment, include_retired=True)
    return {
        h.note_id: (h.retired, h.retirement_waiting.proposal_id if h.retirement_waiting else None)
        for h in hits
    }


def test_a_fact_contested_then_says_so_as_of_then_even_after_it_was_approved(memory: Memory) -> None:
    old, new = prices(memory)
    waiting = contradict(memory, old, new, "2026-04-02T00:00:00Z")
    proposed = waiting.created_at
    page = memory.facts("acme", as_of=proposed)
    contested = {f.note_id: f for f in page.facts}[old.id].retirement_waiting
    assert contested is not None and contested.proposal_id == waiting.id
    assert contested.invalid_at == datetime(2026, 4, 2, tzinfo=UTC)
    assert contested.evidence == "Acme now pays $55 per seat after the uplift"
    for read in (facts_then, hits_then):
        assert read(memory, proposed - INSTANT)[old.id] == (False, None)  # not yet proposed
        assert read(memory, proposed)[old.id] == (False, waiting.id)
        assert read(memory, proposed)[new.id] == (False, None)

    decided = memory.approve(waiting.id, reviewer=signed_in(memory, "alice"))
    assert decided.reviewed_at is not None
    for read in (facts_then, hits_then):
        # what was contested then still was, as the ledger recorded it
        assert read(memory, proposed)[old.id] == (False, waiting.id)
        assert read(memory, decided.reviewed_at - INSTANT)[old.id] == (False, waiting.id)
        # approved: retired from then on, and no retirement waits any more
        assert read(memory, decided.reviewed_at)[old.id] == (True, None)
        assert read(memory, utcnow())[old.id] == (True, None)
    assert old.id not in {f.note_id for f in memory.facts("acme", as_of=decided.reviewed_at).facts}


def test_a_rejected_or_superseded_retirement_waited_only_until_then(memory: Memory) -> None:
    old, new = prices(memory)
    first = contradict(memory, old, new, "2026-04-02T00:00:00Z")
    later = contradict(memory, old, new, "2026-05-01T00:00:00Z")  # the first stays the one waiting
    assert later.status.value == "superseded"
    second = contradict(memory, old, new, "2026-04-01T00:00:00Z")  # an earlier end: replaces the first
    assert second.status.value == "pending"
    rejected = memory.reject(second.id, reviewer=signed_in(memory, "alice"), comment="never signed")
    assert rejected.reviewed_at is not None
    for read in (facts_then, hits_then):
        assert read(memory, first.created_at)[old.id] == (False, first.id)
        assert read(memory, later.created_at)[old.id] == (False, first.id)
        assert read(memory, second.created_at)[old.id] == (False, second.id)
        assert read(memory, rejected.reviewed_at - INSTANT)[old.id] == (False, second.id)
        assert read(memory, rejected.reviewed_at)[old.id] == (False, None)


def revert_pending(memory: Memory, note: Note) -> None:
    change = [c for c in memory.note_versions(note.id) if c.attribute == "invalid_at"][-1]
    p = memory.revert(change.seq, reviewer=signed_in(memory, "alice"), reason="the newer price was a quote")
    assert p.status.value == "pending" and p.new_value is None


def test_as_of_now_says_what_the_live_read_says(memory: Memory) -> None:
    """A contested fact waits, a retired fact whose revert is pending does not (a revert ends
    nothing), nor does the fact that contradicts: the same now and as of now."""
    old, new = prices(memory)
    newest = said(memory, "Acme negotiated $49 per seat at renewal", at=datetime(2026, 8, 20, tzinfo=UTC))
    retiring = contradict(memory, old, new, "2026-04-02T00:00:00Z")
    memory.approve(retiring.id, reviewer=signed_in(memory, "alice"))
    revert_pending(memory, old)
    waiting = contradict(memory, new, newest, "2026-08-20T00:00:00Z")
    live_facts = memory.facts("acme", include_retired=True).facts
    live_hits = memory.search(QUESTION, k=5, scope="acme", include_retired=True)
    moment = utcnow()
    then_facts = memory.facts("acme", as_of=moment, include_retired=True).facts
    then_hits = memory.search(QUESTION, k=5, scope="acme", as_of=moment, include_retired=True)

    def marks(found: list) -> dict[str, tuple[bool, object]]:
        return {f.note_id: (f.retired, f.retirement_waiting) for f in found}

    assert marks(then_facts) == marks(live_facts)
    assert marks(then_hits) == marks(live_hits)
    assert marks(live_facts)[new.id][1] is not None and marks(live_facts)[new.id][1].proposal_id == waiting.id
    assert marks(live_facts)[old.id] == (True, None) and marks(live_facts)[newest.id] == (False, None)


def test_a_note_an_agentic_search_brings_in_by_a_link_says_it_was_contested_then(memory: Memory) -> None:
    from tests.factories import llm_proposer

    old, new = prices(memory)
    call = said(memory, "Renewal call with Acme's CFO about the budget", at=datetime(2026, 5, 1, tzinfo=UTC))
    memory.propose(
        call.id,
        "links",
        [{"note_id": old.id, "reason": "the price discussed"}],
        reason="r",
        proposer=llm_proposer(memory),
    )
    waiting = contradict(memory, old, new, "2026-04-02T00:00:00Z")
    decided = memory.approve(waiting.id, reviewer=signed_in(memory, "alice"))
    assert decided.reviewed_at is not None
    found = memory.search_agentic("renewal call with the CFO", k=1, scope="acme", as_of=waiting.created_at)
    assert found[0].note_id == call.id and found[0].retirement_waiting is None
    linked = {h.note_id: h for h in found[1:]}
    assert linked[old.id].linked_from == call.id
    contested = linked[old.id].retirement_waiting
    assert contested is not None and contested.proposal_id == waiting.id
