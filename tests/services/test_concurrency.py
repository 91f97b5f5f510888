"""Two reviewers approving the same proposal at the same moment: exactly one wins."""

from __future__ import annotations

import threading
from pathlib import Path

from amem.domain.models import ProposalStatus
from amem.errors import ProposalStateError
from amem.memory import Memory
from tests.factories import LLM, make_note, signed_in


def _race(database_url: str, home: Path, proposal_id: str, reviewers: list[str]) -> list[object]:
    """Each reviewer on their own store handle (own engine and connections), released together."""
    stores = [Memory(home, database_url=database_url) for _ in reviewers]
    barrier = threading.Barrier(len(reviewers))
    results: list[object] = [None] * len(reviewers)

    def approve(i: int) -> None:
        barrier.wait()
        try:
            results[i] = stores[i].approve(
                proposal_id, reviewer=signed_in(stores[i], reviewers[i]), comment=f"by {reviewers[i]}"
            )
        except ProposalStateError as exc:
            results[i] = exc

    threads = [threading.Thread(target=approve, args=(i,)) for i in range(len(reviewers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    return results


def test_concurrent_double_approval_has_one_winner(memory: Memory) -> None:
    for round_ in range(5):
        note = make_note(memory, f"We renew because of support quality ({round_})")
        p = memory.propose(note.id, "decision_rationale", "support quality", reason="stated", proposer=LLM)
        results = _race(memory.settings.database_url, memory.home, p.id, ["alice", "bob"])
        winners = [r for r in results if not isinstance(r, Exception)]
        losers = [r for r in results if isinstance(r, ProposalStateError)]
        assert len(winners) == 1 and len(losers) == 1, results
        decided = memory.proposal(p.id)
        assert decided.status == ProposalStatus.APPROVED
        assert decided.reviewer == winners[0].reviewer  # type: ignore[attr-defined]
        applied = [c for c in memory.changes() if c.proposal_id == p.id]
        assert len(applied) == 1  # applied exactly once
    assert memory.verify().ok
