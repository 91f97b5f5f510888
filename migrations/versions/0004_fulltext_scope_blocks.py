"""SQLite full text: each scope's notes in their own block of FTS5 rowids.

Migration 0003 confined a query to its scope with a scope token ANDed to the query's words, which
still walks each word's posting list across every scope. Here a note's FTS5 rowid is ``scope number
<< 32 | the scope's counter``, so a scope is one rowid range, which FTS5 seeks to inside every
posting list. Measured (bench/README.md): the link step's query on a copy of a 104k store's full
text, 10.4 -> 5.3 ms p50; end to end at 100k, add_note 53.4 -> 52.7 ms, because bm25() still counts
each word's rows over the whole index for its IDF.

- ``fts_scopes`` numbers the scopes (an INTEGER PRIMARY KEY: it survives VACUUM) and counts each
  scope's rows; the insert trigger allocates the next rowid of the note's scope. Rowids stay in
  creation order within a scope, so a walk backwards still meets the newest notes first.
- The scope token is dropped; it had no weight in bm25(), so scores are unchanged.
- Existing notes keep their order: they are renumbered scope by scope in their 0003 rowid order.

PostgreSQL is unchanged (its tsvector query already filters on the scope column).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: A scope's rows: 2**32 of them per scope, ``number << 32 | counter`` (counter from 1).
BLOCK_BITS = 32
_TRIGGERS = ("notes_fts_after_insert", "notes_fts_after_update", "notes_fts_after_delete")


def _words(column: str) -> str:
    """A JSON list of strings as plain words (json_each decodes escapes such as \\u00e9)."""
    return f"(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({column}))"


_FTS_VALUES = (
    "{row}.content, "
    + _words("{row}.keywords")
    + ", "
    + _words("{row}.tags")
    + ", coalesce({row}.context, '')"
)
_FTS_ROWID = "(SELECT fts_rowid FROM note_fts_rows WHERE note_id = {row}.id)"
_FTS_INSERT = "INSERT INTO notes_fts (rowid, content, keywords, tags, context)"


def _create_triggers() -> None:
    new_values, new_rowid = _FTS_VALUES.format(row="new"), _FTS_ROWID.format(row="new")
    op.execute(
        "CREATE TRIGGER notes_fts_after_insert AFTER INSERT ON notes BEGIN "
        "INSERT OR IGNORE INTO fts_scopes (scope) VALUES (new.scope); "
        "UPDATE fts_scopes SET last_row = last_row + 1 WHERE scope = new.scope; "
        f"INSERT INTO note_fts_rows (fts_rowid, note_id) SELECT (number << {BLOCK_BITS}) | last_row, new.id "
        "FROM fts_scopes WHERE scope = new.scope; "
        f"{_FTS_INSERT} VALUES ({new_rowid}, {new_values}); "
        "END"
    )
    op.execute(
        "CREATE TRIGGER notes_fts_after_update AFTER UPDATE ON notes "
        "WHEN old.content IS NOT new.content OR old.keywords IS NOT new.keywords "
        "OR old.tags IS NOT new.tags OR old.context IS NOT new.context BEGIN "
        f"DELETE FROM notes_fts WHERE rowid = {new_rowid}; "
        f"{_FTS_INSERT} VALUES ({new_rowid}, {new_values}); "
        "END"
    )
    op.execute(
        "CREATE TRIGGER notes_fts_after_delete AFTER DELETE ON notes BEGIN "
        f"DELETE FROM notes_fts WHERE rowid = {_FTS_ROWID.format(row='old')}; "
        "DELETE FROM note_fts_rows WHERE note_id = old.id; "
        "END"
    )


def _sqlite_upgrade() -> None:
    for trigger in _TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE notes_fts")
    op.execute(
        "CREATE TABLE fts_scopes ("
        " number INTEGER PRIMARY KEY,"
        " scope VARCHAR(200) NOT NULL UNIQUE,"
        f" last_row INTEGER NOT NULL DEFAULT 0 CHECK (last_row < {1 << BLOCK_BITS}))"
    )
    # Scopes numbered in the order of their first note; each counter at its scope's note count.
    op.execute(
        "INSERT INTO fts_scopes (scope, last_row) SELECT n.scope, count(*) "
        "FROM note_fts_rows m JOIN notes n ON n.id = m.note_id GROUP BY n.scope ORDER BY min(m.fts_rowid)"
    )
    # Every new rowid is at least 2**32, above every old one, so no update meets a row not yet moved.
    op.execute(
        "WITH blocks AS (SELECT m.note_id, (s.number << "
        f"{BLOCK_BITS}) | row_number() OVER (PARTITION BY n.scope ORDER BY m.fts_rowid) AS fts_rowid "
        "FROM note_fts_rows m JOIN notes n ON n.id = m.note_id JOIN fts_scopes s ON s.scope = n.scope) "
        "UPDATE note_fts_rows SET fts_rowid = blocks.fts_rowid FROM blocks "
        "WHERE blocks.note_id = note_fts_rows.note_id"
    )
    op.execute(
        "CREATE VIRTUAL TABLE notes_fts USING fts5("
        "content, keywords, tags, context, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    op.execute(
        f"{_FTS_INSERT} SELECT m.fts_rowid, {_FTS_VALUES.format(row='n')} "
        "FROM note_fts_rows m JOIN notes n ON n.id = m.note_id ORDER BY m.fts_rowid"
    )
    op.execute("INSERT INTO notes_fts (notes_fts) VALUES ('optimize')")
    _create_triggers()


def _migration_0003() -> ModuleType:
    path = Path(__file__).with_name("0003_fulltext.py")
    spec = importlib.util.spec_from_file_location("amem_migration_0003", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sqlite_downgrade() -> None:
    """Back to 0003's layout, rebuilt by 0003 itself (rowids in creation order, the scope token)."""
    for trigger in _TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS fts_scopes")
    migration = _migration_0003()
    migration._sqlite_downgrade()
    migration._sqlite_upgrade()


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_upgrade()


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_downgrade()
