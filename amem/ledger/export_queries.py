"""The auditors' export read model: changes, proposals or raw logs, page by page (keyset on seq).

Each page is one bounded query, so an export of any size holds one page in memory. Rows are flat
dicts of the ledger's columns (actor and proposer as ``kind:id``); the service writes them out.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from amem.ledger.store import LedgerTx
from amem.ledger.tables import changes, notes, proposals, raw_logs

PAGE = 1000

#: Each kind's columns, in the order an export writes them.
COLUMNS: dict[str, list[str]] = {
    "changes": [
        "seq", "applied_at", "scope", "note_id", "attribute", "old_value", "new_value", "note_version",
        "actor", "kind", "proposal_id", "prev_hash", "hash",
    ],
    "proposals": [
        "seq", "id", "created_at", "scope", "note_id", "attribute", "old_value", "new_value",
        "base_version", "reason", "proposer", "model", "prompt_version", "llm_call_id", "raw_log_ids",
        "rule", "status", "reviewer", "review_comment", "reviewed_at", "revert_of",
    ],
    "raw_logs": [
        "seq", "id", "occurred_at", "received_at", "scope", "actor", "text", "sha256", "metadata",
    ],
}  # fmt: skip


def _select(kind: str) -> tuple[sa.Select[Any], Any, Any, Any]:
    """The statement, its seq column, its time column (--since / --until) and its scope column."""
    if kind == "changes":
        stmt = sa.select(
            changes,
            notes.c.scope,
            (changes.c.actor_kind + ":" + changes.c.actor_id).label("actor"),
        ).select_from(changes.join(notes, notes.c.id == changes.c.note_id))
        return stmt, changes.c.seq, changes.c.applied_at, notes.c.scope
    if kind == "proposals":
        proposer = (proposals.c.proposer_kind + ":" + proposals.c.proposer_id).label("proposer")
        stmt = sa.select(proposals, proposer)
        return stmt, proposals.c.seq, proposals.c.created_at, proposals.c.scope
    stmt = sa.select(raw_logs, (raw_logs.c.actor_kind + ":" + raw_logs.c.actor_id).label("actor"))
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
    stmt, seq, at, scope_col = _select(kind)
    if scope is not None:
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
