"""Text a reader types or a link carries, checked before any query: one answer on both backends.

PostgreSQL refuses a statement holding a NUL, and the console showed its traceback with the SQL;
SQLite answered as if the text were ordinary. Both now answer as ``Memory.search`` does."""

from __future__ import annotations

import pytest

from amem.errors import InvalidInputError, NotFoundError
from amem.ledger.audit_queries import AuditQuery
from amem.memory import Memory
from tests.factories import make_note


@pytest.mark.parametrize("bad", ["n_\x00x", "n_\ud800"])
def test_an_id_no_note_can_have_reads_as_no_such_note(memory: Memory, bad: str) -> None:
    make_note(memory, "Acme: next step is to send the quote.")
    with pytest.raises(NotFoundError, match=r"does not exist \(character 3 is a (NUL|lone surrogate)"):
        memory.read(bad)


def test_find_notes_and_the_audit_trail_name_the_text_they_cannot_hold(memory: Memory) -> None:
    note = make_note(memory, "Acme: next step is to send the quote.")
    with pytest.raises(InvalidInputError, match=r"^text: character 6 is a NUL"):
        memory.find_notes(scope=note.scope, text="quote\x00")
    with pytest.raises(InvalidInputError, match=r"^scope: character 2 is a NUL"):
        memory.find_notes(scope="a\x00")
    bad = AuditQuery(note_id="n_\x00")
    for read in (memory.count_audit_events, memory.audit_events, memory.export_audit_csv):
        with pytest.raises(InvalidInputError, match=r"^note: character 3 is a NUL"):
            read(bad)
    with pytest.raises(InvalidInputError, match=r"^actor: character 1 is a lone surrogate"):
        memory.export_audit_jsonl(AuditQuery(actor="\udc80"))
    assert memory.find_notes(scope=note.scope, text="quote").total == 1  # good text as before
    assert memory.count_audit_events(AuditQuery(note_id=note.id)) >= 1
