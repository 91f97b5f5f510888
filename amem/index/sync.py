"""Changes are the outbox: the index applies every change after the last one it absorbed.

The ledger commits first; the index follows. A crash in between leaves the index behind, never
ahead, and the next catch-up (on open, before a search, after add_note) re-applies what is
missing. Applying a change twice is harmless: an entry is always rebuilt from the note's current,
applied state in the ledger (never from a pending proposal).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np
from numpy.typing import NDArray

from amem.domain.models import Change, ChangeKind, Note, utcnow
from amem.domain.progress import Progress, no_progress
from amem.index.base import IndexPosition, VectorIndex
from amem.index.documents import (
    DOCUMENT_FORMAT,
    EMBEDDED_ATTRIBUTES,
    METADATA_ATTRIBUTES,
    document_text,
    index_entry,
)
from amem.index.embedders import Embedder
from amem.ledger import search_queries
from amem.ledger.store import Ledger, LedgerTx

CHANGES_PER_BATCH = 1000
NOTES_PER_PAGE = 512
#: The step a rebuild reports progress on (notes, deleted ones included, so the bar ends full).
INDEXING = "indexing notes"
#: Vectors kept for documents embedded ahead of their change (by add_note), at most this many.
REMEMBERED_VECTORS = 4096


@dataclass
class _Plan:
    """What one batch of changes asks of the index, per note."""

    embed: set[str] = field(default_factory=set)
    metadata: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, changes: Sequence[Change]) -> _Plan:
        plan = cls()
        for c in changes:
            if c.kind == ChangeKind.CREATE or c.attribute in EMBEDDED_ATTRIBUTES:
                plan.embed.add(c.note_id)
            elif c.attribute in METADATA_ATTRIBUTES:
                plan.metadata.add(c.note_id)
        plan.metadata -= plan.embed
        return plan


class IndexSync:
    """Keeps one vector index in step with one ledger."""

    def __init__(self, ledger: Ledger, index: VectorIndex, embedder: Embedder, *, name: str) -> None:
        self.ledger = ledger
        self.index = index
        self.embedder = embedder
        self.name = name
        self.built_by = f"{embedder.model_id}/{DOCUMENT_FORMAT}"
        self._lock = threading.RLock()
        self._position = index.position()
        self._remembered: dict[str, NDArray[Any]] = {}

    @property
    def position(self) -> IndexPosition:
        return self._position

    def remember(self, documents: Sequence[str], vectors: NDArray[Any]) -> None:
        """Vectors already computed for these document texts (add_note embeds a new note's document
        with its neighbour query, in one call): the catch-up uses them instead of embedding again.
        A text that changed before the catch-up simply misses and is embedded as usual."""
        with self._lock:
            for text, vector in zip(documents, vectors, strict=True):
                self._remembered[text] = vector
            while len(self._remembered) > REMEMBERED_VECTORS:
                del self._remembered[next(iter(self._remembered))]

    def verify_origin(self) -> bool:
        """Start over when the index was built from another ledger, model or document format, or
        claims changes this ledger does not have. Returns True when it started over."""
        with self._lock:
            pos = self.index.position()
            with self.ledger.read() as tx:
                ledger_id = _fingerprint(tx)
                last = tx.last_change_seq()
            foreign = bool(pos.ledger and ledger_id and pos.ledger != ledger_id)
            if pos.built_by == self.built_by and not foreign and pos.last_seq <= last:
                self._position = pos
                return False
            self.index.reset(IndexPosition(0, ledger_id, self.built_by))
            self._position = self.index.position()
            return True

    def catch_up(self, *, record: bool = True, progress: Progress = no_progress) -> int:
        """Apply every change after the absorbed position. Returns how many notes were (re)indexed.

        ``record``: also note the new position in the ledger's index_state (a mirror for status
        reports; the index's own record rules). Searches pass False: a read must not wait for the
        ledger's write lock, nor fail on a read-only database."""
        with self._lock:
            start = self._position.last_seq
            touched = self._rebuild(progress) if start == 0 else set()
            while True:
                with self.ledger.read() as tx:
                    changes = list(islice(tx.iter_changes(self._position.last_seq), CHANGES_PER_BATCH))
                    if not changes:
                        break
                    plan = _Plan.of(changes)
                    notes = tx.get_notes(sorted(plan.embed | plan.metadata))
                    ledger_id = self._position.ledger or _fingerprint(tx)
                touched |= self._apply(notes, plan)
                self._advance(IndexPosition(changes[-1].seq, ledger_id, self.built_by))
            if record and self._position.last_seq != start:
                with self.ledger.write() as tx:
                    tx.set_index_position(self.name, self._position.last_seq, utcnow())
            return len(touched)

    def reindex(self, *, progress: Progress = no_progress) -> int:
        """Drop the index and build it again from the ledger. Returns the number of notes indexed."""
        with self._lock:
            with self.ledger.read() as tx:
                ledger_id = _fingerprint(tx)
            self.index.reset(IndexPosition(0, ledger_id, self.built_by))
            self._position = self.index.position()
            self.catch_up(progress=progress)
            return self.index.count()

    # -- internals ------------------------------------------------------------------------------

    def _rebuild(self, progress: Progress = no_progress) -> set[str]:
        """From zero, index the notes as they stand instead of replaying every change: each live note
        is embedded once. The position is set only at the end, so an interrupted rebuild restarts."""
        with self.ledger.read() as tx:
            head = tx.last_change_seq()
            ledger_id = _fingerprint(tx)
            total = tx.count_notes() if head else 0
        if head == 0:
            return set()
        progress(INDEXING, 0, total)
        done: set[str] = set()
        after = ""
        while True:
            with self.ledger.read() as tx:
                notes = search_queries.live_notes_page(tx, after=after, limit=NOTES_PER_PAGE)
            if not notes:
                break
            done |= self._apply(notes, _Plan(embed={n.id for n in notes}))
            after = notes[-1].id
            progress(INDEXING, min(len(done), total), total)
        progress(INDEXING, total, total)
        self._advance(IndexPosition(head, ledger_id, self.built_by))
        return done

    def _apply(self, notes: Sequence[Note], plan: _Plan) -> set[str]:
        gone = [n for n in notes if n.deleted]
        embed = [n for n in notes if not n.deleted and n.id in plan.embed]
        relabel = [n for n in notes if not n.deleted and n.id in plan.metadata]
        if embed:
            self.index.upsert(
                [index_entry(n) for n in embed], self._vectors([document_text(n) for n in embed])
            )
        if relabel:
            self.index.update_metadata([index_entry(n) for n in relabel])
        for scope in sorted({n.scope for n in gone}):
            self.index.delete(scope, [n.id for n in gone if n.scope == scope])
        return {n.id for n in [*embed, *relabel, *gone]}

    def _vectors(self, texts: Sequence[str]) -> NDArray[Any]:
        known: list[NDArray[Any] | None] = [self._remembered.pop(t, None) for t in texts]
        missing = [i for i, v in enumerate(known) if v is None]
        if missing:
            fresh = self.embedder.embed([texts[i] for i in missing])
            for slot, i in enumerate(missing):
                known[i] = fresh[slot]
        return np.stack(known)  # type: ignore[arg-type]

    def _advance(self, position: IndexPosition) -> None:
        self.index.set_position(position)
        self._position = position


def _fingerprint(tx: LedgerTx) -> str:
    """The ledger's identity: the hash of its first change ("" while it has none)."""
    first = tx.get_change(1)
    return first.hash if first is not None else ""
