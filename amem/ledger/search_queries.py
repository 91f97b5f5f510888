"""The ledger's side of search: full-text queries, backlinks, and note scans for the index.

Full text uses the database's own index (migrations 0003, 0004, 0026): SQLite FTS5 ranked by bm25(),
each scope a block of rowids; PostgreSQL tsvector ranked by ts_rank_cd() weighted by each word's
inverse document frequency (a BM25-like score; ts_rank_cd alone knows no IDF). Queries are OR-style
over the query's words. User text never reaches the query syntax: it is cut into words (letters,
marks and digits), stop words dropped, and each word is quoted (FTS5) or given to phraseto_tsquery()
(plain text, no operators), always as a bound parameter. Each backend then cuts a query word as it
cut the notes' text (``query_terms``), so a word found verbatim in a note matches it on both. Each
address of the query (an email, host, URL, path, version, ticket id) is also asked for whole, as the
phrase of its words weighted by their number (``search_terms``, one rule for both backends), so a
note holding it whole outranks notes holding its words apart.

The two backends index the same words: PostgreSQL reads the notes' text through
``postgres_search_vector`` (migration 0026), which cuts emails, hosts, URLs, paths and versions into
their words and strips Latin accents as FTS5's unicode61 tokenizer does, and its queries are folded
by the same table (``postgres_fold``). This module holds both sides of that rule; a change to it
needs a migration that rebuilds the column, as 0026 did.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import sqlalchemy as sa

from amem.domain.hashing import REDACTED
from amem.domain.models import Note, RetirementWaiting, as_utc
from amem.domain.values import parse_datetime
from amem.ledger.store import LedgerTx, _note
from amem.ledger.tables import UTCDateTime, changes, notes, proposals, raw_logs

#: At most this many distinct words of a query are searched (long queries stay cheap).
MAX_TERMS = 32
#: The longest address asked as a phrase: a longer run (a long path or URL pasted into a query) is
#: asked as its words only. With the weight's cap, an address's phrase costs FTS5 at most
#: 16 x 4 tokens, where an uncapped one grew as the square of its words (1,000 words: 4.9 MB, 3 s).
MAX_ADDRESS_WORDS = 16
#: The most an address's phrase weighs (its words, up to this): enough for a whole email or host to
#: outrank its words apart; FTS5 writes the phrase that many times.
MAX_ADDRESS_WEIGHT = 4
#: Ranked before the notes are read, this many more are drawn than asked for, so that deleted
#: notes (whose full text stays indexed) and retired ones can be dropped afterwards.
DROPPED_MARGIN = 10
#: Column weights (content, keywords, tags, context) for FTS5 bm25(): what was said counts double
#: what the analyst derived from it (tuned on LoCoMo conversations 1-3; bench/README.md).
FTS5_WEIGHTS = (1.0, 0.5, 0.5, 0.25)
#: Migration 0004: a scope's FTS5 rowids are ``its number << FTS5_BLOCK_BITS | a counter``.
FTS5_BLOCK_BITS = 32
#: The same for ts_rank_cd, whose weights are for the labels D, C, B, A (context is C, keywords and
#: tags B, content A; D is unused).
TSRANK_WEIGHTS = "{0.1, 0.25, 0.5, 1.0}"

# Common English function words: they match most notes and say little about any.
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself his
    how i if in into is isn it its itself just ll me more most mustn my myself no nor not now of off on
    once only or other ought our ours ourselves out over own re s same shan she should shouldn so some
    such t than that the their theirs them themselves then there these they this those through to too
    under until up ve very was wasn we were weren what when where which while who whom why will with
    won would wouldn you your yours yourself yourselves
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_WORD = re.compile(r"[^\W_]+")
#: Characters outside ASCII that ``\w`` leaves out: punctuation and symbols, but also the marks
#: (and private-use characters) that ``_is_word_char`` keeps in their word.
_NOT_ALNUM = re.compile(r"[^\w\s\x00-\x7f]")
#: Words joined by one of . @ / - each: an email, host, URL, path or version ("a.b@acme-corp.com",
#: "4.2.17"); the query asks for them as a phrase too (``search_terms``).
_JOINED = re.compile(r"(?<![^\W_])[^\W_]++(?:[.@/-][^\W_]++)+")
#: A join between two word characters, which every address has: most queries have none, and
#: finding that costs a tenth of ``_JOINED``'s search.
_JOIN = re.compile(r"[^\W_][.@/-][^\W_]")
#: The joins that make an address: a dot, at sign or slash, or a hyphen before a digit ("TW-41877");
#: not the hyphen of a word ("follow-up"), whose parts PostgreSQL's parser indexed too before 0026.
_KEPT_WHOLE = re.compile(r"[.@/]|-[0-9]")
#: The combining accents FTS5's unicode61 tokenizer drops from a word (``remove_diacritics 2``),
#: read from SQLite 3.40 by tokenizing every code point: grave, acute, circumflex, tilde, macron,
#: breve, dot above, diaeresis, hook, ring, double acute, caron, double grave, inverted breve, horn,
#: dot below, diaeresis below, ring below, comma below, cedilla, ogonek, circumflex below, breve
#: below, tilde below, macron below. It keeps other marks (a Hindi vowel sign, a Greek tonos).
FTS5_ACCENTS = (
    "\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u0309\u030a\u030b\u030c\u030f"
    "\u0311\u031b\u0323\u0324\u0325\u0326\u0327\u0328\u032d\u032e\u0330\u0331"
)
#: The characters PostgreSQL's parser joins words with, and FTS5 parts them at: an email
#: ("dana.smith@globex.com"), host, URL, file path ("42/seat"), version ("4.2.17"), number ("-41877",
#: "+5"), hyphenated word; "<" and ">" would make "<dana.smith@globex.com>" an XML tag, which the
#: parser drops, and "&" an entity ("&amp;"). Indexed and searched as spaces on PostgreSQL.
POSTGRES_SEPARATORS = "./@-+<>&"


def _accented_latin() -> dict[str, str]:
    """Each Latin letter that is an ASCII letter with accents FTS5 drops (NFD), and that letter in
    lower case: "é" is "e", "Ş" is "s", "ǖ" is "u". That is 486 of the 488 letters FTS5 folds so
    (the Ångström sign and a Greek iota sign are outside these blocks), and Ǡ and ǡ, which FTS5
    keeps. "ø", "ß", "ł" are letters of their own to both."""
    out: dict[str, str] = {}
    for point in range(0x00C0, 0x1F00):  # Latin-1 Supplement to Latin Extended Additional
        char = chr(point)
        parts = unicodedata.normalize("NFD", char)
        base, accents = parts[0], parts[1:]
        if (
            accents
            and base.isascii()
            and base.isalpha()
            and all(a in FTS5_ACCENTS for a in accents)
            and unicodedata.name(char, "").startswith("LATIN ")
        ):
            out[char] = base.lower()
    return out


_FOLDED = _accented_latin()
_FOLD_TABLE = str.maketrans(
    POSTGRES_SEPARATORS + "".join(_FOLDED),
    " " * len(POSTGRES_SEPARATORS) + "".join(_FOLDED.values()),
    FTS5_ACCENTS,
)
#: The blocks of the accented letters (Latin Extended Additional in two: Vietnamese needs the second
#: half), each folded only in a text that holds one of its characters: PostgreSQL's translate()
#: compares each character with every one of its list, and the whole list (505 characters) cost
#: 3.7 us a character, twelve times to_tsvector's own 0.3 us.
_FOLD_BLOCKS = ((0x00C0, 0x00FF), (0x0100, 0x017F), (0x0180, 0x024F), (0x1E00, 0x1E9F), (0x1EA0, 0x1EFF))


def postgres_fold(text: str) -> str:
    """``text`` as PostgreSQL's search vector reads it (``postgres_indexed_text``): separators as
    spaces, Latin letters without their accents, loose accents (NFD) dropped."""
    return text.translate(_FOLD_TABLE)


def _holds(encoding: str) -> Callable[[str], bool]:
    """Whether a character can be written in ``encoding`` (a Python codec): a database in another
    encoding than UTF-8 (LATIN1, WIN1252) cannot hold, nor be sent, the letters it lacks."""

    def can(char: str) -> bool:
        try:
            char.encode(encoding)
        except UnicodeEncodeError:
            return False
        return True

    return can


def postgres_indexed_text(expression: str, probe: str | None = None, encoding: str = "utf-8") -> str:
    """The SQL of ``postgres_fold`` over a text ``expression``: built in and immutable, so a
    generated column may use it (the unaccent extension may be missing, and its function is not
    immutable). Each separator is replace()d (5 ns a character for the eight; translate() took 46);
    a text holding an accented letter or a loose accent (``probe``, by default ``expression``: a
    cheaper text holding the same characters) is then translate()d, its lists holding the letters of
    the blocks it holds a character of, then the accents if it holds one (dropped: the second list
    is shorter). ``encoding``: the database's (a Python codec): only the letters it can hold are
    listed, the only ones its texts can have (a block it holds whole is tested by its range)."""
    can = _holds(encoding)
    probe = probe or expression
    parted = expression
    for separator in POSTGRES_SEPARATORS:
        parted = f"replace({parted}, '{separator}', ' ')"
    taken: list[str] = []
    given: list[str] = []
    ranges = ""
    accents = "".join(a for a in FTS5_ACCENTS if can(a))
    for low, high in _FOLD_BLOCKS:
        letters = "".join(c for c in _FOLDED if low <= ord(c) <= high and can(c))
        if not letters:
            continue
        whole = can(chr(low)) and can(chr(high))
        block = f"{chr(low)}-{chr(high)}" if whole else letters
        holds = f"{probe} ~ '[{block}]'"
        taken.append(f"CASE WHEN {holds} THEN '{letters}' ELSE '' END")
        given.append(f"CASE WHEN {holds} THEN '{''.join(_FOLDED[c] for c in letters)}' ELSE '' END")
        ranges += block
    if accents:
        block = f"{accents[0]}-{accents[-1]}" if accents == FTS5_ACCENTS else accents
        taken.append(f"CASE WHEN {probe} ~ '[{block}]' THEN '{accents}' ELSE '' END")
        ranges += block
    if not ranges:  # an ASCII database: no letter to fold
        return parted
    folded = f"translate({parted}, {' || '.join(taken)}, {' || '.join(given)})"
    return f"CASE WHEN {probe} ~ '[{ranges}]' THEN {folded} ELSE {parted} END"


def postgres_search_vector(encoding: str = "utf-8") -> str:
    """The expression of notes.search_vector (migration 0026): content weighted A, keywords and
    tags B, context C, each read through ``postgres_indexed_text``, and the scope's token
    (``scope_key``) as 0003 indexed it. A list's strings only are translated (a number's "-" or "."
    would break the JSON), then read as jsonb_to_tsvector read the list before. ``encoding``: the
    database's, as a Python codec (``postgres_indexed_text``)."""

    english = "'english'::regconfig"

    def text(expression: str) -> str:
        return f"to_tsvector({english}, {postgres_indexed_text(expression, encoding=encoding)})"

    def strings(column: str) -> str:
        listed = f"jsonb_path_query_array({column}, '$[*] ? (@.type() == \"string\")')::text"
        folded = postgres_indexed_text(listed, probe=f"{column}::text", encoding=encoding)
        return f"jsonb_to_tsvector({english}, {folded}::jsonb, '[\"string\"]')"

    context = text("coalesce(context, '')")
    return (
        f"setweight({text('content')}, 'A') || setweight({strings('keywords')}, 'B') || "
        f"setweight({strings('tags')}, 'B') || setweight({context}, 'C') || "
        "to_tsvector('simple'::regconfig, 'x' || md5(scope))"
    )


def _is_word_char(char: str) -> bool:
    r"""A letter, mark or digit (or a private-use character, which FTS5 keeps too): a combining mark
    (a vowel sign, virama or accent: "हिंदी", "தமிழ்", a decomposed "café") is part of its word, which
    Python's ``\w`` would cut there."""
    category = unicodedata.category(char)
    return category[0] in "LMN" or category == "Co"


def _lower(text: str) -> str:
    """``text`` in NFC and lower case one character to one, as both backends lower the note text:
    Python's lower() turns İ into i and a combining dot, and a final Σ into ς (they make i and σ)."""
    text = unicodedata.normalize("NFC", text)
    if text.isascii():
        return text.lower()
    return text.replace("\u0130", "i").replace("\u03a3", "\u03c3").lower()


def _marks_as_letters(text: str) -> str:
    """``text`` with each mark (and private-use character) replaced by a letter: the same length, so
    a regular expression's words in it are the words of ``text`` at the same places."""
    if text.isascii():
        return text
    return _NOT_ALNUM.sub(lambda m: "a" if _is_word_char(m.group()) else m.group(), text)


def _query_words(text: str, *, joined: bool) -> dict[str, int]:
    """``query_terms``, each with its weight (1); ``joined``: also, first, each run of words joined
    as an address is (``_JOINED``), weighted by the number of its words that are no stop words (one
    of stop words alone is no address: "a.m"; PostgreSQL's phrase of it would be empty), at most
    ``MAX_ADDRESS_WEIGHT``; a run of more than ``MAX_ADDRESS_WORDS`` words is asked as its words."""
    lowered = _lower(text)
    masked = _marks_as_letters(lowered)
    seen: dict[str, int] = {}
    if joined and _JOIN.search(masked):
        for run in _JOINED.finditer(masked):
            whole = lowered[run.start() : run.end()]
            if whole not in seen and _KEPT_WHOLE.search(run.group()):
                words = [lowered[w.start() : w.end()] for w in _WORD.finditer(masked, *run.span())]
                weight = min(len(set(words) - STOP_WORDS), MAX_ADDRESS_WEIGHT)
                if weight and len(words) <= MAX_ADDRESS_WORDS:
                    seen[whole] = weight
                if len(seen) >= MAX_TERMS:
                    break
    if masked == lowered:  # no mark to keep in its word
        words = _WORD.findall(lowered)
    else:
        words = [lowered[w.start() : w.end()] for w in _WORD.finditer(masked)]
    for word in words:
        if word not in STOP_WORDS and word not in seen:
            seen[word] = 1
            if len(seen) >= MAX_TERMS:
                break
    return dict(list(seen.items())[:MAX_TERMS])


def search_terms(text: str) -> dict[str, int]:
    """What both backends search for ``text``, each with its weight: first each address of the
    query (an email, host, URL, path, version, "TW-41877"), asked as the phrase of its words and
    weighted by their number, so a note holding the whole address outranks notes holding its words
    apart; then ``query_terms``, weighted 1."""
    return _query_words(text, joined=True)


def query_terms(text: str) -> list[str]:
    """The distinct searchable words of ``text``, in order: NFC, lower case, stop words dropped.
    A word is letters, marks and digits; each backend cuts it further as it cut the notes' text
    (FTS5 at a vowel sign, so a quoted word is a phrase of its pieces that meets the same pieces,
    in order, in the note), so a query word that a note holds verbatim matches it."""
    return list(_query_words(text, joined=False))


@dataclass(frozen=True)
class PostgresTerm:
    """A term of a PostgreSQL query, as the search vector holds it (``postgres_fold``)."""

    text: str
    #: The spelling a note stored decomposed holds where that is another (``decomposed``: a Hangul
    #: syllable is two or three letters; an accent FTS5 keeps, a Devanagari nukta, stays a mark).
    variant: str | None
    #: What its score counts: 1 for a word, the number of its words for an address.
    weight: int


def postgres_terms(text: str) -> list[PostgresTerm]:
    """``search_terms`` folded as the search vector is, once each ("société" and "societe" are one
    term): an address the phrase of its words, weighted by their number, as when PostgreSQL indexed
    an address whole (before 0026)."""
    out: dict[str, PostgresTerm] = {}
    for term, weight in search_terms(text).items():
        folded = postgres_fold(term)
        if folded not in out:
            variant = decomposed(term)
            other = postgres_fold(variant) if variant is not None else None
            out[folded] = PostgresTerm(folded, other if other != folded else None, weight)
    return list(out.values())


def decomposed(term: str) -> str | None:
    """``term`` in NFD, or None where that is ``term`` itself. Note text is stored as given, and a
    note written in NFD may be indexed otherwise than one in NFC: a Hangul syllable decomposes into
    two or three letters, and an accent neither backend strips stays a mark of its own."""
    variant = unicodedata.normalize("NFD", term)
    return variant if variant != term else None


def _letters(text: str) -> int:
    """How many characters of ``text`` are not marks: those FTS5 keeps once it strips accents."""
    return sum(1 for char in text if unicodedata.category(char)[0] != "M")


def fts5_match(terms: Sequence[str] | Mapping[str, int]) -> str:
    """An FTS5 MATCH expression: any of ``terms``, each a quoted string (no operators, no columns):
    FTS5 cuts it as it cut the notes, so an address is the phrase of its words. A mapping gives each
    term's weight (``search_terms``): bm25() has no weight of its own, and sums the score of every
    phrase of the query, so a term weighted n is written n times. FTS5 strips the accents of NFC and
    NFD text alike (remove_diacritics), so a term's NFD spelling is added only where it holds other
    letters (a Hangul syllable is two or three jamo)."""
    weighted = terms if isinstance(terms, Mapping) else dict.fromkeys(terms, 1)
    quoted: list[str] = []
    for term, weight in weighted.items():
        spellings = [term]
        variant = decomposed(term)
        if variant is not None and _letters(variant) != _letters(term):
            spellings.append(variant)
        quoted.extend(spellings * weight)
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in quoted)


def scope_key(scope: str) -> str:
    """The token PostgreSQL's search_vector holds for a note's scope (migration 0003)."""
    return "x" + hashlib.md5(scope.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class KeywordHit:
    note_id: str
    score: float  # higher is better; comparable only within one result list


def keyword_search(
    tx: LedgerTx,
    text: str,
    *,
    scope: str,
    limit: int,
    tags: Sequence[str] = (),
    alive_at: datetime | None = None,
    newest: int | None = None,
    created_by: datetime | None = None,
    deleted: bool = False,
) -> list[KeywordHit]:
    """Live notes of ``scope`` matching any word of ``text``, best first.

    ``tags``: each must be among the note's tags. ``alive_at``: only notes not retired then.
    ``created_by``: only notes created at or before it (a search as of a past moment, whose
    candidates must not be crowded out by notes that did not exist then). ``deleted``: deleted
    notes too (a search as of a past moment, when a note deleted since still held).
    A note's score does not depend on which notes these filters leave out (except on PostgreSQL
    with ``newest``: the window's word counts are of the notes that pass), so a search as of a
    moment, which filters on the notes as they stood then, scores them as a search made then did.
    ``newest``: rank only the scope's ``newest`` most recently created notes that match, so the
    cost stops growing with the scope (on SQLite, deleted notes take places in that window); None
    ranks every match.
    """
    if limit <= 0 or (newest is not None and newest <= 0):
        return []
    if tx.dialect == "sqlite":
        terms = search_terms(text)
        if not terms:
            return []
        return _fts5(tx, fts5_match(terms), scope, limit, tags, alive_at, newest, created_by, deleted)
    if tx.dialect == "postgresql":
        terms = postgres_terms(text)
        if not terms:
            return []
        return _tsvector(tx, terms, scope, limit, tags, alive_at, newest, created_by, deleted)
    raise NotImplementedError(f"full-text search is not implemented for {tx.dialect}")


def _filters(
    tx: LedgerTx, tags: Sequence[str], alive_at: datetime | None, created_by: datetime | None = None
) -> tuple[list[str], dict[str, object], list[sa.BindParameter[object]]]:
    where: list[str] = []
    params: dict[str, object] = {}
    typed: list[sa.BindParameter[object]] = []
    if created_by is not None:
        where.append("n.created_at <= :created_by")
        params["created_by"] = as_utc(created_by)
        typed.append(sa.bindparam("created_by", type_=UTCDateTime()))
    if alive_at is not None:
        where.append("(n.invalid_at IS NULL OR n.invalid_at > :alive_at)")
        params["alive_at"] = as_utc(alive_at)
        typed.append(sa.bindparam("alive_at", type_=UTCDateTime()))
    for i, tag in enumerate(tags):
        if tx.dialect == "sqlite":
            where.append(f"EXISTS (SELECT 1 FROM json_each(n.tags) WHERE json_each.value = :tag{i})")
            params[f"tag{i}"] = tag
        else:
            where.append(f"n.tags @> CAST(:tag{i} AS jsonb)")
            params[f"tag{i}"] = json.dumps([tag])
    return where, params, typed


def _fts5(
    tx: LedgerTx,
    match: str,
    scope: str,
    limit: int,
    tags: Sequence[str],
    alive_at: datetime | None,
    newest: int | None,
    created_by: datetime | None = None,
    deleted: bool = False,
) -> list[KeywordHit]:
    extra, params, typed = _filters(tx, tags, alive_at, created_by)
    if not deleted:
        extra.insert(0, "n.deleted = 0")
    ranked = _fts5_ranked(newest is not None)
    if newest is not None:
        params["newest"] = newest
    args = {"match": match, "scope": scope, "limit": limit, **params}
    if not tags and created_by is None:
        # No tag filter and no creation bound (the link step, most searches; a search as of a
        # past moment filters in SQL, below): rank inside FTS5 and read the notes of the best few
        # only, not of every match (half the query's time at 2,000 matches); the scope is the
        # rowid range. Deleted and retired notes are dropped after ranking, so a few more are
        # drawn; when more of the best than that were dropped, every match is read as below.
        drawn = limit + DROPPED_MARGIN
        rows = tx.conn.execute(_fts5_best(newest is not None), {**args, "drawn": drawn}).all()
        moment = as_utc(alive_at) if alive_at is not None else None
        kept = [
            KeywordHit(r[0], -float(r[1]))
            for r in rows
            if (deleted or not r[2]) and r[3] == scope and (moment is None or r[4] is None or r[4] > moment)
        ][:limit]
        if len(kept) == limit or len(rows) < drawn:  # enough, or every match was drawn
            return kept
    # Equal scores go newest first, on every path, so a window that holds the best notes ranks them
    # exactly as a search of every match does.
    order = "ORDER BY c.rank, c.rowid DESC LIMIT :limit"
    stmt = sa.text(
        f"SELECT m.note_id, c.rank FROM ({ranked}) c "
        "JOIN note_fts_rows m ON m.fts_rowid = c.rowid "
        "JOIN notes n ON n.id = m.note_id "
        "WHERE n.scope = :scope " + "".join(f"AND {w} " for w in extra) + order
    ).bindparams(*typed)
    return [KeywordHit(r[0], -float(r[1])) for r in tx.conn.execute(stmt, args)]


def _fts5_ranked(windowed: bool) -> str:
    """FTS5's matches in the scope's block with their bm25() rank; ``windowed``: the newest
    ``:newest`` only. The scope is its block of rowids, which FTS5 seeks to in each word's posting
    list. It walks its matches in rowid order (creation order within a block) and can walk
    backwards, so the newest matches are read first and bm25() runs on those alone. Its statistics
    (N, each word's document count) stay those of the whole index. The block's bounds are scalar
    subqueries, evaluated once before FTS5 seeks (the plan keeps the rowid range): reading the
    scope's number in a statement of its own cost a search one more execution. A scope with no
    number (no note ever written in it) has NULL bounds and no match."""
    weights = ", ".join(str(w) for w in FTS5_WEIGHTS)
    bits = FTS5_BLOCK_BITS
    ranked = (
        f"SELECT rowid, bm25(notes_fts, {weights}) AS rank FROM notes_fts "
        "WHERE notes_fts MATCH :match AND rowid BETWEEN "
        f"(SELECT number << {bits} FROM fts_scopes WHERE scope = :scope) AND "
        f"(SELECT ((number + 1) << {bits}) - 1 FROM fts_scopes WHERE scope = :scope)"
    )
    return ranked + " ORDER BY rowid DESC LIMIT :newest" if windowed else ranked


@lru_cache(maxsize=2)
def _fts5_best(windowed: bool) -> sa.TextualSelect:
    """The best ``:drawn`` matches with what the caller filters on, built once per shape (every
    search and every link step runs it)."""
    best = (
        f"SELECT m.note_id, c.rank, n.deleted, n.scope, n.invalid_at FROM (SELECT rowid, rank "
        f"FROM ({_fts5_ranked(windowed)}) ORDER BY rank, rowid DESC LIMIT :drawn) c "
        "JOIN note_fts_rows m ON m.fts_rowid = c.rowid "
        "JOIN notes n ON n.id = m.note_id ORDER BY c.rank, c.rowid DESC"
    )
    return sa.text(best).columns(
        sa.column("note_id"),
        sa.column("rank"),
        sa.column("deleted", sa.Boolean),
        sa.column("scope"),
        sa.column("invalid_at", UTCDateTime()),
    )


def _tsvector(
    tx: LedgerTx,
    terms: Sequence[PostgresTerm],
    scope: str,
    limit: int,
    tags: Sequence[str],
    alive_at: datetime | None,
    newest: int | None,
    created_by: datetime | None = None,
    deleted: bool = False,
) -> list[KeywordHit]:
    """BM25-like on PostgreSQL: ts_rank_cd has no inverse document frequency, so each word's
    ts_rank_cd is weighted by its IDF within the scope, counted in the same query. (On LoCoMo,
    plain ts_rank_cd over the OR query reached R@10 0.52; IDF-weighted, 0.60, as FTS5's bm25.)
    Each word's document count is that of every match in the scope, as N counts every note of it
    (FTS5's bm25() counts the whole index): a note's score does not depend on which notes the
    filters leave out, so a search as of a moment, which filters on the notes as they stood then,
    scores them as the search made then did.
    With ``newest``, each word's document count is estimated from the window (of the notes that
    pass the filters): its count there, scaled by all matches over the window's (the same figure
    when the window holds every match).
    Each term (``postgres_terms``: folded as the notes' text was; an address the phrase of its
    words, its score counted once a word) is read by phraseto_tsquery(), PostgreSQL's parser as it
    read the notes (a word it cuts is a phrase of its pieces), with its NFD spelling ORed in where
    that differs (``decomposed``). A term of which the parser keeps no lexeme ("½", a word of 2,047
    characters or more) matches nothing; with none left, the query has no candidates (an empty
    tsquery ANDed with the scope's token would be the scope's token alone: every note of it)."""
    extra, params, typed = _filters(tx, tags, alive_at, created_by)
    if not deleted:
        extra.insert(0, "NOT n.deleted")
    n = range(len(terms))
    times = [f"{t.weight} * " if t.weight != 1 else "" for t in terms]
    parsed: list[str] = []
    for i, term in enumerate(terms):
        params[f"w{i}"] = term.text
        variant = term.variant
        if variant is None:
            parsed.append(f"phraseto_tsquery('english', :w{i})")
        else:
            params[f"d{i}"] = variant
            parsed.append(f"(phraseto_tsquery('english', :w{i}) || phraseto_tsquery('english', :d{i}))")
    params.update({"key": scope_key(scope), "scope": scope, "limit": limit})
    if newest is not None:
        params["newest"] = newest
    # Each CTE is MATERIALIZED and so computed once: inlined, the planner re-ran df and s once per
    # candidate row (quadratic: 340 ms for 547 candidates of 663 notes). h<i>: the note has term i,
    # tested once per note and used both to count and to skip ts_rank_cd, which is 0 without the
    # term (unless its tsquery is more than one lexeme, p<i>; an NFD spelling ORed in is none: it
    # ranks 0 where it is not found) and costs more than the test.
    each = ", ".join(f"{parsed[i]} AS q{i}" for i in n)
    anyone = " || ".join(f"t.q{i}" for i in n)
    queries = ", ".join(f"t.q{i}, numnode(phraseto_tsquery('english', :w{i})) > 1 AS p{i}" for i in n)
    hits = ", ".join(f"n.search_vector @@ q.q{i} AS h{i}" for i in n)
    # Scaled by all matches over the matches ranked: 1 unless a window left some out.
    scale = "" if newest is None else " * max(m.total)::float / greatest(count(*), 1)"
    counts = ", ".join(f"count(*) FILTER (WHERE m.h{i}){scale} AS d{i}" for i in n)
    weights = f"'{TSRANK_WEIGHTS}'::float4[]"
    score = " + ".join(
        f"(CASE WHEN m.h{i} OR q.p{i} THEN {times[i]}ln(1 + (s.n - df.d{i} + 0.5) / (df.d{i} + 0.5)) "
        f"* ts_rank_cd({weights}, m.sv, q.q{i}, 1) ELSE 0 END)"
        for i in n
    )
    matched = "n.search_vector @@ q.qa AND n.scope = :scope "
    if newest is None:
        # Every match is counted; those the filters leave out are only not ranked (m.keep).
        keep = " AND ".join(extra) or "true"
        m = f"SELECT n.id, n.search_vector AS sv, {hits}, ({keep}) AS keep FROM notes n, q WHERE {matched}"
        kept = "WHERE m.keep "
    else:
        # The window bounds the ranking, not the match: PostgreSQL still tests every note of the
        # scope (a sequential or GIN scan), which costs about as much as ranking every match.
        m = (
            f"SELECT n.id, n.search_vector AS sv, {hits}, count(*) OVER () AS total FROM notes n, q "
            f"WHERE {matched}"
            + "".join(f"AND {w} " for w in extra)
            + "ORDER BY n.created_at DESC, n.id DESC LIMIT :newest"
        )
        kept = ""
    sql = (
        f"WITH q AS (SELECT CASE WHEN numnode({anyone}) > 0 THEN ({anyone}) && to_tsquery('simple', :key) "
        f"END AS qa, {queries} FROM (SELECT {each}) t), "
        f"m AS MATERIALIZED ({m}), df AS MATERIALIZED (SELECT {counts} FROM m), "
        # N counts the scope's deleted notes too; an index-only scan of ix_notes_scope when vacuumed.
        + "s AS MATERIALIZED (SELECT count(*)::float AS n FROM notes WHERE scope = :scope) "
        + f"SELECT m.id, {score} AS rank FROM m, q, df, s {kept}ORDER BY rank DESC, m.id LIMIT :limit"
    )
    stmt = sa.text(sql).bindparams(*typed)
    rows = tx.conn.execute(stmt, params)
    return [KeywordHit(r[0], float(r[1])) for r in rows]


def scope_holds_more_than(tx: LedgerTx, scope: str, count: int) -> bool:
    """Whether ``scope`` holds more than ``count`` notes (deleted ones included), counted no further
    than ``count`` + 1 on the scope's index, so the answer costs the same in a scope of any size."""
    stmt = sa.select(sa.func.count()).select_from(
        sa.select(notes.c.id).where(notes.c.scope == scope).limit(count + 1).subquery()
    )
    return int(tx.conn.execute(stmt).scalar_one()) > count


@dataclass(frozen=True)
class Backlink:
    """``source`` links to ``target`` for ``reason``."""

    source: Note
    target: str
    reason: str


def backlinks(tx: LedgerTx, scope: str, targets: Sequence[str]) -> list[Backlink]:
    """Live notes of ``scope`` whose links point at any of ``targets``."""
    if not targets:
        return []
    wanted = set(targets)
    links_text = sa.cast(notes.c.links, sa.Text)
    stmt = (
        sa.select(notes.c.id)
        .where(notes.c.scope == scope, notes.c.deleted.is_(False))
        .where(sa.or_(*[links_text.contains(t, autoescape=True) for t in sorted(wanted)]))
        .order_by(notes.c.id)
    )
    ids = list(tx.conn.execute(stmt).scalars())
    found: list[Backlink] = []
    for note in tx.get_notes(ids):
        found.extend(
            Backlink(note, link.note_id, link.reason) for link in note.links if link.note_id in wanted
        )
    return found


def linked_before(tx: LedgerTx, scope: str, targets: Sequence[str], until: datetime) -> list[str]:
    """Notes of ``scope`` given, at or before ``until``, links that mention any of ``targets``:
    the notes that may have linked to them then (``backlinks`` reads the links as they stand now),
    deleted ones too (one deleted since held then). Bounded by the scope's changes of links up to
    ``until``; the caller rebuilds each note as of ``until`` to keep those whose links then pointed
    at a target, and that held then."""
    if not targets:
        return []
    value_text = sa.cast(changes.c.new_value, sa.Text)
    stmt = (
        sa.select(changes.c.note_id)
        .join(notes, notes.c.id == changes.c.note_id)
        .where(
            notes.c.scope == scope,
            changes.c.attribute == "links",
            changes.c.applied_at <= as_utc(until),
        )
        .where(sa.or_(*[value_text.contains(t, autoescape=True) for t in sorted(set(targets))]))
        .distinct()
        .order_by(changes.c.note_id)
    )
    return list(tx.conn.execute(stmt).scalars())


def deleted_since(tx: LedgerTx, scope: str, moment: datetime) -> list[str]:
    """Notes of ``scope`` made by ``moment`` and deleted after it: a search as of ``moment`` may
    have to find them, and the vector index no longer holds them (their vectors stay in the
    ledger). Read from the changes of deletion applied after ``moment`` (ix_changes_applied_at),
    so its cost follows what was deleted since, not the notes."""
    stmt = (
        sa.select(changes.c.note_id)
        .join(notes, notes.c.id == changes.c.note_id)
        .where(
            changes.c.attribute == "deleted",
            changes.c.applied_at > as_utc(moment),
            notes.c.scope == scope,
            notes.c.deleted.is_(True),
            notes.c.created_at <= as_utc(moment),
        )
        .distinct()
        .order_by(changes.c.note_id)
    )
    return list(tx.conn.execute(stmt).scalars())


@dataclass(frozen=True)
class Standing:
    """What decides whether a note passes a search's filters as of a past moment, without
    rebuilding it: as it stood then (``made``: it existed; deleted, its end, its tags, from its last
    change of each by then, as ``replay`` folds them) and, as it stands, whether it was erased
    since (deleted, its text gone)."""

    scope: str
    made: bool
    deleted: bool
    invalid_at: datetime | None
    tags: tuple[str, ...]
    erased: bool


#: The attributes ``Standing`` reads from a note's changes.
_STANDING = ("deleted", "invalid_at", "tags")


def standing_at(tx: LedgerTx, note_ids: Sequence[str], moment: datetime) -> dict[str, Standing]:
    """Each note's ``Standing`` at ``moment``, in two statements for all of them: its row, and its
    changes of the three attributes applied by then (a search as of a past moment filters its
    candidates on these before ranking; only its hits are rebuilt whole)."""
    if not note_ids:
        return {}
    ids = list(dict.fromkeys(note_ids))
    moment = as_utc(moment)
    rows = tx.conn.execute(
        sa.select(notes.c.id, notes.c.scope, notes.c.created_at, notes.c.deleted, notes.c.content).where(
            notes.c.id.in_(ids)
        )
    ).all()
    then: dict[str, dict[str, Any]] = {r.id: {} for r in rows}
    history = (
        sa.select(changes.c.note_id, changes.c.attribute, changes.c.new_value)
        .where(
            changes.c.note_id.in_(ids),
            changes.c.attribute.in_(_STANDING),
            changes.c.applied_at <= moment,
        )
        .order_by(changes.c.seq)
    )
    for c in tx.conn.execute(history):
        then[c.note_id][c.attribute] = c.new_value  # the last by then stays
    out: dict[str, Standing] = {}
    for r in rows:
        values = then[r.id]
        ends = values.get("invalid_at")
        out[r.id] = Standing(
            scope=r.scope,
            made=as_utc(r.created_at) <= moment,
            deleted=bool(values.get("deleted")),
            invalid_at=parse_datetime(ends) if ends is not None else None,
            tags=tuple(values.get("tags") or ()),
            erased=bool(r.deleted) and r.content == REDACTED,
        )
    return out


def live_notes_page(tx: LedgerTx, *, after: str, limit: int) -> list[Note]:
    """Live (not deleted) notes with ids after ``after``, in id order: a keyset page for rebuilds."""
    stmt = (
        sa.select(notes.c.id)
        .where(notes.c.deleted.is_(False), notes.c.id > after)
        .order_by(notes.c.id)
        .limit(limit)
    )
    return tx.get_notes(list(tx.conn.execute(stmt).scalars()))


# -- what a search reads of its hits ---------------------------------------------------------------


# Built once: a search runs these three on every call, and building a statement (and its cache
# key) each time cost more than SQLite took to run it (1,000 notes, LoCoMo questions, cProfile).
_RETIREMENTS = sa.select(notes.c.id, notes.c.invalid_at).where(
    notes.c.invalid_at.is_not(None), notes.c.deleted.is_(False)
)
#: A hit's retirement that a newer note proposed and a person has not decided yet (index
#: ix_proposals_note_attr_status): the hit still holds, but an agent should know it is contested.
#: A pending ``invalid_at`` proposal of no date (a revert that would bring a retired note back)
#: ends nothing: it is read here too, and left out by ``retirements_waiting_of``.
_WAITING = proposals.alias("waiting")


def _undecided(p: Any, moment: datetime | None = None) -> Any:
    """An ``invalid_at`` proposal waiting for a person: pending now; at ``moment``, made by then and
    not decided by then (every decision, supersession and withdrawal records ``reviewed_at``), so a
    read of a past moment says what was contested then, as a search made then said it."""
    if moment is None:
        return sa.and_(p.c.attribute == "invalid_at", p.c.status == "pending")
    return sa.and_(
        p.c.attribute == "invalid_at",
        p.c.created_at <= moment,
        sa.or_(p.c.status == "pending", p.c.reviewed_at > moment),
    )


_NOTES_SAID = (
    sa.select(
        notes,
        raw_logs.c.id.label("said_id"),
        raw_logs.c.occurred_at.label("said_at"),
        _WAITING.c.id.label("waiting_id"),
        _WAITING.c.new_value.label("waiting_invalid_at"),
        _WAITING.c.reason.label("waiting_reason"),
        _WAITING.c.evidence.label("waiting_evidence"),
        _WAITING.c.seq.label("waiting_seq"),
    )
    .select_from(
        notes.outerjoin(raw_logs, raw_logs.c.id == notes.c.raw_log_ids[0].as_string()).outerjoin(
            _WAITING,
            sa.and_(_WAITING.c.note_id == notes.c.id, _undecided(_WAITING)),
        )
    )
    .where(notes.c.id.in_(sa.bindparam("ids", expanding=True)))
)
_SAID_AT = sa.select(raw_logs.c.id, raw_logs.c.occurred_at).where(
    raw_logs.c.id.in_(sa.bindparam("ids", expanding=True))
)


def retirements(tx: LedgerTx) -> dict[str, datetime]:
    """Every live note that has an invalid_at, with it: what a process's index view knows of
    retirements when it opens (``IndexSync``), read through the partial index of migration 0012,
    so its cost follows the retired notes, not the store."""
    return {r.id: as_utc(r.invalid_at) for r in tx.conn.execute(_RETIREMENTS)}


def notes_said(tx: LedgerTx, note_ids: Sequence[str]) -> tuple[list[Note], dict[str, datetime]]:
    """The notes, in the order of ``note_ids`` (missing ones left out, as ``get_notes``), and when
    each note's first raw log was said, by raw log id: the hits of a search and their said-at
    times in one query."""
    return notes_said_of(note_said_rows(tx, note_ids), note_ids)


def note_said_rows(tx: LedgerTx, note_ids: Sequence[str]) -> dict[str, sa.Row[Any]]:
    """``notes_said``'s rows, by note id (immutable: a search may keep them while nothing changed)."""
    if not note_ids:
        return {}
    out: dict[str, sa.Row[Any]] = {}
    for r in tx.conn.execute(_NOTES_SAID, {"ids": list(note_ids)}):
        kept = out.get(r.id)  # several invalid_at proposals pending: the newest retirement is kept
        if kept is None or _waits_before(kept, r):
            out[r.id] = r
    return out


def _ends(value: object) -> datetime | None:
    """The end a pending ``invalid_at`` proposal gives its note: None for a proposal of no date
    (a restoration, which would bring the note back) or one that is not a time."""
    if isinstance(value, datetime):
        return as_utc(value)
    if not isinstance(value, str):
        return None
    try:
        return as_utc(datetime.fromisoformat(value))
    except ValueError:
        return None


def _waits_before(kept: sa.Row[Any], row: sa.Row[Any]) -> bool:
    """Whether ``row`` names a note's retirement waiting rather than ``kept`` does: a retirement
    before a restoration, and of two of a kind the newer."""
    ranks = [(_ends(r.waiting_invalid_at) is not None, r.waiting_seq or 0) for r in (kept, row)]
    return ranks[1] > ranks[0]


def notes_said_of(
    rows: Mapping[str, sa.Row[Any]], note_ids: Sequence[str]
) -> tuple[list[Note], dict[str, datetime]]:
    """``notes_said`` from its rows: each note built anew, so no caller shares one."""
    found = [_note(rows[i]) for i in note_ids if i in rows]
    said = {r.said_id: r.said_at for r in (rows[i] for i in note_ids if i in rows) if r.said_id is not None}
    return found, said


def retirements_waiting_of(
    rows: Mapping[str, sa.Row[Any]], note_ids: Sequence[str]
) -> dict[str, RetirementWaiting]:
    """The pending retirements among ``notes_said``'s rows, by note id: the ``invalid_at``
    proposals that give their note an end. One of no date would end nothing (a revert that brings
    a retired note back): it is no retirement, and is left out."""
    out: dict[str, RetirementWaiting] = {}
    for note_id in note_ids:
        row = rows.get(note_id)
        if row is None or row.waiting_id is None:
            continue
        when = _ends(row.waiting_invalid_at)
        if when is None:
            continue
        out[note_id] = RetirementWaiting(
            proposal_id=row.waiting_id,
            invalid_at=when,
            reason=row.waiting_reason or "",
            evidence=row.waiting_evidence,
        )
    return out


_WAITING_COLUMNS = sa.select(
    proposals.c.note_id,
    proposals.c.id.label("waiting_id"),
    proposals.c.new_value.label("waiting_invalid_at"),
    proposals.c.reason.label("waiting_reason"),
    proposals.c.evidence.label("waiting_evidence"),
    proposals.c.seq.label("waiting_seq"),
).where(proposals.c.note_id.in_(sa.bindparam("ids", expanding=True)))
_WAITING_OF = _WAITING_COLUMNS.where(_undecided(proposals))


def retirements_waiting(
    tx: LedgerTx, note_ids: Sequence[str], *, moment: datetime | None = None
) -> dict[str, RetirementWaiting]:
    """The pending retirements of these notes (the newest of each), read on their own, in one
    query: for notes found otherwise than as a search's hits (the notes an agentic search brings
    in by links, an account's facts), and, with ``moment``, those waiting then (``_undecided``).
    The caller leaves out the notes retired at that moment: none waits for them."""
    if not note_ids:
        return {}
    stmt = _WAITING_OF if moment is None else _WAITING_COLUMNS.where(_undecided(proposals, as_utc(moment)))
    rows: dict[str, sa.Row[Any]] = {}
    for r in tx.conn.execute(stmt, {"ids": list(note_ids)}):
        kept = rows.get(r.note_id)
        if kept is None or _waits_before(kept, r):
            rows[r.note_id] = r
    return retirements_waiting_of(rows, list(rows))


def said_at(tx: LedgerTx, raw_log_ids: Sequence[str]) -> dict[str, datetime]:
    """When each raw log was said (its occurred_at), by id, reading only those two columns."""
    if not raw_log_ids:
        return {}
    return {r.id: r.occurred_at for r in tx.conn.execute(_SAID_AT, {"ids": list(raw_log_ids)})}
