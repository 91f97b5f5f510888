"""The write pipeline of add_note: raw log -> note construction -> link generation -> evolution.

The raw log is committed first and never touched again. The analyst's answers become drafts
(pure data), and governance routes and applies them in one transaction, so an analysis that
fails half-way leaves nothing half-applied: the raw log stays, marked failed, for `reprocess`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from amem.config import Settings
from amem.domain.hashing import sha256_text
from amem.domain.models import (
    Actor,
    Note,
    Proposer,
    RawLog,
    RawLogState,
    as_utc,
    new_id,
    utcnow,
)
from amem.domain.values import current_value, normalize, parse_datetime
from amem.errors import AmemError, AnalysisPendingError, InvalidInputError
from amem.index.base import NeighbourFinder
from amem.ledger.store import Ledger, LedgerTx
from amem.llm.base import Analyst, AnalystError, TaskResult
from amem.services.governance import Draft, Governance

log = logging.getLogger(__name__)

#: Construct-step attributes proposed for the new note, in this order.
CONSTRUCTED = ("keywords", "tags", "context", "category", "decision_rationale", "valid_at")
#: Attributes the evolution step may propose for neighbours.
EVOLVABLE = ("context", "tags", "keywords", "decision_rationale")


class IndexCatchUp(Protocol):
    def catch_up(self) -> int: ...


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
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.governance = governance
        self.policy = governance.policy
        self.analyst = analyst
        self.neighbours = neighbours
        self.index = index

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
        raw = self.record(content, at=at, actor=actor, scope=scope, metadata=metadata)
        return self.process(raw)

    def record(
        self,
        content: str,
        *,
        at: datetime | str | None,
        actor: Actor,
        scope: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> RawLog:
        """Validate the input and commit it as a raw log. From here on it is never lost."""
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError("content is empty: add_note needs the text to remember")
        if len(content) > self.settings.max_content_chars:
            raise InvalidInputError(
                f"content is {len(content):,} characters, over the limit of "
                f"{self.settings.max_content_chars:,} (AMEM_MAX_CONTENT_CHARS)"
            )
        if not isinstance(scope, str) or not scope.strip():
            raise InvalidInputError("scope is empty: say whose memory this is (an account, a user)")
        if len(scope) > 200:
            raise InvalidInputError("scope is longer than 200 characters")
        now = utcnow()
        occurred = now if at is None else parse_datetime(at, what="at")
        try:
            meta = json.loads(json.dumps(dict(metadata or {})))
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from exc
        raw = RawLog(
            id=new_id("r"),
            text=content,
            occurred_at=occurred,
            actor=actor,
            scope=scope.strip(),
            received_at=now,
            sha256=sha256_text(content),
            metadata=meta,
        )
        with self.ledger.write() as tx:
            tx.insert_raw_logs([raw], now)
        return raw

    def process(self, raw: RawLog) -> str:
        """Analyse a committed raw log and apply the result. Returns the note id."""
        try:
            analysis = self._analyse(raw)
        except AnalystError as exc:
            self._mark_failed(raw, str(exc), exc.calls)
            raise AnalysisPendingError(
                f"raw log {raw.id} is kept, but analysis failed: {exc}. Run `amem reprocess` to retry.",
                raw.id,
            ) from exc
        note_id = self._apply(raw, analysis)
        self._catch_up_index()
        return note_id

    def reprocess(self, *, limit: int | None = None) -> list[str]:
        """Analyse raw logs left failed or pending (an outage, a crash). Returns the new note ids."""
        with self.ledger.read() as tx:
            states = tx.raw_log_states([RawLogState.FAILED, RawLogState.PENDING], limit=limit)
            raws = tx.get_raw_logs([s["raw_log_id"] for s in states])
        done: list[str] = []
        for raw in raws:
            try:
                done.append(self.process(raw))
            except AnalysisPendingError as exc:
                log.warning("%s", exc)
        return done

    # -- the steps -------------------------------------------------------------------------------

    def _analyse(self, raw: RawLog) -> Analysis:
        constructed = self.analyst.construct(raw, self.policy.declared_attributes())
        draft = self._draft_note(raw, constructed)
        query = " ".join([raw.text, *draft.keywords])
        neighbours = self.neighbours.nearest(raw.scope, query, self.settings.link_k, exclude_ids=[draft.id])
        neighbours = [n for n in neighbours if n.scope == raw.scope and not n.deleted][: self.settings.link_k]
        linked = self.analyst.link_and_evolve(draft, raw, neighbours)
        return Analysis(draft.id, constructed, linked, neighbours)

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

    def _apply(self, raw: RawLog, analysis: Analysis) -> str:
        construct, link = analysis.construct, analysis.link
        with self.ledger.write() as tx:
            state = _state_of(tx, raw.id)
            if state is not None and state["state"] == RawLogState.PROCESSED.value and state["note_id"]:
                return str(state["note_id"])  # another process finished it meanwhile
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
            drafts = self._construct_drafts(note, raw, construct)
            drafts += self._link_drafts(tx, note, raw, analysis)
            self.governance.propose_in(tx, drafts)
            tx.set_raw_log_state(raw.id, RawLogState.PROCESSED, utcnow(), note_id=note.id)
        return note.id

    def _construct_drafts(self, note: Note, raw: RawLog, result: TaskResult) -> list[Draft]:
        answer = result.answer
        proposer = _proposer(self.analyst.model, result)
        drafts: list[Draft] = []
        why = "note construction from the raw log"
        for attribute in CONSTRUCTED:
            value = getattr(answer, attribute, None)
            if value in (None, "", []):
                continue
            if attribute == "valid_at" and _safe_time(value) is None:
                log.warning("raw log %s: dropped unparseable valid_at %r", raw.id, value)
                continue
            drafts.append(Draft(note.id, attribute, value, why, proposer, [raw.id]))
        for attribute, value in (getattr(answer, "extra", None) or {}).items():
            if value in (None, "", []):
                continue
            if attribute not in self.policy.declared_attributes():
                log.warning("raw log %s: dropped undeclared attribute %r", raw.id, attribute)
                continue
            drafts.append(Draft(note.id, attribute, value, why, proposer, [raw.id]))
        return drafts

    def _link_drafts(self, tx: LedgerTx, note: Note, raw: RawLog, analysis: Analysis) -> list[Draft]:
        answer = analysis.link.answer
        proposer = _proposer(self.analyst.model, analysis.link)
        by_id = {n.id: n for n in analysis.neighbours}
        drafts: list[Draft] = []

        links = []
        for link in getattr(answer, "links", []) or []:
            if link.note_id not in by_id:
                log.warning("raw log %s: dropped link to unknown note %r", raw.id, link.note_id)
                continue
            links.append({"note_id": link.note_id, "reason": link.reason})
        if links:
            drafts.append(Draft(note.id, "links", links, "link generation", proposer, [raw.id]))

        # Evolution: neighbours' context / tags / keywords / rationale, re-read inside this transaction.
        current = {n.id: n for n in tx.get_notes(list(by_id))}
        for update in getattr(answer, "updates", []) or []:
            neighbour = current.get(update.note_id)
            if neighbour is None:
                log.warning("raw log %s: dropped update of unknown note %r", raw.id, update.note_id)
                continue
            for attribute in EVOLVABLE:
                value = getattr(update, attribute, None)
                if value in (None, "", []):
                    continue
                attr_type = self.policy.type_of(attribute)
                if normalize(attribute, attr_type, value) == current_value(neighbour, attribute, attr_type):
                    continue
                reason = f"memory evolution after {note.id}: {update.reason}"
                drafts.append(Draft(neighbour.id, attribute, value, reason, proposer, [raw.id]))

        # Contradiction: only a newer fact retires an older one; the times decide, not the model.
        contradictions = [c for c in getattr(answer, "contradictions", []) or [] if c.note_id in current]
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
                    drafts.append(Draft(old.id, "invalid_at", new_time, reason, proposer, [raw.id]))
                elif new_time < old_time:
                    reason = f"contradicted by newer note {old.id}: {c.reason}"
                    drafts.append(Draft(note.id, "invalid_at", old_time, reason, proposer, [raw.id]))
        return drafts

    # -- failure and the index ---------------------------------------------------------------------

    def _mark_failed(self, raw: RawLog, error: str, calls: Sequence[Any]) -> None:
        with self.ledger.write() as tx:
            for call in calls:
                tx.insert_llm_call(call)
            tx.set_raw_log_state(raw.id, RawLogState.FAILED, utcnow(), error=error[:2000])

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


def _state_of(tx: LedgerTx, raw_log_id: str) -> dict[str, Any] | None:
    return tx.raw_log_state(raw_log_id)
