"""A token's creation records the token's digest: ``token_events.token_sha256``.

``api_tokens.token_sha256`` decides who a bearer token is, and nothing recorded it: a writer to the
database could put the digest of a token of their own on alice's row and act as her, and `amem
verify` said intact. A creation now records the digest of the token it made, covered by its chained
event, and verify compares it with the token's row. NULL: a revocation, or a token made before,
whose event's digest stays as recorded (amem.domain.hashing.OPTIONAL_PAYLOAD_FIELDS).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # adding a nullable column leaves token_events' rows, and their append-only triggers, as they are
    op.add_column("token_events", sa.Column("token_sha256", sa.String(64), nullable=True))


def downgrade() -> None:
    # Dropping the column would break the digest of every creation event that records it.
    count = sa.text("SELECT COUNT(*) FROM token_events WHERE token_sha256 IS NOT NULL")
    recorded = op.get_bind().execute(count).scalar()
    if recorded:
        raise RuntimeError(
            f"refusing to downgrade below 0022: {recorded} token creation(s) record their token's "
            "digest; 0021 could not prove those records"
        )
    # A plain DROP COLUMN (SQLite 3.35+) keeps the table, and its append-only triggers, as they are.
    op.execute("ALTER TABLE token_events DROP COLUMN token_sha256")
