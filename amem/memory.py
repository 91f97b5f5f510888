"""Memory: the facade agents, the CLI and the console use. Wiring only, no logic of its own.

Heavy parts (litellm, chromadb, the embedding model) are built on first use, so reading the
ledger, deciding proposals or verifying the chain never imports them.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from amem.config import HOME_FROM_ENV, HOME_FROM_OPTION, Settings
from amem.domain.identity import canonical_identity
from amem.domain.models import (
    Actor,
    ActorKind,
    AddOutcome,
    Change,
    InputStatus,
    Note,
    NoteInput,
    PolicyVersion,
    Proposal,
    ProposalStatus,
    Proposer,
)
from amem.domain.progress import Progress, no_progress
from amem.domain.text import check_text, text_problem
from amem.errors import (
    AmemError,
    AnalysisPendingError,
    ConfigError,
    InputErasedError,
    InvalidBatchInputError,
    InvalidInputError,
    NotFoundError,
)
from amem.ledger.store import ChangeFilter, Ledger, ProposalFilter
from amem.policy import Policy, load_policy
from amem.services import policy_registry
from amem.services.authentication import AuthenticatedReviewer, Authentication, FailedSignIns
from amem.services.governance import (
    Correction,
    DecisionReport,
    Draft,
    Governance,
    HistoryEvent,
    VerifyResult,
)
from amem.services.review import MatchCount, ReviewFilter, ReviewItem, ReviewPage, ReviewService

if TYPE_CHECKING:
    from amem.domain.models import LlmCall, RawLog
    from amem.ledger.settled import SettledListener
    from amem.llm.base import Analyst
    from amem.services.audit import (
        AuditEvent,
        AuditQuery,
        DayCount,
        ErasureRecord,
        IncomingLink,
        NotePage,
        PolicyOverview,
        ReviewTimes,
        ReviewVerdicts,
    )
    from amem.services.backup import BackupReport
    from amem.services.erasure import ErasurePlan, ErasureReport
    from amem.services.export import ChangeFeed
    from amem.services.facts import FactPage
    from amem.services.pipeline import WritePipeline
    from amem.services.queue import InputQueue
    from amem.services.scopes import ScopeCheck
    from amem.services.search import SearchResult, SearchService
    from amem.services.tokens import TokenService
    from amem.services.worker import Worker, WorkerPool

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

log = logging.getLogger(__name__)
_Part = TypeVar("_Part")


class MemoryClosedError(AmemError):
    """A Memory was used after ``close()``: refused before anything is recorded (its index and its
    workers are gone, so an input kept now would only be marked failed)."""


class Memory:
    """An evolving, auditable memory store.

    ``Memory()`` reads AMEM_HOME, AMEM_DATABASE_URL, AMEM_POLICY, AMEM_LLM_MODEL and friends;
    keyword arguments override them.
    """

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        database_url: str | None = None,
        policy: str | os.PathLike[str] | Policy | None = None,
        llm: str | None = None,
        settings: Settings | None = None,
        create: bool = True,
    ) -> None:
        self.settings = settings or Settings.from_env(
            home=home,
            database_url_override=database_url,
            llm_model=llm,
            policy_path=None if isinstance(policy, Policy) else (str(policy) if policy else None),
        )
        if create:
            self.settings.home.mkdir(parents=True, exist_ok=True)
        else:
            require_store(self.settings)
        file_policy = policy if isinstance(policy, Policy) else load_policy(self.settings.policy_path)
        self._ledger = Ledger(self.settings.database_url, create_if_empty=create)
        if not create:  # only once the store proved to exist: a refused open leaves nothing behind
            self.settings.home.mkdir(parents=True, exist_ok=True)
        #: Failed password sign-ins, for as long as this Memory is open (the console keeps one).
        self._failed_sign_ins = FailedSignIns()
        #: The ledger's installed policy (on a new ledger, the file's, installed now as version 1).
        self.policy_in_force = policy_registry.resolve(self._ledger, file_policy, bootstrap_empty=True)
        self.policy = self.policy_in_force.policy
        self._governance = Governance(
            self._ledger,
            self.policy,
            installed=self.policy_in_force.installed,
            mismatch=self.policy_in_force.mismatch,
        )
        self._review = ReviewService(self._ledger, self.policy, self._governance)
        self._parts: dict[str, object] = {}
        # The console shares one Memory between its sessions' threads: each heavy part must be
        # built once (functools.cached_property stopped locking in Python 3.12).
        self._parts_lock = threading.RLock()
        #: The worker pools ``start_workers`` started: ``close`` stops them before what they use.
        self._pools: list[WorkerPool] = []
        self._closing = False  # close() began: no pool starts
        self._closed = False  # close() stopped the pools: every method refuses

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the workers ``start_workers`` started (each finishes the batch it holds; the inputs
        none took stay queued for the next worker), then release the index, the listener and the
        ledger. From then on every method refuses (MemoryClosedError) before recording anything.
        Closing twice does nothing more."""
        with self._parts_lock:
            if self._closing:
                return
            self._closing = True  # no pool starts now
            pools, self._pools = self._pools, []
        for pool in pools:  # while the parts they use are still open
            pool.stop()
        with self._parts_lock:
            self._closed = True
        search = self._parts.get("search_service")
        if search is not None:
            search.close()  # type: ignore[attr-defined]
        listener = self._parts.get("settled_listener")
        if listener is not None:
            listener.close()  # type: ignore[attr-defined]
        self._ledger.close()

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryClosedError(
                "this Memory is closed: open a new one (Memory(...)) to read or write the store; "
                "nothing was recorded"
            )

    @property
    def ledger(self) -> Ledger:
        """The ledger (refused once closed: its connections are released)."""
        self._check_open()
        return self._ledger

    @property
    def governance(self) -> Governance:
        self._check_open()
        return self._governance

    @property
    def review(self) -> ReviewService:
        self._check_open()
        return self._review

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def home(self) -> Path:
        return self.settings.home

    # -- heavy parts, built on first use ----------------------------------------------------------

    def _part(self, name: str, build: Callable[[], _Part]) -> _Part:
        """The part called ``name``, built by ``build`` on first use, once, whatever the threads."""
        self._check_open()
        part = self._parts.get(name)
        if part is None:
            with self._parts_lock:
                part = self._parts.get(name)
                if part is None:
                    part = self._parts[name] = build()
        return part  # type: ignore[return-value]

    @property
    def analyst(self) -> Analyst:
        def build() -> Analyst:
            from amem.llm.factory import make_analyst

            return make_analyst(self.settings, self.policy)

        return self._part("analyst", build)

    @property
    def search_service(self) -> SearchService:
        def build() -> SearchService:
            from amem.services.search import SearchService

            return SearchService.open(self.settings, self.ledger)

        return self._part("search_service", build)

    @property
    def queue(self) -> InputQueue:
        """The input queue (light: the ledger's raw_log_states; no model, no index)."""

        def build() -> InputQueue:
            from amem.services.queue import InputQueue

            return InputQueue(self.ledger, lease_seconds=self.settings.worker_lease_seconds)

        return self._part("queue", build)

    @property
    def tokens(self) -> TokenService:
        """Bearer tokens of agents and services (``authenticate_token(token) -> (identity, role)``)."""

        def build() -> TokenService:
            from amem.services.tokens import TokenService

            # a reviewer's token is checked against the policy installed now (agents' never read it)
            return TokenService(self.ledger, policy=lambda: self.governance.followed_policy())

        return self._part("tokens", build)

    @property
    def pipeline(self) -> WritePipeline:
        def build() -> WritePipeline:
            from amem.services.pipeline import WritePipeline

            # the index opened on the pipeline's first use, after the inputs are kept (a raw log
            # is committed before anything needs the index)
            return WritePipeline(
                settings=self.settings,
                ledger=self.ledger,
                governance=self.governance,
                analyst=self.analyst,
                index=lambda: self.search_service,
                queue=self.queue,
            )

        return self._part("pipeline", build)

    # -- writing (agents) -----------------------------------------------------------------------

    def add_note(
        self,
        content: str,
        *,
        at: datetime | str | None = None,
        actor: str | Actor,
        scope: str,
        metadata: dict[str, Any] | None = None,
        wait: bool = True,
        idempotency_key: str | None = None,
    ) -> str:
        """Keep ``content`` as a raw log, then build, link and evolve a note from it. Returns the note id.

        The raw log is committed before any model call; if analysis fails the raw log stays,
        marked unprocessed, and ``reprocess()`` completes it later.

        ``wait=False`` returns the raw log's id as soon as the raw log is committed (milliseconds):
        analysis, linking and evolution are left to a worker (``amem worker``, or ``start_workers``),
        and ``input_status(raw_log_id)`` says what became of it.

        ``idempotency_key``: the caller's own name for this input (a message id), unique per
        actor. Called again with it (a retry), nothing is kept twice: the answer is the input kept
        before (its note, or with ``wait=False`` its raw log); an input kept before and not analysed
        yet raises AnalysisPendingError with its raw log; one erased since on a data subject's request
        (its note deleted with it), or while this call analysed it, raises InputErasedError with the
        erasure's record (who, when, which), and nothing is kept again. A
        key given with another scope or text is refused (InvalidInputError).
        """
        if idempotency_key is not None:
            item = {"content": content, "scope": scope, "at": at, "metadata": metadata or {}}
            try:
                (outcome,) = self.add_notes(
                    [item | {"idempotency_key": idempotency_key}], actor=actor, wait=wait
                )
            except InvalidBatchInputError as exc:  # one input: its problem, as add_note says it
                raise InvalidInputError(exc.problem) from None
            if not wait:
                return outcome.raw_log_id
            if outcome.note_id is None or outcome.error is not None:  # an erased one keeps its note id
                if erased := self._erased_input(outcome.raw_log_id, retry=True):
                    raise erased
                raise AnalysisPendingError(
                    outcome.error or f"input {outcome.raw_log_id} was kept before and is not analysed yet",
                    outcome.raw_log_id,
                )
            return outcome.note_id
        if not wait:
            from amem.services.pipeline import raw_log_from

            who = _actor(actor, ActorKind.AGENT)
            raw = raw_log_from(self.settings, content, at=at, actor=who, scope=scope, metadata=metadata)
            self.queue.enqueue([raw])
            return raw.id
        try:
            return self.pipeline.add_note(
                content, at=at, actor=_actor(actor, ActorKind.AGENT), scope=scope, metadata=metadata
            )
        except AnalysisPendingError as exc:
            if erased := self._erased_input(exc.raw_log_id, retry=False):
                raise erased from None
            raise

    def _erased_input(self, raw_log_id: str, *, retry: bool) -> InputErasedError | None:
        """What add_note says of an input erased on a data subject's request (a retry under its key,
        or erased while it was analysed): not pending, as `amem reprocess` has nothing to do for it;
        None when it is not erased, or when the ledger cannot say (the pending error, which names the
        kept raw log, must reach the caller then: a caller told only "ledger unreachable" sends again)."""
        from amem.services import audit

        try:
            if self.queue.status(raw_log_id).status != "erased":
                return None
            found = audit.erasure_of(self.ledger, raw_log_id)
        except Exception:  # the ledger failing too (it refused the write): the pending error says it
            return None
        return InputErasedError(raw_log_id, retry=retry, **found)

    def add_notes(
        self,
        items: Iterable[NoteInput | Mapping[str, Any]],
        *,
        actor: str | Actor,
        batch_size: int = 64,
        progress: Progress = no_progress,
        skip_recorded: bool = False,
        wait: bool = True,
    ) -> list[AddOutcome]:
        """add_note for many inputs (an import of past conversations, a CRM export), in order.

        Every input is checked before anything is recorded; a bad one is named by its position.
        Then all raw logs are committed, and each batch of ``batch_size`` is analysed, embedded in
        one call and written in one transaction. An input whose analysis fails keeps its raw log
        and comes back with ``note_id=None`` and the error; ``reprocess()`` completes it later.
        Within a batch, a note's neighbours include the batch's earlier notes of its scope.
        ``progress(task, done, total)`` is called as batches complete (amem/domain/progress.py).
        ``skip_recorded``: an input that gives its time (``at``) and was recorded before, with the
        same scope, author and text, is not recorded again (an import run a second time); its
        outcome, ``recorded_before=True``, names the raw log that holds it; so is, always, an input
        whose ``idempotency_key`` (the sender's own name for it, unique per actor) was recorded
        before, with or without its time. With ``skip_recorded``, such an input still queued that
        nobody holds (an import interrupted) is analysed now, and its outcome is that analysis
        (``recorded_before`` False); one that failed is left to ``reprocess``. ``wait=False``, as for
        add_note: returns as soon as the raw logs are committed (in one transaction), queued for the
        workers; each outcome then has no note yet, and ``input_status`` follows it. An input whose
        raw log was erased on a data subject's request (kept before, or erased while this call
        analysed it) names that erasure (``erasure_id``), as add_note's InputErasedError does.
        """
        from amem.services.pipeline import checked_inputs

        who = _actor(actor, ActorKind.AGENT)
        items = list(items)
        inputs, problems = checked_inputs(self.settings, items, who, whole=False)
        if problems:  # named all at once, the right inputs' other problems too
            raise InvalidBatchInputError(checked_inputs(self.settings, items, who)[1])
        if not wait:  # kept for the workers: the ledger alone, no model or index loaded
            from amem.services.pipeline import keep_inputs, outcomes_in_order

            kept = keep_inputs(
                self.settings, self.queue, inputs, actor=who, skip_recorded=skip_recorded, hold=False
            )
            return self._with_erasures(outcomes_in_order(kept, {}))
        return self._with_erasures(
            self.pipeline.add_notes(
                inputs,
                actor=who,
                batch_size=batch_size,
                progress=progress,
                skip_recorded=skip_recorded,
                wait=wait,
            )
        )

    def _with_erasures(self, outcomes: list[AddOutcome]) -> list[AddOutcome]:
        """``outcomes`` with the erasure named of each input erased on a data subject's request: only
        an input kept before, or one whose analysis came to nothing, can be (one read, and none when
        every input is new and analysed). Said here, once, so no interface (`amem import`) tells an
        erased input from one skipped or pending its own way."""
        from amem.services import audit

        maybe = sorted({o.raw_log_id for o in outcomes if o.recorded_before or o.error is not None})
        erased = audit.erasures_of(self.ledger, maybe)
        if not erased:
            return outcomes
        return [
            o.model_copy(update={"erasure_id": erased[o.raw_log_id]["erasure_id"]})
            if o.raw_log_id in erased
            else o
            for o in outcomes
        ]

    def check_inputs(
        self, items: Iterable[NoteInput | Mapping[str, Any]], *, actor: str | Actor
    ) -> list[tuple[int, str]]:
        """What ``add_notes`` would refuse in ``items``: every wrong input's 1-based position and
        what is wrong with it (empty when all are right). Records nothing."""
        from amem.services.pipeline import checked_inputs

        return checked_inputs(self.settings, items, _actor(actor, ActorKind.AGENT))[1]

    def reprocess(self, *, limit: int | None = None, progress: Progress = no_progress) -> list[str]:
        """Retry analysis of raw logs left unprocessed (after an LLM outage, say). Returns note ids."""
        return self.pipeline.reprocess(limit=limit, progress=progress)

    def input_status(self, raw_log_id: str) -> InputStatus:
        """queued / processing / done (with the note id) / failed (with why) for an input's raw log id."""
        _check_id("input", raw_log_id)
        return self.queue.status(raw_log_id)

    def settled_listener(self) -> SettledListener | None:
        """On PostgreSQL, this process's one listener for inputs that settle (migration 0018), so a
        status request that waits reads the status when it changed; None on SQLite."""
        if self.ledger.dialect != "postgresql":
            return None
        from amem.ledger.settled import SettledListener

        return self._part("settled_listener", lambda: SettledListener(self.ledger.engine.url))

    def queue_depth(self) -> dict[str, int]:
        """Inputs waiting for a worker (queued), held by one (processing), and failed."""
        return self.queue.depth()

    def worker(self, *, batch_size: int | None = None, name: str = "worker") -> Worker:
        """A worker on this store's queue (``run_once``, ``drain``, ``run(stop_event)``)."""
        from amem.services.worker import DEFAULT_BATCH, Worker

        return Worker(self.pipeline, self.queue, batch_size=batch_size or DEFAULT_BATCH, name=name)

    def start_workers(self, concurrency: int = 1, *, batch_size: int | None = None) -> WorkerPool:
        """``concurrency`` workers in threads of this process, started; ``stop()`` them when done."""
        from amem.services.worker import WorkerPool

        self.pipeline  # noqa: B018  (build the heavy parts once, before the threads race for them)
        self.search_service  # noqa: B018
        pool = WorkerPool(lambda i: self.worker(batch_size=batch_size, name=f"worker{i}"), concurrency)
        with self._parts_lock:  # close() stops every pool it can see; one started after is refused
            if self._closing:
                self._check_open()
                raise MemoryClosedError("this Memory is closing: no worker starts now")
            self._pools.append(pool)
            return pool.start()

    def index_embedded(self) -> int | None:
        """Note documents this process's index embedded itself rather than loading their vectors
        from the ledger; None when it has not opened the index. A server's should stay near 0:
        the workers keep each new note's vector with it (bench/agents.py prints it)."""
        part: SearchService | None = self._parts.get("search_service")  # type: ignore[assignment]
        return part.sync.embedded if part is not None else None

    def unprocessed_count(self) -> int:
        """Raw logs kept but not yet turned into a note (analysis failed or was interrupted)."""
        from amem.domain.models import RawLogState

        with self.ledger.read() as tx:
            return len(tx.raw_log_states([RawLogState.FAILED, RawLogState.PENDING]))

    def update(
        self, note_id: str, *, actor: str | Actor, reason: str | None = None, **attributes: Any
    ) -> list[Proposal]:
        """An edit by an agent or a person: one proposal per attribute, routed by the policy, all
        recorded or none. ``actor``: a bare name is an agent's, as for add_note; a person's edit is
        said so (``person:NAME``, or an Actor of kind person: see ``_editor``)."""
        if not attributes:
            raise InvalidInputError("update() needs at least one attribute=value")
        who = _editor(actor)
        why = reason or f"edited by {who}"
        drafts = [Draft(note_id, name, value, why, Proposer.of(who)) for name, value in attributes.items()]
        return self.governance.propose_drafts(drafts)

    def delete(self, note_id: str, *, actor: str | Actor, reason: str) -> Proposal:
        """A recorded tombstone, routed by the policy (``deleted``): hidden from search, kept in history.
        ``actor`` as for ``update``."""
        who = _editor(actor)
        return self.governance.propose(note_id, "deleted", True, reason=reason, proposer=Proposer.of(who))

    # -- reading --------------------------------------------------------------------------------

    def read(self, note_id: str) -> Note:
        _check_id("note", note_id)
        with self.ledger.read() as tx:
            note = tx.get_note(note_id)
        if note is None:
            raise NotFoundError(f"note {note_id} does not exist")
        return note

    def notes(
        self, *, scope: str | None = None, limit: int = 100, offset: int = 0, include_deleted: bool = False
    ) -> list[Note]:
        _check_page(limit=limit, offset=offset)
        _check_texts(("scope", scope))
        with self.ledger.read() as tx:
            return tx.list_notes(scope=scope, limit=limit, offset=offset, include_deleted=include_deleted)

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        scope: str,
        tags: Sequence[str] | None = None,
        as_of: datetime | str | None = None,
        include_retired: bool = False,
    ) -> list[SearchResult]:
        """The ``k`` best notes of ``scope`` for ``query``; ``as_of`` (a datetime, exact, or ISO 8601
        text, the end of the day or second it names, as every interface reads it): the notes as they
        stood then."""
        _check_query(query, scope, tags)
        return self.search_service.search(
            query, k, scope=scope, tags=tags, as_of=_as_of(as_of), include_retired=include_retired
        )

    def search_agentic(
        self,
        query: str,
        k: int = 10,
        *,
        scope: str,
        tags: Sequence[str] | None = None,
        as_of: datetime | str | None = None,
        include_retired: bool = False,
    ) -> list[SearchResult]:
        _check_query(query, scope, tags)
        return self.search_service.search_agentic(
            query, k, scope=scope, tags=tags, as_of=_as_of(as_of), include_retired=include_retired
        )

    def count_notes(self, scope: str | None = None) -> int:
        _check_texts(("scope", scope))
        with self.ledger.read() as tx:
            return tx.count_notes(scope)

    def count_raw_logs(self) -> int:
        with self.ledger.read() as tx:
            return tx.count_raw_logs()

    def scopes(self) -> list[str]:
        """The scopes that hold notes."""
        with self.ledger.read() as tx:
            return tx.scopes()

    def scope_check(self, scope: str, *, visible: Callable[[str], bool] | None = None) -> ScopeCheck:
        """Whether an input was ever kept under ``scope`` and, if not, the scopes among those
        ``visible`` allows (None: all) it may mean: the one did-you-mean every interface gives
        (amem/services/scopes.py). Reads the scopes kept, not the notes."""
        from amem.services.scopes import check_scope

        _check_texts(("scope", scope))
        return check_scope(self.ledger, scope, visible)

    def reindex(self, *, progress: Progress = no_progress) -> int:
        """Rebuild the vector index from the ledger under the configured embedding model (the
        explicit step after a change of model). Returns the number of notes indexed."""
        with self._parts_lock:
            if "search_service" not in self._parts:
                from amem.index.chroma import IndexUnreadableError, remove_unreadable
                from amem.services.search import SearchService

                try:
                    service = SearchService.open(self.settings, self.ledger, reindex=True, progress=progress)
                except IndexUnreadableError as exc:  # a damaged database file: a new index in its place
                    if remove_unreadable(exc.path):
                        log.warning(
                            "the vector index at %s could not be read (%s): deleted it (it holds nothing "
                            "the ledger does not) and building a new one from the ledger",
                            exc.path,
                            exc.cause,
                        )
                    else:  # another reindex replaced it meanwhile: build beside that one
                        log.info("the vector index at %s was replaced by another process meanwhile", exc.path)
                    service = SearchService.open(self.settings, self.ledger, reindex=True, progress=progress)
                self._parts["search_service"] = service
                return service.index.count()
        return self.search_service.reindex(progress=progress)

    # -- governance -----------------------------------------------------------------------------

    def propose(
        self,
        note_id: str,
        attribute: str,
        new_value: Any,
        *,
        reason: str,
        proposer: Proposer | str | Actor,
        raw_log_ids: Sequence[str] = (),
        evidence: str | None = None,
    ) -> Proposal:
        """A new value for one attribute, routed by the policy. ``proposer`` as ``update``'s actor;
        a Proposer of amem's own (the model's, naming its recorded call) is checked by governance.
        ``raw_log_ids``: the note's scope's raw logs the value comes from."""
        if not isinstance(proposer, Proposer):
            proposer = Proposer.of(_editor(proposer, "proposer"))
        return self.governance.propose(
            note_id,
            attribute,
            new_value,
            reason=reason,
            proposer=proposer,
            raw_log_ids=raw_log_ids,
            evidence=evidence,
        )

    @property
    def authentication(self) -> Authentication:
        """Issues the AuthenticatedReviewer that approve / reject / revert require."""
        return Authentication(
            self.governance.policy, self.governance.policy_fingerprint, self._failed_sign_ins
        )

    def authenticate(self, reviewer: str, password: str) -> AuthenticatedReviewer:
        """A reviewer of the policy in force, proven by their password (bcrypt ``password_hash``)."""
        return self.authentication.with_password(reviewer, password)

    def authenticate_token(self, token: str) -> AuthenticatedReviewer:
        """A reviewer proven by a personal token they created (``amem tokens create NAME --role
        reviewer``, stored hashed in the ledger); an agent's token is refused: agents never decide."""
        from amem.errors import PermissionDeniedError
        from amem.services.tokens import TokenRole

        identity, role = self.tokens.authenticate_token(token)
        if role != TokenRole.REVIEWER:
            raise PermissionDeniedError(
                f"{identity} holds an agent's token: agents can never approve or reject"
            )
        return self.authentication.signed_in(identity, method="token")

    def install_policy(self, policy: Policy, *, by: AuthenticatedReviewer) -> tuple[PolicyVersion, bool]:
        """Record ``policy`` in the ledger as the policy in force from now on, by a policy admin
        (signed in under the installed policy; on the first install, under ``policy``). Returns the
        version in force and whether it is new. Processes opened before keep reading but must be
        started again to decide."""
        return policy_registry.install(self.ledger, policy, by)

    def installed_policy(self) -> PolicyVersion | None:
        """The newest policy installed in the ledger (None only on a ledger made before amem installed
        the creating process's policy)."""
        with self.ledger.read() as tx:
            return tx.installed_policy()

    def policy_versions(self) -> list[PolicyVersion]:
        with self.ledger.read() as tx:
            return tx.policy_versions()

    def approve(
        self, proposal_id: str, *, reviewer: AuthenticatedReviewer, comment: str | None = None
    ) -> Proposal:
        return self.governance.approve(proposal_id, reviewer, comment)

    def reject(self, proposal_id: str, *, reviewer: AuthenticatedReviewer, comment: str) -> Proposal:
        return self.governance.reject(proposal_id, reviewer, comment)

    def correct(
        self,
        proposal_id: str,
        value: Any,
        *,
        reviewer: AuthenticatedReviewer,
        comment: str | None = None,
    ) -> Correction:
        """Reject a held value and propose the reviewer's instead, from the same raw logs
        (``Governance.correct``): applied at once only where the policy lets them approve their own."""
        return self.governance.correct(proposal_id, value, reviewer, comment)

    # -- review items: one per input ---------------------------------------------------------------

    def review_items(
        self, f: ReviewFilter | None = None, *, limit: int = 20, offset: int = 0, reviewer: str | None = None
    ) -> ReviewPage:
        """Items waiting for review (all pending proposals one raw log caused), oldest input first;
        ``reviewer``: only in the scopes the policy lets them decide in."""
        _check_page(limit=limit, offset=offset)
        _check_review_filter(f, reviewer)
        return self.review.items(f, limit=limit, offset=offset, reviewer=reviewer)

    def review_item(self, key: str) -> ReviewItem:
        """The item of raw log ``key`` (or of a proposal without a raw log)."""
        _check_id("review item", key)
        return self.review.item(key)

    def decided_by(self, reviewer: str, *, limit: int = 8) -> list[Proposal]:
        """The proposals ``reviewer`` (an identity) decided last, newest first."""
        _check_texts(("reviewer", reviewer))
        return self.review.decided_by(reviewer, limit=limit)

    def second_looks(self, reviewer: str) -> int:
        """How many corrections by other reviewers wait for ``reviewer``'s second look."""
        _check_texts(("reviewer", reviewer))
        return self.review.second_looks(reviewer)

    def count_review_items(self, f: ReviewFilter | None = None, *, reviewer: str | None = None) -> MatchCount:
        _check_review_filter(f, reviewer)
        return self.review.count(f, reviewer=reviewer)

    def approve_item(
        self, key: str, *, reviewer: AuthenticatedReviewer, shown: Sequence[str], comment: str | None = None
    ) -> DecisionReport:
        """Approve the item's held values, if they are still the ones the reviewer was shown
        (``shown``: the item's ``proposal_ids`` as displayed); refused, nothing decided, if not."""
        _check_id("review item", key)
        return self.review.approve_item(key, reviewer, comment, shown=shown)

    def reject_item(
        self, key: str, *, reviewer: AuthenticatedReviewer, shown: Sequence[str], comment: str
    ) -> DecisionReport:
        _check_id("review item", key)
        return self.review.reject_item(key, reviewer, comment, shown=shown)

    def approve_matching(
        self,
        f: ReviewFilter,
        *,
        reviewer: AuthenticatedReviewer,
        expected_items: int,
        fingerprint: str,
        comment: str | None = None,
    ) -> DecisionReport:
        """Approve every pending proposal matching ``f``; refused, nothing decided, when the set
        differs from what ``count_review_items`` told the reviewer (``expected_items``,
        ``fingerprint``)."""
        return self.review.approve_matching(
            f, reviewer, expected_items=expected_items, fingerprint=fingerprint, comment=comment
        )

    def reject_matching(
        self,
        f: ReviewFilter,
        *,
        reviewer: AuthenticatedReviewer,
        expected_items: int,
        fingerprint: str,
        comment: str,
    ) -> DecisionReport:
        """Reject every pending proposal matching ``f``, saying why; refused, nothing decided, when
        the set differs from what ``count_review_items`` told the reviewer."""
        return self.review.reject_matching(
            f, reviewer, expected_items=expected_items, fingerprint=fingerprint, comment=comment
        )

    def facts(
        self,
        scope: str,
        *,
        limit: int = 50,
        offset: int = 0,
        include_retired: bool = False,
        as_of: datetime | str | None = None,
    ) -> FactPage:
        """The account's current facts, newest said first, with decisions and validity dates; with
        ``as_of``, the facts as the ledger stood then (each note rebuilt as of that moment)."""
        from amem.services.facts import facts

        _check_texts(("scope", scope))
        return facts(
            self.ledger,
            scope,
            limit=limit,
            offset=offset,
            include_retired=include_retired,
            as_of=_as_of(as_of),
        )

    def revert(
        self, change_seq: int, *, reviewer: AuthenticatedReviewer, reason: str | None = None
    ) -> Proposal:
        return self.governance.revert(change_seq, reviewer, reason)

    def history(self, note_id: str) -> list[HistoryEvent]:
        _check_id("note", note_id)
        return self.governance.history(note_id)

    def as_of(self, note_id: str, at: datetime | str) -> Note | None:
        _check_id("note", note_id)
        return self.governance.as_of(note_id, _as_of(at, "at"))

    def as_of_version(self, note_id: str, version: int) -> Note:
        """The note at its ``version`` (``Change.note_version``), whatever changes shared its moment."""
        _check_id("note", note_id)
        return self.governance.as_of_version(note_id, version)

    def llm_call(self, call_id: str) -> LlmCall:
        """The recorded model call behind a proposed value (``HistoryEvent.llm_call_id``)."""
        _check_id("model call", call_id)
        return self.governance.llm_call(call_id)

    def verify(
        self,
        *,
        checkpoints: str | os.PathLike[str] | None = None,
        public_key: str | os.PathLike[str] | None = None,
        progress: Progress = no_progress,
    ) -> VerifyResult:
        """Recompute both hash chains, compare every row with its event, replay every note; with
        ``checkpoints`` (a checkpoint log), also prove the ledger extends each signed statement, checked
        with ``public_key`` (default: the public half of AMEM_SIGNING_KEY or the store's key)."""
        if checkpoints is None:
            return self.governance.verify(progress=progress)
        from amem.services import checkpoints as cp
        from amem.services.integrity import verify_ledger

        statements = cp.read_checkpoints(Path(checkpoints))
        key = cp.load_public_key(Path(public_key) if public_key else cp.default_key_path(self.home))
        return verify_ledger(self.ledger, statements, key, progress=progress)

    def backup(
        self,
        dest: str | os.PathLike[str],
        *,
        checkpoints: str | os.PathLike[str] | None = None,
        public_key: str | os.PathLike[str] | None = None,
        progress: Progress = no_progress,
    ) -> BackupReport:
        """Copy the ledger to the new file ``dest`` in one consistent snapshot while others write
        (SQLite's online backup; pg_dump's custom format for PostgreSQL), then verify the copy,
        proving each statement of ``checkpoints`` against it (amem.services.backup). A copy that
        does not verify is kept, and its report says why."""
        from amem.services import backup
        from amem.services import checkpoints as cp

        statements = cp.read_checkpoints(Path(checkpoints)) if checkpoints else []
        key = None
        if checkpoints:
            key = cp.load_public_key(Path(public_key) if public_key else cp.default_key_path(self.home))
        return backup.back_up(
            self.ledger, Path(dest), checkpoints=statements, public_key=key, progress=progress
        )

    def erase(
        self,
        *,
        by: AuthenticatedReviewer,
        reason: str,
        raw_log_id: str | None = None,
        scope: str | None = None,
        actor: str | None = None,
        wait_s: float = 60.0,
        progress: Progress = no_progress,
    ) -> ErasureReport:
        """Erase on a data subject's request (amem.services.erasure), then rebuild the vector index from
        the redacted ledger and compact both, so the erased bytes leave the files too. ``wait_s``: how
        long the compaction waits for older PostgreSQL sessions that can still read the erased rows.
        ``progress``: told how the rebuild of the index goes (most of an erasure's time in a large
        store: 84 of 88 s at 100,000 notes, bench/README.md), and what that wait waits on.

        The index files written before the compaction are cleared of this process's stale memory
        (amem.index.hnsw_files), and this process's caches of texts are emptied
        (``text_caches.forget_texts``; other processes open on the ledger empty theirs at their next
        search or analysis, when their check finds the erasure); a segment Chroma creates later in a
        process that read the erased inputs could again carry some, which is why `amem erase` runs
        in a process of its own."""
        from amem.services import erasure
        from amem.services.text_caches import forget_texts

        who = self.governance.person(by)
        report = erasure.erase(
            self.ledger,
            self.policy,
            by=who.id,
            reason=reason,
            raw_log_id=raw_log_id,
            scope=scope,
            actor=actor,
            governance=self.governance,
        )
        forget_texts()  # what this process cached of the erased texts goes too
        try:  # a search service never built holds no hit rows: none is opened for it
            if "search_service" in self._parts:
                self.search_service.hit_rows.clear()
            self.reindex(progress=progress)
        finally:  # the erased rows leave the ledger's files even when the index could not be rebuilt
            kept = self.ledger.compact(wait_s=wait_s, progress=progress)
        unchecked = self.search_service.index.compact()
        return report.model_copy(
            update={
                "older_sessions_open": kept.older_sessions,
                "replication_slots_holding": list(kept.replication_slots),
                "tables_not_compacted": list(kept.tables_not_compacted),
                "index_segments_unchecked": unchecked,
            }
        )

    def count_erasable(
        self, *, raw_log_id: str | None = None, scope: str | None = None, actor: str | None = None
    ) -> int:
        """The raw logs ``erase`` with the same selector would erase."""
        from amem.services import erasure

        _check_texts(("raw log", raw_log_id), ("scope", scope), ("actor", actor))
        return erasure.matching(self.ledger, raw_log_id=raw_log_id, scope=scope, actor=actor)

    def erasure_plan(
        self,
        *,
        by: AuthenticatedReviewer,
        raw_log_id: str | None = None,
        scope: str | None = None,
        actor: str | None = None,
    ) -> ErasurePlan:
        """What ``erase`` with the same selector would take (raw logs, the scopes it reaches), after
        the checks ``erase`` makes of ``by``: one who may not erase all of it is refused here, before
        `amem erase` asks anything (``erase`` checks again)."""
        from amem.services import erasure

        _check_texts(("raw log", raw_log_id), ("scope", scope), ("actor", actor))
        who = self.governance.person(by)
        return erasure.plan(
            self.ledger, self.policy, by=who.id, raw_log_id=raw_log_id, scope=scope, actor=actor
        )

    def scope_spellings(self, names: Sequence[str]) -> dict[str, list[str]]:
        """Each of ``names`` with the scopes it names whatever its case, as ``erase`` by scope reaches
        them: what `amem erase --scope` names before it asks."""
        from amem.services import erasure

        return erasure.scope_spellings(self.ledger, list(names))

    def new_scope_variants(self, names: Sequence[str]) -> dict[str, list[str]]:
        """Of the scopes of inputs about to be recorded, each new one that equals another whatever
        its case, with those spellings (``erasure.new_case_variants``): one read, for a warning; the
        names are compared, never queried, so none is refused here (recording them checks them)."""
        from amem.services import erasure

        return erasure.new_case_variants(self.ledger, list(names))

    def checkpoint(
        self, *, key: str | os.PathLike[str] | None = None, log: str | os.PathLike[str] | None = None
    ) -> dict[str, Any]:
        """Sign the chains' heads now and append the statement to the checkpoint log (outside the ledger).

        ``key``: default AMEM_SIGNING_KEY or the store's key; ``log``: default AMEM_CHECKPOINT_LOG or
        checkpoints.jsonl in the store directory."""
        from amem.services import checkpoints as cp

        key_path = Path(key) if key else cp.default_key_path(self.home)
        log_path = Path(log) if log else cp.default_log_path(self.home)
        return cp.write_checkpoint(self.ledger, key_path, log_path)

    def proposal(self, proposal_id: str) -> Proposal:
        _check_id("proposal", proposal_id)
        with self.ledger.read() as tx:
            p = tx.get_proposal(proposal_id)
        if p is None:
            raise NotFoundError(f"proposal {proposal_id} does not exist")
        return p

    def proposals(
        self, f: ProposalFilter | None = None, *, limit: int = 50, offset: int = 0
    ) -> list[Proposal]:
        _check_page(limit=limit, offset=offset)
        _check_proposal_filter(f)
        with self.ledger.read() as tx:
            return tx.list_proposals(f or ProposalFilter(), limit=limit, offset=offset)

    def count_proposals(self, f: ProposalFilter | None = None) -> int:
        _check_proposal_filter(f)
        with self.ledger.read() as tx:
            return tx.count_proposals(f or ProposalFilter())

    def pending(self, *, limit: int = 50, offset: int = 0, **filters: Any) -> list[Proposal]:
        f = ProposalFilter(status=[ProposalStatus.PENDING.value], **filters)
        return self.proposals(f, limit=limit, offset=offset)

    def export(
        self,
        kind: str,
        *,
        scope: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every row of ``kind`` (``changes`` with their chain hashes, ``proposals`` and ``raw_logs``
        with their own event's seq and hash, ``events``: the event chain, ``erasures``: each row an
        erasure redacted, with its digests and the erasure's record), oldest first, streamed page
        by page from one consistent read (amem/services/export.py)."""
        from amem.services.export import iter_export

        _check_texts(("scope", scope))
        start, end = _moment(since, "since"), _moment(until, "until")
        _check_range(start, end)
        return iter_export(self.ledger, kind, scope=scope, since=start, until=end)

    def change_feed(
        self, *, after: int = 0, scopes: Sequence[str] | None = None, limit: int = 100
    ) -> ChangeFeed:
        """Applied changes after change ``after``, oldest first, in ``scopes`` (None: all): what a
        CRM or an agent polls to learn each value as it lands (``next_after`` for the next poll)."""
        from amem.services.export import change_feed

        return change_feed(self.ledger, after=after, scopes=scopes, limit=limit)

    def changes(
        self, f: ChangeFilter | None = None, *, limit: int = 100, offset: int = 0, newest_first: bool = False
    ) -> list[Change]:
        _check_page(limit=limit, offset=offset)
        if f is not None:
            _check_texts(("note", f.note_id), ("attribute", f.attribute), ("actor", f.actor))
        with self.ledger.read() as tx:
            return tx.list_changes(f or ChangeFilter(), limit=limit, offset=offset, newest_first=newest_first)

    # == read models for the interfaces ===========================================================
    # The CLI, the console and the APIs read through these (and the methods above), never through
    # ``self.ledger``: tests/test_layers.py fails on an interface module that touches the ledger.
    # Each delegates to the one service function that answers its question.

    def count_pending(self, scope: str | None = None) -> int:
        """Proposals waiting for a reviewer, in ``scope`` or in all."""
        return self.count_proposals(ProposalFilter(status=[ProposalStatus.PENDING.value], scope=scope))

    def note_versions(self, note_id: str, *, limit: int = 10_000) -> list[Change]:
        """The changes applied to a note, oldest first: one per version it went through."""
        _check_id("note", note_id)
        return self.changes(ChangeFilter(note_id=note_id), limit=limit)

    def notes_by_id(self, ids: Iterable[str]) -> dict[str, Note]:
        """The notes of ``ids`` that exist, by id (one query)."""
        from amem.services import audit

        return audit.notes_by_id(self.ledger, _findable(ids))

    def raw_logs(self, ids: Sequence[str]) -> list[RawLog]:
        """The raw logs of ``ids`` that exist (a note's sources, say)."""
        from amem.services import audit

        return audit.raw_logs(self.ledger, _findable(ids))

    def find_notes(
        self,
        *,
        scope: str | None,
        text: str | None = None,
        include_deleted: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> NotePage:
        """Notes of ``scope`` whose content contains ``text`` (no index needed), newest change first,
        with the number that match."""
        from amem.services import audit

        _check_page(limit=limit, offset=offset)
        _check_texts(("scope", scope), ("text", text))
        return audit.find_notes(
            self.ledger, scope=scope, text=text, include_deleted=include_deleted, limit=limit, offset=offset
        )

    def incoming_links(self, note: Note) -> list[IncomingLink]:
        """The notes whose links point at ``note``, with each link's reason."""
        from amem.services import audit

        return audit.incoming_links(self.ledger, note)

    def review_choices(self) -> dict[str, list[str]]:
        """The scopes, attributes and proposers among pending proposals: the review queue's filters."""
        from amem.services import audit

        return audit.pending_choices(self.ledger)

    def audit_events(
        self, query: AuditQuery, *, limit: int = 100, offset: int = 0, newest_first: bool = True
    ) -> list[AuditEvent]:
        """A page of the audit trail (proposals made, decisions taken, changes applied) matching ``query``."""
        from amem.services import audit

        _check_page(limit=limit, offset=offset)
        _check_audit_query(query)
        return audit.audit_events(self.ledger, query, limit=limit, offset=offset, newest_first=newest_first)

    def count_audit_events(self, query: AuditQuery) -> int:
        from amem.services import audit

        _check_audit_query(query)
        return audit.count_audit_events(self.ledger, query)

    def erasures(self) -> list[ErasureRecord]:
        """Every erasure, newest first: who, when, why, what was asked and the rows redacted."""
        from amem.services import audit

        return audit.erasures(self.ledger)

    def audit_actors(self) -> list[str]:
        """Who appears in the audit trail: changed, proposed or decided something."""
        from amem.services import audit

        return audit.audit_actors(self.ledger)

    def export_audit_csv(self, query: AuditQuery) -> bytes:
        """The trail matching ``query`` as CSV (formula-safe cells, UTF-8 with BOM)."""
        from amem.services import audit

        _check_audit_query(query)
        return audit.export_csv(self.ledger, query)

    def export_audit_jsonl(self, query: AuditQuery) -> bytes:
        """The trail matching ``query`` as JSON Lines, exact values."""
        from amem.services import audit

        _check_audit_query(query)
        return audit.export_jsonl(self.ledger, query)

    def proposals_per_day(self, *, days: int = 30) -> list[DayCount]:
        """Proposals made in the last ``days`` days, per day and status now."""
        from amem.services import audit

        return audit.proposals_per_day(self.ledger, days=days)

    def review_verdicts(self, *, days: int = 30) -> ReviewVerdicts:
        """Per attribute and per model: what reviewers approved, corrected or rejected in the last
        ``days`` days, and what waits now."""
        from amem.services import audit

        return audit.verdicts(self.ledger, days=days)

    def review_times(self, *, days: int = 30) -> ReviewTimes:
        """How long the proposals reviewers decided in the last ``days`` days had waited."""
        from amem.services import audit

        return audit.review_times(self.ledger, days=days)

    def policy_overview(self) -> PolicyOverview:
        """The policy in force, readable: each attribute's mode, narrowing rules and approver roles."""
        from amem.services import audit

        return audit.policy_overview(self.policy)

    # == end of read models for the interfaces ====================================================


def _check_query(query: str, scope: str, tags: Sequence[str] | None) -> None:
    """The same answer on both backends for text PostgreSQL cannot hold (a NUL, a lone surrogate)."""
    listed = tags if isinstance(tags, list | tuple) else ()  # not a list: the service says so
    for what, value in (("query", query), ("scope", scope), *(("tag", t) for t in listed)):
        if isinstance(value, str):
            check_text(value, what)


def _check_texts(*named: tuple[str, object]) -> None:
    """Each ``(what, value)`` given as text, checked as ``_check_query`` checks a search's: the same
    answer on both backends instead of PostgreSQL's refusal of the statement (a traceback)."""
    for what, value in named:
        if isinstance(value, str):
            check_text(value, what)


#: The largest page size or start a read takes (PostgreSQL's LIMIT and OFFSET are 64-bit).
MAX_PAGE = 2**62


def _check_page(**named: object) -> None:
    """A page's ``limit`` and ``offset``, refused alike on both backends: PostgreSQL refused a
    negative one in the statement itself (a traceback with the SQL) where SQLite read -1 as "no
    limit" and returned every row."""
    for what, value in named.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_PAGE:
            raise InvalidInputError(f"{what} must be a whole number from 0 to {MAX_PAGE:,}, not {value!r}")


def _check_id(what: str, value: object) -> None:
    """An id no row can have (a NUL, a lone surrogate) is answered as one that does not exist, on
    both backends: PostgreSQL would refuse the query itself."""
    problem = text_problem(value) if isinstance(value, str) else None
    if problem is not None:
        shown = str(value).encode("unicode_escape").decode("ascii")
        raise NotFoundError(f"{what} {shown} does not exist ({problem})")


def _findable(ids: Iterable[str]) -> list[str]:
    """``ids`` less those no row can have (``_check_id``): a look-up of several finds the others."""
    return [i for i in ids if not isinstance(i, str) or text_problem(i) is None]


def _check_proposal_filter(f: ProposalFilter | None) -> None:
    if f is None:
        return
    _check_texts(
        ("scope", f.scope),
        ("attribute", f.attribute),
        ("proposer", f.proposer),
        ("note", f.note_id),
        *(("status", s) for s in f.status or ()),
        *(("scope", s) for s in f.scopes or ()),
    )


def _check_review_filter(f: ReviewFilter | None, reviewer: str | None) -> None:
    named: list[tuple[str, object]] = [("reviewer", reviewer)]
    if f is not None:
        named += [("scope", f.scope), ("attribute", f.attribute), ("kind", f.kind), ("proposer", f.proposer)]
        named += [("scope", s) for s in f.within or ()]
    _check_texts(*named)


def _check_audit_query(query: AuditQuery) -> None:
    """The audit trail's filters, checked like any text a query carries."""
    _check_texts(
        ("note", query.note_id),
        ("attribute", query.attribute),
        ("actor", query.actor),
        *(("status", s) for s in query.statuses),
        *(("kind", k) for k in query.kinds),
    )
    _check_range(query.since, query.until)


def _check_range(since: datetime | None, until: datetime | None) -> None:
    """Refuse a time range that holds no moment (``until`` at or before ``since``: the two swapped),
    which would answer an empty export as if nothing had happened then."""
    if since is not None and until is not None and until <= since:
        raise InvalidInputError(
            f"until ({until.isoformat()}) is not after since ({since.isoformat()}): the range holds no "
            "moment; give the earlier time as since"
        )


def _moment(value: datetime | str | None, what: str = "as_of") -> datetime | None:
    """A time given as a datetime or ISO 8601 text (as add_note's ``at``), in UTC; a bad one is
    refused naming ``what`` was given."""
    if value is None:
        return None
    from amem.domain.values import parse_datetime

    return parse_datetime(value, what=what)


def _as_of(value: datetime | str | None, what: str = "as_of") -> datetime | None:
    """An "as of" moment: a datetime exact, ISO 8601 text the end of the period it names (a date
    its whole UTC day, a time its second: ``values.parse_as_of``), as the CLI, the APIs and the
    console read it, so a program and a person asking "as of 2026-06-01" get one answer."""
    if value is None:
        return None
    from amem.domain.values import parse_as_of

    return parse_as_of(value, what=what)


def _actor(value: str | Actor, default_kind: ActorKind) -> Actor:
    """Who acts, in canonical form (amem.domain.identity), however the caller spelled the name."""
    if isinstance(value, Actor):
        return Actor(kind=value.kind, id=canonical_identity(value.id, what="actor"))
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"actor must be text (agent:NAME) or an Actor, not {type(value).__name__}")
    if not value or not str(value).strip():
        raise InvalidInputError("an actor is required (e.g. agent:sales-bot or a person's name)")
    return Actor.parse(str(value).strip(), default_kind)


def _editor(value: str | Actor, what: str = "actor") -> Actor:
    """Who edits through the library. A bare name is an agent's, as add_note reads it: the library
    signs no one in, and a policy may apply a person's edits without review (``proposer_kinds``),
    so a name alone never gets a person's routing. ``person:NAME`` (or an Actor of kind person) is
    the in-process caller's own claim, trusted as any code holding the ledger's credentials is
    (README, "What this is not"); governance refuses it for a name the policy lists as an agent.
    What the model proposes and what amem does itself are recorded by amem, never given."""
    who = _actor(value, ActorKind.AGENT)
    if who.kind in (ActorKind.LLM, ActorKind.SYSTEM):
        raise InvalidInputError(
            f"{what} {who}: edit as agent:NAME or as person:NAME, not as {who.kind.value}: "
            "(amem records what the model proposes, with its model call, and what it does itself)"
        )
    return who


def require_store(settings: Settings) -> None:
    """Refuse a store that does not exist, creating nothing, for what must only read or decide
    (search, facts, export, the console, ...): opening a SQLite file that is not there would leave
    an empty one and say it has "no amem schema". The store chosen by its directory is looked for
    there; a ledger URL given (AMEM_DATABASE_URL, --database-url) naming a SQLite file, at that
    file. A server database is checked when opened (its schema)."""
    if not settings.database_url_override:
        if (settings.home / "ledger.sqlite3").exists():
            return
        make = {
            HOME_FROM_OPTION: f"`amem --home {shlex.quote(str(settings.home))} init` makes it there",
            HOME_FROM_ENV: "`amem init` makes it there",
        }.get(settings.home_source, "`amem init` makes one in this directory")
        raise ConfigError(
            f"no amem store at {settings.home.resolve()} ({settings.home_source}): `amem add` creates it, "
            f"{make}; `amem where` says how the store is chosen"
        )
    missing = missing_sqlite_file(settings.database_url_override)
    if missing is not None:
        raise ConfigError(
            f"no amem ledger at {missing}, the SQLite file AMEM_DATABASE_URL or --database-url names: "
            "nothing was created; `amem init` with that URL makes the store (check the URL first: "
            "`amem where` says which store is used)"
        )


def missing_sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names, when it does not exist; None for another database, an
    in-memory one, or a URL SQLAlchemy cannot read (opening it says what is wrong)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if str(parsed.query.get("uri", "")).lower() in ("true", "1"):  # file:PATH?mode=...: sqlite reads it
        return None
    path = Path(database)  # as SQLite reads it: relative to the working directory, no ~
    return None if path.exists() else path.resolve()
