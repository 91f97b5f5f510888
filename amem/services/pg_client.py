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
    """A libpq connection URI for ``url`` without its password, and the environment carrying it
    (PGPASSWORD). A ``?password=`` of the query is moved there too; it wins over the URL's own, as
    it does for the driver. The URI is made anew: SQLAlchemy's ``URL.set(password=None)`` keeps
    the password it was asked to remove."""
    env = dict(os.environ)
    query = {k: v for k, v in url.query.items() if k != "password"}
    given = url.query.get("password", url.password)
    if isinstance(given, tuple):  # ?password=a&password=b: the driver takes the last
        given = given[-1]
    if given is not None:
        env["PGPASSWORD"] = str(given)
    bare = sa.URL.create(
        "postgresql",
        username=url.username,
        host=url.host,
        port=url.port,
        database=url.database,
        query=query,
    )
    return bare.render_as_string(hide_password=False), env


def shown(url: sa.URL) -> str:
    """``url`` as it may be printed: no password, neither the URL's own nor a ``?password=``."""
    query = {k: ("***" if k == "password" else v) for k, v in url.query.items()}
    return url.set(query=query).render_as_string(hide_password=True)


def run(command: list[str], env: dict[str, str], what: str) -> str:
    """Run a client program; its standard output, or ConfigError with what it said on failure."""
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout
