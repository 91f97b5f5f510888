"""Tokens' creations and revocations, chained: the ``token_events`` table.

A reviewer's token stands in for their password, and an agent's decides who an input is from;
``api_tokens`` holds only each token's current state, which a writer to the database could change
unseen. Each creation and revocation is now a row here and a ``token`` event in the event chain,
so ``amem verify`` proves who could act as whom, and since when, and finds a token row that no
recorded creation backs. The tokens made before this migration are recorded here as they stand
(made, and revoked where they were), their events appended to the chain now. Append-only.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from amem.domain.hashing import event_hash, payload_digest
from amem.domain.models import new_id, utcnow
from amem.ledger.append_only import create_append_only_triggers
from amem.ledger.tables import UTCDateTime

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "token_events",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("token_id", sa.String(40), nullable=False, index=True),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("by", sa.String(200), nullable=True),
        sa.Column("at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=True),
    )
    _record_existing_tokens()
    create_append_only_triggers(op, "token_events")


def downgrade() -> None:
    # History is never rewritten: the chain's token events would lose the records they commit to.
    chained = op.get_bind().execute(sa.text("SELECT COUNT(*) FROM events WHERE kind = 'token'")).scalar()
    if chained:
        raise RuntimeError(
            f"refusing to downgrade below 0016: the event chain records {chained} token(s) made or "
            "revoked, whose records (token_events) a downgrade would drop"
        )
    op.drop_table("token_events")  # its triggers go with it


def _record_existing_tokens() -> None:
    """Each token made before this migration, as made (and as revoked, where it was), chained at
    the end of the event chain now, as amem records a token made or revoked from here on."""
    conn = op.get_bind()
    api_tokens = sa.table(
        "api_tokens",
        *(sa.column(c) for c in ("id", "name", "role", "created_by")),
        *(sa.column(c, UTCDateTime) for c in ("created_at", "revoked_at", "expires_at")),
    )
    ordered = sa.select(api_tokens).order_by(api_tokens.c.created_at, api_tokens.c.id)
    tokens = conn.execute(ordered).mappings().all()
    if not tokens:
        return
    rows = []
    for token in tokens:
        made = {"action": "created", "by": token["created_by"], "at": token["created_at"]}
        stood = [made] + (
            [{"action": "revoked", "by": None, "at": token["revoked_at"]}] if token["revoked_at"] else []
        )
        for event in stood:
            rows.append(
                {
                    "id": new_id("tev"),
                    "token_id": token["id"],
                    "name": token["name"],
                    "role": token["role"],
                    "expires_at": token["expires_at"],
                    **event,
                }
            )
    table = sa.table(
        "token_events",
        *(sa.column(c) for c in ("id", "token_id", "action", "name", "role", "by")),
        sa.column("at", UTCDateTime),
        sa.column("expires_at", UTCDateTime),
    )
    conn.execute(sa.insert(table), rows)
    head = conn.execute(sa.text("SELECT event_seq, event_hash FROM chain_head")).mappings().one()
    seq, prev, now = int(head["event_seq"]), str(head["event_hash"]), utcnow()
    events = sa.table(
        "events",
        *(sa.column(c) for c in ("seq", "kind", "subject", "payload_digest", "prev_hash", "hash")),
        sa.column("at", UTCDateTime),
    )
    chained = []
    for row in rows:
        seq += 1
        digest = payload_digest("token", row)
        new_hash = event_hash(
            prev_hash=prev, seq=seq, kind="token", subject=row["id"], payload_digest=digest, at=now
        )
        chained.append(
            {"seq": seq, "kind": "token", "subject": row["id"], "payload_digest": digest, "at": now,
             "prev_hash": prev, "hash": new_hash}
        )  # fmt: skip
        prev = new_hash
    conn.execute(sa.insert(events), chained)
    conn.execute(sa.text("UPDATE chain_head SET event_seq = :s, event_hash = :h"), {"s": seq, "h": prev})
