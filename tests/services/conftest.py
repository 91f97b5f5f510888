"""Fixtures of the service tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from amem.memory import Memory
from tests.conftest import ScratchDatabases

MODEL = "scripted/test-model"


@pytest.fixture
def mem(database_url: str, tmp_path: Path, scripted_llm) -> Iterator[Memory]:
    """A Memory whose model is the scripted LLM, behind the real litellm path."""
    m = Memory(tmp_path / "home", database_url=database_url, llm=MODEL)
    try:
        yield m
    finally:
        m.close()


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Memory]:
    """A store of the embedded default, a SQLite ledger in its home: what the backup and restore
    tests of SQLite's own paths (files beside the ledger, its online backup) start from."""
    mem = Memory(tmp_path / "home")
    try:
        yield mem
    finally:
        mem.close()


@pytest.fixture
def new_database(scratch_databases: ScratchDatabases) -> Callable[[], str]:
    """``scratch_databases`` giving the URL of each new database, as the backup and restore tests
    use it (a team's setup: the ledger in ``public``)."""
    return lambda: scratch_databases().url
