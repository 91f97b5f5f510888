"""What the services need from the derived index."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from numpy.typing import NDArray

from amem.domain.models import Note
from amem.errors import AmemError


class IndexUnavailableError(AmemError):
    """The vector index cannot answer: a Chroma server out of reach, or the build the ledger records
    gone from it (the ledger is unaffected; search needs the index)."""


class BuildMissingError(IndexUnavailableError):
    """The build in use, still the one the ledger records, is gone from the index (its collections
    deleted by something else than a rebuild): answering from it would be answering nothing."""


class BuildReplacedError(IndexUnavailableError):
    """A query found the build it read gone, or failing (Chroma's "Missing metadata segment" while
    another process deletes it), and the ledger records another build: a rebuild (``amem reindex``,
    an erasure's) replaced it between the caller's look at the ledger and its query. Not damage:
    the caller adopts the recorded build and asks again (``IndexSync.follow_replaced``)."""

    def __init__(self, build: str) -> None:
        super().__init__(
            f"the vector index's build {build} was replaced by a rebuild in another process while it "
            "was being searched, again after this search moved to the new build: search again"
        )
        self.build = build


class BuildDroppedError(AmemError):
    """The build being written was dropped meanwhile (another build replaced the one it was to
    replace): what it holds can never be recorded, and writing on would only recreate it."""


@dataclass(frozen=True)
class BuildOrigin:
    """What a build of the index is made from, recorded with it when it begins: the build it is
    to replace ("" when none was recorded), and the ledger's last change and erasure count read
    before the build read anything else (it holds every change and erasure up to them)."""

    replaces: str
    head: int
    erasures: int
    #: The identity of the ledger the build is of ("" for a build made before builds recorded it):
    #: a ledger never drops nor uses a build another ledger made on the same index location.
    ledger: str = ""


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
    deleted is noticed as a missing instance); ``ledger`` identifies the ledger it was built
    from (a random identity made with its first build, "" for an older amem's); ``built_by`` is
    the embedding model's identity and the document format: vectors from another model are never
    mixed in.
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
        """Whether ``build`` exists in this index (false for one never made, dropped, or lost
        with the index's files)."""
        ...

    def building(self, build: str, origin: BuildOrigin) -> VectorIndex:
        """Begin ``build``, made from ``origin``, beside the build in use (which other processes
        go on searching): a view that reads and writes it, and raises BuildDroppedError once the
        build has been dropped."""
        ...

    def origin(self, build: str) -> BuildOrigin | None:
        """What ``build`` was made from (None: no such build)."""
        ...

    def use(self, build: str) -> None:
        """Read and write ``build`` from now on."""
        ...

    def release_later(self) -> None:
        """Another process's build was adopted: ``release_loaded(pending_only=True)`` lets go of
        the one it replaced."""
        ...

    def release_loaded(self, *, pending_only: bool = False) -> bool:
        """Let go of what this process loaded of builds another process replaced (an index that
        keeps loaded builds in memory until the process ends), unless a writer holds the index
        (then it stays pending). Returns whether it did."""
        ...

    def drop_builds(self, recorded: Callable[[], str | None], *, ledger: str = "") -> int:
        """Delete every build of the ledger identified by ``ledger`` that can no longer be
        recorded: all but the one ``recorded()`` names (the ledger's, asked after each look at the
        builds) and those begun to replace it or one of them. Another ledger's builds stay.
        Returns how many parts were deleted."""
        ...

    def builds_replacing(self, build: str) -> list[BuildOrigin]:
        """The origins of the builds begun to replace ``build`` (being made, or abandoned)."""
        ...

    def writing(self) -> AbstractContextManager[object]:
        """Held around catching a view up with the ledger and writing it: processes that keep a
        copy of the index in memory and write it back whole (a local Chroma) take turns, each
        writing only a view that holds every change the others wrote."""
        ...

    def watch(self, recorded: Callable[[], str | None]) -> None:
        """Who to ask which build the ledger records, when the build in use is found missing or
        failing: a query of a build replaced meanwhile raises BuildReplacedError (the caller follows
        the recorded build and asks again; a write into it is let go); one still recorded raises
        BuildMissingError (BuildUnreadableError when it fails)."""
        ...

    def unanswering(self) -> list[str]:
        """The scopes of the build in use whose part holds entries but answers no neighbour (or
        fails to answer): files corrupted on disk. Loads each part once."""
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
        created_by: datetime | None = None,
    ) -> list[VectorHit]:
        """The ``k`` entries of ``scope`` nearest ``vector``, carrying every tag in ``tags`` and, with
        ``alive_at``, not retired then (no invalid_at at or before it), best first. ``retired``:
        the caller's answer to which of some ids are retired at ``alive_at`` (the ledger's), used
        instead of reading each entry's metadata from the index. ``created_by``: only entries of
        notes created at or before it (a search as of a past moment)."""
        ...

    def count(self) -> int: ...

    def compact(self) -> int:
        """Remove what an erasure left in the index's files. Returns the parts it could not check."""
        ...

    def close(self) -> None: ...
