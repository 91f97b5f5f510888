"""The ledger's side of API tokens: rows keyed by the token's sha256 (the token itself is never kept)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from amem.domain.identity import identity_key
from amem.ledger.store import Ledger, LedgerTx
from amem.ledger.tables import api_tokens, token_events
from amem.ledger.tables import events as events_table


def insert(tx: LedgerTx, row: dict[str, Any]) -> None:
    tx.conn.execute(sa.insert(api_tokens), [row])


def by_digest(tx: LedgerTx, digest: str) -> dict[str, Any] | None:
    row = tx.conn.execute(sa.select(api_tokens).where(api_tokens.c.token_sha256 == digest)).one_or_none()
    return dict(row._mapping) if row is not None else None


def newest_named(tx: LedgerTx, name: str, *, role: str) -> dict[str, Any] | None:
    """The newest token of ``name``'s identity and ``role``, revoked or not (None: there never was
    one): what a rotation after a revocation keeps the reach of."""
    stmt = (
        sa.select(api_tokens)
        .where(api_tokens.c.role == role)
        .order_by(api_tokens.c.created_at.desc(), api_tokens.c.id.desc())
    )
    wanted = identity_key(name)
    return next(
        (dict(r._mapping) for r in tx.conn.execute(stmt) if identity_key(str(r.name)) == wanted), None
    )


def all_tokens(tx: LedgerTx) -> list[dict[str, Any]]:
    stmt = sa.select(api_tokens).order_by(api_tokens.c.created_at, api_tokens.c.id)
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]


def revoke(tx: LedgerTx, *, name_or_id: str, at: datetime, role: str | None = None) -> list[dict[str, Any]]:
    """Revoke the active tokens of that name (or with that id); the rows revoked, as they now are.
    A name is compared as an identity (amem/domain/identity.py: ``Alice`` is ``alice``), as the
    token's holder is: compared as text, a variant's rotation left the old token working. The
    identity drops a kind prefix, so ``agent:bob`` names every role's bob here: a caller meaning one
    role passes ``role``, as ``TokenService.revoke`` does for a prefixed name.
    ``role``: only tokens of that role (a rotation replaces its own kind: an agent and a reviewer
    may share a name)."""
    live = api_tokens.c.revoked_at.is_(None)
    if role is not None:
        live = sa.and_(live, api_tokens.c.role == role)
    wanted = identity_key(name_or_id)
    active = [
        dict(r._mapping)
        for r in tx.conn.execute(sa.select(api_tokens).where(live).order_by(api_tokens.c.created_at))
        if r.id == name_or_id or identity_key(str(r.name)) == wanted
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


def touch_unless_busy(ledger: Ledger, token_id: str, at: datetime) -> bool:
    """Record a token's last use, unless that would wait: False, and nothing written, when another
    writer holds SQLite's write lock or (PostgreSQL) the token's row. Every request checks a token,
    and a read-only one waited for the write lock (60 s behind a long write, then a 500) only to
    note the time; skipped, the next request past ``TOUCH_EVERY`` tries again, so the time shown
    stays within moments of the last use."""
    stamp = sa.update(api_tokens).values(last_used_at=at)
    with ledger.engine.connect() as conn:
        if ledger.dialect == "postgresql":  # one statement, one round trip; a locked row is skipped
            free = sa.select(api_tokens.c.id).where(api_tokens.c.id == token_id)
            free = free.with_for_update(skip_locked=True)
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            return conn.execute(stamp.where(api_tokens.c.id.in_(free.scalar_subquery()))).rowcount > 0
        # SQLite: no BEGIN (the UPDATE is its own transaction), and no busy wait: SQLITE_BUSY at once
        conn = conn.execution_options(amem_one_statement=True)
        conn.exec_driver_sql("PRAGMA busy_timeout=0")
        try:
            conn.execute(stamp.where(api_tokens.c.id == token_id))
            conn.commit()
        except sa.exc.OperationalError as exc:
            conn.rollback()
            if "locked" not in str(exc.orig) and "busy" not in str(exc.orig):
                raise
            return False
        finally:
            conn.exec_driver_sql("PRAGMA busy_timeout=60000")  # as every other use of the connection
            conn.commit()
        return True
