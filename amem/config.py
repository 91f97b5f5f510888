"""Settings from the environment (AMEM_*), with defaults that work offline on a fresh machine."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from amem.errors import ConfigError

DEFAULT_MAX_CONTENT_CHARS = 20_000
#: add_note's link step ranks, on its keyword side, only the scope's newest this many matching
#: notes (amem/services/search.py); "all" in AMEM_LINK_KEYWORD_WINDOW ranks every match.
DEFAULT_LINK_KEYWORD_WINDOW = 1000
#: Model calls add_notes and reprocess make at once with a remote model (the offline analyst runs
#: on this machine's CPU and so one at a time).
DEFAULT_LLM_CONCURRENCY = 4


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=lambda: Path(".amem"))
    database_url_override: str | None = None
    policy_path: str | None = None
    llm_model: str | None = None
    embedding_model: str | None = None
    chroma_url: str | None = None
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS
    link_k: int = 5
    llm_concurrency: int = DEFAULT_LLM_CONCURRENCY
    link_keyword_window: int | None = DEFAULT_LINK_KEYWORD_WINDOW

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        settings = cls(
            home=Path(env.get("AMEM_HOME", ".amem")),
            database_url_override=env.get("AMEM_DATABASE_URL") or None,
            policy_path=env.get("AMEM_POLICY") or None,
            llm_model=env.get("AMEM_LLM_MODEL") or None,
            embedding_model=env.get("AMEM_EMBEDDING_MODEL") or None,
            chroma_url=env.get("AMEM_CHROMA_URL") or None,
            max_content_chars=int(env.get("AMEM_MAX_CONTENT_CHARS", DEFAULT_MAX_CONTENT_CHARS)),
            link_k=int(env.get("AMEM_LINK_K", 5)),
            llm_concurrency=int(env.get("AMEM_LLM_CONCURRENCY", DEFAULT_LLM_CONCURRENCY)),
            link_keyword_window=_window(env.get("AMEM_LINK_KEYWORD_WINDOW")),
        )
        clean = {k: v for k, v in overrides.items() if v is not None}
        if "home" in clean:
            clean["home"] = Path(str(clean["home"]))
        return replace(settings, **clean)  # type: ignore[arg-type]

    @property
    def database_url(self) -> str:
        if self.database_url_override:
            return self.database_url_override
        return f"sqlite:///{(self.home / 'ledger.sqlite3').resolve()}"

    @property
    def chroma_path(self) -> Path:
        return self.home / "index"


def _window(value: str | None) -> int | None:
    if value is None or not value.strip():
        return DEFAULT_LINK_KEYWORD_WINDOW
    if value.strip().lower() == "all":
        return None
    try:
        window = int(value)
    except ValueError:
        window = -1
    if window < 0:
        raise ConfigError(
            f"AMEM_LINK_KEYWORD_WINDOW={value!r}: give a whole number of notes (0: no keyword side) or 'all'"
        )
    return window
