"""An acknowledged input is on disk: a commit the ledger reports done survives a power cut, not only
a crash of the process (SQLite in WAL mode with ``synchronous=NORMAL`` may lose its last commits to
one; PostgreSQL loses them with ``synchronous_commit=off``)."""

from __future__ import annotations

from amem import Memory


def test_every_ledger_connection_commits_to_disk_before_it_returns(memory: Memory) -> None:
    raw_log_id = memory.add_note("Globex renews for two years", scope="globex", actor="agent:crm", wait=False)
    assert raw_log_id
    engine = memory.ledger.engine
    with engine.connect() as conn:  # a pooled connection, as every write uses
        if engine.dialect.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar_one() == 2  # FULL
        else:
            assert conn.exec_driver_sql("SHOW synchronous_commit").scalar_one() != "off"
