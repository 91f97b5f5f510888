"""Each proposal may name its evidence: the exact span of the raw log that supports the value.

A reviewer decides at a glance when the words behind a proposed value are highlighted in the raw
log; the pipeline refuses to hold a value for review without such a span (issue 12). Nullable:
proposals made by people, and those recorded before this revision, have none.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both backends (SQLite >= 3.35 drops columns): a batch copy of
# ``proposals`` would trip the foreign key that ``changes`` holds on it.


def upgrade() -> None:
    op.add_column("proposals", sa.Column("evidence", sa.Text, nullable=True))


def downgrade() -> None:
    # History is never rewritten: a proposal's evidence is the span of the raw log it was decided on.
    count = sa.text("SELECT COUNT(*) FROM proposals WHERE evidence IS NOT NULL")
    cited = op.get_bind().execute(count).scalar()
    if cited:
        raise RuntimeError(
            f"refusing to downgrade below 0005: {cited} proposal(s) name their evidence in the raw "
            "log; 0004 would drop it, and with it what each reviewer saw highlighted"
        )
    op.execute("ALTER TABLE proposals DROP COLUMN evidence")
