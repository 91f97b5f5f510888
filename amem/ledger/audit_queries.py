"""Read-only SQL for the console and auditors: the audit trail, review statistics, incoming links.

Everything here filters, orders and pages inside the database, so the console stays quick on a
ledger of many thousands of proposals. Results are plain rows (mappings); amem.services.audit
turns them into models.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from amem.domain.models import CREATE_RULE, ERASURE_RULE, ActorKind, ProposalStatus
from amem.ledger.store import LedgerTx
from amem.ledger.tables import chain_head, changes, erased_rows, erasures, notes, proposals

#: The rule recorded on the proposal that creates a note (see amem.services.governance).

#: Event names in the audit trail.
EVENT_PROPOSED = "proposed"
CHANGE_EVENTS = {"create": "created", "apply": "applied", "revert": "reverted"}
DECISION_STATUSES = (
    ProposalStatus.APPROVED.value,
    ProposalStatus.REJECTED.value,
    ProposalStatus.CONFLICT.value,
    ProposalStatus.SUPERSEDED.value,
)


@dataclass(frozen=True)
class AuditQuery:
    """What an auditor narrows the trail to. Every field is optional."""

    note_id: str | None = None
    attribute: str | None = None
    actor: str | None = None
    statuses: Sequence[str] = ()
    since: datetime | None = None
    until: datetime | None = None
    kinds: Sequence[str] = ()  # "change", "proposal", "decision"; empty means all


def _actor_filter(kind_col: Any, id_col: Any, actor: str) -> Any:
    kind, sep, ident = actor.partition(":")
    if sep and kind in ActorKind._value2member_map_:
        return sa.and_(kind_col == kind, id_col == ident)
    return id_col == actor


def _branches(q: AuditQuery) -> list[sa.Select[Any]]:
    """One SELECT per kind of event, each already narrowed by ``q`` (so indexes apply)."""
    p = proposals
    c = changes
    selects: list[sa.Select[Any]] = []
    kinds = set(q.kinds) or {"change", "proposal", "decision"}

    def narrow(
        stmt: sa.Select[Any], at: Any, note: Any, attribute: Any, kind: Any, ident: Any
    ) -> sa.Select[Any]:
        if q.note_id:
            stmt = stmt.where(note == q.note_id)
        if q.attribute:
            stmt = stmt.where(attribute == q.attribute)
        if q.actor:
            stmt = stmt.where(_actor_filter(kind, ident, q.actor))
        if q.statuses:
            stmt = stmt.where(p.c.status.in_(list(q.statuses)))
        if q.since:
            stmt = stmt.where(at >= q.since)
        if q.until:
            stmt = stmt.where(at <= q.until)
        return stmt

    if "change" in kinds:
        event = sa.case(*((c.c.kind == k, sa.literal(v)) for k, v in CHANGE_EVENTS.items()), else_=c.c.kind)
        stmt = sa.select(
            c.c.applied_at.label("at"),
            sa.literal(2).label("ord"),
            event.label("event"),
            c.c.note_id.label("note_id"),
            p.c.scope.label("scope"),
            c.c.attribute.label("attribute"),
            c.c.actor_kind.label("actor_kind"),
            c.c.actor_id.label("actor_id"),
            p.c.status.label("status"),
            c.c.proposal_id.label("proposal_id"),
            c.c.seq.label("change_seq"),
            c.c.old_value.label("old_value"),
            c.c.new_value.label("new_value"),
            p.c.reason.label("reason"),
            p.c.review_comment.label("comment"),
            p.c.model.label("model"),
            c.c.hash.label("hash"),
        ).select_from(c.join(p, p.c.id == c.c.proposal_id))
        selects.append(narrow(stmt, c.c.applied_at, c.c.note_id, c.c.attribute, c.c.actor_kind, c.c.actor_id))

    if "proposal" in kinds:
        stmt = sa.select(
            p.c.created_at.label("at"),
            sa.literal(0).label("ord"),
            sa.literal(EVENT_PROPOSED).label("event"),
            p.c.note_id,
            p.c.scope,
            p.c.attribute,
            p.c.proposer_kind.label("actor_kind"),
            p.c.proposer_id.label("actor_id"),
            p.c.status,
            p.c.id.label("proposal_id"),
            sa.null().label("change_seq"),
            p.c.old_value,
            p.c.new_value,
            p.c.reason,
            p.c.review_comment.label("comment"),
            p.c.model,
            sa.null().label("hash"),
        ).where(p.c.rule != CREATE_RULE)
        selects.append(
            narrow(stmt, p.c.created_at, p.c.note_id, p.c.attribute, p.c.proposer_kind, p.c.proposer_id)
        )

    if "decision" in kinds:
        kind = sa.case((p.c.reviewer.is_not(None), sa.literal("person")), else_=sa.literal("system"))
        ident = sa.func.coalesce(p.c.reviewer, sa.literal("policy"))
        stmt = sa.select(
            p.c.reviewed_at.label("at"),
            sa.literal(1).label("ord"),
            p.c.status.label("event"),
            p.c.note_id,
            p.c.scope,
            p.c.attribute,
            kind.label("actor_kind"),
            ident.label("actor_id"),
            p.c.status,
            p.c.id.label("proposal_id"),
            sa.null().label("change_seq"),
            p.c.old_value,
            p.c.new_value,
            p.c.reason,
            p.c.review_comment.label("comment"),
            p.c.model,
            sa.null().label("hash"),
        ).where(p.c.reviewed_at.is_not(None), p.c.status.in_(DECISION_STATUSES))
        selects.append(narrow(stmt, p.c.reviewed_at, p.c.note_id, p.c.attribute, kind, ident))
    return selects


def _trail(q: AuditQuery) -> sa.Subquery | None:
    branches = _branches(q)
    if not branches:
        return None
    union = branches[0] if len(branches) == 1 else sa.union_all(*branches)
    return union.subquery("trail")


def _trail_order(trail: sa.Subquery, newest_first: bool) -> tuple[Any, ...]:
    """The trail's order, for a page and for an export alike: by time, a proposal before its
    decision before its change, and the changes of one write (which share their time) in chain
    order (``changes.seq``); proposal ids, random, only break the remaining ties."""
    if newest_first:
        return (
            trail.c.at.desc(),
            trail.c.ord.desc(),
            trail.c.change_seq.desc().nulls_last(),
            trail.c.proposal_id,
        )
    return (trail.c.at, trail.c.ord, trail.c.change_seq.nulls_last(), trail.c.proposal_id)


def audit_rows(
    tx: LedgerTx, q: AuditQuery, *, limit: int | None = 100, offset: int = 0, newest_first: bool = True
) -> list[dict[str, Any]]:
    trail = _trail(q)
    if trail is None:
        return []
    stmt = sa.select(trail).order_by(*_trail_order(trail, newest_first)).offset(offset)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def iter_audit_rows(tx: LedgerTx, q: AuditQuery, *, newest_first: bool = True) -> Iterator[dict[str, Any]]:
    """Every row of the trail, streamed from the database (for exports of any size)."""
    trail = _trail(q)
    if trail is None:
        return
    result = tx.conn.execution_options(stream_results=True, yield_per=1000).execute(
        sa.select(trail).order_by(*_trail_order(trail, newest_first))
    )
    for row in result:
        yield dict(row._mapping)


def count_audit_rows(tx: LedgerTx, q: AuditQuery) -> int:
    trail = _trail(q)
    if trail is None:
        return 0
    return int(tx.conn.execute(sa.select(sa.func.count()).select_from(trail)).scalar_one())


# -- review statistics ---------------------------------------------------------------------------


def _day(tx: LedgerTx, column: Any) -> Any:
    """The UTC calendar day of a timestamp column, as text YYYY-MM-DD on both backends."""
    if tx.dialect == "postgresql":
        return sa.func.to_char(sa.func.timezone("UTC", column), "YYYY-MM-DD")
    return sa.func.date(column)


def proposals_per_day(tx: LedgerTx, since: datetime | None) -> list[dict[str, Any]]:
    """Proposals made per UTC day and their current status (note creations left out); an erasure's
    deletions of the erased notes as ``erasure``, not as approvals no reviewer gave."""
    day = _day(tx, proposals.c.created_at).label("day")
    status = sa.case((proposals.c.rule == ERASURE_RULE, "erasure"), else_=proposals.c.status).label("status")
    stmt = (
        sa.select(day, status, sa.func.count().label("n"))
        .where(proposals.c.rule != CREATE_RULE)
        .group_by(day, status)
        .order_by(day)
    )
    if since is not None:
        stmt = stmt.where(proposals.c.created_at >= since)
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


#: What reviewers' verdicts and the waiting values are counted by: an attribute and a proposer.
_VERDICT_GROUP = (
    proposals.c.attribute,
    proposals.c.proposer_kind,
    proposals.c.proposer_id,
    proposals.c.model,
    proposals.c.prompt_version,
)


#: How governance words a decision the policy took in a person's place: an approval of a value the
#: policy has since frozen (or no longer declares) is recorded as rejected, with that person named
#: as the one who asked. The review statistics leave such decisions out: not a verdict on the value.
POLICY_REFUSAL = "refused by policy:"


def _a_person_s_verdict() -> Any:
    comment = proposals.c.review_comment
    return sa.or_(comment.is_(None), sa.not_(comment.startswith(POLICY_REFUSAL, autoescape=True)))


def _not_a_self_approved_correction() -> Any:
    """Leaves out a reviewer's correction decided by that same reviewer: where the policy allows
    self-approval, Governance.correct approves it in the transaction that made it, microseconds
    later (so ``reviewed_at > created_at`` does not catch it). No one reviewed that value: the
    verdict was the rejection of the value it replaced, counted there as corrected."""
    p = proposals.c
    return sa.or_(p.corrects.is_(None), p.reviewer != p.proposer_id)


def verdicts(tx: LedgerTx, since: datetime) -> list[dict[str, Any]]:
    """What people decided on held values since ``since``, counted per attribute, proposer (kind,
    model, prompt version), status, and whether a correction replaced a rejected one. Decisions
    taken with the proposal (an erasure's, a frozen attribute's, a self-approved correction's) are
    not a person's verdict, nor an approval the policy refused (the person wanted the value; the
    policy decided)."""
    later = proposals.alias("correction")
    corrected = sa.exists().where(later.c.corrects == proposals.c.id).label("corrected")
    stmt = (
        sa.select(*_VERDICT_GROUP, proposals.c.status, corrected, sa.func.count().label("n"))
        .where(
            proposals.c.status.in_(
                [ProposalStatus.APPROVED.value, ProposalStatus.REJECTED.value, ProposalStatus.CONFLICT.value]
            ),
            proposals.c.reviewer.is_not(None),
            proposals.c.reviewed_at >= since,
            proposals.c.reviewed_at > proposals.c.created_at,
            proposals.c.rule != ERASURE_RULE,
            _a_person_s_verdict(),
            _not_a_self_approved_correction(),
        )
        .group_by(*_VERDICT_GROUP, proposals.c.status, corrected)
    )
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def waiting(tx: LedgerTx) -> list[dict[str, Any]]:
    """Proposals waiting for a person now, counted per attribute and proposer."""
    stmt = (
        sa.select(*_VERDICT_GROUP, sa.func.count().label("n"))
        .where(proposals.c.status == ProposalStatus.PENDING.value)
        .group_by(*_VERDICT_GROUP)
    )
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def _wait_hours(tx: LedgerTx) -> Any:
    """How long a proposal waited for its decision, in hours. SQLite keeps time to the millisecond
    in its date functions: the wait is rounded to whole milliseconds there (julianday's float
    difference is off by a few nanoseconds)."""
    if tx.dialect == "postgresql":
        return sa.extract("epoch", proposals.c.reviewed_at - proposals.c.created_at) / 3600.0
    days = sa.func.julianday(proposals.c.reviewed_at) - sa.func.julianday(proposals.c.created_at)
    return sa.func.round(days * 86_400_000) / 3_600_000.0


def _median_rank(rank: Any, n: Any) -> Any:
    """The 0-based rank(s) a median reads among ``n`` sorted values: the middle one, or the two
    middle ones (n - 2 <= 2 * rank <= n). Integer arithmetic, the same on both backends."""
    return sa.between(2 * rank, n - 2, n)


def _p90_rank(rank: Any, n: Any) -> Any:
    """The 0-based rank of the 90th percentile by nearest rank: ceil(0.9 n) - 1, which is the rank
    with 9 n - 10 <= 10 * rank <= 9 n - 1."""
    return sa.between(10 * rank, 9 * n - 10, 9 * n - 1)


def review_waits(tx: LedgerTx, since: datetime | None) -> list[dict[str, Any]]:
    """Waiting times of the proposals a person decided, as the few values their statistics read.

    Counted, ranked and picked in the database (window functions), so every decision of the window
    counts and no more than a handful of rows per day come back, however many there are. Each row:
    ``day`` (UTC, YYYY-MM-DD), ``day_n`` and ``n`` (decisions that day and in all), ``wait`` (hours),
    and whether that wait is (one of) the day's median and 90th percentile, and the window's.

    A person's decision is one taken after the proposal was made, so a decision taken with it (an
    erasure's deletion of a note) is not counted as a review that took no time, nor a correction its
    reviewer approved themselves as they made it."""
    p = proposals.c
    stmt = sa.select(_day(tx, p.reviewed_at).label("day"), _wait_hours(tx).label("wait")).where(
        p.reviewer.is_not(None),
        p.reviewed_at.is_not(None),
        p.reviewed_at > p.created_at,
        _not_a_self_approved_correction(),
    )
    if since is not None:
        stmt = stmt.where(p.reviewed_at >= since)
    waits = stmt.subquery("waits")
    day_rank = sa.func.row_number().over(partition_by=waits.c.day, order_by=waits.c.wait) - 1
    rank = sa.func.row_number().over(order_by=waits.c.wait) - 1
    ranked = sa.select(
        waits.c.day,
        waits.c.wait,
        day_rank.label("day_rank"),
        sa.func.count().over(partition_by=waits.c.day).label("day_n"),
        rank.label("rank"),
        sa.func.count().over().label("n"),
    ).subquery("ranked")
    r = ranked.c
    marks = {
        "day_median": _median_rank(r.day_rank, r.day_n),
        "day_p90": _p90_rank(r.day_rank, r.day_n),
        "median": _median_rank(r.rank, r.n),
        "p90": _p90_rank(r.rank, r.n),
    }
    stmt = (
        sa.select(
            r.day, r.day_n, r.n, r.wait, *(sa.case((m, True), else_=False).label(k) for k, m in marks.items())
        )
        .where(sa.or_(*marks.values()))
        .order_by(r.day, r.wait)
    )
    return [dict(row._mapping) for row in tx.conn.execute(stmt)]


def status_counts(tx: LedgerTx) -> dict[str, int]:
    stmt = sa.select(proposals.c.status, sa.func.count()).group_by(proposals.c.status)
    return {status: int(n) for status, n in tx.conn.execute(stmt)}


def oldest_pending(tx: LedgerTx) -> datetime | None:
    stmt = sa.select(sa.func.min(proposals.c.created_at)).where(
        proposals.c.status == ProposalStatus.PENDING.value
    )
    return tx.conn.execute(stmt).scalar_one()


# -- filter choices ------------------------------------------------------------------------------


def pending_choices(tx: LedgerTx) -> dict[str, list[str]]:
    """The scopes, attributes and proposers that occur among pending proposals (for filters)."""
    pending = proposals.c.status == ProposalStatus.PENDING.value
    scopes = tx.conn.execute(
        sa.select(proposals.c.scope).where(pending).distinct().order_by(proposals.c.scope)
    ).scalars()
    attributes = tx.conn.execute(
        sa.select(proposals.c.attribute).where(pending).distinct().order_by(proposals.c.attribute)
    ).scalars()
    proposers = tx.conn.execute(
        sa.select(proposals.c.proposer_kind, proposals.c.proposer_id)
        .where(pending)
        .distinct()
        .order_by(proposals.c.proposer_kind, proposals.c.proposer_id)
    ).all()
    return {
        "scopes": list(scopes),
        "attributes": list(attributes),
        "proposers": [f"{k}:{i}" for k, i in proposers],
    }


def audit_actors(tx: LedgerTx, limit: int = 500) -> list[str]:
    """Actors that appear in the trail: who changed, proposed or decided something."""
    rows: set[str] = set()
    for kind, ident in tx.conn.execute(
        sa.select(changes.c.actor_kind, changes.c.actor_id).distinct().limit(limit)
    ):
        rows.add(f"{kind}:{ident}")
    for kind, ident in tx.conn.execute(
        sa.select(proposals.c.proposer_kind, proposals.c.proposer_id).distinct().limit(limit)
    ):
        rows.add(f"{kind}:{ident}")
    for (reviewer,) in tx.conn.execute(
        sa.select(proposals.c.reviewer).where(proposals.c.reviewer.is_not(None)).distinct().limit(limit)
    ):
        rows.add(f"person:{reviewer}")
    return sorted(rows)


def erasure_rows(tx: LedgerTx) -> list[dict[str, Any]]:
    """Every erasure, newest first, with the rows it redacted counted by table (``rows``)."""
    counts: dict[str, dict[str, int]] = {}
    stmt = sa.select(erased_rows.c.erasure_id, erased_rows.c.table_name, sa.func.count()).group_by(
        erased_rows.c.erasure_id, erased_rows.c.table_name
    )
    for erasure_id, table_name, n in tx.conn.execute(stmt):
        counts.setdefault(erasure_id, {})[table_name] = int(n)
    stmt = sa.select(erasures).order_by(erasures.c.erased_at.desc(), erasures.c.id)
    return [{**r._mapping, "rows": counts.get(r.id, {})} for r in tx.conn.execute(stmt)]


# -- notes ---------------------------------------------------------------------------------------


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _notes_query(scope: str | None, text: str | None, include_deleted: bool) -> sa.Select[Any]:
    stmt = sa.select(notes)
    if scope:
        stmt = stmt.where(notes.c.scope == scope)
    if not include_deleted:
        stmt = stmt.where(notes.c.deleted.is_(False))
    if text and text.strip():
        needle = f"%{_escape_like(text.strip())}%"
        stmt = stmt.where(sa.or_(notes.c.id == text.strip(), notes.c.content.ilike(needle, escape="\\")))
    return stmt


def find_note_rows(
    tx: LedgerTx,
    *,
    scope: str | None,
    text: str | None,
    include_deleted: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> list[str]:
    """Ids of notes in ``scope`` whose content contains ``text`` (or whose id is it), newest first."""
    base = _notes_query(scope, text, include_deleted).subquery()
    stmt = sa.select(base.c.id).order_by(base.c.updated_at.desc(), base.c.id).limit(limit).offset(offset)
    return list(tx.conn.execute(stmt).scalars())


def count_note_rows(
    tx: LedgerTx, *, scope: str | None, text: str | None, include_deleted: bool = False
) -> int:
    base = _notes_query(scope, text, include_deleted).subquery()
    return int(tx.conn.execute(sa.select(sa.func.count()).select_from(base)).scalar_one())


def incoming_links(tx: LedgerTx, note_id: str, scope: str) -> list[dict[str, Any]]:
    """Notes whose links point at ``note_id``, with each link's reason.

    Links never cross scopes, so only ``scope`` is searched (an indexed column); the JSON
    containment test runs in the database: json_each on SQLite, jsonb ``@>`` on PostgreSQL.
    """
    if tx.dialect == "postgresql":
        links = sa.type_coerce(notes.c.links, postgresql.JSONB)
        stmt = sa.select(notes.c.id, notes.c.content, notes.c.deleted, notes.c.links).where(
            notes.c.scope == scope, notes.c.id != note_id, links.contains([{"note_id": note_id}])
        )
        out = []
        for r in tx.conn.execute(stmt.order_by(notes.c.id)):
            for link in r.links or []:
                if link.get("note_id") == note_id:
                    out.append(
                        {
                            "note_id": r.id,
                            "content": r.content,
                            "deleted": r.deleted,
                            "reason": link.get("reason"),
                        }
                    )
        return out
    each = sa.func.json_each(notes.c.links).table_valued("value").alias("link")
    stmt = (
        sa.select(
            notes.c.id.label("note_id"),
            notes.c.content,
            notes.c.deleted,
            sa.func.json_extract(each.c.value, "$.reason").label("reason"),
        )
        .select_from(notes.join(each, sa.true()))
        .where(
            notes.c.scope == scope,
            notes.c.id != note_id,
            sa.func.json_extract(each.c.value, "$.note_id") == note_id,
        )
        .order_by(notes.c.id)
    )
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def change_head(tx: LedgerTx) -> tuple[int, str]:
    """The change chain's head (chain_head): its last change's seq and hash, which the next change
    links to (verify holds them to the last change)."""
    row = tx.conn.execute(
        sa.select(chain_head.c.last_seq, chain_head.c.last_hash).where(chain_head.c.id == 1)
    ).one()
    return int(row.last_seq), str(row.last_hash)
