"""The auditors' export read model: changes, proposals, raw logs, the event chain or the erasures,
page by page (keyset on seq; erasures on their event's seq, then each redacted row's table and key).

Each page is one bounded query, so an export of any size holds one page in memory. Rows are flat
dicts of the ledger's columns (actor and proposer as ``kind:id``); the service writes them out.
Changes carry their own chain's hashes; a raw log or a proposal carries the seq and hash of its own
event in the event chain (``event_seq``, ``event_hash``), and ``events`` is that chain itself, so an
auditor can recompute every link from the export alone; ``llm_calls`` are the model calls (the
prompt's digest, the answer, the tokens), each with its event, so the call behind a proposal's
``llm_call_id`` can be read and checked from the export too; ``tokens`` are the tokens made and
revoked, each with its event, so the chain's token events can be recomputed too. ``erasures`` is
one row per row an erasure redacted (its digests before and after), with its erasure's record and
event: what that erasure's ``rows_sha256`` commits to can be recomputed from the export, and its
event found in the chain.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from amem.ledger.store import LedgerTx
from amem.ledger.tables import (
    changes,
    erased_rows,
    erasures,
    events,
    llm_calls,
    notes,
    proposals,
    raw_logs,
    token_events,
)

PAGE = 1000

#: Each kind's columns, in the order an export writes them.
COLUMNS: dict[str, list[str]] = {
    "changes": [
        "seq", "applied_at", "scope", "note_id", "attribute", "old_value", "new_value", "note_version",
        "actor", "kind", "proposal_id", "prev_hash", "hash",
    ],
    "proposals": [
        "seq", "id", "created_at", "scope", "note_id", "attribute", "old_value", "new_value",
        "base_version", "reason", "evidence", "proposer", "model", "prompt_version", "usage", "llm_call_id",
        "raw_log_ids", "rule", "policy_sha256", "status", "reviewer", "review_comment", "reviewed_at",
        "revert_of", "corrects", "event_seq", "event_hash",
    ],
    "llm_calls": [
        "event_seq", "id", "created_at", "scope", "raw_log_id", "task", "model", "prompt_version",
        "prompt_sha256", "response_text", "prompt_tokens", "completion_tokens", "latency_ms", "error",
        "served_model", "event_hash",
    ],
    "raw_logs": [
        "seq", "id", "occurred_at", "received_at", "scope", "actor", "text", "sha256", "metadata",
        "event_seq", "event_hash",
    ],
    "events": ["seq", "at", "kind", "subject", "payload_digest", "prev_hash", "hash"],
    "erasures": [
        "event_seq", "erasure_id", "erased_at", "erased_by", "reason", "selector", "rows_sha256",
        "event_hash", "table_name", "row_key", "digest_before", "digest_after", "detail",
    ],
    "tokens": [
        "event_seq", "id", "token_id", "action", "name", "role", "by", "at", "expires_at", "scopes",
        "token_sha256", "event_hash",
    ],
}  # fmt: skip

#: The event kind a raw log's, a proposal's or a model call's own event has (append_event).
_OWN_EVENT = {"raw_logs": "raw_log", "proposals": "proposal", "llm_calls": "llm_call"}


def _select(kind: str) -> tuple[sa.Select[Any], Any, Any, Any]:
    """The statement, its seq column, its time column (--since / --until) and its scope column
    (None for the event chain, which spans every scope)."""
    if kind == "changes":
        stmt = sa.select(
            changes,
            notes.c.scope,
            (changes.c.actor_kind + ":" + changes.c.actor_id).label("actor"),
        ).select_from(changes.join(notes, notes.c.id == changes.c.note_id))
        return stmt, changes.c.seq, changes.c.applied_at, notes.c.scope
    if kind == "events":
        return sa.select(events), events.c.seq, events.c.at, None
    if kind == "tokens":  # each made or revoked, with its event: in chain order, the whole ledger's
        chained = sa.and_(events.c.kind == "token", events.c.subject == token_events.c.id)
        stmt = sa.select(
            token_events, events.c.seq, events.c.seq.label("event_seq"), events.c.hash.label("event_hash")
        ).select_from(token_events.join(events, chained))
        return stmt, events.c.seq, token_events.c.at, None
    if kind == "llm_calls":  # each model call in chain order; its account is its raw log's
        chained = sa.and_(events.c.kind == "llm_call", events.c.subject == llm_calls.c.id)
        stmt = sa.select(
            llm_calls,
            raw_logs.c.scope,
            events.c.seq,
            events.c.seq.label("event_seq"),
            events.c.hash.label("event_hash"),
        ).select_from(
            llm_calls.join(events, chained).outerjoin(raw_logs, raw_logs.c.id == llm_calls.c.raw_log_id)
        )
        return stmt, events.c.seq, llm_calls.c.created_at, raw_logs.c.scope
    own = sa.and_(
        events.c.kind == _OWN_EVENT[kind],
        events.c.subject == (proposals.c.id if kind == "proposals" else raw_logs.c.id),
    )
    event_columns = (events.c.seq.label("event_seq"), events.c.hash.label("event_hash"))
    if kind == "proposals":
        proposer = (proposals.c.proposer_kind + ":" + proposals.c.proposer_id).label("proposer")
        stmt = sa.select(proposals, proposer, *event_columns).select_from(proposals.outerjoin(events, own))
        return stmt, proposals.c.seq, proposals.c.created_at, proposals.c.scope
    actor = (raw_logs.c.actor_kind + ":" + raw_logs.c.actor_id).label("actor")
    stmt = sa.select(raw_logs, actor, *event_columns).select_from(raw_logs.outerjoin(events, own))
    return stmt, raw_logs.c.seq, raw_logs.c.received_at, raw_logs.c.scope


def iter_rows(
    tx: LedgerTx,
    kind: str,
    *,
    scope: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    page: int = PAGE,
) -> Iterator[dict[str, Any]]:
    """Rows of ``kind`` in ledger order; ``since`` inclusive, ``until`` exclusive."""
    if kind == "erasures":
        if scope is not None:
            raise ValueError("erasures have no scope")
        yield from _erasure_rows(tx, since=since, until=until, page=page)
        return
    stmt, seq, at, scope_col = _select(kind)
    if scope is not None:
        if scope_col is None:
            raise ValueError(f"{kind} have no scope")
        stmt = stmt.where(scope_col == scope)
    if since is not None:
        stmt = stmt.where(at >= since)
    if until is not None:
        stmt = stmt.where(at < until)
    columns = COLUMNS[kind]
    last = 0
    while True:
        rows = tx.conn.execute(stmt.where(seq > last).order_by(seq).limit(page)).all()
        if not rows:
            return
        for r in rows:
            data = r._mapping
            yield {c: data[c] for c in columns}
        last = rows[-1].seq


def change_feed(
    tx: LedgerTx, *, after: int, upto: int, scopes: Sequence[str] | None, limit: int
) -> list[dict[str, Any]]:
    """Applied changes after change ``after`` up to change ``upto``, in chain order, in ``scopes``
    (None: every scope), with the account, who applied each, and the proposal's raw logs and the
    proposal it corrects: what a CRM or an agent polls to learn each value as it lands."""
    actor = (changes.c.actor_kind + ":" + changes.c.actor_id).label("actor")
    stmt = (
        sa.select(
            changes.c.seq,
            changes.c.applied_at,
            notes.c.scope,
            changes.c.note_id,
            changes.c.attribute,
            changes.c.old_value,
            changes.c.new_value,
            actor,
            changes.c.kind,
            changes.c.proposal_id,
            proposals.c.raw_log_ids,
            proposals.c.corrects,
            changes.c.hash,
        )
        .select_from(
            changes.join(notes, notes.c.id == changes.c.note_id).join(
                proposals, proposals.c.id == changes.c.proposal_id
            )
        )
        .where(changes.c.seq > after, changes.c.seq <= upto)
        .order_by(changes.c.seq)
        .limit(limit)
    )
    if scopes is not None:
        stmt = stmt.where(notes.c.scope.in_(list(scopes)))
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def _erasure_rows(
    tx: LedgerTx, *, since: datetime | None, until: datetime | None, page: int
) -> Iterator[dict[str, Any]]:
    """Each erased_rows entry with its erasure and that erasure's event, in chain order; ``since`` and
    ``until`` on erased_at. Keyset on (event seq, table, row key): an erasure may redact many rows."""
    stmt = sa.select(
        events.c.seq.label("event_seq"),
        erasures.c.id.label("erasure_id"),
        erasures.c.erased_at,
        erasures.c.erased_by,
        erasures.c.reason,
        erasures.c.selector,
        erasures.c.rows_sha256,
        events.c.hash.label("event_hash"),
        erased_rows.c.table_name,
        erased_rows.c.row_key,
        erased_rows.c.digest_before,
        erased_rows.c.digest_after,
        erased_rows.c.detail,
    ).select_from(
        erased_rows.join(erasures, erasures.c.id == erased_rows.c.erasure_id).join(
            events, sa.and_(events.c.kind == "erasure", events.c.subject == erasures.c.id)
        )
    )
    if since is not None:
        stmt = stmt.where(erasures.c.erased_at >= since)
    if until is not None:
        stmt = stmt.where(erasures.c.erased_at < until)
    key = (events.c.seq, erased_rows.c.table_name, erased_rows.c.row_key)
    last: tuple[Any, ...] | None = None
    while True:
        query = stmt if last is None else stmt.where(sa.tuple_(*key) > sa.tuple_(*last))
        rows = tx.conn.execute(query.order_by(*key).limit(page)).all()
        if not rows:
            return
        for r in rows:
            yield dict(r._mapping)
        tail = rows[-1]
        last = (tail.event_seq, tail.table_name, tail.row_key)
