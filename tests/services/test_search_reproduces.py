"""A search's current hits are the same however it is asked: with retired facts too, or as of the
moment it was made. An auditor asking "what did the agent get when it quoted that price?" reads
the hits the agent read, while the index holds the same notes."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from amem.domain.models import Note, utcnow
from amem.memory import Memory
from tests.factories import llm_proposer, said, signed_in

WORDS = [
    "price",
    "seat",
    "plan",
    "renewal",
    "discount",
    "contract",
    "sso",
    "audit",
    "migration",
    "champion",
    "budget",
    "invoice",
    "annual",
    "monthly",
    "support",
    "outage",
    "security",
    "legal",
    "procurement",
    "pilot",
    "expansion",
    "churn",
    "onboarding",
    "training",
]


def questions(seed: int, count: int) -> list[str]:
    pick = random.Random(seed)
    return [" ".join(pick.sample(WORDS, 3)) for _ in range(count)]


def approved(memory: Memory, proposal_id: str, status: str) -> None:
    if status == "pending":
        memory.approve(proposal_id, reviewer=signed_in(memory, "alice"))


def retire(memory: Memory, note: Note) -> None:
    p = memory.propose(
        note.id,
        "invalid_at",
        "2026-06-01T00:00:00Z",
        reason="newer",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    approved(memory, p.id, p.status.value)


@pytest.fixture
def crowded(memory: Memory) -> list[Note]:
    """An account of 48 notes on the same few topics, 30 of them retired: the retired ones match
    the questions as well as the current ones do."""
    pick = random.Random(7)
    notes = [
        said(
            memory,
            "Acme " + " ".join(pick.sample(WORDS, 5)) + f" item{i}",
            at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=i),
        )
        for i in range(48)
    ]
    for note in notes[:30]:
        retire(memory, note)
    return notes


def ranked(memory: Memory, question: str, k: int, **asked: object) -> list[str]:
    return [h.note_id for h in memory.search(question, k=k, scope="acme", **asked) if not h.retired]  # type: ignore[arg-type]


def test_asking_for_retired_facts_too_leaves_the_current_hits_and_their_order_as_they_were(
    memory: Memory, crowded: list[Note]
) -> None:
    """Before, retired notes were drawn with the current ones: they took places in each side's
    pool and widened its scaling, so the current hits, or their order, changed with the flag."""
    for question in questions(11, 12):
        for k in (1, 3, 5):
            plain = ranked(memory, question, k)
            both = memory.search(question, k=k, scope="acme", include_retired=True)
            assert [h.note_id for h in both if not h.retired] == plain, (question, k)
            assert [h.retired for h in both] == sorted(h.retired for h in both)


def test_a_search_as_of_a_moment_answers_what_the_search_made_then_answered(
    memory: Memory, crowded: list[Note]
) -> None:
    """Before, a search as of a moment drew every note made by then, retired or not, and dropped
    the retired ones only after ranking: they had taken pool places and shaped the scaling, so
    even as of a moment just past it answered otherwise than the search made then. Notes retired
    or deleted since change nothing either."""
    asked = [(q, k) for q in questions(13, 12) for k in (1, 3, 5)]
    then = {(q, k): ranked(memory, q, k) for q, k in asked}
    moment = utcnow()
    assert {(q, k): ranked(memory, q, k, as_of=moment) for q, k in asked} == then
    hits = list(dict.fromkeys(i for found in then.values() for i in found))
    by_id = {n.id: n for n in crowded}
    for note_id in hits[:3]:  # retired since
        retire(memory, by_id[note_id])
    gone = memory.delete(hits[3], actor="agent:sales-agent", reason="duplicate")  # deleted since
    approved(memory, gone.id, gone.status.value)
    assert hits[3] not in [i for q, k in asked for i in ranked(memory, q, k)]
    assert {(q, k): ranked(memory, q, k, as_of=moment) for q, k in asked} == then
