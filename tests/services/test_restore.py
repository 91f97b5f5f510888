"""`amem restore`: a backup put back into service in an empty place, proven before it is used."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from amem.errors import InvalidInputError
from amem.memory import Memory
from amem.services import checkpoints
from amem.services.restore import restore
from tests.factories import make_note
from tests.services.restore_setups import cli, execute, ledger_in_schema, tables, team_dump


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_backup_is_restored_into_a_new_store_proven_and_searchable(lite: Memory, tmp_path: Path) -> None:
    renewal = make_note(lite, "Initech renewed for two years", scope="initech")
    key, log = tmp_path / "key.pem", tmp_path / "checkpoints.jsonl"
    checkpoints.init_key(key)
    lite.checkpoint(key=key, log=log)
    make_note(lite, "Initech asked for SSO", scope="initech")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    before = _digest(backup)

    proof = ["--checkpoints", str(log), "--public-key", str(key)]
    code, out, err = cli("--home", str(tmp_path / "new"), "restore", str(backup), *proof, "--json")

    assert code == 0, err
    report = json.loads(out)
    assert report["restored"] and report["verified"]["ok"] and report["indexed"] == 2
    assert [c["proven"] for c in report["verified"]["checkpoints"]] == [True]
    assert "ledger_url" not in report
    assert _digest(backup) == before  # the backup is only read
    with Memory(tmp_path / "new", create=False) as back:
        assert back.count_raw_logs() == 2 and back.verify().ok
        assert [h.note.id for h in back.search("renewal two years", scope="initech", k=1)] == [renewal.id]
    assert [p.name for p in (tmp_path / "new").iterdir() if "restoring" in p.name] == []


def test_a_restore_never_overwrites_a_ledger(lite: Memory, tmp_path: Path) -> None:
    make_note(lite, "Acme pays $42 per seat")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    make_note(lite, "Acme pays $49 per seat from now on")  # kept after the backup
    with pytest.raises(InvalidInputError, match="holds a ledger already: a restore never overwrites"):
        restore(backup, lite.settings.database_url)
    assert lite.count_raw_logs() == 2 and lite.verify().ok


def test_a_tampered_backup_restores_nothing(lite: Memory, tmp_path: Path) -> None:
    note = make_note(lite, "Acme pays $42 per seat")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    with sqlite3.connect(backup) as conn:
        conn.execute("DROP TRIGGER raw_logs_no_update")
        conn.execute("UPDATE raw_logs SET text = 'Acme pays $4 per seat'")

    code, out, _ = cli("--home", str(tmp_path / "new"), "restore", str(backup))

    assert code == 1 and "nothing restored" in out and "TAMPERED" in out and note.raw_log_ids[0] in out
    assert not (tmp_path / "new" / "ledger.sqlite3").exists()
    assert list((tmp_path / "new").glob("*restoring*")) == []


def test_what_is_not_a_backup_or_fits_no_ledger_is_refused_with_why(lite: Memory, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a backup")
    with pytest.raises(InvalidInputError, match="neither a SQLite ledger nor a pg_dump"):
        restore(notes, f"sqlite:///{tmp_path / 'new.sqlite3'}")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    with pytest.raises(InvalidInputError, match="is a sqlite backup and the store's ledger is postgresql"):
        restore(backup, "postgresql+psycopg://amem@127.0.0.1/amem")


@pytest.mark.postgres
def test_a_postgresql_dump_is_restored_into_a_new_database(
    memory: Memory, new_database: Callable[[], str], tmp_path: Path
) -> None:
    """A ledger of a schema of its own (as the tests keep them) comes back in that schema of the new
    database; a second restore there is refused."""
    if memory.ledger.dialect != "postgresql":
        pytest.skip("pg_restore's path")
    target = new_database()
    note = make_note(memory, "Initech renewed for two years", scope="initech")
    dump = Path(memory.backup(tmp_path / "ledger.dump").path)

    code, out, err = cli(
        "--home", str(tmp_path / "new"), "--database-url", target, "restore", str(dump), "--json"
    )

    assert code == 0, err
    report = json.loads(out)
    assert report["restored"] and report["indexed"] == 1 and report["schema_name"].startswith("amem_")
    url = sa.make_url(target).set(query={"options": f"-csearch_path={report['schema_name']}"})
    with Memory(
        tmp_path / "new", database_url=url.render_as_string(hide_password=False), create=False
    ) as back:
        assert back.read(note.id).content == "Initech renewed for two years" and back.verify().ok
    with pytest.raises(InvalidInputError, match=r"holds .* table\(s\) already"):
        restore(dump, target)


@pytest.mark.postgres
def test_a_ledger_of_the_public_schema_comes_back_into_a_new_databases_public(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """The team setup: the ledger in "public" of its database; a new database has an empty "public"
    already, which the restore fills instead of failing on "schema public already exists"."""
    source, target = new_database(), new_database()
    with Memory(tmp_path / "team", database_url=source) as team:
        make_note(team, "Initech renewed for two years", scope="initech")
        dump = Path(team.backup(tmp_path / "ledger.dump").path)
    report = restore(dump, target)
    assert report.restored and report.schema_name == "public" and report.heads["counts"]["raw_log"] == 1
    with Memory(tmp_path / "back", database_url=target, create=False) as back:
        assert back.count_raw_logs() == 1


def test_a_backup_an_older_amem_wrote_is_migrated_as_it_is_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Backups outlive versions: one taken at schema 0018 comes back at this amem's schema, its
    rows and chains intact, instead of a ledger `amem` refuses to open."""
    from amem.ledger import schema
    from amem.ledger.store import create_engine
    from tests.factories import record_tokens_as_before_0022

    record_tokens_as_before_0022(monkeypatch)  # its token as the amem of 0018 recorded it
    with Memory(tmp_path / "old") as old:
        note = make_note(old, "Initech renewed for two years", scope="initech")
        old.tokens.create("crm-sync", "agent")
        url = old.settings.database_url
    engine = create_engine(url)
    schema.downgrade(engine, "0018")  # the ledger as the amem before scoped tokens kept it
    engine.dispose()
    backup = tmp_path / "old.sqlite3"
    with sqlite3.connect(sa.make_url(url).database) as source, sqlite3.connect(backup) as copy:
        source.backup(copy)

    report = restore(backup, f"sqlite:///{tmp_path / 'new' / 'ledger.sqlite3'}")

    assert report.restored and report.upgraded_from == "0018" and report.verified.ok
    with Memory(tmp_path / "new", create=False) as back:
        assert back.read(note.id).content == "Initech renewed for two years"
        assert [t.name for t in back.tokens.list()] == ["crm-sync"] and back.verify().ok
    with sqlite3.connect(backup) as conn:  # the backup itself is as it was
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == ("0018",)


@pytest.mark.parametrize(
    ("name", "misread_as"),
    [("ledger#2026-12-06.db", "ledger"), ("ledger?v2.db", "ledger"), ("ledger%41.db", "ledgerA.db")],
)
def test_the_backup_named_is_the_one_restored_whatever_its_file_is_called(
    lite: Memory, tmp_path: Path, name: str, misread_as: str
) -> None:
    """A "#", "?" or "%41" in a backup's name once made SQLite read another file beside it."""
    renewal = make_note(lite, "Initech renewed for two years", scope="initech")
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    lite.backup(shelf / name)
    with Memory(tmp_path / "other") as other:  # another store's backup, at the name misread
        make_note(other, "Globex wants a pilot", scope="globex")
        other.backup(shelf / misread_as)

    code, out, err = cli("--home", str(tmp_path / "new"), "restore", str(shelf / name), "--json")

    assert code == 0, err
    assert json.loads(out)["backup"] == str(shelf / name)
    with Memory(tmp_path / "new", create=False) as back:
        assert [n.id for n in back.notes(scope="initech")] == [renewal.id]
        assert back.notes(scope="globex") == [] and back.verify().ok


def test_a_restore_goes_into_the_file_its_url_names_whatever_the_file_is_called(
    lite: Memory, tmp_path: Path
) -> None:
    note = make_note(lite, "Initech renewed for two years", scope="initech")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    dest = tmp_path / "new?#%41" / "ledger.sqlite3"

    report = restore(backup, sa.URL.create("sqlite", database=str(dest)).render_as_string())

    assert report.restored and dest.is_file() and sa.make_url(report.database_url).database == str(dest)
    with Memory(tmp_path / "home2", database_url=report.ledger_url, create=False) as back:
        assert back.read(note.id).content == "Initech renewed for two years" and back.verify().ok


def test_a_store_opened_at_the_target_while_a_restore_verifies_keeps_what_it_acknowledged(
    lite: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore takes minutes on a large ledger; a server started on the new store meanwhile
    acknowledges inputs, which the restored copy must not replace."""
    from amem.services import restore as restoring

    make_note(lite, "Acme pays $42 per seat")
    backup = Path(lite.backup(tmp_path / "b.sqlite3").path)
    acknowledged: list[str] = []
    verify = restoring.verify_ledger

    def verify_while_a_store_opens_at_the_target(*args: Any, **kwargs: Any) -> Any:
        with Memory(tmp_path / "new") as meanwhile:
            acknowledged.extend(make_note(meanwhile, "Initech signed today", scope="initech").raw_log_ids)
        return verify(*args, **kwargs)

    monkeypatch.setattr(restoring, "verify_ledger", verify_while_a_store_opens_at_the_target)
    with pytest.raises(InvalidInputError, match="holds a ledger already: a restore never overwrites"):
        restore(backup, f"sqlite:///{tmp_path / 'new' / 'ledger.sqlite3'}")

    with Memory(tmp_path / "new", create=False) as kept:
        assert kept.count_raw_logs() == 1 and [n.raw_log_ids for n in kept.notes(scope="initech")] == [
            acknowledged
        ]
        assert kept.notes(scope="acme") == [] and kept.verify().ok
    assert list((tmp_path / "new").glob("*restoring*")) == []


def test_a_damaged_backup_is_refused_as_damaged_not_as_a_bug(lite: Memory, tmp_path: Path) -> None:
    for i in range(5):
        make_note(lite, f"Acme call {i}: the renewal is on track")
    whole = Path(lite.backup(tmp_path / "b.sqlite3").path).read_bytes()
    for size in (len(whole) // 2, len(whole) - 4096, len(whole) - 1000):  # a copy cut short
        cut = tmp_path / f"cut-{size}.sqlite3"
        cut.write_bytes(whole[:size])

        code, out, err = cli("--home", str(tmp_path / "new"), "restore", str(cut))

        assert code == 2 and out == "", err
        assert err.startswith(f"error: the backup {cut} is damaged or incomplete (") and "bug" not in err
        assert not (tmp_path / "new" / "ledger.sqlite3").exists()
        assert list((tmp_path / "new").glob("*restoring*")) == []


def test_a_restore_beside_the_live_store_leaves_the_live_index_alone(
    memory: Memory, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The documented `--database-url` form, with the live store's home: the restored ledger kept the
    source's index identity, so its reindex took the live build for its own and dropped it (the live
    process's search failed with BuildMissingError), and each later open of either ledger dropped
    the other's build."""
    postgres = memory.ledger.dialect == "postgresql"
    renewal = make_note(memory, "Initech renewed for two years", scope="initech")
    make_note(memory, "Initech asked for SSO", scope="initech")
    assert [h.note.id for h in memory.search("renewal two years", scope="initech", k=1)] == [renewal.id]
    backup = Path(memory.backup(tmp_path / ("b.dump" if postgres else "b.sqlite3")).path)
    target = request.getfixturevalue("new_database")() if postgres else f"sqlite:///{tmp_path / 'r.sqlite3'}"

    code, out, err = cli(
        "--home", str(memory.home), "--database-url", target, "restore", str(backup), "--json"
    )

    assert code == 0, err
    restored = json.loads(out)["database_url"]  # the test server's URL holds no password
    assert [h.note.id for h in memory.search("renewal two years", scope="initech", k=1)] == [renewal.id]
    discount = make_note(memory, "Initech wants a discount", scope="initech")
    with Memory(memory.home, database_url=restored, create=False) as back:  # its own build, same home
        assert [h.note.id for h in back.search("renewal two years", scope="initech", k=1)] == [renewal.id]
        assert discount.id not in [h.note.id for h in back.search("discount", scope="initech", k=3)]
    assert [h.note.id for h in memory.search("discount", scope="initech", k=1)] == [discount.id]
    with Memory(memory.home, database_url=memory.settings.database_url, create=False) as live_again:
        assert [h.note.id for h in live_again.search("discount", scope="initech", k=1)] == [discount.id]
    with Memory(memory.home, database_url=restored, create=False) as back:
        assert back.count_raw_logs() == 2 and back.verify().ok
        assert [h.note.id for h in back.search("renewal two years", scope="initech", k=1)] == [renewal.id]


@pytest.mark.postgres
def test_a_dump_is_not_restored_through_a_url_that_opens_another_schema(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """The URL of a ledger kept in schema amem_prod, given to restore a dump of "public": the dump
    went into public, yet the restore verified, reindexed and reported amem_prod's ledger (its heads,
    "verified") as the one restored."""
    source, target = new_database(), new_database()
    dump = team_dump(source, tmp_path / "team", "Initech renewed for two years", "Initech asked for SSO")
    prod = ledger_in_schema(target, "amem_prod", tmp_path / "live", "Globex signed a 3 year deal", "globex")

    with pytest.raises(InvalidInputError, match=r"opens schema 'amem_prod', and the dump holds .* 'public'"):
        restore(dump, prod)

    assert tables(target, "public") == 0
    with Memory(tmp_path / "live", database_url=prod, create=False) as live:
        assert live.count_raw_logs() == 1 and live.verify().ok
    public = sa.make_url(target).set(query={"options": "-csearch_path=public"}).render_as_string(False)
    report = restore(dump, public)  # the URL that opens the schema restored
    assert report.restored and report.schema_name == "public" and report.heads["counts"]["raw_log"] == 2


@pytest.mark.postgres
def test_a_postgresql_restore_that_fails_part_way_leaves_the_database_empty_to_restore_again(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """pg_restore ran statement by statement: one that stopped part-way (killed, or failing as here
    on a name taken in the target) left the tables and rows without their keys and append-only
    triggers, a ledger that verified, and refused every later restore as "holds 17 table(s)"."""
    from amem.errors import ConfigError

    source, target = new_database(), new_database()
    dump = team_dump(source, tmp_path / "team", "Initech renewed for two years")
    # not a table, so the target counts as empty: one of the dump's index names, taken
    execute(target, "CREATE SEQUENCE public.ix_raw_logs_scope")

    with pytest.raises(ConfigError, match="pg_restore failed"):
        restore(dump, target)

    assert tables(target, "public") == 0
    execute(target, "DROP SEQUENCE public.ix_raw_logs_scope")
    report = restore(dump, target)
    assert report.restored and report.heads["counts"]["raw_log"] == 1


@pytest.mark.postgres
def test_verify_fails_on_a_postgresql_ledger_restored_without_its_append_only_triggers(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """A restore stopped after its rows, before its triggers, verified as intact: nothing checked
    that the database still refuses to change a raw log."""
    from amem.services import pg_client

    source, target = new_database(), new_database()
    dump = team_dump(source, tmp_path / "team", "Initech renewed for two years")
    execute(target, "DROP SCHEMA public")  # the dump makes it
    uri, env = pg_client.libpq(sa.make_url(target))
    restoring = [pg_client.client("pg_restore"), "--no-owner", f"--dbname={uri}"]
    pg_client.run([*restoring, "--section=pre-data", "--section=data", str(dump)], env, "pg_restore")

    code, out, _ = cli("--home", str(tmp_path / "half"), "--database-url", target, "verify")

    assert code == 1 and "TAMPERED" in out
    assert "TAMPERED: the append-only triggers of raw_logs, changes, " in out


@pytest.mark.postgres
def test_verify_finds_the_append_only_triggers_of_a_public_ledger_beside_a_role_named_schema(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """The secure-schema pattern PostgreSQL recommends gives the role a schema of its own name,
    first on the default search_path ("$user", public). Before, verify looked for the triggers in
    that empty schema (current_schema()) and reported a healthy ledger in public as tampered."""
    url = new_database()
    home = tmp_path / "team"
    with Memory(home, database_url=url) as team:
        make_note(team, "Initech renewed for two years", scope="initech")
    execute(url, "CREATE SCHEMA AUTHORIZATION CURRENT_USER")

    code, out, _ = cli("--home", str(home), "--database-url", url, "verify")

    assert code == 0 and "TAMPERED" not in out, out
    with Memory(home, database_url=url, create=False) as team:
        assert team.count_raw_logs() == 1  # the ledger read is the one verified, in public
    # a backup dumped the schema current_schema() names, the empty one: now the ledger's own
    code, out, err = cli("--home", str(home), "--database-url", url, "backup", str(tmp_path / "b.dump"))
    assert code == 0 and "1 raw logs" in out, (out, err)
