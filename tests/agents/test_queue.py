"""The durable asynchronous add: add_note(wait=False), the input queue, leases and workers.

Invariants under test, on SQLite and PostgreSQL: an acknowledged input is never lost and a caller
can always learn what became of it; no input is analysed or applied twice, whatever the workers do.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import litellm
import pytest
import sqlalchemy as sa

from amem.domain.models import RawLogState
from amem.errors import InvalidInputError, NotFoundError
from amem.ledger.tables import llm_calls, notes, raw_log_states, raw_logs
from amem.memory import Memory
from tests.agents.scripted_answers import answer
from tests.scripted_llm import bag_of_words

MODEL = "scripted/test-model"


@pytest.fixture
def mem(database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setenv("AMEM_LLM_RETRY_WAIT", "0")  # backoff without waiting: the tests need no clock
    m = Memory(tmp_path / "home", database_url=database_url, llm=MODEL)
    try:
        yield m
    finally:
        m.close()


def note_rows(memory: Memory) -> int:
    with memory.ledger.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(notes)).scalar_one())


def later(memory: Memory, raw_log_id: str) -> None:
    """Move ``memory``'s queue clock past the lease on ``raw_log_id`` (no sleeping)."""
    lease_end = memory.input_status(raw_log_id).lease_until
    assert lease_end is not None
    memory.queue.clock = lambda: lease_end + timedelta(seconds=1)


def test_add_without_waiting_acknowledges_before_any_model_call_and_a_worker_completes_it(
    mem: Memory, scripted_llm
) -> None:
    raw_id = mem.add_note(
        "Acme wants the renewal quote by Friday", actor="agent:sales", scope="acme", wait=False
    )
    assert scripted_llm.requests == []  # acknowledged with no model call
    status = mem.input_status(raw_id)
    assert status.status == "queued" and status.note_id is None and status.scope == "acme"
    assert mem.queue_depth() == {"queued": 1, "processing": 0, "failed": 0}

    scripted_llm.default = answer
    (outcome,) = mem.worker().run_once()
    done = mem.input_status(raw_id)
    assert done.status == "done" and done.note_id == outcome.note_id and done.error is None
    note = mem.read(done.note_id or "")
    assert note.raw_log_ids == [raw_id] and note.content == "Acme wants the renewal quote by Friday"
    assert mem.queue_depth() == {"queued": 0, "processing": 0, "failed": 0}
    assert mem.worker().run_once() == []  # nothing twice


def test_bad_input_is_refused_before_anything_is_queued(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="content is empty"):
        mem.add_note("   ", actor="agent:sales", scope="acme", wait=False)
    with pytest.raises(InvalidInputError, match="NUL"):  # PostgreSQL would refuse it after the fact
        mem.add_note("a\x00b", actor="agent:sales", scope="acme", wait=False)
    with pytest.raises(InvalidInputError, match=r"metadata\.call: key"):
        mem.add_note("ok", actor="agent:sales", scope="acme", metadata={"call": {"\x00": 1}}, wait=False)
    assert mem.queue_depth()["queued"] == 0
    with pytest.raises(NotFoundError, match="r_nope"):
        mem.input_status("r_nope")


def test_input_status_goes_queued_processing_done_and_failed_says_why(mem: Memory, scripted_llm) -> None:
    first = mem.add_note("Acme asked about SSO", actor="agent:sales", scope="acme", wait=False)
    second = mem.add_note("Acme asked about SCIM", actor="agent:sales", scope="acme", wait=False)
    assert [mem.input_status(i).status for i in (first, second)] == ["queued", "queued"]

    worker = mem.worker(batch_size=1)
    (raw,) = mem.queue.claim(worker.owner, 1)  # what run_once does first
    assert raw.id == first
    held = mem.input_status(first)
    assert held.status == "processing" and held.lease_until is not None and held.claims == 1
    assert mem.queue_depth() == {"queued": 1, "processing": 1, "failed": 0}

    scripted_llm.push(answer, answer)
    (outcome,) = mem.pipeline.process_many([raw], owner=worker.owner)
    assert mem.input_status(first).status == "done" and mem.input_status(first).note_id == outcome.note_id

    down = litellm.APIConnectionError(
        message="connection refused", llm_provider="scripted", model="test-model"
    )
    scripted_llm.push(down)
    (failed,) = worker.run_once()
    status = mem.input_status(second)
    assert failed.raw_log_id == second and status.status == "failed" and status.note_id is None
    assert status.error is not None and "connection refused" in status.error
    assert mem.queue_depth() == {"queued": 0, "processing": 0, "failed": 1}
    assert worker.run_once() == []  # a worker leaves failed inputs to `amem reprocess`

    scripted_llm.push(answer, answer)
    (note_id,) = mem.reprocess()
    assert mem.input_status(second).status == "done" and mem.input_status(second).note_id == note_id


def test_a_transient_model_error_is_retried_with_backoff_before_the_input_fails(
    mem: Memory, scripted_llm
) -> None:
    raw_id = mem.add_note("Acme's CFO approved the budget", actor="agent:sales", scope="acme", wait=False)
    scripted_llm.push(
        litellm.RateLimitError(message="429 slow down", llm_provider="scripted", model="test-model"),
        litellm.Timeout(message="took too long", model="test-model", llm_provider="scripted"),
        answer,
        litellm.InternalServerError(message="502 upstream", llm_provider="scripted", model="test-model"),
        answer,
    )
    (outcome,) = mem.worker().run_once()
    assert outcome.note_id is not None and mem.input_status(raw_id).status == "done"
    with mem.ledger.read() as tx:
        errors = [
            r.error
            for r in tx.conn.execute(
                sa.select(llm_calls.c.error)
                .where(llm_calls.c.raw_log_id == raw_id)
                .order_by(llm_calls.c.created_at)
            )
        ]
    # every attempt is recorded: three failed ones and the two that answered
    assert len(errors) == 5 and sum(e is None for e in errors) == 2
    assert any("slow down" in (e or "") for e in errors) and any("too long" in (e or "") for e in errors)

    # a transient error that persists ends in `failed`, saying why, after the retries
    persistent = mem.add_note("Acme's legal review is done", actor="agent:sales", scope="acme", wait=False)
    tries = mem.settings.llm_transient_retries + 1
    scripted_llm.push(
        *[litellm.ServiceUnavailableError(message="503 down", llm_provider="scripted", model="m")] * tries
    )
    (outcome,) = mem.worker().run_once()
    status = mem.input_status(persistent)
    assert outcome.note_id is None and status.status == "failed"
    assert status.error is not None and "503 down" in status.error and f"{tries} tries" in status.error
    assert scripted_llm.queue == type(scripted_llm.queue)()  # exactly the retries, no more


def test_an_expired_lease_is_taken_again_and_the_old_holder_cannot_apply(mem: Memory, scripted_llm) -> None:
    raw_id = mem.add_note("Globex moves to annual billing", actor="agent:sales", scope="globex", wait=False)
    dead = mem.worker(name="dead")
    (raw,) = mem.queue.claim(dead.owner, 1)  # ...and the worker dies here

    alive = mem.worker(name="alive")
    assert alive.run_once() == []  # the dead worker's lease still stands
    assert mem.reprocess() == []  # so does reprocess: it cannot tell dead from slow
    assert mem.input_status(raw_id).status == "processing"

    later(mem, raw_id)
    assert mem.input_status(raw_id).status == "queued"
    scripted_llm.default = answer
    (outcome,) = alive.run_once()
    assert outcome.note_id is not None and mem.input_status(raw_id).claims == 2

    # the old holder comes back to life and finishes its analysis: nothing is applied twice
    (late,) = mem.pipeline.process_many([raw], owner=dead.owner)
    assert late.note_id is None and late.error is not None and "another worker took it" in late.error
    assert note_rows(mem) == 1 and mem.input_status(raw_id).note_id == outcome.note_id


def test_an_input_that_kills_every_worker_is_marked_failed_not_taken_forever(mem: Memory) -> None:
    raw_id = mem.add_note("Initech's pilot starts Monday", actor="agent:sales", scope="initech", wait=False)
    mem.queue.max_claims = 2
    for _ in range(2):
        (taken,) = mem.queue.claim(mem.worker().owner, 1)  # each worker dies holding it
        later(mem, raw_id)
    assert mem.queue.claim(mem.worker().owner, 1) == []
    status = mem.input_status(raw_id)
    assert status.status == "failed" and status.error is not None and "taken 2 times" in status.error
    assert taken.id == raw_id


def test_synchronous_add_holds_its_input_so_no_worker_takes_it(mem: Memory, scripted_llm) -> None:
    seen: list[dict[str, Any]] = []

    def construct_while_a_worker_looks(messages: list[dict[str, Any]]) -> str:
        # add_note(wait=True) is analysing: its raw log is committed, and a worker finds nothing
        seen.append(mem.queue_depth())
        seen.append({"claimed": len(mem.worker().run_once())})
        return answer(messages)

    scripted_llm.push(construct_while_a_worker_looks, answer)
    note_id = mem.add_note("Acme signs on Friday", actor="agent:sales", scope="acme")
    assert seen == [{"queued": 0, "processing": 1, "failed": 0}, {"claimed": 0}]
    assert mem.input_status(mem.read(note_id).raw_log_ids[0]).status == "done"


def test_a_synchronous_add_slower_than_its_lease_keeps_its_input(mem: Memory, scripted_llm) -> None:
    """A slow model (or a large import batch) outlasting the lease: the caller's leases are renewed
    while it analyses, as a worker's are, so no worker takes the input meanwhile and the caller's
    own analysis is applied, not refused as "another worker took it"."""
    mem.queue.lease_seconds = 0.3  # renewed every 0.1 s while the analysis runs
    seen: dict[str, Any] = {}

    def lease_end() -> Any:
        with mem.ledger.engine.connect() as conn:
            return conn.execute(sa.select(raw_log_states.c.lease_until)).scalar_one()

    def construct_slowly(messages: list[dict[str, Any]]) -> str:
        first, renewed, deadline = lease_end(), threading.Event(), 200
        while not renewed.is_set() and deadline:  # the lease runs out unless renewed meanwhile
            renewed.wait(0.05)
            deadline -= 1
            if lease_end() > first:
                renewed.set()
        seen["renewed"] = renewed.is_set()
        seen["claimed"] = len(mem.queue.claim("worker-elsewhere", 5))
        return answer(messages)

    scripted_llm.push(construct_slowly, answer)
    note_id = mem.add_note("Acme signs on Friday", actor="agent:sales", scope="acme")
    assert seen == {"renewed": True, "claimed": 0}
    assert mem.input_status(mem.read(note_id).raw_log_ids[0]).claims == 1


def test_two_workers_racing_never_process_an_input_twice(database_url: str, tmp_path: Path) -> None:
    """Two stores on one ledger (two engines, as two processes would have), each with a worker,
    draining the same queue at once with the offline analyst: each input is analysed once."""
    first = Memory(tmp_path / "a", database_url=database_url)
    second = Memory(tmp_path / "b", database_url=database_url)
    try:
        ids = [
            first.add_note(
                f"Account {i} renewed the Pro plan for {i + 2} seats", actor="agent:x", scope="s", wait=False
            )
            for i in range(24)
        ]
        analysed: Counter[str] = Counter()
        lock = threading.Lock()
        start = threading.Barrier(2)

        def count_analyses(memory: Memory) -> None:
            analyst = memory.pipeline.analyst
            construct = analyst.construct

            def counted(raw: Any, declared: Any) -> Any:
                with lock:
                    analysed[raw.id] += 1
                return construct(raw, declared)

            analyst.construct = counted  # type: ignore[method-assign]

        workers = []
        for memory in (first, second):
            count_analyses(memory)
            workers.append(memory.worker(batch_size=3))

        def drain(worker: Any) -> None:
            start.wait()
            worker.drain()

        threads = [threading.Thread(target=drain, args=(w,)) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        assert sorted(analysed) == sorted(ids) and set(analysed.values()) == {1}
        assert all(w.stats.processed > 0 for w in workers)  # both really took part
        statuses = [first.input_status(i) for i in ids]
        assert {s.status for s in statuses} == {"done"}
        assert len({s.note_id for s in statuses}) == len(ids) == note_rows(first)
        with first.ledger.read() as tx:
            assert tx.raw_log_states([RawLogState.PENDING, RawLogState.FAILED]) == []
        assert first.verify().ok
    finally:
        first.close()
        second.close()


def test_reprocess_tries_each_input_once_per_call_even_when_they_fail_again(
    mem: Memory, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amem.services import pipeline

    monkeypatch.setattr(pipeline, "BATCH", 2)  # several claims in one call
    ids = [
        mem.add_note(f"Umbrella note {i}", actor="agent:x", scope="umbrella", wait=False) for i in range(5)
    ]
    down = litellm.APIConnectionError(
        message="connection refused", llm_provider="scripted", model="test-model"
    )
    scripted_llm.default = lambda messages: (_ for _ in ()).throw(down)  # every call fails
    assert mem.reprocess() == []
    assert len(scripted_llm.requests) == 5  # each once, though each became failed and claimable again
    assert {mem.input_status(i).status for i in ids} == {"failed"}

    scripted_llm.default = answer
    assert len(mem.reprocess(limit=3)) == 3
    assert [mem.input_status(i).status for i in ids] == ["done"] * 3 + ["failed"] * 2


def test_a_worker_whose_embedder_fails_records_the_cause_and_does_not_take_the_input_again(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the batch raised, the input stayed "processing" under the worker's lease with no
    error, was taken again each time the lease ended, and after 5 claims was marked failed "by
    workers that stopped ... (a crash or a kill each time)"."""
    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    scripted_llm.default = answer
    with Memory(tmp_path / "home", database_url=database_url, llm=MODEL) as mem:
        mem.add_note("Acme renews in May", actor="agent:sales", scope="acme")  # the index is open
        raw_id = mem.add_note("Acme wants SSO", actor="agent:sales", scope="acme", wait=False)

        def down(texts: list[str]) -> list[list[float]]:
            raise RuntimeError("embedding service down")

        scripted_llm.embedder = down
        worker = mem.worker()
        (outcome,) = worker.run_once()
        assert outcome.note_id is None and outcome.error is not None and raw_id in outcome.error
        status = mem.input_status(raw_id)
        assert status.status == "failed" and status.claims == 1
        assert status.error is not None and "embedding service down" in status.error
        assert worker.stats.failed == 1
        later_still = mem.queue.clock() + timedelta(seconds=10 * mem.queue.lease_seconds)
        mem.queue.clock = lambda: later_still
        assert worker.run_once() == []  # failed leaves the workers' queue: `amem reprocess` retries
        assert mem.input_status(raw_id).claims == 1

        scripted_llm.embedder = bag_of_words
        (note_id,) = mem.reprocess()
        assert mem.input_status(raw_id).note_id == note_id and note_rows(mem) == 2


def test_a_worker_s_failing_note_write_keeps_the_notes_written_before_it(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker writes note by note: the second note's write failing leaves the first done, and
    only the second failed, with the cause."""
    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    scripted_llm.default = answer
    with Memory(tmp_path / "home", database_url=database_url, llm=MODEL) as mem:
        first = mem.add_note("Globex signed", actor="agent:sales", scope="globex", wait=False)
        second = mem.add_note("Globex wants SAML", actor="agent:sales", scope="globex", wait=False)
        keep = mem.search_service.keep_vectors
        writes: list[int] = []

        def second_write_refused(tx: Any, note_ids: Any) -> None:
            writes.append(1)
            if len(writes) == 2:
                raise sa.exc.OperationalError("INSERT", {}, RuntimeError("disk I/O error"))
            keep(tx, note_ids)

        monkeypatch.setattr(mem.search_service, "keep_vectors", second_write_refused)
        done, refused = mem.worker().run_once()
        assert done.note_id is not None and mem.input_status(first).status == "done"
        assert refused.note_id is None and refused.raw_log_id == second
        status = mem.input_status(second)
        assert status.status == "failed" and status.error is not None and "disk I/O error" in status.error
        assert note_rows(mem) == 1


def test_a_failed_input_whose_reprocess_stops_records_the_new_cause_and_the_next_reprocess_takes_it(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: reprocess holds failed inputs, but marking them failed (and renewing, and giving
    back) matched queued ones only: the old error stayed, the input stayed held by the reprocess
    that stopped, and the next reprocess skipped it until that lease ended."""
    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    monkeypatch.setenv("AMEM_LLM_RETRY_WAIT", "0")
    scripted_llm.default = answer
    with Memory(tmp_path / "home", database_url=database_url, llm=MODEL) as mem:
        mem.add_note("Acme renews in May", actor="agent:sales", scope="acme")  # the index is open
        raw_id = mem.add_note("Acme wants SSO", actor="agent:sales", scope="acme", wait=False)
        scripted_llm.default = lambda messages: (_ for _ in ()).throw(
            litellm.BadRequestError(message="model unreachable", llm_provider="scripted", model="test-model")
        )
        mem.worker().drain()
        assert mem.input_status(raw_id).status == "failed"
        attempts = mem.input_status(raw_id).attempts

        scripted_llm.default = answer

        def down(texts: list[str]) -> list[list[float]]:
            raise RuntimeError("embedding service down")

        scripted_llm.embedder = down
        assert mem.reprocess() == []
        status = mem.input_status(raw_id)
        assert status.status == "failed" and status.error is not None
        assert "embedding service down" in status.error and "model unreachable" not in status.error
        assert status.attempts == attempts + 1 and status.lease_until is None

        seen: list[str] = []

        def embed_while_looking(texts: list[str]) -> list[list[float]]:
            seen.append(mem.input_status(raw_id).status)  # held by this reprocess, not "failed"
            return bag_of_words(texts)

        scripted_llm.embedder = embed_while_looking
        (note_id,) = mem.reprocess()  # at once: no lease of the reprocess that stopped to wait out
        assert mem.input_status(raw_id).note_id == note_id and note_rows(mem) == 2
        assert seen and set(seen) == {"processing"}


def test_an_interrupted_reprocess_gives_failed_inputs_back_to_the_next_one(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in reprocess: the failed inputs it held are free again at once, not held until the
    lease of the reprocess that stopped ends."""
    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    scripted_llm.default = answer
    with Memory(tmp_path / "home", database_url=database_url, llm=MODEL) as mem:
        mem.add_note("Acme renews in May", actor="agent:sales", scope="acme")  # the index is open
        raw_id = mem.add_note("Acme wants SSO", actor="agent:sales", scope="acme", wait=False)

        def down(texts: list[str]) -> list[list[float]]:
            raise RuntimeError("embedding service down")

        scripted_llm.embedder = down
        mem.worker().drain()
        assert mem.input_status(raw_id).status == "failed"

        def interrupted(texts: list[str]) -> list[list[float]]:
            raise KeyboardInterrupt

        scripted_llm.embedder = interrupted
        with pytest.raises(KeyboardInterrupt):
            mem.reprocess()
        status = mem.input_status(raw_id)
        assert (
            status.status == "failed"
            and status.error is not None
            and "embedding service down" in status.error
        )
        assert mem.queue_depth() == {"queued": 0, "processing": 0, "failed": 1}

        scripted_llm.embedder = bag_of_words
        (note_id,) = mem.reprocess()
        assert mem.input_status(raw_id).note_id == note_id


def test_a_worker_goes_past_inputs_it_gives_up_to_those_queued_behind_them(mem: Memory, scripted_llm) -> None:
    """``amem worker --once``: before, a claim whose every input was given up took the queue for
    empty, and the input queued behind them waited."""
    scripted_llm.default = answer
    ids = [mem.add_note(f"Acme call {i}", actor="agent:sales", scope="acme", wait=False) for i in range(3)]
    mem.queue.max_claims = 2
    for dead in ("dead-1", "dead-2"):  # two workers each took the first two and died
        taken = mem.queue.claim(dead, 2)
        assert [raw.id for raw in taken] == ids[:2]
        later(mem, ids[0])
    worker = mem.worker(batch_size=2)
    assert worker.drain() == 3
    assert [mem.input_status(i).status for i in ids] == ["failed", "failed", "done"]
    assert (worker.stats.processed, worker.stats.failed) == (1, 2)
    assert mem.queue_depth() == {"queued": 0, "processing": 0, "failed": 2}


def queue_up(memory: Memory, count: int) -> list[str]:
    """``count`` inputs queued in one import, their ids in arrival order."""
    lines = [{"content": f"Hooli asked about invoice {i}", "scope": f"hooli{i % 3}"} for i in range(count)]
    return [outcome.raw_log_id for outcome in memory.add_notes(lines, actor="agent:crm", wait=False)]


def test_a_claim_takes_the_oldest_free_inputs_in_order_from_a_long_queue(mem: Memory) -> None:
    """Arrival order whatever the holders do: held inputs are passed over, one given back or whose
    lease ended is taken again before those behind it, and reprocess's walk merges failed and queued
    inputs by arrival (each state read in its own index range)."""
    ids = queue_up(mem, 60)
    assert [r.id for r in mem.queue.claim("a", 4)] == ids[:4]
    assert [r.id for r in mem.queue.claim("b", 6)] == ids[4:10]
    assert mem.queue.release("b", [ids[6]]) == 1
    assert [r.id for r in mem.queue.claim("c", 3)] == [ids[6], ids[10], ids[11]]
    mem.queue.fail(None, [ids[13], ids[15]], "model unreachable")  # failed, out of the workers' queue
    assert [r.id for r in mem.queue.claim("d", 3)] == [ids[12], ids[14], ids[16]]
    raws, last = mem.queue.claim_after("reprocess", 3, after_seq=0, include_failed=True)
    assert [r.id for r in raws] == [ids[13], ids[15], ids[17]]
    raws, _ = mem.queue.claim_after("reprocess", 2, after_seq=last, include_failed=True)
    assert [r.id for r in raws] == ids[18:20]
    assert [r.id for r in mem.queue.claim("e", 100)] == [*ids[20:]]
    later(mem, ids[0])  # every lease ends (their workers died): the queue is taken again from its start
    assert [r.id for r in mem.queue.claim("f", 100)] == [i for i in ids if i not in {ids[13], ids[15]}]


def test_inputs_queued_before_0025_are_claimed_in_arrival_order_after_the_upgrade(mem: Memory) -> None:
    """0025 copies each input's arrival number beside its state: inputs recorded before it keep
    their place in the queue, whatever order their state rows lie in (put back here in reverse)."""
    from amem.ledger import schema

    ids = queue_up(mem, 30)
    (first,) = mem.queue.claim("held", 1)
    engine = mem.ledger.engine
    schema.downgrade(engine, "0024")
    with engine.begin() as conn:
        assert "raw_log_seq" not in {c["name"] for c in sa.inspect(conn).get_columns("raw_log_states")}
        rows = [dict(r._mapping) for r in conn.execute(sa.text("SELECT * FROM raw_log_states"))]
        conn.execute(sa.text("DELETE FROM raw_log_states"))
        names, values = ", ".join(rows[0]), ", ".join(f":{c}" for c in rows[0])
        insert = sa.text(f"INSERT INTO raw_log_states ({names}) VALUES ({values})")
        for row in sorted(rows, key=lambda r: ids.index(str(r["raw_log_id"])), reverse=True):
            conn.execute(insert, row)
    schema.upgrade(engine)

    with engine.connect() as conn:
        copied = dict(
            conn.execute(
                sa.select(raw_log_states.c.raw_log_id, raw_log_states.c.raw_log_seq - raw_logs.c.seq).join(
                    raw_logs, raw_logs.c.id == raw_log_states.c.raw_log_id
                )
            ).all()
        )
    assert set(copied) == set(ids) and set(copied.values()) == {0}
    assert first.id == ids[0] and mem.input_status(ids[0]).status == "processing"
    assert [r.id for r in mem.queue.claim("w1", 10)] == ids[1:11]
    assert [r.id for r in mem.queue.claim("w2", 100)] == ids[11:]
    assert mem.add_note("Hooli pays by card now", actor="agent:crm", scope="hooli0", wait=False)
    assert mem.queue_depth() == {"queued": 1, "processing": 30, "failed": 0}


def test_a_claim_reads_the_queue_in_the_order_of_an_index_not_a_sort_of_the_backlog(mem: Memory) -> None:
    """Before, a claim joined raw_logs and ordered by its seq: each claim read and sorted every
    queued input (816 ms a claim with 200,000 queued, under SQLite's writer lock). The claim's own
    read, caught as it runs, is explained: SQLite's plan has no temporary B-tree, and PostgreSQL,
    told to avoid sorts, finds a plan with none (it sorts anyway where no index gives the order)."""
    queue_up(mem, 40)
    engine = mem.ledger.engine
    reads: list[tuple[str, Any]] = []

    def catch(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if (
            statement.lstrip().startswith("SELECT")
            and "ORDER BY" in statement
            and "raw_log_states" in statement
        ):
            reads.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", catch)
    try:
        assert len(mem.queue.claim("w", 16)) == 16
    finally:
        sa.event.remove(engine, "before_cursor_execute", catch)
    assert reads
    with engine.begin() as conn:
        for statement, parameters in reads:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql("SET LOCAL enable_sort = off")
                plan = "\n".join(str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + statement, parameters))
                assert "Sort" not in plan and "ix_raw_log_states_claim" in plan, plan
            else:
                rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
                plan = "\n".join(str(r[-1]) for r in rows)
                assert "TEMP B-TREE" not in plan and "ix_raw_log_states_claim" in plan, plan
