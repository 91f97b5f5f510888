"""Schema management through Alembic: upgrade, downgrade, and the version check on open."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from amem.errors import MigrationRefusedError, SchemaMismatchError


def migrations_dir() -> Path:
    """migrations/ beside the package in a checkout; the installed ``amem.migrations`` otherwise."""
    beside = Path(__file__).resolve().parents[2] / "migrations"
    if (beside / "env.py").is_file():
        return beside
    return Path(str(resources.files("amem.migrations")))


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def has_tables(engine: sa.Engine) -> bool:
    return bool(sa.inspect(engine).get_table_names())


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(engine: sa.Engine, revision: str) -> None:
    cfg = alembic_config()
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, revision)
    except RuntimeError as exc:  # a migration refusing to lose data says why
        raise MigrationRefusedError(str(exc)) from exc


#: pg_advisory_xact_lock key that serialises creating an empty ledger ("amem" in ASCII).
_CREATE_LOCK = 0x616D656D


def _create_serialised(engine: sa.Engine) -> str | None:
    """Create the schema of an empty ledger, one process at a time; returns the revision found or
    made. Processes opening a new ledger together wait for the first (an advisory lock on
    PostgreSQL, BEGIN IMMEDIATE on SQLite), then find its schema instead of creating it again."""
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.execution_options(amem_write=True)  # BEGIN IMMEDIATE (amem.ledger.store.create_engine)
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _CREATE_LOCK})
            current = MigrationContext.configure(conn).get_current_revision()
            if current is None and not sa.inspect(conn).get_table_names():
                cfg = alembic_config()
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
                current = MigrationContext.configure(conn).get_current_revision()
    return current


def check(engine: sa.Engine, *, create_if_empty: bool) -> None:
    """Refuse a ledger whose schema is older or newer than this code; create an empty one if asked."""
    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return
    if current is None and create_if_empty:
        current = _create_serialised(engine)
        if current == head:
            return
    url = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise SchemaMismatchError(
            f"the ledger at {url} has no amem schema; run `amem db upgrade` to create it"
        )
    known = {rev.revision for rev in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
    if current not in known:
        raise SchemaMismatchError(
            f"the ledger at {url} has schema {current}, newer than this amem (which knows up to {head}); "
            "upgrade amem"
        )
    raise SchemaMismatchError(
        f"the ledger at {url} has schema {current}, older than this amem ({head}); run `amem db upgrade`"
    )
