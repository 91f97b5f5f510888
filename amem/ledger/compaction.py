"""What keeps an erased row's old version in PostgreSQL's files, and the compaction's wait for it.

VACUUM FULL copies every row version some transaction may still read into the table's new files.
Three things hold such versions back: another session's snapshot or transaction id (a snapshot of
the ledger's database, a transaction holding an id in any database of the server), a prepared
transaction, and a replication slot's ``xmin`` (a standby's hot_standby_feedback: kept while the
standby is down, until the slot is dropped). A logical slot's ``catalog_xmin`` holds back only the
system catalogs' rows, never the ledger's tables (measured: the erased bytes left the files with a
logical slot open), so it is not counted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from amem.domain.progress import WAITING, Progress, no_progress

#: Holders listed by name in the wait's progress line; the rest are counted.
_NAMED = 5

#: Every holder of a row version overwritten before the transaction id ``now``: one row each, as
#: (kind, name, database, user, detail, since, moves). ``moves``: whether waiting can see it go (a
#: session or prepared transaction ends, an active slot's standby reports a newer xmin; a slot no
#: standby feeds keeps its xmin until it is dropped).
_HOLDERS = (
    "SELECT 'session', pid::text, datname, usename::text,"
    "  concat_ws(', ', nullif(application_name, ''), state), xact_start, true"
    " FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND ("
    " (datname = current_database() AND backend_xmin IS NOT NULL"
    "  AND age(backend_xmin) > age(%(now)s::text::xid))"
    # a transaction that has written holds the horizon back with its own xid, even between two
    # statements, when it has no snapshot (backend_xmin null: idle in transaction, read committed);
    # VACUUM FULL keeps the row versions for one open in any database of the server, not only this
    " OR (backend_xid IS NOT NULL AND age(backend_xid) > age(%(now)s::text::xid)))"
    " UNION ALL SELECT 'prepared transaction', gid, database::text, owner::text, '', prepared, true"
    " FROM pg_prepared_xacts WHERE age(transaction) > age(%(now)s::text::xid)"
    " UNION ALL SELECT 'replication slot', slot_name::text, database::text, NULL,"
    "  slot_type || CASE WHEN active THEN ', in use' ELSE ', not in use' END, NULL, active"
    " FROM pg_replication_slots WHERE xmin IS NOT NULL AND age(xmin) > age(%(now)s::text::xid)"
    " ORDER BY 1, 2"
)


@dataclass(frozen=True)
class Compaction:
    """What could still keep the erased rows' old versions after a compaction: ``older_sessions``,
    sessions and prepared transactions that began before the erasure and were still open;
    ``replication_slots``, the names of the slots whose xmin is from before it. Both empty: every
    old version left the files (always so on SQLite, which has no other readers' snapshots)."""

    older_sessions: int = 0
    replication_slots: tuple[str, ...] = field(default=())
    #: Tables VACUUM FULL could not lock in time (another session holding a lock on them, such as
    #: one idle in a transaction that read them): not compacted, their old row versions kept.
    tables_not_compacted: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class _Holder:
    kind: str
    name: str
    database: str | None
    user: str | None
    detail: str
    since: Any
    moves: bool

    def said(self) -> str:
        """ "session 4242 (database amem, user app, psql, idle in transaction, since 16:40:01 UTC)"."""
        parts = [f"database {self.database}" if self.database else ""]
        parts += [f"user {self.user}" if self.user else "", self.detail]
        if self.since is not None:  # when its transaction began (or it was prepared)
            parts.append(f"since {self.since.astimezone(UTC):%H:%M:%S} UTC")
        said = ", ".join(p for p in parts if p)
        return f"{self.kind} {self.name}" + (f" ({said})" if said else "")


def wait_for_older_snapshots(cur: Any, wait_s: float, progress: Progress = no_progress) -> Compaction:
    """Wait, up to ``wait_s``, until nothing that can move holds a row version overwritten before a
    fresh transaction id (a slot no standby feeds never moves: not waited for, only reported).
    While it waits, ``progress`` is told what it waits on and for how long at most (a wait task:
    done and total are seconds), so `amem erase` does not sit silent for a minute."""
    cur.execute("SELECT (txid_current() % 4294967296)::text")  # autocommit: its own, fresh xid
    (now_xid,) = cur.fetchone()
    start = time.monotonic()
    task, told = "", -1
    progress = _never_raising(progress)
    while True:
        cur.execute(_HOLDERS, {"now": now_xid})
        holders = [_Holder(*row) for row in cur.fetchall()]
        waiting = [h for h in holders if h.moves]
        waited = time.monotonic() - start
        if not waiting or waited >= wait_s:
            if task:  # the wait is over: its bar completes
                progress(task, int(wait_s), int(wait_s))
            return Compaction(
                older_sessions=sum(h.kind != "replication slot" for h in holders),
                replication_slots=tuple(h.name for h in holders if h.kind == "replication slot"),
            )
        if not task:
            task = _task(waiting, wait_s)
        if int(waited) > told:
            told = int(waited)
            progress(task, told, int(wait_s))
        time.sleep(0.05)


def _task(waiting: list[_Holder], wait_s: float) -> str:
    named = "; ".join(h.said() for h in waiting[:_NAMED])
    more = f"; and {len(waiting) - _NAMED} more" if len(waiting) > _NAMED else ""
    return (
        f"{WAITING}up to {wait_s:g} s for what can still read the erased rows to end, so their old "
        f"versions leave PostgreSQL's files: {named}{more}"
    )


def vacuum_full(cur: Any, tables: tuple[str, ...], budget_s: float) -> tuple[str, ...]:
    """VACUUM FULL each of ``tables``, waiting for its lock at most what is left of ``budget_s``
    (at least a second a table): a session idle in a transaction that read a table holds a lock
    VACUUM FULL would wait on forever, and `amem erase` hung there. The tables it could not lock
    are returned, left as they were."""
    from psycopg import errors

    deadline = time.monotonic() + budget_s
    left: list[str] = []
    for table in tables:
        wait_ms = max(1000, int((deadline - time.monotonic()) * 1000))
        cur.execute(f"SET lock_timeout = {wait_ms}")
        try:
            cur.execute(f"VACUUM FULL {table}")
        except errors.LockNotAvailable:
            left.append(table)
    cur.execute("RESET lock_timeout")
    return tuple(left)


def _never_raising(progress: Progress) -> Progress:
    """``progress``, told until it raises once (a closed stderr: BrokenPipeError), then no more: what
    the wait tells the caller must never keep the compaction from running."""
    failed = False

    def told(task: str, done: int, total: int | None) -> None:
        nonlocal failed
        if failed:
            return
        try:
            progress(task, done, total)
        except Exception:
            failed = True

    return told
