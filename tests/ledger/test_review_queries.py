"""The review queue's kinds in SQL: each pending proposal counted and filtered under one kind, the
one ``kind_of`` names, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from amem.ledger import review_queries as q
from amem.ledger.tables import proposals
from amem.memory import Memory
from amem.services.review import REVIEW_KINDS, ReviewFilter
from tests.factories import contradict, llm_proposer, said, signed_in


def _matched(memory: Memory, kind: str) -> set[str]:
    """The ids of the pending proposals the queue files under ``kind`` (its Kind filter)."""
    with memory.ledger.read() as tx:
        return {pid for _, pid in q.matching_proposal_ids(tx, ReviewFilter(kind=kind))}  # type: ignore[arg-type]


def test_an_un_retirement_is_a_value_not_a_contradiction(memory: Memory) -> None:
    """A person clearing a retirement (invalid_at of no date) brings the fact back: the Kind filter
    listed it under "contradiction", beside the newer facts that retire older ones. It is a value;
    the per-kind counts still add up to the queue's."""
    old = said(memory, "Acme requires SSO via Okta", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(memory, "Acme dropped the SSO requirement", at=datetime(2026, 3, 5, tzinfo=UTC))
    memory.approve(
        contradict(memory, old, new, "2026-03-05T00:00:00Z").id, reviewer=signed_in(memory, "alice")
    )
    (back,) = memory.update(old.id, actor="bob", reason="the requirement still stands", invalid_at=None)
    other = said(memory, "Acme has 40 seats", at=datetime(2026, 2, 1, tzinfo=UTC))
    retires = contradict(memory, other, new, "2026-03-05T00:00:00Z")
    step = memory.propose(new.id, "next_step", "send the quote", reason="said", proposer=llm_proposer(memory))
    assert back.new_value is None and back.attribute == "invalid_at"

    assert _matched(memory, "contradiction") == {retires.id}
    assert _matched(memory, "value") == {back.id, step.id}
    with memory.ledger.read() as tx:
        assert back.id not in q.item_keys(tx, ReviewFilter(kind="contradiction"), limit=100)
        assert q.count_items(tx, ReviewFilter(kind="contradiction")) == 1
    assert memory.count_review_items(ReviewFilter(kind="value")).proposals == 2
    every = memory.count_review_items(ReviewFilter()).proposals
    assert sum(memory.count_review_items(ReviewFilter(kind=k)).proposals for k in REVIEW_KINDS) == every
    assert q.kind_of("invalid_at", corrects=None, revert_of=None, new_value=None) == "value"
    assert q.kind_of("invalid_at", corrects=None, revert_of=None, new_value="2026-03-05") == "contradiction"


def test_no_value_held_as_sql_null_is_filed_as_json_null_is(memory: Memory) -> None:
    """new_value stores None as JSON null; a row holding SQL NULL instead (written by another
    client, or by hand) is read the same, and is filed under exactly one kind, not none."""
    old = said(memory, "Acme requires SSO via Okta")
    (back,) = memory.update(old.id, actor="bob", reason="it was never retired", invalid_at=None)
    with memory.ledger.engine.begin() as conn:
        conn.execute(sa.update(proposals).where(proposals.c.id == back.id).values(new_value=sa.null()))
        held = conn.execute(sa.select(proposals.c.new_value.is_(None)).where(proposals.c.id == back.id))
        assert held.scalar_one()
    assert _matched(memory, "value") == {back.id}
    assert not _matched(memory, "contradiction")
