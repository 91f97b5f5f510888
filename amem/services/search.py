"""Search: hybrid (vector + full text) ranking over one scope, filters by tag and time, and the
agentic variant that follows each hit's links.

The vector index is derived from the ledger and caught up before every search, so approvals made
elsewhere (the console, another process) are visible at once. Candidates come from the index and
the ledger's full-text index; what is returned is always the ledger's note, checked against the
filters (for ``as_of``: the note rebuilt from its changes as it stood then; its candidates are
checked so before they are ranked, so that the search ranks what a search made then ranked).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel

from amem.config import DEFAULT_LINK_KEYWORD_SCOPE_LIMIT, DEFAULT_LINK_KEYWORD_WINDOW, Settings
from amem.domain.hashing import REDACTED, sha256_text
from amem.domain.models import Note, RetirementWaiting, as_utc, scope_as_kept, utcnow
from amem.domain.progress import Progress, no_progress
from amem.domain.replay import replay
from amem.errors import InvalidInputError
from amem.index.base import BuildReplacedError, VectorHit, VectorIndex
from amem.index.documents import document_text
from amem.index.embedders import Embedder, MiniLMEmbedder, make_embedder
from amem.index.fusion import VECTOR_WEIGHT, Fused, fuse
from amem.index.sync import IndexModelChangedError, IndexSync
from amem.ledger import index_queries, search_queries
from amem.ledger.facts_queries import changes_until
from amem.ledger.index_queries import LedgerCheck
from amem.ledger.store import Ledger, LedgerTx
from amem.services.hit_cache import HitRows
from amem.services.text_caches import forget_texts

log = logging.getLogger(__name__)

#: Candidates drawn from each side (vector, keyword) before fusion: at least this many ...
MIN_POOL = 50
#: ... or this many times k.
POOL_PER_RESULT = 3
#: A search answers at most this many hits (the HTTP API's and MCP's bound too): each side draws
#: a few times k candidates, so a larger k only costs time, and a huge one overflowed the database.
MAX_K = 100
#: A search as of a past moment draws this many times its pool from each side, filters the
#: candidates on the notes as they stood then, and draws this many times more while a side kept
#: fewer than its pool and had more (notes changed since may have been retired, or lost their tags).
AS_OF_DRAW = 2
AS_OF_POOL_GROWTH = 4
#: The most candidates a side of a search as of a past moment draws, whatever the store's size: a
#: filter few notes passed then (a rare tag) drew every note of the scope, 0.3-0.5 s at 2,000
#: notes and growing. Past it the search ranks what it drew, and may answer fewer than k.
AS_OF_MAX_DRAW = 1_600
#: A note brought in by a link scores this share of the hit that brought it.
LINKED_SCORE_SHARE = 0.5
#: The link step of add_note uses its keyword side only while the scope holds at most this many
#: notes (None: always). Its cost grows with the scope's matches (and, on SQLite, bm25() counts
#: each word's documents in the whole index), so in a larger scope the new note's neighbours come
#: from the vector side alone, as in A-MEM, whose cost barely grows (bench/README.md, "Scale").
#: search() always uses both sides and ranks every match. AMEM_LINK_KEYWORD_SCOPE_LIMIT sets it.
NEIGHBOUR_KEYWORD_SCOPE_LIMIT = DEFAULT_LINK_KEYWORD_SCOPE_LIMIT
#: Below that limit, the keyword side ranks only the scope's newest this many matches (None: every
#: match). AMEM_LINK_KEYWORD_WINDOW sets it.
NEIGHBOUR_KEYWORD_WINDOW = DEFAULT_LINK_KEYWORD_WINDOW

MatchedBy = Literal["vector", "keyword", "linked"]


class SearchResult(BaseModel):
    """One note found, with how it was found and whether it still holds.

    ``said_at``: the time of the raw log the note came from. ``retired``: its ``invalid_at`` has
    passed (at the searched moment); retired hits only come with ``include_retired``, after every
    current hit. ``retirement_waiting``: a newer note contradicts it and its retirement waits for a
    reviewer (as of a past moment: proposed by then, not decided by then): it still holds, but may
    not for long."""

    note_id: str
    note: Note
    score: float
    matched_by: list[MatchedBy]
    linked_from: str | None = None
    link_reason: str | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    said_at: datetime | None = None
    retired: bool = False
    retirement_waiting: RetirementWaiting | None = None


#: A ranking's hits: the current ones, the retired ones (asked for: after them), the said-at
#: times and the retirements waiting read with the notes.
_Admitted = tuple[list[SearchResult], list[SearchResult], dict[str, datetime], dict[str, RetirementWaiting]]


@dataclass(frozen=True)
class _Filters:
    scope: str
    tags: tuple[str, ...]
    as_of: datetime | None
    include_retired: bool
    #: When the search was asked: the moment a search of the present reads, the same throughout.
    asked: datetime = field(default_factory=utcnow)

    @property
    def moment(self) -> datetime:
        return self.as_of if self.as_of is not None else self.asked

    def admits(self, then: Note | None, now: Note | None) -> bool:
        """``then``: the note at the searched moment; ``now``: as it stands. A note deleted at the
        searched moment never shows; one deleted since shows as of a moment it held, unless it was
        erased (its text is gone)."""
        if then is None or now is None:
            return False
        erased = now.deleted and (self.as_of is None or now.content == REDACTED)
        return self._holds(then.scope, then.deleted or erased, then.invalid_at, then.tags)

    def stood(self, standing: search_queries.Standing | None) -> bool:
        """``admits`` for a candidate of a search as of a past moment, read without rebuilding it."""
        if standing is None or not standing.made:
            return False
        gone = standing.deleted or standing.erased
        return self._holds(standing.scope, gone, standing.invalid_at, standing.tags)

    def _holds(self, scope: str, gone: bool, invalid_at: datetime | None, tags: Iterable[str]) -> bool:
        if gone or scope != self.scope or not set(self.tags) <= set(tags):
            return False
        retired = invalid_at is not None and as_utc(invalid_at) <= as_utc(self.moment)
        return self.include_retired or not retired

    def current(self) -> _Filters:
        """The same search without the retired notes: whose hits come first in one that asks for them."""
        return replace(self, include_retired=False)


@dataclass(frozen=True)
class _Draw:
    """What each side draws for a search: ``pool`` candidates, the tags and moment the index and
    the full-text query filter on, and the bounds of a search as of a past moment (notes made by
    then, deleted ones too: they are filtered on as they stood then)."""

    pool: int
    tags: tuple[str, ...]
    alive_at: datetime | None
    created_by: datetime | None = None
    deleted: bool = False


def _pool(k: int) -> int:
    """How many candidates each side ranks for ``k`` hits."""
    return max(MIN_POOL, POOL_PER_RESULT * k)


def _candidates(k: int, filters: _Filters) -> _Draw:
    """What each side draws for ``k`` hits. A search of the present filters in the index and the
    full-text query on the tags and (without retired notes) the moment. One as of a past moment
    draws ``AS_OF_DRAW`` times as many among the notes made by then, deleted ones too, filtered on
    nothing else: the notes may have changed since, so ``_ranked_then`` checks each as it stood
    then."""
    if filters.as_of is not None:
        return _Draw(AS_OF_DRAW * _pool(k), (), None, created_by=filters.as_of, deleted=True)
    alive_at = None if filters.include_retired else filters.moment
    return _Draw(_pool(k), filters.tags, alive_at)


@dataclass(frozen=True)
class _BesideRead:
    """What a search reads beside its query's embedding: the full-text candidates, and the index
    position with the ledger's head for its catch-up (``IndexSync.check``)."""

    hits: list[search_queries.KeywordHit]
    checked: LedgerCheck


def _location(store: str, path: Path | None) -> str:
    """An index location's row name: a server's store is one location, whatever machine reaches
    it; a local directory is its own (another machine's local index on the same ledger has its own)."""
    return store if path is None else f"{store}@{sha256_text(str(path.resolve()))[:16]}"


class SearchService:
    """Hybrid search over a derived vector index and the ledger's full-text index."""

    def __init__(self, ledger: Ledger, index: VectorIndex, embedder: Embedder, sync: IndexSync) -> None:
        self.ledger = ledger
        self.index = index
        self.embedder = embedder
        self.sync = sync
        self.vector_weight = VECTOR_WEIGHT
        #: None: the link step ranks every keyword match; 0: it uses the vector side alone.
        self.neighbour_keyword_window: int | None = NEIGHBOUR_KEYWORD_WINDOW
        #: None: the link step's keyword side whatever the scope's size; 0: never.
        self.neighbour_keyword_scope_limit: int | None = NEIGHBOUR_KEYWORD_SCOPE_LIMIT
        # For each scope found to hold more notes than a limit, that limit. Notes are never removed
        # from the ledger, so a scope never goes back below it, and its size need not be counted again.
        self._holds_more_than: dict[str, int] = {}
        self._one_core: MiniLMEmbedder | None = None
        #: Runs a search's full-text query while the query is embedded (made on first use).
        self._beside: ThreadPoolExecutor | None = None
        self._beside_lock = threading.Lock()
        #: The rows of recent hits, while the ledger reads as it did (amem/services/hit_cache.py).
        self.hit_rows = HitRows()
        # An erasure by any process: the texts this one keeps outside the ledger go at its next check.
        sync.on_erasure += [forget_texts, self.hit_rows.clear]

    @classmethod
    def open(
        cls, settings: Settings, ledger: Ledger, *, reindex: bool = False, progress: Progress = no_progress
    ) -> SearchService:
        """Open (or create) the index and bring it level with the ledger: an index that is missing,
        empty or built from another ledger is rebuilt here, from the vectors the ledger keeps. One
        built by another embedding model is refused (IndexModelChangedError) unless ``reindex``,
        which rebuilds it under this process's model, reporting to ``progress``."""
        from amem.index.chroma import open_chroma  # chromadb is imported only when search is used

        embedder = make_embedder(settings)
        index = open_chroma(settings, embedder)
        legacy = f"chroma:{index.store}"  # one row per ledger before rows were per location
        sync = IndexSync(ledger, index, embedder, name=_location(legacy, index.path), legacy_name=legacy)
        if reindex:
            sync.reindex(progress=progress)
        else:
            sync.verify_origin()
            sync.catch_up()
        service = cls(ledger, index, embedder, sync)
        service.neighbour_keyword_window = settings.link_keyword_window
        service.neighbour_keyword_scope_limit = settings.link_keyword_scope_limit
        return service

    def close(self) -> None:
        try:
            self.sync.save_position()  # what add_note's catch-ups reached, if no write kept it yet
        except Exception:  # a read-only ledger, a closed database: the next open catches up again
            log.warning("the index position could not be kept; the next open catches up", exc_info=True)
        if self._beside is not None:
            self._beside.shutdown(wait=True)
        self.index.close()

    # -- keeping up with the ledger ---------------------------------------------------------------

    def catch_up(self) -> int:
        """Apply to the index every change it has not absorbed. Returns how many notes it (re)indexed."""
        return self.sync.catch_up()

    # -- the write path (amem/services/pipeline.py) ----------------------------------------------

    def embed_ahead(self, notes: Sequence[Note]) -> None:
        """Embed the documents of notes as a batch's write will leave them, in one call."""
        self.sync.embed_ahead(notes)

    def keep_vectors(self, tx: LedgerTx, note_ids: Sequence[str]) -> None:
        """In the batch's write transaction: keep the vectors embedded ahead for these notes."""
        self.sync.keep(tx, note_ids)

    def catch_up_after_write(self) -> int:
        """The catch-up after add_note's commit: it writes to the ledger only if it had to embed,
        and stages the notes beside the index, which takes them STAGED_LIMIT at a time (or on
        close) rather than one write each."""
        return self.sync.catch_up(position=False, stage=True)

    def reindex(self, *, progress: Progress = no_progress) -> int:
        """Rebuild the index from the ledger, from zero. Returns how many notes it holds."""
        return self.sync.reindex(progress=progress)

    # -- searching -------------------------------------------------------------------------------

    def nearest(self, scope: str, text: str, k: int, *, exclude_ids: Sequence[str] = ()) -> list[Note]:
        """The ``k`` notes of ``scope`` closest to ``text`` (retired ones included: a new fact may
        link to, or retire, an old one), found as the link step finds a new note's neighbours
        (``nearest_many``, which compares the note's own document instead of a text)."""
        if k <= 0 or not text.strip():
            return []
        self._catch_up_for_neighbours()
        excluded = set(exclude_ids)
        filters = _Filters(scope, (), None, include_retired=True)
        found = self._ranked(text, k + len(excluded), filters, newest=self._link_keyword_window(scope))
        return [r.note for r in found if r.note_id not in excluded][:k]

    def embed_documents(self, documents: Sequence[str]) -> NDArray[Any]:
        """New notes' documents embedded in one call, for ``nearest_many`` (add_notes embeds the
        next batch's in a thread while it writes this one: the offline model then runs on one
        core, leaving the other to the writing thread)."""
        if (
            isinstance(self.embedder, MiniLMEmbedder)
            and threading.current_thread() is not threading.main_thread()
        ):
            if self._one_core is None:
                self._one_core = MiniLMEmbedder(threads=1)
            return self._one_core.embed(documents)
        return self.embedder.embed(documents)

    def nearest_many(
        self, asks: Sequence[tuple[Note, str]], k: int, *, vectors: NDArray[Any] | None = None
    ) -> list[list[Note]]:
        """Neighbours for a batch of new notes, not yet written: for each (note, keyword query), the
        ``k`` notes of its scope closest to it among the stored notes and the batch's earlier notes.

        As in A-MEM, the vector side compares the new note's own document (content, keywords,
        tags, context) with the stored ones, so each new note is embedded once, all in one call,
        and the catch-up that indexes them reuses those vectors. The keyword side searches the
        query text in the ledger's full-text index, which holds what is committed: the batch's
        earlier notes are candidates on the vector side only."""
        if not asks:
            return []
        if k <= 0:
            return [[] for _ in asks]
        self._catch_up_for_neighbours()
        documents = [document_text(note) for note, _ in asks]
        if vectors is None:
            vectors = self.embedder.embed(documents)
        self.sync.remember([note for note, _ in asks], documents, vectors)
        windows = {scope: self._link_keyword_window(scope) for scope in {note.scope for note, _ in asks}}
        out: list[list[Note]] = []
        for i, (note, query) in enumerate(asks):
            earlier = [(asks[j][0], vectors[j]) for j in range(i) if asks[j][0].scope == note.scope]
            filters = _Filters(note.scope, (), None, include_retired=True)
            found = self._ranked(
                query,
                k + 1,
                filters,
                vector=vectors[i],
                pending=earlier,
                newest=windows[note.scope],
            )
            out.append([r.note for r in found if r.note_id != note.id][:k])
        return out

    def search(
        self,
        query: str,
        k: int = 10,
        *,
        scope: str,
        tags: Sequence[str] | None = None,
        as_of: datetime | None = None,
        include_retired: bool = False,
    ) -> list[SearchResult]:
        """The best ``k`` notes of ``scope`` for ``query`` (``k``: 1 to ``MAX_K``).

        ``tags``: a note must carry all of them. ``as_of``: search the notes as they stood then
        (a note created later is not found; its tags and retirement are read at that moment).
        Retired notes (invalid_at at or before now, or before ``as_of``) only with
        ``include_retired``: after the ``k`` current hits, which are those a search without it
        answers, in its order, come the retired notes that rank among the first ``k`` current ones
        in a ranking of every note (at most ``k``). A note deleted at the searched moment never
        shows; as of a past moment, one deleted since is found as it stood then (unless erased),
        and a search as of a moment answers what the search made then answered while the index
        holds the same notes (``_ranked_then``).
        """
        filters = _check(query, k, scope, tags, as_of, include_retired)
        with self._searched(query, k, filters) as (_, hits):
            return hits

    def search_agentic(
        self,
        query: str,
        k: int = 10,
        *,
        scope: str,
        tags: Sequence[str] | None = None,
        as_of: datetime | None = None,
        include_retired: bool = False,
    ) -> list[SearchResult]:
        """``search``'s best ``k`` hits, then every note they link to or are linked from (same
        filters), each marked with the hit and the link reason that brought it in. The linked notes
        come after the hits and are never cut to ``k``; retired notes (``include_retired``) come
        after every current one, linked ones included."""
        filters = _check(query, k, scope, tags, as_of, include_retired)
        with self._searched(query, k, filters) as (tx, hits):
            if not hits:
                return hits
            linked = self._linked(tx, hits, filters)
            waiting = (
                search_queries.retirements_waiting(tx, [h.note_id for h in linked])
                if linked and filters.as_of is None
                else {}
            )
            found = hits + self._with_currency(tx, linked, filters, waiting=waiting)
            # a retired hit after every current note, linked ones included: the fact that retired
            # it often comes in through its link
            return sorted(found, key=lambda h: h.retired)

    # -- internals -------------------------------------------------------------------------------

    @contextmanager
    def _searched(
        self, query: str, k: int, filters: _Filters
    ) -> Iterator[tuple[LedgerTx, list[SearchResult]]]:
        """A search's hits, in the read they were made in (an agentic search reads their links in
        it): on PostgreSQL the full-text side and the ledger check beside the query's embedding,
        then the catch-up, the ranking and the hits' notes in one read."""
        beside = self._keyword_beside(query, k, filters)
        vector = self.embedder.embed([query])[0]
        read = beside.result() if beside is not None else None
        with self.ledger.read(read_committed=True) as tx:
            checked = read.checked if read else self.sync.check(tx)
            self.sync.catch_up(record=False, tx=tx, checked=checked)
            keyword = read.hits if read else None
            yield tx, self._ranked(query, k, filters, vector=vector, currency=checked, tx=tx, keyword=keyword)

    def _catch_up_for_neighbours(self) -> None:
        try:
            self.sync.catch_up(record=False)
        except IndexModelChangedError:
            raise  # never mix two models' vectors, not even for a neighbour search
        except Exception:  # stale neighbours beat a failed add_note; the next catch-up heals the index
            log.warning("the index could not catch up; neighbours come from it as it is", exc_info=True)

    def _link_keyword_window(self, scope: str) -> int | None:
        """The link step's keyword window in ``scope``: 0 (vector side only) above the scope limit."""
        limit = self.neighbour_keyword_scope_limit
        if limit is None:
            return self.neighbour_keyword_window
        if limit == 0 or limit <= self._holds_more_than.get(scope, -1):
            return 0
        with self.ledger.read() as tx:
            if search_queries.scope_holds_more_than(tx, scope, limit):
                self._holds_more_than[scope] = limit
                return 0
        return self.neighbour_keyword_window

    def _keyword_beside(self, query: str, k: int, filters: _Filters) -> Future[_BesideRead] | None:
        """On PostgreSQL, start a search's full-text query in a thread of its own, in a read of its
        own, while this thread embeds the query: the query waits on the server, the embedding on
        the CPU, so neither waits for the other (search p50 0.88x at 1,000 notes). Its hits are
        only candidates: the notes are read again, and filtered, in the search's own transaction.
        The same read takes the catch-up's check (the index position and the ledger's head), so
        after the embedding a search that finds nothing changed makes one round trip, for its
        hits' notes: the search sees what was committed when it began.
        On SQLite the query runs in this process in about a millisecond, and the thread cost more
        than it overlapped (bench/README.md, "Peers", sixteenth session): None, run inline."""
        if self.ledger.dialect != "postgresql":
            return None
        with self._beside_lock:
            if self._beside is None:
                self._beside = ThreadPoolExecutor(max_workers=4, thread_name_prefix="amem-keyword")
        draw = _candidates(k, filters.current())  # retired notes asked for too: drawn apart, later

        def run() -> _BesideRead:
            with self.ledger.read(read_committed=True) as tx:
                checked = self.sync.check(tx)
                return _BesideRead(_keyword_drawn(tx, query, filters.scope, draw), checked)

        return self._beside.submit(run)

    def _ranked(
        self,
        query: str,
        k: int,
        filters: _Filters,
        *,
        vector: NDArray[Any] | None = None,
        pending: Sequence[tuple[Note, NDArray[Any]]] = (),
        newest: int | None = None,
        currency: LedgerCheck | None = None,
        tx: LedgerTx | None = None,
        keyword: list[search_queries.KeywordHit] | None = None,
    ) -> list[SearchResult]:
        """``vector``: the query's, when already computed. ``pending``: notes not yet in the ledger
        or the index (earlier notes of a batch being added), with their documents' vectors.
        ``newest``: the keyword side ranks only the newest this many matches (0: no keyword side).
        ``currency``: the hits as a search answers them (``_with_currency``), read after that
        check of the ledger (their rows may come from ``hit_rows``). ``keyword``: the
        full-text hits, when read beside the embedding (``_keyword_beside``). Everything is read in
        one transaction, ``tx`` when given (a search's, which its catch-up read in): on PostgreSQL
        each transaction costs round trips."""
        if vector is None:
            vector = self.embedder.embed([query])[0]
        if tx is None:
            with self.ledger.read() as tx:
                return self._ranked(
                    query,
                    k,
                    filters,
                    vector=vector,
                    pending=pending,
                    newest=newest,
                    currency=currency,
                    tx=tx,
                    keyword=keyword,
                )
        if filters.as_of is not None:
            results, retired, said, waiting = self._ranked_then(
                tx, query, vector, k, filters, currency, keyword
            )
        elif currency is not None and filters.include_retired:
            # The current hits are those the search answers without retired notes, ranked as it
            # ranks them (a retired note would take a place in each side's pool, and widen its
            # scaling); the retired ones come from a ranking of every note, drawn apart.
            results, _, said, waiting = self._ranked_now(
                tx, query, vector, k, filters.current(), pending, newest, currency, keyword
            )
            _, retired, also_said, also_waiting = self._ranked_now(
                tx, query, vector, k, filters, pending, newest, currency, None
            )
            said |= also_said
            waiting |= also_waiting
        else:
            results, retired, said, waiting = self._ranked_now(
                tx, query, vector, k, filters, pending, newest, currency, keyword
            )
        if currency is None:
            return results
        return self._with_currency(tx, results + retired, filters, said=said, waiting=waiting)

    def _ranked_now(
        self,
        tx: LedgerTx,
        query: str,
        vector: NDArray[Any],
        k: int,
        filters: _Filters,
        pending: Sequence[tuple[Note, NDArray[Any]]],
        newest: int | None,
        currency: LedgerCheck | None,
        keyword: list[search_queries.KeywordHit] | None,
    ) -> _Admitted:
        """A search of the present (or the link step): each side's pool, filtered by the index and
        the full-text query, fused, and the best ``k`` that pass the filters."""
        draw = _candidates(k, filters)
        if keyword is None:
            keyword = _keyword_drawn(tx, query, filters.scope, draw, newest=newest)
        vector_hits, unwritten = self._vector_drawn(tx, vector, filters, draw, pending)
        fused = fuse(vector_hits, keyword, vector_weight=self.vector_weight, unsearched=unwritten)
        return self._admitted(tx, fused, k, filters, unwritten, currency, {})

    def _ranked_then(
        self,
        tx: LedgerTx,
        query: str,
        vector: NDArray[Any],
        k: int,
        filters: _Filters,
        currency: LedgerCheck | None,
        keyword: list[search_queries.KeywordHit] | None,
    ) -> _Admitted:
        """A search as of a past moment ranks what a search made then ranked: each side's
        candidates are drawn among the notes made by then (deleted ones too), and those that did
        not pass the filters as they stood then (deleted, retired, untagged) are dropped before
        each side keeps its pool and is scaled, as the index and the full-text query dropped them
        then. While the index holds the same notes and documents as then, the hits are the same;
        a note changed since (its words, its vector), a note made since (the full text's word
        statistics) or one deleted since under another embedding model still weigh in.
        With ``include_retired`` the current hits are ranked first, then the retired ones apart,
        from the same candidates."""
        pool = _pool(k)
        draw = _candidates(k, filters)
        current = filters.current()
        as_of = filters.moment
        standing: dict[str, search_queries.Standing] = {}  # the candidates then, kept across draws
        gone = self._deleted_since(tx, vector, filters)

        def passes(note_id: str, f: _Filters) -> bool:
            return f.stood(standing.get(note_id))

        while True:
            if keyword is None:
                keyword = _keyword_drawn(tx, query, filters.scope, draw)
            indexed, _ = self._vector_drawn(tx, vector, filters, draw, ())
            known = {h.note_id for h in indexed}
            vector_hits = sorted([*indexed, *(h for h in gone if h.note_id not in known)], key=_nearest)
            drawn = dict.fromkeys(h.note_id for h in [*vector_hits, *keyword])
            standing |= search_queries.standing_at(tx, [i for i in drawn if i not in standing], as_of)
            sides = [
                ([h for h in vector_hits if passes(h.note_id, current)], len(indexed) < draw.pool),
                ([h for h in keyword if passes(h.note_id, current)], len(keyword) < draw.pool),
            ]
            if all(len(kept) >= pool or ran_out for kept, ran_out in sides) or draw.pool >= AS_OF_MAX_DRAW:
                break
            grown = min(draw.pool * AS_OF_POOL_GROWTH, AS_OF_MAX_DRAW)
            draw, keyword = replace(draw, pool=grown), None
        # Only the hits are rebuilt whole, k at a time, and checked again as rebuilt.
        states: dict[str, Note | None] = {}
        fused = fuse(sides[0][0][:pool], sides[1][0][:pool], vector_weight=self.vector_weight)
        results, _, said, waiting = self._admitted(tx, fused, k, current, {}, currency, states)
        if not filters.include_retired:
            return results, [], said, waiting
        every = fuse(
            [h for h in vector_hits if passes(h.note_id, filters)][:pool],
            [h for h in keyword if passes(h.note_id, filters)][:pool],
            vector_weight=self.vector_weight,
        )
        _, retired, also_said, also_waiting = self._admitted(tx, every, k, filters, {}, currency, states)
        return results, retired, said | also_said, waiting | also_waiting

    def _deleted_since(self, tx: LedgerTx, vector: NDArray[Any], filters: _Filters) -> list[VectorHit]:
        """For a search as of a past moment, the vector side's candidates the index no longer holds:
        the notes made by then and deleted since, compared by the vectors the ledger keeps of them
        (none left for an erased note, nor for one deleted before a rebuild under another model)."""
        if filters.as_of is None:
            return []
        ids = search_queries.deleted_since(tx, filters.scope, filters.as_of)
        kept = index_queries.vectors(tx, self.sync.model, ids) if ids else {}
        if not kept:
            return []
        found = list(kept)
        similarities = np.stack([kept[i].vector for i in found]) @ np.asarray(vector, dtype=np.float32)
        return [VectorHit(i, float(x)) for i, x in zip(found, similarities, strict=True)]

    def _vector_drawn(
        self,
        tx: LedgerTx,
        vector: NDArray[Any],
        filters: _Filters,
        draw: _Draw,
        pending: Sequence[tuple[Note, NDArray[Any]]],
    ) -> tuple[list[VectorHit], dict[str, Note]]:
        """The vector side's ``draw.pool`` best candidates, with the notes of ``pending`` by id.

        A build replaced by another process's rebuild after this search's catch-up (its query
        finds it dropped, or being dropped: BuildReplacedError) is left for the build the ledger
        records, caught up in ``tx``, and the index asked again, once: answering from the half-
        dropped build answered some or none of its notes, or failed as damaged files."""
        try:
            return self._vector_drawn_once(vector, filters, draw, pending)
        except BuildReplacedError as replaced:
            log.info("index build %s was replaced during a search: reading the recorded one", replaced.build)
        self.sync.follow_replaced(tx)
        return self._vector_drawn_once(vector, filters, draw, pending)

    def _vector_drawn_once(
        self,
        vector: NDArray[Any],
        filters: _Filters,
        draw: _Draw,
        pending: Sequence[tuple[Note, NDArray[Any]]],
    ) -> tuple[list[VectorHit], dict[str, Note]]:
        pool, index_tags, alive_at, created_by = draw.pool, draw.tags, draw.alive_at, draw.created_by
        staged = self.sync.staged()  # changed notes not yet written into the index: ranked here
        shadowed = self.sync.shadowed(filters.scope) if staged else 0
        # Whether a vector hit is retired: the index view's knowledge, as current as the catch-up
        # this search made (IndexSync.retired_among); the hits' notes are read from the ledger.
        retired = None if alive_at is None else partial(self.sync.retired_among, moment=alive_at)
        vector_hits = self.index.query(
            vector,
            pool + shadowed,
            scope=filters.scope,
            tags=index_tags,
            alive_at=alive_at,
            retired=retired,
            created_by=created_by,
        )
        if staged:
            moment = as_utc(alive_at) if alive_at is not None else None
            vector_hits = [h for h in vector_hits if h.note_id not in staged][:pool]
            beside = [
                (note.id, v)
                for note, v in staged.values()
                if v is not None
                and note.scope == filters.scope
                and set(index_tags) <= set(note.tags)
                and (moment is None or note.invalid_at is None or as_utc(note.invalid_at) > moment)
                and (created_by is None or as_utc(note.created_at) <= created_by)
            ]
            if beside:  # one product for all of them: add_note may have staged hundreds in a scope
                similarities = np.stack([v for _, v in beside]) @ np.asarray(vector, dtype=np.float32)
                ids = [i for i, _ in beside]
                vector_hits += [VectorHit(i, float(x)) for i, x in zip(ids, similarities, strict=True)]
            vector_hits = sorted(vector_hits, key=_nearest)[:pool]
        unwritten = {note.id: note for note, _ in pending}
        if pending:
            extra = [VectorHit(note.id, float(np.dot(v, vector))) for note, v in pending]
            vector_hits = sorted([*vector_hits, *extra], key=_nearest)[:pool]
        return vector_hits, unwritten

    def _admitted(
        self,
        tx: LedgerTx,
        fused: Sequence[Fused],
        k: int,
        filters: _Filters,
        unwritten: Mapping[str, Note],
        currency: LedgerCheck | None,
        states: dict[str, Note | None],
    ) -> _Admitted:
        """The best ``k`` candidates that pass the filters, and (a search asked for retired facts
        too) the retired ones among them, with the said-at times and waiting retirements read with
        the notes. ``states``: the notes already rebuilt as of ``filters.as_of``, added to."""
        results: list[SearchResult] = []
        said: dict[str, datetime] = {}  # first raw logs' times, read with the notes (currency)
        waiting: dict[str, RetirementWaiting] = {}  # read with the notes too
        # Notes are read from the ledger best first, k of them, then twice as many at a time:
        # both sides already dropped retired, deleted and untagged candidates (as of a past moment:
        # those that were then), so the first k nearly always pass and the rest of the pool is
        # never loaded.
        # A search asked for retired facts too ranks its current hits apart (``_ranked``), then all
        # of its notes: of those, the retired ones that rank among the first k current ones (at
        # most k) come after the current hits, so a retired price that matches the question best
        # never takes the place of the price that holds now.
        apart = currency is not None and filters.include_retired
        retired: list[SearchResult] = []
        start, chunk = 0, k
        while start < len(fused) and len(results) < k:
            part = fused[start : start + chunk]
            if currency is not None:
                found, times, contested = self._notes_said(tx, currency, [f.note_id for f in part])
                said |= times
                waiting |= contested
            else:
                found = tx.get_notes([f.note_id for f in part])
            now = {n.id: n for n in found}
            now |= {f.note_id: unwritten[f.note_id] for f in part if f.note_id in unwritten}
            then = _states_at(tx, now.values(), filters.as_of, states) if filters.as_of else now
            for f in part:
                note = then.get(f.note_id)
                if note is None or not filters.admits(note, now.get(f.note_id)):
                    continue
                hit = SearchResult(
                    note_id=f.note_id, note=note, score=round(f.score, 6), matched_by=list(f.matched_by)
                )
                if apart and _retired_at(note, filters.moment):
                    if len(retired) < k:
                        retired.append(hit)
                    continue
                results.append(hit)
                if len(results) == k:
                    break
            start, chunk = start + chunk, chunk * 2
        return results, retired, said, waiting

    def _notes_said(
        self, tx: LedgerTx, checked: LedgerCheck, note_ids: list[str]
    ) -> tuple[list[Note], dict[str, datetime], dict[str, RetirementWaiting]]:
        """The hits' notes, their said-at times and their retirements waiting for a reviewer: the
        rows kept since ``checked`` read the same, the others read (and kept)."""
        rows = self.hit_rows.get(checked, note_ids)
        missing = [i for i in note_ids if i not in rows]
        if missing:
            read = search_queries.note_said_rows(tx, missing)
            self.hit_rows.put(checked, read)
            rows |= read
        found, said = search_queries.notes_said_of(rows, note_ids)
        return found, said, search_queries.retirements_waiting_of(rows, note_ids)

    def _with_currency(
        self,
        tx: LedgerTx,
        hits: list[SearchResult],
        filters: _Filters,
        *,
        said: dict[str, datetime] | None = None,
        waiting: Mapping[str, RetirementWaiting] | None = None,
    ) -> list[SearchResult]:
        """Each hit with its validity dates and the time it was said; retired hits (invalid_at
        passed at the searched moment) after every current one, each group in score order.
        ``said``: raw log times already read (with the notes), by raw log id; the rest are read.
        ``waiting``: retirements proposed and not yet decided, by note id (current hits only); as
        of a past moment, what waits now says nothing of then: those waiting then are read here,
        for every hit in one query."""
        if not hits:
            return hits
        first = {h.note_id: h.note.raw_log_ids[0] for h in hits if h.note.raw_log_ids}
        said = dict(said or {})
        missing = [i for i in dict.fromkeys(first.values()) if i not in said]
        said |= search_queries.said_at(tx, missing)
        moment = as_utc(filters.moment)
        if filters.as_of is not None:
            holding = [h.note_id for h in hits if not _retired_at(h.note, moment)]
            waiting = search_queries.retirements_waiting(tx, holding, moment=moment)
        out = []
        for h in hits:
            retired = _retired_at(h.note, moment)
            out.append(
                h.model_copy(
                    update={
                        "valid_at": h.note.valid_at,
                        "invalid_at": h.note.invalid_at,
                        "said_at": said.get(first.get(h.note_id, "")),
                        "retired": retired,
                        # a retired note's pending proposal moves an end it already had: no
                        # retirement waits for it
                        "retirement_waiting": None if retired else _waiting(waiting, h.note_id),
                    }
                )
            )
        return sorted(out, key=lambda h: h.retired)  # stable: score order kept within each group

    def _linked(self, tx: LedgerTx, hits: Sequence[SearchResult], filters: _Filters) -> list[SearchResult]:
        """Notes linked to or from the hits, in hit order: outgoing links first, then incoming."""
        seen = {h.note_id for h in hits}
        wanted: list[tuple[SearchResult, str, str, Note | None]] = []  # hit, note id, reason, source
        states: dict[str, Note | None] = {}  # as_of: the notes rebuilt, read once
        hit_ids = [h.note_id for h in hits]
        incoming = (
            search_queries.backlinks(tx, filters.scope, hit_ids)
            if filters.as_of is None
            else _backlinks_at(tx, filters.scope, hit_ids, filters.as_of, states)
        )
        for hit in hits:
            wanted += [(hit, link.note_id, link.reason, None) for link in hit.note.links]
            wanted += [(hit, b.source.id, b.reason, b.source) for b in incoming if b.target == hit.note_id]
        now = {n.id: n for n in tx.get_notes(list(dict.fromkeys(w[1] for w in wanted)))}
        then = _states_at(tx, now.values(), filters.as_of, states) if filters.as_of else now
        out: list[SearchResult] = []
        for hit, note_id, reason, source in wanted:
            note = then.get(note_id)
            if note_id in seen or note is None or not filters.admits(note, now.get(note_id)):
                continue
            if source is not None and filters.as_of is not None:  # did it link to the hit back then?
                if not any(link.note_id == hit.note_id for link in note.links):
                    continue
                reason = next(link.reason for link in note.links if link.note_id == hit.note_id)
            seen.add(note_id)
            out.append(
                SearchResult(
                    note_id=note_id,
                    note=note,
                    score=round(hit.score * LINKED_SCORE_SHARE, 6),
                    matched_by=["linked"],
                    linked_from=hit.note_id,
                    link_reason=reason or None,
                )
            )
        return out


def _waiting(waiting: Mapping[str, RetirementWaiting] | None, note_id: str) -> RetirementWaiting | None:
    return (waiting or {}).get(note_id)


def _check(
    query: str,
    k: int,
    scope: str,
    tags: Sequence[str] | None,
    as_of: datetime | None,
    include_retired: bool,
) -> _Filters:
    """The search's filters, or InvalidInputError naming the parameter at fault: a caller's
    mistake (a huge ``k``, a tag that is not text) is said as such, never an internal error."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("the search query is empty")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise InvalidInputError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidInputError("a search needs a scope (whose memory to search)")
    if isinstance(tags, str) or (tags is not None and not isinstance(tags, Iterable)):
        raise InvalidInputError(f"tags must be a list of tags, got {tags!r}")
    listed = list(tags or ())
    odd = [t for t in listed if not isinstance(t, str)]
    if odd:
        raise InvalidInputError(f"tags must be text, got {odd[0]!r}")
    clean = tuple(dict.fromkeys(t.strip() for t in listed if t.strip()))
    kept = scope_as_kept(scope)  # as inputs keep it: composed (NFC), full-width letters plain
    return _Filters(kept, clean, as_utc(as_of) if as_of is not None else None, include_retired)


def _states_at(
    tx: LedgerTx, notes: Iterable[Note], moment: datetime, known: dict[str, Note | None] | None = None
) -> dict[str, Note]:
    """Each note as it stood at ``moment``, rebuilt from its changes (read in one statement);
    absent if it did not exist yet. ``known``: notes already rebuilt at ``moment`` in this read
    (None: did not exist), added to."""
    given = list(notes)
    known = {} if known is None else known
    missing = [n for n in given if n.id not in known]
    history = changes_until(tx, [n.id for n in missing], moment) if missing else {}
    for note in missing:
        known[note.id] = replay(note, history[note.id])
    return {n.id: past for n in given if (past := known[n.id]) is not None}


def _keyword_drawn(
    tx: LedgerTx, query: str, scope: str, draw: _Draw, *, newest: int | None = None
) -> list[search_queries.KeywordHit]:
    """The full-text side's candidates for ``draw``."""
    return search_queries.keyword_search(
        tx,
        query,
        scope=scope,
        limit=draw.pool,
        tags=draw.tags,
        alive_at=draw.alive_at,
        newest=newest,
        created_by=draw.created_by,
        deleted=draw.deleted,
    )


def _nearest(hit: VectorHit) -> float:
    """A vector hit's sort key: nearest first."""
    return -hit.similarity


def _backlinks_at(
    tx: LedgerTx, scope: str, targets: Sequence[str], moment: datetime, known: dict[str, Note | None]
) -> list[search_queries.Backlink]:
    """The notes of ``scope`` whose links pointed at any of ``targets`` at ``moment``: those given,
    by then, links that mention a target, rebuilt as they stood then (``backlinks`` reads the links
    as they stand now, which may have dropped one since). ``known``: as ``_states_at``'s."""
    wanted = set(targets)
    sources = tx.get_notes(search_queries.linked_before(tx, scope, targets, moment))
    then = _states_at(tx, sources, moment, known)
    return [
        search_queries.Backlink(source, link.note_id, link.reason)
        for source in sources
        if (past := then.get(source.id)) is not None
        for link in past.links
        if link.note_id in wanted
    ]


def _retired_at(note: Note, moment: datetime) -> bool:
    """Whether ``note`` no longer holds at ``moment`` (its invalid_at has passed)."""
    return note.invalid_at is not None and as_utc(note.invalid_at) <= as_utc(moment)
