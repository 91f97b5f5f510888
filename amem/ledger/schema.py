"""Schema management through Alembic: upgrade, downgrade, and the version check on open.

Alembic is imported only when a migration runs or the schema does not match: importing it costs
more than a read command's own work, so the check on open first compares the ledger's
``alembic_version`` with the head named in the revision files (``fast_head``).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from amem.errors import InvalidInputError, MigrationRefusedError, SchemaMismatchError

if TYPE_CHECKING:
    from alembic.config import Config


def migrations_dir() -> Path:
    """migrations/ beside the package in a checkout; the installed ``amem.migrations`` otherwise."""
    beside = Path(__file__).resolve().parents[2] / "migrations"
    if (beside / "env.py").is_file():
        return beside
    return Path(str(resources.files("amem.migrations")))


def alembic_config() -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    return cfg


_REVISION = re.compile(r'^(down_revision|revision)\b[^=]*=\s*["\']?([\w-]+|None)', re.MULTILINE)


def fast_head() -> str | None:
    """The single head of the revision files, read without Alembic; None when that is not clear-cut.

    Only a hint for the check on open: when it does not match the ledger, Alembic decides.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (migrations_dir() / "versions").glob("*.py"):
        found = dict((m.group(1), m.group(2)) for m in _REVISION.finditer(path.read_text("utf-8")))
        if "revision" in found:
            revisions.add(found["revision"])
            if found.get("down_revision", "None") != "None":
                parents.add(found["down_revision"])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _stamped_revision(engine: sa.Engine) -> str | None:
    """The ledger's ``alembic_version``, by plain SQL; None when there is no single stamp."""
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
    except sa.exc.DBAPIError:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(engine: sa.Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def has_tables(engine: sa.Engine) -> bool:
    return bool(sa.inspect(engine).get_table_names())


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    from alembic import command
    from alembic.util import CommandError

    cfg = alembic_config()
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    except CommandError as exc:
        raise _unknown_target(revision, exc) from None


def downgrade(engine: sa.Engine, revision: str) -> None:
    from alembic import command
    from alembic.util import CommandError

    cfg = alembic_config()
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, revision)
    except CommandError as exc:
        raise _unknown_target(revision, exc) from None
    except RuntimeError as exc:  # a migration refusing to lose data says why
        raise MigrationRefusedError(str(exc)) from exc


#: pg_advisory_xact_lock key that serialises creating an empty ledger ("amem" in ASCII).
_CREATE_LOCK = 0x616D656D


def _create_serialised(engine: sa.Engine) -> str | None:
    """Create the schema of an empty ledger, one process at a time; returns the revision found or
    made. Processes opening a new ledger together wait for the first (an advisory lock on
    PostgreSQL, BEGIN IMMEDIATE on SQLite), then find its schema instead of creating it again."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext

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


def known_revisions() -> list[str]:
    """Every revision of this amem, oldest first."""
    from alembic.script import ScriptDirectory

    return [rev.revision for rev in ScriptDirectory.from_config(alembic_config()).walk_revisions()][::-1]


def _unknown_target(revision: str, exc: Exception) -> InvalidInputError:
    """Alembic's refusal of a target, as one line that says what a target may be."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return InvalidInputError(
        f"cannot migrate to {revision!r}: {reason}. A target is a revision "
        f"({', '.join(known_revisions())}), head, base, or relative steps such as -1 or +1"
    )


def check(engine: sa.Engine, *, create_if_empty: bool) -> None:
    """Refuse a ledger whose schema is older or newer than this code; create an empty one if asked."""
    stamped = _stamped_revision(engine)
    if stamped is not None and stamped == fast_head():
        return
    from alembic.script import ScriptDirectory

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
