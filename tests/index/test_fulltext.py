"""The full-text index (migrations 0003, 0004) stays in step with notes, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from amem.ledger import schema
from amem.ledger.search_queries import fts5_match, keyword_search, query_terms
from amem.ledger.store import Ledger, create_engine
from amem.memory import Memory
from amem.policy import load_policy
from amem.services.governance import Governance
from tests.factories import AGENT, llm_proposer, make_note, raw_log, signed_in
from tests.ledger import older_ledgers


def found(memory: Memory, text: str, **kwargs: object) -> list[str]:
    with memory.ledger.read() as tx:
        return [h.note_id for h in keyword_search(tx, text, scope="acme", limit=10, **kwargs)]  # type: ignore[arg-type]


def test_query_words_are_plain_words_without_syntax() -> None:
    assert query_terms('What did "Caroline" research? NEAR(x y) tags:* -- OR') == [
        "caroline",
        "research",
        "near",
        "x",
        "y",
        "tags",
    ]
    assert query_terms("the of and !!!") == []
    assert query_terms("foo_bar Ümlaut 2023") == ["foo", "bar", "ümlaut", "2023"]
    assert fts5_match(["a", "b"]) == '"a" OR "b"'


def test_edits_of_content_keywords_tags_and_context_reach_the_full_text_index(memory: Memory) -> None:
    note = make_note(memory, "Quarterly business review booked")
    assert found(memory, "quarterly") == [note.id]
    assert found(memory, "executive") == []
    memory.propose(
        note.id, "keywords", ["QBR", "executive sponsor"], reason="t", proposer=llm_proposer(memory)
    )
    memory.propose(note.id, "tags", ["café-meeting"], reason="t", proposer=llm_proposer(memory))
    memory.propose(
        note.id, "context", "Preparation for the renewal", reason="t", proposer=llm_proposer(memory)
    )
    assert found(memory, "executive") == [note.id]
    assert found(memory, "café") == [note.id]  # a tag's words, not its JSON escapes
    assert found(memory, "preparing") == [note.id]  # stemmed
    memory.propose(note.id, "keywords", ["QBR"], reason="t", proposer=llm_proposer(memory))
    assert found(memory, "executive") == []


def test_filters_on_tags_and_retirement(memory: Memory) -> None:
    a = make_note(memory, "Renewal discount agreed", tags=["pricing", "renewal"])
    b = make_note(memory, "Renewal call moved to Friday", tags=["renewal"])
    assert set(found(memory, "renewal")) == {a.id, b.id}
    assert found(memory, "renewal", tags=["pricing"]) == [a.id]
    assert found(memory, "renewal", tags=["pricing", "renewal"]) == [a.id]
    p = memory.propose(b.id, "invalid_at", "2024-01-01T00:00:00Z", reason="t", proposer=llm_proposer(memory))
    memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    assert set(found(memory, "renewal", alive_at=datetime(2023, 6, 1, tzinfo=UTC))) == {a.id, b.id}
    assert found(memory, "renewal", alive_at=datetime(2025, 1, 1, tzinfo=UTC)) == [a.id]


def test_notes_written_before_the_migration_are_indexed_by_it(database_url: str) -> None:
    engine = create_engine(database_url)
    schema.upgrade(engine)
    ledger = Ledger(database_url, check_schema=False)
    governance = Governance(ledger, load_policy(None))
    log = raw_log("Legacy note about the Kubernetes migration")
    with ledger.write() as tx:
        tx.insert_raw_logs([log], log.received_at)
        governance.create_note(tx, scope="acme", content=log.text, raw_logs=[log], actor=AGENT)
    # Back to a schema without full text (today's code writes only to today's schema), then up.
    older_ledgers.back_to(engine, "0002")
    schema.upgrade(engine)
    with ledger.read() as tx:
        assert len(keyword_search(tx, "kubernetes", scope="acme", limit=5)) == 1
    older_ledgers.back_to(engine, "0002")
    tables = set(sa.inspect(engine).get_table_names())
    assert "notes_fts" not in tables and "note_fts_rows" not in tables
    schema.upgrade(engine)
    with ledger.read() as tx:
        assert len(keyword_search(tx, "kubernetes", scope="acme", limit=5)) == 1
    ledger.close()
    engine.dispose()


def test_notes_indexed_before_scope_blocks_keep_their_scope_and_their_order(database_url: str) -> None:
    """Migration 0004 moves SQLite's full text into a block of rowids per scope: notes written
    before it, in interleaved scopes, are still found in their own scope only, newest first in a
    window, and a note written after it is the newest of its scope. Downgrading restores 0003."""
    engine = create_engine(database_url)
    schema.upgrade(engine)
    ledger = Ledger(database_url, check_schema=False)
    governance = Governance(ledger, load_policy(None))
    written: dict[str, list[str]] = {"acme": [], "globex": []}
    for i in range(6):
        scope = "acme" if i % 3 else "globex"
        log = raw_log(f"Escrow call number {i}", scope)
        with ledger.write() as tx:
            tx.insert_raw_logs([log], log.received_at)
            note = governance.create_note(tx, scope=scope, content=log.text, raw_logs=[log], actor=AGENT)
        written[scope].append(note.id)
    # Today's code writes only to today's schema: the notes go down to 0003's layout, then up.
    older_ledgers.back_to(engine, "0003")

    def window(scope: str, newest: int) -> set[str]:
        with ledger.read() as tx:
            return {h.note_id for h in keyword_search(tx, "escrow", scope=scope, limit=10, newest=newest)}

    schema.upgrade(engine)
    assert window("acme", 10) == set(written["acme"]) and window("globex", 10) == set(written["globex"])
    assert window("acme", 2) == set(written["acme"][-2:])
    log = raw_log("Escrow call after the upgrade", "acme")
    with ledger.write() as tx:
        tx.insert_raw_logs([log], log.received_at)
        latest = governance.create_note(tx, scope="acme", content=log.text, raw_logs=[log], actor=AGENT)
    assert window("acme", 2) == {written["acme"][-1], latest.id}
    assert window("globex", 10) == set(written["globex"])
    assert window("initech", 10) == set()  # a scope nobody wrote in

    older_ledgers.back_to(engine, "0003")
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH :m"),
                {"m": f'scope_key : "x{b"acme".hex()}" AND escrow'},
            ).scalar()
        assert rows == len(written["acme"]) + 1
    schema.upgrade(engine)
    assert window("acme", 2) == {written["acme"][-1], latest.id}
    ledger.close()
    engine.dispose()


def test_a_rare_word_counts_more_than_a_common_one(memory: Memory) -> None:
    for text in ("Acme call", "Acme meeting notes", "Acme lunch", "Acme review", "Acme dinner"):
        make_note(memory, text)
    rare = make_note(memory, "Escrow terms drafted")
    assert found(memory, "acme escrow")[0] == rare.id


def test_keyword_search_is_confined_to_its_scope_whatever_the_scope_is_called(memory: Memory) -> None:
    scopes = ["東京/a b", "東京/a-b", "e", "ee", "Ünïcode 'quoted' \"scope\""]
    notes = {scope: make_note(memory, "Escrow terms drafted", scope=scope) for scope in scopes}
    for scope in scopes:
        with memory.ledger.read() as tx:
            hits = keyword_search(tx, "escrow", scope=scope, limit=10)
        assert [h.note_id for h in hits] == [notes[scope].id]


def test_a_word_the_parser_splits_still_ranks_its_note_first(memory: Memory) -> None:
    """On PostgreSQL "1e5x" becomes a phrase of lexemes (a tsquery of several nodes); the ranking
    must not skip it as if the note lacked the word."""
    a = make_note(memory, "Batch 1e5x failed the burn-in test")
    b = make_note(memory, "Batch failed again, ticket opened")
    hits = found(memory, "1e5x batch")
    assert hits[0] == a.id and set(hits) == {a.id, b.id}


def test_a_window_ranks_only_the_scopes_newest_matching_notes(memory: Memory) -> None:
    """add_note's link step bounds its keyword side this way: the best match, if old, is left out;
    notes that do not match, and other scopes' notes, take no place in the window."""
    best = make_note(memory, "Escrow escrow escrow: escrow terms")
    matches = [make_note(memory, f"Escrow call number {i}") for i in range(4)]
    make_note(memory, "Escrow call in another account", scope="globex")
    for text in ("Lunch with the CFO", "Roadmap review", "Pricing page feedback"):
        make_note(memory, text)
    assert found(memory, "escrow")[0] == best.id
    assert set(found(memory, "escrow", newest=3)) == {m.id for m in matches[-3:]}
    assert set(found(memory, "escrow", newest=100)) == {best.id, *(m.id for m in matches)}
    assert found(memory, "escrow", newest=100) == found(memory, "escrow")  # ties in the same order
    with memory.ledger.read() as tx:  # a window holding every match scores as the full search
        every = keyword_search(tx, "escrow lunch call", scope="acme", limit=10)
        held = keyword_search(tx, "escrow lunch call", scope="acme", limit=10, newest=100)
    assert [h.note_id for h in held] == [h.note_id for h in every]
    assert [h.score for h in held] == pytest.approx([h.score for h in every])
    assert found(memory, "escrow", newest=0) == []


@pytest.mark.parametrize("dropped_by", ["deletion", "retirement"])
def test_deleted_or_retired_notes_never_crowd_out_live_ones_however_well_they_match(
    memory: Memory, dropped_by: str
) -> None:
    """The best matches are ranked first and deleted (or, searching live notes, retired) ones
    dropped after; with more of them among the best than the few drawn in reserve, every match
    is read."""
    gone = [make_note(memory, f"Escrow escrow escrow: escrow draft {i}") for i in range(15)]
    for note in gone:
        if dropped_by == "deletion":
            proposal = memory.delete(note.id, actor="bob", reason="duplicate")
        else:
            proposal = memory.propose(
                note.id, "invalid_at", "2024-01-01T00:00:00Z", reason="t", proposer=llm_proposer(memory)
            )
        if proposal.status.value == "pending":
            memory.approve(proposal.id, reviewer=signed_in(memory, "alice"))
    live = [make_note(memory, f"Escrow call number {i}") for i in range(3)]
    now = datetime(2025, 1, 1, tzinfo=UTC)
    with memory.ledger.read() as tx:
        two = keyword_search(tx, "escrow", scope="acme", limit=2, alive_at=now)
        every = keyword_search(tx, "escrow", scope="acme", limit=10, alive_at=now)
    assert {h.note_id for h in two} <= {n.id for n in live} and len(two) == 2
    assert {h.note_id for h in every} == {n.id for n in live}
