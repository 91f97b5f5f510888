"""Ledgers as an amem before 0008 kept them, for the tests of what the migrations do to one.

Today's code writes only today's schema, and a downgrade below 0008 is refused once anything is on
the event chain (history is never rewritten), below 0007 while a policy is on the record, below 0005
while a proposal names its evidence. A ledger an older amem wrote had none of these: ``back_to``
makes one from a ledger today's code wrote by lifting them by hand (triggers dropped and made
again, as tests/ledger/test_schema.py does for 0016's keys), then downgrading as far as asked.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from amem.domain.hashing import GENESIS_HASH
from amem.ledger import schema
from amem.ledger.append_only import create_append_only_triggers, drop_append_only_triggers


class _Op:
    """What the trigger helpers need of Alembic's op."""

    def __init__(self, conn: sa.Connection) -> None:
        self.conn = conn

    def get_bind(self) -> sa.Connection:
        return self.conn

    def execute(self, sql: str) -> None:
        self.conn.execute(sa.text(sql))


def _emptied(conn: sa.Connection, table: str) -> None:
    op: Any = _Op(conn)
    drop_append_only_triggers(op, table)
    conn.execute(sa.text(f"DELETE FROM {table}"))
    create_append_only_triggers(op, table)


def back_to(engine: sa.Engine, revision: str) -> None:
    """Downgrade to ``revision`` (below 0008) a ledger as the amem of that revision would have kept
    it: no event chain; below 0007 no policy on the record; below 0005 no proposal's evidence."""
    assert revision < "0008", "from 0008 up a downgrade needs no help"
    schema.downgrade(engine, "0008")
    with engine.begin() as conn:
        _emptied(conn, "events")
        conn.execute(sa.text("UPDATE chain_head SET event_seq = 0, event_hash = :g"), {"g": GENESIS_HASH})
        if revision < "0007":
            _emptied(conn, "policy_versions")
            conn.execute(sa.text("UPDATE proposals SET policy_sha256 = NULL"))
        if revision < "0005":
            conn.execute(sa.text("UPDATE proposals SET evidence = NULL"))
    schema.downgrade(engine, revision)
