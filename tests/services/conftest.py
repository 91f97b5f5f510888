"""Fixtures of the service tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.memory import Memory
from tests.conftest import POSTGRES_URL

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
def new_database() -> Iterator[Callable[[], str]]:
    """Makes databases of their own on the test server (a team's setup: the ledger in ``public``),
    each dropped afterwards; returns the URL of each new one."""
    if not POSTGRES_URL:
        pytest.skip("AMEM_TEST_POSTGRES_URL is not set (.ci/run sets it to the PostgreSQL it uses)")
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    made: list[str] = []

    def make() -> str:
        name = f"amem_t_{uuid.uuid4().hex[:12]}"
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        made.append(name)
        return sa.make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)

    try:
        yield make
    finally:
        with admin.connect() as conn:
            for name in made:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
