"""The ledger's side of API tokens: rows keyed by the token's sha256 (the token itself is never kept)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from amem.ledger.store import LedgerTx
from amem.ledger.tables import api_tokens


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


def revoke(tx: LedgerTx, *, name_or_id: str, at: datetime) -> int:
    result = tx.conn.execute(
        sa.update(api_tokens)
        .where(
            sa.or_(api_tokens.c.name == name_or_id, api_tokens.c.id == name_or_id),
            api_tokens.c.revoked_at.is_(None),
        )
        .values(revoked_at=at)
    )
    return int(result.rowcount or 0)


def touch(tx: LedgerTx, token_id: str, at: datetime) -> None:
    tx.conn.execute(sa.update(api_tokens).where(api_tokens.c.id == token_id).values(last_used_at=at))
