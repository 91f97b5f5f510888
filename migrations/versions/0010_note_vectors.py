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

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.ledger.tables import UTCDateTime

revision: str = "0010"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ADDED = ("instance", "built_by", "ledger_id")


def upgrade() -> None:
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


def downgrade() -> None:
    # Derived data only: the vectors are embedded again and the index rebuilt on the next open.
    for column in _ADDED:
        op.execute(f"ALTER TABLE index_state DROP COLUMN {column}")
    op.drop_table("note_vectors")
