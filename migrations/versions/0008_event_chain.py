"""One hash chain for every event: the ``events`` table, its head, and a backfill of existing rows;
erasure's controlled exception to append-only.

Each raw log, LLM call, proposal, decision and change already in the ledger gets its event, in the
order of their times, so an upgraded ledger verifies. ``events`` is append-only like raw_logs.
``erasures`` and ``erased_rows`` (append-only) record each erasure; the raw_logs and changes
triggers now let an UPDATE through only for a row erased_rows lists, and only to the redacted form
(a raw log's text becomes the marker, nothing else moves; a change's values alone change).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from amem.domain.hashing import GENESIS_HASH, REDACTED, event_hash, payload_digest
from amem.ledger.tables import JSONValue as JSON
from amem.ledger.tables import UTCDateTime, changes, llm_calls, policy_versions, proposals, raw_logs

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ORDER = {"policy": 0, "raw_log": 1, "llm_call": 2, "proposal": 3, "decision": 4, "change": 5}


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
    op.create_table(
        "erasures",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("erased_by", sa.String(200), nullable=False),
        sa.Column("erased_at", UTCDateTime, nullable=False),
        sa.Column("selector", JSON, nullable=False),
        sa.Column("rows_sha256", sa.String(64), nullable=False),
    )
    op.create_table(
        "erased_rows",
        sa.Column("erasure_id", sa.String(40), sa.ForeignKey("erasures.id"), primary_key=True),
        sa.Column("table_name", sa.String(32), primary_key=True),
        sa.Column("row_key", sa.String(64), primary_key=True),
        sa.Column("digest_before", sa.String(64), nullable=True),
        sa.Column("digest_after", sa.String(64), nullable=True),
        sa.Column("detail", JSON, nullable=True),
    )
    _backfill(op.get_bind())
    _create_triggers()
    _erasure_guards(create=True)


def downgrade() -> None:
    conn = op.get_bind()
    if conn.execute(sa.text("SELECT COUNT(*) FROM erasures")).scalar():
        raise RuntimeError(
            "refusing to downgrade below 0008: the ledger records erasures, which are never dropped"
        )
    # History is never rewritten: an upgrade would chain the rows again, in another order and at
    # other times (and without what 0007 cannot keep), so no signed checkpoint would hold.
    chained = conn.execute(sa.text("SELECT COUNT(*) FROM events")).scalar()
    if chained:
        raise RuntimeError(
            f"refusing to downgrade below 0008: the event chain holds {chained} event(s); 0007 would "
            "drop the chain, and an upgrade would make another one that no signed checkpoint proves"
        )
    _erasure_guards(create=False)
    _drop_triggers()
    op.drop_table("erased_rows")
    op.drop_table("erasures")
    op.drop_table("events")
    with op.batch_alter_table("chain_head") as batch:
        batch.drop_column("event_hash")
        batch.drop_column("event_seq")


def _backfill(conn: sa.Connection) -> None:
    items: list[tuple[Any, int, int, str, str, dict[str, Any]]] = []

    def add(kind: str, subject: str, row: dict[str, Any], at: Any, tiebreak: int) -> None:
        items.append((at, _ORDER[kind], tiebreak, kind, subject, row))

    def rows(table: sa.Table) -> Any:
        """The table's rows, read through today's column types, as far as its columns exist here."""
        present = {c["name"] for c in sa.inspect(conn).get_columns(table.name)}
        return conn.execute(sa.select(*[c for c in table.c if c.name in present]))

    for r in rows(policy_versions):
        row = dict(r._mapping)
        add("policy", str(row["version"]), row, row["installed_at"], row["version"])
    for r in rows(raw_logs):
        row = dict(r._mapping)
        add("raw_log", row["id"], row, row["received_at"], row["seq"])
    for r in rows(llm_calls):
        row = dict(r._mapping)
        add("llm_call", row["id"], row, row["created_at"], 0)
    for r in rows(proposals):
        row = dict(r._mapping)
        add("proposal", row["id"], row, row["created_at"], row["seq"])
        if row["status"] != "pending":
            add("decision", row["id"], row, row["reviewed_at"] or row["created_at"], row["seq"])
    for r in rows(changes):
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


_NEW_APPEND_ONLY = ("events", "erasures", "erased_rows")


def _create_triggers() -> None:
    dialect = op.get_bind().dialect.name
    for table in _NEW_APPEND_ONLY:
        if dialect == "sqlite":
            for action in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: {action} refused'); END"
                )
        else:
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION amem_refuse_change()"
            )
            op.execute(
                f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION amem_refuse_change()"
            )


def _drop_triggers() -> None:
    for table in _NEW_APPEND_ONLY:
        if op.get_bind().dialect.name == "sqlite":
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_update")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_delete")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}")


#: What an erasure may change in each guarded table: everything else must stay as it was.
_RAW_LOG_KEPT = ("id", "seq", "sha256", "occurred_at", "actor_kind", "actor_id", "scope", "received_at")
_CHANGE_KEPT = (
    "seq", "note_id", "proposal_id", "attribute", "note_version", "actor_kind", "actor_id", "kind",
    "applied_at", "prev_hash", "hash",
)  # fmt: skip


def _allowed(table: str) -> str:
    """The SQL condition under which an UPDATE of ``table`` is an erasure's redaction."""
    if table == "raw_logs":
        kept = " AND ".join(f"NEW.{c} = OLD.{c}" for c in _RAW_LOG_KEPT)
        key = "OLD.id"
        extra = f" AND NEW.text = '{REDACTED}'"
    else:
        kept = " AND ".join(f"NEW.{c} = OLD.{c}" for c in _CHANGE_KEPT)
        key = "CAST(OLD.seq AS TEXT)" if op.get_bind().dialect.name == "sqlite" else "OLD.seq::text"
        extra = ""
    listed = f"EXISTS (SELECT 1 FROM erased_rows WHERE table_name = '{table}' AND row_key = {key})"
    return f"{kept}{extra} AND {listed}"


def _erasure_guards(*, create: bool) -> None:
    """Replace the UPDATE refusal of raw_logs and changes by one that lets an erasure through (or back)."""
    dialect = op.get_bind().dialect.name
    for table in ("raw_logs", "changes"):
        if dialect == "sqlite":
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_update")
            when = f"WHEN NOT ({_allowed(table)}) " if create else ""
            op.execute(
                f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} {when}"
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: UPDATE refused'); END"
            )
            continue
        op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
        if create:
            op.execute(
                f"""
                CREATE FUNCTION amem_{table}_guard() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  IF TG_OP = 'UPDATE' AND {_allowed(table)} THEN
                    RETURN NEW;
                  END IF;
                  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
                    USING ERRCODE = 'insufficient_privilege';
                END $$
                """
            )
            function = f"amem_{table}_guard()"
        else:
            function = "amem_refuse_change()"
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {function}"
        )
        if not create:
            op.execute(f"DROP FUNCTION IF EXISTS amem_{table}_guard()")
