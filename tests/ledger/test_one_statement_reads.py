"""A read of one statement (a bearer token's check, made on every API request) runs outside any
transaction: on PostgreSQL one round trip instead of BEGIN, the query and COMMIT. The pooled
connection it used must give the next reader or writer a transaction again."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from amem.ledger.store import Ledger, LedgerTx
from amem.ledger.tables import raw_logs


def _driver(tx: LedgerTx) -> Any:
    return tx.conn.connection.driver_connection


def _in_transaction(tx: LedgerTx) -> bool:
    driver = _driver(tx)
    if tx.dialect == "sqlite":
        return bool(driver.in_transaction)
    from psycopg.pq import TransactionStatus

    return bool(driver.info.transaction_status != TransactionStatus.IDLE)


def test_a_one_statement_read_holds_no_transaction_open(database_url: str) -> None:
    ledger = Ledger(database_url)
    try:
        with ledger.read(one_statement=True) as tx:
            assert tx.conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one() == 0
            assert not _in_transaction(tx)  # no snapshot held while the caller goes on
        with ledger.read() as tx:
            tx.conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one()
            assert _in_transaction(tx)
    finally:
        ledger.close()


def test_the_connection_it_used_gives_the_next_reader_and_writer_a_transaction(database_url: str) -> None:
    ledger = Ledger(database_url)
    try:
        with ledger.read(one_statement=True) as tx:
            tx.conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one()
            used = _driver(tx)
        with ledger.read() as tx:
            assert _driver(tx) is used  # the pool hands the same connection back
            tx.conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one()
            assert _in_transaction(tx)  # a snapshot again: several statements see one state
        with ledger.write(lock_head=False) as tx:
            assert _driver(tx) is used
            tx.conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one()
            assert _in_transaction(tx)  # a write still commits or rolls back as a whole
    finally:
        ledger.close()


def test_a_read_committed_read_skips_the_transaction_only_where_it_gives_no_more(database_url: str) -> None:
    """A search's reads need no more than READ COMMITTED: PostgreSQL's own transaction gives no more,
    so there they run without BEGIN and COMMIT; SQLite's read transaction is a free snapshot, kept."""
    ledger = Ledger(database_url)
    try:
        with ledger.read(read_committed=True) as tx:
            for _ in range(2):  # several statements, each its own transaction on PostgreSQL
                assert tx.conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one() == 0
            assert _in_transaction(tx) == (ledger.dialect == "sqlite")
            used = _driver(tx)
        with ledger.read() as tx:
            assert _driver(tx) is used
            tx.conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one()
            assert _in_transaction(tx)  # the pooled connection gives the next reader a transaction
    finally:
        ledger.close()
