"""What the backup, restore and erasure-of-copies tests share: the CLI run in this process, counts
of a PostgreSQL schema's tables, a team's dump, and a restore or backup killed while it verifies
(SIGKILL in a subprocess of its own, at the verification hook: what a killed process leaves)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from unittest.mock import patch

import sqlalchemy as sa

from amem.cli import main
from amem.memory import Memory
from tests.conftest import REPO
from tests.factories import make_note

#: A restore of argv[1] into the URL argv[2], killed as it starts verifying its copy.
_RESTORE_KILLED_WHILE_VERIFYING = """
import os, signal, sys
from pathlib import Path
from amem.services import restore

restore.verify_ledger = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
restore.restore(Path(sys.argv[1]), sys.argv[2])
"""

#: A backup of the ledger at argv[2] (home argv[1]) to argv[3], killed as it starts verifying the
#: copy; it prints the copy's database first (PostgreSQL: the scratch database it was restored into).
_BACKUP_KILLED_WHILE_VERIFYING = """
import os, signal, sys
from pathlib import Path
from amem.memory import Memory
from amem.services import backup

def killed(copy, *args, **kwargs):
    print(copy.engine.url.database, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

backup.verify_ledger = killed
Memory(Path(sys.argv[1]), database_url=sys.argv[2], create=False).backup(sys.argv[3])
"""


def cli(*args: str) -> tuple[int, str, str]:
    """`amem ARGS` in this process: exit code, standard output, standard error."""
    out, err = io.StringIO(), io.StringIO()
    with patch("sys.stdout", out), patch("sys.stderr", err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _killed(script: str, *args: str) -> str:
    killed = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr
    return killed.stdout.strip()


def killed_restore(backup: Path, target_url: str) -> None:
    """A restore of ``backup`` into ``target_url`` killed (SIGKILL) as it verifies what it restored."""
    _killed(_RESTORE_KILLED_WHILE_VERIFYING, str(backup), target_url)


def killed_backup(memory: Memory, home: Path, dest: Path) -> str:
    """A backup of ``memory``'s ledger to ``dest`` killed (SIGKILL) as it verifies its copy, made
    by a process with the home ``home``; returns the copy's database (PostgreSQL: the scratch one)."""
    return _killed(_BACKUP_KILLED_WHILE_VERIFYING, str(home), memory.settings.database_url, str(dest))


def holding(directory: Path, text: str) -> list[str]:
    """The files of ``directory`` (not below it) whose bytes hold ``text``."""
    return sorted(p.name for p in directory.iterdir() if p.is_file() and text.encode() in p.read_bytes())


def count(url: str, query: str, schema: str) -> int:
    """``query``'s one number, ``schema`` bound to ``:s``, in the database ``url``."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(query), {"s": schema}).scalar_one())
    finally:
        engine.dispose()


def tables(url: str, schema: str) -> int:
    """How many tables ``schema`` of the database ``url`` holds."""
    return count(url, "SELECT count(*) FROM information_schema.tables WHERE table_schema = :s", schema)


def schemas(url: str, schema: str) -> int:
    """1 when the database ``url`` has a schema ``schema``, else 0."""
    return count(url, "SELECT count(*) FROM pg_namespace WHERE nspname = :s", schema)


def team_dump(url: str, home: Path, *contents: str) -> Path:
    """A backup of a team ledger (kept in "public" of the database ``url``) holding ``contents``."""
    with Memory(home, database_url=url) as team:
        for content in contents:
            make_note(team, content, scope="initech")
        return Path(team.backup(home.parent / f"{home.name}.dump").path)


def execute(url: str, *statements: str) -> None:
    """Run ``statements`` in one transaction in the database ``url`` (as its administrator would)."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()


def ledger_in_schema(url: str, schema: str, home: Path, content: str, scope: str) -> str:
    """A ledger kept in a new schema ``schema`` of the database ``url``, holding a note of
    ``content`` in ``scope``; returns the URL that opens it (its search path set to the schema)."""
    execute(url, f'CREATE SCHEMA "{schema}"')
    opening = sa.make_url(url).set(query={"options": f"-csearch_path={schema}"}).render_as_string(False)
    with Memory(home, database_url=opening) as mem:
        make_note(mem, content, scope=scope)
    return opening
