"""A copy of the ledger that is proven before it is called a backup.

Copying a live SQLite ledger with ``cp`` can lose what it acknowledged: the newest commits may be in
the write-ahead log beside the file, and a copy taken while a transaction commits can be torn.
SQLite's online backup copies one consistent snapshot while writers go on (WAL). A PostgreSQL
ledger is dumped by ``pg_dump`` (one snapshot, its custom format), the ledger's schema only.

The copy is then opened as a ledger of its own and verified: both hash chains recomputed, every row
against its event, and every signed checkpoint proven against it, so the backup is known to hold
everything those statements committed to. A PostgreSQL dump is verified by restoring it
(``pg_restore``) into a scratch database that is dropped afterwards. The vector index is not copied:
it is derived, and ``amem reindex`` rebuilds it from the ledger's stored vectors.

A SQLite copy is placed in rollback-journal mode, so that whatever opens it as a database (a restore
only reads its bytes) finds a file complete on its own: one still marked WAL cannot be opened by
SQLite from read-only media, and leaves -wal/-shm beside it elsewhere.

A backup killed midway (power cut, SIGKILL, OOM) cannot clean up after itself: its partial file (with
the -journal SQLite writes the copy under) and, for PostgreSQL, its scratch database (a full copy of
the ledger) stay. The next backup into the same directory removes those whose maker is gone,
whatever file they were for (backups are often named by date, so the next one is seldom to the
same name), and never those of a backup still running; an erasure removes them too where it can
find them (partial files beside a SQLite ledger, scratch databases on a PostgreSQL ledger's server),
since each holds what it erases. Each backup holds an exclusive lock on a
file beside its partial (``.partial-lock``) for its whole life, which the kernel releases when the
process ends however it ends, and is seen from every PID namespace (containers sharing the host
name and the volume, whose process ids mean nothing here). Partials named after another host are
left (a lock may not reach across a network share). The scratch database is named after the
server session that holds it to the end. A restore claims its temporary copy the same way.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel

from amem.config import sqlite_url
from amem.domain.progress import Progress, no_progress
from amem.errors import ConfigError, InvalidInputError
from amem.ledger.store import Ledger
from amem.services import pg_client
from amem.services.integrity import VerifyResult, verify_ledger

#: What ``claimed_beside`` names a backup's partial copy after, and how one a killed backup left is said.
PARTIAL = "partial"
STOPPED_BACKUP = "a partial copy left by a backup that stopped"


class BackupReport(BaseModel):
    path: str
    bytes: int
    #: The whole backup, and its copy step alone (the rest is the verification).
    seconds: float
    copy_seconds: float
    #: The copy's chain heads and event counts, as a checkpoint signs them.
    heads: dict[str, Any]
    verified: VerifyResult
    #: What backups killed midway had left, removed before this one: their partial files beside
    #: ``path`` and (PostgreSQL) their scratch databases.
    cleaned: list[str] = []


def back_up(
    ledger: Ledger,
    dest: Path,
    *,
    checkpoints: Sequence[tuple[int, dict[str, Any]]] = (),
    public_key: Any = None,
    progress: Progress = no_progress,
) -> BackupReport:
    """Copy the ledger to ``dest`` (a new file) in one consistent snapshot, then verify the copy:
    its chains, its rows, and each of ``checkpoints`` (signed with ``public_key``). The file is
    written under a temporary name and renamed when complete, so ``dest`` never names half a copy;
    a copy that does not verify is kept (the evidence of what was there) and its report says why.
    A file that appears at ``dest`` meanwhile is never overwritten (InvalidInputError). What
    backups killed midway left (partial files in ``dest``'s directory, scratch databases) is removed
    first, and the report lists it."""
    dest = dest.expanduser().resolve()
    if dest.exists():
        raise InvalidInputError(f"{dest} exists: a backup never overwrites a file; name a new one")
    if not dest.parent.is_dir():
        raise InvalidInputError(f"{dest.parent} is not a directory: create it first")
    postgres = ledger.dialect == "postgresql"
    cleaned = left_by_killed(dest.parent, PARTIAL, STOPPED_BACKUP)
    cleaned += stale_check_databases(ledger) if postgres else []
    started = time.perf_counter()
    progress("copying the ledger", 0, 1)
    # a copy not placed (a failure, or dest taken meanwhile) leaves nothing behind
    with claimed_beside(dest) as partial:
        if postgres:
            _dump_postgres(ledger, partial)
        else:
            _copy_sqlite(ledger, partial)
        fsync(partial)
        made = os.stat(partial)
        copied = time.perf_counter() - started
        try:
            with _restored_postgres(ledger, partial) if postgres else _opened_sqlite(partial) as copy:
                verified = verify_ledger(copy, checkpoints, public_key, progress=progress)
                with copy.read() as tx:
                    heads = tx.chain_state()
        except _CannotRestore as exc:  # the dump is whole: keep it, and say it is not proven
            _placed(partial, dest, made)
            raise ConfigError(f"{dest} is written but not verified: {exc}") from None
        if not postgres:
            _same_copy(partial, made)
            _rollback_journal(partial)
        _placed(partial, dest, made)
    return BackupReport(
        path=str(dest),
        bytes=dest.stat().st_size,
        seconds=round(time.perf_counter() - started, 3),
        copy_seconds=round(copied, 3),
        heads=heads,
        verified=verified,
        cleaned=cleaned,
    )


@contextmanager
def claimed_beside(dest: Path, kind: str = PARTIAL, *, hidden: bool = False) -> Iterator[Path]:
    """A new file of this process's own beside ``dest``, locked (``-lock`` beside it) until it is
    placed or removed: two backups (or restores) naming the same file never write into one copy
    (each is placed whole, or refused), and no clean-up takes it for a killed one's. Its name says
    which host and process writes it, and ``kind`` what for ("partial": a backup, "restoring": a
    restore), for whoever finds it; ``hidden`` starts it with a dot. On leaving, the file and what
    SQLite wrote beside it are removed, then the lock file, whose lock is held until then."""
    while True:
        tag = f"{_HOST}-{os.getpid()}-{secrets.token_hex(4)}"
        partial = dest.with_name(f"{'.' if hidden else ''}{dest.name}.{tag}.{kind}")
        lock = _lock_of(partial)
        try:
            held = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        if not _locked(held, lock):  # a clean-up took it for a stale one before it was locked
            os.close(held)
            continue
        try:
            try:
                os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                lock.unlink(missing_ok=True)
                continue
            try:
                yield partial
            finally:
                for leftover in _files_of(partial):
                    leftover.unlink(missing_ok=True)
                lock.unlink(missing_ok=True)
        finally:
            os.close(held)  # the lock goes with the last descriptor
        return


#: This host's name as a partial file's name carries it: letters and digits only.
_HOST = re.sub(r"[^A-Za-z0-9]", "_", socket.gethostname())[:40] or "host"

#: What SQLite writes beside the copy (its journals), and the backup's lock file.
_BESIDE = ("-journal", "-wal", "-shm")
_LOCK = "-lock"

#: A file ``claimed_beside`` makes, or one of those beside it: "<name>.<host>-<pid>-<8 hex>.<kind>",
#: then nothing, a journal's ending or the lock's. The host is letters, digits and "_" only, so the
#: name before it is whatever precedes the last such part.
_CLAIMED = re.compile(
    r"(?P<stem>.+\.(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)-[0-9a-f]{8}\.(?P<kind>[a-z]+))"
    r"(?:-journal|-wal|-shm|-lock)?"
)


def _lock_of(partial: Path) -> Path:
    return partial.with_name(partial.name + _LOCK)


def _files_of(partial: Path) -> list[Path]:
    """The partial copy and what SQLite may have written beside it."""
    return [partial, *(partial.with_name(partial.name + end) for end in _BESIDE)]


def _locked(fd: int, lock: Path) -> bool:
    """Whether this process now holds the exclusive lock of the open file ``fd``, still named
    ``lock`` (a clean-up removes a lock file it took, and a lock on a removed file guards nothing)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    try:
        named = os.stat(lock)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def left_by_killed(directory: Path, kind: str, left_by: str) -> list[str]:
    """Remove the files of ``kind`` (see ``claimed_beside``) in ``directory``, whatever file they
    were made for, with what SQLite wrote beside them, that processes killed on this host left:
    their lock can be taken. Each is said as "path (``left_by``: process N)". Those of a running
    process, which holds its lock, or of another host, are left; so are names this scheme did not
    make. The whole directory is looked at: a backup's next run is often to a new, dated name."""
    return claims_in(directory, kind, left_by)[0]


def claims_in(directory: Path, kind: str, left_by: str) -> tuple[list[str], list[str]]:
    """``left_by_killed``'s removal, and the claims it left because a running process holds them
    (on this host, or named after another): (removed, in use), each said with its process."""
    makers: dict[str, int] = {}
    in_use: list[str] = []
    try:
        names = sorted(entry.name for entry in os.scandir(directory))
    except FileNotFoundError:
        return [], []
    for name in names:
        found = _CLAIMED.fullmatch(name)
        if found is None or found.group("kind") != kind:
            continue
        if found.group("host") == _HOST:
            makers[found.group("stem")] = int(found.group("pid"))
        elif name == found.group("stem"):
            in_use.append(f"{directory / name} (made on host {found.group('host')}: left to it)")
    removed: list[str] = []
    for stem, pid in makers.items():
        partial = directory / stem
        lock = _lock_of(partial)
        try:
            held = os.open(lock, os.O_RDWR)
        except FileNotFoundError:  # an older amem's partial, or one whose clean-up stopped midway
            if _running(pid):
                in_use.append(f"{partial} (process {pid} is running)")
                continue
            held = None
        try:
            if held is not None:
                try:
                    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:  # its maker is running
                    in_use.append(f"{partial} (in use by process {pid}, which removes it when it ends)")
                    continue
            for path in _files_of(partial):
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue
                removed.append(f"{path} ({left_by}: process {pid})")
            lock.unlink(missing_ok=True)  # the last, while it is held
        finally:
            if held is not None:
                os.close(held)
    return removed, in_use


def _running(pid: int) -> bool:
    """Whether process ``pid`` of this host is alive (one of another user counts); of another PID
    namespace, it is not seen, so this only ever keeps files, never proves one stale on its own."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _placed(partial: Path, dest: Path, made: os.stat_result) -> None:
    """``partial`` named ``dest``, or InvalidInputError when a file appeared there while the backup
    was made (it is left as it is). ``partial`` must still be the file copied and verified
    (``made``: the same file, of the same size): never an empty one made at its name after it was
    removed."""
    _same_copy(partial, made)
    try:
        place(partial, dest)
    except FileExistsError:
        raise InvalidInputError(
            f"{dest} was created while the backup was being made: it is left as it is and this "
            "backup was not written (a backup never overwrites a file); name a new one"
        ) from None


def _same_copy(partial: Path, made: os.stat_result) -> None:
    """ConfigError unless ``partial`` is still the file copied (``made``): the same file, of the
    same size. Whoever removed it (a process that ignored its lock), the name may by now be
    missing or an empty file, which must never be placed and called verified."""
    try:
        now = os.stat(partial)
    except FileNotFoundError:
        now = None
    if now is None or (now.st_dev, now.st_ino, now.st_size) != (made.st_dev, made.st_ino, made.st_size):
        raise ConfigError(
            f"{partial} was removed or replaced while the backup was being made: it is not the copy "
            "that was verified, and was not placed; run the backup again"
        )


#: What os.link raises where the file system has no hard links (FAT, some network shares).
_NO_HARD_LINKS = frozenset(
    {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV, errno.EINVAL}
)


def place(partial: Path, dest: Path) -> None:
    """Give the finished file ``partial`` the name ``dest``, unless something holds that name by
    now: FileExistsError then, ``dest`` untouched. A check for ``dest`` made before minutes of
    copying and verifying proves nothing at the end, and ``os.replace`` would silently drop what
    appeared there meanwhile (a store opened at a restore's target, with acknowledged inputs).

    A hard link is made only if the name is free, in one step. Where the file system has none, the
    name is claimed by an exclusive create and the copy renamed over that empty claim: only the
    instant between the two is open to a writer that opens the empty claim itself."""
    try:
        os.link(partial, dest)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        os.close(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # FileExistsError if taken
        os.replace(partial, dest)
    else:
        partial.unlink()
    fsync(dest.parent)


# -- SQLite ----------------------------------------------------------------------------------------


def _copy_sqlite(ledger: Ledger, partial: Path) -> None:
    source = ledger.engine.raw_connection()
    try:
        target = sqlite3.connect(partial)
        try:
            # one step: the whole snapshot under one read transaction; WAL lets writers go on
            source.driver_connection.backup(target)  # type: ignore[union-attr]
        finally:
            target.close()
    finally:
        source.close()


def _rollback_journal(partial: Path) -> None:
    """The copy set to rollback-journal mode before it is placed: it is a file of its own, complete.
    The online backup copies the live ledger's header, which says WAL, and a WAL file cannot be
    opened read-only where its -shm cannot be made (a restore from read-only media fails), and
    leaves -wal/-shm beside it where it can (the backup is then written to, not only read)."""
    conn = sqlite3.connect(f"{partial.as_uri()}?mode=rw", uri=True)  # never a new, empty file
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        mode = conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
    finally:
        conn.close()
    if mode != "delete":
        raise ConfigError(f"{partial}: SQLite kept journal mode {mode!r} where 'delete' was set")
    fsync(partial)


@contextmanager
def _opened_sqlite(partial: Path) -> Iterator[Ledger]:
    copy = Ledger(sqlite_url(partial), create_if_empty=False)
    try:
        yield copy
    finally:
        copy.close()


# -- PostgreSQL ------------------------------------------------------------------------------------


class _CannotRestore(Exception):
    """The dump is made, but no scratch database can be had to restore and verify it in."""


def _schema(ledger: Ledger) -> str:
    """The schema holding the ledger's tables, found as its statements find them (on the
    search_path), not ``current_schema()``: an empty schema named after the role comes first on
    the default path, and the backup dumped it instead of the ledger."""
    with ledger.read(one_statement=True) as tx:
        return str(
            tx.conn.execute(
                sa.text(
                    "SELECT COALESCE((SELECT n.nspname FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE c.oid = to_regclass('raw_logs')), current_schema())"
                )
            ).scalar_one()
        )


def _dump_postgres(ledger: Ledger, partial: Path) -> None:
    """pg_dump's custom format, the ledger's schema alone, in one snapshot (pg_dump reads in one
    REPEATABLE READ transaction, so commits made meanwhile are wholly in or wholly out)."""
    uri, env = pg_client.libpq(ledger.engine.url)
    command = [
        pg_client.client("pg_dump"),
        "--format=custom",
        f"--schema={_schema(ledger)}",
        f"--file={partial}",
        uri,
    ]
    pg_client.run(command, env, "pg_dump")


#: A scratch database's name: the pid of the server session that holds it while the backup runs.
_CHECK_DATABASE = re.compile(r"amem_backup_check_(\d+)_[0-9a-f]{8}")


def stale_check_databases(ledger: Ledger) -> list[str]:
    """Drop the scratch databases that backups killed midway left on this server: each a full copy
    of a ledger, which the next backup and an erasure (which never reaches into one) drop. One is
    stale when the server session named in it has ended (a killed client's session ends with its
    connection) and nobody is connected to it; a running backup holds its session to the end, so its
    database is never taken from under it. One this role may not drop is left to its owner; names
    without a session (an older amem's) are left as they are."""
    admin = ledger.engine.execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        names = conn.execute(
            sa.text(r"SELECT datname FROM pg_database WHERE datname LIKE 'amem\_backup\_check\_%'")
        ).scalars()
        candidates = [(str(n), m) for n in names if (m := _CHECK_DATABASE.fullmatch(str(n)))]
        if not candidates:
            return []
        live = set(conn.execute(sa.text("SELECT pid FROM pg_stat_activity")).scalars())
        used = set(
            conn.execute(sa.text("SELECT datname FROM pg_stat_activity WHERE datname IS NOT NULL")).scalars()
        )
        dropped: list[str] = []
        for name, found in candidates:
            if int(found.group(1)) in live or name in used:
                continue
            try:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
            except sa.exc.DBAPIError:  # not this role's, or in use after all: left as it is
                continue
            dropped.append(
                f"database {name} (the scratch copy of a backup that stopped: server session "
                f"{found.group(1)})"
            )
        return dropped


@contextmanager
def _restored_postgres(ledger: Ledger, partial: Path) -> Iterator[Ledger]:
    """The dump restored into a scratch database of the same server, dropped afterwards: what a
    restore would give, opened as a ledger. The session that creates it is held to the end and
    named in it: while that session lives, no other backup takes the database for a stale one.
    It idles through pg_restore and the verification: the server's idle timeouts are turned off
    for it, and a holder ended all the same (an administrator, a pooler) leaves the dropping to a
    new connection."""
    schema = _schema(ledger)
    admin = ledger.engine.execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as holder:
        holder.execute(_NO_IDLE_TIMEOUTS)
        session = int(holder.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())
        scratch = f"amem_backup_check_{session}_{secrets.token_hex(4)}"
        try:
            holder.execute(sa.text(f'CREATE DATABASE "{scratch}"'))
        except sa.exc.DBAPIError as exc:
            raise _CannotRestore(
                f"creating a scratch database to restore it into was refused ({exc.orig}); grant "
                "CREATEDB to this role, or restore it into an empty database yourself (pg_restore "
                "--no-owner) and run amem verify --database-url on that one"
            ) from None
        try:
            yield from _opened_scratch(ledger, scratch, schema, partial)
        finally:
            drop = sa.text(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
            try:
                holder.execute(drop)
            except sa.exc.DBAPIError:  # the holder is gone, or it failed: once more, anew
                with admin.connect() as conn:
                    conn.execute(drop)
            finally:
                holder.invalidate()  # never back to the pool with the server's timeouts off


#: The session's idle timeouts off (those this server has: idle_session_timeout is PostgreSQL 14's).
_NO_IDLE_TIMEOUTS = sa.text(
    "SELECT set_config(name, '0', false) FROM pg_settings "
    "WHERE name IN ('idle_session_timeout', 'idle_in_transaction_session_timeout')"
)


def _opened_scratch(ledger: Ledger, scratch: str, schema: str, partial: Path) -> Iterator[Ledger]:
    """The dump restored into the new database ``scratch``, opened as a ledger."""
    url = ledger.engine.url.set(database=scratch)
    # a new database has its own schema "public": the dump of a ledger kept there makes it again
    fresh = sa.create_engine(url)
    try:
        with fresh.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    finally:
        fresh.dispose()
    uri, env = pg_client.libpq(url)
    pg_client.run(
        [
            pg_client.client("pg_restore"),
            "--no-owner",
            "--single-transaction",
            "--exit-on-error",
            f"--dbname={uri}",
            str(partial),
        ],
        env,
        "pg_restore",
    )
    query = {k: v for k, v in url.query.items() if k != "options"}
    scoped = url.set(query={**query, "options": f"-csearch_path={schema}"})
    copy = Ledger(scoped.render_as_string(hide_password=False), create_if_empty=False)
    try:
        yield copy
    finally:
        copy.close()


def fsync(path: Path) -> None:
    """A file or directory on disk before what depends on it is said done."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
