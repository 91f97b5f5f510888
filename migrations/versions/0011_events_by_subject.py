"""The event chain found by subject: an index on ``events`` (subject, kind).

An auditor's export of raw logs or proposals carries each row's own event (its seq and hash in the
one chain), joined page by page; without this index each page would scan the whole chain.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_events_subject_kind", "events", ["subject", "kind"])


def downgrade() -> None:
    op.drop_index("ix_events_subject_kind", table_name="events")
