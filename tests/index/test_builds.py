"""A rebuild of the index (an erasure's, `amem reindex`) is written beside the build in use: other
processes go on searching that one and adopt the new build when it is complete, without applying
the ledger's changes again; two rebuilds at once, or one that dies half-way, leave one build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from amem.domain.models import utcnow
from amem.index.chroma import collection_name, marker_name
from amem.index.sync import INDEXING
from amem.ledger import index_queries
from amem.memory import Memory
from tests.conftest import deleted_files_held
from tests.factories import make_note, signed_in

REPO = Path(__file__).resolve().parents[2]
TEXTS = [
    "Stark renewed for three years at $49 per seat",
    "Stark asked for a security questionnaire before renewal",
    "Stark's admin left the company in May",
    "Stark expands to the Berlin office next quarter",
    "Invoice 1234 for Stark is overdue",
    "Stark wants SSO for the whole support team",
]
QUERY = "renewal price per seat"

#: Another process open on the store, as a server is: searches when asked (a line on stdin) and
#: prints what it found and what its view of the index did.
FOLLOWER = """
import json, sys
from amem.memory import Memory
from tests.conftest import deleted_files_held

home, url, query = sys.argv[1:4]
with Memory(home, database_url=url) as memory:
    search, sync = memory.search_service, memory.search_service.sync
    written = []
    upsert = search.index.upsert

    def counted(entries, vectors):
        written.extend(e.note_id for e in entries)
        upsert(entries, vectors)

    search.index.upsert = counted

    def look():
        hits = memory.search(query, k=10, scope="acme")
        print(json.dumps({
            "hits": sorted(h.note_id for h in hits),
            "vector": sorted(h.note_id for h in hits if "vector" in h.matched_by),
            "build": search.index.build,
            "staged": len(sync.staged()),
            "embedded": sync.embedded,
            "written": len(written),
            "removed_files_held": deleted_files_held(memory.settings.chroma_path),
        }), flush=True)

    look()
    for line in sys.stdin:
        if line.strip() == "record":
            search.catch_up()  # a recording catch-up: what a worker's write makes
        look()
"""


class Follower:
    """The FOLLOWER script in a process of its own, asked to search line by line."""

    def __init__(self, memory: Memory) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", FOLLOWER, str(memory.home), memory.settings.database_url, QUERY],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        self.first = self._read()

    def look(self, *, record: bool = False) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("record\n" if record else "look\n")
        self.process.stdin.flush()
        return self._read()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            _, err = self.process.communicate(timeout=60)
            raise AssertionError(f"the follower process ended: {err[-2000:]}")
        return json.loads(line)

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()  # the follower's loop ends, and it closes its memory
        err = self.process.stderr.read()
        assert self.process.wait(timeout=120) == 0, err[-2000:]


@pytest.fixture
def stored(memory: Memory) -> Iterator[list[str]]:
    """Six notes of one account, indexed."""
    notes = [make_note(memory, text).id for text in TEXTS]
    memory.search(QUERY, k=1, scope="acme")
    yield sorted(notes)


@pytest.fixture
def follower(memory: Memory, stored: list[str]) -> Iterator[Follower]:
    process = Follower(memory)
    try:
        yield process
    finally:
        if process.process.poll() is None:
            process.close()


def recorded_build(memory: Memory) -> str:
    with memory.ledger.read() as tx:
        row = index_queries.position(tx, memory.search_service.sync.name)
    assert row is not None
    return row.instance


def store_collections(memory: Memory) -> set[str]:
    client = memory.search_service.index.client
    return {c.name for c in client.list_collections() if c.name.startswith("amem_notes")}


def vector_files(memory: Memory) -> list[Path]:
    """Chroma's vector segment directories (one per collection that holds entries)."""
    return [p for p in memory.settings.chroma_path.iterdir() if p.is_dir()]


def one_build(memory: Memory, build: str) -> set[str]:
    """The collections a single build of the store's one account consists of."""
    return {collection_name("amem_notes", build, "acme"), marker_name("amem_notes", build)}


def test_searches_go_on_from_the_build_in_use_while_another_process_rebuilds(
    memory: Memory, stored: list[str], follower: Follower
) -> None:
    old = memory.search_service.index.build
    assert follower.first["hits"] == stored and follower.first["build"] == old
    during: list[dict[str, Any]] = []

    def progress(task: str, done: int, total: int | None) -> None:
        if done and not during:  # the new build holds the notes; the old one is still recorded
            during.append(follower.look())

    assert memory.reindex(progress=progress) == len(stored)
    new = memory.search_service.index.build
    assert new != old and recorded_build(memory) == new

    # While the rebuild ran, the other process searched the build in use, whole, and did nothing else.
    assert during and during[0]["build"] == old
    assert during[0]["hits"] == stored and during[0]["vector"] == stored
    assert during[0]["staged"] == 0 and during[0]["written"] == 0

    # After it, the other process adopts the new build where it was recorded: nothing is applied
    # again, staged, written or embedded, and every note is still found by meaning.
    after = follower.look()
    assert after["build"] == new and after["hits"] == stored and after["vector"] == stored
    assert after["staged"] == 0 and after["written"] == 0
    assert after["embedded"] == follower.first["embedded"]
    recorded = follower.look(record=True)
    assert recorded["written"] == 0 and recorded["build"] == new
    assert store_collections(memory) == one_build(memory, new)
    assert len(vector_files(memory)) == 1  # the replaced build's vectors left the disk too
    if Path("/proc/self/fd").is_dir():  # ... and the other process let go of them on adopting the new one
        assert after["removed_files_held"] == {}


def test_a_process_adopting_a_rebuild_applies_only_what_came_after_it(
    memory: Memory, stored: list[str], follower: Follower
) -> None:
    memory.reindex()
    added = make_note(memory, "Stark's renewal price per seat goes to $55 next year")
    after = follower.look()
    assert after["build"] == memory.search_service.index.build
    assert added.id in after["vector"] and set(stored) <= set(after["hits"])
    assert after["staged"] == 1 and after["written"] == 0  # the one note after the rebuild, beside it


def test_of_two_rebuilds_at_once_the_one_that_read_the_later_ledger_stays(
    memory: Memory, stored: list[str]
) -> None:
    """Another process's rebuild that began after this one's is recorded first: it holds all this
    one would, and is adopted."""
    other = Memory(memory.home, database_url=memory.settings.database_url)
    builds: list[str] = []

    def progress(task: str, done: int, total: int | None) -> None:
        if done and not builds:  # another rebuild starts and ends while this one is half-way
            other.reindex()
            builds.append(other.search_service.index.build)

    try:
        assert memory.reindex(progress=progress) == len(stored)
    finally:
        other.close()
    assert builds and memory.search_service.index.build == builds[0] == recorded_build(memory)
    assert store_collections(memory) == one_build(memory, builds[0])
    assert sorted(r.note_id for r in memory.search(QUERY, k=10, scope="acme")) == stored


class HeldRebuild:
    """Another process's rebuild (a second Memory, in a thread), held after its first page until
    ``release`` is called from this one's progress: it read the ledger first, and is recorded
    first."""

    def __init__(self, memory: Memory) -> None:
        self.other = Memory(memory.home, database_url=memory.settings.database_url)
        self.reading, self.may_finish = threading.Event(), threading.Event()
        self.builds: list[str] = []
        self.thread = threading.Thread(target=self._rebuild)
        self.thread.start()
        assert self.reading.wait(timeout=120)

    def _held(self, task: str, done: int, total: int | None) -> None:
        if done and not self.reading.is_set():
            self.reading.set()
            assert self.may_finish.wait(timeout=120)

    def _rebuild(self) -> None:
        self.other.reindex(progress=self._held)
        self.builds.append(self.other.search_service.index.build)

    def release(self, task: str, done: int, total: int | None) -> None:
        """A progress callback: once this process's rebuild has written a page, the other ends."""
        if done and not self.may_finish.is_set():
            self.may_finish.set()
            self.thread.join(timeout=120)

    def close(self) -> None:
        self.may_finish.set()
        self.thread.join(timeout=120)
        self.other.close()


def made_again(memory: Memory, other: HeldRebuild) -> None:
    """This process's rebuild was made again after the other's was recorded, and alone stays."""
    final = memory.search_service.index.build
    assert other.builds and final != other.builds[0] and recorded_build(memory) == final
    assert store_collections(memory) == one_build(memory, final)


def test_a_rebuild_is_made_again_when_one_that_read_an_older_ledger_replaced_it(
    memory: Memory, stored: list[str]
) -> None:
    """As an erasure's rebuild must: another process's rebuild that read the ledger before this
    one's change (there, a new note) is recorded first; it lacks that change, so this one builds
    again and its build stays."""
    other = HeldRebuild(memory)
    try:
        added = make_note(memory, "Stark's renewal price per seat goes to $55 next year")
        assert memory.reindex(progress=other.release) == len(stored) + 1
    finally:
        other.close()
    made_again(memory, other)
    hits = memory.search(QUERY, k=10, scope="acme")
    assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == sorted([*stored, added.id])


def test_a_rebuild_that_dies_half_way_leaves_the_build_in_use(memory: Memory, stored: list[str]) -> None:
    old = memory.search_service.index.build
    before = [(r.note_id, r.score) for r in memory.search(QUERY, k=10, scope="acme")]

    def progress(task: str, done: int, total: int | None) -> None:
        if done:
            raise KeyboardInterrupt  # the process is stopped

    with pytest.raises(KeyboardInterrupt):
        memory.reindex(progress=progress)
    assert memory.search_service.index.build == old and recorded_build(memory) == old
    assert [(r.note_id, r.score) for r in memory.search(QUERY, k=10, scope="acme")] == before
    assert len(store_collections(memory)) == 4  # the abandoned build's two collections, the old build's two
    with Memory(memory.home, database_url=memory.settings.database_url) as again:
        assert again.search_service.index.build == old  # a new process uses the recorded build
        assert [(r.note_id, r.score) for r in again.search(QUERY, k=10, scope="acme")] == before
    memory.reindex()
    assert store_collections(memory) == one_build(memory, memory.search_service.index.build)
    assert len(vector_files(memory)) == 1


def test_an_index_in_an_older_amems_layout_is_rebuilt_in_this_one(memory: Memory, stored: list[str]) -> None:
    """An older amem named the store's collections after the store and the scope, and kept the
    build's id in a collection named after the store: a new open rebuilds and drops them."""
    index = memory.search_service.index
    vectors = index.client.get_collection(collection_name("amem_notes", index.build, "acme")).get(
        include=["embeddings", "metadatas"]
    )
    name = memory.search_service.sync.name
    with memory.ledger.read() as tx:
        row = index_queries.position(tx, name)
    assert row is not None
    with index_queries.derived_write(memory.ledger) as tx:
        legacy_row = index_queries.StoredPosition(row.last_seq, "0" * 32, row.built_by, row.ledger_id)
        assert index_queries.switch(tx, name, row.instance, legacy_row, utcnow())
    memory.close()
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(memory.settings.chroma_path), settings=Settings(anonymized_telemetry=False)
    )
    try:
        for c in client.list_collections():
            client.delete_collection(c.name)
        client.create_collection("amem_notes", metadata={"amem_instance": "0" * 32}, embedding_function=None)
        legacy = client.create_collection(
            "amem_notes.acme.0123456789abcdef",
            configuration={"hnsw": {"space": "cosine"}},
            embedding_function=None,
        )
        legacy.add(ids=vectors["ids"], embeddings=vectors["embeddings"], metadatas=vectors["metadatas"])
    finally:
        client.close()

    with Memory(memory.home, database_url=memory.settings.database_url) as again:
        build = again.search_service.index.build
        assert build != "0" * 32 and recorded_build(again) == build
        assert store_collections(again) == one_build(again, build)
        assert sorted(r.note_id for r in again.search(QUERY, k=10, scope="acme")) == stored


def test_a_rebuild_begun_just_after_another_was_recorded_is_not_dropped_by_it(
    memory: Memory, stored: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorded build drops the builds that can no longer be recorded, not one begun to
    replace it: that one is recorded next, whole."""
    other = Memory(memory.home, database_url=memory.settings.database_url)
    other.search(QUERY, k=1, scope="acme")
    index = memory.search_service.index
    drop_builds = index.drop_builds
    begun: list[str] = []

    def while_the_other_builds(task: str, done: int, total: int | None) -> None:
        if done and not begun:  # the other rebuild has written its first page: drop now
            begun.append(recorded_build(memory))
            drop_builds(lambda: begun[0], ledger=identity[0])

    identity: list[str] = []

    def drop_late(recorded: Any, *, ledger: str) -> int:
        identity.append(ledger)
        other.reindex(progress=while_the_other_builds)  # begins once this one is recorded
        return drop_builds(recorded, ledger=ledger)

    made: list[str] = []
    building = other.search_service.index.building

    def counted(build: str, origin: Any) -> Any:
        made.append(build)
        return building(build, origin)

    monkeypatch.setattr(index, "drop_builds", drop_late)
    monkeypatch.setattr(other.search_service.index, "building", counted)
    try:
        memory.reindex()
        final = other.search_service.index.build
        assert begun and begun[0] != final and made == [final]  # made once, never dropped
        assert memory.search_service.index.build == final  # the first builder adopted it too
    finally:
        other.close()
    with Memory(memory.home, database_url=memory.settings.database_url) as again:
        assert again.search_service.index.build == final == recorded_build(again)
        hits = again.search(QUERY, k=10, scope="acme")
        assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == stored


def test_a_rebuild_for_an_erasure_that_added_no_change_is_made_again(
    memory: Memory, stored: list[str], reviewer_passwords: dict[str, str]
) -> None:
    """An erasure need not add a change (an input erased before it was analysed): a rebuild that
    began before it is not taken for the erasure's, though it read the same last change."""
    other = HeldRebuild(memory)
    try:
        queued = memory.add_note(
            "Mrs Quibblestone asked us to call", actor="agent:x", scope="acme", wait=False
        )
        with memory.ledger.read() as tx:
            head = tx.last_change_seq()
        memory.erase(
            by=signed_in(memory, "alice"), reason="request", raw_log_id=queued, progress=other.release
        )
        with memory.ledger.read() as tx:
            assert tx.last_change_seq() == head  # the erasure added no change
    finally:
        other.close()
    made_again(memory, other)


def test_processes_building_a_new_stores_index_at_once_settle_on_one_build(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes open a new, empty store together and both build its index: the one whose
    build is recorded second adopts the first's, as both began from the same empty ledger."""
    from amem.index.chroma import ChromaIndex

    other = Memory(memory.home, database_url=memory.settings.database_url)
    building = ChromaIndex.building
    others: list[str] = []

    def with_another(self: ChromaIndex, build: str, origin: Any) -> ChromaIndex:
        view = building(self, build, origin)
        if not others:
            others.append("")
            others[0] = str(other.search_service.index.build)  # opens: builds and is recorded first
        return view

    monkeypatch.setattr(ChromaIndex, "building", with_another)
    try:
        memory.search(QUERY, k=1, scope="acme")  # opens: builds, loses, adopts the other's
    finally:
        other.close()
    assert others[0] and memory.search_service.index.build == others[0] == recorded_build(memory)
    assert store_collections(memory) == {marker_name("amem_notes", others[0])}


def test_a_check_read_before_the_view_moved_on_never_takes_it_back(memory: Memory, stored: list[str]) -> None:
    """A search reads its check of the ledger before it takes the view's lock: read before
    another thread adopted a rebuild, it names the build that rebuild dropped."""
    sync = memory.search_service.sync
    with memory.ledger.read() as tx:
        stale = sync.check(tx)
    memory.reindex()  # the view adopts the new build; the old one is dropped
    new = memory.search_service.index.build
    with memory.ledger.read() as tx:
        sync.catch_up(record=False, tx=tx, checked=stale)
    assert memory.search_service.index.build == new
    hits = memory.search(QUERY, k=10, scope="acme")
    assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == stored


def test_a_check_naming_a_build_dropped_since_takes_the_view_to_the_recorded_one(
    memory: Memory, stored: list[str]
) -> None:
    """A search's check, read before its lock, names a build that another rebuild has replaced
    and dropped since, while another thread already moved the view on: the view stays on, or
    goes to, the build the ledger records."""
    sync = memory.search_service.sync
    with Memory(memory.home, database_url=memory.settings.database_url) as other:
        other.reindex()
        with memory.ledger.read() as tx:
            stale = sync.check(tx)  # names the build just made
        other.reindex()  # replaces it, and drops it
    sync.catch_up(record=False)  # another thread's search: the view moves to the recorded build
    with memory.ledger.read() as tx:
        sync.catch_up(record=False, tx=tx, checked=stale)
    assert memory.search_service.index.build == recorded_build(memory)
    hits = memory.search(QUERY, k=10, scope="acme")
    assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == stored


def test_builds_descended_from_the_recorded_one_are_kept_and_the_rest_dropped(memory: Memory) -> None:
    from amem.index.base import BuildOrigin

    index = memory.search_service.index
    in_use = index.build  # another ledger's, as far as this test's builds go
    # a0: an older amem's build (its marker names no ledger); the rest this ledger's ("mine")
    chain = {"a0": ("", ""), "b1": ("a0", "mine"), "c2": ("b1", "mine"), "d3": ("c2", "mine")}
    chain |= {"x1": ("a0", "mine"), "y9": ("gone", "mine")}
    # another ledger's builds on the same location, one from before builds named their ledger
    chain |= {"o1": ("", "theirs"), "o2": ("o1", "theirs"), "o3": ("", ""), "o4": ("a0", "theirs")}
    for build, (replaces, ledger) in chain.items():
        view = index.building(build, BuildOrigin(replaces, 0, 0, ledger))
        view.upsert([], np.zeros((0, 384), dtype=np.float32))
    index.drop_builds(
        lambda: "b1", ledger="mine"
    )  # b1 recorded: a0 and what replaced a0 otherwise can never be
    assert {n for n in store_collections(memory) if n.count(".") == 1} == {
        marker_name("amem_notes", b) for b in ("b1", "c2", "d3", "o1", "o2", "o3", "o4", in_use)
    }


def test_another_ledger_opened_on_the_same_index_location_leaves_this_ones_build(
    memory: Memory, stored: list[str], tmp_path: Path
) -> None:
    """A scratch database opened with the production store's home (or two stores on one Chroma
    server's default store) builds an index of its own beside this one's, and drops none of its
    builds: this store's searches keep their vector side."""
    build = recorded_build(memory)
    with Memory(memory.home, database_url=f"sqlite:///{tmp_path / 'scratch.sqlite3'}") as scratch:
        mine = make_note(scratch, "The scratch ledger's only note")
        found = scratch.search("scratch ledger", k=5, scope="acme")
        assert [r.note_id for r in found] == [mine.id] and scratch.search_service.index.build != build
    assert one_build(memory, build) <= store_collections(memory)
    hits = memory.search(QUERY, k=10, scope="acme")
    assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == stored
    with Memory(memory.home, database_url=memory.settings.database_url) as again:  # and on the next open
        assert again.search_service.index.build == build
        hits = again.search(QUERY, k=10, scope="acme")
        assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == stored


def test_a_build_in_use_deleted_behind_amems_back_is_reported_then_rebuilt(
    memory: Memory, stored: list[str]
) -> None:
    """The build the ledger records, deleted by something else than a rebuild (an older amem of
    another store on the same location, an emptied server): a search says the index is
    unavailable instead of answering nothing, and the next catch-up that writes rebuilds it."""
    from amem.index.chroma import IndexUnavailableError

    index = memory.search_service.index
    build = index.build
    for name in one_build(memory, build):
        index.client.delete_collection(name)
    with pytest.raises(IndexUnavailableError, match="gone"):
        memory.search(QUERY, k=10, scope="acme")
    added = make_note(memory, "Stark's champion moved to the Berlin office")
    memory.search_service.catch_up()
    assert recorded_build(memory) != build
    hits = memory.search(QUERY, k=10, scope="acme")
    assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == sorted([*stored, added.id])


def test_a_write_into_a_dropped_build_makes_no_collection(memory: Memory, stored: list[str]) -> None:
    """A write a process began before another process's rebuild (an erasure's) dropped its build,
    into an account it had not written before, leaves nothing behind in the index's files."""
    from amem.index.base import IndexEntry

    old = memory.search_service.index.build
    with Memory(memory.home, database_url=memory.settings.database_url) as other:
        other.reindex()
    index = memory.search_service.index
    assert index.build == old  # this process has not looked at the ledger since
    vector = np.ones((1, 384), dtype=np.float32) / np.sqrt(384)
    index.upsert([IndexEntry("n_late", {"scope": "globex", "invalid_at": 1e12})], vector)
    assert not [n for n in store_collections(memory) if n.startswith(f"amem_notes.{old}")]


def test_machines_sharing_a_ledger_each_keep_their_own_local_index(memory: Memory, tmp_path: Path) -> None:
    """A team's PostgreSQL ledger and each machine's own local index (two homes): each location has
    its own row, so neither takes the other's build for its own, and each finds every note."""
    other = Memory(tmp_path / "second-machine", database_url=memory.settings.database_url)
    try:
        first = memory.add_note("Acme wants SSO before the renewal", actor="agent:a", scope="acme")
        second = other.add_note("Acme asked about the SSO pricing", actor="agent:b", scope="acme")
        for mem in (memory, other):
            found = {h.note.id: h.matched_by for h in mem.search("SSO renewal pricing", 5, scope="acme")}
            assert set(found) == {first, second}
            assert all("vector" in how for how in found.values())
        with memory.ledger.read() as tx:
            rows = [n for n in (memory.search_service.sync.name, other.search_service.sync.name)]
            assert len(set(rows)) == 2 and all(index_queries.position(tx, n) for n in rows)
            identities = {index_queries.position(tx, n).ledger_id for n in rows}  # type: ignore[union-attr]
        assert len(identities) == 1  # one ledger, one identity, at both locations
    finally:
        other.close()


def test_an_older_amem_s_row_is_taken_over_by_its_location_without_a_rebuild(memory: Memory) -> None:
    """An older amem kept one row per ledger (``chroma:<store>``): the store upgraded in place takes
    it over for its own location and keeps the build it records, rebuilding nothing."""
    import sqlalchemy as sa

    from amem.ledger.tables import index_state

    note = memory.add_note("Acme wants SSO before the renewal", actor="agent:a", scope="acme")
    sync = memory.search_service.sync
    build, name, legacy = sync.index.build, sync.name, sync.legacy_name
    engine = memory.ledger.engine  # the engine outlives the Memory: it edits the ledger afterwards
    memory.close()
    with engine.begin() as conn:  # as the older amem left it
        conn.execute(sa.update(index_state).where(index_state.c.name == name).values(name=legacy))
    with Memory(memory.home, database_url=memory.settings.database_url) as again:
        assert again.search_service.sync.name == name and again.search_service.index.build == build
        hits = again.search("SSO renewal", 3, scope="acme")
        assert [h.note.id for h in hits] == [note] and "vector" in hits[0].matched_by


def reindex_elsewhere(memory: Memory) -> None:
    """`amem reindex` of ``memory``'s store, in a process of its own."""
    cli = "import sys; from amem.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["--database-url", memory.settings.database_url, "--home", str(memory.home), "reindex"]
    child = subprocess.run(
        [sys.executable, "-c", cli, *argv],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr


def test_searches_on_other_threads_go_on_while_a_process_lets_go_of_the_build_replaced(
    memory: Memory, stored: list[str]
) -> None:
    """A process adopting another process's build makes Chroma's bindings anew, to let go of the
    build replaced (its memory, its open files): searches on other threads meanwhile end on the
    old bindings or begin on the new ones, and every one finds the notes. (The threads search
    from the adoption on, after each rebuild: searches during another process's rebuild are the
    business of the tests above.)"""
    found: list[list[str]] = []
    failed: list[BaseException] = []

    def search() -> None:
        for _ in range(4):
            try:
                found.append(sorted(h.note_id for h in memory.search(QUERY, k=10, scope="acme")))
            except BaseException as exc:  # any failure is the finding
                failed.append(exc)
                return

    for _ in range(3):
        reindex_elsewhere(memory)
        found.clear()
        threads = [threading.Thread(target=search) for _ in range(3)]
        for thread in threads:
            thread.start()
        memory.search(QUERY, k=1, scope="acme")  # one of the four threads adopts it, and lets go
        for thread in threads:
            thread.join(timeout=120)
        assert failed == []
        wrong = [hits for hits in found if hits != stored]
        assert len(found) == 12 and not wrong, (len(found), [sorted(set(stored) ^ set(w)) for w in wrong[:3]])
        assert memory.search_service.index.build == recorded_build(memory)
    if Path("/proc/self/fd").is_dir():
        assert deleted_files_held(memory.settings.chroma_path) == {}


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads the open files from Linux's /proc")
def test_a_search_adopting_a_build_never_waits_for_a_writer_to_let_go_of_the_old_one(
    memory: Memory, stored: list[str]
) -> None:
    """Letting go of the build replaced needs no write in flight: while a writer holds the index
    (a worker's write, in this process or another), a search that adopts a new build answers at
    once and leaves it for a later search (it waited for the writer: every search of the server
    behind it waited too)."""
    reindex_elsewhere(memory)
    held, done = threading.Event(), threading.Event()

    def writer() -> None:
        with memory.search_service.index.writing():
            held.set()
            done.wait(timeout=120)

    holder = threading.Thread(target=writer)
    holder.start()
    found: list[list[str]] = []
    try:
        assert held.wait(timeout=60)
        searcher = threading.Thread(
            target=lambda: found.append(sorted(h.note_id for h in memory.search(QUERY, k=10, scope="acme")))
        )
        searcher.start()
        searcher.join(timeout=60)  # a guard against a hang, not a timing
        assert found == [stored], "the search waited for the writer"
        assert memory.search_service.index.build == recorded_build(memory)
        assert deleted_files_held(memory.settings.chroma_path)  # the old build: let go of later
    finally:
        done.set()
        holder.join(timeout=60)
    assert sorted(h.note_id for h in memory.search(QUERY, k=10, scope="acme")) == stored
    assert deleted_files_held(memory.settings.chroma_path) == {}


def test_a_search_whose_build_is_replaced_before_its_query_answers_from_the_recorded_one(
    memory: Memory, stored: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process's rebuild is recorded, and drops the build in use, after a search caught up
    (its view still on that build) and before it queries the index: the search answered nothing
    by meaning (a server's threads searching through `amem reindex` now and then got keyword hits
    alone). It follows the recorded build, catches up with what came after that build began (a
    note added meanwhile), and asks again."""
    other = HeldRebuild(memory)  # its build read the ledger before the note below
    try:
        added = make_note(memory, "Stark's renewal price per seat goes to $55 next year")
        sync = memory.search_service.sync
        caught_up = sync.catch_up

        def then_replaced(**kwargs: Any) -> int:
            touched = caught_up(**kwargs)
            if other.thread.is_alive():
                other.release(INDEXING, 1, None)  # recorded, and the build this search reads dropped
            return touched

        monkeypatch.setattr(sync, "catch_up", then_replaced)
        hits = memory.search(QUERY, k=10, scope="acme")
    finally:
        other.close()
    assert other.builds and recorded_build(memory) == other.builds[0]
    assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == sorted([*stored, added.id])
    assert memory.search_service.index.build == other.builds[0]


def test_a_build_failing_as_a_rebuild_drops_it_is_followed_not_taken_for_damaged(
    memory: Memory, stored: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma reads a collection another process is deleting as "Missing metadata segment" (an
    internal error): a search of the build a rebuild had just replaced failed as damaged files
    (BuildUnreadableError), and, when another thread of the process had adopted the new build
    meanwhile, marked the new build damaged: every write into it was refused, and the next
    catch-up that writes rebuilt the whole index for nothing."""
    from chromadb.errors import InternalError

    old = memory.search_service.index.build
    with Memory(memory.home, database_url=memory.settings.database_url) as server:
        index, sync = server.search_service.index, server.search_service.sync
        get_collection = index.client.get_collection
        doomed = collection_name("amem_notes", old, "acme")

        def being_deleted(name: str, **kwargs: Any) -> Any:
            if name == doomed and index.build == old:
                memory.reindex()  # another process's rebuild records its build, and drops this one
                sync.catch_up(record=False)  # another thread's search adopts the new build
                raise InternalError("Error getting collection: Missing field: [Missing metadata segment]")
            return get_collection(name, **kwargs)

        monkeypatch.setattr(index.client, "get_collection", being_deleted)
        hits = server.search(QUERY, k=10, scope="acme")
        new = recorded_build(memory)
        assert new != old and index.build == new
        assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == stored
        added = make_note(server, "Stark's renewal price per seat goes to $55 next year")
        server.search_service.catch_up()  # a write into the build in use: no rebuild
        assert recorded_build(memory) == new
        hits = server.search(QUERY, k=10, scope="acme")
        assert sorted(r.note_id for r in hits if "vector" in r.matched_by) == sorted([*stored, added.id])
