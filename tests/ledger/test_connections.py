"""PostgreSQL connections in the pool: one the server dropped while it sat idle is replaced
before use; one used a moment ago is not pinged first (a round trip saved per transaction), so a
statement on it fails once if the server dropped it since, and the pool is renewed for the next."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.ledger import store
from tests.conftest import POSTGRES_URL, _postgres_schema_url


@pytest.fixture(params=[pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest) -> Iterator[sa.Engine]:
    for url in _postgres_schema_url():
        engine = store.create_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


def _backend(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def _drop(pid: int) -> None:
    """What a server restart, an idle timeout or a firewall does to one pooled connection."""
    assert POSTGRES_URL
    admin = sa.create_engine(POSTGRES_URL)
    with admin.begin() as conn:
        # with a timeout, it returns once the backend has exited
        assert conn.execute(sa.text("SELECT pg_terminate_backend(:pid, 10000)"), {"pid": pid}).scalar_one()
    admin.dispose()


def test_a_connection_dropped_while_idle_is_replaced_before_use(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _backend(engine)
    _drop(first)
    monkeypatch.setattr(store, "PING_AFTER_IDLE_S", 0.0)  # it has now sat idle long enough
    assert _backend(engine) != first  # pinged, found closed, replaced: the caller saw nothing


def test_a_connection_used_a_moment_ago_is_not_pinged_and_the_pool_heals_after_one_failure(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _backend(engine)
    _drop(first)
    monkeypatch.setattr(store, "PING_AFTER_IDLE_S", 3600.0)
    with pytest.raises(sa.exc.OperationalError):
        _backend(engine)
    assert _backend(engine) != first


def test_a_write_after_compaction_is_still_one_transaction(database_url: str) -> None:
    """Compaction runs VACUUM outside any transaction. The connection it used must not go back to
    the pool in that mode: a later write on it would commit statement by statement, so a write that
    fails half-way would leave its first half behind."""
    from amem.ledger.store import Ledger

    ledger = Ledger(database_url)
    try:
        ledger.compact(wait_s=0)
        for i in range(3):  # whichever pooled connection the next writes get
            with pytest.raises(RuntimeError), ledger.write() as tx:
                tx.conn.exec_driver_sql(f"CREATE TABLE half_done_{i} (i integer)")
                raise RuntimeError("the write fails half-way")
        assert not [t for t in sa.inspect(ledger.engine).get_table_names() if t.startswith("half_done")]
    finally:
        ledger.close()


@pytest.mark.postgres
@pytest.mark.parametrize("scheme", ["postgresql://", "postgres://"])
def test_a_postgresql_url_without_its_driver_opens_the_ledger_through_psycopg(
    scheme: str, tmp_path: Path
) -> None:
    """A URL as PostgreSQL's own tools and hosts write it (Heroku's DATABASE_URL is postgres://).
    Before: postgres:// failed as "Can't load plugin: sqlalchemy.dialects:postgres", a bug in amem;
    a bare postgresql:// is psycopg2 to SQLAlchemy 2.0, which amem does not install."""
    from amem.memory import Memory

    for url in _postgres_schema_url():
        bare = scheme + url.split("://", 1)[1]
        with Memory(tmp_path / "home", database_url=bare) as mem:
            note_id = mem.add_note("Hooli asked for a 10% discount", actor="agent:crm", scope="hooli")
            assert [hit.note_id for hit in mem.search("discount", scope="hooli")] == [note_id]
            assert mem.settings.shown_database_url.startswith("postgresql+psycopg://")
