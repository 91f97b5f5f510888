"""The retired notes found without scanning the store: a partial index on ``notes`` where
``invalid_at`` is set.

Each process's view of the vector index knows which notes are retired, so a search drops retired
neighbours without asking the ledger each time; it loads them once, when it opens. With this index
that read costs what the retired notes cost, not what the whole store does.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_notes_retired",
        "notes",
        ["id", "invalid_at", "deleted"],
        sqlite_where=sa.text("invalid_at IS NOT NULL"),
        postgresql_where=sa.text("invalid_at IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_notes_retired", table_name="notes")
