"""Settings from the environment (AMEM_*), with defaults that work offline on a fresh machine."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

DEFAULT_MAX_CONTENT_CHARS = 20_000
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
