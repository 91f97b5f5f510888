"""An idempotency key names one input per author and scope: ``input_keys.scope``.

Keys were kept per author (``agent:NAME``), which every token of that name shares: two tokens of a
CRM sync limited to different accounts (``--scope acme``, ``--scope initech``) numbered their
inputs alike, so the second account's input was refused, and the refusal named the first account's
raw log to a token that may not read it. A key now belongs to its author in one scope: the scope
of the raw log it names, copied here for the keys recorded before. The primary key is (author, key,
scope): the key before the scope, so finding an author's keys still reads the index alone.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.ledger.append_only import create_append_only_triggers, drop_append_only_triggers
from amem.ledger.tables import UTCDateTime

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PK = "pk_input_keys"
_BEFORE = ["actor_kind", "actor_id", "key_sha256"]


def _shape(primary_key: list[str]) -> sa.Table:
    """``input_keys`` with its scope column and ``primary_key``: what SQLite's batch rebuilds it as
    (given whole, so no column keeps the primary key flag the old table reflects)."""
    return sa.Table(
        "input_keys",
        sa.MetaData(),
        sa.Column("actor_kind", sa.String(16), nullable=False),
        sa.Column("actor_id", sa.String(200), nullable=False),
        sa.Column("key_sha256", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable="scope" not in primary_key),
        sa.Column("raw_log_id", sa.String(40), sa.ForeignKey("raw_logs.id"), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint(*primary_key, name=_PK),
    )


def _primary_key_on_postgresql(columns: list[str]) -> None:
    bind = op.get_bind()
    op.drop_constraint(
        sa.inspect(bind).get_pk_constraint("input_keys")["name"], "input_keys", type_="primary"
    )
    op.create_primary_key(_PK, "input_keys", columns)


def upgrade() -> None:
    drop_append_only_triggers(op, "input_keys")  # its rows get their scope
    op.add_column("input_keys", sa.Column("scope", sa.String(200), nullable=True))
    op.execute(
        "UPDATE input_keys SET scope = "
        "(SELECT raw_logs.scope FROM raw_logs WHERE raw_logs.id = input_keys.raw_log_id)"
    )
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("input_keys", copy_from=_shape([*_BEFORE, "scope"]), recreate="always"):
            pass  # rebuilt as _shape says: scope required, and in the primary key
    else:
        op.alter_column("input_keys", "scope", existing_type=sa.String(200), nullable=False)
        _primary_key_on_postgresql([*_BEFORE, "scope"])
    create_append_only_triggers(op, "input_keys")


def downgrade() -> None:
    # 0022 keeps one input per author and key: two scopes' inputs under one key cannot both stay.
    shared = op.get_bind().execute(
        sa.text(
            "SELECT COUNT(*) FROM (SELECT actor_kind, actor_id, key_sha256 FROM input_keys "
            "GROUP BY actor_kind, actor_id, key_sha256 HAVING COUNT(*) > 1) AS shared"
        )
    )
    count = shared.scalar()
    if count:
        raise RuntimeError(
            f"refusing to downgrade below 0023: {count} idempotency key(s) name inputs in several "
            "scopes of one author; 0022 keeps one input per author and key"
        )
    drop_append_only_triggers(op, "input_keys")  # SQLite's batch rebuilds the table without them
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("input_keys", copy_from=_shape(_BEFORE), recreate="always") as batch:
            batch.drop_column("scope")
    else:
        _primary_key_on_postgresql(_BEFORE)
        op.drop_column("input_keys", "scope")
    create_append_only_triggers(op, "input_keys")
