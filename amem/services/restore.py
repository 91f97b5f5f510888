"""A backup put back into service, proven before anything relies on it.

`amem backup` writes a SQLite copy or a PostgreSQL dump (amem/services/backup.py); restoring one
used to be the operator's own work with `cp` or `pg_restore`, and nothing checked what came back.
A restore here goes only into an empty place (a new SQLite file, a PostgreSQL schema that holds no
table): it never overwrites a ledger, since a ledger newer than the backup holds inputs that were
acknowledged after it, and history is never rewritten. The restored ledger is verified as `amem
verify` does (both chains, every row, each signed checkpoint given) before it is called restored.

SQLite: the backup's bytes are copied to a temporary name beside the target (the backup file itself
is only read, never opened by SQLite: a file an older amem left in WAL mode would otherwise get
-wal/-shm beside it, and could not be opened at all from read-only media), checked, verified there,
and renamed into place if the target is still free; a copy that does not verify is removed and
nothing is restored. The temporary copy is a whole ledger: it is claimed as a backup claims its
partial file (host and process in its name, a lock held for the restore's life), so one a killed
restore left is removed by the next restore into that directory and by an erasure
(``copies_of_stopped_restores``), and never one a running restore uses.

PostgreSQL: the dump's schema revision is read from the dump first (one a newer amem wrote is
refused before anything is written), then ``pg_restore`` into the target database (the dump's
schema, made there unless it exists empty) in one transaction, so a restore interrupted or failing
part-way leaves nothing (a ledger without its keys and append-only triggers would otherwise verify,
and refuse the next restore); then verified; one that does not verify is left there for inspection,
and the report says so. There is no temporary copy: the ledger is restored into the target itself.
So a restore killed while it verifies leaves the backup's ledger there, unproven. It is marked
(the schema's comment, put back once verified) and never dropped for the operator: the next restore
into that schema, refused as for any ledger, says how to prove it (`amem verify`) or drop it only
when the schema is marked and its chain heads are still the dump's (nothing kept since, so dropping
loses nothing the backup lacks); a ledger in service is refused saying how many changes it holds and
the last one's time, and to restore into an empty database instead, never to drop it. The dump's
schema is the one restored, verified and reported: a target URL whose search_path names another is
refused.

The checkpoint log given is usually kept since the backup was taken, so its later statements sign
events the backup does not hold: those are reported as newer than the backup, with the events the
restored ledger lacks, and the restore goes on (`amem verify` of a live ledger still calls that a
truncation). Each statement the backup reaches is proven as `amem verify` proves it.

The vector index is derived: the CLI rebuilds it from the restored ledger's stored vectors. The
restored ledger keeps none of the source's index positions (``index_state``), whose ledger identity
names the source's index builds: sharing it, a restore beside the live store (``--database-url``
with the same home) would take the live store's build for its own and drop it, and each later open
of either ledger would drop the other's. It gets an identity of its own with its first build; the
chains, which checkpoints sign, hold no identity, so it still verifies against the source's.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, Field

from amem.config import sqlite_url
from amem.domain.progress import Progress, no_progress
from amem.errors import InvalidInputError
from amem.ledger import schema
from amem.ledger.store import Ledger, create_engine
from amem.ledger.tables import index_state
from amem.services import pg_client
from amem.services.backup import claimed_beside, claims_in, place
from amem.services.integrity import VerifyResult, verify_ledger

_SQLITE_MAGIC = b"SQLite format 3\x00"
_PG_DUMP_MAGIC = b"PGDMP"
#: A schema entry of ``pg_restore --list``: "3; 2615 2200 SCHEMA - public pg_database_owner".
_SCHEMA_ENTRY = re.compile(r"^\d+; \d+ \d+ SCHEMA - (\S+) ")
#: What the claim of a restore's temporary copy ends with (``backup.claimed_beside``).
_RESTORING = "restoring"
#: A temporary copy an amem before ``claimed_beside`` made (``tempfile.mkstemp``: eight random
#: letters, digits or "_"), with what SQLite wrote beside it; group 1 is the target's file name.
_UNCLAIMED = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.restoring(?:-journal|-wal|-shm)?")
#: The data of alembic_version in ``pg_restore --data-only`` output: "COPY s.alembic_version
#: (version_num) FROM stdin;", then one revision a line, ended by a line "\.".
_REVISION_DATA = re.compile(
    r"^COPY .*\balembic_version \(version_num\) FROM stdin;\n(.*?)^\\\.$", re.M | re.S
)
#: The rows of the index positions in ``pg_restore --list``: "3514; 0 45759 TABLE DATA public
#: index_state postgres" (left out: the restored ledger's index is its own).
_INDEX_STATE_DATA = re.compile(rf"^\d+; \d+ \d+ TABLE DATA \S+ {index_state.name} ")

#: The comment a PostgreSQL restore puts on the schema it restored into until the ledger there is
#: verified (then it puts back the one the schema had): on a schema found holding a ledger, it tells
#: what a restore killed while verifying left from a ledger in service.
_UNPROVEN = "amem restore: restored, not yet verified"
_COMMENT = sa.text("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = :s")
#: The data of chain_head in ``pg_restore --data-only`` output: its columns (group 1), its one
#: row (group 2, values tab-separated).
_CHAIN_HEAD_DATA = re.compile(r"^COPY .*\bchain_head \(([^)]*)\) FROM stdin;\n(.*?)^\\\.$", re.M | re.S)


class RestoreReport(BaseModel):
    backup: str
    kind: Literal["sqlite", "postgresql"]
    #: Where the ledger now is: the database URL to give amem (its password hidden).
    database_url: str
    #: PostgreSQL: the schema restored (the dump's own); None for SQLite.
    schema_name: str | None = None
    seconds: float
    heads: dict[str, Any]
    verified: VerifyResult
    #: False when the copy did not verify: SQLite restores nothing then; PostgreSQL leaves it in place.
    restored: bool
    #: The URL that opens the restored ledger, password included: never printed or serialised.
    ledger_url: str = Field(exclude=True, repr=False)
    #: The backup's schema revision when an older amem wrote it (the restored ledger was migrated
    #: to this amem's, as `amem db upgrade` would); None when it was current.
    upgraded_from: str | None = None
    #: Temporary copies (each a whole ledger) that restores killed earlier left beside the target,
    #: removed before this one; and those left, which a restore may still be using.
    cleaned: list[str] = []
    left: list[str] = []


class StoppedRestores(BaseModel):
    """The temporary copies of restores found in a directory: each a whole ledger, which an erasure
    must not leave behind. ``removed``: those whose restore stopped; ``left``: those a restore may
    still be using (it removes its copy when it ends), said with why."""

    removed: list[str] = []
    left: list[str] = []


def kind_of(backup: Path) -> Literal["sqlite", "postgresql"]:
    """Which kind of backup ``backup`` is, by its first bytes."""
    try:
        with backup.open("rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise InvalidInputError(f"{backup}: cannot read the backup: {exc.strerror or exc}") from None
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(_PG_DUMP_MAGIC):
        return "postgresql"
    raise InvalidInputError(
        f"{backup} is neither a SQLite ledger nor a pg_dump custom-format file: "
        "give a file `amem backup` wrote"
    )


def restore(
    backup: Path,
    target_url: str,
    *,
    checkpoints: Sequence[tuple[int, dict[str, Any]]] = (),
    public_key: Any = None,
    progress: Progress = no_progress,
) -> RestoreReport:
    """Restore ``backup`` into the empty ledger place ``target_url`` and verify it there."""
    backup = backup.expanduser().resolve()
    kind = kind_of(backup)
    target = sa.make_url(target_url)
    backend = target.get_backend_name()
    if backend != kind:
        raise InvalidInputError(
            f"{backup} is a {kind} backup and the store's ledger is {backend} ({_shown(target)}): "
            f"restore it into a {kind} ledger (--database-url)"
        )
    progress("restoring the ledger", 0, 1)
    proof = _Proof(checkpoints, public_key, progress, time.perf_counter())
    return (_restore_sqlite if kind == "sqlite" else _restore_postgres)(backup, target, proof)


@dataclass(frozen=True)
class _Proof:
    """What a restored ledger is verified against, and when the restore began."""

    checkpoints: Sequence[tuple[int, dict[str, Any]]]
    public_key: Any
    progress: Progress
    started: float

    def verify(self, ledger: Ledger) -> tuple[VerifyResult, dict[str, Any]]:
        """The ledger verified as `amem verify` does, and its chain heads."""
        verified = verify_ledger(
            ledger, self.checkpoints, self.public_key, progress=self.progress, of_a_backup=True
        )
        with ledger.read() as tx:
            return verified, tx.chain_state()

    def seconds(self) -> float:
        return round(time.perf_counter() - self.started, 3)


# -- SQLite ----------------------------------------------------------------------------------------


def _restore_sqlite(backup: Path, target: sa.URL, proof: _Proof) -> RestoreReport:
    if not target.database or target.database == ":memory:":
        raise InvalidInputError(f"{_shown(target)}: restore a SQLite backup into a file")
    dest = Path(target.database).expanduser().resolve()
    _refuse_a_ledger(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    found = copies_of_stopped_restores_in(dest.parent)
    with claimed_beside(dest, _RESTORING, hidden=True) as partial:
        try:
            _copy_backup(backup, partial)
            upgraded_from = _brought_up_to_date(sqlite_url(partial), backup)
            _forget_index_positions(sqlite_url(partial))
            opened = Ledger(sqlite_url(partial), create_if_empty=False)
            try:
                verified, heads = proof.verify(opened)
            finally:
                opened.close()
        except (sqlite3.DatabaseError, sa.exc.DatabaseError) as exc:
            damaged = _damaged(backup, exc)
            if damaged is None:
                raise
            raise damaged from None
        if verified.ok:
            _checkpointed(partial)
            # minutes may have passed: a store opened at the target meanwhile holds acknowledged
            # inputs, so look again, then take the name only if it is still free
            _refuse_a_ledger(dest)
            if dest.exists():  # empty (a store opened and never written): nothing to lose
                dest.unlink()
            try:
                place(partial, dest)
            except FileExistsError:
                _refuse_a_ledger(dest)
                raise InvalidInputError(
                    f"{dest} was created while the backup was being restored: it is left as it is and "
                    "nothing was restored; restore into a new place (--home DIR or --database-url)"
                ) from None
    return RestoreReport(
        backup=str(backup),
        kind="sqlite",
        database_url=sqlite_url(dest),
        seconds=proof.seconds(),
        heads=heads,
        verified=verified,
        restored=verified.ok,
        ledger_url=sqlite_url(dest),
        upgraded_from=upgraded_from,
        cleaned=found.removed,
        left=found.left,
    )


def copies_of_stopped_restores(database_url: str) -> StoppedRestores:
    """The temporary copies restores left beside the SQLite ledger ``database_url`` names, those of
    stopped restores removed: what an erasure calls (``erasure.erase``), since each copy is a whole
    ledger holding what the erasure removes. Nothing for a PostgreSQL ledger: a restore there makes
    no copy, it restores into its target itself."""
    url = sa.make_url(database_url)
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return StoppedRestores()
    return copies_of_stopped_restores_in(Path(url.database).expanduser().resolve().parent)


def copies_of_stopped_restores_in(directory: Path) -> StoppedRestores:
    """Remove the temporary copies that restores killed midway (SIGKILL, OOM, power cut) left in
    ``directory``, whatever file they were restoring: those whose lock can be taken. Those a running
    restore holds are left, said so (it removes its copy when it ends). A copy an amem before these
    locks made names no process: it is removed only when the file it was for holds a ledger by now
    (its restore, if it still runs, will be refused: a restore never overwrites a ledger), else
    left and said so."""
    stopped = "a copy of a backup left by a restore that stopped"
    removed, left = claims_in(directory, _RESTORING, stopped)
    try:
        names = sorted(entry.name for entry in os.scandir(directory))
    except FileNotFoundError:
        return StoppedRestores(removed=removed)
    for name in names:
        found = _UNCLAIMED.fullmatch(name)
        if found is None:
            continue
        path, meant = directory / name, directory / found.group(1)
        if not _holds_a_ledger(meant):
            left.append(
                f"{path} (a copy of a backup that an earlier amem's restore into {meant} made: it may "
                "still be running; remove the file once no restore runs)"
            )
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(f"{path} ({stopped}: {meant} holds a ledger, which no restore replaces)")
    return StoppedRestores(removed=removed, left=left)


def _holds_a_ledger(dest: Path) -> bool:
    return any(p.exists() and p.stat().st_size > 0 for p in (dest, dest.with_name(dest.name + "-wal")))


def _refuse_a_ledger(dest: Path) -> None:
    """InvalidInputError when ``dest`` (or its write-ahead log) holds anything: a restore never
    overwrites a ledger, which may hold inputs acknowledged after the backup."""
    for path in (dest, dest.with_name(dest.name + "-wal")):
        if _holds_a_ledger(path):
            raise InvalidInputError(
                f"{path} holds a ledger already: a restore never overwrites one (it would lose what was "
                "kept after the backup); restore into a new place (--home DIR or --database-url) and "
                "point amem at it"
            )


#: What SQLite reads beside a database file when it opens it: committed pages not yet in the file
#: (a write-ahead log), or the pages to put back of a write cut short (a hot rollback journal).
_READ_BESIDE = ("-wal", "-journal")


def _copy_backup(backup: Path, partial: Path) -> None:
    """The backup's bytes copied into ``partial`` (with a write-ahead log or hot journal beside it
    that holds anything, as SQLite would read them), then checked whole: SQLite reads only the
    pages a query needs, so a file cut short could otherwise verify and fail later, in service. The
    backup is only read as a file: SQLite opening it, even read-only, makes -wal/-shm beside one an
    older amem left in WAL mode, and cannot open that one at all from read-only media."""
    short = _cut_short(backup)
    if short:
        raise sqlite3.DatabaseError(short)
    sources = [backup, *(backup.with_name(backup.name + end) for end in _READ_BESIDE)]
    before = [_state(path) for path in sources]
    shutil.copyfile(backup, partial)
    for source, state, end in zip(sources[1:], before[1:], _READ_BESIDE, strict=True):
        if state is not None and state[0] > 0:
            shutil.copyfile(source, partial.with_name(partial.name + end))
    if [_state(path) for path in sources] != before:
        raise InvalidInputError(
            f"{backup} was written to while it was being read: something has it open; nothing "
            "restored; restore it again once nothing writes it, or restore another copy of it"
        )
    copy = sqlite3.connect(f"{partial.as_uri()}?mode=rw", uri=True)  # never a new, empty file
    try:
        problems = [row[0] for row in copy.execute("PRAGMA quick_check(1)")]
    finally:
        copy.close()
    if problems != ["ok"]:
        raise sqlite3.DatabaseError("; ".join(problems))


def _state(path: Path) -> tuple[int, int] | None:
    """A file's size and time of last change, or None where there is none."""
    try:
        found = path.stat()
    except FileNotFoundError:
        return None
    return found.st_size, found.st_mtime_ns


def _cut_short(backup: Path) -> str | None:
    """Why ``backup`` is shorter than its header says it is, or None. SQLite reads a missing tail as
    zeros, and zeros where no row was kept pass every check: the header's size is the proof."""
    with backup.open("rb") as f:
        header = f.read(100)
    if len(header) < 100:
        return f"{len(header)} bytes, shorter than a SQLite header"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] != header[92:96] or not pages:  # the size is valid only when both counters agree
        return None
    size = backup.stat().st_size
    if size < pages * page_size:
        return f"{size} bytes where its header says {pages} pages of {page_size} bytes: the end is missing"
    return None


def _damaged(backup: Path, exc: sqlite3.DatabaseError | sa.exc.DatabaseError) -> InvalidInputError | None:
    """A backup SQLite cannot read as a database ("malformed", "not a database") is the user's
    problem, not amem's (a file cut short by a full disk or an interrupted copy): said so, with the
    file. None for anything else (a full disk or a lock here), which goes on as it came."""
    cause = exc.orig if isinstance(exc, sa.exc.DatabaseError) else exc
    if isinstance(cause, sqlite3.OperationalError) or not isinstance(cause, sqlite3.DatabaseError):
        return None
    return InvalidInputError(
        f"the backup {backup} is damaged or incomplete ({cause}): nothing restored; restore another "
        "copy of it"
    )


def _forget_index_positions(url: str) -> None:
    """The source's index positions gone from the restored copy, and with them its ledger identity,
    which names the source's index builds (derived data: no chain or checkpoint covers it)."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.delete(index_state))
    finally:
        engine.dispose()


def _checkpointed(path: Path) -> None:
    """Everything of ``path``'s write-ahead log in the file itself, so renaming the file moves it whole."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()


# -- PostgreSQL ------------------------------------------------------------------------------------


def _restore_postgres(backup: Path, target: sa.URL, proof: _Proof) -> RestoreReport:
    env = pg_client.libpq(target)[1]
    listing = pg_client.run([pg_client.client("pg_restore"), "--list", str(backup)], env, "pg_restore --list")
    schemas = [m.group(1) for line in listing.splitlines() if (m := _SCHEMA_ENTRY.match(line))]
    if len(schemas) != 1:
        raise InvalidInputError(
            f"{backup}: expected the dump of one ledger schema, found {schemas or 'none'}"
        )
    (schema,) = schemas
    _refuse_unknown(_dump_revision(backup, schema, env), backup)  # before anything is written
    engine = sa.create_engine(_without_options(target))
    try:
        with engine.connect() as conn:
            exists = conn.execute(
                sa.text("SELECT count(*) FROM pg_namespace WHERE nspname = :s"), {"s": schema}
            ).scalar_one()
            tables = conn.execute(
                sa.text("SELECT count(*) FROM information_schema.tables WHERE table_schema = :s"),
                {"s": schema},
            ).scalar_one()
    finally:
        engine.dispose()
    if tables:
        raise InvalidInputError(_occupied(target, schema, tables, _dump_heads(backup, schema, env)))
    scoped = _opening(target, schema, made=bool(exists))
    uri, env = pg_client.libpq(scoped)
    # one transaction, stopped at the first error: interrupted or failing, it leaves nothing behind
    command = [
        pg_client.client("pg_restore"),
        "--no-owner",
        "--single-transaction",
        "--exit-on-error",
        f"--dbname={uri}",
    ]
    kept = [
        ";" + line
        if _INDEX_STATE_DATA.match(line) or (exists and _SCHEMA_ENTRY.match(line))
        else line  # an empty schema, say "public" of a new database: restore into it, do not make it
        for line in listing.splitlines()
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".list", delete=False) as toc:
        toc.write("\n".join(kept) + "\n")
    try:
        pg_client.run([*command, f"--use-list={toc.name}", str(backup)], env, "pg_restore")
    finally:
        os.unlink(toc.name)
    before = _marked(target, schema, _UNPROVEN)  # until verified: what a killed restore leaves
    url = scoped.render_as_string(hide_password=False)
    upgraded_from = _brought_up_to_date(url, backup)
    restored = Ledger(url, create_if_empty=False)
    try:
        verified, heads = proof.verify(restored)
    finally:
        restored.close()
    if verified.ok:
        _marked(target, schema, before)
    return RestoreReport(
        backup=str(backup),
        kind="postgresql",
        database_url=_shown(scoped),
        schema_name=schema,
        seconds=proof.seconds(),
        heads=heads,
        verified=verified,
        restored=verified.ok,
        ledger_url=url,
        upgraded_from=upgraded_from,
    )


def _occupied(target: sa.URL, schema: str, tables: int, dumped: dict[str, str]) -> str:
    """Why a restore into ``schema`` of ``target``, which holds ``tables`` tables, is refused, and
    the way out. Dropping is named only when the schema holds exactly the backup's ledger (its chain
    heads those of the dump: nothing kept since), which is what a restore killed while verifying
    leaves, and dropping it loses nothing the backup lacks; a ledger put into service has moved on,
    and a schema that is no ledger is not amem's to drop."""
    refused = (
        f"schema {schema!r} of {_shown(target)} holds {tables} table(s) already: a restore never overwrites"
    )
    found = _target_ledger(target, schema)
    if found is None:
        return f"{refused} them, and they are no amem ledger; restore into an empty database (--database-url)"
    heads, changes, last, comment = found
    held = f"{changes} change(s), the last at {last}" if last else f"{changes} change(s)"
    same = bool(dumped) and all(str(heads.get(k)) == v for k, v in dumped.items() if k in heads)
    if not same or comment != _UNPROVEN:
        return (
            f"{refused} a ledger, and this one is in service: it holds {held}"
            + ("" if same else ", which the backup does not hold")
            + "; nothing restored, nothing changed there: restore into an empty database instead "
            "(--database-url)"
        )
    bare = _without_options(target)
    there = bare.set(query={**bare.query, "options": f"-csearch_path={schema}"})
    return (
        f"{refused} a ledger, and this one is the backup's own ledger ({held}), nothing kept since: "
        f"what a restore killed while verifying leaves, unproven. `amem --database-url "
        f"'{_shown(there)}' verify` proves it, or drop it (DROP SCHEMA {_quoted(schema)} CASCADE, once "
        "nothing uses it) and restore again"
    )


def _target_ledger(target: sa.URL, schema: str) -> tuple[dict[str, Any], int, Any, str | None] | None:
    """The chain heads, number of changes, time of the last one and the schema's comment (a
    restore's mark) of the ledger in ``schema`` of ``target``; None when that schema holds no amem
    ledger (no chain head)."""
    quoted = _quoted(schema)
    engine = sa.create_engine(_without_options(target))
    try:
        with engine.connect() as conn:
            try:
                row = conn.execute(sa.text(f"SELECT * FROM {quoted}.chain_head")).mappings().first()
                changes, last = conn.execute(
                    sa.text(f"SELECT count(*), max(applied_at) FROM {quoted}.changes")
                ).one()
            except sa.exc.DBAPIError:
                return None
            comment = conn.execute(_COMMENT, {"s": schema}).scalar_one_or_none()
    finally:
        engine.dispose()
    if row is None:
        return None
    shown = last.isoformat(sep=" ", timespec="seconds") if hasattr(last, "isoformat") else last
    return dict(row), int(changes), shown, comment


def _marked(target: sa.URL, schema: str, comment: str | None) -> str | None:
    """Set ``schema``'s comment to ``comment`` (None: none) and return the one it had. Where the
    role may not comment on the schema (it does not own it), nothing is marked: a restore killed
    then is refused later as a ledger in service, and the advice never names dropping it."""
    engine = sa.create_engine(_without_options(target))
    try:
        with engine.begin() as conn:
            had = conn.execute(_COMMENT, {"s": schema}).scalar_one_or_none()
            literal = "NULL" if comment is None else "'" + comment.replace("'", "''") + "'"
            try:
                with conn.begin_nested():
                    conn.execute(sa.text(f"COMMENT ON SCHEMA {_quoted(schema)} IS {literal}"))
            except sa.exc.DBAPIError:
                pass
            return had
    finally:
        engine.dispose()


def _dump_heads(backup: Path, schema_name: str, env: dict[str, str]) -> dict[str, str]:
    """The chain heads the dump holds (its chain_head row, column to value, as ``pg_restore``
    prints them); empty when it holds none."""
    printed = pg_client.run(
        [
            pg_client.client("pg_restore"),
            "--data-only",
            f"--schema={schema_name}",
            "--table=chain_head",
            "--file=-",
            str(backup),
        ],
        env,
        "pg_restore --data-only",
    )
    found = _CHAIN_HEAD_DATA.search(printed)
    if found is None:
        return {}
    names = [name.strip().strip('"') for name in found.group(1).split(",")]
    rows = [line.split("\t") for line in found.group(2).splitlines() if line]
    return dict(zip(names, rows[0], strict=False)) if len(rows) == 1 else {}


def _opening(target: sa.URL, schema: str, *, made: bool) -> sa.URL:
    """The URL that opens ``schema`` of the target database once restored, so the ledger verified,
    reindexed and reported is the one restored: ``target`` itself where its search path leads
    there, else ``target`` with its search path set to it. InvalidInputError when ``target``'s own
    options set a search path leading elsewhere (a dump of "public" restored with the URL of a
    ledger kept in another schema): amem at that URL would open the other ledger, not this one."""
    engine = sa.create_engine(target)
    try:
        with engine.connect() as conn, conn.begin() as tx:
            asked = conn.execute(sa.text("SHOW search_path")).scalar_one()
            if not made:  # made here and rolled back: where the search path leads once it exists
                try:
                    conn.execute(sa.text(f"CREATE SCHEMA {conn.dialect.identifier_preparer.quote(schema)}"))
                except sa.exc.ProgrammingError as exc:  # no CREATE right: pg_restore could not either
                    raise InvalidInputError(
                        f"{_shown(target)}: cannot make schema {schema!r} to restore the dump into "
                        f"({exc.orig})"
                    ) from None
            opened = conn.execute(sa.text("SELECT current_schema()")).scalar_one_or_none()
            tx.rollback()
    finally:
        engine.dispose()
    if opened == schema:
        return target
    bare = _without_options(target)
    if "options" in target.query and asked != _search_path(bare):
        raise InvalidInputError(
            f"{_shown(target)} sets the search path {asked!r}, which opens "
            f"{'schema ' + repr(opened) if opened else 'no schema'}, and the dump holds the ledger of "
            f"schema {schema!r}, which a restore keeps: nothing restored; give the URL without that "
            f"option, or with options=-csearch_path={schema}"
        )
    return bare.set(query={**bare.query, "options": f"-csearch_path={schema}"})


def _search_path(url: sa.URL) -> str:
    """The search path a session at ``url`` starts with."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.execute(sa.text("SHOW search_path")).scalar_one())
    finally:
        engine.dispose()


def _without_options(url: sa.URL) -> sa.URL:
    return url.set(query={k: v for k, v in url.query.items() if k != "options"})


def _brought_up_to_date(url: str, backup: Path) -> str | None:
    """Migrate the restored copy to this amem's schema when an older amem wrote the backup (the
    migrations keep every row and the chains: they are what `amem db upgrade` runs on a live
    ledger); refuse one a newer amem wrote. Returns the revision it was at, if it was older."""
    engine = create_engine(url)
    try:
        found = _refuse_unknown(schema.current_revision(engine), backup)
        if found == schema.head_revision():
            return None
        schema.upgrade(engine)
        return found
    finally:
        engine.dispose()


def _refuse_unknown(found: str | None, backup: Path) -> str:
    """``found``, the backup's schema revision, if this amem can restore it; else InvalidInputError:
    no revision (not an amem ledger), or one a newer amem wrote (its migrations are not here)."""
    if found is None:
        raise InvalidInputError(f"{backup} holds no amem ledger (no schema revision)")
    if found != schema.head_revision() and found not in schema.known_revisions():
        raise InvalidInputError(
            f"{backup} was written by a newer amem (schema {found}; this one knows up to "
            f"{schema.head_revision()}): nothing restored; restore it with that version"
        )
    return found


def _dump_revision(backup: Path, schema_name: str, env: dict[str, str]) -> str | None:
    """The schema revision a dump holds, read from the dump itself (its alembic_version rows, as
    ``pg_restore`` prints them), so a dump this amem cannot take is refused before pg_restore
    writes a ledger into the target that nothing would take out again. None: no revision."""
    printed = pg_client.run(
        [
            pg_client.client("pg_restore"),
            "--data-only",
            f"--schema={schema_name}",
            "--table=alembic_version",
            "--file=-",
            str(backup),
        ],
        env,
        "pg_restore --data-only",
    )
    found = _REVISION_DATA.search(printed)
    rows = found.group(1).split() if found else []
    return rows[0] if len(rows) == 1 else None


def _shown(url: sa.URL) -> str:
    return pg_client.shown(url)


def _quoted(schema: str) -> str:
    """``schema`` as an SQL identifier, quoted (the dump's schema may hold any character)."""
    return '"' + schema.replace('"', '""') + '"'
