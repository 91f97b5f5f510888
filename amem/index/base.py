"""What the services need from the derived index."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from numpy.typing import NDArray

from amem.domain.models import Note


class NeighbourFinder(Protocol):
    """Nearest notes of one scope: the link-generation step's source of candidates."""

    def embed_documents(self, documents: Sequence[str]) -> NDArray[Any]:
        """The vectors of new notes' documents, in one call (safe in another thread)."""
        ...

    def nearest_many(
        self, asks: Sequence[tuple[Note, str]], k: int, *, vectors: NDArray[Any] | None = None
    ) -> list[list[Note]]:
        """For each new (not yet written) note and its query text, its ``k`` nearest notes of the
        same scope, the earlier notes of ``asks`` included. ``vectors``: the notes' documents'
        vectors, when already embedded (``embed_documents``)."""
        ...


@dataclass(frozen=True)
class IndexPosition:
    """How far into the ledger's changes one build of a vector index is, and what built it.

    Kept in the ledger (``index_state``), never in the index itself, and moved only forward.
    ``instance`` names the build (a rebuild or a reindex starts a new one; an index directory
    deleted is noticed as a missing instance); ``ledger`` fingerprints the ledger it was built
    from (the hash of its first change); ``built_by`` is the embedding model's identity and the
    document format: vectors from another model are never mixed in.
    """

    last_seq: int = 0
    ledger: str = ""
    built_by: str = ""
    instance: str = ""


@dataclass(frozen=True)
class IndexEntry:
    """One note as the vector index stores it (beside the vector of its document): the metadata
    filtered on."""

    note_id: str
    metadata: Mapping[str, Any]


@dataclass(frozen=True)
class VectorHit:
    note_id: str
    similarity: float


class VectorIndex(Protocol):
    """A vector store holding one entry per live (not deleted) note, kept apart by scope."""

    def has_build(self, build: str) -> bool:
        """Whether ``build`` is complete in this index (false for a build never made, abandoned
        half-way, or lost with the index's files)."""
        ...

    def building(self, build: str) -> VectorIndex:
        """A view of the same index that reads and writes ``build``, written beside the build in
        use (which other processes go on searching) until it is complete."""
        ...

    def use(self, build: str) -> None:
        """Read and write ``build`` from now on."""
        ...

    def publish(self, head: int) -> None:
        """Mark this view's build complete (``has_build``), filled from the ledger as it stood at
        change ``head``."""
        ...

    def built_from(self, build: str) -> int | None:
        """The ledger's last change when ``build`` began to be filled (None: no such build)."""
        ...

    def drop_builds(self, *, keep: str | None) -> int:
        """Delete every build but ``keep`` (None: all). Returns how many parts were deleted."""
        ...

    def drop(self) -> None:
        """Delete this view's build."""
        ...

    def upsert(self, entries: Sequence[IndexEntry], vectors: NDArray[Any]) -> None: ...

    def update_metadata(self, entries: Sequence[IndexEntry]) -> None: ...

    def delete(self, scope: str, note_ids: Sequence[str]) -> None: ...

    def query(
        self,
        vector: NDArray[Any],
        k: int,
        *,
        scope: str,
        tags: Sequence[str] = (),
        alive_at: datetime | None = None,
        retired: Callable[[Sequence[str]], AbstractSet[str]] | None = None,
    ) -> list[VectorHit]:
        """The ``k`` entries of ``scope`` nearest ``vector``, carrying every tag in ``tags`` and, with
        ``alive_at``, not retired then (no invalid_at at or before it), best first. ``retired``:
        the caller's answer to which of some ids are retired at ``alive_at`` (the ledger's), used
        instead of reading each entry's metadata from the index."""
        ...

    def count(self) -> int: ...

    def compact(self) -> int:
        """Remove what an erasure left in the index's files. Returns the parts it could not check."""
        ...

    def close(self) -> None: ...
