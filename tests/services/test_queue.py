"""The input queue's clock and its count of claims (amem/services/queue.py).

Workers on several machines share a PostgreSQL ledger, and machines' clocks differ: leases there
are measured by the database's clock, so a worker whose clock runs ahead never takes an input a
live worker holds. And an input given back cleanly (an interrupted import) is not counted as taken
by a worker that died, so it is never given up "after 5 crashes" that never happened.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, tzinfo
from typing import Any

import pytest

from amem.domain import models
from amem.memory import Memory
from tests.agents.scripted_answers import answer

#: Further apart than the lease (120 s), as two machines' clocks can be.
SKEW = timedelta(seconds=150)


@contextmanager
def machine_clock_off_by(off: timedelta) -> Iterator[None]:
    """Every reading of this machine's clock (``utcnow``) ``off`` from true time: this process acts
    as a process on another machine would."""

    class Skewed(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
            return datetime.now(tz) + off

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(models, "datetime", Skewed)
        yield


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_worker_whose_clock_runs_ahead_never_takes_an_input_a_live_worker_holds(
    mem: Memory, scripted_llm: Any
) -> None:
    """Before: the leases were measured by each process's clock; a worker on a machine 150 s ahead
    found the live holder's lease ended, took the input, and the holder's analysis was thrown away."""
    scripted_llm.default = answer
    raw_id = mem.add_note("Acme wants SSO before the renewal", actor="agent:crm", scope="acme", wait=False)
    holder = mem.worker(name="behind")
    with machine_clock_off_by(-SKEW):  # the holder's machine runs behind
        (raw,) = mem.queue.claim(holder.owner, 1)
        assert mem.queue.renew(holder.owner, [raw_id]) == 1  # its heartbeat

    with machine_clock_off_by(SKEW):  # a worker on a machine running ahead looks
        assert mem.input_status(raw_id).status == "processing"
        assert mem.queue_depth() == {"queued": 0, "processing": 1, "failed": 0}
        assert mem.worker(name="ahead").run_once() == []
        assert mem.reprocess() == []

    (outcome,) = mem.pipeline.process_many([raw], owner=holder.owner)
    status = mem.input_status(raw_id)
    assert outcome.note_id is not None and status.note_id == outcome.note_id and status.claims == 1


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_an_input_added_on_a_machine_whose_clock_runs_behind_stays_its_callers_while_analysed(
    mem: Memory, scripted_llm: Any
) -> None:
    """Before: a synchronous add on a machine 150 s behind wrote a lease that had already ended by
    the others' clocks, and a worker elsewhere took its input while it was being analysed."""
    seen: dict[str, Any] = {}

    def construct_while_a_worker_elsewhere_looks(messages: list[dict[str, Any]]) -> str:
        with machine_clock_off_by(SKEW):
            seen["depth"] = mem.queue_depth()
            seen["claimed"] = len(mem.worker(name="ahead").run_once())
        return answer(messages)

    scripted_llm.push(construct_while_a_worker_elsewhere_looks)
    scripted_llm.default = answer
    with machine_clock_off_by(-SKEW):
        note_id = mem.add_note("Acme signs on Friday", actor="agent:crm", scope="acme")
    assert seen == {"depth": {"queued": 0, "processing": 1, "failed": 0}, "claimed": 0}
    raw_id = mem.read(note_id).raw_log_ids[0]
    assert mem.input_status(raw_id).status == "done" and mem.input_status(raw_id).claims == 1


def test_an_import_interrupted_again_and_again_is_analysed_not_given_up_as_crashed(
    mem: Memory, scripted_llm: Any
) -> None:
    """Before: each interruption's clean give-back counted as a claim, so after ``max_claims`` of
    them a worker marked the input failed, "taken 5 times by workers that stopped before finishing
    it (a crash or a kill each time)", though none had crashed."""
    lines = [{"content": "Initech's pilot starts Monday", "scope": "initech", "at": "2026-03-02T09:00:00Z"}]
    mem.queue.max_claims = 2

    def interrupted(messages: list[dict[str, Any]]) -> str:
        raise KeyboardInterrupt

    scripted_llm.default = interrupted
    for _ in range(mem.queue.max_claims + 1):  # Ctrl-C, then the same import run again, each time
        with pytest.raises(KeyboardInterrupt):
            mem.add_notes(lines, actor="agent:crm", skip_recorded=True)
        assert mem.queue_depth() == {"queued": 1, "processing": 0, "failed": 0}

    scripted_llm.default = answer
    worker = mem.worker()
    (outcome,) = worker.run_once()
    status = mem.input_status(outcome.raw_log_id)
    assert outcome.error is None and status.status == "done" and status.note_id == outcome.note_id
    assert worker.stats.failed == 0


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_an_input_done_or_failed_is_timed_by_the_database_clock_as_its_claim_is(
    mem: Memory, scripted_llm: Any
) -> None:
    """Reviewer K, finding 6: on PostgreSQL an input's claim and lease were timed by the server's
    clock, but its end (done, or failed by the model) by the clock of the machine that analysed it:
    one status mixed two clocks, its `updated_at` before its own claim on a machine running behind."""
    import litellm

    scripted_llm.push(litellm.AuthenticationError(message="bad key", llm_provider="scripted", model="m"))
    scripted_llm.default = answer
    lines = [{"content": f"Acme call {i}: wants {i} seats", "scope": "acme"} for i in range(2)]
    with machine_clock_off_by(-SKEW):  # the analysing machine runs behind
        failed, done = mem.add_notes(lines, actor="agent:crm")
    assert failed.note_id is None and done.note_id is not None
    for outcome in (failed, done):
        status = mem.input_status(outcome.raw_log_id)
        assert status.status in {"failed", "done"}
        assert abs(status.updated_at - models.utcnow()) < SKEW / 2  # the server's clock, not 150 s behind
