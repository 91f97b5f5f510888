"""Currency in search: hits say when they were said and whether they still hold; a retired fact
ranks below the current one that retired it; an account's current facts, newest first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from amem.domain.models import Note
from amem.memory import Memory
from tests.factories import contradict, llm_proposer, said, signed_in

QUESTION = "how much does Acme pay per seat?"


def retire(memory: Memory, old: Note, new: Note, when: str) -> None:
    """The newer fact retires the older one: a contradiction, approved by a reviewer."""
    p = memory.propose(
        old.id,
        "invalid_at",
        when,
        reason="a newer price",
        proposer=llm_proposer(memory),
        raw_log_ids=new.raw_log_ids,
    )
    memory.approve(p.id, reviewer=signed_in(memory, "alice"))


@pytest.fixture
def prices(memory: Memory) -> list[Note]:
    """$42, then $55, then $49 per seat; each newer price retires the one before."""
    first = said(memory, "Acme pays $42 per seat on the Pro plan", at=datetime(2026, 1, 10, tzinfo=UTC))
    second = said(memory, "Acme now pays $55 per seat after the uplift", at=datetime(2026, 4, 2, tzinfo=UTC))
    third = said(memory, "Acme negotiated $49 per seat at renewal", at=datetime(2026, 8, 20, tzinfo=UTC))
    said(memory, "Acme's champion is Priya, the head of IT", at=datetime(2026, 2, 1, tzinfo=UTC))
    retire(memory, first, second, "2026-04-02T00:00:00Z")
    retire(memory, second, third, "2026-08-20T00:00:00Z")
    return [first, second, third]


def test_the_current_price_comes_first_and_alone_by_default(memory: Memory, prices: list[Note]) -> None:
    hits = memory.search(QUESTION, k=5, scope="acme")
    assert hits[0].note_id == prices[2].id
    assert prices[0].id not in [h.note_id for h in hits] and prices[1].id not in [h.note_id for h in hits]
    assert hits[0].retired is False and hits[0].invalid_at is None
    assert hits[0].said_at == datetime(2026, 8, 20, tzinfo=UTC)


def test_retired_prices_come_below_the_current_one_marked(memory: Memory, prices: list[Note]) -> None:
    hits = memory.search(QUESTION, k=5, scope="acme", include_retired=True)
    order = [h.note_id for h in hits]
    assert order[0] == prices[2].id
    for old in prices[:2]:
        assert order.index(old.id) > order.index(prices[2].id)
    current = [h for h in hits if not h.retired]
    retired = [h for h in hits if h.retired]
    assert {h.note_id for h in retired} == {prices[0].id, prices[1].id}
    assert hits[: len(current)] == current  # every current hit before every retired one
    by_id = {h.note_id: h for h in hits}
    assert by_id[prices[0].id].invalid_at == datetime(2026, 4, 2, tzinfo=UTC)
    assert by_id[prices[1].id].said_at == datetime(2026, 4, 2, tzinfo=UTC)
    agentic = memory.search_agentic(QUESTION, k=5, scope="acme", include_retired=True)
    assert agentic[0].note_id == prices[2].id and agentic[0].retired is False


def test_asking_for_retired_facts_too_never_pushes_out_the_current_ones(memory: Memory) -> None:
    """The retired price words the question best; the one that replaced it does not. Asked with
    ``include_retired``, a search still answers the current hits it gives without it, and adds the
    retired ones after them: the old price never takes the new one's place, at any k, nor ranks
    above it when the new one comes in through its link (agentic search)."""
    old = said(memory, "Acme pays $42 per seat on the Pro plan", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(memory, "Renewal signed: the contract moved to $49", at=datetime(2026, 8, 20, tzinfo=UTC))
    said(memory, "Acme's champion is Priya, the head of IT", at=datetime(2026, 2, 1, tzinfo=UTC))
    retire(memory, old, new, "2026-08-20T00:00:00Z")
    linked = memory.propose(
        new.id,
        "links",
        [{"note_id": old.id, "reason": "replaces the old price"}],
        reason="r",
        proposer=llm_proposer(memory),
    )
    if linked.status.value == "pending":
        memory.approve(linked.id, reviewer=signed_in(memory, "alice"))
    question = "how much does Acme pay per seat on the Pro plan"
    assert (
        memory.search(question, k=1, scope="acme", include_retired=True)[-1].note_id == old.id
    )  # best words
    for k in (1, 2, 3):
        current = [h.note_id for h in memory.search(question, k=k, scope="acme")]
        both = memory.search(question, k=k, scope="acme", include_retired=True)
        assert [h.note_id for h in both if not h.retired] == current
        assert [h.note_id for h in both if h.retired] == [old.id]
        assert not both[-1].retired or both[-1].note_id == old.id
        assert [h.retired for h in both] == sorted(h.retired for h in both)
        agentic = memory.search_agentic(question, k=k, scope="acme", include_retired=True)
        assert new.id in [h.note_id for h in agentic]
        assert [h.retired for h in agentic] == sorted(h.retired for h in agentic)


def test_facts_are_the_current_ones_newest_first_with_decisions(memory: Memory, prices: list[Note]) -> None:
    p = memory.propose(
        prices[2].id,
        "decision_rationale",
        "a two-year commitment",
        reason="stated",
        proposer=llm_proposer(memory),
        raw_log_ids=prices[2].raw_log_ids,
    )
    memory.approve(p.id, reviewer=signed_in(memory, "alice"), comment="matches the contract")
    page = memory.facts("acme")
    assert [f.note.content for f in page.facts] == [
        "Acme negotiated $49 per seat at renewal",
        "Acme's champion is Priya, the head of IT",
    ]
    assert page.total == 2
    top = page.facts[0]
    assert top.said_at == datetime(2026, 8, 20, tzinfo=UTC) and top.note.decision_rationale == (
        "a two-year commitment"
    )
    assert [(d.attribute, d.status, d.reviewer, d.comment) for d in top.decisions] == [
        ("decision_rationale", "approved", "alice", "matches the contract")
    ]
    everything = memory.facts("acme", include_retired=True)
    assert [f.retired for f in everything.facts] == [False, True, False, True]  # by when said
    assert everything.facts[1].decisions[0].attribute == "invalid_at"


def test_three_prices_through_the_pipeline_and_the_review_queue(memory: Memory) -> None:
    """As an agent would: three inputs, the analyst flags each newer price as a contradiction,
    a reviewer approves the contradictions as items, and search answers with the current price."""
    from amem.services.review import ReviewFilter

    said_at = ["2026-01-10T10:00:00Z", "2026-04-02T10:00:00Z", "2026-08-20T10:00:00Z"]
    texts = [
        "Acme pays $42 per seat on the Pro plan.",
        "Acme now pays $55 per seat after the uplift.",
        "Acme renewed and now pays $49 per seat.",
    ]
    ids = [
        memory.add_note(t, at=a, actor="agent:sales-agent", scope="acme")
        for t, a in zip(texts, said_at, strict=True)
    ]
    contradictions = ReviewFilter(scope="acme", kind="contradiction")
    counted = memory.count_review_items(contradictions)
    # the third input retires both earlier prices (its proposal for $42 supersedes the second's)
    assert counted.items >= 1 and counted.proposals == 2
    for item in memory.review_items(contradictions).items:
        for field in item.fields:  # each shows the older fact beside the newer input
            assert field.older is not None and field.older.said_at is not None
            assert item.said_at is not None and field.older.said_at < item.said_at
    report = memory.approve_matching(
        contradictions,
        reviewer=signed_in(memory, "alice"),
        expected_items=counted.items,
        fingerprint=counted.fingerprint,
    )
    assert not report.skipped
    hits = memory.search(QUESTION, k=3, scope="acme")
    assert [h.note_id for h in hits] == [ids[2]]
    everything = memory.search(QUESTION, k=3, scope="acme", include_retired=True)
    assert everything[0].note_id == ids[2] and not everything[0].retired
    assert {h.note_id for h in everything[1:]} == {ids[0], ids[1]} and all(h.retired for h in everything[1:])


def test_before_a_reviewer_decides_a_contested_price_says_so_and_a_rejection_clears_it(
    memory: Memory,
) -> None:
    """The default policy holds invalid_at for review, so until a person decides every price still
    holds; the agent is told which hits a newer note contradicts, with its words, and the marker
    goes when the retirement is rejected, even in a process that kept the hits' rows."""
    first = said(memory, "Acme pays $42 per seat on the Pro plan", at=datetime(2026, 1, 10, tzinfo=UTC))
    second = said(memory, "Acme now pays $55 per seat after the uplift", at=datetime(2026, 4, 2, tzinfo=UTC))
    waiting = contradict(memory, first, second, "2026-04-02T00:00:00Z")
    hits = {h.note_id: h for h in memory.search(QUESTION, k=5, scope="acme")}
    assert set(hits) >= {first.id, second.id}
    contested = hits[first.id].retirement_waiting
    assert contested is not None and contested.proposal_id == waiting.id
    assert contested.invalid_at == datetime(2026, 4, 2, tzinfo=UTC)
    assert contested.evidence == "Acme now pays $55 per seat after the uplift"
    assert hits[first.id].retired is False and hits[second.id].retirement_waiting is None
    # a search of a past moment says nothing of what waits now
    past = memory.search(QUESTION, k=5, scope="acme", as_of="2026-05-01T00:00:00Z")
    assert all(h.retirement_waiting is None for h in past)

    memory.reject(waiting.id, reviewer=signed_in(memory, "alice"), comment="the uplift was never signed")
    again = {h.note_id: h for h in memory.search(QUESTION, k=5, scope="acme")}
    assert again[first.id].retirement_waiting is None and not again[first.id].retired


def test_a_contested_fact_says_so_until_a_reviewer_decides(memory: Memory) -> None:
    """An account's facts, like search, say which fact a newer note contradicts while its retirement
    waits for a person: approved, the fact leaves the current ones; rejected, the marker goes."""
    first = said(memory, "Acme pays $42 per seat on the Pro plan", at=datetime(2026, 1, 10, tzinfo=UTC))
    second = said(memory, "Acme now pays $55 per seat after the uplift", at=datetime(2026, 4, 2, tzinfo=UTC))
    waiting = contradict(memory, first, second, "2026-04-02T00:00:00Z")
    facts = {f.note_id: f for f in memory.facts("acme").facts}
    contested = facts[first.id].retirement_waiting
    assert contested is not None and contested.proposal_id == waiting.id
    assert contested.evidence == "Acme now pays $55 per seat after the uplift"
    assert facts[second.id].retirement_waiting is None and not facts[first.id].retired

    memory.reject(waiting.id, reviewer=signed_in(memory, "alice"), comment="the uplift was never signed")
    assert all(f.retirement_waiting is None for f in memory.facts("acme").facts)
    again = contradict(memory, first, second, "2026-04-02T00:00:00Z")
    memory.approve(again.id, reviewer=signed_in(memory, "alice"))
    assert [f.note_id for f in memory.facts("acme").facts] == [second.id]


def test_a_page_of_facts_out_of_range_is_refused_clearly(memory: Memory) -> None:
    from amem.errors import InvalidInputError

    for limit, offset in ((0, 0), (10, -1), (10, 2**64), (10**6, 0)):
        with pytest.raises(InvalidInputError, match="limit must be 1 to 1,000 and offset 0 to"):
            memory.facts("acme", limit=limit, offset=offset)


def test_a_contested_note_an_agentic_search_brings_in_by_a_link_says_so_too(memory: Memory) -> None:
    old = said(memory, "Acme pays $42 per seat on the Pro plan", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(memory, "Acme now pays $55 per seat after the uplift", at=datetime(2026, 4, 2, tzinfo=UTC))
    call = said(memory, "Renewal call with Acme's CFO about the budget", at=datetime(2026, 5, 1, tzinfo=UTC))
    memory.propose(
        call.id,
        "links",
        [{"note_id": old.id, "reason": "the price discussed"}],
        reason="r",
        proposer=llm_proposer(memory),
    )
    waiting = contradict(memory, old, new, "2026-04-02T00:00:00Z")
    found = memory.search_agentic("renewal call with the CFO", k=1, scope="acme")
    assert found[0].note_id == call.id and found[0].retirement_waiting is None
    linked = {h.note_id: h for h in found[1:]}
    assert linked[old.id].linked_from == call.id
    assert (
        linked[old.id].retirement_waiting is not None
        and linked[old.id].retirement_waiting.proposal_id == waiting.id
    )


def revert_pending(memory: Memory, note: Note) -> str:
    """A reviewer reverts the note's last change of invalid_at: held for a second review."""
    change = [c for c in memory.note_versions(note.id) if c.attribute == "invalid_at"][-1]
    p = memory.revert(change.seq, reviewer=signed_in(memory, "alice"), reason="the newer price was a quote")
    assert p.status.value == "pending" and p.attribute == "invalid_at" and p.new_value is None
    return p.id


def test_a_pending_revert_that_would_end_no_note_is_no_retirement_waiting(
    memory: Memory, prices: list[Note]
) -> None:
    """Before, every pending invalid_at proposal counted as a retirement waiting, one of no date
    too: a revert that would bring the retired $55 back, or lift the end the $49 was given, showed
    as "contested: a newer note says otherwise; its retirement waits for review". A proposal of no
    date ends nothing, nor does one that moves a retired note's end; a retirement still waits."""
    decide = memory.propose(
        prices[2].id, "invalid_at", "2031-01-01T00:00:00Z", reason="ends", proposer=llm_proposer(memory)
    )
    memory.approve(decide.id, reviewer=signed_in(memory, "alice"))  # the $49 holds until 2031
    revert_pending(memory, prices[1])  # would bring the retired $55 back
    revert_pending(memory, prices[2])  # would lift the $49's end
    moved = memory.propose(
        prices[0].id, "invalid_at", "2026-03-01T00:00:00Z", reason="earlier", proposer=llm_proposer(memory)
    )
    assert moved.status.value == "pending"  # would move the retired $42's end
    hits = memory.search(QUESTION, k=5, scope="acme", include_retired=True)
    assert {h.note_id for h in hits} >= {p.id for p in prices}
    assert all(h.retirement_waiting is None for h in hits)
    facts = memory.facts("acme", include_retired=True).facts
    assert {f.note_id for f in facts} >= {p.id for p in prices}
    assert all(f.retirement_waiting is None for f in facts)
    newer = said(memory, "Acme will pay $60 per seat from next year", at=datetime(2026, 9, 1, tzinfo=UTC))
    waiting = contradict(memory, prices[2], newer, "2027-01-01T00:00:00Z")  # a retirement: it waits
    for found in (memory.search(QUESTION, k=5, scope="acme"), memory.facts("acme").facts):
        contested = {h.note_id: h.retirement_waiting for h in found}[prices[2].id]
        assert contested is not None and contested.proposal_id == waiting.id
