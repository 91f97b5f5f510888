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
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from amem.config import Settings
from amem.domain.hashing import sha256_text
from amem.domain.models import (
    Actor,
    ActorKind,
    AddOutcome,
    Note,
    NoteInput,
    ProposalStatus,
    Proposer,
    RawLog,
    RawLogState,
    as_utc,
    new_id,
    utcnow,
)
from amem.domain.progress import Progress, no_progress
from amem.domain.text import check_json, check_text, is_visible
from amem.domain.values import current_value, normalize, parse_datetime
from amem.errors import AmemError, AnalysisPendingError, InvalidBatchInputError, InvalidInputError
from amem.index.base import NeighbourFinder
from amem.ledger.store import Ledger, LedgerTx
from amem.llm.base import Analyst, AnalystError, TaskResult
from amem.policy import Mode
from amem.services.governance import Draft, Governance
from amem.services.queue import InputQueue, Lease, owner_id

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The step add_notes and reprocess report progress on.
ANALYSING = "analysing raw logs"
#: Construct-step attributes proposed for the new note, in this order.
CONSTRUCTED = ("keywords", "tags", "context", "category", "decision_rationale", "valid_at")
#: Raw logs analysed, embedded and written together by add_notes and reprocess.
BATCH = 64
#: Attributes the evolution step may propose for neighbours.
EVOLVABLE = ("context", "tags", "keywords", "decision_rationale")


class IndexCatchUp(Protocol):
    def catch_up(self) -> int: ...

    def keep_vectors(self, tx: LedgerTx, note_ids: Sequence[str]) -> int: ...


@dataclass(frozen=True)
class Analysis:
    """Everything the analyst said about one raw log, before anything is written."""

    note_id: str
    construct: TaskResult
    link: TaskResult
    neighbours: list[Note]


class WritePipeline:
    def __init__(
        self,
        *,
        settings: Settings,
        ledger: Ledger,
        governance: Governance,
        analyst: Analyst,
        neighbours: NeighbourFinder,
        index: IndexCatchUp | None = None,
        queue: InputQueue | None = None,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.governance = governance
        self.policy = governance.policy
        self.analyst = analyst
        self.neighbours = neighbours
        self.index = index
        self.queue = queue or InputQueue(ledger, lease_seconds=settings.worker_lease_seconds)

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
    ) -> list[AddOutcome]:
        """add_note for many inputs: every input is checked first (a bad one names its position and
        nothing is recorded), all raw logs are committed in one transaction, then each batch is
        analysed, embedded, written in one transaction and indexed at once.

        Within a batch, a note's neighbours are the notes stored before the batch and the batch's
        earlier notes of its scope (those by vector similarity only), as they stood before the
        batch: one note's evolution of a neighbour is not yet seen by the next note's link step."""
        if batch_size < 1:
            raise InvalidInputError(f"batch_size must be at least 1, got {batch_size}")
        raws: list[RawLog] = []
        for i, item in enumerate(items):
            try:
                raws.append(
                    self._raw_log(
                        item.content, at=item.at, actor=actor, scope=item.scope, metadata=item.metadata
                    )
                )
            except InvalidInputError as exc:
                raise InvalidBatchInputError(i + 1, str(exc)) from exc
        if not raws:
            return []
        lease = self.queue.lease()
        self.queue.enqueue(raws, lease)
        return self.process_many(raws, batch_size=batch_size, owner=lease.owner, progress=progress)

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
        else a batch in one."""
        outcomes: list[AddOutcome] = []
        progress(ANALYSING, 0, len(raws))
        for start in range(0, len(raws), batch_size):
            if owner is not None and start > 0:  # a long import: keep holding what is left
                self.queue.renew(owner, [r.id for r in raws[start:]])
            outcomes += self._process_batch(raws[start : start + batch_size], owner, commit_each)
            progress(ANALYSING, len(outcomes), len(raws))
        return outcomes

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

    def _process_batch(
        self, raws: Sequence[RawLog], owner: str | None = None, commit_each: bool = False
    ) -> list[AddOutcome]:
        """Construct each note, find all neighbours (one embedding call), link and evolve each,
        then write every analysed note in one transaction and index them in one catch-up."""
        errors: dict[str, str] = {}
        drafts: dict[str, tuple[TaskResult, Note]] = {}
        declared = self.policy.declared_attributes()
        constructed_all = self._calls(lambda r: self.analyst.construct(r, declared), raws)
        for raw, constructed in zip(raws, constructed_all, strict=True):
            if isinstance(constructed, AnalystError):
                errors[raw.id] = self._failed(raw, constructed, constructed.calls, owner)
                continue
            drafts[raw.id] = (constructed, self._draft_note(raw, constructed))
        ready = [raw for raw in raws if raw.id in drafts]
        asks = [(self._as_applied(drafts[r.id][1]), _neighbour_query(drafts[r.id][1])) for r in ready]
        found = self.neighbours.nearest_many(asks, self.settings.link_k)
        shown = [
            [n for n in neighbours if n.scope == raw.scope and not n.deleted][: self.settings.link_k]
            for raw, neighbours in zip(ready, found, strict=True)
        ]
        linked_all = self._calls(
            lambda i: self.analyst.link_and_evolve(drafts[ready[i].id][1], ready[i], shown[i]),
            range(len(ready)),
        )
        analyses: list[tuple[RawLog, Analysis]] = []
        for raw, neighbours, linked in zip(ready, shown, linked_all, strict=True):
            constructed, draft = drafts[raw.id]
            if isinstance(linked, AnalystError):
                errors[raw.id] = self._failed(raw, linked, [*_attempts(constructed), *linked.calls], owner)
                continue
            analyses.append((raw, Analysis(draft.id, constructed, linked, neighbours)))
        note_ids: dict[str, str] = {}
        if analyses:
            # A worker commits note by note: the writer lock (SQLite) or the chain head (PostgreSQL)
            # is then never held for a whole batch, so acknowledging new inputs does not wait on it.
            for group in [[a] for a in analyses] if commit_each else [analyses]:
                with self.ledger.write() as tx:
                    for raw, analysis in group:
                        if owner is not None and not self.queue.holds(tx, raw.id, owner):
                            errors[raw.id] = _taken_over(raw.id)  # its lease ended and another took it
                            continue
                        note_ids[raw.id] = self._apply(tx, raw, analysis)
                    if self.index is not None:  # with the notes, so no other process embeds them again
                        self.index.keep_vectors(tx, [note_ids[r.id] for r, _ in group if r.id in note_ids])
            self._catch_up_index()
        return [AddOutcome(raw_log_id=r.id, note_id=note_ids.get(r.id), error=errors.get(r.id)) for r in raws]

    def _calls(self, task: Callable[[T], TaskResult], items: Sequence[T]) -> list[TaskResult | AnalystError]:
        """``task`` for each item, in order, each failure in its place. With a remote model, up to
        ``llm_concurrency`` run at once: a batch waits about as long as its slowest calls, not
        their sum. Nothing is written meanwhile; the results are applied in input order."""
        workers = min(len(items), self.settings.llm_concurrency) if self.analyst.concurrent else 1

        def guarded(item: T) -> TaskResult | AnalystError:
            try:
                return task(item)
            except AnalystError as exc:
                return exc

        if workers <= 1:
            return [guarded(item) for item in items]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="amem-llm") as pool:
            return list(pool.map(guarded, items))

    def _as_applied(self, draft: Note) -> Note:
        """The draft as governance will apply it: values the policy holds for review (or freezes)
        are left out, so no other note's analysis, nor the index, sees a value nobody approved."""
        kind = ActorKind.LLM
        tags = draft.tags if self.policy.route("tags", draft.tags, kind).mode == Mode.AUTO else []
        kept: dict[str, Any] = {"tags": tags}
        for attribute in ("keywords", "context", "category", "decision_rationale", "valid_at"):
            if self.policy.route(attribute, tags, kind).mode != Mode.AUTO:
                kept[attribute] = [] if attribute == "keywords" else None
        return draft.model_copy(update=kept)

    def _draft_note(self, raw: RawLog, constructed: TaskResult) -> Note:
        """The new note as the analyst sees it, for the link step (not written anywhere)."""
        answer = constructed.answer
        valid_at = getattr(answer, "valid_at", None)
        return Note(
            id=new_id("n"),
            scope=raw.scope,
            content=raw.text,
            keywords=list(getattr(answer, "keywords", []) or []),
            tags=list(getattr(answer, "tags", []) or []),
            context=getattr(answer, "context", None),
            category=getattr(answer, "category", None),
            decision_rationale=getattr(answer, "decision_rationale", None),
            valid_at=_safe_time(valid_at),
            raw_log_ids=[raw.id],
            created_at=raw.received_at,
            updated_at=raw.received_at,
        )

    def _apply(self, tx: LedgerTx, raw: RawLog, analysis: Analysis) -> str:
        state = tx.raw_log_state(raw.id)
        if state is not None and state["state"] == RawLogState.PROCESSED.value and state["note_id"]:
            return str(state["note_id"])  # another process finished it meanwhile
        construct, link = analysis.construct, analysis.link
        for call in [*_attempts(construct), *_attempts(link)]:
            tx.insert_llm_call(call)
        note = self.governance.create_note(
            tx,
            scope=raw.scope,
            content=raw.text,
            raw_logs=[raw],
            actor=raw.actor,
            note_id=analysis.note_id,
        )
        restated = self._restated(tx, raw, analysis)
        drafts = self._construct_drafts(tx, note, raw, construct, restated)
        drafts += self._link_drafts(tx, note, raw, analysis)
        self.governance.propose_in(tx, drafts)
        tx.set_raw_log_state(raw.id, RawLogState.PROCESSED, utcnow(), note_id=note.id)
        return note.id

    def _held(self, attribute: str, tags: Sequence[str]) -> bool:
        """Whether the policy holds an LLM's value of ``attribute`` for a person (review)."""
        return self.policy.route(attribute, tags, ActorKind.LLM).mode == Mode.REVIEW

    def _restated(self, tx: LedgerTx, raw: RawLog, analysis: Analysis) -> Note | None:
        """The existing note the link step says this raw log only restates (re-read in ``tx``)."""
        restates = getattr(analysis.link.answer, "restates", None)
        if restates is None or restates == analysis.note_id:
            return None
        found = [n for n in tx.get_notes([restates]) if not n.deleted]
        if not found:
            log.warning("raw log %s: dropped restates of unknown note %r", raw.id, restates)
            return None
        return found[0]

    def _construct_drafts(
        self, tx: LedgerTx, note: Note, raw: RawLog, result: TaskResult, restated: Note | None = None
    ) -> list[Draft]:
        """The construct answer as drafts. A value the policy holds for a person needs its
        evidence span in the raw log (else it is dropped, logged); a restatement does not propose
        again the held values the note it restates carries or has pending."""
        answer = result.answer
        proposer = _proposer(self.analyst.model, result)
        evidence: Mapping[str, str] = getattr(answer, "evidence", None) or {}
        tags = list(getattr(answer, "tags", None) or [])
        tags = tags if self.policy.route("tags", tags, ActorKind.LLM).mode == Mode.AUTO else []
        known = _carried(tx, restated) if restated is not None else set()
        values: list[tuple[str, Any]] = [(a, getattr(answer, a, None)) for a in CONSTRUCTED]
        extra = getattr(answer, "extra", None) or {}
        for attribute, value in extra.items():
            if attribute not in self.policy.declared_attributes():
                log.warning("raw log %s: dropped undeclared attribute %r", raw.id, attribute)
                continue
            values.append((attribute, value))
        drafts: list[Draft] = []
        why = "note construction from the raw log"
        for attribute, value in values:
            if value in (None, "", []):
                continue
            if attribute == "valid_at" and _safe_time(value) is None:
                log.warning("raw log %s: dropped unparseable valid_at %r", raw.id, value)
                continue
            span = evidence.get(attribute)
            valid = span if span is not None and evidence_in(span, raw.text) else None
            if self._held(attribute, tags):
                if valid is None:
                    log.info(
                        "raw log %s: dropped %s held for review without evidence in the raw log (%r)",
                        raw.id,
                        attribute,
                        span,
                    )
                    continue
                if attribute in known:
                    log.info(
                        "raw log %s: %s already stated by %s (a restatement)", raw.id, attribute, restated.id
                    )  # type: ignore[union-attr]
                    continue
            drafts.append(Draft(note.id, attribute, value, why, proposer, [raw.id], evidence=valid))
        return drafts

    def _link_drafts(self, tx: LedgerTx, note: Note, raw: RawLog, analysis: Analysis) -> list[Draft]:
        answer = analysis.link.answer
        proposer = _proposer(self.analyst.model, analysis.link)
        by_id = {n.id: n for n in analysis.neighbours}
        drafts: list[Draft] = []

        # Neighbours re-read inside this transaction: one of the same batch whose analysis failed
        # was never written, and one may have been deleted meanwhile.
        current = {n.id: n for n in tx.get_notes(list(by_id)) if not n.deleted}
        links = []
        for link in getattr(answer, "links", []) or []:
            if link.note_id not in current:
                log.warning("raw log %s: dropped link to unknown note %r", raw.id, link.note_id)
                continue
            links.append({"note_id": link.note_id, "reason": link.reason})
        if links:
            drafts.append(Draft(note.id, "links", links, "link generation", proposer, [raw.id]))

        # Evolution: neighbours' context / tags / keywords / rationale.
        for update in getattr(answer, "updates", []) or []:
            neighbour = current.get(update.note_id)
            if neighbour is None:
                log.warning("raw log %s: dropped update of unknown note %r", raw.id, update.note_id)
                continue
            span = getattr(update, "evidence", None)
            valid = span if span is not None and evidence_in(span, raw.text) else None
            for attribute in EVOLVABLE:
                value = getattr(update, attribute, None)
                if value in (None, "", []):
                    continue
                attr_type = self.policy.type_of(attribute)
                if normalize(attribute, attr_type, value) == current_value(neighbour, attribute, attr_type):
                    continue
                if valid is None and self._held(attribute, neighbour.tags):
                    log.info("raw log %s: dropped %s of %s without evidence", raw.id, attribute, neighbour.id)
                    continue
                reason = f"memory evolution after {note.id}: {update.reason}"
                drafts.append(
                    Draft(neighbour.id, attribute, value, reason, proposer, [raw.id], evidence=valid)
                )

        # Contradiction: only a newer fact retires an older one; the times decide, not the model.
        contradictions = []
        for c in getattr(answer, "contradictions", []) or []:
            span = getattr(c, "evidence", None)
            if c.note_id not in current or c.note_id == note.id:
                continue
            if span is None or not evidence_in(span, raw.text):
                log.info(
                    "raw log %s: dropped contradiction of %s without evidence (%r)", raw.id, c.note_id, span
                )
                continue
            contradictions.append(c)
        if contradictions:
            when = {
                r.id: r
                for r in tx.get_raw_logs([n.raw_log_ids[0] for n in current.values() if n.raw_log_ids])
            }
            new_time = _fact_time(note, raw, analysis.construct)
            for c in contradictions:
                old = current[c.note_id]
                old_raw = when.get(old.raw_log_ids[0]) if old.raw_log_ids else None
                old_time = (
                    as_utc(old.valid_at) if old.valid_at else (old_raw.occurred_at if old_raw else None)
                )
                if old_time is None or old.invalid_at is not None:
                    continue
                if new_time > old_time:
                    reason = f"contradicted by newer note {note.id}: {c.reason}"
                    drafts.append(
                        Draft(old.id, "invalid_at", new_time, reason, proposer, [raw.id], evidence=c.evidence)
                    )
                elif new_time < old_time:
                    reason = f"contradicted by newer note {old.id}: {c.reason}"
                    drafts.append(
                        Draft(
                            note.id, "invalid_at", old_time, reason, proposer, [raw.id], evidence=c.evidence
                        )
                    )
        return drafts

    # -- failure and the index ---------------------------------------------------------------------

    def _failed(
        self, raw: RawLog, error: AnalystError, calls: Sequence[Any], owner: str | None = None
    ) -> str:
        """Record the failed analysis (its model calls included) and say what the caller sees."""
        with self.ledger.write() as tx:
            for call in calls:
                tx.insert_llm_call(call)
            if owner is not None and not self.queue.holds(tx, raw.id, owner):
                return _taken_over(raw.id)
            tx.set_raw_log_state(raw.id, RawLogState.FAILED, utcnow(), error=str(error)[:2000])
        return f"raw log {raw.id} is kept, but analysis failed: {error}. Run `amem reprocess` to retry."

    def _catch_up_index(self) -> None:
        """The index is derived: if it fails now, the next open or search catches up."""
        if self.index is None:
            return
        try:
            self.index.catch_up()
        except AmemError:
            raise
        except Exception:  # the ledger is committed; a broken index must not fail add_note
            log.exception("the index could not catch up; it will on the next open or search")


def evidence_in(span: str | None, raw_text: str) -> bool:
    """Whether an evidence span is real: non-blank and found, exactly, in the raw log's text."""
    return bool(span and span.strip()) and span.strip() in raw_text  # type: ignore[union-attr]


def _carried(tx: LedgerTx, note: Note) -> set[str]:
    """Attributes ``note`` carries a value for, or has a pending proposal for."""
    out = {a for a in ("decision_rationale", "valid_at", "context") if getattr(note, a, None)}
    out |= {name for name, value in note.extra.items() if value not in (None, "", [])}
    out |= {p.attribute for p in tx.proposals_for_note(note.id) if p.status == ProposalStatus.PENDING}
    return out


def _taken_over(raw_log_id: str) -> str:
    return (
        f"raw log {raw_log_id}: its lease ended before its analysis did and another worker took it; "
        f"nothing was applied twice (see `amem status {raw_log_id}`)"
    )


def _attempts(result: TaskResult) -> list[Any]:
    attempts = getattr(result, "attempts", None)
    return list(attempts) if attempts else [result.call]


def _proposer(model: str, result: TaskResult) -> Proposer:
    return Proposer(
        kind="llm",
        id=model,
        model=result.model,
        prompt_version=result.prompt_version,
        usage=result.usage,
        llm_call_id=result.call.id,
    )


def _safe_time(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        return parse_datetime(value)
    except InvalidInputError:
        return None


def _fact_time(note: Note, raw: RawLog, construct: TaskResult) -> datetime:
    return _safe_time(getattr(construct.answer, "valid_at", None)) or raw.occurred_at


def _neighbour_query(draft: Note) -> str:
    """What the neighbours are searched with: the text and the keywords the analyst saw in it."""
    return " ".join([draft.content, *draft.keywords])


def raw_log_from(
    settings: Settings,
    content: str,
    *,
    at: datetime | str | None,
    actor: Actor,
    scope: str,
    metadata: Mapping[str, Any] | None,
) -> RawLog:
    """The raw log of an input, validated (nothing is written): the one place an input is checked."""
    if not isinstance(content, str) or not content.strip():
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
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidInputError("scope is empty: say whose memory this is (an account, a user)")
    if len(scope) > 200:
        raise InvalidInputError("scope is longer than 200 characters")
    check_text(scope, "scope")
    if not is_visible(scope):
        raise InvalidInputError("scope shows nothing (only spaces, zero-width or control characters)")
    now = utcnow()
    occurred = now if at is None else parse_datetime(at, what="at")
    if not isinstance(metadata, Mapping | None):
        raise InvalidInputError(f"metadata must be a JSON object, got {type(metadata).__name__}")
    check_json(dict(metadata or {}), "metadata")
    try:
        meta = json.loads(json.dumps(dict(metadata or {}), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from exc
    return RawLog(
        id=new_id("r"),
        text=content,
        occurred_at=occurred,
        actor=actor,
        scope=scope.strip(),
        received_at=now,
        sha256=sha256_text(content),
        metadata=meta,
    )
