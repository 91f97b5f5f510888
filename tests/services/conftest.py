"""Fixtures of the service tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from amem.memory import Memory

MODEL = "scripted/test-model"


@pytest.fixture
def mem(database_url: str, tmp_path: Path, scripted_llm) -> Iterator[Memory]:
    """A Memory whose model is the scripted LLM, behind the real litellm path."""
    m = Memory(tmp_path / "home", database_url=database_url, llm=MODEL)
    try:
        yield m
    finally:
        m.close()
