"""Shared fixtures: every ledger test runs on SQLite and on the real PostgreSQL.

PostgreSQL comes from AMEM_TEST_POSTGRES_URL (set by .ci/run); each test gets its own schema,
dropped afterwards. Without that variable the PostgreSQL variants skip, saying why.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest
import sqlalchemy as sa

from amem.memory import Memory

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

REPO = Path(__file__).resolve().parents[1]
POSTGRES_URL = os.environ.get("AMEM_TEST_POSTGRES_URL")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's own AMEM_* settings or ./.amem."""
    for name in list(os.environ):
        if name.startswith("AMEM_") and name != "AMEM_TEST_POSTGRES_URL":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AMEM_POLICY", str(REPO / "policies.yaml"))
    # The per-user store (no .amem found) lands in the test's own directory, never the developer's.
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "user-data"))
    # Scripted answers are taken from a queue in call order; the tests of concurrent model calls
    # (tests/services/test_add_notes.py) ask for them themselves.
    monkeypatch.setenv("AMEM_LLM_CONCURRENCY", "1")
    monkeypatch.chdir(tmp_path)


def _postgres_schema_url() -> Iterator[str]:
    if not POSTGRES_URL:
        pytest.skip("AMEM_TEST_POSTGRES_URL is not set (.ci/run sets it to the PostgreSQL it uses)")
    schema = f"amem_t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(POSTGRES_URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty ledger database: SQLite file, then a PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    else:
        yield from _postgres_schema_url()


@pytest.fixture
def memory(database_url: str, tmp_path: Path) -> Iterator[Memory]:
    """A Memory on a fresh ledger (both backends) with the repository's default policy."""
    mem = Memory(tmp_path / "home", database_url=database_url)
    try:
        yield mem
    finally:
        mem.close()


@pytest.fixture
def client(memory: Memory) -> Iterator[TestClient]:
    """The HTTP API on ``memory`` (no review decisions), its lifespan run (the ``api`` extra)."""
    from fastapi.testclient import TestClient

    from amem.api.app import create_app

    with TestClient(create_app(memory)) as c:
        yield c


@pytest.fixture
def agent(memory: Memory) -> dict[str, str]:
    """The headers of an agent's bearer token on ``memory`` (sales-agent, every scope)."""
    token, _ = memory.tokens.create("sales-agent", "agent")
    return {"Authorization": f"Bearer {token}"}


class ScratchDatabase:
    """A PostgreSQL database of one test's own on the test server: ``url`` opens it, ``drop`` takes
    it away (under a running store, as when the ledger's server is gone; again at the end),
    ``admin`` is the server's AUTOCOMMIT engine, for what a test does to it (ALTER DATABASE)."""

    def __init__(self, admin: sa.Engine, name: str) -> None:
        self.admin, self.name = admin, name
        self.url = sa.make_url(admin.url).set(database=name).render_as_string(hide_password=False)

    def drop(self) -> None:
        with self.admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'))


class ScratchDatabases(Protocol):
    """Makes one more database of the test's own each call, with CREATE DATABASE's options of those
    names where given (``locale`` sets LC_COLLATE and LC_CTYPE): a LATIN1 one needs all three."""

    def __call__(
        self, *, encoding: str | None = None, locale: str | None = None, template: str | None = None
    ) -> ScratchDatabase: ...


@pytest.fixture
def scratch_databases() -> Iterator[ScratchDatabases]:
    """Makes new databases on the test server, each dropped afterwards: named after the test
    database (``<its name>_<hex>``), so one a killed run left says which run's it was. The one way
    tests make a database of their own (a team's setup: the ledger in ``public``)."""
    if not POSTGRES_URL:
        pytest.skip("AMEM_TEST_POSTGRES_URL is not set (.ci/run sets it to the PostgreSQL it uses)")
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    base = (sa.make_url(POSTGRES_URL).database or "amem")[:40]

    with ExitStack() as made:  # every one is dropped, even when dropping another fails
        made.callback(admin.dispose)

        def make(
            *, encoding: str | None = None, locale: str | None = None, template: str | None = None
        ) -> ScratchDatabase:
            scratch = ScratchDatabase(admin, f"{base}_{uuid.uuid4().hex[:10]}")
            options = f" ENCODING '{encoding}'" if encoding else ""
            options += f" LC_COLLATE '{locale}' LC_CTYPE '{locale}'" if locale else ""
            options += f' TEMPLATE "{template}"' if template else ""
            with admin.connect() as conn:
                conn.execute(sa.text(f'CREATE DATABASE "{scratch.name}"{options}'))
            made.callback(scratch.drop)
            return scratch

        yield make


@pytest.fixture
def scratch_database(scratch_databases: ScratchDatabases) -> ScratchDatabase:
    """A new database on the test server, dropped afterwards (``scratch_databases``' first)."""
    return scratch_databases()


#: The reviewers' passwords in the ``reviewer_passwords`` fixture's policy.
REVIEWER_PASSWORDS = {"alice": "alice-password-1", "bob": "bob-password-22", "audrey": "audrey-password-3"}


@pytest.fixture
def reviewer_passwords(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The repository's policy with a password for each reviewer (bcrypt hashes, 4 rounds to keep
    tests quick), made the policy in force through AMEM_POLICY. Returns name -> password."""
    import yaml

    from amem.services.accounts import hash_password

    folder = tmp_path / "policy-with-passwords"
    folder.mkdir()
    (folder / "policies.yaml").write_text((REPO / "policies.yaml").read_text("utf-8"), "utf-8")
    data = yaml.safe_load((REPO / "reviewers.yaml").read_text("utf-8"))
    for name, password in REVIEWER_PASSWORDS.items():
        data["reviewers"][name]["password_hash"] = hash_password(password, rounds=4)
    (folder / "reviewers.yaml").write_text(yaml.safe_dump(data), "utf-8")
    monkeypatch.setenv("AMEM_POLICY", str(folder / "policies.yaml"))
    return dict(REVIEWER_PASSWORDS)


@pytest.fixture
def scripted_llm() -> Iterator[object]:
    """Registers the ``scripted/...`` litellm provider; push answers onto it (tests/scripted_llm.py)."""
    from tests import scripted_llm as scripting

    handler = scripting.install()
    try:
        yield handler
    finally:
        scripting.uninstall()


def deleted_files_held(directory: Path) -> dict[str, int]:
    """The files under ``directory`` that this process still holds open though they were removed
    (Linux's /proc), with the bytes each still takes on disk."""
    held: dict[str, int] = {}
    fds = Path("/proc/self/fd")
    for fd in fds.iterdir() if fds.is_dir() else ():
        try:
            target = os.readlink(fd)
            if target.startswith(str(directory)) and target.endswith(" (deleted)"):
                held[target] = os.stat(fd).st_size
        except OSError:  # closed meanwhile (the listing's own descriptor among them)
            continue
    return held
