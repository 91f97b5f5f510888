"""An input is kept whatever becomes of the index: add_note and add_notes commit the raw logs before
anything needs the index, so one that cannot be opened fails the inputs, their raw logs kept and
named, as an index write failure does; `amem reprocess` completes them once it is fixed."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.errors import AnalysisPendingError
from amem.memory import Memory
from tests.factories import make_note


def damaged_index(memory: Memory) -> Memory:
    """``memory``'s store reopened after its index database file was overwritten with zeros."""
    make_note(memory, "Acme renewed for three years")
    memory.search("renewal", k=1, scope="acme")
    memory.close()
    database = memory.settings.chroma_path / "chroma.sqlite3"
    database.write_bytes(bytes(database.stat().st_size))
    return Memory(memory.home, database_url=memory.settings.database_url)


def test_inputs_are_kept_and_marked_failed_when_the_index_cannot_be_opened(memory: Memory) -> None:
    """The pipeline opened the index before recording anything: add_note raised InternalError "file
    is not a database", a second call AttributeError ('RustBindingsAPI' object has no attribute
    'bindings'), and neither input was kept."""
    with damaged_index(memory) as again:
        before = again.count_raw_logs()
        with pytest.raises(AnalysisPendingError, match=r"raw log r_\w+ is kept") as pending:
            again.add_note("Acme signed the order form for 40 seats", actor="agent:bot", scope="acme")
        (outcome,) = again.add_notes(
            [{"content": "Acme wants a QBR in May", "scope": "acme"}], actor="agent:bot"
        )

        assert again.count_raw_logs() == before + 2
        for raw_log_id in (pending.value.raw_log_id, outcome.raw_log_id):
            status = again.input_status(raw_log_id)
            assert status.status == "failed" and status.error is not None
            assert str(again.settings.chroma_path) in status.error and "amem reindex" in status.error
        assert outcome.note_id is None and outcome.error is not None and "is damaged" in outcome.error


def test_inputs_kept_while_the_index_was_damaged_are_completed_after_reindex(memory: Memory) -> None:
    with damaged_index(memory) as again:
        with pytest.raises(AnalysisPendingError) as pending:
            again.add_note("Acme signed the order form for 40 seats", actor="agent:bot", scope="acme")
        assert again.reindex() == 1  # the damaged directory deleted, a new one built from the ledger
        done = again.reprocess()
        note_id = again.input_status(pending.value.raw_log_id).note_id
        assert note_id is not None and note_id in done
        assert [r.note_id for r in again.search("order form seats", k=1, scope="acme")] == [note_id]
    assert list(Path(memory.home).glob("*index.removing-*")) == []  # nothing of the damaged one is left
