"""What keeps the agents' paths fast under load, without giving up what they promise.

Concurrent acknowledgements share commits (group commit), yet each returns only once its own input
is committed, and one caller's failure never fails or acknowledges another's. A process that
searches loads the vectors a worker (another process) wrote with its notes instead of embedding
those notes again. Both on SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amem.domain.models import Actor, ActorKind, RawLog
from amem.memory import Memory
from amem.services.pipeline import raw_log_from
from tests.agents.scripted_answers import answer
from tests.factories import signed_in

MODEL = "scripted/test-model"


@pytest.fixture
def mem(database_url: str, tmp_path: Path, scripted_llm) -> Iterator[Memory]:
    m = Memory(tmp_path / "home", database_url=database_url, llm=MODEL)
    try:
        yield m
    finally:
        m.close()


def raw(mem: Memory, text: str) -> RawLog:
    return raw_log_from(
        mem.settings,
        text,
        at=None,
        actor=Actor(kind=ActorKind.AGENT, id="agent:load"),
        scope="acme",
        metadata=None,
    )


def _hold_first_commit(group: Any) -> threading.Event:
    """Make the group's first commit wait until the returned event is set (later ones run as ever)."""
    commit = group._commit
    release = threading.Event()
    first = True

    def held(raws: list[RawLog], keys: dict[str, str]) -> None:
        nonlocal first
        if first:
            first = False
            assert release.wait(60)
        commit(raws, keys)

    group._commit = held
    return release


def test_concurrent_acknowledgements_share_one_commit_and_each_returns_committed(mem: Memory) -> None:
    """The first caller's commit is held open while seven more arrive: they are committed together,
    in one more transaction, and every caller that returned finds its input queued."""
    queue = mem.queue
    group = queue._group
    release = _hold_first_commit(group)
    returned: dict[int, str] = {}

    def add(i: int) -> None:
        returned[i] = mem.add_note(f"Acme note {i}", actor="agent:load", scope="acme", wait=False)

    threads = [threading.Thread(target=add, args=(0,))]
    threads[0].start()
    with group._cond:
        assert group._cond.wait_for(lambda: group._leading, timeout=60)
    threads += [threading.Thread(target=add, args=(i,)) for i in range(1, 8)]
    for t in threads[1:]:
        t.start()
    with group._cond:
        assert group._cond.wait_for(lambda: len(group._waiting) == 7, timeout=60)
    assert returned == {}  # nobody is acknowledged before their input is committed
    release.set()
    for t in threads:
        t.join(60)

    assert sorted(returned) == list(range(8))
    assert (group.commits, group.rows) == (2, 8)
    for raw_log_id in returned.values():
        assert mem.input_status(raw_log_id).status == "queued"
    assert mem.queue_depth()["queued"] == 8


def test_one_callers_failing_input_fails_only_that_caller(mem: Memory) -> None:
    """Two callers bring the same raw log (a duplicate id: the database refuses it) beside a good
    one, in one group: the group is retried caller by caller; the good input and the first copy are
    committed, the duplicate's caller gets the error."""
    group = mem.queue._group
    release = _hold_first_commit(group)
    opener, good, twin = raw(mem, "opener"), raw(mem, "Acme signed"), raw(mem, "Acme renewal")
    outcome: dict[str, Any] = {}

    def enqueue(name: str, r: RawLog) -> None:
        try:
            mem.queue.enqueue([r])
            outcome[name] = "ok"
        except Exception as exc:
            outcome[name] = exc

    lead = threading.Thread(target=enqueue, args=("opener", opener))
    lead.start()
    with group._cond:
        assert group._cond.wait_for(lambda: group._leading, timeout=60)
    others = [
        threading.Thread(target=enqueue, args=(n, r)) for n, r in [("good", good), ("a", twin), ("b", twin)]
    ]
    for t in others:
        t.start()
    with group._cond:
        assert group._cond.wait_for(lambda: len(group._waiting) == 3, timeout=60)
    release.set()
    for t in [lead, *others]:
        t.join(60)

    assert outcome["opener"] == "ok" and outcome["good"] == "ok"
    assert sorted(str(type(outcome[n]).__name__) == "str" for n in ("a", "b")) == [False, True]
    assert mem.input_status(good.id).status == "queued"
    assert mem.input_status(twin.id).status == "queued"
    assert mem.queue_depth()["queued"] == 3


def test_a_searching_process_loads_the_vectors_a_worker_wrote_with_its_notes(
    database_url: str, tmp_path: Path, scripted_llm
) -> None:
    """The worker's own index catch-up never runs (as when a search elsewhere catches up between
    the worker's commit and that catch-up): the API's search still embeds nothing but its query."""
    scripted_llm.default = answer
    home = tmp_path / "home"
    with (
        Memory(home, database_url=database_url, llm=MODEL) as api,
        Memory(home, database_url=database_url, llm=MODEL) as worker_side,
    ):
        assert api.search("renewal", scope="acme") == []  # the API's index is open and caught up
        raw_log_id = api.add_note(
            "Acme signed the renewal at 40 seats", actor="agent:load", scope="acme", wait=False
        )

        def no_catch_up() -> int:
            raise RuntimeError("the worker's catch-up did not run")

        worker_side.search_service.catch_up = no_catch_up  # type: ignore[method-assign]
        (outcome,) = worker_side.worker().run_once()
        assert outcome.note_id is not None

        hits = api.search("renewal seats", scope="acme")
        assert [h.note_id for h in hits] == [outcome.note_id]
        assert api.search_service.sync.embedded == 0  # loaded from the ledger, not embedded again
        assert api.input_status(raw_log_id).note_id == outcome.note_id


def test_a_servers_search_ranks_what_workers_wrote_without_writing_its_index_each_time(
    database_url: str, tmp_path: Path, scripted_llm
) -> None:
    """The API's searches catch up with notes another process wrote by staging them beside the
    index (no index write per search); they are found, a deleted one is not, and a recording
    catch-up writes them into the index."""
    scripted_llm.default = answer
    home = tmp_path / "home"
    with (
        Memory(home, database_url=database_url, llm=MODEL) as api,
        Memory(home, database_url=database_url, llm=MODEL) as worker_side,
    ):
        api.add_note("Acme wants SSO before renewal", actor="agent:load", scope="acme")
        index = api.search_service.index
        written: list[str] = []
        upsert = index.upsert

        def counted(entries: Any, vectors: Any) -> None:
            written.extend(e.note_id for e in entries)
            upsert(entries, vectors)

        index.upsert = counted  # type: ignore[method-assign]
        signed = worker_side.add_note("Acme signed the renewal at 40 seats", actor="agent:load", scope="acme")
        gone = worker_side.add_note("Acme asked about the invoice", actor="agent:load", scope="acme")
        deletion = worker_side.delete(gone, actor="bob", reason="wrong account")
        worker_side.approve(deletion.id, reviewer=signed_in(worker_side, "alice"))

        hits = api.search("renewal seats", k=5, scope="acme")
        assert signed in [h.note_id for h in hits]
        assert gone not in [h.note_id for h in api.search("invoice", k=5, scope="acme")]
        assert written == []  # the searches wrote nothing into the index
        assert set(api.search_service.sync.staged()) == {signed, gone}
        assert api.search_service.sync.embedded == 0

        api.search_service.catch_up()  # a recording catch-up writes what was staged, at once
        assert api.search_service.sync.staged() == {} and written == [signed]
        assert [h.note.content for h in api.search("renewal seats", k=1, scope="acme")] == [
            "Acme signed the renewal at 40 seats"
        ]
