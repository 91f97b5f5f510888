"""A PostgreSQL dump this amem cannot restore is refused before pg_restore writes anything: the
target stays empty, so the advice given (restore it with the amem that wrote it) can be followed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.errors import InvalidInputError
from amem.services import pg_client
from amem.services.restore import restore
from tests.services.restore_setups import execute, ledger_in_schema, schemas, tables


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
    ledger_in_schema(source, "nw", tmp_path / "newer", "Initech renewed for two years", "initech")
    execute(source, "UPDATE nw.alembic_version SET version_num = '0099'")  # as a newer amem leaves it
    dump = _dump(source, "nw", tmp_path / "nw.dump")

    for _ in range(2):  # the advice holds: the target is as it was, the second try says the same
        with pytest.raises(InvalidInputError, match=r"written by a newer amem \(schema 0099; "):
            restore(dump, target)
        assert tables(target, "nw") == 0 and schemas(target, "nw") == 0


@pytest.mark.postgres
def test_a_dump_of_no_amem_ledger_is_refused_before_anything_is_restored(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    source, target = new_database(), new_database()
    execute(
        source, "CREATE TABLE public.invoices (id int PRIMARY KEY)", "INSERT INTO public.invoices VALUES (1)"
    )
    dump = _dump(source, "public", tmp_path / "invoices.dump")

    with pytest.raises(InvalidInputError, match="holds no amem ledger"):
        restore(dump, target)

    assert tables(target, "public") == 0
