"""Keyword search finds a word a note holds verbatim, in any script and on both backends.

Each backend cuts the note text into words its own way (SQLite FTS5's unicode61 tokenizer splits at
a vowel sign; PostgreSQL's parser keeps a Hindi word whole), so the query's words must be cut to
meet them (emails, hosts and accents: tests/ledger/test_search_words_of_addresses.py). Every test
runs on SQLite and on PostgreSQL (the ``memory`` fixture).
"""

from __future__ import annotations

import unicodedata

import pytest

from amem.ledger.search_queries import (
    MAX_ADDRESS_WEIGHT,
    fts5_match,
    keyword_search,
    query_terms,
    search_terms,
)
from amem.memory import Memory
from tests.factories import make_note


def found(memory: Memory, text: str) -> list[str]:
    with memory.ledger.read() as tx:
        return [h.note_id for h in keyword_search(tx, text, scope="acme", limit=10)]


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


@pytest.mark.parametrize(
    ("note_text", "query"),
    [
        ("ग्राहक ने हिंदी सहायता मांगी है", "हिंदी सहायता"),  # vowel signs inside Hindi words
        ("வாடிக்கையாளர் தமிழ் உதவி கேட்டார்", "தமிழ்"),  # a Tamil word ending on a virama
        ("The İstanbul office wants a demo", "İstanbul"),  # İ, which Python lowers to i + a dot
        ("A café meeting is booked", nfd("café")),  # a decomposed query
        (nfd("A café meeting is booked"), "café"),  # a decomposed note, stored as given
        (nfd("고객이 한국어 지원을 요청했습니다"), "한국어"),  # Hangul in jamo
    ],
)
def test_a_word_a_note_holds_verbatim_finds_it_in_any_script(
    memory: Memory, note_text: str, query: str
) -> None:
    note = make_note(memory, note_text)
    make_note(memory, "Globex renewal is in March")
    assert found(memory, query) == [note.id]


def test_a_hindi_word_is_not_matched_by_a_note_holding_one_of_its_fragments(memory: Memory) -> None:
    """FTS5 cuts "हिंदी" at its vowel signs into "ह" and "द", as it cuts "दो" (two) into "द": the
    query word was cut so too, and a note saying "two customers" matched "Hindi"."""
    hindi = make_note(memory, "ग्राहक ने हिंदी सहायता मांगी है")
    make_note(memory, "दो ग्राहक आए")
    assert found(memory, "हिंदी") == [hindi.id]
    assert query_terms("हिंदी सहायता") == ["हिंदी", "सहायता"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("4.2.17", "version"),
        ("agent 4.2.17", "version"),
        ("dana.smith@acme-corp.com", "email"),
        ("TW-41877", "ticket"),
        ("docs.acme-corp.com", "guide"),
        ("https://docs.acme-corp.com/sso/setup.html", "guide"),
    ],
)
def test_versions_emails_hosts_and_tickets_are_found_on_both_backends(
    memory: Memory, query: str, expected: str
) -> None:
    """A whole address, version or ticket as the query finds its note first: on PostgreSQL, which
    indexes their words since migration 0026, the query asks for the phrase of its words too."""
    notes = {
        "email": make_note(memory, "Send the renewal quote to dana.smith@acme-corp.com before Friday."),
        "guide": make_note(
            memory, "The SSO guide is at https://docs.acme-corp.com/sso/setup.html for admins."
        ),
        "version": make_note(memory, "Acme runs agent version 4.2.17 on their servers."),
        "ticket": make_note(memory, "Ticket TW-41877 about the export timeout was escalated."),
    }
    hits = found(memory, query)
    assert hits and hits[0] == notes[expected].id


@pytest.mark.parametrize("query", ["½", "² ①", "x" * 2100])
def test_a_query_with_no_searchable_word_left_has_no_keyword_hits(memory: Memory, query: str) -> None:
    """PostgreSQL's parser drops "½", "²", "①" and words of 2,047 characters or more: its query was
    then the scope's token alone, and every note of the scope came back as a keyword hit."""
    make_note(memory, "Acme pays 40 EUR per seat")
    make_note(memory, "Globex renewal is in March")
    assert found(memory, query) == []
    results = memory.search(query, scope="acme", k=5)
    assert results and all("keyword" not in r.matched_by for r in results)


def test_a_word_postgres_drops_does_not_widen_the_other_words(memory: Memory) -> None:
    """With one word PostgreSQL keeps, the query matches that word's notes only."""
    renewal = make_note(memory, "Globex renewal is in March")
    make_note(memory, "Acme pays 40 EUR per seat")
    assert found(memory, "½ renewal") == [renewal.id]


def test_a_long_path_pasted_into_a_query_costs_what_its_words_cost() -> None:
    """An address is asked as its phrase, weighted by its words: uncapped, a pasted path of 1,000
    words made a 4.9 MB FTS5 query (3 s a search, and every add_note's link step searched it too).
    A run too long for an address is asked as its words, which stay capped as any query's."""
    path = "/".join(f"w{i}" for i in range(1000))
    assert search_terms(path) == dict.fromkeys(query_terms(path), 1)
    assert len(fts5_match(search_terms(path))) == len(fts5_match(query_terms(path)))


def test_an_address_of_many_words_weighs_no_more_than_the_cap() -> None:
    """A dotted run of eight words outranks its words apart as an email does, without being
    written eight times into the query."""
    terms = search_terms("see a1.b2.c3.d4.e5.f6.g7.h8 for it")
    assert terms["a1.b2.c3.d4.e5.f6.g7.h8"] == MAX_ADDRESS_WEIGHT
    assert fts5_match(terms).count('"a1.b2.c3.d4.e5.f6.g7.h8"') == MAX_ADDRESS_WEIGHT
