"""Settings from the environment (AMEM_*), with defaults that work offline on a fresh machine."""

from __future__ import annotations

import math
import os
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
#: Model calls add_notes and reprocess make at once with a remote model (the offline analyst runs
#: on this machine's CPU and so one at a time).
DEFAULT_LLM_CONCURRENCY = 4


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=lambda: Path(STORE_DIR_NAME))
    #: Which rule chose ``home``: one of the HOME_FROM_* words above.
    home_source: str = HOME_FROM_OPTION
    database_url_override: str | None = None
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

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        home, home_source = find_home(env.get("AMEM_HOME") or None)
        settings = cls(
            home=home,
            home_source=home_source,
            database_url_override=env.get("AMEM_DATABASE_URL") or None,
            policy_path=env.get("AMEM_POLICY") or None,
            llm_model=env.get("AMEM_LLM_MODEL") or None,
            embedding_model=env.get("AMEM_EMBEDDING_MODEL") or None,
            chroma_url=env.get("AMEM_CHROMA_URL") or None,
            max_content_chars=_whole(env, "AMEM_MAX_CONTENT_CHARS", DEFAULT_MAX_CONTENT_CHARS, least=1),
            link_k=_whole(env, "AMEM_LINK_K", 5, least=0),
            llm_concurrency=_whole(env, "AMEM_LLM_CONCURRENCY", DEFAULT_LLM_CONCURRENCY, least=1),
            link_keyword_window=_notes_or_all(env, "AMEM_LINK_KEYWORD_WINDOW", DEFAULT_LINK_KEYWORD_WINDOW),
            link_keyword_scope_limit=_notes_or_all(
                env, "AMEM_LINK_KEYWORD_SCOPE_LIMIT", DEFAULT_LINK_KEYWORD_SCOPE_LIMIT
            ),
            worker_lease_seconds=_positive(env, "AMEM_WORKER_LEASE_SECONDS", 120.0),
            llm_transient_retries=_whole(env, "AMEM_LLM_TRANSIENT_RETRIES", 4, least=0),
            llm_retry_wait=_positive(env, "AMEM_LLM_RETRY_WAIT", 1.0, allow_zero=True),
        )
        clean = {k: v for k, v in overrides.items() if v is not None}
        if "home" in clean:
            clean["home"] = Path(str(clean["home"]))
            clean.setdefault("home_source", HOME_FROM_OPTION)
        settings = replace(settings, **clean)  # type: ignore[arg-type]
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
        return Path(explicit), HOME_FROM_ENV
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / STORE_DIR_NAME
        if candidate.is_dir():
            return candidate, HOME_FROM_NEAREST
    from platformdirs import user_data_path

    return user_data_path("amem", appauthor=False), HOME_FROM_USER_DIR


def _notes_or_all(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    """A count of notes from ``env[name]``: a whole number, or 'all' (None); unset or blank: ``default``."""
    value = env.get(name)
    if value is None or not value.strip():
        return default
    if value.strip().lower() == "all":
        return None
    try:
        count = int(value)
    except ValueError:
        count = -1
    if count < 0:
        raise ConfigError(f"{name}={value!r}: give a whole number of notes (0: no keyword side) or 'all'")
    return count


def _whole(env: Mapping[str, str], name: str, default: int, *, least: int) -> int:
    """A count from ``env[name]``, at least ``least``; unset or blank: ``default``. A typo ("20k",
    "five", "2.5") or a number out of range is the user's to fix, so the message names the variable
    and what it takes, rather than failing later as a bug in amem."""
    value = env.get(name)
    if value is None or not value.strip():
        return default
    try:
        count = int(value.strip())
    except ValueError:
        count = least - 1
    if count < least:
        wanted = {0: "a whole number, 0 or more", 1: "a positive whole number"}.get(
            least, f"a whole number of at least {least}"
        )
        raise ConfigError(f"{name}={value!r}: give {wanted} (the default is {default})")
    return count


def _positive(env: Mapping[str, str], name: str, default: float, *, allow_zero: bool = False) -> float:
    """A number of seconds from ``env[name]``; unset or blank: ``default``."""
    value = env.get(name)
    if value is None or not value.strip():
        return default
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        raise ConfigError(f"{name}={value!r}: give a {'non-negative' if allow_zero else 'positive'} number")
    return number


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of the SQLite file ``path``, escaped: in ``f"sqlite:///{path}"`` a "?"
    of the path starts the options, and "%41" reads as "A", so another file would be opened. Only
    those characters are escaped (and "#"): a path with spaces still reads as itself."""
    escaped = str(path).replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    return f"sqlite:///{escaped}"
