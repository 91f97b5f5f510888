"""Memory: the facade agents, the CLI and the console use. Wiring only, no logic of its own.

Heavy parts (litellm, chromadb, the embedding model) are built on first use, so reading the
ledger, deciding proposals or verifying the chain never imports them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from amem.config import Settings
from amem.domain.models import (
    Actor,
    ActorKind,
    AddOutcome,
    Change,
    Note,
    NoteInput,
    Proposal,
    ProposalStatus,
    Proposer,
)
from amem.errors import InvalidBatchInputError, InvalidInputError, NotFoundError
from amem.ledger.store import ChangeFilter, Ledger, ProposalFilter
from amem.policy import Policy, load_policy
from amem.services.governance import DecisionReport, Draft, Governance, HistoryEvent, VerifyResult
from amem.services.review import MatchCount, ReviewFilter, ReviewItem, ReviewPage, ReviewService

if TYPE_CHECKING:
    from amem.llm.base import Analyst
    from amem.services.facts import FactPage
    from amem.services.pipeline import WritePipeline
    from amem.services.search import SearchResult, SearchService

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

_Part = TypeVar("_Part")


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
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self.policy = policy if isinstance(policy, Policy) else load_policy(self.settings.policy_path)
        self.ledger = Ledger(self.settings.database_url, create_if_empty=create)
        self.governance = Governance(self.ledger, self.policy)
        self.review = ReviewService(self.ledger, self.policy, self.governance)
        self._parts: dict[str, object] = {}
        # The console shares one Memory between its sessions' threads: each heavy part must be
        # built once (functools.cached_property stopped locking in Python 3.12).
        self._parts_lock = threading.RLock()

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        if "search_service" in self._parts:
            self.search_service.close()
        self.ledger.close()

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
    def pipeline(self) -> WritePipeline:
        def build() -> WritePipeline:
            from amem.services.pipeline import WritePipeline

            return WritePipeline(
                settings=self.settings,
                ledger=self.ledger,
                governance=self.governance,
                analyst=self.analyst,
                neighbours=self.search_service,
                index=self.search_service,
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
    ) -> str:
        """Keep ``content`` as a raw log, then build, link and evolve a note from it. Returns the note id.

        The raw log is committed before any model call; if analysis fails the raw log stays,
        marked unprocessed, and ``reprocess()`` completes it later.
        """
        return self.pipeline.add_note(
            content, at=at, actor=_actor(actor, ActorKind.AGENT), scope=scope, metadata=metadata
        )

    def add_notes(
        self,
        items: Iterable[NoteInput | Mapping[str, Any]],
        *,
        actor: str | Actor,
        batch_size: int = 64,
    ) -> list[AddOutcome]:
        """add_note for many inputs (an import of past conversations, a CRM export), in order.

        Every input is checked before anything is recorded; a bad one is named by its position.
        Then all raw logs are committed, and each batch of ``batch_size`` is analysed, embedded in
        one call and written in one transaction. An input whose analysis fails keeps its raw log
        and comes back with ``note_id=None`` and the error; ``reprocess()`` completes it later.
        Within a batch, a note's neighbours include the batch's earlier notes of its scope.
        """
        inputs: list[NoteInput] = []
        for i, item in enumerate(items):
            try:
                inputs.append(item if isinstance(item, NoteInput) else NoteInput.model_validate(item))
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
                )
                raise InvalidBatchInputError(i + 1, problems) from None
        return self.pipeline.add_notes(inputs, actor=_actor(actor, ActorKind.AGENT), batch_size=batch_size)

    def reprocess(self, *, limit: int | None = None) -> list[str]:
        """Retry analysis of raw logs left unprocessed (after an LLM outage, say). Returns note ids."""
        return self.pipeline.reprocess(limit=limit)

    def unprocessed_count(self) -> int:
        """Raw logs kept but not yet turned into a note (analysis failed or was interrupted)."""
        from amem.domain.models import RawLogState

        with self.ledger.read() as tx:
            return len(tx.raw_log_states([RawLogState.FAILED, RawLogState.PENDING]))

    def update(
        self, note_id: str, *, actor: str | Actor, reason: str | None = None, **attributes: Any
    ) -> list[Proposal]:
        """An edit by a person or an agent: one proposal per attribute, routed by the policy."""
        if not attributes:
            raise InvalidInputError("update() needs at least one attribute=value")
        who = _actor(actor, ActorKind.PERSON)
        why = reason or f"edited by {who}"
        drafts = [Draft(note_id, name, value, why, Proposer.of(who)) for name, value in attributes.items()]
        with self.ledger.write() as tx:
            return self.governance.propose_in(tx, drafts)

    def delete(self, note_id: str, *, actor: str | Actor, reason: str) -> Proposal:
        """A recorded tombstone, routed by the policy (``deleted``): hidden from search, kept in history."""
        who = _actor(actor, ActorKind.PERSON)
        return self.governance.propose(note_id, "deleted", True, reason=reason, proposer=Proposer.of(who))

    # -- reading --------------------------------------------------------------------------------

    def read(self, note_id: str) -> Note:
        with self.ledger.read() as tx:
            note = tx.get_note(note_id)
        if note is None:
            raise NotFoundError(f"note {note_id} does not exist")
        return note

    def notes(
        self, *, scope: str | None = None, limit: int = 100, offset: int = 0, include_deleted: bool = False
    ) -> list[Note]:
        with self.ledger.read() as tx:
            return tx.list_notes(scope=scope, limit=limit, offset=offset, include_deleted=include_deleted)

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        scope: str,
        tags: Sequence[str] | None = None,
        as_of: datetime | None = None,
        include_retired: bool = False,
    ) -> list[SearchResult]:
        return self.search_service.search(
            query, k, scope=scope, tags=tags, as_of=as_of, include_retired=include_retired
        )

    def search_agentic(
        self,
        query: str,
        k: int = 10,
        *,
        scope: str,
        tags: Sequence[str] | None = None,
        as_of: datetime | None = None,
        include_retired: bool = False,
    ) -> list[SearchResult]:
        return self.search_service.search_agentic(
            query, k, scope=scope, tags=tags, as_of=as_of, include_retired=include_retired
        )

    def reindex(self) -> int:
        """Rebuild the vector index from the ledger under the configured embedding model (the
        explicit step after a change of model). Returns the number of notes indexed."""
        with self._parts_lock:
            if "search_service" not in self._parts:
                from amem.services.search import SearchService

                service = SearchService.open(self.settings, self.ledger, reindex=True)
                self._parts["search_service"] = service
                return service.index.count()
        return self.search_service.reindex()

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
        if not isinstance(proposer, Proposer):
            proposer = Proposer.of(_actor(proposer, ActorKind.PERSON))
        return self.governance.propose(
            note_id,
            attribute,
            new_value,
            reason=reason,
            proposer=proposer,
            raw_log_ids=raw_log_ids,
            evidence=evidence,
        )

    def approve(self, proposal_id: str, *, reviewer: str | Actor, comment: str | None = None) -> Proposal:
        return self.governance.approve(proposal_id, reviewer, comment)

    def reject(self, proposal_id: str, *, reviewer: str | Actor, comment: str) -> Proposal:
        return self.governance.reject(proposal_id, reviewer, comment)

    # -- review items: one per input ---------------------------------------------------------------

    def review_items(self, f: ReviewFilter | None = None, *, limit: int = 20, offset: int = 0) -> ReviewPage:
        """Items waiting for review (all pending proposals one raw log caused), oldest input first."""
        return self.review.items(f, limit=limit, offset=offset)

    def review_item(self, key: str) -> ReviewItem:
        """The item of raw log ``key`` (or of a proposal without a raw log)."""
        return self.review.item(key)

    def count_review_items(self, f: ReviewFilter | None = None) -> MatchCount:
        return self.review.count(f)

    def approve_item(self, key: str, *, reviewer: str | Actor, comment: str | None = None) -> DecisionReport:
        return self.review.approve_item(key, reviewer, comment)

    def reject_item(self, key: str, *, reviewer: str | Actor, comment: str) -> DecisionReport:
        return self.review.reject_item(key, reviewer, comment)

    def approve_matching(
        self,
        f: ReviewFilter,
        *,
        reviewer: str | Actor,
        expected_items: int,
        fingerprint: str | None = None,
        comment: str | None = None,
    ) -> DecisionReport:
        """Approve every pending proposal matching ``f``; refused, nothing decided, when the set
        differs from what ``count_review_items`` told the reviewer (``expected_items``,
        ``fingerprint``)."""
        return self.review.approve_matching(
            f, reviewer, expected_items=expected_items, fingerprint=fingerprint, comment=comment
        )

    def facts(
        self, scope: str, *, limit: int = 50, offset: int = 0, include_retired: bool = False
    ) -> FactPage:
        """The account's current facts, newest said first, with decisions and validity dates."""
        from amem.services.facts import facts

        return facts(self.ledger, scope, limit=limit, offset=offset, include_retired=include_retired)

    def revert(self, change_seq: int, *, actor: str | Actor, reason: str | None = None) -> Proposal:
        return self.governance.revert(change_seq, _actor(actor, ActorKind.PERSON), reason)

    def history(self, note_id: str) -> list[HistoryEvent]:
        return self.governance.history(note_id)

    def as_of(self, note_id: str, at: datetime) -> Note | None:
        return self.governance.as_of(note_id, at)

    def verify(self) -> VerifyResult:
        return self.governance.verify()

    def proposal(self, proposal_id: str) -> Proposal:
        with self.ledger.read() as tx:
            p = tx.get_proposal(proposal_id)
        if p is None:
            raise NotFoundError(f"proposal {proposal_id} does not exist")
        return p

    def proposals(
        self, f: ProposalFilter | None = None, *, limit: int = 50, offset: int = 0
    ) -> list[Proposal]:
        with self.ledger.read() as tx:
            return tx.list_proposals(f or ProposalFilter(), limit=limit, offset=offset)

    def count_proposals(self, f: ProposalFilter | None = None) -> int:
        with self.ledger.read() as tx:
            return tx.count_proposals(f or ProposalFilter())

    def pending(self, *, limit: int = 50, offset: int = 0, **filters: Any) -> list[Proposal]:
        f = ProposalFilter(status=[ProposalStatus.PENDING.value], **filters)
        return self.proposals(f, limit=limit, offset=offset)

    def changes(
        self, f: ChangeFilter | None = None, *, limit: int = 100, offset: int = 0, newest_first: bool = False
    ) -> list[Change]:
        with self.ledger.read() as tx:
            return tx.list_changes(f or ChangeFilter(), limit=limit, offset=offset, newest_first=newest_first)


def _actor(value: str | Actor, default_kind: ActorKind) -> Actor:
    if isinstance(value, Actor):
        return value
    if not value or not str(value).strip():
        raise InvalidInputError("an actor is required (e.g. agent:sales-bot or a person's name)")
    return Actor.parse(str(value).strip(), default_kind)
