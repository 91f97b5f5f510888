"""Two reviewers approving the same proposal at the same moment: exactly one wins."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from amem.domain.models import ProposalStatus
from amem.errors import ProposalStateError
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, signed_in


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
        p = memory.propose(
            note.id, "decision_rationale", "support quality", reason="stated", proposer=llm_proposer(memory)
        )
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


@pytest.mark.parametrize("scopes", [None, ["initech"]], ids=["every-account", "one-account"])
def test_a_change_feed_poller_misses_nothing_while_writers_commit(
    memory: Memory, scopes: list[str] | None
) -> None:
    """`GET /v1/changes` promises that a poller keeping `next_after` misses no change: a change's
    number is taken under the chain head's lock, held to commit, so no smaller number can commit
    after a larger one is seen. Three writers on their own handles apply values while the poller
    reads small pages; what it saw is every change, in order, each once. A poller of one account
    (the third writer's) is moved past the other accounts' changes, and misses none of its own."""
    notes = [
        make_note(memory, f"Call {k}", scope=scope) for k, scope in enumerate(("acme", "globex", "initech"))
    ]
    stores = [Memory(memory.home, database_url=memory.settings.database_url) for _ in notes]
    barrier = threading.Barrier(len(stores) + 1)
    done = threading.Event()
    finished: list[int] = []
    counting = threading.Lock()

    def write(k: int) -> None:
        barrier.wait()
        for i in range(20):  # tags apply at once: each proposal is a change
            stores[k].propose(
                notes[k].id, "tags", [f"topic-{i}"], reason="r", proposer=llm_proposer(stores[k])
            )
        with counting:
            finished.append(k)
            if len(finished) == len(stores):
                done.set()

    threads = [threading.Thread(target=write, args=(k,)) for k in range(len(stores))]
    for t in threads:
        t.start()
    first = memory.change_feed(scopes=scopes, limit=1000)  # what stood before the writers began
    seen, after = [c.seq for c in first.changes], first.next_after
    barrier.wait()
    while True:
        last_round = done.is_set()  # read before polling: a final poll after every write
        page = memory.change_feed(after=after, scopes=scopes, limit=3)
        assert page.next_after >= after
        seen += [c.seq for c in page.changes]
        after = page.next_after
        if last_round and not page.more:
            break
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    everything = [c.seq for c in memory.change_feed(scopes=scopes, limit=1000).changes]
    assert seen == everything and len(everything) == len(set(everything))
    tags = sum(1 for c in memory.change_feed(scopes=scopes, limit=1000).changes if c.attribute == "tags")
    assert tags == (60 if scopes is None else 20)
    if scopes is not None:  # another account's change: the next poll moves past it, finding none
        memory.propose(notes[0].id, "tags", ["late"], reason="r", proposer=llm_proposer(memory))
        quiet = memory.change_feed(after=after, scopes=scopes, limit=3)
        assert quiet.changes == [] and quiet.next_after == memory.changes(limit=1, newest_first=True)[0].seq
