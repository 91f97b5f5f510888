"""Changes are the outbox: the index applies every change after the last one it absorbed.

The ledger commits first; the index follows. A crash in between leaves the index behind, never
ahead, and the next catch-up (on open, before a search, after add_note) re-applies what is
missing. Applying a change twice is harmless: an entry is always rebuilt from the note's current,
applied state in the ledger (never from a pending proposal).

Vectors are embedded once: each note's vector is kept in the ledger (``note_vectors``) under the
embedding model's identity and the sha256 of the document it is of. A process catching up with
changes another process made, and a rebuild, load those vectors instead of embedding again. The
position also lives in the ledger and only moves forward; an index built by another model is
refused (IndexModelChangedError) until ``amem reindex`` rebuilds it, never mixed or dropped.

A rebuild (an erasure's, ``amem reindex``) is written beside the build in use and replaces it in
the ledger once complete (``_build``); every process adopts it from there (``_follow_rebuilds``)
instead of applying the ledger's changes again.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.exc import SQLAlchemyError

from amem.domain.hashing import sha256_text
from amem.domain.models import Change, ChangeKind, Note, as_utc, utcnow
from amem.domain.progress import Progress, no_progress
from amem.errors import AmemError
from amem.index.base import BuildDroppedError, BuildMissingError, BuildOrigin, IndexPosition, VectorIndex
from amem.index.documents import (
    DOCUMENT_FORMAT,
    EMBEDDED_ATTRIBUTES,
    METADATA_ATTRIBUTES,
    document_text,
    index_entry,
)
from amem.index.embedders import Embedder
from amem.ledger import index_queries, search_queries
from amem.ledger.index_queries import LedgerCheck, StoredPosition
from amem.ledger.store import Ledger, LedgerTx

log = logging.getLogger(__name__)

CHANGES_PER_BATCH = 1000
NOTES_PER_PAGE = 512
#: The step a rebuild reports progress on (notes, deleted ones included, so the bar ends full).
INDEXING = "indexing notes"
#: Vectors kept for documents embedded ahead of their change (by add_note), at most this many.
REMEMBERED_VECTORS = 4096
#: Notes a catch-up holds beside the index, in memory, before writing them into it at once (a
#: search's: other processes' changes; add_note's: its own notes).
STAGED_LIMIT = 512
#: Builds a rebuild makes before it gives up, when other processes' rebuilds keep replacing them.
BUILD_ATTEMPTS = 3


class IndexModelChangedError(AmemError):
    """The index was built with another embedding model than this process uses."""

    def __init__(self, built_by: str, mine: str) -> None:
        (model, _, document), (my_model, _, my_document) = built_by.rpartition("/"), mine.rpartition("/")
        if model == my_model:  # same weights, another version of amem's index documents
            message = (
                f"the vector index holds documents of format {document!r}, but this version of amem "
                f"indexes format {my_document!r} (the embedding model is the same): run `amem reindex` "
                "to rebuild it"
            )
        else:
            message = (
                f"the vector index was built with embedding model {model!r}, but this process embeds "
                f"with {my_model!r}: run `amem reindex` to rebuild it with the configured model "
                "(AMEM_EMBEDDING_MODEL), or configure the model it was built with"
            )
        super().__init__(message)
        self.built_by = built_by
        self.mine = mine


@dataclass
class _Plan:
    """What one batch of changes asks of the index, per note."""

    embed: set[str] = field(default_factory=set)
    metadata: set[str] = field(default_factory=set)
    created: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, changes: Sequence[Change]) -> _Plan:
        plan = cls()
        for c in changes:
            if c.kind == ChangeKind.CREATE:
                plan.created.add(c.note_id)
            if c.kind == ChangeKind.CREATE or c.attribute in EMBEDDED_ATTRIBUTES:
                plan.embed.add(c.note_id)
            elif c.attribute in METADATA_ATTRIBUTES:
                plan.metadata.add(c.note_id)
        plan.metadata -= plan.embed
        return plan


@dataclass
class _Vectors:
    """Vectors for one batch of notes: those found in the ledger, and the new ones to keep there."""

    stored: dict[str, index_queries.StoredVector] = field(default_factory=dict)
    new: list[tuple[str, str, NDArray[np.float32]]] = field(default_factory=list)


class IndexSync:
    """Keeps one vector index in step with one ledger.

    ``position`` is what this process's view of the index has absorbed (the embedded Chroma never
    shows a process what another process wrote into a collection it has loaded, so each process
    applies every change itself, with the vectors the ledger keeps): the index and the notes staged
    beside it. The ledger's row is how far the stored index is, moved forward by whichever process
    gets there first, and only to what this process has written into the index itself: a staged
    note is not there until it is flushed, and a process may die before that.
    """

    def __init__(
        self, ledger: Ledger, index: VectorIndex, embedder: Embedder, *, name: str, legacy_name: str = ""
    ) -> None:
        self.ledger = ledger
        self.index = index
        self.embedder = embedder
        #: The index location's row in ``index_state``: each location (a local directory, a server's
        #: store) its own, so machines sharing one ledger, each with its own local index, never take
        #: each other's build for theirs. ``legacy_name``: the one row an older amem kept per ledger,
        #: taken over on first open where this location holds its build (nothing rebuilt).
        self.name = name
        self.legacy_name = legacy_name
        self.model = embedder.identity
        self.built_by = f"{self.model}/{DOCUMENT_FORMAT}"
        #: The view's lock. Lock order: this lock, then the ledger's write lock (a catch-up records
        #: under it); never the other way round, so a thread inside a write transaction never waits
        #: for it (``keep``).
        self._lock = threading.RLock()
        #: Guards ``_remembered`` alone, held for no I/O: ``keep`` takes it inside a write
        #: transaction while another thread's catch-up may hold ``_lock`` and wait for that write.
        self._remembered_lock = threading.Lock()
        self._position = IndexPosition()
        #: Erasures the ledger recorded when this process last read its check (None: not read yet).
        self._erasures: int | None = None
        #: Called when a check finds an erasure recorded since the last one this process read (by
        #: this or another process): what the process keeps of texts outside the ledger goes.
        self.on_erasure: list[Callable[[], object]] = []
        self._remembered: dict[str, tuple[str, NDArray[Any]]] = {}
        #: The position this process last wrote to the ledger (or found there).
        self._saved_seq = 0
        #: How far the index itself holds every change (``position`` less what is only staged):
        #: what the ledger may record.
        self._written_seq = 0
        #: Whether a recording catch-up left notes staged (add_note's): close writes them.
        self._deferred = False
        #: Whether add_note's catch-up left the position for a later write to keep (close does).
        self._owed = False
        #: Notes changed since the index last absorbed them, as a search's catch-up found them (the
        #: note as it stands, its vector; None: deleted): searches rank them beside the index.
        self._staged: dict[str, tuple[Note, NDArray[Any] | None]] = {}
        #: Staged notes created since the index was last written: it holds no entry for them.
        self._unindexed: set[str] = set()
        #: Vectors a catch-up that records nothing (a search's) embedded, by note id: (document
        #: sha256, vector), kept in the ledger by the next recording catch-up or on close, so no
        #: process embeds that document again. Forgotten when an erasure is noticed.
        self._unkept: dict[str, tuple[str, NDArray[np.float32]]] = {}
        #: Texts this process embedded for the index (not counting queries): what "embedded once" saves.
        self.embedded = 0
        #: When each live note this view holds was retired (its invalid_at), for the notes that have
        #: one: a search drops retired neighbours with it instead of asking the ledger each time.
        #: Read from the ledger once (``_retirements``), then kept by every catch-up from the notes
        #: it applies, so it is as current as the view. None: not read yet.
        self._retired: dict[str, datetime] | None = None
        #: The ledger's identity (``index_queries.new_identity``; "" until known), in every build's
        #: marker: builds of another ledger on the same index location are never dropped nor used.
        self._identity = ""
        index.watch(self._recorded_build)

    @property
    def position(self) -> IndexPosition:
        return self._position

    def stored_position(self) -> IndexPosition:
        """The ledger's record of the index (last_seq 0 when none)."""
        with self.ledger.read() as tx:
            row = index_queries.position(tx, self.name)
        return _position(row) if row is not None else IndexPosition()

    def remember(self, notes: Sequence[Note], documents: Sequence[str], vectors: NDArray[Any]) -> None:
        """Vectors add_note already computed for new notes' documents (with their neighbour query,
        in one call): the catch-up keeps them in the ledger and indexes them instead of embedding
        again. A note whose document changed before the catch-up misses and is embedded as usual."""
        with self._remembered_lock:
            for note, text, vector in zip(notes, documents, vectors, strict=True):
                self._remembered[note.id] = (sha256_text(text), vector)
            while len(self._remembered) > REMEMBERED_VECTORS:
                del self._remembered[next(iter(self._remembered))]

    def embed_ahead(self, notes: Sequence[Note]) -> None:
        """Embed, in one call, the documents of notes as a write is about to leave them (add_note's
        evolved neighbours), and remember the vectors for ``keep``."""
        if not notes:
            return
        documents = [document_text(n) for n in notes]
        vectors = self.embedder.embed(documents)
        self.embedded += len(documents)
        self.remember(notes, documents, vectors)

    def keep(self, tx: LedgerTx, note_ids: Sequence[str]) -> None:
        """In add_note's write transaction: keep the vectors remembered for these notes' documents
        as the transaction leaves them (one remembered for another document is not kept: the
        catch-up embeds that note), and move the ledger's position forward to what this process's
        index has absorbed before the write. So add_note writes once after its raw log; the
        position the catch-up reaches next is kept by the next write, or on close.

        It never waits for the view's lock: ``tx`` holds the ledger's write lock (SQLite's, the
        whole database), and another thread's catch-up holding the view's lock may be waiting for
        that lock to record (``_record``): the two waited on each other until SQLite gave up
        ("database is locked", 60 s later, every writer of every process stalled meanwhile). While
        that catch-up runs, the position is left to it (or to the next write, or close)."""
        with self._remembered_lock:
            wanted = [i for i in dict.fromkeys(note_ids) if i in self._remembered]
        rows: list[tuple[str, str, NDArray[np.float32]]] = []
        for note in tx.get_notes(wanted) if wanted else []:
            with self._remembered_lock:
                remembered = self._remembered.pop(note.id, None)
            if remembered is None:
                continue  # a catch-up took it meanwhile
            digest, vector = remembered
            if not note.deleted and digest == sha256_text(document_text(note)):
                rows.append((note.id, digest, np.asarray(vector, dtype=np.float32)))
        index_queries.put_vectors(tx, self.model, rows, utcnow())
        if self._lock.acquire(blocking=False):  # else a catch-up is under way: it keeps the position
            try:
                self._advance(tx)
            finally:
                self._lock.release()

    def save_position(self) -> None:
        """On close: write the notes add_note's catch-ups staged into the index, and keep the
        position that reached, when no write kept it since. A process that only searched writes
        nothing. The write is a catch-up's (``_write_view``): first level with the ledger's head,
        under the index's write lock, so it never writes back a view that misses another
        process's notes."""
        with self._lock:
            flushed, self._deferred = self._deferred, False
            if flushed and self._position.instance:
                self._write_view(record=True, position=True)
            elif flushed:
                self._flush_staged()
            owed = (self._owed or flushed) and self._written_seq > self._saved_seq
            if (owed or self._unkept) and self._position.instance:
                with index_queries.derived_write(self.ledger) as tx:
                    index_queries.put_vectors(tx, self.model, self._take_unkept_in(tx), utcnow())
                    if owed:
                        self._advance(tx)

    def _advance(self, tx: LedgerTx) -> None:
        p, written = self._position, self._written_seq
        if p.instance and written > self._saved_seq:
            index_queries.advance(tx, self.name, p.instance, self.built_by, written, utcnow())
            self._saved_seq = written
        self._owed = False

    def _absorbed(self, position: IndexPosition) -> None:
        """The view moved to ``position``; the index itself holds it too when nothing is staged."""
        self._position = position
        if not self._staged:
            self._written_seq = position.last_seq

    def _adopt_legacy(self) -> None:
        """An older amem's one row per ledger becomes this location's, if this location holds its
        build (a store upgraded in place); another location builds its own from the stored vectors."""
        if not self.legacy_name or self.legacy_name == self.name:
            return
        with self.ledger.read() as tx:
            if index_queries.position(tx, self.name) is not None:
                return
            old = index_queries.position(tx, self.legacy_name)
        if old is None or not self.index.has_build(old.instance):
            return
        try:
            with index_queries.derived_write(self.ledger) as tx:
                index_queries.adopt(tx, self.name, self.legacy_name, utcnow())
        except SQLAlchemyError:  # a read-only ledger: this location builds its own, unrecorded
            log.warning("could not record the index location's row: the ledger is read-only here")

    def verify_origin(self) -> bool:
        """Check the index against the ledger's record of it, on open.

        Refuses (IndexModelChangedError) an index built with another embedding model while the
        ledger holds notes: nothing is dropped, ``reindex`` rebuilds it explicitly. Builds the
        index anew, from the vectors the ledger keeps, when the build the ledger records is
        missing from it (an index directory deleted, a server emptied, an older amem's layout),
        was made by another ledger or ahead of this one, predates an erasure the ledger records
        (the erasure's rebuild was cut short: a note redacted in place would keep the vector of
        the erased text; compacted then, as an erasure is), or holds entries that answer no
        query (its files corrupted). Returns True then."""
        with self._lock:
            self._adopt_legacy()
            for _ in range(2):  # again when another process replaced the build it found meanwhile
                self._identity = index_queries.identify(self.ledger, self.name)
                with self.ledger.read() as tx:
                    seen = self.check(tx)
                row, last = seen.position, seen.head
                if row is not None and row.built_by and row.built_by != self.built_by and last > 0:
                    raise IndexModelChangedError(row.built_by, self.built_by)
                fits = row is not None and row.built_by == self.built_by and row.last_seq <= last
                origin = self.index.origin(row.instance) if fits and row is not None else None
                if origin is not None and origin.ledger not in ("", self._identity):
                    log.warning(
                        "the index build this ledger records was made by another ledger: building one"
                    )
                elif origin is not None and row is not None:
                    if self._predates_erasures(seen, waiting=False):
                        self._rebuild_for_erasures()
                        return True
                    self.index.use(row.instance)
                    broken = self.index.unanswering()
                    if broken:
                        log.warning(
                            "the vector index holds entries that answer no query (scopes %s: its files "
                            "corrupted?): rebuilding it from the ledger",
                            ", ".join(sorted(broken)[:5]),
                        )
                        self._build()
                        return True
                    self._absorbed(_position(row))
                    self._saved_seq = row.last_seq
                    return False
                with self.ledger.read() as tx:
                    now = index_queries.position(tx, self.name)
                if not fits or now is None or row is None or now.instance == row.instance:
                    break
        self._build()
        return True

    def catch_up(
        self,
        *,
        record: bool = True,
        position: bool = True,
        stage: bool | None = None,
        progress: Progress = no_progress,
        tx: LedgerTx | None = None,
        checked: LedgerCheck | None = None,
    ) -> int:
        """Apply every change after the absorbed position. Returns how many notes were (re)indexed.

        ``record``: also keep the vectors embedded here and move the ledger's position forward,
        in one transaction after the index write. Searches pass False: a read must not wait for
        the ledger's write lock, nor fail on a read-only database. ``position=False`` (add_note,
        whose next write or close keeps the position): write only when a vector was embedded.
        A search's catch-up does not write the index either: the notes it finds changed are staged
        in memory (``staged``, ranked beside the index by the search) and written into the index
        together, ``STAGED_LIMIT`` at a time or at the next recording catch-up. A server's
        searches, catching up with what workers write, then cost no index write each (about 60 ms
        a note on SQLite, bench/README.md, agents). ``stage=True`` stages in a recording catch-up
        too (add_note's own writes: Chroma writes one entry in about the time it writes ten), and
        close writes what is left; the ledger's position follows only what the index holds.

        ``tx``: a search's read transaction, which the catch-up reads in (so a search reads the
        ledger in one transaction); its first query reads the index's position and the ledger's
        last change together, and when nothing changed that is all it reads. ``checked``: that
        check, already read (``check``; a search on PostgreSQL reads it beside its embedding), so
        when nothing changed the catch-up reads nothing at all.

        A catch-up that writes the index (``stage=False``, or a search's once ``STAGED_LIMIT``
        notes are staged) does it under the index's write lock, after bringing the view level
        with the ledger's head inside that lock (``_write_view``): a local Chroma writes back the
        whole copy of a collection it loaded, so a view missing another process's notes would
        erase them from the files, for good, since that process recorded them as indexed.

        A recording catch-up that finds an erasure recorded since its last look, while the build
        in use was made before it and no rebuild is under way, rebuilds (an erasure whose rebuild
        was cut short); a build in use gone from the index is rebuilt too (BuildMissingError,
        which a search's catch-up raises instead)."""
        if tx is not None and record:
            raise ValueError("a catch-up that records writes in transactions of its own")
        stage = not record if stage is None else stage
        with self._lock:
            if not stage:
                return self._write_view(record=record, position=position, progress=progress)
            touched = self._catch_up(
                record=record, position=position, stage=True, progress=progress, tx=tx, checked=checked
            )
            if len(self._staged) >= STAGED_LIMIT:
                self._write_view()
            return touched

    def _write_view(
        self, *, record: bool = False, position: bool = False, progress: Progress = no_progress
    ) -> int:
        """Under the index's write lock: catch the view up to the ledger's head (read afresh inside
        the lock, never in a caller's older transaction), then write it, staged notes included;
        ``record``: and keep the vectors embedded and the position reached. A build in use found
        gone is rebuilt (recording) or reported (BuildMissingError)."""
        try:
            with self.index.writing():
                return self._catch_up(record=record, position=position, stage=False, progress=progress)
        except BuildMissingError:
            if not record:
                raise
            log.warning("the vector index's build in use is gone: rebuilding it from the ledger")
        self._build(progress=progress)
        with self.index.writing():
            return self._catch_up(record=record, position=position, stage=False, progress=progress)

    def _catch_up(
        self,
        *,
        record: bool,
        position: bool,
        stage: bool,
        progress: Progress = no_progress,
        tx: LedgerTx | None = None,
        checked: LedgerCheck | None = None,
    ) -> int:
        """``catch_up`` itself, under the view's lock (and, with ``stage=False``, the index's
        write lock): changes after the position are staged (``stage``, or while notes are staged
        already: a later version must replace the staged one, not be written over by it) or
        written, then what is staged is written at the end (``stage=False``)."""
        start = self._position.last_seq
        touched = self._rebuild(record=record, progress=progress) if start == 0 else set()
        kept: list[tuple[str, str, NDArray[np.float32]]] = []
        check = bool(self._position.instance)
        stale = False
        while True:
            with nullcontext(tx) if tx is not None else self.ledger.read() as read:
                if self._retired is None:  # once a process, in the read the position is read in
                    self._retired = search_queries.retirements(read)
                if check:  # in the first read, so a search costs no extra transaction
                    check = False
                    seen = checked if checked is not None else self.check(read)
                    if self._notice_erasures(seen.erasures) and record and self._predates_erasures(seen):
                        stale = True
                        break
                    row, head = seen.position, seen.head
                    if self._follow_rebuilds(row):
                        continue
                    if head <= self._position.last_seq:
                        break  # nothing changed since
                changes = list(islice(read.iter_changes(self._position.last_seq), CHANGES_PER_BATCH))
                if not changes:
                    break
                plan = _Plan.of(changes)
                notes = read.get_notes(sorted(plan.embed | plan.metadata))
                staging = stage or bool(self._staged)
                wanted = plan.embed | plan.metadata if staging else plan.embed  # staged: every vector
                vectors = _Vectors(index_queries.vectors(read, self.model, sorted(wanted)))
            touched |= self._stage(notes, vectors, plan) if staging else self._apply(notes, plan, vectors)
            kept += vectors.new
            p = self._position
            self._absorbed(IndexPosition(changes[-1].seq, p.ledger, self.built_by, p.instance))
        if stale:
            self._rebuild_for_erasures(progress=progress)
            return self._catch_up(record=record, position=position, stage=stage, progress=progress)
        if not stage:
            self._flush_staged()
        if record and stage and self._staged:
            self._deferred = True  # written by a later catch-up, STAGED_LIMIT at once, or on close
        if not record:
            self._leave_unkept(kept)  # kept by the next recording catch-up, or on close
        elif kept or self._unkept or (position and self._written_seq > self._saved_seq):
            self._record(kept)
        elif self._position.last_seq != start:
            self._owed = True  # kept by the next write of add_note, or on close
        self.index.release_loaded(pending_only=True)  # a build adopted: let go of the one replaced
        return len(touched)

    def _notice_erasures(self, erasures: int) -> bool:
        """Run ``on_erasure`` when the ledger holds more erasures than this process last saw: the
        first check only counts them (a process that opens after an erasure never read its texts).
        Returns whether it did."""
        seen, self._erasures = self._erasures, erasures
        if seen is not None and erasures != seen:
            log.info("%d erasure(s) recorded since this process last looked: its texts go", erasures - seen)
            for forget in self.on_erasure:
                forget()
            self._drop_staged()
            self._unkept.clear()  # vectors of documents that may hold erased words
            return True
        return False

    def _predates_erasures(self, seen: LedgerCheck, *, waiting: bool = True) -> bool:
        """Whether the recorded build was begun before an erasure the ledger records (its marker
        counts fewer; one made by an amem that counted none is taken as older), so a note the
        erasure redacted in place may keep the vector of the erased text. ``waiting``: not while a
        build begun to replace it after the erasure may still be recorded (the erasure's own
        rebuild, under way in another process; one abandoned is caught at the next open)."""
        row = seen.position
        if row is None or seen.erasures == 0:
            return False
        origin = self.index.origin(row.instance)
        if origin is None or origin.erasures >= seen.erasures:
            return False  # a build gone is another matter (BuildMissingError, verify_origin)
        under_way = waiting and any(
            o.erasures >= seen.erasures for o in self.index.builds_replacing(row.instance)
        )
        return not under_way

    def _rebuild_for_erasures(self, *, progress: Progress = no_progress) -> None:
        """Rebuild an index made before an erasure, then compact it, as an erasure does."""
        log.warning(
            "the vector index was built before an erasure the ledger records (that erasure's rebuild "
            "was cut short): rebuilding it from the ledger and compacting it"
        )
        self._build(progress=progress)
        self.index.compact()

    def _drop_staged(self) -> None:
        """Forget what searches staged (it may hold erased texts) and go back to where the index
        itself holds every change, so the catch-up reads those notes again as they stand now."""
        if not self._staged:
            return
        self._staged.clear()
        self._unindexed.clear()
        p = self._position
        self._position = IndexPosition(self._written_seq, p.ledger, p.built_by, p.instance)

    def check(self, tx: LedgerTx) -> LedgerCheck:
        """The index's stored position and the ledger's head (and erasures), in one query: what a
        catch-up reads first, and all it reads when nothing changed."""
        return index_queries.ledger_check(tx, self.name)

    def staged(self) -> dict[str, tuple[Note, NDArray[Any] | None]]:
        """The notes this process's view holds beside the index (see ``catch_up``): note id to
        (the note as it stands, its vector; None when deleted). The index's own entries for
        these ids may be stale: a search ranks these instead."""
        with self._lock:
            return dict(self._staged)

    def shadowed(self, scope: str) -> int:
        """How many of ``scope``'s staged notes the index may hold a stale entry for: a search
        draws that many more neighbours from it (a note created since it was written has none)."""
        with self._lock:
            unindexed = self._unindexed
            return sum(1 for i, (n, _) in self._staged.items() if n.scope == scope and i not in unindexed)

    def retired_among(self, note_ids: Sequence[str], moment: datetime) -> frozenset[str]:
        """Which of ``note_ids`` were retired at ``moment`` (invalid_at at or before it), as this
        view knows it: as current as its last catch-up, which a search makes just before asking. A
        retirement committed since is still caught by the search's read of the hits' notes."""
        moment = as_utc(moment)
        with self._lock:
            retired = self._retirements()
            return frozenset(i for i in note_ids if (at := retired.get(i)) is not None and at <= moment)

    def reindex(self, *, progress: Progress = no_progress) -> int:
        """Build the index again from the ledger, under this process's embedding model (the vectors
        kept for it are reused; the rest are embedded and kept), beside the build in use, which
        this process's other threads and other processes go on searching until the new one
        replaces it. Returns the number of notes indexed."""
        self._build(progress=progress)
        self.catch_up()
        return self.index.count()

    # -- internals ------------------------------------------------------------------------------

    def _retirements(self) -> dict[str, datetime]:
        """The view's retirements (the first catch-up reads them; a view asked before any catch-up
        reads them here): read at or after the position, so the catch-ups that follow only bring
        them forward."""
        if self._retired is None:
            with self.ledger.read() as tx:
                self._retired = search_queries.retirements(tx)
        return self._retired

    def _keep_retirements(self, notes: Sequence[Note]) -> None:
        """The notes a catch-up applies, as the view's retirements now stand."""
        if self._retired is None:
            return  # read whole when first asked, with these notes as they stand
        for note in notes:
            if note.invalid_at is not None and not note.deleted:
                self._retired[note.id] = as_utc(note.invalid_at)
            else:
                self._retired.pop(note.id, None)

    def _stage(self, notes: Sequence[Note], vectors: _Vectors, plan: _Plan) -> set[str]:
        """Hold changed notes beside the index (a search's catch-up) instead of writing it."""
        self._keep_retirements(notes)
        self._unindexed |= {n.id for n in notes if n.id in plan.created and n.id not in self._staged}
        live = [n for n in notes if not n.deleted]
        for note in notes:
            if note.deleted:
                self._staged[note.id] = (note, None)
        if live:
            for note, vector in zip(live, self._vectors(live, vectors), strict=True):
                self._staged[note.id] = (note, vector)
        return {n.id for n in notes}

    def _flush_staged(self) -> None:
        """Write the staged notes into the index, all in one upsert (and one delete per scope)."""
        if not self._staged:
            return
        live = [(n, v) for n, v in self._staged.values() if v is not None]
        gone = [n for n, v in self._staged.values() if v is None]
        if live:
            self.index.upsert([index_entry(n) for n, _ in live], np.stack([v for _, v in live]))
        for scope in sorted({n.scope for n in gone}):
            self.index.delete(scope, [n.id for n in gone if n.scope == scope])
        self._staged.clear()
        self._unindexed.clear()
        self._written_seq = self._position.last_seq

    def _build(self, *, progress: Progress = no_progress) -> None:
        """A new build of the index, written beside the one in use from the notes as they stand
        (with the vectors the ledger keeps), then recorded in the ledger in place of the build it
        replaces, if that is still the one recorded, and adopted; the replaced build is dropped.

        Other processes, and this one's other threads, go on searching and writing the build in
        use meanwhile, and adopt the new one at their next catch-up, from the position it was
        recorded at (``_follow_rebuilds``): none applies the ledger's changes again. A build that
        another one replaced first (two rebuilds at once) is dropped; the other is adopted when it
        began from a ledger holding every change and erasure this one began from, else this one
        is made again: the build that stays holds every change and erasure made before the
        rebuild was asked for (an erasure may add no change: the erasure count is compared too).
        A build abandoned half-way (its process died) is never recorded, and a later build drops
        it once it can no longer be recorded."""
        for _ in range(BUILD_ATTEMPTS):
            with self.ledger.read() as tx:
                seen = index_queries.ledger_check(tx, self.name)
                seen_identity = index_queries.ledger_identity(tx)  # another location's row's
            row = seen.position
            # the ledger's identity (made here for its first build, or for an older amem's row)
            ledger_id = (
                (row.identity if row is not None else "")
                or self._identity
                or seen_identity
                or index_queries.new_identity()
            )
            origin = BuildOrigin(row.instance if row is not None else "", seen.head, seen.erasures, ledger_id)
            build = uuid.uuid4().hex[:16]
            target = self.index.building(build, origin)
            won = False
            try:
                head, kept = self._fill(target, progress=progress)
            except BuildDroppedError:
                log.info("this rebuild of the index was dropped by another one recorded first")
            else:
                with self._lock:
                    with index_queries.derived_write(self.ledger) as tx:
                        index_queries.put_vectors(tx, self.model, kept, utcnow())
                        won = index_queries.switch(
                            tx,
                            self.name,
                            row.instance if row is not None else None,
                            StoredPosition(head, build, self.built_by, ledger_id),
                            utcnow(),
                        )
                    if won:
                        self._adopt(IndexPosition(head, ledger_id, self.built_by, build))
            if won:
                self._drop_replaced()
                return
            target.drop()
            with self.ledger.read() as tx:
                winner = index_queries.position(tx, self.name)
            theirs = self.index.origin(winner.instance) if winner is not None else None
            if (
                winner is not None
                and theirs is not None
                and winner.built_by == self.built_by
                and theirs.head >= origin.head
                and theirs.erasures >= origin.erasures
            ):
                # It began from a ledger holding every change and erasure this one began from, so
                # it holds all this one would. (Its position may be further on by now: what it
                # began from is what counts, as a note written into a build and deleted later
                # leaves its vector in the build's files.)
                log.info("another process rebuilt the index meanwhile, from a later ledger: adopted")
                self._drop_replaced()  # what it replaced, before an erasure's compaction
                return
            log.info("another process replaced the index while this one rebuilt it: building again")
        raise AmemError(
            f"the vector index could not be rebuilt: other processes replaced it {BUILD_ATTEMPTS} times "
            "while this one was building it; run `amem reindex` again"
        )

    def _drop_replaced(self) -> None:
        """Adopt the build the ledger records now (this one's, or one recorded since), and drop the
        builds that can no longer be recorded."""
        self._follow_recorded()

        self.index.drop_builds(self._recorded_build, ledger=self._identity)

    def _recorded_build(self) -> str | None:
        """The build the ledger records now (None: none yet)."""
        with self.ledger.read() as tx:
            row = index_queries.position(tx, self.name)
        return row.instance if row is not None else None

    def _adopt(self, position: IndexPosition) -> None:
        """Read and write ``position``'s build from now on, from its position: what this view
        staged or wrote beyond it is read from the ledger again by the next catch-up."""
        self.index.use(position.instance)
        if position.ledger.startswith(index_queries.IDENTITY_PREFIX):
            self._identity = position.ledger
        self._staged.clear()
        self._unindexed.clear()
        self._absorbed(position)
        self._saved_seq = position.last_seq
        self._retired = None  # read again as the adopted build stands, when next asked

    def _follow_rebuilds(self, row: StoredPosition | None) -> bool:
        """Another process rebuilt the index (an erasure, ``amem reindex``): under another model,
        refuse to write this model's vectors into it or query it; under the same model, adopt the
        new build from its recorded position. Returns True when the position moved."""
        if row is None or row.instance == self._position.instance:
            return False
        return self._follow_recorded()

    def _follow_recorded(self) -> bool:
        """Adopt the build the ledger records now, read afresh: a check may be older than the
        view (a search reads its check before it takes the lock, and another thread may have
        adopted a newer build meanwhile), and the build it names may be dropped already. Returns
        True when the view moved."""
        with self._lock:
            with self.ledger.read() as tx:
                row = index_queries.position(tx, self.name)
            if row is None or row.instance == self._position.instance:
                return False
            if row.built_by != self.built_by:
                raise IndexModelChangedError(row.built_by, self.built_by)
            replaced = self._position.instance
            self._adopt(_position(row))
            if replaced:  # another process's build: Chroma here still holds the one it replaced
                self.index.release_later()  # after the caller's read, when no write is in flight
            return True

    def follow_replaced(self, tx: LedgerTx | None = None) -> None:
        """A query found the build this view read replaced (BuildReplacedError): another process's
        rebuild recorded a new build, and dropped the one read, between the caller's catch-up and
        its query. Adopt the build the ledger records (unless another thread did already) and catch
        up with the ledger as ``tx`` (the search's read) sees it, staging what changed after the
        position the build was recorded at, so the query asked again finds every note."""
        with self._lock:
            self._follow_recorded()
            self.catch_up(record=False, tx=tx)

    def _record(self, kept: Sequence[tuple[str, str, NDArray[np.float32]]]) -> None:
        """Keep the vectors embedded here, and those searches embedded before, and move the
        ledger's position forward."""
        with index_queries.derived_write(self.ledger) as tx:
            rows = {
                note_id: (note_id, digest, vector) for note_id, digest, vector in self._take_unkept_in(tx)
            }
            rows |= {note_id: (note_id, digest, vector) for note_id, digest, vector in kept}  # the later one
            index_queries.put_vectors(tx, self.model, list(rows.values()), utcnow())
            self._advance(tx)

    def _leave_unkept(self, kept: Sequence[tuple[str, str, NDArray[np.float32]]]) -> None:
        """Vectors a catch-up that records nothing embedded: kept later (``_record``, on close)
        rather than embedded again by the next process to apply the same change. At most
        ``REMEMBERED_VECTORS``, the oldest going first."""
        for note_id, digest, vector in kept:
            self._unkept.pop(note_id, None)
            self._unkept[note_id] = (digest, vector)
        while len(self._unkept) > REMEMBERED_VECTORS:
            del self._unkept[next(iter(self._unkept))]

    def _take_unkept_in(self, tx: LedgerTx) -> list[tuple[str, str, NDArray[np.float32]]]:
        """The vectors searches left to keep, taken, that still belong in the ledger, read in the
        write ``tx`` that keeps them (as ``keep`` reads): none after an erasure this process has not
        noticed, and only those of documents as the notes stand now, the notes not deleted. A search
        embedded a document as it stood then: another process may have changed the note since and
        kept the newer document's vector, which this one must not replace."""
        taken = [(note_id, digest, vector) for note_id, (digest, vector) in self._unkept.items()]
        self._unkept.clear()
        if not taken or self.check(tx).erasures != self._erasures:
            return []  # an erasure since this process last looked: the texts may hold erased words
        current = {  # at most REMEMBERED_VECTORS ids: one query
            note.id: sha256_text(document_text(note))
            for note in tx.get_notes([note_id for note_id, _, _ in taken])
            if not note.deleted
        }
        return [row for row in taken if current.get(row[0]) == row[1]]

    def _rebuild(self, *, record: bool, progress: Progress = no_progress) -> set[str]:
        """From position 0 (a build of a ledger that was empty then), index the notes as they
        stand instead of replaying every change. The position is set only at the end, so an
        interrupted rebuild restarts."""
        done: set[str] = set()
        with self.index.writing():  # as any write of the build in use
            head, kept = self._fill(self.index, progress=progress, done=done)
        if head == 0:
            return set()
        p = self._position
        self._absorbed(IndexPosition(head, p.ledger, self.built_by, p.instance))
        if record:
            self._record(kept)
        else:
            self._leave_unkept(kept)
        return done

    def _fill(
        self, index: VectorIndex, *, progress: Progress = no_progress, done: set[str] | None = None
    ) -> tuple[int, list[tuple[str, str, NDArray[np.float32]]]]:
        """Write the notes as they stand into ``index``, a page at a time, with the vectors the
        ledger keeps (the others are embedded). Returns the ledger's last change seq before the
        first page (every change up to it is in ``index``) and the vectors embedded here, to keep."""
        with self.ledger.read() as tx:
            head = tx.last_change_seq()
            total = tx.count_notes() if head else 0
        kept: list[tuple[str, str, NDArray[np.float32]]] = []
        if head == 0:
            return 0, kept
        progress(INDEXING, 0, total)
        done = set() if done is None else done
        after = ""
        while True:
            with self.ledger.read() as tx:
                notes = search_queries.live_notes_page(tx, after=after, limit=NOTES_PER_PAGE)
                vectors = _Vectors(index_queries.vectors(tx, self.model, [n.id for n in notes]))
            if not notes:
                break
            done |= self._apply(notes, _Plan(embed={n.id for n in notes}), vectors, index=index)
            kept += vectors.new
            after = notes[-1].id
            progress(INDEXING, min(len(done), total), total)
        progress(INDEXING, total, total)
        return head, kept

    def _apply(
        self, notes: Sequence[Note], plan: _Plan, vectors: _Vectors, *, index: VectorIndex | None = None
    ) -> set[str]:
        """Write notes into ``index`` (the build in use by default; a new build's view)."""
        building = index is not None and index is not self.index
        index = self.index if index is None else index
        if not building:  # a build's notes may be older than the view's: it reads them on adoption
            with self._lock:
                self._keep_retirements(notes)
        gone = [n for n in notes if n.deleted]
        embed = [n for n in notes if not n.deleted and n.id in plan.embed]
        relabel = [n for n in notes if not n.deleted and n.id in plan.metadata]
        # a build embeds outside the lock, and leaves add_note's vectors to the write they are for
        found = self._vectors(embed, vectors, ahead=not building) if embed else None
        if embed:
            index.upsert([index_entry(n) for n in embed], found)
        if relabel:
            index.update_metadata([index_entry(n) for n in relabel])
        for scope in sorted({n.scope for n in gone}):
            index.delete(scope, [n.id for n in gone if n.scope == scope])
        return {n.id for n in [*embed, *relabel, *gone]}

    def _vectors(self, notes: Sequence[Note], vectors: _Vectors, *, ahead: bool = True) -> NDArray[Any]:
        """Each note's vector: kept in the ledger for its current document, else computed by
        add_note ahead of the write (``ahead``), else embedded now (all the missing ones in one
        call)."""
        digests = [sha256_text(document_text(n)) for n in notes]
        found: list[NDArray[Any] | None] = []
        for note, digest in zip(notes, digests, strict=True):
            stored = vectors.stored.get(note.id)
            with self._remembered_lock:
                computed = self._remembered.pop(note.id, None) if ahead else None
            if stored is not None and stored.document_sha256 == digest:
                found.append(stored.vector)
            elif computed is not None and computed[0] == digest:
                found.append(computed[1])
                vectors.new.append((note.id, digest, np.asarray(computed[1], dtype=np.float32)))
            else:
                found.append(None)
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            fresh = self.embedder.embed([document_text(notes[i]) for i in missing])
            with self._lock:
                self.embedded += len(missing)
            for slot, i in enumerate(missing):
                found[i] = fresh[slot]
                vectors.new.append((notes[i].id, digests[i], np.asarray(fresh[slot], dtype=np.float32)))
        return np.stack(found)  # type: ignore[arg-type]


def _position(row: StoredPosition) -> IndexPosition:
    return IndexPosition(row.last_seq, row.ledger_id, row.built_by, row.instance)
