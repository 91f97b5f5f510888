"""Idempotency keys kept as their sha256 only: ``input_keys.key_sha256``.

A sender's key is its own name for an input (a message id, a CRM activity id, a file and line),
and can hold what a data subject's erasure must remove: an email address in a message id, a
person's name in a file's. Erasure redacts a raw log's text and metadata, but the key, the one
plaintext of the input left, stayed. A key now is recorded as its digest, as the raw log's text
digest is: a retry is still recognised after an erasure (and the erased input is not kept again),
and nothing of the key is readable. The keys recorded before are digested here.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.domain.hashing import sha256_text
from amem.ledger.append_only import create_append_only_triggers, drop_append_only_triggers

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    bind = op.get_bind()
    drop_append_only_triggers(op, "input_keys")
    op.execute("ALTER TABLE input_keys RENAME COLUMN idempotency_key TO key_sha256")
    rows = bind.execute(sa.text("SELECT actor_kind, actor_id, key_sha256 FROM input_keys")).all()
    for actor_kind, actor_id, key in rows:
        bind.execute(
            sa.text(
                "UPDATE input_keys SET key_sha256 = :digest "
                "WHERE actor_kind = :kind AND actor_id = :actor AND key_sha256 = :key"
            ),
            {"digest": sha256_text(key), "kind": actor_kind, "actor": actor_id, "key": key},
        )
    create_append_only_triggers(op, "input_keys")


def downgrade() -> None:
    # A digest cannot give its key back: after a downgrade every retry would be kept again.
    keyed = op.get_bind().execute(sa.text("SELECT COUNT(*) FROM input_keys")).scalar()
    if keyed:
        raise RuntimeError(
            f"refusing to downgrade below 0017: {keyed} idempotency key(s) are kept as digests only, "
            "and 0016 would compare retries' keys with those digests, keeping each retry again"
        )
    drop_append_only_triggers(op, "input_keys")
    op.execute("ALTER TABLE input_keys RENAME COLUMN key_sha256 TO idempotency_key")
    create_append_only_triggers(op, "input_keys")
