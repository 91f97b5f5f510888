"""A note's full-text score is the same whichever notes a search's filters leave out, on SQLite and
PostgreSQL: a search as of a past moment filters on the notes as they stood then, after drawing,
and must score them as the search made then did."""

from __future__ import annotations

import pytest

from amem.domain.models import utcnow
from amem.ledger.search_queries import keyword_search
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, signed_in


def test_a_notes_keyword_score_does_not_depend_on_which_notes_the_filters_leave_out(memory: Memory) -> None:
    """Before, on PostgreSQL each word's document count was that of the notes the filters kept:
    leaving the retired notes out made "escrow" rarer, so the same live note scored otherwise
    than in a draw of every note (FTS5's bm25() counts the whole index), and a search as of a
    moment could not rank its candidates as the search made then ranked them."""
    retired = [make_note(memory, f"Escrow draft {i} for the audit") for i in range(6)]
    for note in retired:
        p = memory.propose(
            note.id, "invalid_at", "2024-01-01T00:00:00Z", reason="t", proposer=llm_proposer(memory)
        )
        if p.status.value == "pending":
            memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    live = [
        make_note(memory, "Escrow agreement signed with the bank"),
        make_note(memory, "The audit of the escrow account is booked"),
        make_note(memory, "Audit findings shared with the CFO"),
    ]
    question = "escrow audit"
    with memory.ledger.read() as tx:
        alive = {
            h.note_id: h.score
            for h in keyword_search(tx, question, scope="acme", limit=20, alive_at=utcnow())
        }
        every = {
            h.note_id: h.score for h in keyword_search(tx, question, scope="acme", limit=20, deleted=True)
        }
    assert set(alive) == {n.id for n in live}
    assert set(every) == {n.id for n in live + retired}
    assert {i: every[i] for i in alive} == pytest.approx(alive)
