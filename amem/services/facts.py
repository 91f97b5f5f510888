"""An account's facts as they hold now: what a sales or customer-success team reads first; and as
they held at a past moment, as the ledger stood then: what an auditor asks ("what did our memory
say about Acme on 1 June, when the agent quoted that price?").

Each fact is a note that is neither deleted nor retired (its ``invalid_at`` has not passed),
newest said first (the time of the raw log it came from), with the decision rationale it holds,
its validity dates and the decisions people took on it, each with their comment. As of a past
moment: only notes made by then, each rebuilt from the changes applied by then (values, retirement,
deletion), with the decisions taken by then and the retirements waiting then; a note erased since
is in no moment's facts (nor in their total), as search as of then leaves it out.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from amem.domain.models import Note, RetirementWaiting, as_utc, scope_as_kept, utcnow
from amem.domain.replay import replay
from amem.errors import InvalidInputError
from amem.ledger import facts_queries as q
from amem.ledger import search_queries
from amem.ledger.store import Ledger

#: The most facts one page holds, and the furthest a page may start (a database integer's range).
MAX_PAGE = 1000
MAX_OFFSET = 2**62


class Decision(BaseModel):
    """A person's decision on one of the fact's proposals."""

    attribute: str
    status: str
    value: object = None
    reviewer: str | None = None
    comment: str | None = None
    at: datetime | None = None


class Fact(BaseModel):
    """``retirement_waiting``: a newer note says this fact no longer holds and a person has not
    decided yet (it still holds, but may not for long), as search hits say it; as of a past moment,
    one proposed by then and not decided by then. A pending proposal that would bring a retired
    fact back is no retirement: it is not shown here."""

    note: Note
    said_at: datetime | None = None
    said_by: str | None = None
    retired: bool = False
    retirement_waiting: RetirementWaiting | None = None
    decisions: list[Decision] = []

    @property
    def note_id(self) -> str:
        return self.note.id


class FactPage(BaseModel):
    scope: str
    facts: list[Fact]
    total: int
    #: The moment the facts are as of (the ledger as it stood then); None: now.
    as_of: datetime | None = None


def facts(
    ledger: Ledger,
    scope: str,
    *,
    limit: int = 50,
    offset: int = 0,
    include_retired: bool = False,
    as_of: datetime | None = None,
) -> FactPage:
    """The facts of ``scope`` holding now, or at ``as_of`` as the ledger stood then, newest said
    first."""
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidInputError("facts need a scope (whose account)")
    if not 1 <= limit <= MAX_PAGE or not 0 <= offset <= MAX_OFFSET:
        raise InvalidInputError(
            f"limit must be 1 to {MAX_PAGE:,} and offset 0 to {MAX_OFFSET:,}, not {limit} and {offset}"
        )
    scope = scope_as_kept(scope)  # as inputs keep it: composed (NFC), full-width letters plain
    if as_of is not None:
        return _facts_then(ledger, scope, as_utc(as_of), limit, offset, include_retired)
    moment = utcnow()
    with ledger.read() as tx:
        rows = q.current_notes(
            tx, scope, moment=moment, include_retired=include_retired, limit=limit, offset=offset
        )
        total = q.count_current_notes(tx, scope, moment=moment, include_retired=include_retired)
        decided = q.decisions_for_notes(tx, [note.id for note, _ in rows])
        waiting = search_queries.retirements_waiting(tx, [note.id for note, _ in rows])
    out = []
    for note, raw in rows:
        retired = note.invalid_at is not None and as_utc(note.invalid_at) <= moment
        out.append(
            Fact(
                note=note,
                said_at=raw.occurred_at if raw else None,
                said_by=str(raw.actor) if raw else None,
                retired=retired,
                # a retired fact's pending proposal moves an end it already has: none waits for it
                retirement_waiting=None if retired else waiting.get(note.id),
                decisions=_decisions(decided).get(note.id, []),
            )
        )
    return FactPage(scope=scope, facts=out, total=total)


def _facts_then(
    ledger: Ledger, scope: str, moment: datetime, limit: int, offset: int, include_retired: bool
) -> FactPage:
    """The facts of ``scope`` as the ledger stood at ``moment``: the retirements waiting then (an
    auditor learns a fact was already contested), and no decision taken since."""
    with ledger.read() as tx:
        held = q.notes_held_at(tx, scope, moment=moment, include_retired=include_retired)
        page = held[offset : offset + limit]
        ids = [h.note_id for h in page]
        current = {n.id: n for n in tx.get_notes(ids)}
        history = q.changes_until(tx, ids, moment)
        raws = {r.id: r for r in tx.get_raw_logs([h.raw_log_id for h in page if h.raw_log_id])}
        decided = _decisions(q.decisions_for_notes(tx, ids, until=moment))
        # a fact retired then: its pending proposal moves an end it already had, none waits for it
        holding = [h.note_id for h in page if not h.retired]
        waiting = search_queries.retirements_waiting(tx, holding, moment=moment)
    out = []
    for h in page:
        then = replay(current[h.note_id], history[h.note_id])
        if then is None:  # made by then, so never: its first change is its making
            continue
        raw = raws.get(h.raw_log_id) if h.raw_log_id else None
        out.append(
            Fact(
                note=then,
                said_at=raw.occurred_at if raw else None,
                said_by=str(raw.actor) if raw else None,
                retired=h.retired,
                retirement_waiting=waiting.get(h.note_id),
                decisions=decided.get(h.note_id, []),
            )
        )
    return FactPage(scope=scope, facts=out, total=len(held), as_of=moment)


def _decisions(decided: list[Any]) -> dict[str, list[Decision]]:
    by_note: dict[str, list[Decision]] = {}
    for p in decided:
        by_note.setdefault(p.note_id, []).append(
            Decision(
                attribute=p.attribute,
                status=p.status.value,
                value=p.new_value,
                reviewer=p.reviewer,
                comment=p.review_comment,
                at=p.reviewed_at,
            )
        )
    return by_note
