"""Settings from the environment (AMEM_*), with defaults that work offline on a fresh machine."""

from __future__ import annotations

import importlib.util
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from amem.errors import ConfigError

DEFAULT_MAX_CONTENT_CHARS = 20_000
#: add_note's link step uses its keyword side only while the scope holds at most this many notes;
#: beyond, it finds neighbours on the vector side alone, as A-MEM does, so its cost stops growing
#: with the store (amem/services/search.py, bench/README.md "Scale"). AMEM_LINK_KEYWORD_SCOPE_LIMIT.
DEFAULT_LINK_KEYWORD_SCOPE_LIMIT = 2000
#: The link step's keyword side ranks only the scope's newest this many matching notes (None: every
#: match, the default: below the scope limit every match is cheap). AMEM_LINK_KEYWORD_WINDOW.
DEFAULT_LINK_KEYWORD_WINDOW: int | None = None
#: The directory name amem looks for in the current directory and its parents, as git finds .git.
STORE_DIR_NAME = ".amem"
#: How the store was chosen (``Settings.home_source``), in the words ``amem where`` prints.
HOME_FROM_OPTION = "--home"
HOME_FROM_ENV = "AMEM_HOME"
HOME_FROM_NEAREST = "nearest .amem"
HOME_FROM_USER_DIR = "per-user data directory"
#: Where the ledger URL came from (``Settings.database_url_source``), named in a message about it.
DATABASE_URL_FROM_ENV = "AMEM_DATABASE_URL"
DATABASE_URL_FROM_OPTION = "--database-url or database_url="
#: What the ledger runs on, as a message about a URL amem cannot use says it.
SUPPORTED_LEDGERS = (
    "amem's ledger is SQLite (sqlite:///PATH) or PostgreSQL through psycopg "
    "(postgresql+psycopg://USER@HOST/DATABASE), nothing else"
)
#: SQLAlchemy's names of the drivers the ledger runs on: Python's sqlite3, and psycopg 3 (the
#: ``postgres`` extra). A bare postgresql:// (or Heroku's postgres://) is read as psycopg: SQLAlchemy
#: 2.0 reads it as psycopg2, which amem does not install, and 1.4 and later refuse postgres://.
_SQLITE_DRIVERS = frozenset({"sqlite", "sqlite+pysqlite"})
_POSTGRES_DRIVERS = frozenset({"postgresql", "postgres", "postgresql+psycopg"})
_POSTGRES_DRIVER = "postgresql+psycopg"
#: The range of each numeric setting: a value outside is refused when the settings are read, naming
#: the variable and the range, not taken and failing later (AMEM_LINK_K=99999999999999999999 made
#: every input fail with "Python int too large to convert to SQLite INTEGER").
MAX_CONTENT_CHARS_RANGE = (1, 100_000_000)
LINK_K_RANGE = (0, 1_000)
LLM_CONCURRENCY_RANGE = (1, 4_096)
LLM_TRANSIENT_RETRIES_RANGE = (0, 1_000)
#: AMEM_LINK_KEYWORD_WINDOW and AMEM_LINK_KEYWORD_SCOPE_LIMIT: counts of notes, or 'all'.
NOTES_COUNT_RANGE = (0, 1_000_000_000)
#: Seconds: a lease shorter than a second is renewed (at a third of it) faster than a write can be
#: relied on; a retry never waits more than 30 s (amem/llm/litellm_analyst.py), but a longer first
#: wait an env file already gives is taken, not refused. The bounds are wide on purpose: values
#: amem took before the ranges keep working; only what cannot work (or overflows the ledger) is refused.
WORKER_LEASE_SECONDS_RANGE = (1.0, 604_800.0)
LLM_RETRY_WAIT_RANGE = (0.0, 3_600.0)
#: Model calls add_notes and reprocess make at once with a remote model (the offline analyst runs
#: on this machine's CPU and so one at a time).
DEFAULT_LLM_CONCURRENCY = 4


@dataclass(frozen=True)
class Settings:
    #: Always absolute, ``~`` expanded (``__post_init__``).
    home: Path = field(default_factory=lambda: Path(STORE_DIR_NAME))
    #: Which rule chose ``home``: one of the HOME_FROM_* words above.
    home_source: str = HOME_FROM_OPTION
    #: Checked and made absolute (``ledger_url``), so it opens the same ledger from any directory.
    database_url_override: str | None = None
    #: Where ``database_url_override`` came from: DATABASE_URL_FROM_ENV or DATABASE_URL_FROM_OPTION.
    database_url_source: str = DATABASE_URL_FROM_OPTION
    policy_path: str | None = None
    llm_model: str | None = None
    embedding_model: str | None = None
    chroma_url: str | None = None
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS
    link_k: int = 5
    llm_concurrency: int = DEFAULT_LLM_CONCURRENCY
    link_keyword_window: int | None = DEFAULT_LINK_KEYWORD_WINDOW
    link_keyword_scope_limit: int | None = DEFAULT_LINK_KEYWORD_SCOPE_LIMIT
    #: The input queue: how long a worker's claim on an input lasts unless renewed (seconds).
    worker_lease_seconds: float = 120.0
    #: A model call failing for a transient reason (timeout, 429, 5xx) is retried this many times,
    #: waiting ``llm_retry_wait`` seconds, then twice that, ... (at most 30 s), before it fails.
    llm_transient_retries: int = 4
    llm_retry_wait: float = 1.0

    def __post_init__(self) -> None:
        """Read the store's place once, now: a relative home read again at each later open split one
        store in two after ``os.chdir`` (the ledger opened in the first directory, the index made
        lazily in the second), and ``~`` from an env file (which no shell expands) made a ``./~``
        store in each working directory. A ledger URL that cannot be used is refused here, naming
        where it came from, not when the ledger is opened as "a bug in amem"."""
        object.__setattr__(self, "home", home_path(self.home))
        if self.database_url_override:
            checked = ledger_url(self.database_url_override, self.database_url_source)
            object.__setattr__(self, "database_url_override", checked)

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        clean = {k: v for k, v in overrides.items() if v is not None}
        if "home" in clean:
            clean["home"] = Path(str(clean["home"]))
            clean.setdefault("home_source", HOME_FROM_OPTION)
        else:
            clean["home"], clean["home_source"] = find_home(env.get("AMEM_HOME") or None)
        if "database_url_override" not in clean and env.get("AMEM_DATABASE_URL"):
            clean["database_url_override"] = env["AMEM_DATABASE_URL"]
            clean["database_url_source"] = DATABASE_URL_FROM_ENV
        read = {
            "policy_path": env.get("AMEM_POLICY") or None,
            "llm_model": env.get("AMEM_LLM_MODEL") or None,
            "embedding_model": env.get("AMEM_EMBEDDING_MODEL") or None,
            "chroma_url": env.get("AMEM_CHROMA_URL") or None,
            "max_content_chars": _whole(
                env, "AMEM_MAX_CONTENT_CHARS", DEFAULT_MAX_CONTENT_CHARS, MAX_CONTENT_CHARS_RANGE
            ),
            "link_k": _whole(env, "AMEM_LINK_K", 5, LINK_K_RANGE),
            "llm_concurrency": _whole(
                env, "AMEM_LLM_CONCURRENCY", DEFAULT_LLM_CONCURRENCY, LLM_CONCURRENCY_RANGE
            ),
            "link_keyword_window": _notes_or_all(
                env, "AMEM_LINK_KEYWORD_WINDOW", DEFAULT_LINK_KEYWORD_WINDOW
            ),
            "link_keyword_scope_limit": _notes_or_all(
                env, "AMEM_LINK_KEYWORD_SCOPE_LIMIT", DEFAULT_LINK_KEYWORD_SCOPE_LIMIT
            ),
            "worker_lease_seconds": _seconds(
                env, "AMEM_WORKER_LEASE_SECONDS", 120.0, WORKER_LEASE_SECONDS_RANGE
            ),
            "llm_transient_retries": _whole(
                env, "AMEM_LLM_TRANSIENT_RETRIES", 4, LLM_TRANSIENT_RETRIES_RANGE
            ),
            "llm_retry_wait": _seconds(
                env, "AMEM_LLM_RETRY_WAIT", 1.0, LLM_RETRY_WAIT_RANGE, allow_zero=True
            ),
        }
        settings = cls(**{**read, **clean})  # type: ignore[arg-type]
        own_policy = settings.home / "policies.yaml"
        if settings.policy_path is None and own_policy.is_file():
            # A store that carries its own policy (the demo's does) is governed by it.
            settings = replace(settings, policy_path=str(own_policy))
        return settings

    @property
    def database_url(self) -> str:
        if self.database_url_override:
            return self.database_url_override
        return sqlite_url((self.home / "ledger.sqlite3").resolve())

    @property
    def shown_database_url(self) -> str:
        """The ledger URL fit to print: the password hidden (SQLAlchemy imported only then)."""
        from sqlalchemy.engine import make_url

        return make_url(self.database_url).render_as_string(hide_password=True)

    @property
    def chroma_path(self) -> Path:
        return self.home / "index"


def find_home(explicit: str | None = None, start: Path | None = None) -> tuple[Path, str]:
    """The store and the rule that chose it: ``explicit`` (AMEM_HOME), else the nearest ``.amem``
    in ``start`` (the current directory) or a parent, else the per-user data directory."""
    if explicit:
        return home_path(explicit), HOME_FROM_ENV
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / STORE_DIR_NAME
        if candidate.is_dir():
            return candidate, HOME_FROM_NEAREST
    from platformdirs import user_data_path

    return user_data_path("amem", appauthor=False), HOME_FROM_USER_DIR


def home_path(value: str | os.PathLike[str]) -> Path:
    """A store's directory as given (AMEM_HOME, --home, ``Memory(home)``), absolute: ``~`` expanded
    (an env file, ``docker --env-file`` or systemd's Environment= pass it literally) and read against
    the working directory now, once."""
    return Path(value).expanduser().resolve()


def ledger_url(url: str, source: str | None = None) -> str:
    """``url`` as amem opens it, or ConfigError naming ``source`` (AMEM_DATABASE_URL, the option):
    a URL SQLAlchemy cannot read, another database (MySQL) or another driver said so, not raised from
    the driver as "a bug in amem". A bare postgresql:// (or postgres://) becomes postgresql+psycopg://;
    a SQLite file named relatively (or with ``~``) becomes its absolute path, so an ``os.chdir``
    later never opens a second, empty ledger. Otherwise ``url`` is kept exactly as given."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    given = f" ({source})" if source else ""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise ConfigError(
            f"the ledger URL {_password_hidden(url)!r}{given} cannot be read as a database URL: "
            f"{SUPPORTED_LEDGERS}"
        ) from None
    shown = f"the ledger URL {parsed.render_as_string(hide_password=True)!r}{given}"
    if parsed.drivername in _POSTGRES_DRIVERS:
        if importlib.util.find_spec("psycopg") is None:
            raise ConfigError(
                f"{shown} names a PostgreSQL ledger, which needs psycopg: pip install 'amem[postgres]'"
            )
        if parsed.drivername == _POSTGRES_DRIVER:
            return url
        return parsed.set(drivername=_POSTGRES_DRIVER).render_as_string(hide_password=False)
    if parsed.drivername in _SQLITE_DRIVERS:
        return _absolute_sqlite_url(url)
    raise ConfigError(f"{shown} names a {parsed.drivername} database: {SUPPORTED_LEDGERS}")


def _absolute_sqlite_url(url: str) -> str:
    """``url`` (a SQLite URL) naming its file by an absolute path; in memory or a ``file:`` URI as is."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    database = parsed.database
    if not database or database == ":memory:" or str(parsed.query.get("uri", "")).lower() in ("true", "1"):
        return url
    path = Path(database)
    if path.is_absolute():
        return url
    return parsed.set(database=str(home_path(path))).render_as_string(hide_password=False)


def _password_hidden(text: str) -> str:
    """A URL that could not be read, its password (USER:PASSWORD@) hidden, to be shown in a message."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", text)


def _notes_or_all(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    """A count of notes from ``env[name]``: a whole number, or 'all' (None); unset or blank: ``default``."""
    value = env.get(name)
    if value is None or not value.strip():
        return default
    if value.strip().lower() == "all":
        return None
    least, most = NOTES_COUNT_RANGE
    try:
        count = int(value)
    except ValueError:
        count = least - 1
    if not least <= count <= most:
        raise ConfigError(
            f"{name}={value!r}: give a whole number of notes up to {most:,} (0: no keyword side) or 'all'"
        )
    return count


def _whole(env: Mapping[str, str], name: str, default: int, allowed: tuple[int, int]) -> int:
    """A count from ``env[name]``, within ``allowed`` (least, most); unset or blank: ``default``. A
    typo ("20k", "five", "2.5") or a number out of range is the user's to fix, so the message names
    the variable and the range, rather than failing later as a bug in amem."""
    value = env.get(name)
    if value is None or not value.strip():
        return default
    least, most = allowed
    try:
        count = int(value.strip())
    except ValueError:
        count = least - 1
    if not least <= count <= most:
        wanted = {0: "a whole number, 0 or more", 1: "a positive whole number"}.get(
            least, f"a whole number of at least {least:,}"
        )
        raise ConfigError(f"{name}={value!r}: give {wanted}, up to {most:,} (the default is {default})")
    return count


def _seconds(
    env: Mapping[str, str],
    name: str,
    default: float,
    allowed: tuple[float, float],
    *,
    allow_zero: bool = False,
) -> float:
    """A number of seconds from ``env[name]``, within ``allowed`` (least, most; zero only if
    ``allow_zero``); unset or blank: ``default``."""
    value = env.get(name)
    if value is None or not value.strip():
        return default
    least, most = allowed
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not math.isfinite(number) or not least <= number <= most or (number == 0 and not allow_zero):
        kind = "non-negative" if allow_zero else "positive"
        raise ConfigError(
            f"{name}={value!r}: give a {kind} number of seconds, from {least:g} to {most:,g} "
            f"(the default is {default:g})"
        )
    return number


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of the SQLite file ``path``, escaped: in ``f"sqlite:///{path}"`` a "?"
    of the path starts the options, and "%41" reads as "A", so another file would be opened. Only
    those characters are escaped (and "#"): a path with spaces still reads as itself."""
    escaped = str(path).replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    return f"sqlite:///{escaped}"
