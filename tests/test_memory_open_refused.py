"""A ledger that is there but holds no amem schema (an empty PostgreSQL schema, an empty SQLite
file) is refused by ``Memory(create=False)`` leaving nothing behind: the store's directory was
made before the ledger was opened, so a refused open still created it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from amem.errors import SchemaMismatchError
from amem.memory import Memory


def test_a_ledger_without_the_schema_is_refused_creating_no_home(database_url: str, tmp_path: Path) -> None:
    database = make_url(database_url).database
    if database_url.startswith("sqlite"):  # there, but empty: the check of a missing file passes it
        assert database is not None
        Path(database).touch()
    home = tmp_path / "not made" / "home"
    with pytest.raises(SchemaMismatchError, match="has no amem schema"):
        Memory(home, database_url=database_url, create=False)
    assert not home.parent.exists()
    Memory(home, database_url=database_url).close()  # creating one makes the directory, as before
    assert home.is_dir()
    Memory(home, database_url=database_url, create=False).close()  # and it opens from then on
