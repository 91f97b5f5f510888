"""PostgreSQL full text: the words of emails, hosts, URLs and versions, and Latin letters without accents.

PostgreSQL's parser indexed "dana.smith@globex.com", "portal.globex.com", "42/seat" and "4.2.17"
as one lexeme each, and kept accents, while SQLite's FTS5 (unicode61, remove_diacritics 2) indexes
their words and folds "Société" to "societe": on PostgreSQL "dana smith" did not find the email,
"globex" not the host, "seat" not "$42/seat", "societe" not "Société". ``notes.search_vector`` now
reads each text through translate() (``search_queries.postgres_search_vector``): the separators
". @ / - + < > &" as spaces, each Latin letter with accents FTS5 drops as its base letter, loose
accents (NFD) dropped. Built in and immutable: no extension (unaccent is contrib, may be missing on
a managed server, and its function is not immutable, which a generated column needs). The query
side folds its words with the same table.

The column is generated, so it is dropped and added again with the new expression: PostgreSQL
computes every row's vector in that one statement (a table rewrite under an exclusive lock), the GIN
index is made again, and the table analysed (the rewritten column has no statistics: without them
a keyword query in a scope of 100,000 notes took 1.22x the time it took before the migration; with
them 1.02x). At 100,000 LoCoMo notes the upgrade takes 6.0-6.4 s, the downgrade, which restores
0003's expression the same way, 4.5 s. SQLite is unchanged.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-08
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

from amem.ledger.search_queries import postgres_search_vector

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _migration_0003() -> ModuleType:
    path = Path(__file__).with_name("0003_fulltext.py")
    spec = importlib.util.spec_from_file_location("amem_migration_0003", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _database_encoding() -> str:
    """The encoding the column's SQL must be written in, as a Python codec: the database's (UTF8:
    "utf-8", LATIN1: "iso8859-1"), or the connection's where the database is UTF-8 and the client
    asked for another. The column lists only the letters it can hold; an encoding psycopg has no
    codec for folds none (ASCII)."""
    from psycopg._encodings import pg2pyenc  # psycopg's own table of PostgreSQL's encodings

    bind = op.get_bind()
    name = str(bind.exec_driver_sql("SHOW server_encoding").scalar_one())
    try:
        server = pg2pyenc(name.encode())
    except Exception:
        return "ascii"
    if server != "utf-8":
        return server
    return str(bind.connection.dbapi_connection.info.encoding)  # type: ignore[union-attr]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_notes_search_vector")
    op.execute("ALTER TABLE notes DROP COLUMN IF EXISTS search_vector")
    generated = f"GENERATED ALWAYS AS ({postgres_search_vector(_database_encoding())}) STORED"
    op.execute(f"ALTER TABLE notes ADD COLUMN search_vector tsvector {generated}")
    op.execute("CREATE INDEX ix_notes_search_vector ON notes USING gin (search_vector)")
    op.execute("ANALYZE notes")


def downgrade() -> None:
    """0003's column and index, every row's vector computed again by 0003's expression."""
    if op.get_bind().dialect.name != "postgresql":
        return
    migration = _migration_0003()
    migration._postgres_downgrade()
    migration._postgres_upgrade()
    op.execute("ANALYZE notes")
