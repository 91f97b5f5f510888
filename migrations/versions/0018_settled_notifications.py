"""PostgreSQL tells listeners when an input settles: a trigger on ``raw_log_states``.

A status request that waits for its input (``GET /v1/inputs/{id}?wait=N``, the MCP tool
``input_status``) read the ledger every 50 to 250 ms until the input was processed, failed or
erased, because the worker may be in another process. On PostgreSQL a row of ``raw_log_states``
that reaches one of those states now sends ``NOTIFY amem_settled`` with the raw log's id, delivered
when its transaction commits, so a waiting request reads the status when it changed, not on a
timer. SQLite has no such signal between processes: nothing changes there.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The channel, as amem.ledger.settled listens on it.
CHANNEL = "amem_settled"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        f"""
        CREATE FUNCTION amem_notify_settled() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('{CHANNEL}', NEW.raw_log_id);
            RETURN NULL;
        END $$
        """
    )
    op.execute(
        "CREATE TRIGGER raw_log_states_settled AFTER UPDATE OF state ON raw_log_states FOR EACH ROW "
        "WHEN (NEW.state IN ('processed', 'failed', 'erased') AND NEW.state IS DISTINCT FROM OLD.state) "
        "EXECUTE FUNCTION amem_notify_settled()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS raw_log_states_settled ON raw_log_states")
    op.execute("DROP FUNCTION IF EXISTS amem_notify_settled()")
