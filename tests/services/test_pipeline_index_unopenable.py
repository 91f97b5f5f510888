"""An input is kept whatever becomes of the index: add_note and add_notes commit the raw logs before
anything needs the index, so one that cannot be opened fails the inputs, their raw logs kept and
named, as an index write failure does; `amem reprocess` completes them once it is fixed."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from amem.domain.models import utcnow
from amem.errors import AnalysisPendingError
from amem.memory import Memory
from amem.services.search import SearchService
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


def test_add_note_keeps_its_input_while_the_index_opens_for_longer_than_a_lease(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index was opened after the input was claimed but before its lease was renewed: an open
    outlasting the lease (a model load, a rebuild) let a worker take the input, and add_note raised
    AnalysisPendingError "its lease ended before its analysis did and another worker took it"."""
    queue = memory.queue
    queue.lease_seconds = 0.3  # renewed every 0.1 s
    now = [utcnow()]
    monkeypatch.setattr(queue, "clock", lambda: now[0])
    later = now[0] + timedelta(seconds=1)  # past add_note's first lease
    renewed_later = threading.Event()
    renew = queue.renew

    def renewing(owner: str, raw_log_ids: Sequence[str]) -> int:
        count = renew(owner, raw_log_ids)
        if queue.clock() >= later:
            renewed_later.set()
        return count

    monkeypatch.setattr(queue, "renew", renewing)
    taken_by_worker: list[list[str]] = []
    opened = Memory.search_service

    def slow_open(self: Memory) -> SearchService:
        if not taken_by_worker:  # the open outlasts the lease; a worker looks for inputs meanwhile
            now[0] = later
            renewed_later.wait(timeout=10)
            taken_by_worker.append([raw.id for raw in queue.claim("worker:other", 10)])
        return opened.fget(self)  # type: ignore[attr-defined]

    monkeypatch.setattr(Memory, "search_service", property(slow_open))
    note_id = memory.add_note("Acme signed the order form for 40 seats", actor="agent:bot", scope="acme")

    assert taken_by_worker == [[]]
    assert memory.read(note_id).content == "Acme signed the order form for 40 seats"
