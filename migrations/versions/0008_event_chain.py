"""One hash chain for every event: the ``events`` table, its head, and a backfill of existing rows.

Each raw log, LLM call, proposal, decision and change already in the ledger gets its event, in the
order of their times, so an upgraded ledger verifies. ``events`` is append-only like raw_logs.

Revision ID: 0008
Revises: 0004
Create Date: 2026-11-30
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from amem.domain.hashing import GENESIS_HASH, event_hash, payload_digest
from amem.ledger.tables import UTCDateTime, changes, llm_calls, proposals, raw_logs

revision: str = "0008"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ORDER = {"raw_log": 0, "llm_call": 1, "proposal": 2, "decision": 3, "change": 4}


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(200), nullable=False),
        sa.Column("payload_digest", sa.String(64), nullable=False),
        sa.Column("at", UTCDateTime, nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    with op.batch_alter_table("chain_head") as batch:
        batch.add_column(sa.Column("event_seq", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("event_hash", sa.String(64), nullable=False, server_default=GENESIS_HASH))
    _backfill(op.get_bind())
    _create_triggers()


def downgrade() -> None:
    _drop_triggers()
    op.drop_table("events")
    with op.batch_alter_table("chain_head") as batch:
        batch.drop_column("event_hash")
        batch.drop_column("event_seq")


def _backfill(conn: sa.Connection) -> None:
    items: list[tuple[Any, int, int, str, str, dict[str, Any]]] = []

    def add(kind: str, subject: str, row: dict[str, Any], at: Any, tiebreak: int) -> None:
        items.append((at, _ORDER[kind], tiebreak, kind, subject, row))

    for r in conn.execute(sa.select(raw_logs)):
        row = dict(r._mapping)
        add("raw_log", row["id"], row, row["received_at"], row["seq"])
    for r in conn.execute(sa.select(llm_calls)):
        row = dict(r._mapping)
        add("llm_call", row["id"], row, row["created_at"], 0)
    for r in conn.execute(sa.select(proposals)):
        row = dict(r._mapping)
        add("proposal", row["id"], row, row["created_at"], row["seq"])
        if row["status"] != "pending":
            add("decision", row["id"], row, row["reviewed_at"] or row["created_at"], row["seq"])
    for r in conn.execute(sa.select(changes)):
        row = dict(r._mapping)
        add("change", str(row["seq"]), row, row["applied_at"], row["seq"])
    items.sort(key=lambda item: (item[0], item[1], item[2], item[4]))
    prev, seq, batch = GENESIS_HASH, 0, []
    for at, _order, _tie, kind, subject, row in items:
        seq += 1
        digest = payload_digest(kind, row)
        new_hash = event_hash(
            prev_hash=prev, seq=seq, kind=kind, subject=subject, payload_digest=digest, at=at
        )
        batch.append(
            {
                "seq": seq,
                "kind": kind,
                "subject": subject,
                "payload_digest": digest,
                "at": at,
                "prev_hash": prev,
                "hash": new_hash,
            }
        )
        prev = new_hash
    events = sa.table(
        "events",
        sa.column("seq"),
        sa.column("kind"),
        sa.column("subject"),
        sa.column("payload_digest"),
        sa.column("at", UTCDateTime),
        sa.column("prev_hash"),
        sa.column("hash"),
    )
    for start in range(0, len(batch), 5000):
        conn.execute(sa.insert(events), batch[start : start + 5000])
    conn.execute(sa.text("UPDATE chain_head SET event_seq = :s, event_hash = :h"), {"s": seq, "h": prev})


def _create_triggers() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER events_no_{action.lower()} BEFORE {action} ON events "
                f"BEGIN SELECT RAISE(ABORT, 'events is append-only: {action} refused'); END"
            )
    else:
        op.execute(
            "CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events "
            "FOR EACH ROW EXECUTE FUNCTION amem_refuse_change()"
        )
        op.execute(
            "CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events "
            "FOR EACH STATEMENT EXECUTE FUNCTION amem_refuse_change()"
        )


def _drop_triggers() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS events_no_update")
        op.execute("DROP TRIGGER IF EXISTS events_no_delete")
    else:
        op.execute("DROP TRIGGER IF EXISTS events_append_only ON events")
        op.execute("DROP TRIGGER IF EXISTS events_no_truncate ON events")
