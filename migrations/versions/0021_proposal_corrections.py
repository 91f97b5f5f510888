"""A reviewer's correction of a proposed value: ``proposals.corrects``.

A reviewer who sees a value that is nearly right (the renewal in March, but of next year) could only
reject it, and the right value was lost unless someone typed it in again elsewhere. A correction is
a new proposal by the reviewer with the value they read in the same raw log, routed by the policy;
``corrects`` names the proposal it replaces, which is rejected in the same transaction. NULL: a
proposal that corrects nothing, as every proposal made before. The proposal's chained event covers
the column only where it holds a value (amem.domain.hashing.OPTIONAL_PAYLOAD_FIELDS), so no existing
event's digest changes.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("proposals", sa.Column("corrects", sa.String(40), nullable=True))
    # which rejected proposals a correction replaced, counted per attribute and model (the audit
    # log's "What reviewers decide"), without a scan of every proposal per decision
    op.create_index("ix_proposals_corrects", "proposals", ["corrects"])


def downgrade() -> None:
    # Dropping the column would break the digest of every correction's event.
    count = sa.text("SELECT COUNT(*) FROM proposals WHERE corrects IS NOT NULL")
    corrections = op.get_bind().execute(count).scalar()
    if corrections:
        raise RuntimeError(
            f"refusing to downgrade below 0021: {corrections} proposal(s) correct another; 0020 could "
            "not say which, nor prove their records"
        )
    op.drop_index("ix_proposals_corrects", table_name="proposals")
    # A plain DROP COLUMN (SQLite 3.35+): a batch copy of proposals would trip the changes' foreign key.
    op.execute("ALTER TABLE proposals DROP COLUMN corrects")
