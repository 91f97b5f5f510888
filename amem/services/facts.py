"""An account's facts as they hold now: what a sales or customer-success team reads first.

Each fact is a note that is neither deleted nor retired (its ``invalid_at`` has not passed),
newest said first (the time of the raw log it came from), with the decision rationale it holds,
its validity dates and the decisions people took on it, each with their comment.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from amem.domain.models import Note, RetirementWaiting, as_utc, utcnow
from amem.errors import InvalidInputError
from amem.ledger import review_queries as q
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
    decided yet (it still holds, but may not for long), as search hits say it."""

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


def facts(
    ledger: Ledger,
    scope: str,
    *,
    limit: int = 50,
    offset: int = 0,
    include_retired: bool = False,
    at: datetime | None = None,
) -> FactPage:
    """The facts of ``scope`` holding at ``at`` (default now), newest said first."""
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidInputError("facts need a scope (whose account)")
    if not 1 <= limit <= MAX_PAGE or not 0 <= offset <= MAX_OFFSET:
        raise InvalidInputError(
            f"limit must be 1 to {MAX_PAGE:,} and offset 0 to {MAX_OFFSET:,}, not {limit} and {offset}"
        )
    moment = as_utc(at) if at is not None else utcnow()
    with ledger.read() as tx:
        rows = q.current_notes(
            tx, scope.strip(), moment=moment, include_retired=include_retired, limit=limit, offset=offset
        )
        total = q.count_current_notes(tx, scope.strip(), moment=moment, include_retired=include_retired)
        decided = q.decisions_for_notes(tx, [note.id for note, _ in rows])
        waiting = search_queries.retirements_waiting(tx, [note.id for note, _ in rows]) if at is None else {}
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
    out = [
        Fact(
            note=note,
            said_at=raw.occurred_at if raw else None,
            said_by=str(raw.actor) if raw else None,
            retired=note.invalid_at is not None and as_utc(note.invalid_at) <= moment,
            retirement_waiting=waiting.get(note.id),
            decisions=by_note.get(note.id, []),
        )
        for note, raw in rows
    ]
    return FactPage(scope=scope.strip(), facts=out, total=total)
