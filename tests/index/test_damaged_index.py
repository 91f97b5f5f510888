"""A local index whose files are damaged (a disk fault, a half-copied AMEM_HOME, a read-only
directory): the next open rebuilds what it can from the ledger, a search that meets damage says so
with the fix, and `amem reindex` rebuilds even an index whose database file is unreadable."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from amem.cli import main
from amem.index import hnsw_files
from amem.index.base import IndexUnavailableError
from amem.index.embedders import MiniLMEmbedder
from amem.memory import Memory
from tests.factories import make_note

REPO = Path(__file__).resolve().parents[2]
TEXTS = {
    "acme": ["Acme renewed for three years at 120 seats", "Acme asked for SSO through Okta"],
    "hooli": [
        "Hooli's champion adopted a beagle puppy",
        "Hooli wants forty more seats for the support team",
        "Hooli's CFO asked for quarterly invoicing",
    ],
}


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the offline embedder is asked to embed, in this process."""
    texts: list[str] = []
    real = MiniLMEmbedder.embed

    def counting(self: MiniLMEmbedder, batch: list[str]) -> object:
        texts.extend(batch)
        return real(self, batch)

    monkeypatch.setattr(MiniLMEmbedder, "embed", counting)
    return texts


def stored(memory: Memory) -> dict[str, list[str]]:
    """Notes of two accounts, written into the index; returns their ids by scope."""
    ids = {scope: [make_note(memory, text, scope).id for text in texts] for scope, texts in TEXTS.items()}
    memory.search_service.catch_up()  # written into the index's files, not only staged
    return ids


def reopen(memory: Memory) -> Memory:
    return Memory(memory.home, database_url=memory.settings.database_url)


def hooli_segment(memory: Memory) -> Path:
    """The vector segment directory of the scope hooli's collection."""
    db = sqlite3.connect(str(memory.settings.chroma_path / "chroma.sqlite3"))
    try:
        (segment,) = db.execute(
            "SELECT s.id FROM segments s JOIN collections c ON c.id = s.collection"
            " WHERE s.scope = 'VECTOR' AND c.name LIKE '%.hooli.%'"
        ).fetchone()
    finally:
        db.close()
    return memory.settings.chroma_path / str(segment)


def zeroed(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "vectors zeroed": lambda segment: zeroed(segment / "data_level0.bin"),
    "id map zeroed": lambda segment: zeroed(segment / "index_metadata.pickle"),
    "id map removed": lambda segment: (segment / "index_metadata.pickle").unlink(),
}


def hits(memory: Memory, query: str, scope: str = "hooli") -> list[tuple[str, list[str], float]]:
    return [
        (r.note_id, list(r.matched_by), round(r.score, 4)) for r in memory.search(query, k=3, scope=scope)
    ]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_an_index_whose_vector_files_were_zeroed_or_removed_is_rebuilt_on_open(
    memory: Memory, embedded: list[str], damage: str
) -> None:
    """Files that kept their size, or a header that still read right, passed the open's check:
    searches of that scope failed ("Error finding id ... a bug in amem") or silently answered other
    notes, and every add_note there failed, until someone ran `amem reindex`."""
    stored(memory)
    before = hits(memory, "a dog at home")
    memory.close()
    DAMAGE[damage](hooli_segment(memory))

    embedded.clear()
    with reopen(memory) as again:
        assert hits(again, "a dog at home") == before
        added = again.add_note("Hooli's champion got a second dog", actor="agent:bot", scope="hooli")
        assert added in [hit[0] for hit in hits(again, "a dog at home")]
    assert [t for t in embedded if t.startswith("Hooli's champion adopted")] == []  # stored vectors


def test_a_search_meeting_damaged_files_says_how_to_fix_it_and_a_write_rebuilds_them(
    memory: Memory,
) -> None:
    """Chroma's own error came through: "internal error (InternalError): Error executing plan:
    Internal error: Error finding id; this is a bug in amem". A catch-up that writes now rebuilds
    the build, as it does a build gone missing."""
    ids = stored(memory)
    memory.close()
    with reopen(memory) as again:
        again.search_service  # noqa: B018  (opened whole: the damage comes after)
        zeroed(hooli_segment(again) / "data_level0.bin")
        with pytest.raises(IndexUnavailableError, match="amem reindex") as refused:
            again.search("a dog at home", k=3, scope="hooli")
        assert "hooli" in str(refused.value) and "bug" not in str(refused.value)

        make_note(again, "Hooli's champion walks the beagle at noon", "hooli")
        again.search_service.catch_up()  # a recording catch-up that writes into the damaged scope
        found = [r.note_id for r in again.search("a dog at home", k=3, scope="hooli")]
        assert ids["hooli"][0] in found


def test_a_damaged_index_database_is_named_with_the_fix_and_reindex_builds_a_new_one(
    memory: Memory, embedded: list[str], capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A chroma.sqlite3 that is not a database failed every search, and `amem reindex` too, with
    "internal error (InternalError): ... file is not a database; this is a bug in amem" (exit 70)."""
    ids = stored(memory)
    before = hits(memory, "a dog at home")
    memory.close()
    database = memory.settings.chroma_path / "chroma.sqlite3"
    zeroed(database)
    cli = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    capsys.readouterr()

    assert main([*cli, "search", "dog", "--scope", "hooli"]) == 2
    err = capsys.readouterr().err
    assert str(memory.settings.chroma_path) in err and "amem reindex" in err and "bug" not in err

    embedded.clear()
    assert main([*cli, "reindex"]) == 0
    assert "reindexed 5 notes" in capsys.readouterr().out
    assert f"the vector index at {memory.settings.chroma_path} could not be read" in caplog.text
    assert "deleted it" in caplog.text  # no copy left that a later erasure would not reach
    assert (
        list(memory.home.glob("*index.removing-*")) == []
        and list(memory.home.glob("index.unreadable*")) == []
    )
    assert embedded == []  # rebuilt from the vectors the ledger keeps
    with reopen(memory) as again:
        assert hits(again, "a dog at home") == before
        assert sorted(r.note_id for r in again.search("seats", k=5, scope="acme")) == sorted(ids["acme"])


def test_the_open_check_passes_the_segments_chroma_writes(memory: Memory) -> None:
    """The open trusts a segment whose files look whole: every segment the installed Chroma writes
    must (one that did not would be loaded and queried at every open)."""
    stored(memory)
    memory.add_notes(
        [{"content": f"Initech call {i}: {i + 10} seats", "scope": "initech"} for i in range(120)],
        actor="agent:import",
    )
    memory.close()
    segments = [p for p in memory.settings.chroma_path.iterdir() if hnsw_files.is_segment(p)]
    assert len(segments) == 3 and all(hnsw_files.looks_whole(p) for p in segments)


#: A second `amem reindex` on the same store: it meets the damaged database file, says so, and waits
#: for a line on stdin before it deletes the directory it found damaged and builds.
SECOND_REINDEX = """
import json, sys
from amem.index import chroma
from amem.memory import Memory

home, url = sys.argv[1:3]
remove = chroma.remove_unreadable

def held(path):
    print("met the damage", flush=True)
    sys.stdin.readline()
    return remove(path)

chroma.remove_unreadable = held
with Memory(home, database_url=url) as memory:
    print(json.dumps({"indexed": memory.reindex()}), flush=True)
"""


def test_a_second_reindex_that_met_the_same_damage_keeps_the_index_the_first_built(memory: Memory) -> None:
    """Two `amem reindex` at once on a damaged chroma.sqlite3: the second, which met the damage too,
    deleted the new index the first had built meanwhile (or, caught between the first's removal and
    its new index, failed with FileNotFoundError). A server that had opened the first's index then
    failed every search (BuildMissingError) and every add_note until restarted."""
    ids = stored(memory)
    memory.close()
    zeroed(memory.settings.chroma_path / "chroma.sqlite3")
    second = subprocess.Popen(
        [sys.executable, "-c", SECOND_REINDEX, str(memory.home), memory.settings.database_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert second.stdin is not None and second.stdout is not None and second.stderr is not None
        line = second.stdout.readline()
        assert line.strip() == "met the damage", second.communicate(timeout=120)[1][-2000:]

        cli = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
        assert main([*cli, "reindex"]) == 0  # the first, which replaces the damaged directory
        with reopen(memory) as server:  # a running agent, on the first's index
            assert hits(server, "a dog at home")
            second.stdin.write("go\n")
            second.stdin.flush()
            out, err = second.communicate(timeout=300)
            assert second.returncode == 0, err[-2000:]
            assert json.loads(out.splitlines()[-1]) == {"indexed": 5}

            found = [hit[0] for hit in hits(server, "a dog at home")]
            assert ids["hooli"][0] in found
            added = server.add_note("Hooli's champion got a second dog", actor="agent:bot", scope="hooli")
            assert added in [hit[0] for hit in hits(server, "a dog at home")]
    finally:
        if second.poll() is None:
            second.kill()
            second.communicate()
