"""Raw logs found by their text's digest: an index on ``raw_logs.sha256``.

An import run again (after an interruption, or by mistake) skips the inputs already recorded:
those of the same scope, time, author and text. The digest finds them without reading the scope's
raw logs.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_raw_logs_sha256", "raw_logs", ["sha256"])


def downgrade() -> None:
    op.drop_index("ix_raw_logs_sha256", table_name="raw_logs")
