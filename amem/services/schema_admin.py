"""The ledger's schema, administered by URL: ``amem db upgrade / downgrade / current``.

These run without a Memory (opening one checks the schema, and refuses a ledger that is not at
this amem's head), so they take the database URL and dispose of their own engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from amem.ledger import schema
from amem.ledger.store import create_engine


@dataclass(frozen=True)
class SchemaStep:
    """What a migration did: the ledger's revision before and after (None: empty)."""

    url: str  # the ledger's URL, its password hidden
    before: str | None
    after: str | None


@dataclass(frozen=True)
class SchemaState:
    current: str | None  # None: an empty database
    head: str  # the revision this amem expects


def _step(url: str, move: Callable[[sa.Engine], None]) -> SchemaStep:
    engine = create_engine(url)
    try:
        before = schema.current_revision(engine)
        move(engine)
        after = schema.current_revision(engine)
    finally:
        engine.dispose()
    return SchemaStep(engine.url.render_as_string(hide_password=True), before, after)


def upgrade(url: str, revision: str = "head") -> SchemaStep:
    """Create the ledger, or migrate it up to ``revision``."""
    return _step(url, lambda engine: schema.upgrade(engine, revision))


def downgrade(url: str, revision: str) -> SchemaStep:
    """Step the schema back to ``revision`` (raw logs are never dropped)."""
    return _step(url, lambda engine: schema.downgrade(engine, revision))


def state(url: str) -> SchemaState:
    """The ledger's revision and the one this amem expects."""
    engine = create_engine(url)
    try:
        return SchemaState(current=schema.current_revision(engine), head=schema.head_revision())
    finally:
        engine.dispose()
