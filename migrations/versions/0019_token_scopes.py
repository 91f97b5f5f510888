"""Agent tokens limited to some scopes: ``api_tokens.scopes`` and ``token_events.scopes``.

An agent token could read and add to every account's memory: a CRM sync for one customer's
workspace, or a leaked token, saw all of them. A token may now be made for some scopes only (a
sorted JSON list; NULL: every scope, as every token made before). The token's chained creation
records its scopes too; a row without them keeps the payload digest its event recorded
(amem.domain.hashing.OPTIONAL_PAYLOAD_FIELDS).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.ledger.append_only import create_append_only_triggers, drop_append_only_triggers
from amem.ledger.tables import OptionalJSON

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # adding a nullable column leaves token_events' rows, and their append-only triggers, as they are
    op.add_column("api_tokens", sa.Column("scopes", OptionalJSON, nullable=True))
    op.add_column("token_events", sa.Column("scopes", OptionalJSON, nullable=True))


def downgrade() -> None:
    # Dropping a limit would widen a token to every scope, and break its event's digest.
    count = sa.text("SELECT COUNT(*) FROM token_events WHERE scopes IS NOT NULL")
    limited = op.get_bind().execute(count).scalar()
    if limited:
        raise RuntimeError(
            f"refusing to downgrade below 0019: {limited} token record(s) limit a token to some scopes; "
            "0018 would let those tokens use every scope, and could not prove their records"
        )
    drop_append_only_triggers(op, "token_events")  # SQLite's batch rebuilds the table without them
    with op.batch_alter_table("token_events") as batch:
        batch.drop_column("scopes")
    create_append_only_triggers(op, "token_events")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("scopes")
