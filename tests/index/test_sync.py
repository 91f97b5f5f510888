"""The index is derived from the ledger: it catches up after a crash, rebuilds from nothing, and
holds only applied values."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from amem.domain.models import utcnow
from amem.index.documents import document_text
from amem.ledger import store
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, signed_in

REPO = Path(__file__).resolve().parents[2]
#: Another agent's process: adds one note to the store and prints its id.
OTHER_PROCESS = """
import sys
from amem.memory import Memory
home, url, text = sys.argv[1:4]
with Memory(home, database_url=url) as memory:
    print(memory.add_note(text, actor="agent:other-process", scope="acme"), flush=True)
"""


def reopen(memory: Memory) -> Memory:
    return Memory(memory.home, database_url=memory.settings.database_url)


def entry(memory: Memory, note_id: str) -> tuple[np.ndarray | None, dict | None]:
    """The vector and metadata the index holds for a note (None when it holds none), once the
    notes a search's catch-up staged beside it are written into it (a recording catch-up)."""
    memory.search_service.catch_up()
    collection = memory.search_service.index._collection("acme", create=False)
    assert collection is not None
    got = collection.get(ids=[note_id], include=["embeddings", "metadatas"])
    if not got["ids"]:
        return None, None
    return np.asarray(got["embeddings"][0]), got["metadatas"][0]


def embeds(memory: Memory, vector: np.ndarray | None, text: str) -> bool:
    """Whether ``vector`` is the embedding of ``text`` (a note's document)."""
    expected = memory.search_service.sync.embedder.embed([text])[0]
    return vector is not None and bool(np.allclose(vector, expected, atol=1e-5))


def last_change(memory: Memory) -> int:
    with memory.ledger.read() as tx:
        return tx.last_change_seq()


def test_the_index_catches_up_after_a_crash_between_ledger_and_index(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_note(memory, "Initech signed the data processing agreement", tags=["contract"])
    assert memory.search("data processing agreement", k=1, scope="acme")[0].note_id == first.id
    absorbed = memory.search_service.sync.position.last_seq

    # The ledger commits, then the index write fails (the process "crashes" there).
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed before the index write")

    monkeypatch.setattr(memory.search_service.index, "upsert", crash)
    second = make_note(memory, "Initech wants SAML single sign-on", keywords=["SAML"])
    with pytest.raises(RuntimeError):
        memory.search_service.catch_up()
    assert memory.search_service.sync.stored_position().last_seq == absorbed < last_change(memory)
    monkeypatch.undo()
    memory.close()

    with reopen(memory) as again:  # opening catches up
        assert again.search_service.sync.stored_position().last_seq == last_change(again)
        found = again.search("SAML single sign-on", k=1, scope="acme")
        assert [r.note_id for r in found] == [second.id] and "vector" in found[0].matched_by


def test_the_ledger_never_records_a_staged_note_as_indexed(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search stages a note it finds changed beside the index, without writing it there. The
    ledger's position says what the stored index holds, so a write that keeps the position must
    not count the staged note: if the index then fails for good (a crash, a full disk), the next
    process catches that note up instead of trusting an index that never held it."""
    from tests.factories import said

    make_note(memory, "Initech signed the data processing agreement")
    memory.search("data processing agreement", k=1, scope="acme")
    # Written by a process that died before its index write: in the ledger, not in the index.
    orphan = said(memory, "The champion, Priya, adopted a beagle puppy last week")
    assert memory.search("beagle puppy", k=1, scope="acme")[0].note_id == orphan.id  # staged
    assert not held_without_catch_up(memory, orphan.id)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no space left on device")

    monkeypatch.setattr(memory.search_service.index, "upsert", broken)
    memory.add_note("Initech wants SAML single sign-on", actor="agent:crm", scope="acme")
    memory.close()  # its index writes fail to the end

    with reopen(memory) as again:  # opening catches up from the position the ledger keeps
        vector, _ = entry(again, orphan.id)
        assert embeds(again, vector, document_text(again.read(orphan.id)))
        found = again.search("a new dog at home", k=1, scope="acme")
        assert [r.note_id for r in found] == [orphan.id] and found[0].matched_by == ["vector"]


def test_add_notes_own_notes_wait_beside_the_index_and_close_writes_them(memory: Memory) -> None:
    """add_note stages its notes beside the index (Chroma writes one entry in about the time it
    writes ten); searches rank them meanwhile, and close writes them in, so the next process opens
    an index that holds everything, embedding nothing."""
    make_note(memory, "Initech signed the data processing agreement")
    memory.search("data processing agreement", k=1, scope="acme")
    added = [
        memory.add_note(text, actor="agent:crm", scope="acme")
        for text in ("The champion, Priya, adopted a beagle puppy last week", "Initech wants SAML")
    ]
    assert set(added) <= set(memory.search_service.sync.staged())
    assert not any(held_without_catch_up(memory, i) for i in added)
    found = memory.search("a new dog at home", k=1, scope="acme")
    assert [r.note_id for r in found] == [added[0]] and found[0].matched_by == ["vector"]
    memory.close()

    with reopen(memory) as again:
        assert again.search_service.sync.stored_position().last_seq == last_change(again)
        assert all(held_without_catch_up(again, i) for i in added)
        found = again.search("a new dog at home", k=1, scope="acme")
        assert [r.note_id for r in found] == [added[0]] and again.search_service.sync.embedded == 0


def held_without_catch_up(memory: Memory, note_id: str) -> bool:
    collection = memory.search_service.index._collection("acme", create=False)
    return collection is not None and bool(collection.get(ids=[note_id], include=[])["ids"])


def test_a_deleted_index_directory_is_rebuilt_with_the_same_results(memory: Memory) -> None:
    for i, text in enumerate(
        [
            "Stark renewed for three years",
            "Stark asked for a security questionnaire",
            "Stark's admin left the company",
            "Stark expands to the Berlin office",
            "Invoice 1234 for Stark is overdue",
        ]
    ):
        make_note(memory, text, keywords=[f"topic{i}"], tags=["stark"])
    queries = ["security review", "contract renewal", "billing problem", "new office"]
    before = {q: [(r.note_id, r.score) for r in memory.search(q, k=3, scope="acme")] for q in queries}
    memory.close()
    shutil.rmtree(Path(memory.settings.chroma_path))

    with reopen(memory) as again:
        assert again.search_service.index.count() == 5
        after = {q: [(r.note_id, r.score) for r in again.search(q, k=3, scope="acme")] for q in queries}
        assert after == before
        assert again.reindex() == 5
        assert {
            q: [(r.note_id, r.score) for r in again.search(q, k=3, scope="acme")] for q in queries
        } == before


def test_pending_proposals_never_reach_the_index(memory: Memory) -> None:
    note = make_note(memory, "Wayne Corp master agreement", tags=["contract"])
    # The policy holds context of contract notes for review.
    p = memory.propose(
        note.id, "context", "escrow clause under negotiation", reason="t", proposer=llm_proposer(memory)
    )
    assert p.status.value == "pending"
    found = memory.search("escrow", k=1, scope="acme")
    assert found[0].matched_by == ["vector"]  # the only note, but not by the pending word
    vector, _ = entry(memory, note.id)
    assert embeds(memory, vector, document_text(note))  # the note as it stood, without "escrow"

    memory.approve(
        p.id, reviewer=signed_in(memory, "alice")
    )  # approved elsewhere: the next search catches up
    found = memory.search("escrow", k=1, scope="acme")
    assert found[0].matched_by == ["vector", "keyword"]
    now = document_text(memory.read(note.id))
    assert "escrow clause" in now and embeds(memory, entry(memory, note.id)[0], now)


def test_metadata_follows_retirement_and_deletion(memory: Memory) -> None:
    note = make_note(memory, "Wonka pays by wire transfer", tags=["billing", "wire"])
    _, meta = entry(memory, note.id)
    assert meta is not None and meta["scope"] == "acme" and meta["tags"] == ["billing", "wire"]
    p = memory.propose(
        note.id, "invalid_at", "2020-01-01T00:00:00Z", reason="t", proposer=llm_proposer(memory)
    )
    memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    memory.search_service.catch_up()
    assert entry(memory, note.id)[1]["invalid_at"] == pytest.approx(1577836800.0)  # type: ignore[index]

    p = memory.delete(note.id, actor="bob", reason="wrong account")
    memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    assert memory.search_service.catch_up() == 1
    assert entry(memory, note.id) == (None, None)
    assert memory.search_service.index.count() == 0


def test_an_index_built_from_another_ledger_is_rebuilt(memory: Memory, tmp_path: Path) -> None:
    make_note(memory, "Notes of the first ledger about Acme's renewal")
    memory.search("renewal", k=1, scope="acme")
    memory.close()

    other_url = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    with Memory(memory.home, database_url=other_url) as other:  # same home, same index directory
        mine = make_note(other, "The second ledger's only note")
        found = other.search("renewal", k=5, scope="acme")
        assert [r.note_id for r in found] == [mine.id]
        assert other.search_service.index.count() == 1


def test_the_index_looks_past_many_retired_neighbours(memory: Memory) -> None:
    retired = [make_note(memory, "Seat price in dollars") for _ in range(20)]
    for note in retired:
        p = memory.propose(
            note.id, "invalid_at", "2024-01-01T00:00:00Z", reason="t", proposer=llm_proposer(memory)
        )
        memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    live = make_note(memory, "Seats are now priced in euros")
    service = memory.search_service
    service.catch_up()
    vector = service.embedder.embed(["seat price dollars"])[0]
    assert [h.note_id for h in service.index.query(vector, 1, scope="acme", alive_at=utcnow())] == [live.id]
    everything = service.index.query(vector, 30, scope="acme")
    assert len(everything) == 21 and everything[-1].note_id == live.id


def test_a_search_catches_up_without_writing_to_the_ledger(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_note(memory, "Tyrell's pilot starts in May")
    memory.search("pilot", k=1, scope="acme")
    late = make_note(memory, "Tyrell's replicant project needs GPUs", keywords=["GPU"])

    def refuse() -> None:
        raise AssertionError("search must not take the ledger's write lock")

    monkeypatch.setattr(memory.ledger, "write", refuse)
    found = memory.search("GPU capacity", k=1, scope="acme")
    assert [r.note_id for r in found] == [late.id] and "keyword" in found[0].matched_by
    assert memory.search_service.sync.position.last_seq == last_change(memory)


def test_a_note_another_process_added_is_found_by_meaning_in_an_open_memory(memory: Memory) -> None:
    """Chroma's embedded client never sees vectors another process writes into a collection it
    has loaded; each process catches its own index up from the ledger instead."""
    first = make_note(memory, "The champion, Priya, adopted a beagle puppy last week")
    assert [r.note_id for r in memory.search("beagle puppy", k=1, scope="acme")] == [first.id]

    child = subprocess.run(
        [
            sys.executable,
            "-c",
            OTHER_PROCESS,
            str(memory.home),
            memory.settings.database_url,
            "Hooli wants forty more seats for the support team",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    added = child.stdout.strip().splitlines()[-1]

    # No word in common with the note: only the vector side can find it.
    found = memory.search("additional licences for the helpdesk staff", k=1, scope="acme")
    assert [r.note_id for r in found] == [added] and found[0].matched_by == ["vector"]


#: A process opened afresh: prints the notes a search finds by their vector (one a line, nearest
#: first), for each query given.
VECTOR_HITS = """
import sys
from amem.memory import Memory
home, url, *queries = sys.argv[1:]
with Memory(home, database_url=url) as memory:
    for query in queries:
        hits = memory.search(query, k=1, scope="acme")
        print(" ".join(h.note_id for h in hits if "vector" in h.matched_by), flush=True)
"""


def in_another_process(memory: Memory, script: str, *args: str) -> list[str]:
    """Run ``script`` on the store in a process of its own; the lines it printed."""
    child = subprocess.run(
        [sys.executable, "-c", script, str(memory.home), memory.settings.database_url, *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    return child.stdout.rstrip("\n").split("\n")


def test_a_process_writing_its_staged_notes_last_keeps_the_notes_another_process_wrote(
    memory: Memory,
) -> None:
    """A local Chroma writes a collection's whole copy from memory back to its files: the process
    that wrote its staged notes last (on close) used to write a copy loaded before another
    process's note, which the ledger then recorded as indexed, so nothing ever applied it again.
    It now catches up with the ledger before it writes, under the index's write lock."""
    make_note(memory, "Acme prefers email over phone calls")
    memory.search("email", k=1, scope="acme")  # this process loads the collection
    mine = memory.add_note("Initech wants SAML single sign-on for all staff", actor="agent:a", scope="acme")
    assert mine in memory.search_service.sync.staged()  # written on close
    theirs = in_another_process(
        memory, OTHER_PROCESS, "Globex approved a renewal budget of fifty thousand euros"
    )
    memory.close()

    found = in_another_process(
        memory, VECTOR_HITS, "Globex renewal budget fifty thousand euros", "SAML sign-on"
    )
    assert found == [theirs[-1], mine]


def test_an_erasure_whose_rebuild_was_cut_short_is_rebuilt(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An erasure commits, then rebuilds the index; cut short there, a note the erasure redacted in
    place kept the vector of the erased text in the index for good. A process open meanwhile
    rebuilds at its next catch-up that writes, and the next open rebuilds too."""
    from amem.index.sync import IndexSync
    from tests.factories import said

    secret = "Quibblestone"
    gone = said(memory, f"Acme's champion is Mrs {secret}, she approves the budget")
    kept = said(memory, "Acme pays 42 dollars per seat on the Pro plan")
    memory.update(kept.id, actor="person:bob", reason="from the call", context=f"Mrs {secret} approves seats")
    memory.search_service.catch_up()
    open_meanwhile = reopen(memory)
    open_meanwhile.search("seats", k=1, scope="acme")

    def cut_short(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the embedder went away during 'indexing notes'")

    monkeypatch.setattr(IndexSync, "_build", cut_short)
    with pytest.raises(RuntimeError):
        memory.erase(by=signed_in(memory, "alice"), reason="GDPR art. 17", raw_log_id=gone.raw_log_ids[0])
    monkeypatch.undo()
    memory.close()
    now = document_text(open_meanwhile.read(kept.id))
    assert secret not in now

    try:  # the process open meanwhile: its next catch-up that writes
        vector, _ = entry(open_meanwhile, kept.id)
        assert embeds(open_meanwhile, vector, now)
    finally:
        open_meanwhile.close()
    with reopen(memory) as again:  # and it stays so for the next process
        vector, _ = entry(again, kept.id)
        assert embeds(again, vector, now)


def test_an_erasure_whose_rebuild_was_cut_short_is_rebuilt_on_the_next_open(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No process open meanwhile: the next open finds the build in use older than the erasure."""
    from amem.index.sync import IndexSync
    from tests.factories import said

    gone = said(memory, "Acme's champion is Mrs Quibblestone, she approves the budget")
    kept = said(memory, "Acme pays 42 dollars per seat on the Pro plan")
    memory.update(
        kept.id, actor="person:bob", reason="from the call", context="Mrs Quibblestone approves seats"
    )
    memory.search_service.catch_up()

    def cut_short(*args: object, **kwargs: object) -> None:
        raise RuntimeError("interrupted during 'indexing notes'")

    monkeypatch.setattr(IndexSync, "_build", cut_short)
    with pytest.raises(RuntimeError):
        memory.erase(by=signed_in(memory, "alice"), reason="GDPR art. 17", raw_log_id=gone.raw_log_ids[0])
    monkeypatch.undo()
    memory.close()

    with reopen(memory) as again:
        vector, _ = entry(again, kept.id)
        assert embeds(again, vector, document_text(again.read(kept.id)))


def test_an_index_whose_vector_files_were_truncated_is_rebuilt_on_open(memory: Memory) -> None:
    """Truncated segment files (a full disk, a half-copied AMEM_HOME): Chroma still counts the
    entries but answers no neighbour. The open notices and rebuilds from the stored vectors."""
    notes = [
        make_note(memory, text)
        for text in (
            "Initech wants SAML single sign-on",
            "Globex renewal budget approved",
            "Acme prefers email",
        )
    ]
    memory.search("single sign-on", k=1, scope="acme")
    memory.close()
    for segment in (p for p in Path(memory.settings.chroma_path).iterdir() if p.is_dir()):
        for name in ("data_level0.bin", "header.bin"):
            if (segment / name).exists():
                (segment / name).write_bytes((segment / name).read_bytes()[:10])

    with reopen(memory) as again:
        found = again.search("identity provider login", k=1, scope="acme")
        assert [r.note_id for r in found] == [notes[0].id] and found[0].matched_by == ["vector"]
        assert again.search_service.sync.embedded == 0  # rebuilt from the vectors the ledger keeps


def test_a_write_keeping_vectors_never_waits_for_a_catch_up_that_waits_for_that_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers of one process on SQLite: one inside its note transaction (the whole database's
    write lock) keeps its vectors while the other's catch-up, holding the view's lock, records the
    vector of a note another process changed. Before, the first waited for the view's lock and the
    second for the write lock until SQLite gave up ("database is locked", after 60 s, every writer
    of every process stalled meanwhile)."""
    monkeypatch.setattr(store, "SQLITE_WRITE_WAIT_S", 2.0)  # the stall, shortened: an error at once
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    worker = Memory(tmp_path / "home", database_url=url)
    try:
        note_id = worker.add_note("Initech wants SAML single sign-on", actor="agent:a", scope="acme")
        with Memory(tmp_path / "home", database_url=url) as editor:  # another process's edit
            editor.update(note_id, actor="agent:editor", keywords=["SAML", "Okta"])
        sync = worker.search_service.sync
        in_write, recording = threading.Event(), threading.Event()
        keep, record = worker.search_service.keep_vectors, sync._record

        def keep_while_the_other_records(tx: object, note_ids: list[str]) -> None:
            in_write.set()
            assert recording.wait(60), "the other worker's catch-up never came to record"
            keep(tx, note_ids)

        def record_under_the_views_lock(kept: list) -> None:
            recording.set()  # the catch-up holds the view's lock here
            record(kept)

        monkeypatch.setattr(worker.search_service, "keep_vectors", keep_while_the_other_records)
        monkeypatch.setattr(sync, "_record", record_under_the_views_lock)
        errors: dict[str, BaseException] = {}

        def run(name: str, step: Callable[[], object]) -> threading.Thread:
            def guarded() -> None:
                try:
                    step()
                except BaseException as exc:  # reported by the assertion below
                    errors[name] = exc

            thread = threading.Thread(target=guarded, name=name)
            thread.start()
            return thread

        writer = run(
            "worker 0", lambda: worker.add_note("Initech renews in May", actor="agent:a", scope="acme")
        )
        assert in_write.wait(120)
        catching_up = run("worker 1", worker.search_service.catch_up_after_write)
        writer.join(120)
        catching_up.join(120)
        assert not writer.is_alive() and not catching_up.is_alive()
        assert errors == {}
        assert worker.count_notes("acme") == 2 and worker.verify().ok
    finally:
        worker.close()
