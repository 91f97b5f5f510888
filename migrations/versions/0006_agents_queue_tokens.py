"""The raw log queue's leases, and the API tokens of agents and services.

- ``raw_log_states`` gains a lease: a worker (or a synchronous add_note) that claims an input writes
  its claim id in ``lease_owner`` and the time its claim ends in ``lease_until``; ``claims`` counts
  how often the input was claimed, so one that kills every worker that takes it is marked failed
  instead of being taken forever. ``ix_raw_log_states_queue`` serves the claim query.
- ``api_tokens``: bearer tokens of the HTTP API (and, later, a reviewer's CLI), each stored as the
  sha256 of a random 256-bit token, with the identity and role it carries. Revoking sets
  ``revoked_at``; a token row is never deleted, so what it did stays attributable.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.ledger.tables import UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("raw_log_states") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(100), nullable=True))
        batch.add_column(sa.Column("lease_until", UTCDateTime, nullable=True))
        batch.add_column(sa.Column("claims", sa.Integer, nullable=False, server_default="0"))
    op.create_index("ix_raw_log_states_queue", "raw_log_states", ["state", "lease_until"])
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("revoked_at", UTCDateTime, nullable=True),
        sa.Column("last_used_at", UTCDateTime, nullable=True),
    )
    op.create_index("ix_api_tokens_name", "api_tokens", ["name"])


def downgrade() -> None:
    op.drop_index("ix_api_tokens_name", table_name="api_tokens")
    op.drop_table("api_tokens")
    op.drop_index("ix_raw_log_states_queue", table_name="raw_log_states")
    with op.batch_alter_table("raw_log_states") as batch:
        batch.drop_column("claims")
        batch.drop_column("lease_until")
        batch.drop_column("lease_owner")
