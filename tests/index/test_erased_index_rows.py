"""After an erasure and its compaction, the local index's files hold nothing of the erased note:
not its vector, and not the metadata its entry carried (its tags)."""

from __future__ import annotations

import uuid
from pathlib import Path

from amem.memory import Memory
from tests.factories import make_note, signed_in


def files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()
    )


def test_an_erased_notes_tags_leave_the_index_files(memory: Memory) -> None:
    """Chroma deleting the replaced build's collections left each entry's tags in
    embedding_metadata_array, live rows that VACUUM keeps: the erased note's tag stayed readable in
    chroma.sqlite3."""
    secret = f"quibblestone-{uuid.uuid4().hex[:8]}"
    gone = make_note(memory, f"Mrs {secret.title()} of Acme insists on SSO", tags=["acme", secret])
    kept = make_note(memory, "Acme's auditor requires SSO before renewal", tags=["acme", "security"])
    assert secret in memory.read(gone.id).tags
    memory.search_service.catch_up()  # the entries, tags included, written into the index's files
    index = memory.settings.chroma_path
    assert files_holding(index, secret.encode()), "the test must see the tag in the index first"

    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=gone.raw_log_ids[0])

    assert files_holding(index, secret.encode()) == []
    assert [r.note_id for r in memory.search("SSO before renewal", k=1, scope="acme")] == [kept.id]
    assert memory.search("SSO", k=1, scope="acme", tags=["security"])[0].note_id == kept.id
