"""Workers: take queued inputs from the ledger under a lease and analyse them (add_note's second half).

A worker claims a batch of inputs (amem/services/queue.py), keeps its leases alive while it works
(a heartbeat at a third of the lease), and hands the batch to the write pipeline, which applies
each analysis only while the claim stands. A worker that dies leaves leases that end; another
worker then takes those inputs again. Any number of workers may run, in threads of one process
(``WorkerPool``) or in many processes (``amem worker``) sharing one ledger.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from amem.domain.models import AddOutcome
from amem.services.pipeline import WritePipeline
from amem.services.queue import InputQueue, owner_id

log = logging.getLogger(__name__)

#: Inputs one worker claims and analyses together (one embedding call, one write transaction).
DEFAULT_BATCH = 16
#: How often an idle worker looks at the queue when no input arrived in its own process.
DEFAULT_POLL_SECONDS = 0.5


@dataclass
class WorkerStats:
    """What a worker's inputs became: a note (``processed``), failed (kept, left to ``amem
    reprocess``), erased on a data subject's request while analysed (``erased``: nothing left to
    do), or given back to the queue for another analysis (``given_back``: shown a note erased
    meanwhile, or taken by another worker once its lease ended); neither of the last two failed."""

    processed: int = 0
    failed: int = 0
    batches: int = 0
    erased: int = 0
    given_back: int = 0

    @classmethod
    def total(cls, workers: Iterable[Worker]) -> WorkerStats:
        """The stats of ``workers`` added up (a pool, or ``amem worker --once``'s threads)."""
        total = cls()
        for worker in workers:
            for name, value in vars(worker.stats).items():
                setattr(total, name, getattr(total, name) + value)
        return total


class Worker:
    """One worker: claim, analyse, apply, repeat."""

    def __init__(
        self,
        pipeline: WritePipeline,
        queue: InputQueue,
        *,
        batch_size: int = DEFAULT_BATCH,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
        name: str = "worker",
    ) -> None:
        self.pipeline = pipeline
        self.queue = queue
        self.batch_size = max(1, batch_size)
        self.poll_seconds = poll_seconds
        self.owner = owner_id(name)
        self.stats = WorkerStats()

    def run_once(self) -> list[AddOutcome]:
        """Claim one batch and process it; an empty list when nothing was waiting. Inputs the claim
        gave up on (every worker that took them died) come back first, failed, saying why: they
        count as failed, and the claim takes the inputs queued behind them instead."""
        batch = self.queue.claim_batch(self.owner, self.batch_size)
        outcomes = [
            AddOutcome(
                raw_log_id=raw_id,
                error=f"raw log {raw_id} was given up: {batch.given_up_error} (`amem status {raw_id}`)",
            )
            for raw_id in batch.given_up
        ]
        if batch.raws:
            # the leases are renewed while the batch is analysed (process_many keeps them alive)
            outcomes += self.pipeline.process_many(
                batch.raws, batch_size=self.batch_size, owner=self.owner, commit_each=True
            )
            self.stats.batches += 1
        for outcome in outcomes:
            if outcome.note_id is not None:
                self.stats.processed += 1
                continue
            # the ledger says what became of it: an outcome without a note was erased meanwhile,
            # queued again, or failed (before, each counted failed, and `amem worker --once` said
            # "kept, not analysed" of an input erased or waiting in the queue)
            became = self.queue.status(outcome.raw_log_id).status
            if became == "erased":
                self.stats.erased += 1
                log.info("%s", outcome.error)
            elif became == "failed":
                self.stats.failed += 1
                log.warning("%s", outcome.error)
            else:  # queued or processing again, or done by another worker
                self.stats.given_back += 1
                log.info("%s", outcome.error)
        return outcomes

    def drain(self, stop: threading.Event | None = None) -> int:
        """Process until no input is waiting, or ``stop`` is set (the batch in hand is finished
        first: a signal to ``amem worker --once`` leaves no input held by a worker that is gone).
        Returns the inputs processed (failed ones included)."""
        done = 0
        while not (stop is not None and stop.is_set()) and (outcomes := self.run_once()):
            done += len(outcomes)
        return done

    def run(self, stop: threading.Event) -> None:
        """Process until ``stop`` is set; idle, wake on an input queued in this process or poll."""
        while not stop.is_set():
            seen = self.queue.arrivals
            try:
                worked = bool(self.run_once())
            except Exception:  # a broken ledger or index: keep the worker alive, the leases end
                log.exception(
                    "worker %s: a batch failed; its inputs are taken again when leases end", self.owner
                )
                worked = False
                stop.wait(self.poll_seconds)
            if not worked and not stop.is_set():
                self.queue.wait(seen, self.poll_seconds)


class WorkerPool:
    """``concurrency`` workers in threads of this process (``amem serve``, ``amem mcp``, ``amem worker``)."""

    def __init__(self, make_worker: Callable[[int], Worker], concurrency: int) -> None:
        self.workers = [make_worker(i) for i in range(max(0, concurrency))]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> WorkerPool:
        for worker in self.workers:
            thread = threading.Thread(target=worker.run, args=(self._stop,), name=worker.owner, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Let each worker finish the batch it holds, then return."""
        self._stop.set()
        for worker in self.workers:
            worker.queue.notify()
        for thread in self._threads:
            thread.join(timeout)

    def wait(self) -> None:
        """Block until stopped (Ctrl-C in ``amem worker``)."""
        while not self._stop.wait(1.0):
            pass

    @property
    def stats(self) -> WorkerStats:
        return WorkerStats.total(self.workers)
