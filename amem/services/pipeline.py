"""The write pipeline of add_note: raw log -> note construction -> link generation -> evolution.

The raw log is committed first and never touched again. The analyst's answers become drafts
(pure data), and governance routes and applies them in one transaction, so an analysis that
fails half-way leaves nothing half-applied: the raw log stays, marked failed, for `reprocess`.

Whoever analyses a raw log holds it under a lease of the input queue (amem/services/queue.py): a
synchronous add_note from the moment its raw log is committed, a worker or `reprocess` from its
claim. The transaction that applies an analysis first checks that the claim still stands, so an
input whose lease ended and was taken by another worker is never applied twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

import numpy as np
from pydantic import ValidationError

from amem.config import Settings
from amem.domain.hashing import sha256_text
from amem.domain.models import (
    Actor,
    AddOutcome,
    LlmCall,
    Note,
    NoteInput,
    ProposalStatus,
    Proposer,
    RawLog,
    RawLogState,
    as_utc,
    canonical_scope,
    new_id,
    time_given_as_number,
    utcnow,
)
from amem.domain.progress import Progress, no_progress
from amem.domain.text import check_json, check_name, check_text, is_visible, numbers_as_stored
from amem.domain.values import offset_given, parse_datetime
from amem.errors import (
    AmemError,
    AnalysisPendingError,
    AnalysisStoppedError,
    InvalidBatchInputError,
    InvalidInputError,
)
from amem.index.base import NeighbourFinder
from amem.index.documents import document_text
from amem.ledger import index_queries, queue_queries, search_queries
from amem.ledger.store import Ledger, LedgerTx
from amem.llm import link_evolve
from amem.llm.base import Analyst, AnalystError, TaskResult
from amem.llm.construct_note import ConstructedNote
from amem.llm.link_evolve import LinkEvolveAnswer
from amem.policy import Policy
from amem.services.drafting import Answers, Snapshot, as_applied, draft, draft_note, preview
from amem.services.governance import Draft, Governance
from amem.services.queue import InputQueue, Lease, owner_id

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The step add_notes and reprocess report progress on.
ANALYSING = "analysing raw logs"
#: Raw logs analysed, embedded and written together by add_notes and reprocess.
BATCH = 64


class IndexCatchUp(Protocol):
    """What the write path asks of the index (SearchService): vectors for the documents a batch
    changes, embedded before its write and kept in it; then one catch-up after the commit."""

    def embed_ahead(self, notes: Sequence[Note]) -> None: ...

    def keep_vectors(self, tx: LedgerTx, note_ids: Sequence[str]) -> None: ...

    def catch_up_after_write(self) -> int: ...


class IndexParts(NeighbourFinder, IndexCatchUp, Protocol):
    """The search service as the write path uses it: the neighbours, and the index's catch-up."""


@dataclass(frozen=True)
class Analysis:
    """Everything the analyst said about one raw log, before anything is written."""

    note_id: str
    construct: TaskResult[ConstructedNote]
    link: TaskResult[LinkEvolveAnswer]
    neighbours: list[Note]


@dataclass
class _Prepared:
    """A batch after the construct step: what failed, each draft note, and the future of the new
    notes' vectors (embedded while the previous batch is written)."""

    raws: list[RawLog]
    failed: dict[str, tuple[AnalystError, list[Any]]]
    drafts: dict[str, tuple[TaskResult[ConstructedNote], Note]]
    ready: list[RawLog]
    asks: list[tuple[Note, str]]
    vectors: Future[Any]


@dataclass
class _Call:
    """What one ``process_many`` call's inputs taken alone share: the call's inputs, the claim they
    are held under, how they are written, what became of each so far, the construct answers asked,
    and the breaker that tells an outage."""

    raws: Sequence[RawLog]
    owner: str | None
    commit_each: bool
    settled: dict[str, AddOutcome]
    asked: dict[str, TaskResult[ConstructedNote] | AnalystError]
    breaker: _Breaker
    #: The call's inputs shortest first (the first of equals first), and how far ``probe`` went in it.
    _by_length: list[RawLog] = field(init=False)
    _next: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._by_length = sorted(self.raws, key=lambda raw: len(raw.text))  # stable: input order kept

    def probe(self) -> RawLog | None:
        """The shortest input of the call not written nor failed yet (the first of equals): the
        one least like texts a step refuses for their length, taken to tell an outage. Settled
        inputs stay settled, so the walk only goes forward: a call of any size pays for it once."""
        while self._next < len(self._by_length) and self._by_length[self._next].id in self.settled:
            self._next += 1
        return self._by_length[self._next] if self._next < len(self._by_length) else None


class _Reported:
    """The caller's ``progress``, remembering an exception it raised: the caller's own error (a
    progress bar that broke), no input's, so ``process_many`` gives the inputs back to the queue and
    raises it. Before, it was recorded as every input's analysis failure ("analysis stopped:
    ValueError: my progress bar broke")."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.raised: BaseException | None = None

    def __call__(self, task: str, done: int, total: int | None) -> None:
        try:
            self.progress(task, done, total)
        except BaseException as exc:
            self.raised = exc
            raise


class _Breaker:
    """Tells an outage from inputs that break a step. A step other than the model call that fails
    the same way (the same type of error, the same message) ``TRIPS`` attempts in a row (a batch,
    then its inputs taken alone; or batches of one input) may be down (an embedder or an index out
    of service) rather than refusing those inputs: it is taken for an outage only when the last of
    them was a probe (``failed(probe=True)``): the shortest input of the call not tried yet, the one
    least like the texts failing (a text too long for the embedding model, several at the head of an
    import: two of them failing alone after their batch stopped every input of the call, and every
    ``reprocess``, which met them first again). ``wants_probe`` says the next attempt must be one.
    One that goes through (``passed``) starts the count again, and so does a batch taken input by
    input (``batch_failed``): a poison input last of one batch and another first of the next are
    not an outage."""

    TRIPS = 3

    def __init__(self) -> None:
        self._cause: tuple[type[BaseException], str] | None = None
        self._times = 0

    def failed(self, exc: BaseException, *, probe: bool) -> bool:
        """One more attempt failed with ``exc``: True when it is an outage's (it was a probe)."""
        cause = (type(exc), _cause(exc))
        self._times = self._times + 1 if cause == self._cause else 1
        self._cause = cause
        if self._times >= self.TRIPS and not probe:
            self._times = self.TRIPS - 1  # not told yet: the next attempt is a probe
        return self._times >= self.TRIPS

    def batch_failed(self, exc: BaseException) -> None:
        """A batch of several inputs failed with ``exc``: the count starts from it."""
        self.passed()
        self.failed(exc, probe=False)

    def passed(self) -> None:
        self._cause, self._times = None, 0

    @property
    def wants_probe(self) -> bool:
        """The next attempt failing the same way would make an outage: it must be a probe."""
        return self._times >= self.TRIPS - 1


class _OutageSuspected(Exception):
    """Raised by ``_analyse`` when ``_Breaker`` takes a failure for an outage: ``failure`` is the
    step's error, ``tried`` the input whose attempt alone (the probe) made it one; every other input
    of the call not written yet was not tried, and its outcome says so (``_stopped``)."""

    def __init__(self, failure: Exception, tried: str) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.tried = tried


class WritePipeline:
    def __init__(
        self,
        *,
        settings: Settings,
        ledger: Ledger,
        governance: Governance,
        analyst: Analyst,
        index: Callable[[], IndexParts],
        queue: InputQueue | None = None,
    ) -> None:
        """``index``: opens the search service (or returns the one open), asked on each use.
        It is first asked once the inputs' raw logs are committed, while their leases are renewed
        (``process_many``): an index that cannot be opened (a damaged file, a read-only directory,
        another embedding model) then fails the inputs, their raw logs kept and named, as any step
        after the commit does; opened before, it refused them with nothing recorded."""
        self.settings = settings
        self.ledger = ledger
        self.governance = governance
        self.analyst = analyst
        # How many neighbours the analyst reads (optional: the offline analyst reads a wider pool than
        # it links to, for the note holding a fact's current value; others read link_k).
        self.analyst_pool = int(getattr(analyst, "neighbour_pool", 0) or 0)
        self._open_index = index
        self.queue = queue or InputQueue(ledger, lease_seconds=settings.worker_lease_seconds)

    @property
    def index(self) -> IndexParts:
        """The search service: the index's catch-up, and the neighbours (``neighbours``)."""
        return self._open_index()

    @property
    def neighbours(self) -> NeighbourFinder:
        return self._open_index()

    @property
    def policy(self) -> Policy:
        """The policy governance routes under: the installed version it last followed, never a copy
        taken at start-up, so the attributes asked for, the drafting and the routing agree (a
        process that stays up drafts under a version installed by another process meanwhile)."""
        return self.governance.policy

    # -- entry points ----------------------------------------------------------------------------

    def add_note(
        self,
        content: str,
        *,
        at: datetime | str | None,
        actor: Actor,
        scope: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        lease = self.queue.lease()
        raw = self.record(content, at=at, actor=actor, scope=scope, metadata=metadata, lease=lease)
        return self.process(raw, owner=lease.owner)

    def add_notes(
        self,
        items: Sequence[NoteInput],
        *,
        actor: Actor,
        batch_size: int = BATCH,
        progress: Progress = no_progress,
        skip_recorded: bool = False,
        wait: bool = True,
    ) -> list[AddOutcome]:
        """add_note for many inputs: every input is checked first (a bad one names its position and
        nothing is recorded), all raw logs are committed in one transaction, then each batch is
        analysed, embedded, written in one transaction and indexed at once. With ``skip_recorded``
        an input that gives its time (``at``) and was recorded before (same scope, time, author and
        text) is not recorded again: its outcome names the raw log that holds it. ``wait=False``
        returns once the raw logs are committed, queued for the workers (as add_note's).

        Within a batch, a note's neighbours are the notes stored before the batch and the batch's
        earlier notes of its scope (those by vector similarity only). When the link calls run one
        at a time (the offline analyst), each note sees them as the earlier link steps left them
        (``_link_in_order``); concurrent model calls see them as drafted, before the batch's
        evolution.

        With ``skip_recorded`` (an import run again after an interruption), an input recorded
        before and still queued, that nobody holds, is analysed now: its outcome is this call's
        analysis of the raw log kept before. One recorded before and failed is left to ``reprocess``
        and comes back with its error."""
        if batch_size < 1:
            raise InvalidInputError(f"batch_size must be at least 1, got {batch_size}")
        kept = keep_inputs(
            self.settings, self.queue, items, actor=actor, skip_recorded=skip_recorded, hold=wait
        )
        if not wait:
            return outcomes_in_order(kept, {})
        owner = kept.lease.owner if kept.lease is not None else owner_id("add")
        resumed = self._resume(kept, owner) if skip_recorded else {}
        # in input order: the new raw logs, and those kept before taken up now
        todo: dict[str, RawLog] = {}
        for raw in kept.raws:
            old = kept.before.get(raw.id)
            if old is None:
                todo[raw.id] = raw
            elif old.raw_log_id in resumed:
                todo.setdefault(old.raw_log_id, resumed[old.raw_log_id])
        analysed: dict[str, AddOutcome] = {}
        if todo:
            work = list(todo.values())
            done = self.process_many(work, batch_size=batch_size, owner=owner, progress=progress)
            analysed = {raw.id: outcome for raw, outcome in zip(work, done, strict=True)}
        return outcomes_in_order(kept, analysed)

    def _resume(self, kept: Kept, owner: str) -> dict[str, RawLog]:
        """The raw logs kept before (by id) that are still queued and that nobody holds, now held
        by ``owner``: an interrupted import left them (its claims given back, ``_stopped``). One
        extra write, only when such inputs were met."""
        new = {raw.id for raw in kept.new}  # an earlier input of this call: held already
        queued = list(
            dict.fromkeys(
                old.raw_log_id
                for old in kept.before.values()
                if old.state == RawLogState.PENDING.value and old.raw_log_id not in new
            )
        )
        return {raw.id: raw for raw in self.queue.claim_these(owner, queued)} if queued else {}

    def record(
        self,
        content: str,
        *,
        at: datetime | str | None,
        actor: Actor,
        scope: str,
        metadata: Mapping[str, Any] | None = None,
        lease: Lease | None = None,
    ) -> RawLog:
        """Validate the input and commit it as a raw log. From here on it is never lost. Without a
        lease it is queued for a worker; with one, the caller holds it and analyses it itself."""
        raw = raw_log_from(self.settings, content, at=at, actor=actor, scope=scope, metadata=metadata)
        self.queue.enqueue([raw], lease)
        return raw

    def process(self, raw: RawLog, *, owner: str | None = None) -> str:
        """Analyse a committed raw log and apply the result. Returns the note id."""
        (outcome,) = self.process_many([raw], owner=owner)
        if outcome.note_id is None:
            raise AnalysisPendingError(str(outcome.error), raw.id)
        return outcome.note_id

    def process_many(
        self,
        raws: Sequence[RawLog],
        *,
        batch_size: int = BATCH,
        owner: str | None = None,
        commit_each: bool = False,
        progress: Progress = no_progress,
    ) -> list[AddOutcome]:
        """Analyse committed raw logs, ``batch_size`` at a time, in order; ``progress`` after each
        batch. With ``owner`` (the claim they are held under), an analysis is applied only while that
        claim stands. With ``commit_each`` each note is written in its own transaction (workers),
        else a batch in one.

        Should any other step fail for a batch (the embedder, the index, the ledger, a bug), that
        batch's inputs not written yet are analysed again one at a time (``_one_by_one``), and one
        that fails alone is marked failed with its cause and comes back with it; the next batch is
        analysed whole again. When the step fails as an outage does (``_Breaker``: the batch and
        then inputs taken alone failing the same way, the last the shortest input left, or a failure
        after the batch's write, which no input is to blame for), the inputs not written yet are
        marked failed with the cause and come back with it, beside the outcomes of the others
        (``_stopped``: those never tried say so). On an interruption (KeyboardInterrupt), or an
        exception raised by ``progress`` (the caller's own: nothing is wrong with the inputs), they
        are given back to the queue and it is raised again."""
        settled: dict[str, AddOutcome] = {}  # by raw log id, as each transaction commits
        # each input's construct answer, once asked: taken up again when the batch is retried input
        # by input, so no model call is made twice for it
        asked: dict[str, TaskResult[ConstructedNote] | AnalystError] = {}
        reported = _Reported(progress)
        try:
            reported(ANALYSING, 0, len(raws))
            # The leases are renewed while the inputs are analysed (a slow model, a large batch):
            # no worker takes one meanwhile, whoever holds them (a worker, add_note, an import).
            # The index is opened here, in this thread, after the raw logs were committed: one that
            # cannot be opened fails these inputs with the cause (``_stopped``), their raw logs kept.
            # It is opened while the leases are renewed: an open that loads the model, catches up
            # or rebuilds can outlast a lease, and a worker would take the inputs meanwhile.
            with self._kept_alive(owner, raws):
                self.index  # noqa: B018
                self._analyse(raws, batch_size, owner, commit_each, reported, settled, asked)
        except BaseException as exc:
            return self._stopped(raws, settled, owner, exc, given_back=exc is reported.raised)
        return [settled[raw.id] for raw in raws]

    def _kept_alive(self, owner: str | None, raws: Sequence[RawLog]) -> AbstractContextManager[object]:
        """``owner``'s leases on ``raws`` renewed while the body runs (nothing without an owner)."""
        return self.queue.kept_alive(owner, [r.id for r in raws]) if owner is not None else nullcontext()

    def _analyse(
        self,
        raws: Sequence[RawLog],
        batch_size: int,
        owner: str | None,
        commit_each: bool,
        progress: Progress,
        settled: dict[str, AddOutcome],
        asked: dict[str, TaskResult[ConstructedNote] | AnalystError],
    ) -> None:
        """``process_many``'s work, each outcome put in ``settled`` as its transaction commits. A
        batch a step stops is taken again input by input (``_one_by_one``), then the next batch is
        taken whole; raises the step's failure when it is an outage's (``_Breaker``: as
        ``_OutageSuspected``), or came after a batch's write. An input taken ahead of its batch as
        a probe is left out of its batch."""
        starts = list(range(0, len(raws), batch_size))
        breaker = _Breaker()
        # The next batch is constructed, and its documents embedded in a thread (the embedding
        # model runs outside the GIL), while this one is linked, written and indexed: neither
        # needs the ledger. With one batch there is nothing to overlap, and no thread.
        with (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="amem-embed")
            if len(starts) > 1
            else nullcontext() as ahead
        ):

            def prepare(start: int) -> _Prepared | Exception:
                """The batch from ``start`` prepared, or what stopped it: its own batch's failure,
                met when that batch's turn comes."""
                try:
                    return self._prepare(raws[start : start + batch_size], ahead, asked)
                except Exception as exc:
                    return exc

            call = _Call(raws, owner, commit_each, settled, asked, breaker)
            prepared = prepare(0)
            for n, start in enumerate(starts):
                following = starts[n + 1] if n + 1 < len(starts) else None
                upcoming = prepare(following) if following is not None else None
                batch = [raw for raw in raws[start : start + batch_size] if raw.id not in settled]
                probe = call.probe() if batch and len(batch) == 1 and breaker.wants_probe else None
                if probe is not None and probe is not batch[0]:
                    # batches of one input failing the same way: the shortest input left tells an
                    # outage from inputs that break a step, whichever batch it is in
                    self._alone(call, probe, probe=True)
                    batch = [raw for raw in batch if raw.id not in settled]
                # The next batch, written next, is renewed in this batch's write; the rest of a
                # long import by the heartbeat, a few hundred a write: renewing every input left
                # in each write bound them all in one statement (over SQLite's and PostgreSQL's
                # limits past 32,766 and 65,535) and grew with the import at every batch.
                upcoming_ids = (
                    [r.id for r in raws[start + batch_size : start + 2 * batch_size] if r.id not in settled]
                    if owner is not None
                    else []
                )
                if batch:
                    try:
                        if isinstance(prepared, Exception):
                            raise prepared
                        ours = _without(prepared, settled)  # a probe taken ahead of its batch
                        if ours is not None:
                            self._process_batch(ours, owner, commit_each, upcoming_ids, settled)
                    except Exception as exc:
                        self._one_by_one(
                            batch, exc, call, lambda: progress(ANALYSING, len(settled), len(raws))
                        )
                    else:
                        breaker.passed()
                progress(ANALYSING, len(settled), len(raws))
                if upcoming is not None:
                    prepared = upcoming

    def _one_by_one(
        self, batch: Sequence[RawLog], exc: Exception, call: _Call, tick: Callable[[], None]
    ) -> None:
        """After a step other than the model call failed for ``batch`` with ``exc``: each of its
        inputs not written yet is analysed again on its own (its construct answer kept), so only
        one that fails alone is marked failed, with its own cause. Marking them all failed with the
        one cause failed an input that breaks a step (a text the embedding model refuses, one that
        trips a bug) together with every batch-mate, and again at every ``reprocess``, which claims
        them in the same order; a batch-mate the model had failed got that cause too.

        Raises the failure, for ``process_many`` to mark every input of the call not written yet
        failed with it, when it is no input's: it came after the batch's write (the index's
        catch-up refusing), or the breaker takes it for an outage (an embedder down failed each
        input alone as it failed the batch: retried one by one, an import of 1,000 inputs made a
        construct call, an embedder call and a write for each, every one failed all the same).
        Once an input alone failed as the batch did, the next one taken is the shortest input of
        the call left (a probe, ``_Call.probe``): it going through is no outage, and the inputs
        that failed fail alone (two texts too long for the embedding model at the head of an import
        failed all ten inputs of the call, and every ``reprocess`` after it)."""
        settled, breaker = call.settled, call.breaker
        left = [raw for raw in batch if raw.id not in settled]
        if not left:
            raise exc
        if len(left) == 1:  # the one left is the culprit, unless an outage (told at the next)
            raw = left[0]
            if breaker.failed(exc, probe=call.probe() is raw):
                raise _OutageSuspected(exc, raw.id) from exc
            (settled[raw.id],) = self._stopped(left, settled, call.owner, exc)
            return
        breaker.batch_failed(exc)
        log.info(
            "analysis of raw logs %s stopped (%s): analysing them one at a time",
            _listed([raw.id for raw in left]),
            _cause(exc),
        )
        pending = list(left)
        while pending:
            probing = breaker.wants_probe
            raw = call.probe() if probing else None
            raw = raw or pending[0]
            self._alone(call, raw, probe=probing)
            pending = [r for r in pending if r.id not in settled]
            tick()

    def _alone(self, call: _Call, raw: RawLog, *, probe: bool) -> None:
        """``raw`` analysed and written on its own (its construct answer kept). Failing, it is marked
        failed with its own cause, unless it failed after its write (raised) or the breaker takes
        its failure for an outage's (``probe``: it is the shortest input left; raised as
        ``_OutageSuspected``)."""
        try:
            self._process_batch(
                self._prepare([raw], None, call.asked), call.owner, call.commit_each, (), call.settled
            )
        except Exception as exc:
            if raw.id in call.settled:
                raise
            if call.breaker.failed(exc, probe=probe):
                raise _OutageSuspected(exc, raw.id) from exc
            (call.settled[raw.id],) = self._stopped([raw], call.settled, call.owner, exc)
        else:
            call.breaker.passed()

    def reprocess(self, *, limit: int | None = None, progress: Progress = no_progress) -> list[str]:
        """Analyse raw logs left failed or queued (an outage, a crash) that nobody holds: an input a
        worker or another add_note is analysing right now is left to it. Returns the new note ids."""
        owner = owner_id("reprocess")
        with self.ledger.read() as tx:
            waiting = len(tx.raw_log_states([RawLogState.FAILED, RawLogState.PENDING], limit=limit))
        progress(ANALYSING, 0, waiting)
        done: list[str] = []
        seen = 0
        left = limit
        after = 0  # one walk in arrival order: an input failing again is not retried in this call
        while left is None or left > 0:
            take = BATCH if left is None else min(BATCH, left)
            raws, after = self.queue.claim_after(owner, take, after_seq=after, include_failed=True)
            if not raws:
                break
            for outcome in self.process_many(raws, owner=owner):
                if outcome.note_id is None:
                    log.warning("%s", outcome.error)
                else:
                    done.append(outcome.note_id)
            seen += len(raws)
            progress(ANALYSING, seen, max(waiting, seen))
            if left is not None:
                left -= len(raws)
        return done

    def leases_end(self) -> datetime | None:
        """When the last lease held on an input not analysed yet ends (those ``reprocess`` leaves to
        whoever holds them), as the lease says it, by the queue's clock (PostgreSQL: the server's);
        None when none is held. `amem reprocess` said "free by" this machine's clock plus a lease,
        half an hour off on a machine whose clock was."""
        with self.ledger.read() as tx:
            now = self.queue.now(tx)
            ends = [
                as_utc(row["lease_until"])
                for row in tx.raw_log_states([RawLogState.FAILED, RawLogState.PENDING])
                if isinstance(row["lease_until"], datetime) and as_utc(row["lease_until"]) > now
            ]
        return max(ends, default=None)

    # -- the steps -------------------------------------------------------------------------------

    def _raw_log(
        self,
        content: str,
        *,
        at: datetime | str | None,
        actor: Actor,
        scope: str,
        metadata: Mapping[str, Any] | None,
    ) -> RawLog:
        return raw_log_from(self.settings, content, at=at, actor=actor, scope=scope, metadata=metadata)

    def _prepare(
        self,
        raws: Sequence[RawLog],
        ahead: ThreadPoolExecutor | None,
        asked: dict[str, TaskResult[ConstructedNote] | AnalystError],
    ) -> _Prepared:
        """Construct each note (call 1; an input whose answer ``asked`` holds already is not
        asked again, and the answers are kept there) and start embedding the new notes' documents
        as they will be applied (one call; in ``ahead``'s thread when given). Reads and writes
        nothing."""
        failed: dict[str, tuple[AnalystError, list[Any]]] = {}
        # the newest installed policy, read now: the attributes the model is asked for are its own
        declared = self.governance.followed_policy().declared_attributes()

        def construct(raw: RawLog) -> TaskResult[ConstructedNote]:
            answer = asked.get(raw.id)
            if answer is None:
                try:
                    answer = self.analyst.construct(raw, declared)
                except AnalystError as exc:
                    answer = exc
                asked[raw.id] = answer
            if isinstance(answer, AnalystError):
                raise answer
            return answer

        constructed_all = self._calls(construct, raws)
        drafts: dict[str, tuple[TaskResult[ConstructedNote], Note]] = {}
        for raw, constructed in zip(raws, constructed_all, strict=True):
            if isinstance(constructed, AnalystError):
                failed[raw.id] = (constructed, constructed.calls)
                continue
            drafts[raw.id] = (constructed, draft_note(new_id("n"), raw, constructed.answer))
        ready = [raw for raw in raws if raw.id in drafts]
        asks = [(as_applied(drafts[r.id][1], self.policy), _neighbour_query(drafts[r.id][1])) for r in ready]
        documents = [document_text(note) for note, _ in asks]
        vectors: Future[Any] = Future()
        if not documents:
            vectors.set_result(None)
        elif ahead is not None:
            vectors = ahead.submit(self.neighbours.embed_documents, documents)
        else:
            vectors.set_result(self.neighbours.embed_documents(documents))
        return _Prepared(list(raws), failed, drafts, ready, asks, vectors)

    def _process_batch(
        self,
        prepared: _Prepared,
        owner: str | None = None,
        commit_each: bool = False,
        rest: Sequence[str] = (),
        settled: dict[str, AddOutcome] | None = None,
        *,
        relinks: int = 1,
    ) -> list[AddOutcome]:
        """Find all neighbours (the new notes embedded in one call by ``_prepare``), link and evolve
        each, draft (pure), embed the documents the drafts change (one call), then write the whole
        batch in one transaction (failed analyses included) and index it in one catch-up.

        Nothing is written between the raw logs' commit and this batch's transaction: a crash
        before it leaves every raw log of the batch pending, for ``reprocess``. Each input's outcome
        goes into ``settled`` once its transaction commits, so a failure later in the batch (a
        worker's next note, the catch-up) knows what was written.

        An input whose link step was shown a note erased since (``_shown_erased``) is not applied:
        its answer may carry the erased words. It is linked again (``relinks`` times; its
        construct answer, which saw its own raw log alone, kept), then given back to the queue."""
        settled = {} if settled is None else settled
        raws, failed = prepared.raws, prepared.failed
        ready = prepared.ready
        drafts, asks = _stamped(prepared.drafts, prepared.asks, ready)
        # An analyst may read more neighbours than it links to (the offline one checks a wider pool
        # for the note holding a fact's current value); one that says nothing reads link_k.
        pool = max(self.settings.link_k, self.analyst_pool)
        erasures = self._erasures()  # before the neighbours are read: the write looks for one since
        found = self.neighbours.nearest_many(asks, pool, vectors=prepared.vectors.result())
        shown = [
            [n for n in neighbours if n.scope == raw.scope and not n.deleted][:pool]
            for raw, neighbours in zip(ready, found, strict=True)
        ]
        said = self._said(shown, raws)
        if self._workers(len(ready)) <= 1:
            shown, linked_all = self._link_in_order(ready, drafts, asks, shown, said)
        else:
            linked_all = self._calls(
                lambda i: self.analyst.link_and_evolve(
                    drafts[ready[i].id][1], ready[i], shown[i], _said_of(shown[i], said)
                ),
                range(len(ready)),
            )
        shown_to = {raw.id: neighbours for raw, neighbours in zip(ready, shown, strict=True)}
        analyses: dict[str, Analysis] = {}
        for raw, neighbours, linked in zip(ready, shown, linked_all, strict=True):
            constructed, note = drafts[raw.id]
            if isinstance(linked, AnalystError):
                failed[raw.id] = (linked, [*_attempts(constructed), *linked.calls])
                continue
            analyses[raw.id] = Analysis(note.id, constructed, linked, neighbours)
        self._embed_ahead(ready, asks, analyses)
        errors: dict[str, str] = {}
        note_ids: dict[str, str] = {}
        # A worker commits note by note: the writer lock (SQLite) or the writers' lock (PostgreSQL)
        # is then never held for a whole batch; on PostgreSQL an acknowledgement waits only for the
        # chain head, which a note transaction takes for its last statements (Ledger.write).
        groups = [[raw] for raw in raws] if commit_each else [list(raws)]
        batch_notes = {note.id for note, _ in asks}
        again: list[RawLog] = []  # linked again: shown a note erased meanwhile
        for group in groups:
            with self.ledger.write() as tx:
                held = self.queue.held(tx, [r.id for r in group], owner) if owner is not None else None
                # the state's time by the clock its claim and lease read (PostgreSQL: the server's)
                now = self.queue.now(tx)
                shown_here = {r.id: shown_to[r.id] for r in group if r.id in shown_to}
                stale = self._shown_erased(tx, erasures, shown_here, batch_notes)
                touched: list[str] = []
                for raw in group:
                    if held is not None and raw.id not in held:
                        # its lease ended and another took it, or it was erased meanwhile
                        errors[raw.id] = _lost_claim(tx, raw.id)
                    elif raw.id in failed:
                        error, calls = failed[raw.id]
                        calls = _unread(calls) if raw.id in stale else calls
                        errors[raw.id] = self._failed(tx, raw, error, calls, now)
                    elif raw.id in stale:
                        analysis = analyses[raw.id]
                        for call in _unread(_attempts(analysis.link)):  # asked, its answer not kept
                            tx.insert_llm_call(call)
                        if relinks > 0:
                            again.append(raw)
                            if owner is not None:
                                self.queue.renew_in(tx, owner, [raw.id])
                        else:
                            errors[raw.id] = self._given_back(tx, raw, analysis, owner)
                    elif raw.id in analyses:
                        note_ids[raw.id], changed = self._apply(tx, raw, analyses[raw.id], now)
                        touched += changed
                self.index.keep_vectors(tx, touched)
                if owner is not None and rest and group is groups[-1]:
                    self.queue.renew_in(tx, owner, rest)
            for raw in group:
                if raw not in again:
                    settled[raw.id] = AddOutcome(
                        raw_log_id=raw.id, note_id=note_ids.get(raw.id), error=errors.get(raw.id)
                    )
        if analyses:
            self._catch_up_index()
        if again:
            self._process_batch(
                _relinked(prepared, again), owner, commit_each, (), settled, relinks=relinks - 1
            )
        return [settled[raw.id] for raw in raws]

    def _erasures(self, tx: LedgerTx | None = None) -> int:
        """How many erasures the ledger has recorded (in ``tx``, else in a read of its own): the
        ledger check's count (no index is named "", so it reads the heads alone)."""
        if tx is not None:
            return index_queries.ledger_check(tx, "").erasures
        with self.ledger.read(read_committed=True) as read:
            return index_queries.ledger_check(read, "").erasures

    def _shown_erased(
        self, tx: LedgerTx, erasures: int, shown: Mapping[str, Sequence[Note]], batch_notes: set[str]
    ) -> set[str]:
        """The inputs (by raw log id) whose link step was shown something an erasure recorded since
        the neighbours were read took away: a note now erased (deleted) or redacted (what the model
        read of it changed), or a note of the batch whose raw log was erased. Such an answer may
        carry the erased words into another note's value and into its stored answer, and the
        erasure's scan of those ran before it was written. One query while no erasure came."""
        if not shown or self._erasures(tx) == erasures:
            return set()
        stored = sorted({n.id for notes in shown.values() for n in notes if n.id not in batch_notes})
        now = {n.id: n for n in tx.get_notes(stored)}
        ours = {r for notes in shown.values() for n in notes if n.id in batch_notes for r in n.raw_log_ids}
        erased = {r for r in ours if (tx.raw_log_state(r) or {}).get("state") == RawLogState.ERASED.value}

        def gone(note: Note) -> bool:
            if note.id in batch_notes:
                return any(r in erased for r in note.raw_log_ids)
            current = now.get(note.id)
            return current is None or current.deleted or _as_shown(current) != _as_shown(note)

        return {raw_id for raw_id, notes in shown.items() if any(gone(n) for n in notes)}

    def _given_back(self, tx: LedgerTx, raw: RawLog, analysis: Analysis, owner: str | None) -> str:
        """An input shown an erased note again: queued for a worker or ``reprocess`` (its model
        calls recorded, the link answer's text left out), and what the caller is told."""
        for call in _attempts(analysis.construct):
            tx.insert_llm_call(call)
        if owner is not None:
            queue_queries.release(tx, owner=owner, raw_log_ids=[raw.id])
        return (
            f"raw log {raw.id} is kept and queued again: notes shown to the model while it analysed it "
            "were erased on a data subject's request meanwhile, so its answer was not used. A worker "
            f"or `amem reprocess` analyses it again (`amem status {raw.id}`)."
        )

    def _link_in_order(
        self,
        ready: Sequence[RawLog],
        drafts: Mapping[str, tuple[TaskResult[ConstructedNote], Note]],
        asks: Sequence[tuple[Note, str]],
        shown: Sequence[Sequence[Note]],
        said: Mapping[str, datetime],
    ) -> tuple[list[list[Note]], list[TaskResult | AnalystError]]:
        """The link step of each note of a batch after the earlier ones, as add_note would run it:
        a neighbour is shown as the earlier link steps leave it, with the links and evolution the
        policy applies by itself (held values stay out until a person approves them). So a later
        note knows that an earlier one only restates a fact, and retires the fact itself, not just
        its restatement. Returns the neighbours each note was shown, and the answers."""
        views: dict[str, Note] = {}  # notes an earlier link step changed, as it left them
        seen_all: list[list[Note]] = []
        linked_all: list[TaskResult | AnalystError] = []
        for raw, (applied, _), neighbours in zip(ready, asks, shown, strict=True):
            constructed, note = drafts[raw.id]
            seen = [views.get(n.id, n) for n in neighbours]
            linked: TaskResult | AnalystError
            try:
                linked = self.analyst.link_and_evolve(note, raw, seen, _said_of(seen, said))
            except AnalystError as exc:
                linked = exc
            seen_all.append(seen)
            linked_all.append(linked)
            if isinstance(linked, AnalystError):
                continue
            # the answers exactly as the write will draft them (the same checks), so the notes a
            # later link step is shown are the notes that will be written
            answers = Answers(
                construct=constructed.answer,
                link=linked.answer,
                construct_by=_proposer(self.analyst.model, constructed),
                link_by=_proposer(self.analyst.model, linked),
                checked=self.analyst.checked,
            )
            current = {n.id: n for n in seen} | {note.id: views.get(note.id, applied)}
            views |= preview(
                current, draft(note.id, raw, answers, Snapshot(current), self.policy), self.policy
            )
        return seen_all, linked_all

    def _said(self, shown: Sequence[Sequence[Note]], raws: Sequence[RawLog]) -> dict[str, datetime]:
        """When the neighbours shown were said (their first raw logs' times), by raw log id: the
        batch's own raw logs from memory, the others in one read."""
        wanted = {n.raw_log_ids[0] for neighbours in shown for n in neighbours if n.raw_log_ids}
        said = {raw.id: raw.occurred_at for raw in raws if raw.id in wanted}
        missing = sorted(wanted - said.keys())
        if missing:
            with self.ledger.read() as tx:
                said |= search_queries.said_at(tx, missing)
        return said

    def _embed_ahead(
        self, ready: Sequence[RawLog], asks: Sequence[tuple[Note, str]], analyses: Mapping[str, Analysis]
    ) -> None:
        """Embed, in one call, the documents this batch's drafts will change (evolved neighbours, a
        new note a later one evolves), as far as the notes stand now: the write then keeps their
        vectors and the catch-up embeds nothing. A guess that the write proves wrong (a note changed
        meanwhile) is simply not kept: the catch-up embeds that one."""
        if not analyses:
            return
        notes: dict[str, Note] = {note.id: note for note, _ in asks}
        for analysis in analyses.values():
            notes.update({n.id: n for n in analysis.neighbours if n.id not in notes})
        drafts: list[Draft] = []
        for raw in ready:
            analysis = analyses.get(raw.id)
            if analysis is None:
                continue
            current = {n.id: notes[n.id] for n in analysis.neighbours if n.id in notes}
            drafts += draft(analysis.note_id, raw, self._answers(analysis), Snapshot(current), self.policy)
        changed = preview(notes, drafts, self.policy)
        self.index.embed_ahead([n for i, n in changed.items() if document_text(n) != document_text(notes[i])])

    def _answers(self, analysis: Analysis) -> Answers:
        return Answers(
            construct=analysis.construct.answer,
            link=analysis.link.answer,
            construct_by=_proposer(self.analyst.model, analysis.construct),
            link_by=_proposer(self.analyst.model, analysis.link),
            checked=self.analyst.checked,
        )

    def _workers(self, calls: int) -> int:
        """How many of ``calls`` analyst calls run at once."""
        return min(calls, self.settings.llm_concurrency) if self.analyst.concurrent else 1

    def _calls(self, task: Callable[[T], TaskResult], items: Sequence[T]) -> list[TaskResult | AnalystError]:
        """``task`` for each item, in order, each failure in its place. With a remote model, up to
        ``llm_concurrency`` run at once: a batch waits about as long as its slowest calls, not
        their sum. Nothing is written meanwhile; the results are applied in input order."""
        workers = self._workers(len(items))

        def guarded(item: T) -> TaskResult | AnalystError:
            try:
                return task(item)
            except AnalystError as exc:
                return exc

        if workers <= 1:
            return [guarded(item) for item in items]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="amem-llm") as pool:
            return list(pool.map(guarded, items))

    def _apply(self, tx: LedgerTx, raw: RawLog, analysis: Analysis, now: datetime) -> tuple[str, list[str]]:
        """Write one analysed raw log: its model calls, the new note, every draft routed by
        governance, the raw log marked processed (at ``now``, the queue's clock: on PostgreSQL the
        server's, as its claim's and lease's times). Returns the note id and the notes it changed."""
        state = tx.raw_log_state(raw.id)
        if state is not None and state["state"] == RawLogState.PROCESSED.value and state["note_id"]:
            return str(state["note_id"]), []  # another process finished it meanwhile
        for call in [*_attempts(analysis.construct), *_attempts(analysis.link)]:
            tx.insert_llm_call(call)
        with tx.batched():  # the note's proposals and changes: one multi-row INSERT per table
            # create_note follows the installed policy in this transaction: the drafting below and
            # governance's routing then read the same version (self.policy is governance's)
            note = self.governance.create_note(
                tx,
                scope=raw.scope,
                content=raw.text,
                raw_logs=[raw],
                actor=raw.actor,
                note_id=analysis.note_id,
            )
            snapshot = self._snapshot(tx, raw, analysis)
            drafts = draft(note.id, raw, self._answers(analysis), snapshot, self.policy)
            proposals = self.governance.propose_in(tx, drafts)
        tx.set_raw_log_state(raw.id, RawLogState.PROCESSED, now, note_id=note.id)
        applied = [p.note_id for p in proposals if p.status == ProposalStatus.AUTO_APPLIED]
        return note.id, list(dict.fromkeys([note.id, *applied]))

    def _snapshot(self, tx: LedgerTx, raw: RawLog, analysis: Analysis) -> Snapshot:
        """What drafting needs of the ledger, re-read in ``tx``: a neighbour of the same batch whose
        analysis failed was never written, and one may have been deleted meanwhile.

        Only the neighbours the answer names (links, updates, contradictions) are read: drafting
        looks at no other, and this runs under the write lock, which every acknowledgement of an
        input waits for on SQLite."""
        answer = analysis.link.answer
        restates = answer.restates if answer.restates != analysis.note_id else None
        named = {x.note_id for x in (*answer.links, *answer.updates, *answer.contradictions)}
        ids = [n.id for n in analysis.neighbours if n.id in named]
        current = {n.id: n for n in tx.get_notes([*ids, *([restates] if restates else [])]) if not n.deleted}
        restated = current.get(restates) if restates else None
        if restates and restated is None:
            log.warning("raw log %s: dropped restates of unknown note %r", raw.id, restates)
        neighbours = {i: current[i] for i in ids if i in current}
        said_at: dict[str, datetime] = {}
        if answer.contradictions:
            contradicted = {c.note_id for c in answer.contradictions}
            firsts = [n.raw_log_ids[0] for n in neighbours.values() if n.raw_log_ids and n.id in contradicted]
            said_at = {r.id: r.occurred_at for r in tx.get_raw_logs(firsts)}
        pending = tx.pending_attributes(restated.id) if restated is not None else frozenset()
        # every neighbour the link step was shown, as shown: an injection stored in one it read is
        # checked for like the raw log's own, named by the answer or not
        shown = {n.id: n for n in analysis.neighbours}
        return Snapshot(neighbours, restated, frozenset(pending), said_at, shown)

    # -- failure and the index ---------------------------------------------------------------------

    def _failed(
        self, tx: LedgerTx, raw: RawLog, error: AnalystError, calls: Sequence[Any], now: datetime
    ) -> str:
        """Record the failed analysis (its model calls included) in the batch's transaction, at
        ``now`` (the queue's clock), and say what the caller sees. Only this input is marked
        failed; the rest of the batch goes on."""
        for call in calls:
            tx.insert_llm_call(call)
        tx.set_raw_log_state(raw.id, RawLogState.FAILED, now, error=str(error)[:2000])
        return f"raw log {raw.id} is kept, but analysis failed: {error}. Run `amem reprocess` to retry."

    def _stopped(
        self,
        raws: Sequence[RawLog],
        settled: Mapping[str, AddOutcome],
        owner: str | None,
        exc: BaseException,
        *,
        given_back: bool = False,
    ) -> list[AddOutcome]:
        """``process_many`` after a step other than the model call failed: the raw logs are kept,
        and what became of each input not written yet is recorded in a short write of its own.

        An error (embedder, index, ledger, a bug): each is marked failed with the cause, its claim
        ended, and comes back with it, beside the outcomes already written; ``amem status`` says
        why, ``amem reprocess`` retries. Failed rather than queued again: a worker would claim it
        at once and meet the same broken step, claim after claim, as the model's outage is met
        (marked failed too). After an outage suspected (``_OutageSuspected``) an input never tried
        says so, and the cause. An interruption (KeyboardInterrupt), or an exception of the
        caller's own (``given_back``: its progress callback): nothing is wrong with the inputs, so
        they are given back to the queue, and it is raised again. When even that write fails, the
        inputs are taken again once their lease ends: the error raised names them."""
        left = [raw.id for raw in raws if raw.id not in settled]
        if not left:
            raise exc  # everything was written: the failure came after (a catch-up refusing)
        named = _listed(left)
        if given_back or not isinstance(exc, Exception):
            try:
                if owner is not None:
                    self.queue.release(owner, left)
            except Exception:
                log.exception("could not give back raw logs %s; taken again when their lease ends", named)
            exc.add_note(f"raw logs kept, not analysed yet: {named} (`amem reprocess` retries them)")
            raise exc
        failure = exc.failure if isinstance(exc, _OutageSuspected) else exc
        cause = _cause(failure)
        # every caller reports the outcomes (and `amem status` the cause): the traceback on demand
        log.info(
            "analysis of raw logs %s stopped: %s",
            named,
            cause,
            exc_info=failure if log.isEnabledFor(logging.DEBUG) else None,
        )
        untried = [i for i in left if i != exc.tried] if isinstance(exc, _OutageSuspected) else []
        stopped = f"analysis stopped: {cause}"
        not_tried = (
            f"not analysed: an outage was suspected ({cause}: {_Breaker.TRIPS} attempts in a row "
            "failed that way, the last on the shortest input left), so it was not tried"
        )
        try:
            with self.ledger.write(lock_head=False) as tx:
                now = self.queue.now(tx)
                tried = [i for i in left if i not in set(untried)]
                queue_queries.fail(tx, owner=owner, raw_log_ids=tried, error=stopped, now=now)
                queue_queries.fail(tx, owner=owner, raw_log_ids=untried, error=not_tried, now=now)
        except Exception as refused:
            log.exception("could not mark raw logs %s failed", named)
            raise AnalysisStoppedError(
                f"raw logs {named} are kept, but their analysis stopped: {cause}; and it could "
                f"not be recorded ({_cause(refused)}). They are taken again by a worker or `amem reprocess` "
                f"once their lease ends; `amem status {left[0]}` says what became of one",
                left,
            ) from exc
        untried_set = set(untried)
        outcomes = {
            raw_id: AddOutcome(
                raw_log_id=raw_id,
                error=(
                    f"raw log {raw_id} is kept, but {not_tried}. Run `amem reprocess` to retry "
                    f"(`amem status {raw_id}` says what became of it)."
                    if raw_id in untried_set
                    else f"raw log {raw_id} is kept, but its analysis stopped before it was written: "
                    f"{cause}. Run `amem reprocess` to retry (`amem status {raw_id}` says what became "
                    "of it)."
                ),
            )
            for raw_id in left
        }
        return [settled.get(raw.id) or outcomes[raw.id] for raw in raws]

    def _catch_up_index(self) -> None:
        """The index is derived: if it fails now, the next open or search catches up."""
        try:
            self.index.catch_up_after_write()
        except AmemError:
            raise
        except Exception:  # the ledger is committed; a broken index must not fail add_note
            log.exception("the index could not catch up; it will on the next open or search")


def _stamped(
    drafts: dict[str, tuple[TaskResult[ConstructedNote], Note]],
    asks: list[tuple[Note, str]],
    ready: Sequence[RawLog],
) -> tuple[dict[str, tuple[TaskResult[ConstructedNote], Note]], list[tuple[Note, str]]]:
    """The batch's draft notes dated now, in input order, as a written note is dated at its write.

    The link step compares a draft with its neighbours by time: dated by the raw log's receipt, or by
    the preparation (done while the previous batch was still being written), a bulk import's drafts
    looked older than the notes of the batch before, and the analyst took a stale fact for the
    current one."""
    start = utcnow()
    when = {raw.id: start + timedelta(microseconds=i) for i, raw in enumerate(ready)}
    stamped = {
        rid: (c, n.model_copy(update={"created_at": when[rid], "updated_at": when[rid]}))
        for rid, (c, n) in drafts.items()
    }
    by_note = {n.id: when[rid] for rid, (_, n) in drafts.items()}
    return stamped, [
        (n.model_copy(update={"created_at": by_note[n.id], "updated_at": by_note[n.id]}), q) for n, q in asks
    ]


def _without(prepared: _Prepared, settled: Mapping[str, AddOutcome]) -> _Prepared | None:
    """``prepared`` less the inputs settled already (a probe taken ahead of its batch, written or
    failed alone); None when none is left. The construct answers and the vectors of the others are
    kept (the vectors once embedded: an embedding that failed fails the batch as it would have)."""
    if not any(raw.id in settled for raw in prepared.raws):
        return prepared
    raws = [raw for raw in prepared.raws if raw.id not in settled]
    if not raws:
        return None
    picked = [i for i, raw in enumerate(prepared.ready) if raw.id not in settled]
    vectors: Future[Any] = Future()

    def narrow(embedding: Future[Any]) -> None:
        try:
            embedded = embedding.result()
        except BaseException as exc:
            vectors.set_exception(exc)
            return
        vectors.set_result(None if embedded is None or not picked else np.asarray(embedded)[picked])

    prepared.vectors.add_done_callback(narrow)
    return _Prepared(
        raws=raws,
        failed={i: failure for i, failure in prepared.failed.items() if i not in settled},
        drafts={i: draft for i, draft in prepared.drafts.items() if i not in settled},
        ready=[prepared.ready[i] for i in picked],
        asks=[prepared.asks[i] for i in picked],
        vectors=vectors,
    )


def _relinked(prepared: _Prepared, raws: Sequence[RawLog]) -> _Prepared:
    """``raws`` of a prepared batch, to be linked again: their construct answers and their documents'
    vectors are kept (both came from their own raw logs alone)."""
    position = {raw.id: i for i, raw in enumerate(prepared.ready)}
    picked = [position[raw.id] for raw in raws]
    vectors: Future[Any] = Future()
    embedded = prepared.vectors.result()
    vectors.set_result(None if embedded is None else np.asarray(embedded)[picked])
    return _Prepared(
        raws=list(raws),
        failed={},
        drafts={raw.id: prepared.drafts[raw.id] for raw in raws},
        ready=list(raws),
        asks=[prepared.asks[i] for i in picked],
        vectors=vectors,
    )


def _as_shown(note: Note) -> tuple[Any, ...]:
    """What the link step reads of a neighbour (``link_evolve``'s view of it)."""
    return (
        note.content,
        note.keywords,
        note.tags,
        note.context,
        note.category,
        note.decision_rationale,
        note.valid_at,
    )


#: What a model call whose answer was not kept records in place of the answer.
_NOT_KEPT = (
    "answer not kept: a note shown to the model was erased on a data subject's request while it answered"
)


def _unread(calls: Sequence[LlmCall]) -> list[LlmCall]:
    """``calls`` with the link step's answers left out: they read notes erased since."""
    return [
        c.model_copy(update={"response_text": None, "error": _NOT_KEPT}) if c.task == link_evolve.TASK else c
        for c in calls
    ]


def _cause(exc: BaseException) -> str:
    """An exception in one line for a user and the ledger: its first line (litellm's carry a
    traceback after it), named by its type unless it names it already, at most 500 characters."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    name = type(exc).__name__
    text = first if name in first else f"{name}: {first}" if first else name
    return text[:500]


#: Raw logs a message names one by one; beyond them it counts the rest.
_NAMED_IN_A_MESSAGE = 5


def _listed(raw_log_ids: Sequence[str]) -> str:
    """Raw log ids for a message: all of a few; of many, the first ones and how many in all (an
    import of 33,000 inputs that stopped made a message of 660,000 characters)."""
    if len(raw_log_ids) <= _NAMED_IN_A_MESSAGE:
        return ", ".join(raw_log_ids)
    first = raw_log_ids[: _NAMED_IN_A_MESSAGE - 2]
    return f"{', '.join(first)} and {len(raw_log_ids) - len(first):,} more ({len(raw_log_ids):,} in all)"


def _lost_claim(tx: LedgerTx, raw_log_id: str) -> str:
    state = tx.raw_log_state(raw_log_id)
    if state is not None and state["state"] == RawLogState.ERASED.value:
        return (
            f"raw log {raw_log_id} was erased on a data subject's request while it was analysed; "
            "nothing was applied"
        )
    return (
        f"raw log {raw_log_id}: its lease ended before its analysis did and another worker took it; "
        f"nothing was applied twice (see `amem status {raw_log_id}`)"
    )


def _attempts(result: TaskResult[Any]) -> list[Any]:
    return list(result.attempts) if result.attempts else [result.call]


def _proposer(model: str, result: TaskResult[Any]) -> Proposer:
    return Proposer(
        kind="llm",
        id=model,
        model=result.model,
        prompt_version=result.prompt_version,
        usage=result.usage,
        llm_call_id=result.call.id,
    )


def _neighbour_query(draft: Note) -> str:
    """What the neighbours are searched with: the text and the keywords the analyst saw in it."""
    return " ".join([draft.content, *draft.keywords])


@dataclass(frozen=True)
class Kept:
    """Inputs kept by ``keep_inputs``: every input's raw log in order (``new`` were committed now,
    the others were not), the inputs recorded before (by the new raw log's id), and the lease the
    new ones are held under when the caller analyses them itself."""

    raws: list[RawLog]
    new: list[RawLog]
    before: dict[str, queue_queries.Recorded]
    lease: Lease | None


def keep_inputs(
    settings: Settings,
    queue: InputQueue,
    items: Sequence[NoteInput],
    *,
    actor: Actor,
    skip_recorded: bool,
    hold: bool,
) -> Kept:
    """Check every input (a bad one names its position and nothing is recorded), then commit the
    raw logs of those not recorded before, in one transaction, with their idempotency keys.
    ``hold``: the new ones are held under a lease for the caller to analyse (else queued for the
    workers). Needs the ledger only: no model, no index (an API server keeps inputs without
    loading either).

    Which inputs were recorded before is looked up in the transaction that records the others
    (``InputQueue.enqueue``), which runs after every earlier one that recorded raw logs: a retry
    sent while the first request was still in flight finds the first's raw log. Looked up in a
    read of its own before, both requests found nothing and an input that gives its time, without
    a key, was kept twice (a keyed one was refused by the key's primary key, and looked up again)."""
    raws, problems = raw_logs_of(settings, items, actor=actor)
    if problems:
        raise InvalidBatchInputError(problems)
    keys = {
        raw.id: item.idempotency_key for raw, item in zip(raws, items, strict=True) if item.idempotency_key
    }
    timed = {raw.id for raw, item in zip(raws, items, strict=True) if item.at is not None}
    position = {raw.id: n for n, raw in enumerate(raws, start=1)}

    before: dict[str, queue_queries.Recorded] = {}

    def recorded_before(tx: LedgerTx, theirs: list[RawLog]) -> Collection[str]:
        """Run in each transaction that tries to commit them: the last one committed."""
        before.clear()
        before.update(_recorded_before(tx, theirs, keys, timed, position, skip_recorded=skip_recorded))
        return before.keys()

    lease = queue.lease() if hold else None
    looks_up = bool(keys) or (skip_recorded and bool(timed))  # else, as a group commit's others, none
    queue.enqueue(raws, lease, keys=keys, recorded_before=recorded_before if looks_up else None)
    new = [raw for raw in raws if raw.id not in before]
    return Kept(raws, new, before, lease if new else None)


def outcomes_in_order(kept: Kept, analysed: Mapping[str, AddOutcome]) -> list[AddOutcome]:
    """What became of each input, in order: ``analysed`` (by raw log id) for the new ones analysed,
    queued for the others new, and for those recorded before, their analysis now (``analysed``
    holds their raw log kept before: an interrupted import taken up) or what became of them so far.
    An input repeating an earlier one of this call is recorded before too, by that one: its outcome
    is that input's, ``recorded_before`` (before, the repeat answered as a second input analysed,
    and ``amem import`` counted two notes added for one)."""
    outcomes = {raw.id: analysed.get(raw.id) or AddOutcome(raw_log_id=raw.id) for raw in kept.new}
    for raw_id, old in kept.before.items():
        if old.raw_log_id in outcomes:  # an earlier input of this call holds it
            outcomes[raw_id] = outcomes[old.raw_log_id].model_copy(update={"recorded_before": True})
            continue
        if old.raw_log_id in analysed:  # kept before, taken up now
            outcomes[raw_id] = analysed[old.raw_log_id]
            continue
        error = old.error if old.state == RawLogState.FAILED.value else None
        if old.state == RawLogState.ERASED.value:
            error = f"raw log {old.raw_log_id} holding this input was erased on a data subject's request"
        outcomes[raw_id] = AddOutcome(
            raw_log_id=old.raw_log_id, note_id=old.note_id, error=error, recorded_before=True
        )
    return [outcomes[raw.id] for raw in kept.raws]


def _recorded_before(
    tx: LedgerTx,
    raws: list[RawLog],
    keys: Mapping[str, str],
    timed: Set[str],
    position: Mapping[str, int],
    *,
    skip_recorded: bool,
) -> dict[str, queue_queries.Recorded]:
    """Of ``raws`` (checked, not written), those recorded before, keyed by the new raw log's id,
    read in ``tx``: by the sender's idempotency key (``keys``; always: a key names one input of its
    author in a scope), then with ``skip_recorded`` by scope, time, author, text and metadata (the
    inputs of ``timed``, which give ``at``). A key used before in the same scope for another input
    (another text, another time where the input gives one, other metadata: a CRM record edited
    since) is refused, naming each such input by its ``position`` (of a scope the sender is adding
    to; another scope's input under the same key is never looked at)."""
    before: dict[str, queue_queries.Recorded] = {}
    keyed_raws = [raw for raw in raws if raw.id in keys]
    if keyed_raws:
        found = queue_queries.recorded_by_key(tx, keyed_raws[0].actor, [keys[raw.id] for raw in keyed_raws])
        reused: list[tuple[int, str]] = []
        for raw in keyed_raws:
            named = found.get(keys[raw.id])
            keyed = named.by_scope.get(raw.scope) if named is not None else None
            if keyed is None:
                # a person's key the agent of their name recorded before their first (an amem
                # before reviewer tokens added as person:NAME): theirs only for the very same input
                legacy = named.as_agent_before.get(raw.scope) if named is not None else None
                if legacy is not None and not _how_it_differs(raw, legacy, timed=raw.id in timed):
                    before[raw.id] = legacy.recorded
                continue
            differs = _how_it_differs(raw, keyed, timed=raw.id in timed)
            if differs:
                reused.append(
                    (
                        position[raw.id],
                        f"idempotency_key {keys[raw.id]!r} names another input of {raw.scope}, kept "
                        f"before as raw log {keyed.recorded.raw_log_id} ({differs}): a key names "
                        "one input",
                    )
                )
            before[raw.id] = keyed.recorded
        if reused:
            raise InvalidBatchInputError(reused)
    if skip_recorded:
        looked_up = [raw for raw in raws if raw.id in timed and raw.id not in before]
        before |= queue_queries.recorded_before(tx, looked_up) if looked_up else {}
        before |= _repeated_in_batch([raw for raw in looked_up if raw.id not in before], keys)
    return before


def _how_it_differs(raw: RawLog, keyed: queue_queries.KeyedInput, *, timed: bool) -> str:
    """How an input differs from the one its idempotency key named before ("": it is that one, a
    retry): its text; its time, when it gives one (a retry without ``at`` is timed at its arrival);
    its metadata, unless the input kept was erased (its metadata is gone). Before, only the text
    was compared, and a CRM record whose date or status was edited since was taken for a retry."""
    differences: list[str] = []
    if keyed.sha256 != raw.sha256:
        differences.append("another text")
    if timed and keyed.occurred_at != as_utc(raw.occurred_at):
        differences.append(
            f"said at {keyed.occurred_at.isoformat()}, not {as_utc(raw.occurred_at).isoformat()}"
        )
    if keyed.recorded.state != RawLogState.ERASED.value and keyed.metadata != raw.metadata:
        changed = sorted(
            name
            for name in {*keyed.metadata, *raw.metadata}
            if name not in keyed.metadata
            or name not in raw.metadata
            or keyed.metadata[name] != raw.metadata[name]
        )
        differences.append(f"other metadata: {', '.join(repr(name) for name in changed)}")
    return "; ".join(differences)


def _repeated_in_batch(timed: Sequence[RawLog], keys: Mapping[str, str]) -> dict[str, queue_queries.Recorded]:
    """Of ``timed`` (inputs that give their time, recorded nowhere yet, in input order), those that
    repeat an earlier one of the same batch (same scope, time, author, text and metadata: the same
    input, as ``queue_queries.recorded_before`` matches in the ledger), keyed by the repeat's raw log
    id and naming the earlier one's, which is kept once: a retry of the batch then finds the same
    raw log for both. An input with its own idempotency key is named by it, and kept."""
    first: dict[tuple[str, str, datetime, str, str, str], RawLog] = {}
    repeats: dict[str, queue_queries.Recorded] = {}
    for raw in timed:
        same = (
            raw.scope,
            raw.sha256,
            as_utc(raw.occurred_at),
            raw.actor.kind.value,
            raw.actor.id,
            json.dumps(raw.metadata, sort_keys=True),
        )
        earlier = first.get(same)
        if earlier is not None and raw.id not in keys:
            repeats[raw.id] = queue_queries.Recorded(earlier.id, RawLogState.PENDING.value, None, None)
        else:
            first.setdefault(same, raw)
    return repeats


def checked_inputs(
    settings: Settings, items: Iterable[NoteInput | Mapping[str, Any]], actor: Actor, *, whole: bool = True
) -> tuple[list[NoteInput], list[tuple[int, str]]]:
    """The inputs as NoteInput, and every problem of every input, by 1-based position: its fields,
    then (``whole``; add_notes checks them itself before recording) its content, scope, time and
    metadata, for the inputs whose fields are right. Records nothing and opens nothing."""
    inputs: list[NoteInput] = []
    positions: list[int] = []
    problems: list[tuple[int, str]] = []
    for i, item in enumerate(items, start=1):
        try:
            inputs.append(item if isinstance(item, NoteInput) else NoteInput.model_validate(item))
            positions.append(i)
        except ValidationError as exc:
            problem = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
            )
            problems.append((i, problem))
    if whole:
        _, wrong = raw_logs_of(settings, inputs, actor=actor)
        problems += [(positions[i - 1], problem) for i, problem in wrong]
    return inputs, sorted(problems)


def raw_logs_of(
    settings: Settings, items: Sequence[NoteInput], *, actor: Actor
) -> tuple[list[RawLog], list[tuple[int, str]]]:
    """The raw logs of ``items``, checked (nothing is written), and what is wrong with each input
    that is not one, by 1-based position: all of them, so a caller names every one."""
    raws: list[RawLog] = []
    problems: list[tuple[int, str]] = []
    keyed: dict[tuple[str, str], int] = {}  # (scope, key) -> the input given it first
    for i, item in enumerate(items, start=1):
        try:
            raw = raw_log_from(
                settings, item.content, at=item.at, actor=actor, scope=item.scope, metadata=item.metadata
            )
            if item.idempotency_key is not None:
                _check_key(item.idempotency_key, raw.scope, keyed, i)
            raws.append(raw)
        except InvalidInputError as exc:
            problems.append((i, str(exc)))
    return raws, problems


def _check_key(key: str, scope: str, keyed: dict[tuple[str, str], int], position: int) -> None:
    """An idempotency key is one line of visible text, given to one input of a batch in a scope."""
    check_name(check_text(key, "idempotency_key"), "idempotency_key")
    if not is_visible(key):
        raise InvalidInputError("idempotency_key shows nothing (only spaces or invisible characters)")
    first = keyed.setdefault((scope, key), position)
    if first != position:
        raise InvalidInputError(
            f"idempotency_key {key!r} is given to input {first} too: a key names one input"
        )


#: How far ahead of this server's clock an input's ``at`` may be: ``at`` is when the input was said,
#: so a later one is a typo (2209 for 2029) or a sender's wrong clock, and kept, it sorted first as
#: "newest said" and hid the inputs that contradict it. An hour takes in the skew between machines
#: whose clocks are not kept in step, and a summer-time hour given with the wrong offset; a sender
#: further ahead than that is wrong, and is told so rather than kept.
AT_CLOCK_SKEW = timedelta(hours=1)

#: An ``at`` without an offset (or a date alone) is read as UTC, but a CRM export or a person often
#: writes local time: east of UTC that reads as up to 14 hours ahead (UTC+14, the zone furthest
#: ahead), so such a value is refused only beyond that and the skew, and told to give its offset.
AT_UNZONED_AHEAD = timedelta(hours=14)


def _future_at(at: datetime | str, now: datetime, *, zoned: bool) -> str:
    """Why an ``at`` too far ahead of ``now`` is refused: the value as given, now, and what to do."""
    given = at.isoformat() if isinstance(at, datetime) else str(at).strip()
    now_words = now.isoformat(timespec="seconds").replace("+00:00", "Z")
    if not zoned:
        ahead = (AT_CLOCK_SKEW + AT_UNZONED_AHEAD).total_seconds() / 3600
        return (
            f"at: {given!r} gives no offset from UTC, so it is read as UTC, and is then more than "
            f"{ahead:g} hours ahead of this server's now, {now_words}: give the time it was said "
            "with its offset (e.g. 2026-03-01T09:30:00+09:00), or leave at out for now"
        )
    return (
        f"at: {given!r} is in the future: this server's clock says it is now {now_words} (at most "
        f"{AT_CLOCK_SKEW.total_seconds() / 3600:g} hour ahead is taken as clock skew); at is when the input "
        "was said: give that time, or leave at out for now"
    )


def raw_log_from(
    settings: Settings,
    content: str,
    *,
    at: datetime | str | None,
    actor: Actor,
    scope: str,
    metadata: Mapping[str, Any] | None,
) -> RawLog:
    """The raw log of an input, validated (nothing is written): the one place an input is checked.
    A wrong type is named as such (a number or bytes given as the text or the scope was "empty");
    an ``at`` later than now (beyond ``AT_CLOCK_SKEW``; without an offset, beyond that and
    ``AT_UNZONED_AHEAD``) is refused, naming it and now."""
    if content is not None and not isinstance(content, str):
        decode = " (decode the bytes first)" if isinstance(content, bytes | bytearray) else ""
        raise InvalidInputError(f"content must be text, got {type(content).__name__}{decode}")
    if content is None or not content.strip():
        raise InvalidInputError("content is empty: add_note needs the text to remember")
    check_text(content, "content")
    if not is_visible(content):
        raise InvalidInputError(
            "content shows nothing (only spaces, zero-width or control characters): "
            "add_note needs the text to remember"
        )
    if len(content) > settings.max_content_chars:
        raise InvalidInputError(
            f"content is {len(content):,} characters, over the limit of "
            f"{settings.max_content_chars:,} (AMEM_MAX_CONTENT_CHARS)"
        )
    scope = canonical_scope(scope)  # trimmed, NFC: one account however its name was typed
    number = time_given_as_number(at)
    if number is not None:
        raise InvalidInputError(f"at: {number}")
    now = utcnow()
    occurred = now if at is None else parse_datetime(at, what="at")
    zoned = at is None or offset_given(at)
    if occurred > now + AT_CLOCK_SKEW + (timedelta(0) if zoned else AT_UNZONED_AHEAD):
        raise InvalidInputError(_future_at(at, now, zoned=zoned))
    if not isinstance(metadata, Mapping | None):
        raise InvalidInputError(f"metadata must be a JSON object, got {type(metadata).__name__}")
    check_json(dict(metadata or {}), "metadata")
    try:
        meta = numbers_as_stored(json.loads(json.dumps(dict(metadata or {}), allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from exc
    return RawLog(
        id=new_id("r"),
        text=content,
        occurred_at=occurred,
        actor=actor,
        scope=scope,
        received_at=now,
        sha256=sha256_text(content),
        metadata=meta,
    )


def _said_of(neighbours: Sequence[Note], said: Mapping[str, datetime]) -> dict[str, datetime]:
    """When each of these neighbours was said, by note id (those whose raw log time is known)."""
    return {n.id: said[n.raw_log_ids[0]] for n in neighbours if n.raw_log_ids and n.raw_log_ids[0] in said}
