"""The input queue: raw logs waiting to be analysed, claimed by workers under a lease.

Nothing here lives in memory only: the queue is the ledger's ``raw_log_states`` table, so an input
acknowledged to a caller (its raw log committed) survives any crash, and any number of workers, in
one process or many, on one machine or several sharing a PostgreSQL, take disjoint inputs. A
worker that dies leaves a lease that ends; the input is then taken again. The write that applies an
analysis checks, in its own transaction, that its claim still stands, so no input is applied twice.

Leases are measured by one clock for every process: on PostgreSQL the database server's, read in
the transaction that takes, renews or reads them (machines' clocks differ: a worker whose clock ran
ahead took inputs live workers held, and threw their work away); on SQLite, one machine, its clock.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from amem.domain.models import InputStatus, RawLog, RawLogState, utcnow
from amem.errors import NotFoundError
from amem.ledger import queue_queries
from amem.ledger.store import Ledger, LedgerTx

log = logging.getLogger(__name__)

#: How long a claim lasts unless renewed; whoever analyses renews theirs every third of it.
DEFAULT_LEASE_SECONDS = 120.0
#: An input taken this many times without being finished (each worker died on it) is marked failed.
DEFAULT_MAX_CLAIMS = 5


class _Waiting:
    """One caller's raw logs waiting in a group commit, and how their commit went."""

    def __init__(self, raws: list[RawLog], keys: dict[str, str]) -> None:
        self.raws = raws
        #: Raw log id -> its sender's idempotency key, for those that have one.
        self.keys = keys
        self.done = False
        self.error: BaseException | None = None
        #: Set when settled, or when this caller is handed the lead (``group`` then set).
        self.woken = threading.Event()
        self.group: list[_Waiting] | None = None


class GroupCommit:
    """Commits for concurrent callers, several callers' rows in one transaction (group commit).

    No thread of its own: the first caller that finds no commit running leads: it takes every row
    waiting at that moment, commits them in one transaction and wakes their callers; those who
    arrived meanwhile wait, and the first of them is handed the lead of the next commit, with every
    row waiting then. Each caller returns only once its own rows are committed, or raises if they
    were not. A failed group is retried caller by caller, so one caller's bad rows never fail (nor
    acknowledge) another's. Each waiting caller sleeps on its own event: an arrival wakes nobody.
    """

    def __init__(self, commit: Callable[[list[RawLog], dict[str, str]], None]) -> None:
        self._commit = commit
        #: Guards the fields below; notified on each arrival, for whoever watches a group form (tests).
        self._cond = threading.Condition()
        self._waiting: list[_Waiting] = []
        self._leading = False
        #: Transactions and rows committed (how much grouping happened: rows / commits).
        self.commits = 0
        self.rows = 0

    def commit(self, raws: list[RawLog], keys: dict[str, str] | None = None) -> None:
        mine = _Waiting(raws, keys or {})
        with self._cond:
            if self._leading:
                self._waiting.append(mine)
            else:
                self._leading = True
                mine.group = [mine]
            self._cond.notify_all()
        if mine.group is None:
            mine.woken.wait()
        if not mine.done:  # leading: commit the group, then hand the lead to the next waiting caller
            group = mine.group or [mine]
            try:
                self._run(group)
            finally:
                with self._cond:
                    interrupted = RuntimeError("the group commit was interrupted")
                    for waiting in group:  # interrupted before it could settle them: not committed
                        if not waiting.done:
                            waiting.done, waiting.error = True, interrupted
                            waiting.woken.set()
                    if self._waiting:
                        nxt, self._waiting = self._waiting, []
                        nxt[0].group = nxt
                        nxt[0].woken.set()
                    else:
                        self._leading = False
        if mine.error is not None:
            raise mine.error

    def _run(self, group: list[_Waiting]) -> None:
        """Commit the group in one transaction; if that fails, each caller's rows on their own."""
        try:
            self._commit(
                [raw for waiting in group for raw in waiting.raws],
                {raw_id: key for waiting in group for raw_id, key in waiting.keys.items()},
            )
            self._settle(group, None, 1)
        except BaseException as exc:
            if len(group) == 1:
                self._settle(group, exc, 1)
                return
            for waiting in group:
                try:
                    self._commit(waiting.raws, waiting.keys)
                    self._settle([waiting], None, 1)
                except BaseException as alone:
                    self._settle([waiting], alone, 1)

    def _settle(self, group: list[_Waiting], error: BaseException | None, commits: int) -> None:
        with self._cond:
            for waiting in group:
                waiting.done, waiting.error = True, error
                waiting.woken.set()
            if error is None:
                self.commits += commits
                self.rows += sum(len(w.raws) for w in group)


#: A caller's look-up of those of its raw logs recorded before (their ids), run in the transaction
#: that would record them (``InputQueue.enqueue``); it keeps what it found for its caller.
RecordedBefore = Callable[[LedgerTx, list[RawLog]], Collection[str]]


@dataclass(frozen=True)
class Batch:
    """What one claim took: the inputs now held, in arrival order; those it gave up on the way
    (marked failed, ``given_up_error`` saying why); the arrival number to go on from."""

    raws: list[RawLog]
    given_up: list[str]
    given_up_error: str
    last_seq: int


def _raw_logs(tx: LedgerTx, raw_log_ids: Sequence[str]) -> list[RawLog]:
    """The raw logs of these ids, in order, read a few hundred a statement."""
    return [raw for ids in queue_queries.chunks(raw_log_ids) for raw in tx.get_raw_logs(ids)]


@dataclass(frozen=True)
class Lease:
    """A hold its caller takes on the inputs it records: they are ``owner``'s from their commit on,
    for a lease measured from the commit by the queue's clock (``InputQueue.now``)."""

    owner: str


def this_machine_clock() -> datetime:
    """This machine's clock: the queue's default, read for leases on SQLite only (one machine)."""
    return utcnow()


def owner_id(label: str = "worker") -> str:
    """A claim owner unique to this call: who (host, process) and a random part."""
    return f"{label}:{socket.gethostname()[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class InputQueue:
    """Claims, leases and statuses of inputs; wakes this process's workers when an input arrives."""

    def __init__(
        self,
        ledger: Ledger,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        max_claims: int = DEFAULT_MAX_CLAIMS,
        clock: Callable[[], datetime] = this_machine_clock,
    ) -> None:
        self.ledger = ledger
        self.lease_seconds = lease_seconds
        self.max_claims = max_claims
        #: This machine's clock; another one set here (a test moving time on) is read on both backends.
        self.clock = clock
        self._arrived = threading.Condition()
        self._arrivals = 0
        self._group = GroupCommit(self._commit)
        #: The look-up each caller of ``enqueue`` runs in the commit of its raw logs, by raw log id:
        #: a group commits several callers' raw logs in one transaction (``_commit``).
        self._look_ups: dict[str, RecordedBefore] = {}
        self._look_ups_guard = threading.Lock()

    def lease(self, owner: str | None = None) -> Lease:
        return Lease(owner or owner_id("add"))

    def now(self, tx: LedgerTx) -> datetime:
        """Now, as leases are measured in ``tx``: on PostgreSQL by the database server's clock, the
        one every process sharing the ledger reads, whatever its machine's clock says; on SQLite
        by this machine's. A clock set on the queue instead of this machine's is read on both."""
        if self.clock is this_machine_clock and tx.dialect == "postgresql":
            return queue_queries.database_now(tx)
        return self.clock()

    def _lease_end(self, tx: LedgerTx) -> datetime:
        return self.now(tx) + timedelta(seconds=self.lease_seconds)

    # -- arrivals and claims --------------------------------------------------------------------

    def enqueue(
        self,
        raws: Sequence[RawLog],
        lease: Lease | None = None,
        *,
        keys: dict[str, str] | None = None,
        recorded_before: RecordedBefore | None = None,
    ) -> None:
        """Commit raw logs (validated by the pipeline's ``raw_log_from``): from here on they are
        never lost; it returns only once they are committed. Without a lease they wait for a worker
        (this process's are woken); with one, the caller holds them and analyses them itself.
        ``keys`` (raw log id -> its sender's idempotency key) are recorded with them; a key its
        author recorded meanwhile raises InputKeyTakenError, and none of ``raws`` is kept.

        ``recorded_before``: the caller's look-up of those of ``raws`` recorded before (a retry of
        an input named by its key or its time), run in the transaction that records them, after
        every raw log committed before it and before any committed after it (``_commit``); those it
        finds are not recorded. It keeps what it found: the run of the transaction that committed
        is the last one (a group that failed is committed again caller by caller). Looked up before
        the transaction, a retry sent while the first request was still committing found nothing
        and was kept twice.

        Concurrent callers without a lease (the HTTP API's requests, in threads) share transactions:
        one of them commits what all the others brought meanwhile (group commit), so they take the
        chain head (and, on SQLite, the writer lock) once together instead of queueing for it one
        by one, each behind the others' commits."""
        if not raws:
            return
        if recorded_before is not None:
            with self._look_ups_guard:
                self._look_ups.update({raw.id: recorded_before for raw in raws})
        try:
            if lease is not None:
                self._commit(raws, keys or {}, lease)
            else:
                self._group.commit(list(raws), keys)
                self.notify()
        finally:
            if recorded_before is not None:
                with self._look_ups_guard:
                    for raw in raws:
                        self._look_ups.pop(raw.id, None)

    def _commit(self, raws: Sequence[RawLog], keys: dict[str, str], lease: Lease | None = None) -> None:
        """Commit ``raws`` (one caller's, or a group's: callers in arrival order), each caller's
        look-up (``enqueue``) run in this transaction just before its raw logs are written.

        The look-ups need no lock of their own: every raw log is appended in such a transaction,
        which takes the chain head first (PostgreSQL: SELECT ... FOR UPDATE, the writers' lock
        aside; SQLite: BEGIN IMMEDIATE), so appends run one after the other, and each statement
        here, under PostgreSQL's READ COMMITTED, sees every raw log and key committed before (and
        this transaction's own: a caller grouped after another with the same input finds it)."""
        # Raw logs only: on PostgreSQL the chain head alone, not the writers' lock, so an
        # acknowledgement waits for a note transaction's last statements, not for all of it.
        with self.ledger.write(writer_lock=False) as tx:
            until = self._lease_end(tx) if lease else None
            for recorded_before, theirs in self._by_caller(raws):
                if recorded_before is not None:
                    found = recorded_before(tx, theirs)
                    theirs = [raw for raw in theirs if raw.id not in found]
                if not theirs:
                    continue
                tx.insert_raw_logs(
                    theirs,
                    max(r.received_at for r in theirs),
                    lease_owner=lease.owner if lease else None,
                    lease_until=until,
                )
                queue_queries.insert_input_keys(tx, theirs, keys)

    def _by_caller(self, raws: Sequence[RawLog]) -> list[tuple[RecordedBefore | None, list[RawLog]]]:
        """``raws`` in runs of one caller's look-up (a caller without one: None), in order."""
        with self._look_ups_guard:
            look_ups = [self._look_ups.get(raw.id) for raw in raws]
        runs: list[tuple[RecordedBefore | None, list[RawLog]]] = []
        for look_up, raw in zip(look_ups, raws, strict=True):
            if runs and runs[-1][0] is look_up:
                runs[-1][1].append(raw)
            else:
                runs.append((look_up, [raw]))
        return runs

    def claim(self, owner: str, limit: int, *, include_failed: bool = False) -> list[RawLog]:
        """Up to ``limit`` inputs nobody holds, oldest first, now held by ``owner``. With
        ``include_failed`` (reprocess) failed inputs are taken as well as queued ones."""
        return self.claim_batch(owner, limit, include_failed=include_failed).raws

    def claim_after(
        self, owner: str, limit: int, *, after_seq: int = 0, include_failed: bool = False
    ) -> tuple[list[RawLog], int]:
        """``claim`` among inputs that arrived after ``after_seq``; also returns the arrival number
        to go on from (a walk over the queue that never takes an input twice: reprocess)."""
        batch = self.claim_batch(owner, limit, after_seq=after_seq, include_failed=include_failed)
        return batch.raws, batch.last_seq

    def claim_batch(
        self, owner: str, limit: int, *, after_seq: int = 0, include_failed: bool = False
    ) -> Batch:
        """``claim``, saying also which inputs it gave up on the way (taken ``max_claims`` times by
        workers that all died: marked failed, not counted in ``limit``), so a worker reports them."""
        states = [RawLogState.PENDING, RawLogState.FAILED] if include_failed else [RawLogState.PENDING]
        with self.ledger.write(lock_head=False) as tx:
            now = self.now(tx)
            claimed = queue_queries.claim(
                tx,
                owner=owner,
                until=now + timedelta(seconds=self.lease_seconds),
                now=now,
                limit=limit,
                states=states,
                max_claims=None if include_failed else self.max_claims,
                after_seq=after_seq,
            )
            return Batch(
                raws=_raw_logs(tx, claimed.raw_log_ids),
                given_up=claimed.given_up,
                given_up_error=queue_queries.given_up_error(self.max_claims),
                last_seq=claimed.last_seq,
            )

    def claim_these(self, owner: str, raw_log_ids: list[str]) -> list[RawLog]:
        """Those of these inputs still queued, nobody holding them, now held by ``owner``, in the
        order given (``queue_queries.claim_these``)."""
        with self.ledger.write(lock_head=False) as tx:
            now = self.now(tx)
            taken = set(
                queue_queries.claim_these(
                    tx,
                    owner=owner,
                    until=now + timedelta(seconds=self.lease_seconds),
                    now=now,
                    raw_log_ids=raw_log_ids,
                )
            )
            return _raw_logs(tx, [i for i in raw_log_ids if i in taken])

    def holds(self, tx: LedgerTx, raw_log_id: str, owner: str) -> bool:
        return queue_queries.holds(tx, raw_log_id, owner)

    def held(self, tx: LedgerTx, raw_log_ids: Sequence[str], owner: str) -> set[str]:
        return queue_queries.held(tx, raw_log_ids, owner)

    def renew(self, owner: str, raw_log_ids: Sequence[str]) -> int:
        """Push ``owner``'s leases on these inputs a lease further: a short write for each few
        hundred, so a large import's heartbeat never holds the writer lock for long."""
        renewed = 0
        for ids in queue_queries.chunks(raw_log_ids):
            with self.ledger.write(lock_head=False) as tx:
                renewed += queue_queries.renew(tx, owner=owner, raw_log_ids=ids, until=self._lease_end(tx))
        return renewed

    @contextmanager
    def kept_alive(self, owner: str, raw_log_ids: Sequence[str]) -> Iterator[None]:
        """Renew ``owner``'s leases on ``raw_log_ids`` every third of the lease while the body runs:
        an analysis slower than the lease (a slow model, a large batch) keeps its inputs, whoever
        holds them (a worker, a synchronous add_note or import), so no worker takes one meanwhile
        and the caller's own analysis is not refused as "another worker took it"."""
        done = threading.Event()
        interval = max(self.lease_seconds / 3, 0.05)
        ids = list(raw_log_ids)

        def beat() -> None:
            while not done.wait(interval):
                try:
                    self.renew(owner, ids)
                except Exception:  # the next beat tries again; a lost lease is caught at apply time
                    log.exception("%s: could not renew its leases", owner)

        thread = threading.Thread(target=beat, name=f"{owner}-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def renew_in(self, tx: LedgerTx, owner: str, raw_log_ids: Sequence[str]) -> int:
        """``renew`` inside a write the caller makes anyway (add_notes' batch)."""
        return queue_queries.renew(tx, owner=owner, raw_log_ids=raw_log_ids, until=self._lease_end(tx))

    def release(self, owner: str, raw_log_ids: Sequence[str]) -> int:
        """Give back inputs ``owner`` holds and will not finish (``queue_queries.release``)."""
        with self.ledger.write(lock_head=False) as tx:
            return queue_queries.release(tx, owner=owner, raw_log_ids=raw_log_ids)

    def fail(self, owner: str | None, raw_log_ids: Sequence[str], error: str) -> int:
        """Mark failed, with ``error``, the inputs ``owner`` holds whose analysis stopped on an
        error other than the model's (``queue_queries.fail``); a short write of its own."""
        with self.ledger.write(lock_head=False) as tx:
            return queue_queries.fail(tx, owner=owner, raw_log_ids=raw_log_ids, error=error, now=self.now(tx))

    # -- what callers see -----------------------------------------------------------------------

    def status(self, raw_log_id: str) -> InputStatus:
        with self.ledger.read() as tx:
            state = queue_queries.state_of(tx, raw_log_id)
            raws = tx.get_raw_logs([raw_log_id]) if state is not None else []
            now = self.now(tx)  # the clock claims read: every process says the same
        if state is None or not raws:
            raise NotFoundError(f"input {raw_log_id} does not exist (no raw log has that id)")
        lease_until = state["lease_until"]
        held = isinstance(lease_until, datetime) and lease_until > now
        if state["state"] == RawLogState.PROCESSED.value:
            status = "done"
        elif state["state"] == RawLogState.ERASED.value:
            status = "erased"
        elif held:  # queued, or failed and analysed again by `reprocess`
            status = "processing"
        elif state["state"] == RawLogState.FAILED.value:
            status = "failed"
        else:
            status = "queued"
        return InputStatus(
            raw_log_id=raw_log_id,
            status=status,
            note_id=state["note_id"],
            error=state["error"] if status == "failed" else None,
            scope=raws[0].scope,
            received_at=raws[0].received_at,
            updated_at=state["updated_at"],
            attempts=int(state["attempts"] or 0),
            claims=int(state["claims"] or 0),
            lease_until=lease_until if status == "processing" else None,
        )

    def depth(self) -> dict[str, int]:
        """Inputs queued, processing (under a lease) and failed, now (by the clock claims read)."""
        with self.ledger.read() as tx:
            return queue_queries.depth(tx, self.now(tx))

    # -- waking this process's workers ----------------------------------------------------------

    def notify(self) -> None:
        """An input was queued in this process: wake a worker now rather than at its next poll."""
        with self._arrived:
            self._arrivals += 1
            self._arrived.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        """Block until an input arrives after ``seen`` arrivals, or ``timeout``; the arrivals now."""
        with self._arrived:
            self._arrived.wait_for(lambda: self._arrivals != seen, timeout=timeout)
            return self._arrivals

    @property
    def arrivals(self) -> int:
        return self._arrivals
