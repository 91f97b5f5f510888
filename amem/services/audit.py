"""Read-only views of the ledger for reviewers and auditors (the approval console's services).

The Memory facade answers single questions (a note, a proposal, a history). The console also
needs the audit trail across notes, exports of it, review statistics, incoming links and a page
of the review queue with everything a reviewer reads beside each proposal. Those live here, on
top of LedgerTx and amem.ledger.audit_queries; none of them writes.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from amem.domain.models import ActorKind, Note, Proposal, RawLog, as_utc, scope_as_kept, utcnow
from amem.domain.spreadsheet import CSV_BOM, csv_writer, spreadsheet_safe
from amem.domain.values import current_value
from amem.ledger import audit_queries as q
from amem.ledger.audit_queries import AuditQuery
from amem.ledger.store import Ledger
from amem.policy import CORE_TYPES, Mode, Policy

__all__ = [
    "AuditEvent",
    "AuditQuery",
    "ErasureRecord",
    "IncomingLink",
    "PolicyOverview",
    "ReviewItem",
    "audit_events",
    "count_audit_events",
    "erasures",
    "export_csv",
    "export_jsonl",
    "find_notes",
    "incoming_links",
    "policy_overview",
    "proposals_per_day",
    "review_items",
    "review_times",
    "verdicts",
]


class AuditEvent(BaseModel):
    """One line of the audit trail: a proposal made, a decision taken, or a change applied."""

    at: datetime
    event: str
    note_id: str
    scope: str | None = None
    attribute: str
    actor: str
    status: str
    proposal_id: str
    change_seq: int | None = None
    old_value: Any = None
    new_value: Any = None
    reason: str | None = None
    comment: str | None = None
    model: str | None = None
    hash: str | None = None


def _event(row: dict[str, Any]) -> AuditEvent:
    at = row["at"]
    if isinstance(at, str):  # a UNION on SQLite may hand back the stored text
        at = datetime.fromisoformat(at)
    return AuditEvent(
        at=as_utc(at),
        event=row["event"],
        note_id=row["note_id"],
        scope=row["scope"],
        attribute=row["attribute"],
        actor=f"{row['actor_kind']}:{row['actor_id']}",
        status=row["status"],
        proposal_id=row["proposal_id"],
        change_seq=row["change_seq"],
        old_value=row["old_value"],
        new_value=row["new_value"],
        reason=row["reason"],
        comment=row["comment"],
        model=row["model"],
        hash=row["hash"],
    )


def audit_events(
    ledger: Ledger, query: AuditQuery, *, limit: int = 100, offset: int = 0, newest_first: bool = True
) -> list[AuditEvent]:
    with ledger.read() as tx:
        rows = q.audit_rows(tx, query, limit=limit, offset=offset, newest_first=newest_first)
    return [_event(r) for r in rows]


def count_audit_events(ledger: Ledger, query: AuditQuery) -> int:
    with ledger.read() as tx:
        return q.count_audit_rows(tx, query)


def iter_audit_events(ledger: Ledger, query: AuditQuery) -> Iterator[AuditEvent]:
    with ledger.read() as tx:
        for row in q.iter_audit_rows(tx, query):
            yield _event(row)


#: How an erasure's redacted rows read, per table (erased_rows.table_name): singular, plural.
_REDACTED_NOUNS = {
    "raw_logs": ("raw log", "raw logs"),
    "llm_calls": ("model answer", "model answers"),
    "proposals": ("proposal", "proposals"),
    "changes": ("change", "changes"),
    "decisions": ("reviewer's comment", "reviewers' comments"),
}


#: How many spellings of a scope `amem erasures` names on an erasure's line (--json has each).
_SPELLINGS_SHOWN = 3


class ErasureRecord(BaseModel):
    """One erasure as an auditor reads it: who erased what they asked for, when, why, and how many
    rows of each table it redacted (the rows' digests before and after are in ``erased_rows``)."""

    id: str
    erased_by: str
    erased_at: datetime
    reason: str
    raw_log: str | None = None
    scope: str | None = None
    actor: str | None = None
    # The scopes of the raw logs it chose: for a scope's erasure, every spelling of the scope it
    # reached, whatever its case ("acme", "Acme"); empty for an erasure recorded before they were.
    scopes: list[str] = []
    rows: dict[str, int]

    @property
    def redacted(self) -> str:
        """The rows it redacted, in words: "1 raw log, 2 model answers, 5 proposals, ..."."""
        order = [t for t in _REDACTED_NOUNS if t in self.rows] + sorted(set(self.rows) - set(_REDACTED_NOUNS))
        parts = []
        for table in order:
            n = self.rows[table]
            one, many = _REDACTED_NOUNS.get(table, (table, table))
            parts.append(f"{n} {one if n == 1 else many}")
        return ", ".join(parts) or "no rows"

    @property
    def asked(self) -> str:
        """What the eraser named: a raw log, a scope or an actor."""
        if self.scope:
            return f"scope {self.scope}{self._spellings()}"
        for kind, value in (("raw log", self.raw_log), ("actor", self.actor)):
            if value:
                return f"{kind} {value}"
        return "?"

    def _spellings(self) -> str:
        """The spellings of its scope it reached, where they differ from the name given: " (also
        Acme, ACME)", or " (spelled Acme)" when the name as given was none of them; at most
        ``_SPELLINGS_SHOWN`` of them, so the line stays short (``scopes`` has each)."""
        given = scope_as_kept(self.scope or "")
        others = [s for s in self.scopes if s != given]
        if not others:
            return ""
        shown = others[:_SPELLINGS_SHOWN]
        more = f" and {len(others) - len(shown)} more" if len(others) > len(shown) else ""
        return f" ({'also' if given in self.scopes else 'spelled'} {', '.join(shown)}{more})"


def erasures(ledger: Ledger) -> list[ErasureRecord]:
    """Every erasure, newest first."""
    with ledger.read() as tx:
        rows = q.erasure_rows(tx)
    return [
        ErasureRecord(
            id=r["id"],
            erased_by=r["erased_by"],
            erased_at=as_utc(r["erased_at"]),
            reason=r["reason"],
            rows=r["rows"],
            scopes=(r["selector"] or {}).get("scopes") or [],
            **{k: (r["selector"] or {}).get(k) for k in ("raw_log", "scope", "actor")},
        )
        for r in rows
    ]


def erasure_of(ledger: Ledger, raw_log_id: str) -> dict[str, Any]:
    """The erasure that erased a raw log (``erasure_id``, ``erased_by``, ``erased_at``), or ``{}``
    when none did: what a retry of an erased input is told."""
    return erasures_of(ledger, [raw_log_id]).get(raw_log_id, {})


def erasures_of(ledger: Ledger, raw_log_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``erasure_of`` for many raw logs in one read (an import's lines), by raw log id; those no
    erasure erased are left out."""
    from amem.ledger.erasure_queries import erased_before

    if not raw_log_ids:
        return {}
    with ledger.read() as tx:
        found = erased_before(tx, raw_log_ids)
    return {
        raw_log_id: {k: as_utc(v) if k == "erased_at" else v for k, v in record.items()}
        for raw_log_id, record in found.items()
    }


def audit_actors(ledger: Ledger) -> list[str]:
    with ledger.read() as tx:
        return q.audit_actors(tx)


# -- exports -------------------------------------------------------------------------------------

CSV_COLUMNS = [
    "at",
    "event",
    "note_id",
    "scope",
    "attribute",
    "actor",
    "status",
    "proposal_id",
    "change_seq",
    "old_value",
    "new_value",
    "reason",
    "comment",
    "model",
    "hash",
]


def _csv_cell(name: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    if name in ("old_value", "new_value") and not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    # A spreadsheet would run a cell starting like a formula; the JSON Lines export stays exact.
    return spreadsheet_safe(str(value))


def export_csv(ledger: Ledger, query: AuditQuery) -> bytes:
    """The filtered trail as CSV (UTF-8 with BOM, so spreadsheets read accents right)."""
    buf = io.StringIO()
    writer = csv_writer(buf)
    writer.writerow(CSV_COLUMNS)
    for event in iter_audit_events(ledger, query):
        data = event.model_dump()
        writer.writerow([_csv_cell(c, data[c]) for c in CSV_COLUMNS])
    return (CSV_BOM + buf.getvalue()).encode("utf-8")


def export_jsonl(ledger: Ledger, query: AuditQuery) -> bytes:
    """The filtered trail as JSON Lines: one exact JSON object per event."""
    lines = (
        json.dumps(e.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)
        for e in iter_audit_events(ledger, query)
    )
    return "".join(line + "\n" for line in lines).encode("utf-8")


# -- statistics ----------------------------------------------------------------------------------


class DayCount(BaseModel):
    day: date
    status: str
    proposals: int


class ReviewTimeDay(BaseModel):
    """How long proposals decided on ``day`` had waited for a reviewer."""

    day: date
    decisions: int
    median_hours: float
    p90_hours: float


def proposals_per_day(ledger: Ledger, *, days: int = 30, now: datetime | None = None) -> list[DayCount]:
    since = (now or utcnow()) - timedelta(days=days)
    with ledger.read() as tx:
        rows = q.proposals_per_day(tx, since)
    return [
        DayCount(day=date.fromisoformat(str(r["day"])), status=r["status"], proposals=r["n"]) for r in rows
    ]


class ReviewTimes(BaseModel):
    """Waiting times of the proposals reviewers decided in a window: overall and per day."""

    decisions: int
    median_hours: float | None
    p90_hours: float | None
    days: list[ReviewTimeDay]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def review_times(ledger: Ledger, *, days: int = 30, now: datetime | None = None) -> ReviewTimes:
    """Every decision a person took in the window, counted; median and 90th percentile (nearest
    rank) of the waits, overall and per UTC day, picked by the database (audit_queries.review_waits):
    a few rows come back, not one per decision."""
    since = (now or utcnow()) - timedelta(days=days)
    with ledger.read() as tx:
        rows = q.review_waits(tx, since)
    # the median of an even count is the mean of its two middle waits
    day_medians: dict[str, list[float]] = defaultdict(list)
    day_p90: dict[str, float] = {}
    day_n: dict[str, int] = {}
    medians: list[float] = []
    p90: float | None = None
    for r in rows:
        day, wait = str(r["day"]), max(float(r["wait"]), 0.0)
        day_n[day] = int(r["day_n"])
        if r["day_median"]:
            day_medians[day].append(wait)
        if r["day_p90"]:
            day_p90[day] = wait
        if r["median"]:
            medians.append(wait)
        if r["p90"]:
            p90 = wait
    per_day = [
        ReviewTimeDay(
            day=date.fromisoformat(day),
            decisions=day_n[day],
            median_hours=_mean(day_medians[day]),
            p90_hours=day_p90[day],
        )
        for day in sorted(day_n)
    ]
    return ReviewTimes(
        decisions=int(rows[0]["n"]) if rows else 0,
        median_hours=_mean(medians) if medians else None,
        p90_hours=p90,
        days=per_day,
    )


class QueueSummary(BaseModel):
    pending: int
    oldest_pending: datetime | None
    by_status: dict[str, int]


def queue_summary(ledger: Ledger) -> QueueSummary:
    with ledger.read() as tx:
        counts = q.status_counts(tx)
        oldest = q.oldest_pending(tx)
    return QueueSummary(
        pending=counts.get("pending", 0),
        oldest_pending=as_utc(oldest) if oldest else None,
        by_status=counts,
    )


# -- the review queue ----------------------------------------------------------------------------


class ReviewItem(BaseModel):
    """A pending proposal with what a reviewer needs beside it."""

    proposal: Proposal
    note: Note | None
    current_value: Any = None
    stale: bool = False  # the note's value changed since the proposal was made: approving conflicts
    raw_logs: list[RawLog] = []


def review_items(ledger: Ledger, policy: Policy, items: Sequence[Proposal]) -> list[ReviewItem]:
    """The notes and raw logs behind a page of proposals, fetched in two queries."""
    with ledger.read() as tx:
        notes = {n.id: n for n in tx.get_notes(list(dict.fromkeys(p.note_id for p in items)))}
        raw_ids = list(dict.fromkeys(r for p in items for r in p.raw_log_ids))
        raw = {r.id: r for r in tx.get_raw_logs(raw_ids)}
    out = []
    for p in items:
        note = notes.get(p.note_id)
        now_value = p.old_value
        if note is not None and policy.knows(p.attribute):
            now_value = current_value(note, p.attribute, policy.type_of(p.attribute))
        out.append(
            ReviewItem(
                proposal=p,
                note=note,
                current_value=now_value,
                stale=now_value != p.old_value,
                raw_logs=[raw[i] for i in p.raw_log_ids if i in raw],
            )
        )
    return out


def pending_choices(ledger: Ledger) -> dict[str, list[str]]:
    with ledger.read() as tx:
        return q.pending_choices(tx)


# -- notes ---------------------------------------------------------------------------------------


class NotePage(BaseModel):
    notes: list[Note]
    total: int


def find_notes(
    ledger: Ledger,
    *,
    scope: str | None,
    text: str | None = None,
    include_deleted: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> NotePage:
    """Notes of a scope whose content contains ``text`` (case-insensitive), most recently changed first."""
    with ledger.read() as tx:
        ids = q.find_note_rows(
            tx, scope=scope, text=text, include_deleted=include_deleted, limit=limit, offset=offset
        )
        total = q.count_note_rows(tx, scope=scope, text=text, include_deleted=include_deleted)
        found = tx.get_notes(ids)
    return NotePage(notes=found, total=total)


class IncomingLink(BaseModel):
    note_id: str
    content: str
    reason: str | None = None
    deleted: bool = False


def incoming_links(ledger: Ledger, note: Note) -> list[IncomingLink]:
    """Notes whose links point at ``note``, with the reason each link gives."""
    with ledger.read() as tx:
        rows = q.incoming_links(tx, note.id, note.scope)
    return [
        IncomingLink(
            note_id=r["note_id"], content=r["content"], reason=r["reason"], deleted=bool(r["deleted"])
        )
        for r in rows
    ]


def notes_by_id(ledger: Ledger, ids: Iterable[str]) -> dict[str, Note]:
    with ledger.read() as tx:
        return {n.id: n for n in tx.get_notes(list(dict.fromkeys(ids)))}


def raw_logs(ledger: Ledger, ids: Sequence[str]) -> list[RawLog]:
    with ledger.read() as tx:
        return tx.get_raw_logs(list(ids))


# -- the policy, readable ------------------------------------------------------------------------


class AttributeRule(BaseModel):
    when: str
    mode: str


class AttributeOverview(BaseModel):
    attribute: str
    type: str
    mode: str
    core: bool
    description: str | None = None
    rules: list[AttributeRule] = []
    approver_roles: list[str] = []


class RoleOverview(BaseModel):
    role: str
    description: str | None = None
    approves: list[str]
    reviewers: list[str]


class PolicyOverview(BaseModel):
    source: str | None
    default_mode: str
    self_approval: bool
    attributes: list[AttributeOverview]
    roles: list[RoleOverview]
    reviewers: dict[str, list[str]]
    agents: list[str]


def policy_overview(policy: Policy) -> PolicyOverview:
    """The policy in force as a reader wants it: each attribute's mode, narrowing rules and approvers.

    The mode shown is the attribute's own (its ``mode``, else ``default_mode``): what a proposal
    gets when no rule matches. The rules say when it differs, first match first, followed by the
    guards ``Policy.route`` adds where a change would take a rule's tag from a note. The CLI's
    `amem policy` and the console's policy page both show this.
    """
    attributes = []
    guarded = sorted(policy.rule_tags())
    for name in [*CORE_TYPES, *policy.declared_attributes()]:
        attr = policy.attributes.get(name)
        own = attr.mode if attr is not None and attr.mode is not None else policy.default_mode
        rules = attr.rules if attr else []
        attributes.append(
            AttributeOverview(
                attribute=name,
                type=policy.type_of(name),
                mode=own.value,
                core=name in CORE_TYPES,
                description=attr.description if attr else None,
                rules=[
                    *(AttributeRule(when=r.when.describe(), mode=r.mode.value) for r in rules),
                    *_tag_guards(name, guarded, may_apply=Mode.AUTO in {own, *(r.mode for r in rules)}),
                ],
                approver_roles=policy.who_may_approve(name),
            )
        )
    roles = [
        RoleOverview(
            role=name,
            description=role.description,
            approves=list(role.approves),
            reviewers=sorted(k for k, v in policy.reviewers.items() if name in v.roles),
        )
        for name, role in policy.roles.items()
    ]
    return PolicyOverview(
        source=policy.source,
        default_mode=policy.default_mode.value,
        self_approval=policy.self_approval,
        attributes=attributes,
        roles=roles,
        reviewers={k: list(v.roles) for k, v in policy.reviewers.items()},
        agents=list(policy.agents),
    )


def _tag_guards(attribute: str, rule_tags: list[str], *, may_apply: bool) -> list[AttributeRule]:
    """The guards of ``Policy.route`` on ``attribute``, as rules: whoever proposes it, a change of
    tags that drops a tag a rule names, or a re-filing (a category changed or cleared) that takes
    the note away from one, waits for a person. Shown where the attribute may apply at once:
    elsewhere a person looks anyway."""
    if not rule_tags or not may_apply:
        return []
    tags = " or ".join(rule_tags)
    when = {
        "tags": f"the change drops {tags}",
        "category": f"the change re-files the note away from {tags} (or clears its category) "
        "and no tag of the note says it",
    }.get(attribute)
    return [AttributeRule(when=when, mode=Mode.REVIEW.value)] if when else []


class VerdictRow(BaseModel):
    """What reviewers did with the held values of one attribute, or of one source (a model and its
    prompt version, people, agents): the queue's precision as the people who work it see it."""

    name: str
    waiting: int = 0
    approved: int = 0
    #: Rejected, and the reviewer's own value proposed instead (Governance.correct).
    corrected: int = 0
    #: Rejected without a correction.
    rejected: int = 0
    #: Approved too late: the note had changed since (nothing applied).
    conflict: int = 0

    @property
    def decided(self) -> int:
        return self.approved + self.corrected + self.rejected + self.conflict

    @property
    def approved_share(self) -> float | None:
        """Of the values reviewers judged (conflicts aside: no one judged them), those approved as
        proposed."""
        judged = self.approved + self.corrected + self.rejected
        return self.approved / judged if judged else None


#: An attribute or a source whose held values reviewers approve as proposed less often than this,
#: over at least ``NOISY_AFTER`` judged values, is worth a policy change or another model.
NOISY_SHARE = 0.3
NOISY_AFTER = 20


class ReviewVerdicts(BaseModel):
    """Per attribute and per source: decisions of the last ``days`` days, and what waits now."""

    days: int
    by_attribute: list[VerdictRow]
    by_source: list[VerdictRow]

    def noisy(self) -> list[VerdictRow]:
        """The attributes, then the sources, whose values reviewers mostly turn down."""
        return [
            r
            for r in [*self.by_attribute, *self.by_source]
            if r.approved_share is not None
            and r.approved + r.corrected + r.rejected >= NOISY_AFTER
            and r.approved_share < NOISY_SHARE
        ]

    def noisy_words(self) -> str | None:
        """What the console and `amem review-stats` say about them, or None."""
        noisy = [
            f"{r.name} ({r.approved_share:.0%} of {r.approved + r.corrected + r.rejected})"
            for r in self.noisy()
        ]
        if not noisy:
            return None
        return (
            "Reviewers approve few held values of "
            + ", ".join(noisy)
            + " as proposed. A policy that applies or freezes that attribute, or a better model, would "
            "spare them those reviews."
        )


def _source(row: dict[str, Any]) -> str:
    if row["proposer_kind"] == ActorKind.LLM.value:
        # the proposer as the queue's "Proposed by" filter names it, then the model and prompt
        name = f"llm:{row['proposer_id']}"
        if row["model"] and row["model"] != row["proposer_id"]:
            name += f" ({row['model']})"
        return f"{name} · {row['prompt_version']}" if row["prompt_version"] else name
    return {"person": "people's edits", "agent": "agents' edits"}.get(
        row["proposer_kind"], row["proposer_kind"]
    )


def verdicts(ledger: Ledger, *, days: int = 30, now: datetime | None = None) -> ReviewVerdicts:
    """What reviewers approved, corrected, rejected as proposed, and what waits: which attributes
    and which models fill the queue with values people turn down."""
    since = (now or utcnow()) - timedelta(days=days)
    with ledger.read() as tx:
        decided, pending = q.verdicts(tx, since), q.waiting(tx)
    by_attribute: dict[str, VerdictRow] = {}
    by_source: dict[str, VerdictRow] = {}
    for row in pending:
        for name, table in ((row["attribute"], by_attribute), (_source(row), by_source)):
            entry = table.setdefault(name, VerdictRow(name=name))
            entry.waiting += row["n"]
    for row in decided:
        status = row["status"]
        field = "corrected" if status == "rejected" and row["corrected"] else status
        for name, table in ((row["attribute"], by_attribute), (_source(row), by_source)):
            entry = table.setdefault(name, VerdictRow(name=name))
            setattr(entry, field, getattr(entry, field) + row["n"])

    def order(rows: dict[str, VerdictRow]) -> list[VerdictRow]:
        return sorted(rows.values(), key=lambda r: (-(r.decided + r.waiting), r.name))

    return ReviewVerdicts(days=days, by_attribute=order(by_attribute), by_source=order(by_source))
