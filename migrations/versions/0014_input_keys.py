"""Inputs kept once by their sender's key: the ``input_keys`` table.

An agent whose request timed out after its input was committed could only send it again, and an
input without its time (``at``) was then kept twice. A sender now names an input with a key of its
own (the HTTP API's ``Idempotency-Key``, an import line's ``idempotency_key``); the key, unique per
author, names the raw log that holds it, so the same input sent again is kept once. Append-only, as
the raw logs it names.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.ledger.tables import UTCDateTime

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "input_keys",
        sa.Column("actor_kind", sa.String(16), primary_key=True),
        sa.Column("actor_id", sa.String(200), primary_key=True),
        sa.Column("idempotency_key", sa.String(200), primary_key=True),
        sa.Column("raw_log_id", sa.String(40), sa.ForeignKey("raw_logs.id"), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER input_keys_no_{action.lower()} BEFORE {action} ON input_keys "
                f"BEGIN SELECT RAISE(ABORT, 'input_keys is append-only: {action} refused'); END"
            )
    else:  # amem_refuse_change() is migration 0001's
        op.execute(
            "CREATE TRIGGER input_keys_append_only BEFORE UPDATE OR DELETE ON input_keys "
            "FOR EACH ROW EXECUTE FUNCTION amem_refuse_change()"
        )
        op.execute(
            "CREATE TRIGGER input_keys_no_truncate BEFORE TRUNCATE ON input_keys "
            "FOR EACH STATEMENT EXECUTE FUNCTION amem_refuse_change()"
        )


def downgrade() -> None:
    op.drop_table("input_keys")  # its triggers go with it
