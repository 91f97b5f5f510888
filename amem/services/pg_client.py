"""PostgreSQL's own client programs (pg_dump, pg_restore), as backup and restore run them: found on
PATH, given a connection URI without its password (which goes in PGPASSWORD: a command line is
visible to every user of the machine), their failure said with what they printed."""

from __future__ import annotations

import os
import shutil
import subprocess

import sqlalchemy as sa

from amem.errors import ConfigError


def client(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        raise ConfigError(
            f"{program} is not on PATH: amem backs up and restores a PostgreSQL ledger with PostgreSQL's own "
            "client programs (pg_dump, pg_restore), of the server's major version or newer"
        )
    return found


def libpq(url: sa.URL) -> tuple[str, dict[str, str]]:
    """A libpq connection URI for ``url`` without its password, and the environment carrying it."""
    env = dict(os.environ)
    if url.password is not None:
        env["PGPASSWORD"] = str(url.password)
    bare = url.set(drivername="postgresql", password=None)
    return bare.render_as_string(hide_password=False), env


def run(command: list[str], env: dict[str, str], what: str) -> str:
    """Run a client program; its standard output, or ConfigError with what it said on failure."""
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout
