"""Erasure on PostgreSQL: what still keeps the erased rows' old versions when the files are
compacted (a replication slot's xmin among them), and the wait for it that `amem erase` shows."""

from __future__ import annotations

import io
import struct
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from amem.ledger import compaction
from amem.ledger.compaction import Compaction
from amem.memory import Memory
from tests.factories import signed_in
from tests.services.test_erasure import _database_files, _hits, _why_kept, run

#: How long the tests wait for the server to show a slot's change (it comes in milliseconds).
BOUND_S = 10.0
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _postgres_only(reviewer_passwords: dict[str, str], memory: Memory) -> None:
    """Only PostgreSQL keeps old row versions for other sessions; `amem erase` needs a password
    (before the store opens: its policy is the one in force)."""
    if memory.ledger.dialect != "postgresql":
        pytest.skip("SQLite has no other sessions' snapshots and no replication slots")


def _said_secret(memory: Memory) -> tuple[str, str]:
    """A raw log whose text holds a word found nowhere else: (its id, the word)."""
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    note_id = memory.add_note(f"Mrs {secret} of Acme called", actor="agent:sales-agent", scope="acme")
    return memory.read(note_id).raw_log_ids[0], secret


def _slot_xmin(memory: Memory, slot: str) -> str | None:
    with memory.ledger.engine.connect() as conn:
        query = sa.text("SELECT coalesce(xmin::text, '') FROM pg_replication_slots WHERE slot_name = :s")
        return conn.execute(query, {"s": slot}).scalar()


def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@contextmanager
def _standby_feeding(memory: Memory) -> Iterator[str]:
    """A standby holding a snapshot from now, for real: a replication connection makes a temporary
    physical slot, streams from it and sends hot standby feedback with a transaction id taken now,
    the message a standby with hot_standby_feedback sends while a query of its own reads. Yields
    the slot's name; the slot goes with the connection, gone when this ends."""
    from psycopg import pq
    from psycopg.conninfo import make_conninfo

    url = memory.ledger.engine.url
    params = {"host": url.host, "port": url.port, "user": url.username, "password": url.password}
    conninfo = make_conninfo(
        dbname=url.database, replication="database", **{k: str(v) for k, v in params.items() if v}
    )
    feed = pq.PGconn.connect(conninfo.encode())
    try:
        if feed.status != pq.ConnStatus.OK:
            pytest.skip(f"the test server refuses a replication connection: {feed.get_error_message()}")
        slot = f"amem_test_{uuid.uuid4().hex[:10]}"
        made = feed.exec_(f"CREATE_REPLICATION_SLOT {slot} TEMPORARY PHYSICAL RESERVE_WAL".encode())
        if made.status != pq.ExecStatus.TUPLES_OK:
            pytest.skip(f"no replication slot on the test server: {feed.get_error_message()}")
        lsn = feed.exec_(b"IDENTIFY_SYSTEM").get_value(0, 2) or b""
        feed.send_query(b"START_REPLICATION SLOT " + slot.encode() + b" PHYSICAL " + lsn)
        assert feed.get_result().status == pq.ExecStatus.COPY_BOTH, feed.get_error_message()
        with memory.ledger.engine.connect() as conn:  # a transaction id from before the erasure
            epoch, xid = divmod(conn.execute(sa.text("SELECT txid_current()")).scalar_one(), 2**32)
        sent_at = int((datetime.now(UTC) - _PG_EPOCH).total_seconds() * 1_000_000)
        feed.put_copy_data(b"h" + struct.pack("!qIIII", sent_at, xid, epoch, 0, 0))
        feed.flush()
        _until(lambda: _slot_xmin(memory, slot) == str(xid), "the slot never took the standby's xmin")
        yield slot
    finally:
        feed.finish()
    _until(lambda: _slot_xmin(memory, slot) is None, "the temporary slot outlived its connection")


def test_a_slot_whose_standby_reads_from_before_the_erasure_is_named_not_called_gone(
    memory: Memory,
) -> None:
    """A replication slot's xmin keeps old row versions as an open session does, and VACUUM FULL
    copies them: the erasure counted only sessions, so with a standby reading (or a standby down,
    its slot kept) it said nothing while the erased bytes stayed in the files. It names the slot."""
    raw, secret = _said_secret(memory)
    with _standby_feeding(memory) as slot:
        report = memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw, wait_s=0.2)
        assert slot in report.replication_slots_holding, report
        assert _hits(_database_files(memory), secret.encode()), "the slot keeps the old row versions"
    assert memory.ledger.compact() == Compaction()  # the slot gone, the bytes go
    hits = _hits(_database_files(memory), secret.encode())
    assert hits == [], _why_kept(memory, hits, secret.encode())


def test_amem_erase_says_what_it_waits_for_and_which_slot_may_keep_the_bytes(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`amem erase` waited up to a minute without a word; it says it waits, on what and how long at
    most, and at the end that the erased bytes may remain because of the slot, by its name."""
    waited = compaction.wait_for_older_snapshots
    monkeypatch.setattr(  # the command's minute, shortened to a second: the slot stays to the end
        compaction, "wait_for_older_snapshots", lambda cur, wait_s, progress: waited(cur, 1.0, progress)
    )
    raw, _ = _said_secret(memory)
    with _standby_feeding(memory) as slot:
        assert run(memory, "erase", "--raw-log", raw, "--reviewer", "alice", "--reason", "request") == 0
    said = capsys.readouterr()
    assert "waiting up to 1 s for what can still read the erased rows to end" in said.err, said.err
    assert f"replication slot {slot} (physical, in use)" in said.err, said.err
    assert "the erased bytes may remain in PostgreSQL's files: replication slot" in said.out, said.out
    assert slot in said.out.split("may remain")[1], said.out


def test_amem_erase_says_at_once_which_older_session_it_waits_for(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session that began before the erasure held `amem erase` silent for up to a minute: the
    wait is said as it begins, naming the session; here the session ends once that is said, and
    the erasure goes on when it does (it does not wait out the minute and report it still open)."""
    raw, _ = _said_secret(memory)
    reader = memory.ledger.engine.connect().execution_options(isolation_level="REPEATABLE READ")
    reader.begin()
    pid = reader.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()  # its snapshot, from now

    class Stderr(io.StringIO):
        """Standard error, where the wait is said: the reader ends when it is."""

        def write(self, text: str) -> int:
            written = super().write(text)
            if "waiting up to" in self.getvalue() and not reader.closed:
                reader.close()
            return written

    stderr = Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)
    try:
        assert run(memory, "erase", "--raw-log", raw, "--reviewer", "alice", "--reason", "request") == 0
    finally:
        reader.close()
    said = stderr.getvalue()
    assert "waiting up to 60 s for what can still read the erased rows to end" in said, said
    assert f"session {pid} (database " in said and "idle in transaction" in said, said
    report = capsys.readouterr().out
    assert "the index was rebuilt and the databases compacted" in report, report
    assert "were still open" not in report, report  # the wait saw the session end


def test_a_logical_slot_keeps_none_of_the_ledgers_rows_and_is_not_named(memory: Memory) -> None:
    """A logical slot (a change-data-capture feed) holds back only the system catalogs' rows
    (its catalog_xmin): the erased bytes leave the ledger's files, and the report says no slot."""
    admin = memory.ledger.engine.execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if conn.execute(sa.text("SHOW wal_level")).scalar_one() != "logical":
            pytest.skip("the test server's wal_level is not logical: no logical slot can be made")
        slot = f"amem_test_{uuid.uuid4().hex[:10]}"
        conn.execute(
            sa.text("SELECT pg_create_logical_replication_slot(:s, 'test_decoding', true)"), {"s": slot}
        )
        raw, secret = _said_secret(memory)
        report = memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw, wait_s=0.2)
        assert _slot_xmin(memory, slot) == ""  # the slot is there, with a catalog_xmin only
        assert slot not in report.replication_slots_holding, report
        hits = _hits(_database_files(memory), secret.encode())
        assert hits == [], _why_kept(memory, hits, secret.encode())


def _filenode(memory: Memory, table: str) -> int:
    """The file a table's rows are in: VACUUM FULL writes them to a new one."""
    with memory.ledger.engine.connect() as conn:
        return conn.execute(sa.text("SELECT pg_relation_filenode(:t)"), {"t": table}).scalar_one()


def test_a_progress_that_fails_never_keeps_the_files_from_being_compacted(memory: Memory) -> None:
    """The wait tells the caller's progress what it waits on; a progress that raises (a closed
    stderr: BrokenPipeError) made the compaction stop before any VACUUM FULL, the erased bytes kept
    in the files. The compaction runs; the caller still learns of the failure."""
    raw, _ = _said_secret(memory)
    before = _filenode(memory, "raw_logs")
    reader = memory.ledger.engine.connect().execution_options(isolation_level="REPEATABLE READ")
    reader.begin()
    reader.execute(sa.text("SELECT 1")).all()  # a snapshot from before the erasure, no table read

    def progress(task: str, done: int, total: int | None) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    try:
        with pytest.raises(BrokenPipeError):
            memory.erase(
                by=signed_in(memory, "alice"), reason="request", raw_log_id=raw, wait_s=0.5, progress=progress
            )
    finally:
        reader.close()
    assert _filenode(memory, "raw_logs") != before, "VACUUM FULL never ran"


def test_a_session_holding_a_table_through_the_wait_leaves_it_named_not_a_hang(memory: Memory) -> None:
    """A session idle in a transaction that read the raw logs holds a lock VACUUM FULL waits on:
    `amem erase` hung there for as long as that session stayed open. The compaction waits for the
    lock no longer than for the sessions, and names the tables it left as they were."""
    raw, _ = _said_secret(memory)
    reader = memory.ledger.engine.connect().execution_options(isolation_level="REPEATABLE READ")
    reader.begin()
    reader.execute(sa.text("SELECT count(*) FROM raw_logs")).all()  # idle in transaction from now on
    done: list[Any] = []
    eraser = threading.Thread(
        target=lambda: done.append(
            memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw, wait_s=1.0)
        ),
        daemon=True,
    )
    try:
        eraser.start()
        eraser.join(timeout=120)  # a bound, not a synchronisation: it ends in seconds, or hangs
        assert done, "the erasure waited on the reader's lock for as long as the reader stayed open"
    finally:
        reader.close()
        eraser.join()
    (report,) = done
    assert "raw_logs" in report.tables_not_compacted, report
    # this reader at least: the count is the server's, and a shared server's other sessions count too
    assert report.older_sessions_open >= 1, report
