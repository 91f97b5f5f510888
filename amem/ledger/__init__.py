"""The SQL ledger: the source of truth (SQLite by default, PostgreSQL for teams)."""

from amem.ledger.store import Ledger, LedgerTx

__all__ = ["Ledger", "LedgerTx"]
