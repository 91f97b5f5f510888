"""Tokens that expire: ``api_tokens.expires_at``.

A reviewer's token stands in for their password, and a token lent to an agent or a service was
good until someone revoked it. A token may now carry the time it stops being accepted; reviewer
tokens get one by default (``amem tokens create``). Tokens made before keep none (never expire).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.ledger.tables import UTCDateTime

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("expires_at", UTCDateTime, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("expires_at")
