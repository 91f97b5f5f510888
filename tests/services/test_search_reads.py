"""What one search reads: the ledger in one transaction (the index's catch-up check, the full-text
side on SQLite, the hits and when they were said; the vector side's retirements come from the
index view, which reads them once and keeps them with each catch-up; on PostgreSQL the
full-text side in a read of its own, run while the query is embedded), the index without its
metadata; and that this changes nothing a user sees, on both backends: another process's new or
retired note shows at once, said-at times are the raw logs', concurrent searches agree."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from amem.domain.models import utcnow
from amem.index.chroma import ChromaIndex
from amem.ledger import search_queries
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, said, signed_in

REPO = Path(__file__).resolve().parents[2]
#: Another process: retires a note or brings it back (approved by a reviewer), or adds one, then exits.
OTHER_PROCESS = """
import sys
from amem.memory import Memory
from tests.factories import llm_proposer, signed_in
home, url, what, arg = sys.argv[1:5]
with Memory(home, database_url=url) as memory:
    if what in ("retire", "restore"):
        value = "2020-01-01T00:00:00Z" if what == "retire" else None
        why = "ended" if value else "still holds"
        p = memory.propose(arg, "invalid_at", value, reason=why, proposer=llm_proposer(memory))
        memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    elif what == "erase":  # the erasure alone: the moment before its index rebuild, or a crash in it
        from amem.services import erasure
        who = memory.governance.person(signed_in(memory, "alice"))
        erasure.erase(memory.ledger, memory.policy, by=who.id, reason="request", raw_log_id=arg)
    else:
        print(memory.add_note(arg, actor="agent:other-process", scope="acme"), flush=True)
"""


def other_process(memory: Memory, what: str, arg: str) -> str:
    child = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(memory.home), memory.settings.database_url, what, arg],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    return child.stdout.strip()


def count_reads(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads = [0]
    real = memory.ledger.read

    def read(*args: Any, **kwargs: Any) -> Any:
        reads[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(memory.ledger, "read", read)
    return reads


def test_a_search_reads_the_ledger_in_one_transaction_and_no_index_metadata(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_note(memory, "Initech renews its Analytics Pro plan in March", tags=["renewal"])
    second = make_note(
        memory,
        "Initech's champion is Bill, the head of finance",
        links=[{"note_id": first.id, "reason": "same deal"}],
    )
    memory.search("renewal", k=3, scope="acme")  # opened and caught up
    late = make_note(memory, "Initech asked about the renewal price")  # a change to catch up with
    reads = count_reads(memory, monkeypatch)
    asked: list[bool] = []
    real_query = ChromaIndex._query

    def query(self: ChromaIndex, *args: Any, with_metadata: bool = False, **kwargs: Any) -> Any:
        asked.append(with_metadata)
        return real_query(self, *args, with_metadata=with_metadata, **kwargs)

    monkeypatch.setattr(ChromaIndex, "_query", query)

    beside = 1 if memory.ledger.dialect == "postgresql" else 0  # the full-text query's own read
    hits = memory.search("Initech renewal", k=3, scope="acme")
    assert late.id in [h.note_id for h in hits]
    assert reads == [1 + beside] and asked == [False]
    agentic = memory.search_agentic("Initech renewal plan", k=1, scope="acme")
    assert [h.note_id for h in agentic][:1] == [first.id] and second.id in [h.note_id for h in agentic]
    assert reads == [2 + 2 * beside]


def test_a_note_another_process_retired_is_dropped_at_once(memory: Memory) -> None:
    """This process's index still holds the note as current; the ledger says it is retired."""
    old = make_note(memory, "Umbrella pays $30 per seat on the Basic plan")
    new = make_note(memory, "Umbrella moved to the Pro plan at $45 per seat")
    assert old.id in [h.note_id for h in memory.search("Umbrella seat price", k=5, scope="acme")]

    other_process(memory, "retire", old.id)

    hits = memory.search("Umbrella seat price", k=5, scope="acme")
    assert [h.note_id for h in hits] == [new.id]
    with_retired = memory.search("Umbrella seat price", k=5, scope="acme", include_retired=True)
    assert [h.note_id for h in with_retired] == [new.id, old.id]
    assert with_retired[1].retired and with_retired[1].invalid_at == datetime(2020, 1, 1, tzinfo=UTC)


def test_a_note_another_process_brings_back_shows_again_at_once(memory: Memory) -> None:
    """Retirements this process's index view knows are kept by its catch-ups: an invalid_at cleared
    elsewhere (a correction) makes the note current again for the next search."""
    old = make_note(memory, "Umbrella pays $30 per seat on the Basic plan")
    make_note(memory, "Umbrella moved to the Pro plan at $45 per seat")
    other_process(memory, "retire", old.id)
    assert old.id not in [h.note_id for h in memory.search("Umbrella seat price", k=5, scope="acme")]
    other_process(memory, "restore", old.id)
    hits = memory.search("Umbrella seat price", k=5, scope="acme")
    assert old.id in [h.note_id for h in hits] and not any(h.retired for h in hits)


def test_notes_retired_before_a_process_opened_stay_out_of_its_searches(
    database_url: str, tmp_path: Path
) -> None:
    """A process opening a store learns its retirements once, from the ledger, not from its index."""
    with Memory(tmp_path / "home", database_url=database_url) as first:
        retired = [make_note(first, f"Vandelay's seat price was ${30 + i}") for i in range(3)]
        current = make_note(first, "Vandelay's seat price is $49 now")
        first.search("seat price", k=5, scope="acme")  # its index holds all four, as current
        for note in retired:
            p = first.propose(
                note.id, "invalid_at", "2024-01-01T00:00:00Z", reason="replaced", proposer=llm_proposer(first)
            )
            first.approve(p.id, reviewer=signed_in(first, "alice"))
    with Memory(tmp_path / "home", database_url=database_url) as second:
        assert [h.note_id for h in second.search("Vandelay seat price", k=5, scope="acme")] == [current.id]
        every = second.search("Vandelay seat price", k=5, scope="acme", include_retired=True)
        assert {h.note_id for h in every if h.retired} == {n.id for n in retired}
        assert second.search_service.sync.retired_among([n.id for n in retired], utcnow()) == frozenset(
            n.id for n in retired
        )


def test_a_note_another_process_added_is_found_with_its_said_at(memory: Memory) -> None:
    make_note(memory, "Soylent's pilot starts in May")
    memory.search("pilot", k=1, scope="acme")
    added = other_process(memory, "add", "Soylent wants a second pilot in the Berlin office").splitlines()[-1]
    hits = memory.search("Soylent pilot Berlin", k=2, scope="acme")
    assert hits[0].note_id == added
    raw_id = memory.read(added).raw_log_ids[0]
    with memory.ledger.read() as tx:
        (raw,) = tx.get_raw_logs([raw_id])
    assert hits[0].said_at == raw.occurred_at


def test_the_vector_side_looks_past_many_notes_the_ledger_retired(memory: Memory) -> None:
    """More retired neighbours than the margin drawn (the index view knows them retired): Chroma
    filters on invalid_at after all."""
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
    asked: list[list[str]] = []

    def retired_then(ids: Any) -> frozenset[str]:
        asked.append(list(ids))
        return service.sync.retired_among(ids, utcnow())

    hits = service.index.query(vector, 1, scope="acme", alive_at=utcnow(), retired=retired_then)
    assert [h.note_id for h in hits] == [live.id]
    assert len(asked) == 1 and len(asked[0]) == 11 and set(asked[0]) <= {n.id for n in retired}


def test_a_search_reads_its_hits_k_at_a_time_as_of_a_past_moment_too(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hits' notes are read k at a time, best first. As of a past moment, the candidates that
    did not pass the filters then (their tags then) are dropped before they are ranked, as the
    index drops them for a search of the present (they must not take pool places, nor shape the
    scaling), so there too the first k read are the hits."""
    early = [make_note(memory, f"Initech renewal call {i}", tags=["renewal"]) for i in range(2)]
    later = [make_note(memory, f"Initech renewal renewal call call {i}") for i in range(4)]
    before = utcnow()
    for note in later:  # tagged since: as of ``before`` they fail the filter
        memory.propose(note.id, "tags", ["renewal"], reason="tagged later", proposer=llm_proposer(memory))
    asked: list[int] = []
    service = memory.search_service
    real = service._notes_said

    def notes_said(tx: Any, checked: Any, note_ids: Any) -> Any:
        asked.append(len(note_ids))
        return real(tx, checked, note_ids)

    monkeypatch.setattr(service, "_notes_said", notes_said)
    then = memory.search("Initech renewal call", k=2, scope="acme", tags=["renewal"], as_of=before)
    assert {h.note_id for h in then} == {n.id for n in early}
    assert asked == [2]  # those that lacked the tag then were never ranked
    asked.clear()
    now = memory.search("Initech renewal call", k=2, scope="acme")
    assert len(now) == 2 and {h.note_id for h in now} <= {n.id for n in early + later}
    assert asked == [2]


def test_a_search_as_of_a_past_moment_draws_a_bounded_number_of_candidates(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked as of a past moment for a tag few notes carried then, the search grew its draw until
    it held a full pool of notes that passed, or had drawn the whole scope: 0.3-0.5 s at 2,000
    notes, and growing with the store. It stops at ``AS_OF_MAX_DRAW`` candidates a side."""
    from amem.services import search as search_module

    rare = [make_note(memory, f"Hooli renewal of {n} seats", tags=["rare"]) for n in (40, 60)]
    for i in range(150):
        make_note(memory, f"Hooli call {i} about seats and renewal")
    before = utcnow()
    assert memory.search("Hooli renewal seats", k=5, scope="acme")  # the index holds them all
    monkeypatch.setattr(search_module, "AS_OF_MAX_DRAW", 200, raising=False)
    service = memory.search_service
    real = service._vector_drawn_once  # each query of the index, a retry after a rebuild included
    drawn: list[int] = []

    def vector_drawn(vector: Any, filters: Any, draw: Any, *rest: Any) -> Any:
        drawn.append(draw.pool)
        return real(vector, filters, draw, *rest)

    monkeypatch.setattr(service, "_vector_drawn_once", vector_drawn)
    hits = memory.search("Hooli renewal seats", k=5, scope="acme", tags=["rare"], as_of=before)
    assert {h.note_id for h in hits} <= {n.id for n in rare}
    assert drawn and max(drawn) <= 200, drawn


def test_the_hits_and_their_said_at_times_are_read_together(memory: Memory) -> None:
    a = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    b = said(memory, "Acme's champion is Priya", at=datetime(2026, 2, 1, tzinfo=UTC))
    with memory.ledger.read() as tx:
        notes, times = search_queries.notes_said(tx, [b.id, "n_missing", a.id])
        assert notes == tx.get_notes([b.id, a.id])
        assert times == {
            a.raw_log_ids[0]: datetime(2026, 1, 10, tzinfo=UTC),
            b.raw_log_ids[0]: datetime(2026, 2, 1, tzinfo=UTC),
        }
        assert search_queries.said_at(tx, [a.raw_log_ids[0]]) == {
            a.raw_log_ids[0]: datetime(2026, 1, 10, tzinfo=UTC)
        }


def test_concurrent_searches_answer_as_one_at_a_time(memory: Memory) -> None:
    """Many searches at once (an API server's request threads), each catching up in its own
    transaction, get the answers they get one by one."""
    for text in (
        "Hooli wants forty more seats for the support team",
        "Hooli's renewal is due in June",
        "Pied Piper asked for an on-premise trial",
        "Pied Piper's CTO prefers annual billing",
        "Hooli pays by wire transfer",
    ):
        make_note(memory, text)
    questions = ["Hooli seats", "renewal date", "on-premise trial", "billing preference", "wire transfer"] * 4
    alone = [[(h.note_id, h.score) for h in memory.search(q, k=3, scope="acme")] for q in questions]
    with ThreadPoolExecutor(8) as pool:
        together = list(
            pool.map(lambda q: [(h.note_id, h.score) for h in memory.search(q, k=3, scope="acme")], questions)
        )
    assert together == alone


def test_a_search_that_finds_nothing_changed_reads_no_notes_after_the_embedding(memory: Memory) -> None:
    """On PostgreSQL the catch-up's check (index position, ledger head, erasures) is read beside
    the query's embedding, with the full-text query; on SQLite all in the search's transaction.
    While that check reads as before, the hits' rows kept by the last searches are the notes: a
    repeated search reads none. After a change it reads them again, and shows the change."""
    from sqlalchemy import event

    note = make_note(memory, "Initech renews its Analytics Pro plan in March", tags=["renewal"])
    memory.search("Initech renewal", k=3, scope="acme")  # opened, caught up, the hits' rows kept
    statements: list[tuple[bool, str]] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not statement.startswith(("BEGIN", "COMMIT", "ROLLBACK")):
            statements.append((threading.current_thread() is threading.main_thread(), statement))

    def search() -> list[Any]:
        statements.clear()
        engine = memory.ledger.engine
        event.listen(engine, "before_cursor_execute", record)
        try:
            return memory.search("Initech renewal", k=3, scope="acme")
        finally:
            event.remove(engine, "before_cursor_execute", record)

    def notes_read() -> int:
        return sum("raw_logs.occurred_at" in s for _, s in statements)

    hits = search()
    assert [h.note_id for h in hits] == [note.id]
    mine = [s for main, s in statements if main]
    beside = [s for main, s in statements if not main]
    if memory.ledger.dialect == "postgresql":
        assert mine == [] and len(beside) == 2 and "index_state" in beside[0]
    else:
        assert beside == [] and len(mine) == 2 and "index_state" in mine[0]
    assert notes_read() == 0

    memory.propose(
        note.id, "context", "Renewal moved to April", reason="call", proposer=llm_proposer(memory)
    )  # applied
    hits = search()
    assert notes_read() == 1 and hits[0].note.context == "Renewal moved to April"
    hits[0].note.tags.append("changed by the caller")  # a caller's copy: the next search is not
    assert notes_read() == 1 and "changed by the caller" not in search()[0].note.tags


def test_a_note_another_process_erased_is_never_shown_from_kept_rows(memory: Memory) -> None:
    """An erasure rewrites rows in place and moves no change head; the check counts erasures, so
    the rows this process kept are dropped before its next search, even if the erasing process
    never rebuilt its index."""
    note = said(memory, "Priya Raman's mobile is 555-0142", at=datetime(2026, 3, 2, tzinfo=UTC))
    assert "555-0142" in memory.search("Priya mobile", k=3, scope="acme")[0].note.content  # rows kept
    other_process(memory, "erase", note.raw_log_ids[0])
    for hit in memory.search("Priya mobile", k=3, scope="acme"):
        assert "555-0142" not in hit.note.content and "Priya" not in hit.note.content
