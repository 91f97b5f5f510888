"""The CLI on one ledger with its model and its embedder answering through litellm (the scripted
provider), for the import and interruption tests; a module defining its own ``amem`` (the plain
CLI of test_note_commands) uses that one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amem.memory import Memory
from tests.agents.scripted_answers import answer
from tests.cli.test_note_commands import Cli


@pytest.fixture
def amem(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    scripted_llm: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Cli]:
    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    scripted_llm.default = answer
    memory = Memory(tmp_path / "home", database_url=database_url)
    try:
        yield Cli(memory, capsys)
    finally:
        memory.close()
