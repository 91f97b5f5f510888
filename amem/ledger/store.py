"""Engine, transactions and queries of the ledger.

Writers are serialised: on SQLite every write transaction is BEGIN IMMEDIATE; on PostgreSQL a
writer first takes the ledger's writers' lock (a transaction-scoped advisory lock), reads, writes
and numbers its proposals and changes under it, and locks the single chain_head row FOR UPDATE
only at commit, to number and hash its buffered events. The acknowledgement of an input (raw logs
only, ``Ledger.write(writer_lock=False)``) takes the chain head alone, so it waits for a writer's
last statements, not for its whole transaction. That keeps both hash chains linear and gapless
and makes decisions on one proposal race-free without retries.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from amem.config import ledger_url
from amem.domain.hashing import GENESIS_HASH, event_hash, payload_digest
from amem.domain.models import (
    Actor,
    ActorKind,
    Change,
    ChangeKind,
    Link,
    LlmCall,
    Note,
    PolicyVersion,
    Proposal,
    ProposalStatus,
    Proposer,
    RawLog,
    RawLogState,
    Usage,
    utcnow,
)
from amem.domain.progress import Progress, no_progress
from amem.domain.text import storable
from amem.ledger import compaction, schema
from amem.ledger.compaction import Compaction
from amem.ledger.tables import (
    api_tokens,
    chain_head,
    changes,
    erasures,
    events,
    index_state,
    llm_calls,
    notes,
    policy_versions,
    proposals,
    raw_log_states,
    raw_logs,
    token_events,
)


def create_engine(url: str) -> sa.Engine:
    """The engine of the ledger at ``url``, refused with a ConfigError (not the driver's error, shown
    as "a bug in amem") when it is not a URL amem can use (``amem.config.ledger_url``)."""
    url = ledger_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.execute("PRAGMA foreign_keys=ON")
            # FULL: a commit is on disk before it returns. WAL with NORMAL keeps the database
            # consistent but may lose the last commits to a power cut, and a raw log is acknowledged
            # (202, a raw log id) once committed, a decision shown once committed. ~0.3 ms a commit.
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()

        @sa.event.listens_for(engine, "begin")
        def _begin(conn: sa.Connection) -> None:
            options = conn.get_execution_options()
            if options.get("amem_write"):
                _begin_immediate(conn)
            elif not options.get("amem_one_statement"):  # one statement is its own transaction
                conn.exec_driver_sql("BEGIN DEFERRED")

        return engine
    engine = sa.create_engine(url)
    _ping_when_idle(engine)
    return engine


#: The first key of the writers' lock on PostgreSQL (pg_advisory_xact_lock(int4, int4); "amem" in
#: ASCII); the second is the hash of the ledger's schema, so ledgers in other schemas of one
#: database never wait on each other.
WRITERS_LOCK_KEY = 0x616D656D

#: A pooled PostgreSQL connection idle longer than this is pinged before it is handed out.
PING_AFTER_IDLE_S = 5.0


def _ping_when_idle(engine: sa.Engine) -> None:
    """Check a pooled connection before use only when it sat idle for a while (``PING_AFTER_IDLE_S``).

    ``pool_pre_ping`` sent a SELECT 1 at every checkout: a round trip more for each transaction
    (a search took three when this was measured; it now takes one), on the same two cores as the
    server (bench/README.md, agents).
    A connection used moments ago is alive unless the server died since, and then the statement
    fails and SQLAlchemy discards the whole pool, as it does when a ping races a crash. One that
    idled (a firewall or the server's idle timeout may have dropped it) is still pinged, and a
    dead one is replaced by a new connection before the caller sees it."""

    @sa.event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn: Any, record: Any) -> None:
        record.info["amem_idle_since"] = time.monotonic()

    @sa.event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("amem_idle_since")
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_S:
            return  # a new connection, or one in use a moment ago
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:
            raise sa.exc.DisconnectionError("a pooled connection was found closed") from exc


#: How long a SQLite writer waits for the write lock before giving up (as busy_timeout did).
SQLITE_WRITE_WAIT_S = 60.0
#: How often a waiting SQLite writer tries again for the lock.
SQLITE_WRITE_POLL_S = 0.001


def _begin_immediate(conn: sa.Connection) -> None:
    """BEGIN IMMEDIATE, trying again every millisecond while another process writes.

    SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25... ms between tries, so a writer that
    starts waiting on an 9 ms transaction gets the lock at 18 ms, on a 26 ms one at 33 ms: on a
    server acknowledging inputs while workers write notes, that overshoot was most of the
    acknowledgement's tail. Polling every millisecond takes the lock within about a millisecond
    of its release. Statements inside the transaction keep the 60 s busy_timeout."""
    deadline = time.monotonic() + SQLITE_WRITE_WAIT_S
    conn.exec_driver_sql("PRAGMA busy_timeout=0")
    try:
        while True:
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return
            except sa.exc.OperationalError as exc:
                if "locked" not in str(exc.orig) or time.monotonic() > deadline:
                    raise
            time.sleep(SQLITE_WRITE_POLL_S)
    finally:
        conn.exec_driver_sql("PRAGMA busy_timeout=60000")


#: Statements a write runs for every input, built once: SQLAlchemy's building of a statement
#: (coercing each value into a bound parameter) cost more than SQLite's executing it, inside the
#: write lock every acknowledgement waits for.
_SAVE_NOTE = sa.update(notes).where(notes.c.id == sa.bindparam("_note_id"))
_READ_HEAD = sa.select(chain_head).where(chain_head.c.id == 1)
_LOCK_HEAD = _READ_HEAD.with_for_update()  # PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises
_MOVE_HEAD = sa.update(chain_head).where(chain_head.c.id == 1)  # the columns to set are the parameters
_NOTES_BY_ID = sa.select(notes).where(notes.c.id.in_(sa.bindparam("ids", expanding=True)))
_RAW_LOG_STATE = sa.select(raw_log_states).where(raw_log_states.c.raw_log_id == sa.bindparam("_raw_log_id"))
_INSTALLED_POLICY_SHA256 = (
    sa.select(policy_versions.c.sha256).order_by(policy_versions.c.version.desc()).limit(1)
)
_SET_RAW_LOG_STATE = (
    sa.update(raw_log_states)
    .where(raw_log_states.c.raw_log_id == sa.bindparam("_raw_log_id"))
    .values(
        state=sa.bindparam("_state"),
        note_id=sa.bindparam("_note_id"),
        error=sa.bindparam("_error"),
        updated_at=sa.bindparam("_at", type_=raw_log_states.c.updated_at.type),
        lease_owner=None,  # a new state ends any claim on the input
        lease_until=None,
        attempts=raw_log_states.c.attempts + sa.bindparam("_attempted", type_=sa.Integer()),
    )
)


class Ledger:
    """Opens the database, checks its schema and hands out transactions."""

    def __init__(self, url: str, *, create_if_empty: bool = True, check_schema: bool = True) -> None:
        self.url = ledger_url(url)  # a bare postgresql:// as psycopg; a SQLite file by its absolute path
        self.engine = create_engine(self.url)
        self.dialect = self.engine.dialect.name
        if check_schema:
            schema.check(self.engine, create_if_empty=create_if_empty)

    def close(self) -> None:
        self.engine.dispose()

    def compact(self, *, wait_s: float = 60.0, progress: Progress = no_progress) -> Compaction:
        """Rewrite the database files so no free page keeps deleted or overwritten bytes (after an
        erasure): VACUUM and a truncating WAL checkpoint on SQLite, VACUUM FULL on PostgreSQL.

        PostgreSQL keeps an overwritten row version while any transaction that began before the
        overwrite may still read it, or a replication slot's xmin is older, and VACUUM FULL copies
        such versions into the new files. So it first waits, up to ``wait_s`` and telling
        ``progress`` what it waits on, for those that can end (``compaction``), then waits for each
        table's lock for up to ``wait_s`` in all; what still held old versions when it went ahead,
        and the tables it could not lock, are returned (empty: every old version is gone)."""
        raw = self.engine.raw_connection()  # VACUUM runs outside any transaction
        try:
            cur = raw.cursor()
            if self.dialect == "postgresql":
                raw.driver_connection.autocommit = True  # type: ignore[union-attr]
                kept = compaction.wait_for_older_snapshots(cur, wait_s, progress)
                # note_vectors: an erased note's old vector is derived from its text as well
                tables = ("raw_logs", "llm_calls", "notes", "proposals", "changes", "note_vectors")
                left = compaction.vacuum_full(cur, tables, wait_s)
                kept = dataclasses.replace(kept, tables_not_compacted=left)
            else:
                kept = Compaction()
                for statement in ("VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"):
                    cur.execute(statement)
            cur.close()
        finally:
            if self.dialect == "postgresql":
                # never back to the pool in autocommit: a later write on it would not be one transaction
                raw.invalidate()
            raw.close()
        return kept

    @contextmanager
    def read(
        self, *, snapshot: bool = False, one_statement: bool = False, read_committed: bool = False
    ) -> Iterator[LedgerTx]:
        """A read transaction. ``snapshot``: every query sees the same committed state, even while
        others write (verification reads many tables; PostgreSQL needs REPEATABLE READ for that,
        SQLite's WAL gives it to any read transaction).

        ``one_statement``: a read of a single statement, which is its own transaction: no BEGIN and
        no COMMIT around it. On PostgreSQL that is one round trip to the server instead of three,
        for reads every request makes (a bearer token's check).

        ``read_committed``: statements that need no more than READ COMMITTED gives (each sees what
        was committed when it began; a search's catch-up check and its notes). PostgreSQL's
        default transaction gives no more, so there they run without BEGIN and COMMIT: the same
        visibility, two round trips fewer. On SQLite a read transaction as always (free there)."""
        with self.engine.connect() as conn:
            if snapshot and self.dialect == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            elif one_statement or (read_committed and self.dialect == "postgresql"):
                conn = conn.execution_options(
                    **({"isolation_level": "AUTOCOMMIT"} if self.dialect == "postgresql" else {}),
                    amem_one_statement=True,
                )
            with conn.begin():
                yield LedgerTx(conn, self.dialect, writable=False)

    @contextmanager
    def write(
        self, *, lock_head: bool = True, writer_lock: bool = True, head_first: bool = False
    ) -> Iterator[LedgerTx]:
        """A write transaction of the chains, serialised with every other writer.

        On PostgreSQL a writer takes the writers' lock first and the chain head only at commit
        (``LedgerTx._lock_head``), for the statements that number and hash its events: its reads
        and its other writes (notes, proposals, changes, raw log states) run before that, under the
        writers' lock alone, while inputs are acknowledged. Proposals and changes are numbered from
        the head as read under the writers' lock: only writers move those numbers, and the commit
        checks that none did. On SQLite BEGIN IMMEDIATE serialises every writer anyway.

        ``writer_lock=False``: a transaction that only appends raw logs (the acknowledgement of an
        input, ``InputQueue``) and reads nothing writers change: on PostgreSQL it takes the chain
        head at once and not the writers' lock. ``head_first``: a writer that takes the chain head
        at once as well, so no input is acknowledged while it runs (an erasure).
        ``lock_head=False`` (the input queue's claims and lease renewals, which touch no chain): on
        SQLite still BEGIN IMMEDIATE, the single writer; on PostgreSQL a plain transaction whose row
        locks (FOR UPDATE SKIP LOCKED) wait on neither lock."""
        with self.engine.connect() as conn:
            conn.execution_options(amem_write=True)
            with conn.begin():
                tx = LedgerTx(conn, self.dialect, writable=True)
                if lock_head:
                    if writer_lock and self.dialect == "postgresql":
                        tx._take_writers_lock()
                    if head_first or not writer_lock or self.dialect != "postgresql":
                        tx._lock_head()
                    else:
                        tx._read_head()
                yield tx
                if lock_head:
                    tx._flush_head()


@dataclass
class Head:
    last_seq: int
    last_hash: str
    raw_log_seq: int
    proposal_seq: int
    event_seq: int = 0
    event_hash: str = GENESIS_HASH


@dataclass(frozen=True)
class ProposalFilter:
    status: Sequence[str] | None = None
    scope: str | None = None
    attribute: str | None = None
    proposer: str | None = None
    note_id: str | None = None
    created_before: datetime | None = None
    created_after: datetime | None = None
    newest_first: bool = False
    #: Only in these scopes (a reviewer limited to some accounts); None: every scope.
    scopes: Sequence[str] | None = None


@dataclass(frozen=True)
class ChangeFilter:
    note_id: str | None = None
    attribute: str | None = None
    actor: str | None = None
    since: datetime | None = None
    until: datetime | None = None


class LedgerTx:
    """Queries and writes inside one transaction. Speaks domain models."""

    def __init__(self, conn: sa.Connection, dialect: str, *, writable: bool) -> None:
        self.conn = conn
        self.dialect = dialect
        self.writable = writable
        self._head: Head | None = None
        self._head_locked = False
        self._read_under_writers: tuple[int, str, int] | None = None
        self._head_moved = False
        self._events: list[dict[str, Any]] = []
        #: Proposals and changes made inside ``batched``, inserted together when it ends.
        self._batching = 0
        self._proposal_rows: list[dict[str, Any]] = []
        #: Notes this transaction created, and the (note, attribute) of the pending proposals it
        #: recorded for them: no other transaction can hold a proposal on such a note.
        self._created: set[str] = set()
        self._pending_of_created: dict[tuple[str, str], set[str]] = {}
        self._change_rows: list[dict[str, Any]] = []

    # -- chain head --------------------------------------------------------------------------

    def _take_writers_lock(self) -> None:
        """PostgreSQL: wait for the writers' lock, held until this transaction ends. Keyed on the
        schema that holds the ledger's tables (found as its statements find them, on the
        search_path), not ``current_schema()``: an empty schema named after the role, created
        while writers run, comes first on the default path and would have given the processes
        opened after it another lock than those opened before."""
        self.conn.execute(
            sa.text(
                "SELECT pg_advisory_xact_lock(:key, hashtext(COALESCE(("
                "SELECT relnamespace::regnamespace::text FROM pg_class "
                "WHERE oid = to_regclass('chain_head')), current_schema())))"
            ),
            {"key": WRITERS_LOCK_KEY},
        )

    def _read_head(self) -> None:
        """Read the head without locking it (PostgreSQL, under the writers' lock): the change chain's
        head and the proposal numbers, which only writers move. The raw log and event numbers in it
        are not used before ``_lock_head`` re-reads them: acknowledgements move those meanwhile."""
        row = self.conn.execute(sa.select(chain_head).where(chain_head.c.id == 1)).one()
        self._head = Head(
            row.last_seq, row.last_hash, row.raw_log_seq, row.proposal_seq, row.event_seq, row.event_hash
        )
        self._read_under_writers = (row.last_seq, row.last_hash, row.proposal_seq)

    def _lock_head(self) -> None:
        row = self.conn.execute(_LOCK_HEAD if self.dialect == "postgresql" else _READ_HEAD).one()
        self._head_locked = True
        if self._head is None:
            self._head = Head(
                row.last_seq, row.last_hash, row.raw_log_seq, row.proposal_seq, row.event_seq, row.event_hash
            )
            return
        if (row.last_seq, row.last_hash, row.proposal_seq) != self._read_under_writers:
            # A writer that did not take the writers' lock (an older amem on the same ledger): this
            # transaction numbered its changes or proposals from a head that has moved. Roll back.
            raise RuntimeError(
                "the chain head moved while this transaction held the writers' lock (another process "
                "writes without it: is an older amem running on this ledger?); nothing was written"
            )
        self._head.raw_log_seq = row.raw_log_seq
        self._head.event_seq, self._head.event_hash = row.event_seq, row.event_hash

    @property
    def head(self) -> Head:
        if self._head is None:
            raise RuntimeError("the chain head is only available in a write transaction")
        return self._head

    def _save_head(self) -> None:
        """The head is written once, at commit."""
        self._head_moved = True

    def _flush_head(self) -> None:
        """Number and hash the buffered events from the locked head, insert them in one statement
        and move the head: the only statements (with the commit) run under the chain-head lock by a
        writer that took it late."""
        self._write_rows()
        if not self._head_moved:
            return
        self._head_moved = False
        if not self._head_locked:
            self._lock_head()
        h = self.head
        if self._events:
            for e in self._events:
                seq = h.event_seq + 1
                e["seq"], e["prev_hash"] = seq, h.event_hash
                e["hash"] = event_hash(
                    prev_hash=h.event_hash,
                    seq=seq,
                    kind=e["kind"],
                    subject=e["subject"],
                    payload_digest=e["payload_digest"],
                    at=e["at"],
                )
                h.event_seq, h.event_hash = seq, e["hash"]
            self.conn.execute(sa.insert(events), self._events)
            self._events = []
        self.conn.execute(
            _MOVE_HEAD,
            {
                "last_seq": h.last_seq,
                "last_hash": h.last_hash,
                "raw_log_seq": h.raw_log_seq,
                "proposal_seq": h.proposal_seq,
                "event_seq": h.event_seq,
                "event_hash": h.event_hash,
            },
        )

    # -- rows written together -----------------------------------------------------------------

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Proposals and changes recorded inside are inserted when it ends, in one multi-row INSERT
        per table, in the order they were made (their numbers, hashes and events are given at once,
        as without it). Every method of this class that reads proposals or changes writes them
        first, so inside it they read as written; nothing else may read those tables inside it."""
        self._batching += 1
        try:
            yield
        finally:
            self._batching -= 1
        if not self._batching:
            self._write_rows()

    def _write_rows(self) -> None:
        """Insert the proposals and changes ``batched`` holds (proposals first: changes name them)."""
        if self._proposal_rows:
            rows, self._proposal_rows = self._proposal_rows, []
            self.conn.execute(sa.insert(proposals), rows)
        if self._change_rows:
            rows, self._change_rows = self._change_rows, []
            self.conn.execute(sa.insert(changes), rows)

    # -- the event chain ---------------------------------------------------------------------

    def append_event(self, kind: str, subject: str, row: Any, at: datetime) -> None:
        """Chain an event whose content is ``row`` (see amem.domain.hashing.PAYLOAD_FIELDS).

        Events are buffered with their content's digest, then numbered, hashed and written with
        the head, in one statement, at commit (``_flush_head``)."""
        if self._head is None:
            raise RuntimeError("events are only chained in a write transaction of the chains")
        self._events.append(
            {"kind": kind, "subject": subject, "payload_digest": payload_digest(kind, row), "at": at}
        )
        self._save_head()

    def iter_events(self, after_seq: int = 0, batch: int = 5000) -> Iterator[Any]:
        last = after_seq
        while True:
            rows = self.conn.execute(
                sa.select(events).where(events.c.seq > last).order_by(events.c.seq).limit(batch)
            ).all()
            if not rows:
                return
            yield from rows
            last = rows[-1].seq

    def iter_rows(self, table_name: str, key: str, batch: int = 2000) -> Iterator[Any]:
        """Every row of a ledger table as stored (mappings), in order of its unique ``key`` column.

        For verification, which must see the rows exactly as the database holds them."""
        self._write_rows()
        table = _TABLES[table_name]
        col = table.c[key]
        last: Any = None
        while True:
            stmt = sa.select(table).order_by(col).limit(batch)
            if last is not None:
                stmt = stmt.where(col > last)
            rows = self.conn.execute(stmt).all()
            if not rows:
                return
            for r in rows:
                yield r._mapping
            last = rows[-1]._mapping[key]

    def changes_of_notes(self, note_ids: Sequence[str]) -> list[Change]:
        """The changes of ``note_ids``, grouped by note, each note's in sequence order."""
        self._write_rows()
        stmt = (
            sa.select(changes)
            .where(changes.c.note_id.in_(list(note_ids)))
            .order_by(changes.c.note_id, changes.c.seq)
        )
        return [_change(r) for r in self.conn.execute(stmt)]

    @staticmethod
    def note_from_row(row: Any) -> Note:
        return _note(SimpleNamespace(**dict(row)))

    def chain_state(self) -> dict[str, Any]:
        """The heads of both chains and the number of events of each kind (what a checkpoint signs)."""
        head = self.conn.execute(sa.select(chain_head).where(chain_head.c.id == 1)).one()
        counts = self.conn.execute(sa.select(events.c.kind, sa.func.count()).group_by(events.c.kind)).all()
        return {
            "event_seq": int(head.event_seq),
            "event_hash": head.event_hash,
            "change_seq": int(head.last_seq),
            "change_hash": head.last_hash,
            "counts": {str(k): int(v) for k, v in sorted(counts)},
        }

    def event_head(self) -> tuple[int, str]:
        row = self.conn.execute(
            sa.select(chain_head.c.event_seq, chain_head.c.event_hash).where(chain_head.c.id == 1)
        ).one()
        return int(row.event_seq), str(row.event_hash)

    def get_event(self, seq: int) -> Any | None:
        return self.conn.execute(sa.select(events).where(events.c.seq == seq)).one_or_none()

    # -- raw logs ----------------------------------------------------------------------------

    def insert_raw_logs(
        self,
        logs: Sequence[RawLog],
        now: datetime,
        *,
        lease_owner: str | None = None,
        lease_until: datetime | None = None,
    ) -> None:
        """Append raw logs, queued (pending). With a lease, the caller holds them from the start:
        no worker takes them while the caller analyses them itself (add_note with wait=True)."""
        if not logs:
            return
        if not self._head_locked:  # raw logs are numbered in arrival order, which acknowledgements move
            self._lock_head()
        rows, states = [], []
        for log in logs:
            self.head.raw_log_seq += 1
            rows.append(
                {
                    "id": log.id,
                    "seq": self.head.raw_log_seq,
                    "text": log.text,
                    "occurred_at": log.occurred_at,
                    "actor_kind": log.actor.kind.value,
                    "actor_id": log.actor.id,
                    "scope": log.scope,
                    "received_at": log.received_at,
                    "sha256": log.sha256,
                    "metadata": log.metadata,
                }
            )
            states.append(
                {
                    "raw_log_id": log.id,
                    "raw_log_seq": self.head.raw_log_seq,  # the queue's order (migration 0025)
                    "state": RawLogState.PENDING.value,
                    "note_id": None,
                    "attempts": 0,
                    "error": None,
                    "updated_at": now,
                    # queued: the lease columns keep their defaults (no holder, never claimed)
                    **(
                        {"lease_owner": lease_owner, "lease_until": lease_until, "claims": 1}
                        if lease_owner
                        else {}
                    ),
                }
            )
        self.conn.execute(sa.insert(raw_logs), rows)
        self.conn.execute(sa.insert(raw_log_states), states)
        for row in rows:
            self.append_event("raw_log", row["id"], row, row["received_at"])
        self._save_head()

    def get_raw_logs(self, ids: Sequence[str]) -> list[RawLog]:
        if not ids:
            return []
        rows = self.conn.execute(sa.select(raw_logs).where(raw_logs.c.id.in_(list(ids)))).all()
        by_id = {r.id: _raw_log(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def raw_log_states(
        self, states: Sequence[RawLogState] | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Processing states of raw logs in arrival order, optionally only those in ``states``."""
        stmt = sa.select(raw_log_states, raw_logs.c.seq).join(raw_logs).order_by(raw_logs.c.seq)
        if states is not None:
            stmt = stmt.where(raw_log_states.c.state.in_([s.value for s in states]))
        if limit is not None:
            stmt = stmt.limit(limit)
        return [dict(r._mapping) for r in self.conn.execute(stmt)]

    def iter_raw_logs(self, batch: int = 1000) -> Iterator[RawLog]:
        last = 0
        while True:
            rows = self.conn.execute(
                sa.select(raw_logs).where(raw_logs.c.seq > last).order_by(raw_logs.c.seq).limit(batch)
            ).all()
            if not rows:
                return
            yield from (_raw_log(r) for r in rows)
            last = rows[-1].seq

    def raw_log_state(self, raw_log_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(_RAW_LOG_STATE, {"_raw_log_id": raw_log_id}).one_or_none()
        return dict(row._mapping) if row is not None else None

    def set_raw_log_state(
        self,
        raw_log_id: str,
        state: RawLogState,
        now: datetime,
        *,
        note_id: str | None = None,
        error: str | None = None,
    ) -> None:
        self.conn.execute(
            _SET_RAW_LOG_STATE,
            {
                "_raw_log_id": raw_log_id,
                "_state": state.value,
                "_note_id": note_id,
                "_error": storable(error),
                "_at": now,
                "_attempted": 0 if state == RawLogState.PENDING else 1,
            },
        )

    # -- notes -------------------------------------------------------------------------------

    def insert_note(self, note: Note) -> None:
        self.conn.execute(sa.insert(notes), [_note_row(note)])
        self._created.add(note.id)

    def get_note(self, note_id: str) -> Note | None:
        row = self.conn.execute(sa.select(notes).where(notes.c.id == note_id)).one_or_none()
        return _note(row) if row is not None else None

    def get_notes(self, ids: Sequence[str]) -> list[Note]:
        if not ids:
            return []
        rows = self.conn.execute(_NOTES_BY_ID, {"ids": list(ids)}).all()
        by_id = {r.id: _note(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def save_note(self, note: Note) -> None:
        row = _note_row(note)
        row["_note_id"] = row.pop("id")
        self.conn.execute(_SAVE_NOTE, row)  # the columns to set are the parameters

    def list_notes(
        self, *, scope: str | None = None, include_deleted: bool = False, limit: int = 100, offset: int = 0
    ) -> list[Note]:
        stmt = sa.select(notes).order_by(notes.c.created_at, notes.c.id).limit(limit).offset(offset)
        if scope is not None:
            stmt = stmt.where(notes.c.scope == scope)
        if not include_deleted:
            stmt = stmt.where(notes.c.deleted.is_(False))
        return [_note(r) for r in self.conn.execute(stmt)]

    def count_notes(self, scope: str | None = None) -> int:
        stmt = sa.select(sa.func.count()).select_from(notes)
        if scope is not None:
            stmt = stmt.where(notes.c.scope == scope)
        return int(self.conn.execute(stmt).scalar_one())

    def count_rows(self, table_name: str) -> int:
        """How many rows a ledger table holds (the totals of verify's progress)."""
        stmt = sa.select(sa.func.count()).select_from(_TABLES[table_name])
        return int(self.conn.execute(stmt).scalar_one())

    def count_raw_logs(self) -> int:
        return int(self.conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one())

    def scopes(self) -> list[str]:
        return list(self.conn.execute(sa.select(notes.c.scope).distinct().order_by(notes.c.scope)).scalars())

    # -- proposals ---------------------------------------------------------------------------

    def insert_proposals(self, items: Sequence[Proposal]) -> None:
        if not items:
            return
        rows = []
        for p in items:
            self.head.proposal_seq += 1
            rows.append({"seq": self.head.proposal_seq, **_proposal_row(p)})
        if self._batching:
            self._proposal_rows += rows
        else:
            self.conn.execute(sa.insert(proposals), rows)
        for r in rows:
            if r["note_id"] in self._created and r["status"] == ProposalStatus.PENDING.value:
                self._pending_of_created.setdefault((r["note_id"], r["attribute"]), set()).add(r["id"])
        for row in rows:
            self.append_event("proposal", row["id"], row, row["created_at"])
            if row["status"] != ProposalStatus.PENDING.value:  # routed straight to a decision
                self.append_event("decision", row["id"], row, row["reviewed_at"] or row["created_at"])
        self._save_head()

    def get_proposal(self, proposal_id: str) -> Proposal | None:
        self._write_rows()
        row = self.conn.execute(sa.select(proposals).where(proposals.c.id == proposal_id)).one_or_none()
        return _proposal(row) if row is not None else None

    def get_proposals(self, proposal_ids: Sequence[str]) -> list[Proposal]:
        if not proposal_ids:
            return []
        self._write_rows()
        stmt = sa.select(proposals).where(proposals.c.id.in_(list(proposal_ids)))
        return [_proposal(r) for r in self.conn.execute(stmt)]

    def decide_proposal(
        self,
        proposal_id: str,
        *,
        expect: ProposalStatus,
        status: ProposalStatus,
        reviewer: str | None,
        comment: str | None,
        at: datetime | None,
    ) -> bool:
        """Compare-and-set of a proposal's status; False when it was no longer ``expect``."""
        self._write_rows()
        result = self.conn.execute(
            sa.update(proposals)
            .where(proposals.c.id == proposal_id, proposals.c.status == expect.value)
            .values(status=status.value, reviewer=reviewer, review_comment=comment, reviewed_at=at)
        )
        if result.rowcount != 1:
            return False
        decision = {
            "id": proposal_id,
            "status": status.value,
            "reviewer": reviewer,
            "review_comment": comment,
            "reviewed_at": at,
        }
        self.append_event("decision", proposal_id, decision, at or utcnow())
        return True

    def supersede_pending(self, note_id: str, attribute: str, *, by: str, at: datetime) -> int:
        if note_id in self._created and not self._pending_of_created.get((note_id, attribute), set()) - {by}:
            return 0  # a note of this transaction, with no other pending proposal on the attribute
        comment = f"superseded by {by}"
        if any(
            r["note_id"] == note_id
            and r["attribute"] == attribute
            and r["status"] == ProposalStatus.PENDING.value
            and r["id"] != by
            for r in self._proposal_rows
        ):
            self._write_rows()  # an earlier proposal of this batch is the one superseded
        ids = sorted(
            self.conn.execute(
                sa.update(proposals)
                .where(
                    proposals.c.note_id == note_id,
                    proposals.c.attribute == attribute,
                    proposals.c.status == ProposalStatus.PENDING.value,
                    proposals.c.id != by,
                )
                .values(status=ProposalStatus.SUPERSEDED.value, reviewed_at=at, review_comment=comment)
                .returning(proposals.c.id, proposals.c.seq)
            ).all(),
            key=lambda r: r.seq,
        )
        for pid, _seq in ids:
            decision = {
                "id": pid,
                "status": ProposalStatus.SUPERSEDED.value,
                "reviewer": None,
                "review_comment": comment,
                "reviewed_at": at,
            }
            self.append_event("decision", pid, decision, at)
        return len(ids)

    def _proposal_query(self, f: ProposalFilter) -> sa.Select[Any]:
        self._write_rows()
        stmt = sa.select(proposals)
        if f.status:
            stmt = stmt.where(proposals.c.status.in_(list(f.status)))
        if f.scope:
            stmt = stmt.where(proposals.c.scope == f.scope)
        if f.scopes is not None:
            stmt = stmt.where(proposals.c.scope.in_(list(f.scopes)))
        if f.attribute:
            stmt = stmt.where(proposals.c.attribute == f.attribute)
        if f.proposer:
            kind, sep, ident = f.proposer.partition(":")
            if sep and kind in ActorKind._value2member_map_:
                stmt = stmt.where(proposals.c.proposer_kind == kind, proposals.c.proposer_id == ident)
            else:
                stmt = stmt.where(proposals.c.proposer_id == f.proposer)
        if f.note_id:
            stmt = stmt.where(proposals.c.note_id == f.note_id)
        if f.created_before:
            stmt = stmt.where(proposals.c.created_at < f.created_before)
        if f.created_after:
            stmt = stmt.where(proposals.c.created_at >= f.created_after)
        return stmt

    def list_proposals(self, f: ProposalFilter, *, limit: int = 50, offset: int = 0) -> list[Proposal]:
        order = proposals.c.seq.desc() if f.newest_first else proposals.c.seq.asc()
        stmt = self._proposal_query(f).order_by(order).limit(limit).offset(offset)
        return [_proposal(r) for r in self.conn.execute(stmt)]

    def count_proposals(self, f: ProposalFilter) -> int:
        stmt = sa.select(sa.func.count()).select_from(self._proposal_query(f).subquery())
        return int(self.conn.execute(stmt).scalar_one())

    def proposals_for_note(self, note_id: str) -> list[Proposal]:
        self._write_rows()
        stmt = sa.select(proposals).where(proposals.c.note_id == note_id).order_by(proposals.c.seq)
        return [_proposal(r) for r in self.conn.execute(stmt)]

    def pending_attributes(self, note_id: str) -> set[str]:
        """The attributes of ``note_id`` that have a proposal waiting for a person."""
        self._write_rows()
        stmt = sa.select(proposals.c.attribute).where(
            proposals.c.note_id == note_id, proposals.c.status == ProposalStatus.PENDING.value
        )
        return set(self.conn.execute(stmt.distinct()).scalars())

    # -- changes -----------------------------------------------------------------------------

    def append_change(self, change: Change) -> None:
        row = _change_row(change)
        if self._batching:
            self._change_rows.append(row)
        else:
            self.conn.execute(sa.insert(changes), [row])
        self.append_event("change", str(change.seq), row, change.applied_at)
        self.head.last_seq = change.seq
        self.head.last_hash = change.hash
        self._save_head()

    def get_change(self, seq: int) -> Change | None:
        self._write_rows()
        row = self.conn.execute(sa.select(changes).where(changes.c.seq == seq)).one_or_none()
        return _change(row) if row is not None else None

    def changes_for_note(self, note_id: str, *, until: datetime | None = None) -> list[Change]:
        self._write_rows()
        stmt = sa.select(changes).where(changes.c.note_id == note_id).order_by(changes.c.seq)
        if until is not None:
            stmt = stmt.where(changes.c.applied_at <= until)
        return [_change(r) for r in self.conn.execute(stmt)]

    def iter_changes(self, after_seq: int = 0, batch: int = 1000) -> Iterator[Change]:
        """Every change after ``after_seq`` in order, fetched in batches (the index's outbox)."""
        self._write_rows()
        last = after_seq
        while True:
            rows = self.conn.execute(
                sa.select(changes).where(changes.c.seq > last).order_by(changes.c.seq).limit(batch)
            ).all()
            if not rows:
                return
            for r in rows:
                yield _change(r)
            last = rows[-1].seq

    def list_changes(
        self, f: ChangeFilter, *, limit: int = 100, offset: int = 0, newest_first: bool = False
    ) -> list[Change]:
        self._write_rows()
        stmt = sa.select(changes)
        if f.note_id:
            stmt = stmt.where(changes.c.note_id == f.note_id)
        if f.attribute:
            stmt = stmt.where(changes.c.attribute == f.attribute)
        if f.actor:
            kind, sep, ident = f.actor.partition(":")
            if sep and kind in ActorKind._value2member_map_:
                stmt = stmt.where(changes.c.actor_kind == kind, changes.c.actor_id == ident)
            else:
                stmt = stmt.where(changes.c.actor_id == f.actor)
        if f.since:
            stmt = stmt.where(changes.c.applied_at >= f.since)
        if f.until:
            stmt = stmt.where(changes.c.applied_at <= f.until)
        stmt = (
            stmt.order_by(changes.c.seq.desc() if newest_first else changes.c.seq).limit(limit).offset(offset)
        )
        return [_change(r) for r in self.conn.execute(stmt)]

    def chain_head_seq(self) -> int:
        return int(
            self.conn.execute(sa.select(chain_head.c.last_seq).where(chain_head.c.id == 1)).scalar_one()
        )

    def last_change_seq(self) -> int:
        self._write_rows()
        return int(self.conn.execute(sa.select(sa.func.coalesce(sa.func.max(changes.c.seq), 0))).scalar_one())

    # -- installed policies --------------------------------------------------------------------

    def installed_policy(self) -> PolicyVersion | None:
        """The newest installed policy version, or None while none was ever installed."""
        row = self.conn.execute(
            sa.select(policy_versions).order_by(policy_versions.c.version.desc()).limit(1)
        ).one_or_none()
        return PolicyVersion.model_validate(dict(row._mapping)) if row is not None else None

    def installed_policy_sha256(self) -> str | None:
        """The sha256 of the newest installed policy version (None while none was installed): what a
        writer compares with the policy it routes under, on every write, without reading the text."""
        return self.conn.execute(_INSTALLED_POLICY_SHA256).scalar_one_or_none()

    def is_empty(self) -> bool:
        """Whether the ledger holds nothing yet: no raw log, proposal, change, event or policy."""
        for table in (policy_versions, events, raw_logs, proposals, changes):
            if self.conn.execute(sa.select(sa.literal(1)).select_from(table).limit(1)).first() is not None:
                return False
        return True

    def insert_policy_version(self, version: PolicyVersion) -> None:
        """Record an installed policy and chain its installation (the text enters by its sha256)."""
        row = version.model_dump()
        self.conn.execute(sa.insert(policy_versions), [row])
        self.append_event("policy", str(version.version), row, version.installed_at)

    def policy_versions(self) -> list[PolicyVersion]:
        rows = self.conn.execute(sa.select(policy_versions).order_by(policy_versions.c.version))
        return [PolicyVersion.model_validate(dict(r._mapping)) for r in rows]

    # -- LLM calls ---------------------------------------------------------------------------

    def insert_llm_call(self, call: LlmCall) -> None:
        row = call.model_dump()
        # A model's answer is evidence, recorded as it came; a NUL or lone surrogate in it is escaped
        # so that recording it never fails (and both backends keep the same text).
        row["response_text"], row["error"] = storable(row["response_text"]), storable(row["error"])
        row["served_model"] = storable(row["served_model"])  # the provider's word, as it came
        self.conn.execute(sa.insert(llm_calls), [row])
        self.append_event("llm_call", call.id, row, call.created_at)

    def get_llm_call(self, call_id: str) -> LlmCall | None:
        row = self.conn.execute(sa.select(llm_calls).where(llm_calls.c.id == call_id)).one_or_none()
        return LlmCall.model_validate(dict(row._mapping)) if row is not None else None

    # -- derived stores ----------------------------------------------------------------------

    def index_position(self, name: str) -> int:
        row = self.conn.execute(
            sa.select(index_state.c.last_seq).where(index_state.c.name == name)
        ).one_or_none()
        return int(row[0]) if row is not None else 0

    def set_index_position(self, name: str, seq: int, now: datetime) -> None:
        updated = self.conn.execute(
            sa.update(index_state).where(index_state.c.name == name).values(last_seq=seq, updated_at=now)
        )
        if updated.rowcount == 0:
            self.conn.execute(sa.insert(index_state).values(name=name, last_seq=seq, updated_at=now))


_TABLES: dict[str, sa.Table] = {
    t.name: t
    for t in (
        raw_logs, llm_calls, notes, proposals, changes, events, erasures, policy_versions, token_events,
        api_tokens,
    )
}  # fmt: skip


# -- row <-> model ------------------------------------------------------------------------------


def _raw_log(r: Any) -> RawLog:
    return RawLog(
        id=r.id,
        text=r.text,
        occurred_at=r.occurred_at,
        actor=Actor(kind=r.actor_kind, id=r.actor_id),
        scope=r.scope,
        received_at=r.received_at,
        sha256=r.sha256,
        metadata=r.metadata or {},
    )


def _note_row(n: Note) -> dict[str, Any]:
    return {
        "id": n.id,
        "scope": n.scope,
        "content": n.content,
        "keywords": list(n.keywords),
        "tags": list(n.tags),
        "context": n.context,
        "category": n.category,
        "links": [link.model_dump() for link in n.links],
        "decision_rationale": n.decision_rationale,
        "valid_at": n.valid_at,
        "invalid_at": n.invalid_at,
        "deleted": n.deleted,
        "extra": dict(n.extra),
        "raw_log_ids": list(n.raw_log_ids),
        "created_at": n.created_at,
        "updated_at": n.updated_at,
        "version": n.version,
    }


def _note(r: Any) -> Note:
    return Note(
        id=r.id,
        scope=r.scope,
        content=r.content,
        keywords=r.keywords or [],
        tags=r.tags or [],
        context=r.context,
        category=r.category,
        links=[Link(**x) for x in r.links or []],
        decision_rationale=r.decision_rationale,
        valid_at=r.valid_at,
        invalid_at=r.invalid_at,
        deleted=bool(r.deleted),
        extra=r.extra or {},
        raw_log_ids=r.raw_log_ids or [],
        created_at=r.created_at,
        updated_at=r.updated_at,
        version=r.version,
    )


def _proposal_row(p: Proposal) -> dict[str, Any]:
    return {
        "id": p.id,
        "note_id": p.note_id,
        "scope": p.scope or "",
        "attribute": p.attribute,
        "old_value": p.old_value,
        "new_value": p.new_value,
        "base_version": p.base_version,
        "reason": p.reason,
        "evidence": p.evidence,
        "proposer_kind": p.proposer.kind.value,
        "proposer_id": p.proposer.id,
        "model": p.proposer.model,
        "prompt_version": p.proposer.prompt_version,
        "usage": p.proposer.usage.model_dump() if p.proposer.usage else None,
        "llm_call_id": p.proposer.llm_call_id,
        "raw_log_ids": list(p.raw_log_ids),
        "rule": p.rule,
        "status": p.status.value,
        "reviewer": p.reviewer,
        "review_comment": p.review_comment,
        "reviewed_at": p.reviewed_at,
        "created_at": p.created_at,
        "revert_of": p.revert_of,
        "policy_sha256": p.policy_sha256,
        "corrects": p.corrects,
    }


def _proposal(r: Any) -> Proposal:
    return Proposal(
        id=r.id,
        note_id=r.note_id,
        scope=r.scope,
        attribute=r.attribute,
        old_value=r.old_value,
        new_value=r.new_value,
        base_version=r.base_version,
        reason=r.reason,
        evidence=r.evidence,
        proposer=Proposer(
            kind=r.proposer_kind,
            id=r.proposer_id,
            model=r.model,
            prompt_version=r.prompt_version,
            usage=Usage(**r.usage) if r.usage else None,
            llm_call_id=r.llm_call_id,
        ),
        raw_log_ids=r.raw_log_ids or [],
        rule=r.rule,
        status=ProposalStatus(r.status),
        reviewer=r.reviewer,
        review_comment=r.review_comment,
        reviewed_at=r.reviewed_at,
        created_at=r.created_at,
        revert_of=r.revert_of,
        policy_sha256=r.policy_sha256,
        corrects=r.corrects,
    )


def _change_row(c: Change) -> dict[str, Any]:
    return {
        "seq": c.seq,
        "note_id": c.note_id,
        "proposal_id": c.proposal_id,
        "attribute": c.attribute,
        "old_value": c.old_value,
        "new_value": c.new_value,
        "note_version": c.note_version,
        "actor_kind": c.actor.kind.value,
        "actor_id": c.actor.id,
        "kind": c.kind.value,
        "applied_at": c.applied_at,
        "prev_hash": c.prev_hash,
        "hash": c.hash,
    }


def _change(r: Any) -> Change:
    return Change(
        seq=r.seq,
        note_id=r.note_id,
        proposal_id=r.proposal_id,
        attribute=r.attribute,
        old_value=r.old_value,
        new_value=r.new_value,
        note_version=r.note_version,
        actor=Actor(kind=r.actor_kind, id=r.actor_id),
        kind=ChangeKind(r.kind),
        applied_at=r.applied_at,
        prev_hash=r.prev_hash,
        hash=r.hash,
    )


__all__ = ["GENESIS_HASH", "ChangeFilter", "Compaction", "Ledger", "LedgerTx", "ProposalFilter"]
