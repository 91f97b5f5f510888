"""Opening a store without creating one (``Memory(create=False)``, what the console and the reading
commands do) refuses a store that is not there, naming it, and leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.cli import main
from amem.config import sqlite_url
from amem.errors import ConfigError
from amem.memory import Memory


def test_a_missing_sqlite_file_named_by_url_is_refused_by_name_and_not_created(tmp_path: Path) -> None:
    """An explicit SQLite URL whose file is missing left an empty file (and its directory) behind
    and said the ledger "has no amem schema"; it now names the file and `amem init`."""
    missing = tmp_path / "typo dir" / "led?ger.sqlite3"
    with pytest.raises(ConfigError) as refused:
        Memory(tmp_path / "home", database_url=sqlite_url(missing), create=False)
    said = str(refused.value)
    assert f"no amem ledger at {missing}" in said and "`amem init`" in said and "schema" not in said
    assert not missing.parent.exists() and not (tmp_path / "home").exists()


def test_a_reading_command_on_a_missing_sqlite_url_exits_2_creating_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "ledgr.sqlite3"
    assert main(["--database-url", sqlite_url(missing), "search", "sso", "--scope", "acme"]) == 2
    assert f"no amem ledger at {missing}" in capsys.readouterr().err
    assert not missing.exists()


def test_an_existing_sqlite_file_and_an_in_memory_ledger_open(tmp_path: Path) -> None:
    """The check refuses only a file that is not there: a store made first opens, relative URL or
    not, and an in-memory ledger (nothing on disk to find) is left to the schema check."""
    made = tmp_path / "ledger.sqlite3"
    Memory(tmp_path / "home", database_url=sqlite_url(made)).close()
    Memory(tmp_path / "home", database_url="sqlite:///ledger.sqlite3", create=False).close()  # cwd: tmp_path
    with pytest.raises(Exception, match="no amem schema"):
        Memory(tmp_path / "home", database_url="sqlite://", create=False)
