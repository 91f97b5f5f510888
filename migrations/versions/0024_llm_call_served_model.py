"""A model call records the model the provider says answered: ``llm_calls.served_model``.

``llm_calls.model`` is the model string amem asked for. A provider may serve an alias (``gpt-4o``)
from a dated snapshot it names in its answer (``gpt-4o-2024-08-06``), and nothing kept that name:
an auditor could not tell which snapshot wrote a value. A call now records the name the provider
gave when it is not the one asked for. NULL: the provider named the model asked for, or none (a
failed call, the offline analyst), or the call was made before; such a row's event digest stays as
recorded (amem.domain.hashing.OPTIONAL_PAYLOAD_FIELDS).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # adding a nullable column leaves llm_calls' rows, and their append-only triggers, as they are
    op.add_column("llm_calls", sa.Column("served_model", sa.String(200), nullable=True))


def downgrade() -> None:
    # Dropping the column would break the digest of every model call that records it.
    count = sa.text("SELECT COUNT(*) FROM llm_calls WHERE served_model IS NOT NULL")
    recorded = op.get_bind().execute(count).scalar()
    if recorded:
        raise RuntimeError(
            f"refusing to downgrade below 0024: {recorded} model call(s) record the model the provider "
            "served; 0023 could not prove those records"
        )
    # A plain DROP COLUMN (SQLite 3.35+) keeps the table, and its append-only triggers, as they are.
    op.execute("ALTER TABLE llm_calls DROP COLUMN served_model")
