"""An index of proposals by reviewer and decision time: ``ix_proposals_reviewer_reviewed``.

The console's review queue shows each reviewer their own last decisions, read from the ledger so
they survive a reload or a lost browser session. Without the index that read would scan every
proposal the store ever held, on every page draw.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_proposals_reviewer_reviewed", "proposals", ["reviewer", "reviewed_at"])


def downgrade() -> None:
    op.drop_index("ix_proposals_reviewer_reviewed", table_name="proposals")
