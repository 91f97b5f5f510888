"""A copy of the ledger that is proven before it is called a backup.

Copying a live SQLite ledger with ``cp`` can lose what it acknowledged: the newest commits may be in
the write-ahead log beside the file, and a copy taken while a transaction commits can be torn.
SQLite's online backup copies one consistent snapshot while writers go on (WAL). The copy is then
opened as a ledger of its own and verified: both hash chains recomputed, every row against its
event, and every signed checkpoint proven against it, so the backup is known to hold everything
those statements committed to. The vector index is not copied: it is derived, and ``amem reindex``
rebuilds it from the ledger's stored vectors. PostgreSQL has its own tool for this (``pg_dump``);
the refusal says how.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from amem.domain.progress import Progress, no_progress
from amem.errors import ConfigError, InvalidInputError
from amem.ledger.store import Ledger
from amem.services.integrity import VerifyResult, verify_ledger


class BackupReport(BaseModel):
    path: str
    bytes: int
    #: The whole backup, and its copy step alone (the rest is the verification).
    seconds: float
    copy_seconds: float
    #: The copy's chain heads and event counts, as a checkpoint signs them.
    heads: dict[str, Any]
    verified: VerifyResult


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
    written under a temporary name and renamed when complete, so ``dest`` never names half a copy."""
    if ledger.dialect != "sqlite":
        raise ConfigError(
            "amem backup copies a SQLite ledger; for PostgreSQL use its own consistent dump: "
            "pg_dump --format=custom --file ledger.dump DATABASE (with --schema when the ledger has one), "
            "then pg_restore it into an empty database and run amem verify --database-url on that one"
        )
    dest = dest.expanduser().resolve()
    if dest.exists():
        raise InvalidInputError(f"{dest} exists: a backup never overwrites a file; name a new one")
    if not dest.parent.is_dir():
        raise InvalidInputError(f"{dest.parent} is not a directory: create it first")
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    started = time.perf_counter()
    progress("copying the ledger", 0, 1)
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
    _fsync(partial)
    copied = time.perf_counter() - started
    copy = Ledger(f"sqlite:///{partial}", create_if_empty=False)
    try:
        verified = verify_ledger(copy, checkpoints, public_key, progress=progress)
        with copy.read() as tx:
            heads = tx.chain_state()
    finally:
        copy.close()
    os.replace(partial, dest)  # kept even when it does not verify: the evidence of what was there
    _fsync(dest.parent)
    return BackupReport(
        path=str(dest),
        bytes=dest.stat().st_size,
        seconds=round(time.perf_counter() - started, 3),
        copy_seconds=round(copied, 3),
        heads=heads,
        verified=verified,
    )


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
