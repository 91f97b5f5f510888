"""Indexes for the review queue and per-attribute history.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_proposals_note_attr_status", "proposals", ["note_id", "attribute", "status"])
    op.create_index("ix_changes_note_attr", "changes", ["note_id", "attribute"])
    op.create_index("ix_changes_applied_at", "changes", ["applied_at"])


def downgrade() -> None:
    op.drop_index("ix_changes_applied_at", table_name="changes")
    op.drop_index("ix_changes_note_attr", table_name="changes")
    op.drop_index("ix_proposals_note_attr_status", table_name="proposals")
