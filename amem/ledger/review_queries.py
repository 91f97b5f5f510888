"""The ledger's side of the review queue: pending proposals grouped into review items.

A review item is one input: every pending proposal whose first source raw log is the same raw
log (a proposal with no raw log, a person's edit say, is an item of its own). The item's key is
that raw log's id, or the proposal's id. Grouping, counting and paging happen in SQL, so the queue
is never limited to the page a console happens to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from amem.domain.models import ActorKind, Note, ProposalStatus, RawLog
from amem.ledger.store import LedgerTx, _proposal
from amem.ledger.tables import proposals

ReviewKind = Literal["contradiction", "deletion", "correction", "revert", "value"]
REVIEW_KINDS: tuple[ReviewKind, ...] = ("contradiction", "deletion", "correction", "revert", "value")


@dataclass(frozen=True)
class ReviewFilter:
    """Which pending proposals (and so which items) a reviewer looks at.

    ``kind`` (each proposal has exactly one, ``kind_of``): ``correction`` (a reviewer's value
    instead of another's, whatever its attribute, waiting for a second reviewer), ``revert``
    (restores an earlier value), ``contradiction`` (any other invalid_at proposal of a date: a
    newer fact retires an older note), ``deletion`` (any other proposal of deleted) or ``value``
    (the rest, an un-retirement among them: an invalid_at of no date brings a retired fact back).
    """

    scope: str | None = None
    attribute: str | None = None
    kind: ReviewKind | None = None
    proposer: str | None = None
    created_before: datetime | None = None
    created_after: datetime | None = None
    newest_first: bool = False
    #: Only these scopes (a reviewer limited to the accounts they own); None: every scope.
    within: tuple[str, ...] | None = None


def item_key() -> Any:
    """The review item a proposal belongs to: its first raw log's id, else its own id."""
    return sa.func.coalesce(proposals.c.raw_log_ids[0].as_string(), proposals.c.id)


def kind_of(attribute: str, *, corrects: str | None, revert_of: int | None, new_value: Any) -> ReviewKind:
    """A proposal's one review kind, in the order ``_kind_clause`` tells them apart: a correction
    waits for a second reviewer whatever it corrects (a retirement date too), and a revert of a
    retirement or a deletion puts an earlier value back rather than retiring or deleting. An
    invalid_at of no date (``new_value`` None) ends nothing: it brings a retired fact back, so it
    is a value, never a contradiction a reviewer would read as a retirement."""
    if corrects is not None:
        return "correction"
    if revert_of is not None:
        return "revert"
    if attribute == "invalid_at":
        return "value" if new_value is None else "contradiction"
    if attribute == "deleted":
        return "deletion"
    return "value"


def _no_value() -> Any:
    """The proposals of no new value. new_value is a JSON column that stores Python None as JSON
    ``null`` (on both backends); SQL NULL is read the same, so the two clauses built from this one
    still split every proposal in two, whichever way a row holds it."""
    value = proposals.c.new_value
    return sa.or_(value.is_(None), sa.cast(value, sa.Text) == "null")


def _a_value() -> Any:
    """Every proposal ``_no_value`` leaves out (never SQL NULL, so NOT cannot drop a row)."""
    value = proposals.c.new_value
    return sa.and_(value.is_not(None), sa.cast(value, sa.Text) != "null")


def _kind_clause(kind: ReviewKind) -> Any:
    """The proposals ``kind_of`` names ``kind``: the kinds do not overlap, so the items and counts
    per kind add up to the queue's."""
    if kind == "correction":
        return proposals.c.corrects.is_not(None)
    if kind == "revert":
        return sa.and_(proposals.c.corrects.is_(None), proposals.c.revert_of.is_not(None))
    first_hand = (proposals.c.corrects.is_(None), proposals.c.revert_of.is_(None))
    retirement = proposals.c.attribute == "invalid_at"
    if kind == "contradiction":
        return sa.and_(*first_hand, retirement, _a_value())
    if kind == "deletion":
        return sa.and_(*first_hand, proposals.c.attribute == "deleted")
    return sa.and_(
        *first_hand,
        sa.or_(proposals.c.attribute.not_in(["invalid_at", "deleted"]), sa.and_(retirement, _no_value())),
    )


def _where(f: ReviewFilter) -> list[Any]:
    clauses: list[Any] = [proposals.c.status == ProposalStatus.PENDING.value]
    if f.scope:
        clauses.append(proposals.c.scope == f.scope)
    if f.within is not None:
        clauses.append(proposals.c.scope.in_(f.within) if f.within else sa.false())
    if f.attribute:
        clauses.append(proposals.c.attribute == f.attribute)
    if f.kind:
        clauses.append(_kind_clause(f.kind))
    if f.proposer:
        kind, sep, ident = f.proposer.partition(":")
        if sep and kind in ActorKind._value2member_map_:
            clauses += [proposals.c.proposer_kind == kind, proposals.c.proposer_id == ident]
        else:
            clauses.append(proposals.c.proposer_id == f.proposer)
    if f.created_before:
        clauses.append(proposals.c.created_at < f.created_before)
    if f.created_after:
        clauses.append(proposals.c.created_at >= f.created_after)
    return clauses


def item_keys(tx: LedgerTx, f: ReviewFilter, *, limit: int, offset: int = 0) -> list[str]:
    """A page of the keys of items holding at least one matching proposal, oldest input first."""
    key = item_key().label("key")
    first = sa.func.min(proposals.c.seq).label("first")
    stmt = sa.select(key, first).where(*_where(f)).group_by(key)
    order = first.desc() if f.newest_first else first.asc()
    stmt = stmt.order_by(order).limit(limit).offset(offset)
    return [row.key for row in tx.conn.execute(stmt)]


def count_items(tx: LedgerTx, f: ReviewFilter) -> int:
    stmt = sa.select(sa.func.count(sa.distinct(item_key()))).where(*_where(f))
    return int(tx.conn.execute(stmt).scalar_one())


def matching_proposal_ids(tx: LedgerTx, f: ReviewFilter) -> list[tuple[str, str]]:
    """(item key, proposal id) of every matching pending proposal, in the order they were made."""
    stmt = sa.select(item_key().label("key"), proposals.c.id).where(*_where(f)).order_by(proposals.c.seq)
    return [(row.key, row.id) for row in tx.conn.execute(stmt)]


def pending_in_items(tx: LedgerTx, keys: Sequence[str]) -> list[Any]:
    """Every pending proposal of the items ``keys`` (whatever the filter), in the order made."""
    if not keys:
        return []
    stmt = (
        sa.select(proposals)
        .where(proposals.c.status == ProposalStatus.PENDING.value, item_key().in_(list(keys)))
        .order_by(proposals.c.seq)
    )
    return [_proposal(r) for r in tx.conn.execute(stmt)]


def decided_by(tx: LedgerTx, reviewer: str, *, limit: int) -> list[Any]:
    """The proposals ``reviewer`` decided, newest decision first (ix_proposals_reviewer_reviewed)."""
    stmt = (
        sa.select(proposals)
        .where(proposals.c.reviewer == reviewer, proposals.c.reviewed_at.is_not(None))
        .order_by(proposals.c.reviewed_at.desc(), proposals.c.seq.desc())
        .limit(limit)
    )
    return [_proposal(r) for r in tx.conn.execute(stmt)]


def first_raw_logs(tx: LedgerTx, note_list: Sequence[Note]) -> dict[str, RawLog]:
    """Each note's first raw log (what it was made from), by note id."""
    wanted = {n.id: n.raw_log_ids[0] for n in note_list if n.raw_log_ids}
    found = {r.id: r for r in tx.get_raw_logs(list(dict.fromkeys(wanted.values())))}
    return {note_id: found[raw_id] for note_id, raw_id in wanted.items() if raw_id in found}
