"""The ledger's side of API tokens: rows keyed by the token's sha256 (the token itself is never kept)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from amem.ledger.store import LedgerTx
from amem.ledger.tables import api_tokens, token_events
from amem.ledger.tables import events as events_table


def insert(tx: LedgerTx, row: dict[str, Any]) -> None:
    tx.conn.execute(sa.insert(api_tokens), [row])


def by_digest(tx: LedgerTx, digest: str) -> dict[str, Any] | None:
    row = tx.conn.execute(sa.select(api_tokens).where(api_tokens.c.token_sha256 == digest)).one_or_none()
    return dict(row._mapping) if row is not None else None


def active_named(tx: LedgerTx, name: str) -> list[dict[str, Any]]:
    stmt = sa.select(api_tokens).where(api_tokens.c.name == name, api_tokens.c.revoked_at.is_(None))
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def all_tokens(tx: LedgerTx) -> list[dict[str, Any]]:
    stmt = sa.select(api_tokens).order_by(api_tokens.c.created_at, api_tokens.c.id)
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def revoke(tx: LedgerTx, *, name_or_id: str, at: datetime, role: str | None = None) -> list[dict[str, Any]]:
    """Revoke the active tokens of that name (or with that id); the rows revoked, as they now are.
    ``role``: only tokens of that role (a rotation replaces its own kind: an agent and a reviewer
    may share a name)."""
    named = sa.or_(api_tokens.c.name == name_or_id, api_tokens.c.id == name_or_id)
    if role is not None:
        named = sa.and_(named, api_tokens.c.role == role)
    active = [
        dict(r._mapping)
        for r in tx.conn.execute(sa.select(api_tokens).where(named, api_tokens.c.revoked_at.is_(None)))
    ]
    if active:
        ids = [row["id"] for row in active]
        tx.conn.execute(sa.update(api_tokens).where(api_tokens.c.id.in_(ids)).values(revoked_at=at))
    return [row | {"revoked_at": at} for row in active]


def record_event(tx: LedgerTx, row: dict[str, Any]) -> None:
    """A token's creation or revocation, chained (``token`` events): an auditor proves who could
    act as whom, and since when."""
    tx.conn.execute(sa.insert(token_events), [row])
    tx.append_event("token", row["id"], row, row["at"])


def events(tx: LedgerTx) -> list[dict[str, Any]]:
    """In the order they were written: the chain's seq, since a rotation's revocation and creation
    share one time."""
    chained = sa.and_(events_table.c.kind == "token", events_table.c.subject == token_events.c.id)
    stmt = (
        sa.select(token_events)
        .select_from(token_events.join(events_table, chained))
        .order_by(events_table.c.seq)
    )
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def touch(tx: LedgerTx, token_id: str, at: datetime) -> None:
    tx.conn.execute(sa.update(api_tokens).where(api_tokens.c.id == token_id).values(last_used_at=at))
