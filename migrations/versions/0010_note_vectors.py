"""Vectors embedded once: each note's vector kept in the ledger, the index position moved here.

``note_vectors`` holds each note's embedded document as float32 bytes, per embedding model
identity (a digest of the weights file; a remote model's name and dimension), so a process
catching up or a rebuild loads vectors instead of embedding again. ``index_state`` gains the
index instance (one build of the index), the model it was built with and the ledger it was built
from: the position lives in the ledger, not in Chroma's collection metadata, and a model change
is detected here and refused until `amem reindex`.

Revision ID: 0010
Revises: 0008
Create Date: 2026-11-30
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op

from amem.ledger.tables import UTCDateTime

revision: str = "0010"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ADDED = ("instance", "built_by", "ledger_id")


def upgrade() -> None:
    _queue_and_tokens_if_skipped()
    op.create_table(
        "note_vectors",
        sa.Column("note_id", sa.String(40), sa.ForeignKey("notes.id"), primary_key=True),
        sa.Column("model", sa.String(300), primary_key=True),
        sa.Column("document_sha256", sa.String(64), nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
        sa.Column("stored_at", UTCDateTime, nullable=False),
    )
    op.add_column("index_state", sa.Column("instance", sa.String(64), nullable=False, server_default=""))
    op.add_column("index_state", sa.Column("built_by", sa.String(300), nullable=False, server_default=""))
    op.add_column("index_state", sa.Column("ledger_id", sa.String(64), nullable=False, server_default=""))


def _queue_and_tokens_if_skipped() -> None:
    """Make 0006's leases and tokens where the ledger passed 0007 without them.

    From 2026-11-30 23:39 to 2026-12-01 00:18 (c407e77 to 591dd53) amem's 0007 revised 0005 and
    0006 was not yet in the chain: a ledger stamped 0007 or 0008 then never ran 0006, and the
    migrations that alter its tables (0015 first) failed on every later upgrade.
    """
    if "api_tokens" in sa.inspect(op.get_bind()).get_table_names():
        return
    path = Path(__file__).with_name("0006_agents_queue_tokens.py")
    spec = importlib.util.spec_from_file_location("amem_migration_0006", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.upgrade()


def downgrade() -> None:
    # Derived data only: the vectors are embedded again and the index rebuilt on the next open.
    for column in _ADDED:
        op.execute(f"ALTER TABLE index_state DROP COLUMN {column}")
    op.drop_table("note_vectors")
