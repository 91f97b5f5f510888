"""The ledger's side of an account's facts: the notes that hold now, or that held at a past moment
as the ledger stood then (for an auditor asking what the memory said about an account that day).

Now: paged in SQL on the notes' own columns. At a past moment: the notes made by then and not
erased since (an erased note is gone from every moment, as search as of then leaves it out), each
with the last ``deleted`` and ``invalid_at`` change applied by then (one grouped query over the
scope), and only the page's notes rebuilt from their changes; never a replay of the whole account.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from amem.domain.hashing import REDACTED
from amem.domain.models import Change, Note, ProposalStatus, RawLog, as_utc
from amem.domain.values import parse_datetime
from amem.ledger.store import LedgerTx, _change, _note, _proposal
from amem.ledger.tables import changes, notes, proposals, raw_logs

#: The attributes that decide whether a note held at a moment.
_HOLDING = ("deleted", "invalid_at")


def _said() -> Any:
    """When a note was said: its first raw log's time, else when the note was made."""
    return sa.func.coalesce(raw_logs.c.occurred_at, notes.c.created_at)


def _with_first_raw_log(stmt: Any) -> Any:
    return stmt.select_from(notes.outerjoin(raw_logs, raw_logs.c.id == notes.c.raw_log_ids[0].as_string()))


def current_notes(
    tx: LedgerTx, scope: str, *, moment: datetime, include_retired: bool, limit: int, offset: int
) -> list[tuple[Note, RawLog | None]]:
    """The scope's notes that hold at ``moment`` (not deleted, not retired), newest said first:
    ordered by the time of their first raw log (when it was said), else when the note was made."""
    stmt = (
        _with_first_raw_log(sa.select(notes, raw_logs.c.id.label("raw_id")))
        .where(notes.c.scope == scope, notes.c.deleted.is_(False))
        .order_by(_said().desc(), notes.c.id)
        .limit(limit)
        .offset(offset)
    )
    if not include_retired:
        stmt = stmt.where(sa.or_(notes.c.invalid_at.is_(None), notes.c.invalid_at > moment))
    rows = tx.conn.execute(stmt).all()
    found = {r.id: r for r in tx.get_raw_logs([row.raw_id for row in rows if row.raw_id])}
    return [(_note(row), found.get(row.raw_id)) for row in rows]


def count_current_notes(tx: LedgerTx, scope: str, *, moment: datetime, include_retired: bool) -> int:
    stmt = (
        sa.select(sa.func.count())
        .select_from(notes)
        .where(notes.c.scope == scope, notes.c.deleted.is_(False))
    )
    if not include_retired:
        stmt = stmt.where(sa.or_(notes.c.invalid_at.is_(None), notes.c.invalid_at > moment))
    return int(tx.conn.execute(stmt).scalar_one())


@dataclass(frozen=True)
class HeldThen:
    """A note as far as holding goes at a past moment: whether it was retired then."""

    note_id: str
    raw_log_id: str | None
    retired: bool


def notes_held_at(tx: LedgerTx, scope: str, *, moment: datetime, include_retired: bool) -> list[HeldThen]:
    """The scope's notes made by ``moment`` that were not deleted then (nor retired, unless
    ``include_retired``), as the ledger stood at ``moment``, newest said first. A note erased since
    (deleted, its text the marker: ``search_queries.Standing.erased``) is left out: a data
    subject's erasure takes the fact from the past too, not only from now."""
    erased = sa.and_(notes.c.deleted.is_(True), notes.c.content == REDACTED)
    made = tx.conn.execute(
        _with_first_raw_log(sa.select(notes.c.id, raw_logs.c.id.label("raw_id")))
        .where(notes.c.scope == scope, notes.c.created_at <= moment, sa.not_(erased))
        .order_by(_said().desc(), notes.c.id)
    ).all()
    last = (
        sa.select(sa.func.max(changes.c.seq))
        .select_from(changes.join(notes, notes.c.id == changes.c.note_id))
        .where(
            notes.c.scope == scope,
            changes.c.applied_at <= moment,
            changes.c.attribute.in_(_HOLDING),
        )
        .group_by(changes.c.note_id, changes.c.attribute)
    )
    state: dict[str, dict[str, Any]] = {}
    for row in tx.conn.execute(sa.select(changes).where(changes.c.seq.in_(last))):
        c = _change(row)
        state.setdefault(c.note_id, {})[c.attribute] = c.new_value
    out = []
    for row in made:
        then = state.get(row.id, {})
        if then.get("deleted"):
            continue
        ends = then.get("invalid_at")
        retired = ends is not None and parse_datetime(ends) <= as_utc(moment)
        if retired and not include_retired:
            continue
        out.append(HeldThen(row.id, row.raw_id, retired))
    return out


def changes_until(tx: LedgerTx, note_ids: Sequence[str], moment: datetime) -> dict[str, list[Change]]:
    """Each note's changes applied by ``moment``, in order: what rebuilds it as it stood then."""
    out: dict[str, list[Change]] = {note_id: [] for note_id in note_ids}
    if not note_ids:
        return out
    stmt = (
        sa.select(changes)
        .where(changes.c.note_id.in_(list(note_ids)), changes.c.applied_at <= moment)
        .order_by(changes.c.seq)
    )
    for row in tx.conn.execute(stmt):
        c = _change(row)
        out[c.note_id].append(c)
    return out


def decisions_for_notes(tx: LedgerTx, note_ids: Sequence[str], *, until: datetime | None = None) -> list[Any]:
    """Proposals a person decided (approved or rejected) on these notes, in the order made; with
    ``until``, those decided by then."""
    if not note_ids:
        return []
    stmt = (
        sa.select(proposals)
        .where(
            proposals.c.note_id.in_(list(note_ids)),
            proposals.c.reviewer.is_not(None),
            proposals.c.status.in_([ProposalStatus.APPROVED.value, ProposalStatus.REJECTED.value]),
        )
        .order_by(proposals.c.seq)
    )
    if until is not None:
        stmt = stmt.where(proposals.c.reviewed_at <= until)
    return [_proposal(r) for r in tx.conn.execute(stmt)]
