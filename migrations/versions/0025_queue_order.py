"""The input queue's order in an index: ``raw_log_states.raw_log_seq`` and ``ix_raw_log_states_claim``.

A worker's claim takes the oldest free inputs, ordered by the raw log's arrival number
(``raw_logs.seq``), which lived only in ``raw_logs``: no index gave that order, so each claim read
and sorted the whole backlog while holding SQLite's writer lock (816 ms a claim with 200,000
queued), and agents' acknowledgements waited behind it. The arrival number is now kept beside the
input's state too, copied here for the inputs recorded before, and (state, raw_log_seq) is indexed:
a claim reads the first free rows of its state in order and stops. A plain index, not one partial
on pending rows: a claim binds its state as a parameter, and neither SQLite nor a generic
PostgreSQL plan can prove a parameter matches a partial index's condition.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("raw_log_states", sa.Column("raw_log_seq", sa.Integer, nullable=True))
    op.execute(
        "UPDATE raw_log_states SET raw_log_seq = "
        "(SELECT raw_logs.seq FROM raw_logs WHERE raw_logs.id = raw_log_states.raw_log_id)"
    )
    # Required: a row written without it would never be claimed (NULL is after no arrival number),
    # an acknowledged input left behind; refused at its insert instead. SQLite rebuilds the table
    # for that (it has no triggers; its indexes are made again), PostgreSQL alters the column.
    with op.batch_alter_table("raw_log_states") as batch:
        batch.alter_column("raw_log_seq", existing_type=sa.Integer, nullable=False)
    op.create_index("ix_raw_log_states_claim", "raw_log_states", ["state", "raw_log_seq"])


def downgrade() -> None:
    op.drop_index("ix_raw_log_states_claim", table_name="raw_log_states")
    # A plain DROP COLUMN (SQLite 3.35+) keeps the table, and PostgreSQL's trigger (0018), as they are.
    op.execute("ALTER TABLE raw_log_states DROP COLUMN raw_log_seq")
