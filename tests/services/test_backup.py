"""`amem backup`: a consistent copy of a live SQLite ledger, proven before it is called a backup."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import sqlalchemy as sa

from amem.cli import main
from amem.errors import ConfigError, InvalidInputError
from amem.ledger.store import Ledger
from amem.memory import Memory
from amem.services import checkpoints
from amem.services.backup import back_up
from tests.conftest import POSTGRES_URL
from tests.factories import make_note
from tests.services.restore_setups import cli, killed_backup


def _cli(memory: Memory, *args: str) -> tuple[int, str, str]:
    argv = ["--home", str(memory.home), "--database-url", memory.settings.database_url, *args]
    out, err = io.StringIO(), io.StringIO()
    with patch("sys.stdout", out), patch("sys.stderr", err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_a_backup_taken_while_an_agent_writes_holds_every_input_acknowledged_before_it(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's inputs still being written when the copy starts must not tear it: the copy opens,
    verifies, and holds every input acknowledged before the backup began (a PostgreSQL dump is
    restored into a scratch database to be verified, and dropped)."""
    from amem.services import backup as backup_service

    scratch: list[str] = []  # this backup's scratch databases (other tests' may exist meanwhile)
    opened = backup_service._opened_scratch

    def recorded(ledger: Ledger, name: str, *args: Any) -> Any:
        scratch.append(name)
        return opened(ledger, name, *args)

    monkeypatch.setattr(backup_service, "_opened_scratch", recorded)
    lite = memory
    before = [
        o.raw_log_id
        for o in lite.add_notes(
            [{"content": f"Acme call {i}", "scope": "acme"} for i in range(40)], actor="agent:crm", wait=False
        )
    ]
    stop = threading.Event()
    during: list[str] = []

    def agent() -> None:
        n = 0
        while not stop.is_set():
            batch = [{"content": f"Globex call {n}-{i}", "scope": "globex"} for i in range(5)]
            during.extend(o.raw_log_id for o in lite.add_notes(batch, actor="agent:mail", wait=False))
            n += 1

    writer = threading.Thread(target=agent)
    writer.start()
    try:
        report = lite.backup(tmp_path / "ledger-backup.sqlite3")
    finally:
        stop.set()
        writer.join()

    assert report.verified.ok, report.verified.problems
    assert during, "the agent wrote while the backup ran"
    assert not Path(report.path + ".partial").exists()
    if memory.ledger.dialect == "postgresql":
        assert report.heads["counts"]["raw_log"] >= len(before)
        assert scratch
        with memory.ledger.engine.connect() as conn:  # the scratch database is gone
            left = conn.execute(
                sa.text("SELECT count(*) FROM pg_database WHERE datname IN :names").bindparams(
                    sa.bindparam("names", expanding=True)
                ),
                {"names": scratch},
            )
            assert left.scalar_one() == 0
        return
    with Memory(tmp_path / "restored", database_url=f"sqlite:///{report.path}", create=False) as copy:
        assert all(copy.input_status(raw).status == "queued" for raw in before)
        assert copy.verify().ok
        assert copy.count_raw_logs() == report.heads["counts"]["raw_log"] >= len(before)


def test_the_copy_proves_every_signed_checkpoint_and_serves_search_after_a_reindex(
    lite: Memory, tmp_path: Path
) -> None:
    note = make_note(lite, "Initech renewed for two years", scope="initech")
    key = tmp_path / "key.pem"
    checkpoints.init_key(key)
    log = tmp_path / "checkpoints.jsonl"
    lite.checkpoint(key=key, log=log)
    make_note(lite, "Initech asked for SSO", scope="initech")

    proof = ["--checkpoints", str(log), "--public-key", str(key)]
    code, out, err = _cli(lite, "backup", str(tmp_path / "b.sqlite3"), *proof, "--json")

    report = json.loads(out)
    assert code == 0, err
    assert report["verified"]["ok"] and [c["proven"] for c in report["verified"]["checkpoints"]] == [True]
    with Memory(tmp_path / "restored", database_url=f"sqlite:///{report['path']}", create=False) as copy:
        copy.reindex()
        assert [h.note.id for h in copy.search("renewal two years", scope="initech", k=1)] == [note.id]


def test_a_tampered_ledger_is_still_copied_and_the_backup_says_so(lite: Memory, tmp_path: Path) -> None:
    """The copy is the evidence: kept, named, and the command fails."""
    note = make_note(lite, "Acme pays $42 per seat")
    with lite.ledger.engine.begin() as conn:
        conn.execute(sa.text("DROP TRIGGER raw_logs_no_update"))
        conn.execute(sa.text("UPDATE raw_logs SET text = 'Acme pays $4 per seat'"))

    code, out, _ = _cli(lite, "backup", str(tmp_path / "b.sqlite3"))

    assert code == 1 and "TAMPERED" in out and (tmp_path / "b.sqlite3").is_file()
    assert note.raw_log_ids[0] in out


def test_a_backup_never_overwrites_a_file(lite: Memory, tmp_path: Path) -> None:
    dest = tmp_path / "b.sqlite3"
    dest.write_text("yesterday's backup")
    with pytest.raises(InvalidInputError, match="exists: a backup never overwrites"):
        lite.backup(dest)
    assert dest.read_text() == "yesterday's backup"


@pytest.mark.postgres
def test_a_dump_that_cannot_be_restored_to_be_verified_is_kept_and_said_unverified(
    memory: Memory, tmp_path: Path
) -> None:
    """A role without CREATEDB gets its dump, and is told it is not proven and how to prove it."""
    if memory.ledger.dialect != "postgresql":
        pytest.skip("pg_dump's path")
    make_note(memory, "Initech renewed for two years", scope="initech")
    role = f"amem_backup_{uuid.uuid4().hex[:8]}"
    url = memory.ledger.engine.url
    with memory.ledger.engine.begin() as conn:
        schema = conn.execute(sa.text("SELECT current_schema()")).scalar_one()
        conn.execute(sa.text(f"CREATE ROLE {role} LOGIN NOCREATEDB"))
        conn.execute(sa.text(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}'))
        conn.execute(sa.text(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO {role}'))
        conn.execute(sa.text(f'GRANT SELECT ON ALL SEQUENCES IN SCHEMA "{schema}" TO {role}'))
    reader = Ledger(url.set(username=role).render_as_string(hide_password=False), create_if_empty=False)
    try:
        with pytest.raises(
            ConfigError, match="written but not verified: creating a scratch database"
        ) as caught:
            back_up(reader, tmp_path / "b.dump")
    finally:
        reader.close()
        with memory.ledger.engine.begin() as conn:
            conn.execute(sa.text(f'REVOKE ALL ON ALL TABLES IN SCHEMA "{schema}" FROM {role}'))
            conn.execute(sa.text(f'REVOKE ALL ON ALL SEQUENCES IN SCHEMA "{schema}" FROM {role}'))
            conn.execute(sa.text(f'REVOKE USAGE ON SCHEMA "{schema}" FROM {role}'))
            conn.execute(sa.text(f"DROP ROLE {role}"))
    assert (tmp_path / "b.dump").stat().st_size > 0 and "pg_restore --no-owner" in str(caught.value)


@pytest.mark.postgres
def test_a_ledger_in_the_public_schema_of_its_own_database_is_dumped_and_verified(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """The usual team setup: a database of amem's own, the ledger in its schema "public", which
    every new database (the scratch one the dump is restored into) already has."""
    with Memory(tmp_path / "home", database_url=new_database()) as team:
        make_note(team, "Initech renewed for two years", scope="initech")
        report = team.backup(tmp_path / "ledger.dump")
    assert report.verified.ok, report.verified.problems
    assert report.heads["counts"]["raw_log"] == 1


def _writing_at(dest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone else writes ``dest`` while the copy is being verified (after the check that it is free)."""
    from amem.services import backup as backing_up

    verify = backing_up.verify_ledger

    def verify_while_dest_is_written(*args: Any, **kwargs: Any) -> Any:
        dest.write_text("another run's backup")
        return verify(*args, **kwargs)

    monkeypatch.setattr(backing_up, "verify_ledger", verify_while_dest_is_written)


def test_a_file_written_at_the_destination_during_a_backup_is_never_overwritten(
    lite: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_note(lite, "Acme pays $42 per seat")
    dest = tmp_path / "b.sqlite3"
    _writing_at(dest, monkeypatch)

    code, out, err = _cli(lite, "backup", str(dest))

    assert code == 2 and out == ""
    assert err.strip() == (
        f"error: {dest} was created while the backup was being made: it is left as it is and this "
        "backup was not written (a backup never overwrites a file); name a new one"
    )
    assert dest.read_text() == "another run's backup"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.sqlite3", "home"]  # no copy left behind


def test_where_the_file_system_has_no_hard_links_a_backup_is_placed_but_never_over_a_file(
    lite: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    def no_hard_links(src: object, dst: object, **_: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted", str(dst))

    monkeypatch.setattr(os, "link", no_hard_links)
    note = make_note(lite, "Acme pays $42 per seat")
    report = lite.backup(tmp_path / "first.sqlite3")
    assert report.verified.ok
    with Memory(tmp_path / "restored", database_url=f"sqlite:///{report.path}", create=False) as copy:
        assert copy.read(note.id).content == "Acme pays $42 per seat" and copy.verify().ok

    dest = tmp_path / "second.sqlite3"
    _writing_at(dest, monkeypatch)
    with pytest.raises(InvalidInputError, match="was created while the backup was being made"):
        lite.backup(dest)
    assert dest.read_text() == "another run's backup"
    assert list(tmp_path.glob("*.partial")) == []


# -- what a backup shows other users, and what it leaves behind ------------------------------------

_SECRET = "Sup3rSecretPW"


def _logging_client_programs(bin_dir: Path, log: Path) -> str:
    """A PATH whose pg_dump and pg_restore are wrappers that log their command line (what ps shows
    every user of the machine) and the PGPASSWORD they were given, then run the real programs."""
    bin_dir.mkdir()
    for program in ("pg_dump", "pg_restore"):
        real = shutil.which(program)
        assert real, f"{program} is not on PATH"
        wrapper = bin_dir / program
        wrapper.write_text(
            "#!/bin/sh\n"
            f'printf "argv %s: %s\\n" {program} "$*" >> "{log}"\n'
            f'printf "env %s: PGPASSWORD=%s\\n" {program} "$PGPASSWORD" >> "{log}"\n'
            f'exec "{real}" "$@"\n'
        )
        wrapper.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.postgres
@pytest.mark.parametrize("given", ["in the URL", "as ?password="])
def test_the_postgres_password_is_never_on_a_client_programs_command_line(
    memory: Memory,
    new_database: Callable[[], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    given: str,
) -> None:
    """pg_dump and pg_restore get the password in PGPASSWORD, for a backup and for a restore.
    Before, ``URL.set(password=None)`` kept the password (SQLAlchemy 2.1 ignores None), so it
    was on both command lines, and a ?password= of the URL stayed in the URI as well."""
    if memory.ledger.dialect != "postgresql":
        pytest.skip("pg_dump's path")
    from amem.services.restore import restore

    log = tmp_path / "client-programs.log"
    monkeypatch.setenv("PATH", _logging_client_programs(tmp_path / "bin", log))

    def with_password(url: sa.URL) -> sa.URL:
        if given == "in the URL":
            return url.set(password=_SECRET)
        return url.update_query_dict({"password": _SECRET})

    make_note(memory, "Initech renewed for two years", scope="initech")
    source = with_password(memory.ledger.engine.url).render_as_string(hide_password=False)
    ledger = Ledger(source, create_if_empty=False)
    try:
        report = back_up(ledger, tmp_path / "b.dump")
    finally:
        ledger.close()
    target = with_password(sa.make_url(new_database()))
    restored = restore(Path(report.path), target.render_as_string(hide_password=False))

    assert report.verified.ok and restored.restored
    lines = log.read_text().splitlines()
    argv = [line for line in lines if line.startswith("argv ")]
    assert {line.split(":")[0] for line in argv} == {"argv pg_dump", "argv pg_restore"}
    assert [line for line in argv if _SECRET in line] == []
    assert {line.split(": ", 1)[1] for line in lines if line.startswith("env ")} == {f"PGPASSWORD={_SECRET}"}


def test_a_sqlite_backup_is_only_read_by_a_restore(lite: Memory, tmp_path: Path) -> None:
    """The copy is placed in rollback-journal mode. Before, it kept the live ledger's WAL mark: a
    restore (which opens it read-only) left -wal and -shm beside it, and from read-only media
    could not open it at all ("unable to open database file", exit 70)."""
    make_note(lite, "Acme pays $42 per seat")
    kept = tmp_path / "kept"
    kept.mkdir()
    backup = Path(lite.backup(kept / "b.sqlite3").path)

    code, _, err = cli("--home", str(tmp_path / "new"), "restore", str(backup))

    assert code == 0, err
    assert backup.read_bytes()[18:20] == b"\x01\x01"  # SQLite's header: not WAL (2)
    assert sorted(p.name for p in kept.iterdir()) == ["b.sqlite3"]


def _scratch_databases(memory: Memory) -> set[str]:
    with memory.ledger.engine.connect() as conn:
        found = conn.execute(
            sa.text(r"SELECT datname FROM pg_database WHERE datname LIKE 'amem\_backup\_check\_%'")
        )
        return set(found.scalars())


def test_what_a_killed_backup_left_is_removed_by_the_next_one(memory: Memory, tmp_path: Path) -> None:
    """A backup killed while verifying leaves its partial file and (PostgreSQL) its scratch
    database, a full copy of the ledger; the next backup removes both and says so. Before, nothing
    ever removed them."""
    make_note(memory, "Acme pays $42 per seat")
    dest = tmp_path / "b.backup"
    scratch = killed_backup(memory, tmp_path / "killed-home", dest)
    left = sorted(p.name for p in tmp_path.glob("b.backup.*.partial"))
    assert len(left) == 1
    postgres = memory.ledger.dialect == "postgresql"
    if postgres:
        assert scratch in _scratch_databases(memory)

    report = memory.backup(dest)

    assert report.verified.ok
    assert sorted(p.name for p in tmp_path.glob("b.backup*")) == ["b.backup"]
    assert any(left[0] in line for line in report.cleaned)
    if postgres:
        assert scratch not in _scratch_databases(memory)
        assert any(scratch in line for line in report.cleaned)


def test_a_backup_leaves_alone_what_a_backup_running_beside_it_is_writing(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second backup to the same file, started while the first one checks its copy, removes
    neither the first one's partial file nor its scratch database (made, and not yet connected
    to): the first runs to its end, refused only because the name was taken meanwhile."""
    from amem.services import backup as backing_up

    make_note(memory, "Acme pays $42 per seat")
    dest = tmp_path / "b.backup"
    postgres = memory.ledger.dialect == "postgresql"
    first: dict[str, Any] = {}
    beside: list[backing_up.BackupReport] = []

    def second_backup() -> None:
        if "partial" not in first:  # once: the second backup's own hook does nothing
            (first["partial"],) = (p.name for p in tmp_path.glob("b.backup.*.partial"))
            beside.append(back_up(memory.ledger, dest))

    if postgres:  # after making the scratch database, before anything connects to it
        run = backing_up.pg_client.run

        def restoring(command: list[str], *args: Any) -> str:
            if "--no-owner" in command and "partial" not in first:
                (uri,) = (c.removeprefix("--dbname=") for c in command if c.startswith("--dbname="))
                first["scratch"] = sa.make_url(uri).database
                second_backup()
            return run(command, *args)

        monkeypatch.setattr(backing_up.pg_client, "run", restoring)
    else:
        verify = backing_up.verify_ledger

        def verifying(*args: Any, **kwargs: Any) -> Any:
            second_backup()
            return verify(*args, **kwargs)

        monkeypatch.setattr(backing_up, "verify_ledger", verifying)

    with pytest.raises(InvalidInputError, match="was created while the backup was being made"):
        back_up(memory.ledger, dest)  # its copy was restored and verified: nothing taken from it

    (second,) = beside
    assert second.verified.ok
    assert not [line for line in second.cleaned if first["partial"] in line]
    assert sorted(p.name for p in tmp_path.glob("b.backup*")) == ["b.backup"]
    if postgres:
        assert not [line for line in second.cleaned if first["scratch"] in line]
        assert first["scratch"] not in _scratch_databases(memory)  # dropped by its own backup


#: A pid no process can have (above Linux's PID_MAX_LIMIT): how a backup running in another PID
#: namespace (a container sharing this host name and the volume) looks from here.
_UNSEEN_PID = 4_194_305

_BACKUP_IN_ANOTHER_NAMESPACE = f"""
import os, sys
os.getpid = lambda: {_UNSEEN_PID}
from pathlib import Path
from amem.ledger.store import Ledger
from amem.services import backup

verify = backup.verify_ledger

def waiting(*args, **kwargs):
    print("verifying", flush=True)
    sys.stdin.readline()  # the test's own backup runs meanwhile
    return verify(*args, **kwargs)

backup.verify_ledger = waiting
ledger = Ledger(sys.argv[1], create_if_empty=False)
report = backup.back_up(ledger, Path(sys.argv[2]))
print(report.model_dump_json(), flush=True)
"""


def test_a_backup_running_in_another_pid_namespace_keeps_its_copy_and_places_a_whole_one(
    lite: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, a backup told a running backup's partial file from a killed one's by its process id,
    which a process of another PID namespace (a container sharing the host name and the volume)
    does not have here: the second backup removed it, and the first then placed an empty file
    (0 bytes) and reported it verified. Each backup now holds a lock on its partial file."""
    from amem.services import backup as backing_up
    from tests.conftest import REPO

    make_note(lite, "Acme pays $42 per seat")
    dest = tmp_path / "b.backup"
    first = subprocess.Popen(
        [sys.executable, "-c", _BACKUP_IN_ANOTHER_NAMESPACE, lite.settings.database_url, str(dest)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    try:
        assert first.stdout is not None and first.stdout.readline() == "verifying\n"
        verify = backing_up.verify_ledger

        def first_ends_meanwhile(*args: Any, **kwargs: Any) -> Any:
            out, err = first.communicate("go\n")
            first_ended.append((first.returncode, out, err))
            return verify(*args, **kwargs)

        first_ended: list[tuple[int, str, str]] = []
        monkeypatch.setattr(backing_up, "verify_ledger", first_ends_meanwhile)
        with pytest.raises(InvalidInputError, match="was created while the backup was being made"):
            back_up(lite.ledger, dest)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()

    ((code, out, err),) = first_ended
    assert code == 0, err
    report = json.loads(out)
    assert report["verified"]["ok"] and report["bytes"] == dest.stat().st_size > 0
    with Memory(tmp_path / "restored", database_url=f"sqlite:///{dest}", create=False) as copy:
        assert copy.count_raw_logs() == lite.count_raw_logs() == 1 and copy.verify().ok
    assert sorted(p.name for p in tmp_path.glob("b.backup*")) == ["b.backup"]


_KILLED_WHILE_COPYING = """
import os, signal, sqlite3, sys
from pathlib import Path
from amem.ledger.store import Ledger
from amem.services import backup

def copy_page_by_page(ledger, partial):  # killed after the first page: the copy is half written
    source = ledger.engine.raw_connection()
    target = sqlite3.connect(partial)
    killed = lambda *_: os.kill(os.getpid(), signal.SIGKILL)
    source.driver_connection.backup(target, pages=1, progress=killed)

backup._copy_sqlite = copy_page_by_page
backup.back_up(Ledger(sys.argv[1], create_if_empty=False), Path(sys.argv[2]))
"""


def test_a_backup_killed_while_copying_leaves_nothing_after_the_next_backup(
    lite: Memory, tmp_path: Path
) -> None:
    """SQLite writes the copy under a rollback journal: a backup killed midway leaves the partial
    file's -journal beside it. Before, the next backup removed the partial file and never its
    -journal, which stayed for good."""
    from tests.conftest import REPO

    make_note(lite, "Acme pays $42 per seat")
    dest = tmp_path / "b.backup"
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WHILE_COPYING, lite.settings.database_url, str(dest)],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    assert [p.name for p in tmp_path.glob("b.backup.*.partial-journal")]

    report = lite.backup(dest)

    assert report.verified.ok
    assert sorted(p.name for p in tmp_path.glob("b.backup*")) == ["b.backup"]
    assert any("-journal" in line for line in report.cleaned)


def _ended_sessions_url(url: str, idle_ms: int) -> str:
    """``url`` whose server sessions the server ends once idle for ``idle_ms`` (a DBA's
    idle_session_timeout)."""
    return (
        sa.make_url(url)
        .update_query_dict({"options": f"-cidle_session_timeout={idle_ms}"})
        .render_as_string(hide_password=False)
    )


def _holder(copy: Ledger) -> int:
    """The server session holding the scratch database ``copy`` is opened on (named in it)."""
    return int(str(copy.engine.url.database).split("_")[3])


@pytest.mark.postgres
def test_a_postgres_backup_outlives_the_servers_idle_session_timeout(
    new_database: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session holding the scratch database idles through pg_restore and verification. Before,
    a server that ends idle sessions (idle_session_timeout) ended it, and the backup, verified,
    failed at its end: the dump discarded, the scratch database (a full copy of the ledger) left."""
    from amem.ledger import store
    from amem.services import backup as backing_up

    idle_ms = 300
    monkeypatch.setattr(store, "PING_AFTER_IDLE_S", 0.0)  # the ledger's own idle connections: replaced
    url = _ended_sessions_url(new_database(), idle_ms)
    verify = backing_up.verify_ledger
    holders: list[int] = []
    assert POSTGRES_URL
    admin = sa.create_engine(POSTGRES_URL)

    def idle_past_the_timeout(copy: Ledger, *args: Any, **kwargs: Any) -> Any:
        holders.append(_holder(copy))
        with admin.connect() as conn:  # until the server has had twice its time to end the holder
            idle = sa.text(
                "SELECT extract(epoch FROM now() - state_change) * 1000 FROM pg_stat_activity WHERE pid = :p"
            )
            while (ms := conn.execute(idle, {"p": holders[0]}).scalar()) is not None and ms < 2 * idle_ms:
                conn.rollback()  # now() is the transaction's start: a new one each time
                time.sleep((2 * idle_ms - float(ms)) / 1000)  # what the condition still lacks, no guess
        assert ms is not None, "the server ended the session holding the scratch database"
        return verify(copy, *args, **kwargs)

    monkeypatch.setattr(backing_up, "verify_ledger", idle_past_the_timeout)
    try:
        with Memory(tmp_path / "home", database_url=url) as team:
            make_note(team, "Initech renewed for two years", scope="initech")
            report = team.backup(tmp_path / "ledger.dump")
        assert report.verified.ok and Path(report.path).stat().st_size > 0
        with admin.connect() as conn:
            left = conn.execute(
                sa.text("SELECT count(*) FROM pg_database WHERE datname LIKE :n"),
                {"n": f"amem\\_backup\\_check\\_{holders[0]}\\_%"},
            )
            assert left.scalar_one() == 0
    finally:
        admin.dispose()


@pytest.mark.postgres
def test_a_postgres_backup_whose_holding_session_the_server_ended_still_drops_its_scratch_database(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the scratch database was dropped over the session that made it only: once the server
    had ended that session (a restart of its pooler, an administrator), the verified backup failed
    at its end, its dump discarded and the full copy of the ledger left on the server."""
    if memory.ledger.dialect != "postgresql":
        pytest.skip("pg_dump's path")
    from amem.services import backup as backing_up

    make_note(memory, "Initech renewed for two years", scope="initech")
    verify = backing_up.verify_ledger
    scratch: list[str] = []

    def holder_ended(copy: Ledger, *args: Any, **kwargs: Any) -> Any:
        scratch.append(str(copy.engine.url.database))
        with memory.ledger.engine.connect() as conn:
            ended = conn.execute(sa.text("SELECT pg_terminate_backend(:p, 5000)"), {"p": _holder(copy)})
            assert ended.scalar_one()
        return verify(copy, *args, **kwargs)

    monkeypatch.setattr(backing_up, "verify_ledger", holder_ended)
    report = memory.backup(tmp_path / "ledger.dump")

    assert report.verified.ok and Path(report.path).stat().st_size > 0
    assert scratch and scratch[0] not in _scratch_databases(memory)


def test_a_copy_removed_while_it_is_verified_is_never_placed_as_an_empty_backup(
    lite: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, once the partial file was gone (removed by whoever ignored its lock), setting its
    journal mode made a new, empty file at its name, and that was placed and reported verified."""
    from amem.services import backup as backing_up

    make_note(lite, "Acme pays $42 per seat")
    dest = tmp_path / "b.sqlite3"
    verify = backing_up.verify_ledger

    def removed_meanwhile(*args: Any, **kwargs: Any) -> Any:
        for partial in tmp_path.glob("b.sqlite3.*.partial"):
            partial.unlink()
        return verify(*args, **kwargs)

    monkeypatch.setattr(backing_up, "verify_ledger", removed_meanwhile)
    with pytest.raises(ConfigError, match="was removed or replaced while the backup was being made"):
        back_up(lite.ledger, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]
