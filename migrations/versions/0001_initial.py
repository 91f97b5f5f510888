"""The initial ledger: raw logs, notes, proposals, changes, LLM calls, append-only triggers.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from amem.ledger.tables import UTCDateTime

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
APPEND_ONLY = ("raw_logs", "changes")


def upgrade() -> None:
    op.create_table(
        "raw_logs",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("occurred_at", UTCDateTime, nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("received_at", UTCDateTime, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("metadata", JSON, nullable=False),
        sa.UniqueConstraint("seq", name="uq_raw_logs_seq"),
    )
    op.create_index("ix_raw_logs_scope", "raw_logs", ["scope"])
    op.create_table(
        "raw_log_states",
        sa.Column("raw_log_id", sa.String(40), sa.ForeignKey("raw_logs.id"), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("note_id", sa.String(40), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_raw_log_states_state", "raw_log_states", ["state"])
    op.create_table(
        "notes",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("keywords", JSON, nullable=False),
        sa.Column("tags", JSON, nullable=False),
        sa.Column("context", sa.Text, nullable=True),
        sa.Column("category", sa.String(200), nullable=True),
        sa.Column("links", JSON, nullable=False),
        sa.Column("decision_rationale", sa.Text, nullable=True),
        sa.Column("valid_at", UTCDateTime, nullable=True),
        sa.Column("invalid_at", UTCDateTime, nullable=True),
        sa.Column("deleted", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("extra", JSON, nullable=False),
        sa.Column("raw_log_ids", JSON, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
    )
    op.create_index("ix_notes_scope", "notes", ["scope"])
    op.create_table(
        "llm_calls",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("task", sa.String(64), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("prompt_version", sa.String(64), nullable=False),
        sa.Column("raw_log_id", sa.String(40), nullable=True),
        sa.Column("prompt_sha256", sa.String(64), nullable=False),
        sa.Column("response_text", sa.Text, nullable=True),
        sa.Column("prompt_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("completion_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("latency_ms", sa.Float, nullable=False, server_default="0"),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_llm_calls_raw_log_id", "llm_calls", ["raw_log_id"])
    op.create_table(
        "proposals",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("note_id", sa.String(40), sa.ForeignKey("notes.id"), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("attribute", sa.String(100), nullable=False),
        sa.Column("old_value", JSON, nullable=True),
        sa.Column("new_value", JSON, nullable=True),
        sa.Column("base_version", sa.Integer, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("proposer_kind", sa.String(16), nullable=False),
        sa.Column("proposer_id", sa.String(200), nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("prompt_version", sa.String(64), nullable=True),
        sa.Column("usage", JSON, nullable=True),
        sa.Column("llm_call_id", sa.String(40), sa.ForeignKey("llm_calls.id"), nullable=True),
        sa.Column("raw_log_ids", JSON, nullable=False),
        sa.Column("rule", sa.String(300), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reviewer", sa.String(200), nullable=True),
        sa.Column("review_comment", sa.Text, nullable=True),
        sa.Column("reviewed_at", UTCDateTime, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("revert_of", sa.Integer, nullable=True),
        sa.UniqueConstraint("seq", name="uq_proposals_seq"),
    )
    op.create_index("ix_proposals_note_id", "proposals", ["note_id"])
    op.create_index("ix_proposals_scope", "proposals", ["scope"])
    op.create_index("ix_proposals_status_created", "proposals", ["status", "created_at"])
    op.create_table(
        "changes",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("note_id", sa.String(40), sa.ForeignKey("notes.id"), nullable=False),
        sa.Column("proposal_id", sa.String(40), sa.ForeignKey("proposals.id"), nullable=False),
        sa.Column("attribute", sa.String(100), nullable=False),
        sa.Column("old_value", JSON, nullable=True),
        sa.Column("new_value", JSON, nullable=True),
        sa.Column("note_version", sa.Integer, nullable=False),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("applied_at", UTCDateTime, nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )
    op.create_index("ix_changes_note_id", "changes", ["note_id"])
    op.create_index("ix_changes_proposal_id", "changes", ["proposal_id"])
    op.create_table(
        "chain_head",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("last_seq", sa.Integer, nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=False),
        sa.Column("raw_log_seq", sa.Integer, nullable=False),
        sa.Column("proposal_seq", sa.Integer, nullable=False),
    )
    op.execute(
        "INSERT INTO chain_head (id, last_seq, last_hash, raw_log_seq, proposal_seq) "
        f"VALUES (1, 0, '{'0' * 64}', 0, 0)"
    )
    op.create_table(
        "index_state",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("last_seq", sa.Integer, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    _create_append_only_triggers()


def downgrade() -> None:
    # Raw logs are never lost: refuse to drop a ledger that holds any.
    if op.get_bind().execute(sa.text("SELECT COUNT(*) FROM raw_logs")).scalar():
        raise RuntimeError(
            "refusing to downgrade below 0001: the ledger holds raw logs, which are never dropped"
        )
    _drop_append_only_triggers()
    for table in (
        "index_state",
        "chain_head",
        "changes",
        "proposals",
        "llm_calls",
        "notes",
        "raw_log_states",
        "raw_logs",
    ):
        op.drop_table(table)


def _create_append_only_triggers() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for table in APPEND_ONLY:
            for action in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: {action} refused'); END"
                )
    elif dialect == "postgresql":
        op.execute(
            """
            CREATE FUNCTION amem_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
                USING ERRCODE = 'insufficient_privilege';
            END $$
            """
        )
        for table in APPEND_ONLY:
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION amem_refuse_change()"
            )
            op.execute(
                f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION amem_refuse_change()"
            )
    else:
        raise NotImplementedError(f"amem supports SQLite and PostgreSQL, not {dialect}")


def _drop_append_only_triggers() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for table in APPEND_ONLY:
            for action in ("update", "delete"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_no_{action}")
    elif dialect == "postgresql":
        for table in APPEND_ONLY:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}")
        op.execute("DROP FUNCTION IF EXISTS amem_refuse_change()")
