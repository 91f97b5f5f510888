"""The policy in the ledger: every installed policy version, and the version behind each proposal.

- ``policy_versions``: append-only (triggers refuse UPDATE and DELETE, and TRUNCATE on PostgreSQL);
  one row per `amem policy install`: its canonical text, sha256, who installed it and when.
- ``proposals.policy_sha256``: the sha256 of the policy that routed the proposal (the installed
  version's, or the policy file's while none is installed). Existing proposals keep NULL.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.ledger.tables import UTCDateTime

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "policy_versions",
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("source", sa.String(1000), nullable=True),
        sa.Column("installed_by", sa.String(200), nullable=False),
        sa.Column("installed_at", UTCDateTime, nullable=False),
    )
    op.add_column("proposals", sa.Column("policy_sha256", sa.String(64), nullable=True))
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER policy_versions_no_{action.lower()} BEFORE {action} ON policy_versions "
                f"BEGIN SELECT RAISE(ABORT, 'policy_versions is append-only: {action} refused'); END"
            )
    else:  # amem_refuse_change() comes from 0001
        op.execute(
            "CREATE TRIGGER policy_versions_append_only BEFORE UPDATE OR DELETE ON policy_versions "
            "FOR EACH ROW EXECUTE FUNCTION amem_refuse_change()"
        )
        op.execute(
            "CREATE TRIGGER policy_versions_no_truncate BEFORE TRUNCATE ON policy_versions "
            "FOR EACH STATEMENT EXECUTE FUNCTION amem_refuse_change()"
        )


def downgrade() -> None:
    # History is never rewritten: the policy versions installed, and the one behind each proposal.
    conn = op.get_bind()
    installed = conn.execute(sa.text("SELECT COUNT(*) FROM policy_versions")).scalar()
    routed = conn.execute(sa.text("SELECT COUNT(*) FROM proposals WHERE policy_sha256 IS NOT NULL")).scalar()
    if installed or routed:
        raise RuntimeError(
            f"refusing to downgrade below 0007: {installed} policy version(s) installed and "
            f"{routed} proposal(s) naming the policy that routed them; 0006 would drop that history"
        )
    # A plain DROP COLUMN (SQLite 3.35+): a batch copy of proposals would trip the changes' foreign key.
    op.execute("ALTER TABLE proposals DROP COLUMN policy_sha256")
    op.drop_table("policy_versions")  # its triggers go with it
