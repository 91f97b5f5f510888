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

from amem.ledger.append_only import create_append_only_triggers
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
    create_append_only_triggers(op, "input_keys")


def downgrade() -> None:
    op.drop_table("input_keys")  # its triggers go with it
