"""A PostgreSQL dump this amem cannot restore is refused before pg_restore writes anything: the
target stays empty, so the advice given (restore it with the amem that wrote it) can be followed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.errors import InvalidInputError
from amem.memory import Memory
from amem.services import pg_client
from amem.services.restore import restore
from tests.factories import make_note


def _count(url: str, query: str, schema: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(query), {"s": schema}).scalar_one())
    finally:
        engine.dispose()


def _tables(url: str, schema: str) -> int:
    return _count(url, "SELECT count(*) FROM information_schema.tables WHERE table_schema = :s", schema)


def _schemas(url: str, schema: str) -> int:
    return _count(url, "SELECT count(*) FROM pg_namespace WHERE nspname = :s", schema)


def _dump(url: str, schema: str, dest: Path) -> Path:
    uri, env = pg_client.libpq(sa.make_url(url))
    command = [pg_client.client("pg_dump"), "--format=custom", f"--schema={schema}", f"--file={dest}", uri]
    pg_client.run(command, env, "pg_dump")
    return dest


@pytest.mark.postgres
def test_a_dump_a_newer_amem_wrote_is_refused_before_anything_is_restored(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """Before, pg_restore put the whole ledger into the target, then it was refused ("written by a
    newer amem"), and its 17 tables stayed: the second restore, as advised, was refused in turn
    ("holds 17 table(s) already")."""
    source, target = new_database(), new_database()
    engine = sa.create_engine(source)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE SCHEMA nw"))
    engine.dispose()
    in_nw = sa.make_url(source).set(query={"options": "-csearch_path=nw"}).render_as_string(False)
    with Memory(tmp_path / "newer", database_url=in_nw) as newer:
        make_note(newer, "Initech renewed for two years", scope="initech")
    engine = sa.create_engine(source)
    with engine.begin() as conn:  # as a newer amem leaves it
        conn.execute(sa.text("UPDATE nw.alembic_version SET version_num = '0099'"))
    engine.dispose()
    dump = _dump(source, "nw", tmp_path / "nw.dump")

    for _ in range(2):  # the advice holds: the target is as it was, the second try says the same
        with pytest.raises(InvalidInputError, match=r"written by a newer amem \(schema 0099; "):
            restore(dump, target)
        assert _tables(target, "nw") == 0 and _schemas(target, "nw") == 0


@pytest.mark.postgres
def test_a_dump_of_no_amem_ledger_is_refused_before_anything_is_restored(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    source, target = new_database(), new_database()
    engine = sa.create_engine(source)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE public.invoices (id int PRIMARY KEY)"))
        conn.execute(sa.text("INSERT INTO public.invoices VALUES (1)"))
    engine.dispose()
    dump = _dump(source, "public", tmp_path / "invoices.dump")

    with pytest.raises(InvalidInputError, match="holds no amem ledger"):
        restore(dump, target)

    assert _tables(target, "public") == 0
