"""Alembic migrations of the ledger (installed as ``amem.migrations``)."""
