"""The console on PostgreSQL, given text no ledger can hold (a NUL in a link, a search or a filter):
a message that says what is wrong, never the driver's traceback with the SQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amem.memory import Memory
from tests.approval_ui.conftest import open_console, plain
from tests.conftest import _postgres_schema_url
from tests.factories import make_note


@pytest.fixture
def pg_mem(console_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    """The console's store on a PostgreSQL schema of this test's own."""
    for url in _postgres_schema_url():
        monkeypatch.setenv("AMEM_DATABASE_URL", url)
        memory = Memory()
        try:
            yield memory
        finally:
            memory.close()


def _errors(at: object) -> str:
    return plain(" ".join(e.value for e in at.error))  # type: ignore[attr-defined]


def test_a_nul_in_a_note_link_the_find_box_or_the_audit_filter_is_named(pg_mem: Memory) -> None:
    make_note(pg_mem, "Acme: next step is to send the quote.")
    at = open_console("alice", "explorer", note="n_\x00x")  # ?note=n_%00x
    assert "No such note in this ledger: note n_\\x00x does not exist (character 3 is a NUL" in _errors(at)

    at = open_console("alice", "explorer")
    at.text_input(key="explorer_open_id").input("n_\x00").run()
    assert not at.exception and "character 3 is a NUL (U+0000)" in _errors(at)

    at = open_console("alice", "explorer")
    at.text_input(key="explorer_text").input("quote\x00").run()
    assert not at.exception and "Not searched: text: character 6 is a NUL (U+0000)" in _errors(at)

    at = open_console("alice", "audit")
    at.text_input(key="audit_note").input("n_\x00").run()
    assert not at.exception and "Nothing listed: note: character 3 is a NUL (U+0000)" in _errors(at)
