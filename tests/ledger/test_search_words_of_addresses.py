"""A word of an email, host, URL, path or ticket, and a word typed without its accents, finds the
note on both backends (migration 0026).

SQLite's FTS5 indexes "dana.smith@globex.com" as its words and folds "Société" to "societe";
PostgreSQL's parser kept an email, host, URL, path or version as one lexeme, a signed number as
"-41877", dropped "<...>" as an XML tag, and kept accents: the same query found the note on one
backend and not on the other. Every test runs on SQLite and on PostgreSQL (``memory``).
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.ledger import schema, search_queries
from amem.ledger.search_queries import keyword_search
from amem.memory import Memory
from tests.conftest import ScratchDatabases
from tests.factories import llm_proposer, make_note


def found(memory: Memory, text: str, scope: str = "acme") -> list[str]:
    with memory.ledger.read() as tx:
        return [h.note_id for h in keyword_search(tx, text, scope=scope, limit=10)]


@pytest.mark.parametrize(
    ("note_text", "query"),
    [
        ("Send the renewal quote to dana.smith@globex.com before Friday.", "dana smith"),
        ("Send the renewal quote to dana.smith@globex.com before Friday.", "globex"),
        ("The SSO guide is at https://portal.globex.com/sso/setup.html for admins.", "globex"),
        ("The SSO guide is at https://portal.globex.com/sso/setup.html for admins.", "setup"),
        ("Reply from Ops <ops.lead@initech.com> about the outage", "initech"),  # not an XML tag
        ("Quoted at $42/seat for the first term", "seat"),
        ("Ticket TW-41877 about the export timeout was escalated.", "41877"),
        ("Acme runs agent version 4.2.17 on their servers.", "17"),
        ("Call with Société Générale about the pilot", "societe generale"),
        ("Call with Société Générale about the pilot", "SOCIÉTÉ"),
        ("Call with societe generale about the pilot", "Société"),
        (unicodedata.normalize("NFD", "Call with Société Générale about the pilot"), "societe"),
        ("Meeting with Tomás Ferreira in São Paulo", "tomas sao"),
    ],
)
def test_a_word_of_an_address_or_without_its_accents_finds_the_note(
    memory: Memory, note_text: str, query: str
) -> None:
    note = make_note(memory, note_text)
    make_note(memory, "Renewal is in March, no change to the plan")
    assert found(memory, query) == [note.id]


def test_the_words_of_keywords_and_tags_are_found_as_the_content_s(memory: Memory) -> None:
    note = make_note(memory, "Renewal call booked")
    make_note(memory, "Renewal is in March, no change to the plan")
    memory.propose(
        note.id,
        "keywords",
        ["dana.smith@globex.com", "Zürich office"],
        reason="t",
        proposer=llm_proposer(memory),
    )
    memory.propose(note.id, "tags", ["café-meeting"], reason="t", proposer=llm_proposer(memory))
    for query in ("globex", "zurich", "cafe", "meeting"):
        assert found(memory, query) == [note.id], query


def test_an_address_is_found_in_its_own_scope_only(memory: Memory) -> None:
    """The separators are spaces in the indexed text only: the scope's token is unchanged."""
    ours = make_note(memory, "Invoice goes to ap@globex.com", scope="acme")
    make_note(memory, "Invoice goes to ap@globex.com", scope="initech")
    assert found(memory, "globex", scope="acme") == [ours.id]


def test_notes_written_before_the_migration_are_found_by_their_words_and_downgrade_restores_0003(
    memory: Memory,
) -> None:
    """0026 computes every existing row's vector again; the downgrade gives back 0003's (PostgreSQL
    indexing the email whole again), and the upgrade after it the words again."""
    engine = memory.ledger.engine
    schema.downgrade(engine, "0025")
    note = make_note(memory, "Send the renewal quote to dana.smith@globex.com before Friday.")
    other = make_note(memory, "Call with Société Générale about the pilot")
    postgres = engine.dialect.name == "postgresql"
    if postgres:  # 0003's vector, as an amem before 0026 wrote it
        assert "'dana.smith@globex.com'" in _vector(engine, note.id)
        assert "'société'" in _vector(engine, other.id)
    schema.upgrade(engine)
    assert found(memory, "dana smith") == [note.id]
    assert found(memory, "societe") == [other.id]
    schema.downgrade(engine, "0025")
    if postgres:
        assert "'dana.smith@globex.com'" in _vector(engine, note.id)
        assert "'societe'" not in _vector(engine, other.id)
    schema.upgrade(engine)
    assert found(memory, "globex") == [note.id]
    assert found(memory, "Société") == [other.id]


def _vector(engine: sa.Engine, note_id: str) -> str:
    stmt = sa.text("SELECT search_vector::text FROM notes WHERE id = :id")
    with engine.connect() as conn:
        return str(conn.execute(stmt, {"id": note_id}).scalar_one())


@pytest.mark.parametrize(
    ("address", "words_apart"),
    [
        ("ines.carvalho@cyberdyne.com", "Ines Carvalho from Cyberdyne asked about the com port settings."),
        ("portal.cyberdyne.com/sso", "Ines asked about SSO on the Cyberdyne portal for com users."),
        ("TW-41877", "TW support said 41877 Cyberdyne users saw the banner."),
        ("4.12.1", "Cyberdyne ran 4 pilots, 12 sites, 1 board."),
    ],
)
def test_a_note_holding_the_whole_address_ranks_above_notes_holding_its_words_apart(
    memory: Memory, address: str, words_apart: str
) -> None:
    """Both backends index the words of an address apart (PostgreSQL since 0026); the query also
    asks for the address as the phrase of its words, weighted by their number, so the note holding
    it comes first though longer (bm25() alone ranks the shorter note first), as when PostgreSQL
    indexed it whole."""
    holder = make_note(
        memory,
        f"Ticket 41902, priority P3, reported by {address}: since the update last Monday the Fremont "
        "board takes forty seconds to load, the Tucson board a minute, and the export times out.",
    )
    apart = make_note(memory, words_apart)
    for i in range(4):
        make_note(memory, f"Cyberdyne renewal call number {i} about seats and pricing")
    assert found(memory, address)[:2] == [holder.id, apart.id]
    assert found(memory, f"What did {address} report?")[:2] == [holder.id, apart.id]


def test_every_accented_latin_letter_and_separator_is_folded_by_the_index_as_by_the_query(
    memory: Memory,
) -> None:
    """Each letter of the table (``search_queries._FOLDED``) inside a word, and each separator
    between two words: the note is found by the word as ``postgres_fold`` spells it, on both
    backends (PostgreSQL folds it in SQL, a block at a time; FTS5 by its own table, which keeps
    Ǡ and ǡ)."""
    letters = [c for c in search_queries._FOLDED if c not in "Ǡǡ"]
    words = [f"z{i}{c}z" for i, c in enumerate(letters)]
    joined = [f"y{i}{sep}w{i}" for i, sep in enumerate(search_queries.POSTGRES_SEPARATORS)]
    note = make_note(memory, " ".join(words + joined))
    make_note(memory, "Renewal is in March, no change to the plan")
    missed = [w for w in words if found(memory, search_queries.postgres_fold(w)) != [note.id]]
    missed += [w for i, w in enumerate(joined) if found(memory, f"w{i}") != [note.id]]
    assert missed == []


@pytest.mark.postgres
def test_a_store_on_a_latin1_postgresql_database_is_made_and_folds_its_accents(
    tmp_path: Path, scratch_databases: ScratchDatabases
) -> None:
    """A team's older PostgreSQL database in LATIN1: migration 0026 wrote letters the database
    cannot hold (Ā, ạ) into the column's SQL, so no store could be made or upgraded there. The
    column lists only the letters the database holds, and folds them."""
    latin1 = scratch_databases(encoding="LATIN1", locale="C", template="template0")
    with Memory(tmp_path / "home", database_url=latin1.url) as memory:
        note = make_note(memory, "Café meeting at Zürich about the renewal")
        assert found(memory, "zurich") == [note.id] and found(memory, "cafe") == [note.id]


def test_an_address_of_stop_words_alone_finds_nothing_on_either_backend(memory: Memory) -> None:
    """Its words are no query words, and PostgreSQL's phrase of them is empty: FTS5 is not asked
    for the phrase either, so the backends agree."""
    make_note(memory, "Whether it is on the list or not")
    assert found(memory, "it/is") == []
    assert found(memory, "it.is or not") == []
