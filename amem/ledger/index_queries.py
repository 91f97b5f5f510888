"""What the ledger keeps for the derived vector index: each note's vector and the index position.

Both are derived data, written in transactions of their own that never take the chain-head lock
(on PostgreSQL; SQLite has one writer at a time anyway), so the index never holds up a decision
or an add_note's write.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cache

import numpy as np
import sqlalchemy as sa
from numpy.typing import NDArray
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from amem.ledger.store import Ledger, LedgerTx
from amem.ledger.tables import changes, erasures, events, index_state, note_vectors

#: How a ledger's identity begins in ``index_state.ledger_id`` (an older amem kept the hash of the
#: ledger's first change there, or nothing).
IDENTITY_PREFIX = "ledger-"


def new_identity() -> str:
    """A ledger's identity: random, made once (with its index's first build, or on the first open
    of an older ledger), and recorded in each build's marker, so that builds of two ledgers sharing
    one index location are told apart."""
    return IDENTITY_PREFIX + uuid.uuid4().hex


@dataclass(frozen=True)
class StoredPosition:
    """An index's row in ``index_state``: how far ``instance`` (one build of the index), made with
    ``built_by`` from the ledger identified by ``ledger_id``, has absorbed the changes."""

    last_seq: int
    instance: str
    built_by: str
    ledger_id: str

    @property
    def identity(self) -> str:
        """The ledger's identity ("" when this row was written by an older amem)."""
        return self.ledger_id if self.ledger_id.startswith(IDENTITY_PREFIX) else ""


@dataclass(frozen=True)
class LedgerCheck:
    """What a process reads before it trusts what it holds from the ledger (its index view, a
    search's cached hits), in one query: the index's stored position (None before its first
    build), the ledger's last change seq, and how many erasures were recorded. While the three
    stay put nothing it holds is stale: every change to a note is a change row, and an erasure,
    the one thing that rewrites rows in place, is an erasure row. ``events``, the last event of
    the chain, moves with every proposal and decision too (a retirement proposed, then rejected):
    what a search keeps of its hits' pending retirements holds while it stays put."""

    position: StoredPosition | None
    head: int
    erasures: int
    events: int = 0


@dataclass(frozen=True)
class StoredVector:
    document_sha256: str
    vector: NDArray[np.float32]


@contextmanager
def derived_write(ledger: Ledger) -> Iterator[LedgerTx]:
    """A write transaction for derived data: BEGIN IMMEDIATE on SQLite, no chain-head lock."""
    with ledger.engine.connect() as conn:
        conn.execution_options(amem_write=True)
        with conn.begin():
            yield LedgerTx(conn, ledger.dialect, writable=True)


# -- the position ----------------------------------------------------------------------------------


def position(tx: LedgerTx, name: str) -> StoredPosition | None:
    row = tx.conn.execute(sa.select(index_state).where(index_state.c.name == name)).one_or_none()
    if row is None:
        return None
    return StoredPosition(int(row.last_seq), row.instance, row.built_by, row.ledger_id)


#: Built once: every search runs it (building it each time cost more than running it on SQLite).
_HEAD = sa.select(sa.func.coalesce(sa.func.max(changes.c.seq), 0)).scalar_subquery()
_ERASURES = sa.select(sa.func.count()).select_from(erasures).scalar_subquery()
_EVENTS = sa.select(sa.func.coalesce(sa.func.max(events.c.seq), 0)).scalar_subquery()
_LEDGER_CHECK = sa.select(
    index_state, _HEAD.label("head"), _ERASURES.label("erasures"), _EVENTS.label("events")
).where(index_state.c.name == sa.bindparam("name"))
_HEADS = sa.select(_HEAD.label("head"), _ERASURES.label("erasures"), _EVENTS.label("events"))


def ledger_check(tx: LedgerTx, name: str) -> LedgerCheck:
    """The index's position, the ledger's last change seq and its erasures, in one query while
    the position is recorded (a search's catch-up check: nothing to apply when the head is where
    the index is)."""
    row = tx.conn.execute(_LEDGER_CHECK, {"name": name}).one_or_none()
    if row is None:
        heads = tx.conn.execute(_HEADS).one()
        return LedgerCheck(None, int(heads.head), int(heads.erasures), int(heads.events))
    position = StoredPosition(int(row.last_seq), row.instance, row.built_by, row.ledger_id)
    return LedgerCheck(position, int(row.head), int(row.erasures), int(row.events))


def switch(tx: LedgerTx, name: str, expected: str | None, to: StoredPosition, now: datetime) -> bool:
    """Compare-and-set: make ``to`` the index's build, if the build recorded is still ``expected``
    (None: none is recorded yet). The one place a position is set rather than moved forward: a
    build made beside the one in use becomes the index here, once complete. False (nothing
    written) when another build took its place meanwhile."""
    values = {
        "last_seq": to.last_seq,
        "instance": to.instance,
        "built_by": to.built_by,
        "ledger_id": to.ledger_id,
        "updated_at": now,
    }
    if expected is None:
        insert = postgresql.insert(index_state) if tx.dialect == "postgresql" else sqlite.insert(index_state)
        statement = insert.values(name=name, **values).on_conflict_do_nothing().returning(index_state.c.name)
        # RETURNING, not rowcount: psycopg reports no row count for an INSERT ... ON CONFLICT
        return tx.conn.execute(statement).first() is not None
    else:
        done = tx.conn.execute(
            sa.update(index_state)
            .where(index_state.c.name == name, index_state.c.instance == expected)
            .values(**values)
        )
    return done.rowcount == 1


def advance(tx: LedgerTx, name: str, instance: str, built_by: str, last_seq: int, now: datetime) -> bool:
    """Compare-and-set: move the position of this build forward to ``last_seq``. False (nothing
    written) when it is already there or further, or when the index was rebuilt meanwhile."""
    moved = tx.conn.execute(
        sa.update(index_state)
        .where(
            index_state.c.name == name,
            index_state.c.instance == instance,
            index_state.c.built_by == built_by,
            index_state.c.last_seq < last_seq,
        )
        .values(last_seq=last_seq, updated_at=now)
    )
    return moved.rowcount == 1


def ledger_identity(tx: LedgerTx) -> str:
    """The identity any index row of this ledger carries ("" if none yet): one ledger, one
    identity, however many index locations it has (each machine's local index has its own row)."""
    stmt = sa.select(index_state.c.ledger_id).where(index_state.c.ledger_id.startswith(IDENTITY_PREFIX))
    return tx.conn.execute(stmt.order_by(index_state.c.name).limit(1)).scalar_one_or_none() or ""


def adopt(tx: LedgerTx, name: str, legacy: str, now: datetime) -> bool:
    """Give the index location ``name`` the row an older amem kept under ``legacy`` (one row per
    ledger, whatever the location), when it has none yet. True when a row was copied."""
    if legacy == name or position(tx, name) is not None:
        return False
    old = position(tx, legacy)
    if old is None:
        return False
    return switch(tx, name, None, old, now)


def identify(ledger: Ledger, name: str) -> str:
    """The ledger's identity, given to its index's row now if an older amem wrote it without one
    (compare-and-set: a process that gave it first wins). "" when there is no row yet (the first
    build makes one) or the ledger cannot be written (a read-only replica: the builds are then told
    apart by what they replaced)."""
    with ledger.read() as tx:
        row = position(tx, name)
    if row is None or row.identity:
        return row.identity if row is not None else ""
    try:
        with derived_write(ledger) as tx:
            tx.conn.execute(
                sa.update(index_state)
                .where(index_state.c.name == name, index_state.c.ledger_id == row.ledger_id)
                .values(ledger_id=ledger_identity(tx) or new_identity())
            )
    except SQLAlchemyError:
        return ""
    with ledger.read() as tx:
        row = position(tx, name)
    return row.identity if row is not None else ""


# -- the vectors -----------------------------------------------------------------------------------


def vectors(tx: LedgerTx, model: str, note_ids: Sequence[str]) -> dict[str, StoredVector]:
    """The stored vectors of these notes under ``model``."""
    out: dict[str, StoredVector] = {}
    ids = list(dict.fromkeys(note_ids))
    for start in range(0, len(ids), 500):
        rows = tx.conn.execute(
            sa.select(note_vectors.c.note_id, note_vectors.c.document_sha256, note_vectors.c.vector).where(
                note_vectors.c.model == model, note_vectors.c.note_id.in_(ids[start : start + 500])
            )
        )
        for row in rows:
            out[row.note_id] = StoredVector(row.document_sha256, np.frombuffer(row.vector, dtype="<f4"))
    return out


@cache
def _put_vectors_statement(dialect: str) -> sa.Insert:
    """The upsert of note vectors, built once per dialect (it runs in every add_note's write)."""
    insert = postgresql.insert(note_vectors) if dialect == "postgresql" else sqlite.insert(note_vectors)
    return insert.on_conflict_do_update(
        index_elements=[note_vectors.c.note_id, note_vectors.c.model],
        set_={
            "document_sha256": insert.excluded.document_sha256,
            "vector": insert.excluded.vector,
            "stored_at": insert.excluded.stored_at,
        },
    )


def put_vectors(
    tx: LedgerTx,
    model: str,
    rows: Sequence[tuple[str, str, NDArray[np.float32]]],
    now: datetime,
) -> None:
    """Keep (note id, document sha256, vector) under ``model``, replacing a note's older vector."""
    if not rows:
        return
    values = [
        {
            "note_id": note_id,
            "model": model,
            "document_sha256": digest,
            "vector": np.asarray(vector, dtype="<f4").tobytes(),
            "stored_at": now,
        }
        for note_id, digest, vector in sorted(rows, key=lambda row: row[0])  # one lock order: no deadlock
    ]
    stmt = _put_vectors_statement(tx.dialect)
    for start in range(0, len(values), 500):
        tx.conn.execute(stmt, values[start : start + 500])
