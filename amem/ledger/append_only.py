"""The database's own refusal to change or delete the rows of an append-only table, as the
migrations from 0014 on create it (0001 and 0008 hold their own, as they were written).

On SQLite a trigger per statement kind aborts it; on PostgreSQL migration 0001's
``amem_refuse_change()`` refuses each row's UPDATE or DELETE and any TRUNCATE. Either way the
message names the table and says "append-only", as ``tests/ledger/test_append_only.py`` expects.
"""

from __future__ import annotations

from typing import Any


def _trigger_names(dialect: str, table: str) -> list[str]:
    if dialect == "sqlite":
        return [f"{table}_no_update", f"{table}_no_delete"]
    return [f"{table}_append_only", f"{table}_no_truncate"]


def drop_append_only_triggers(op: Any, table: str) -> None:
    """Drop ``table``'s triggers, for a migration that rewrites its rows itself (then creates them
    again): the one way past them."""
    dialect = op.get_bind().dialect.name
    for name in _trigger_names(dialect, table):
        op.execute(f"DROP TRIGGER {name}" if dialect == "sqlite" else f"DROP TRIGGER {name} ON {table}")


def create_append_only_triggers(op: Any, table: str) -> None:
    """Create ``table``'s triggers with Alembic's ``op``; dropping the table drops them."""
    if op.get_bind().dialect.name == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: {action} refused'); END"
            )
        return
    op.execute(
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION amem_refuse_change()"
    )
    op.execute(
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION amem_refuse_change()"
    )
