"""The vector index in ChromaDB: persistent collections under AMEM_HOME/index, or on a Chroma server.

The only module that imports chromadb. One store is a family of collections named after it
(``amem_notes`` by default). Each build of the index (a first build, a rebuild after an erasure,
``amem reindex``) has collections of its own, named after the build's id: a collection per scope,
so a search in one scope never sees another scope's notes and needs no metadata filter (in Chroma
a filter costs time in proportion to the entries it matches: 19 ms at 2,000 of 20,000 entries,
against 1.5 ms for a plain nearest-neighbour query); and an empty marker collection, made once
the build is complete, so an index directory deleted or a server emptied is noticed on the next
open and rebuilt. Which build is current is the ledger's to say (IndexPosition).

Builds apart, because the embedded Chroma never shows a process what another process wrote into
a collection it has loaded: a new build is written beside the current one, which every other
process goes on searching, and each adopts it once it is complete by opening its collections,
which it never loaded before, so it reads them whole. Written into the same collections, the new
build had to be applied again by every process open on the store, stalling each one's next search
for about as long as the build (bench/README.md, "What an erasure does to a server open on the
store").

An entry is a note's vector and the metadata a query filters on, never its text: what was said is
kept in the ledger alone (the keyword side of search reads the ledger's own full-text index), so
the index's files hold no text to erase or leak, and a write skips Chroma's trigram index of
documents (a rebuild of 100,000 entries from stored vectors: 74 s instead of 94 s,
bench/README.md). Each write sends an empty document, which also clears the text an entry
written by an older amem still holds.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

import chromadb
import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import ChromaError, InternalError, NotFoundError
from chromadb.utils.embedding_functions import register_embedding_function
from numpy.typing import NDArray

from amem.config import Settings
from amem.domain.models import as_utc
from amem.errors import ConfigError
from amem.index.base import (
    BuildDroppedError,
    BuildMissingError,
    BuildOrigin,
    BuildReplacedError,
    IndexEntry,
    IndexUnavailableError,
    VectorHit,
)
from amem.index.embedders import Embedder, embedder_from_id

log = logging.getLogger(__name__)
#: Chroma's full-text index of the documents (an FTS5 table, trigram tokens, in chroma.sqlite3).
_CHROMA_FTS = "embedding_fulltext_search"
#: The tables of chroma.sqlite3 holding an entry's metadata or document, each with the column that
#: names the entry (``embeddings.id``): rows left there by an entry that is gone are removed.
_ENTRY_ROWS = (
    ("embedding_metadata", "id"),
    ("embedding_metadata_array", "id"),
    (_CHROMA_FTS, "rowid"),
)

DEFAULT_STORE = "amem_notes"
_SCOPE = "amem_scope"
#: A build's marker's metadata: its BuildOrigin.
_REPLACES, _HEAD, _ERASURES, _LEDGER = "amem_replaces", "amem_built_from", "amem_erasures", "amem_ledger"
#: The cosine distance under which a probe's answer is its own vector (float rounding apart).
_OWN_DISTANCE = 1e-3
#: Draw this many extra neighbours so that retired notes can be dropped without a metadata filter.
RETIRED_MARGIN = 10
#: Write each collection's HNSW index to disk after every write. Chroma keeps writes in one log for
#: all collections and, by default, indexes a collection's entries 1,000 at a time; a write then
#: reads the log back to that collection's last flush, so with many small collections (a scope each)
#: the log is never purged and every write slows as the store grows (12 ms at 2,500 entries, 37 ms
#: at 15,000 over 20 collections). Flushing each write keeps it flat (8 ms at 7,500 entries over
#: 200 collections) and queries fast.
HNSW = {"space": "cosine", "sync_threshold": 1, "batch_size": 1}
T = TypeVar("T")


@register_embedding_function
class AmemEmbeddingFunction(EmbeddingFunction[Documents]):
    """amem's embedder, registered under its own name so Chroma rebuilds it from a collection's
    stored config (``{"model_id": ...}``) without the network: no fallback to Chroma's default
    function, which downloads its model."""

    def __init__(self, model_id: str, embedder: Embedder | None = None) -> None:
        self.model_id = model_id
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = embedder_from_id(self.model_id)
        return self._embedder

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "amem-embedder"

    def get_config(self) -> dict[str, Any]:
        return {"model_id": self.model_id}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> AmemEmbeddingFunction:
        return AmemEmbeddingFunction(str(config["model_id"]))

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]

    def is_legacy(self) -> bool:
        return False


def open_chroma(settings: Settings, embedder: Embedder) -> ChromaIndex:
    """Collections under ``settings.chroma_path``, or on the server at ``settings.chroma_url``.

    With a URL, its path (``http://host:8000/my_store``) names the store, so one server can hold
    several stores; the default store is ``amem_notes``.
    """
    quiet = ChromaSettings(anonymized_telemetry=False)
    store = DEFAULT_STORE
    if settings.chroma_url:
        url = urlparse(settings.chroma_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ConfigError(f"AMEM_CHROMA_URL {settings.chroma_url!r} is not an http(s)://host:port URL")
        store = url.path.strip("/") or DEFAULT_STORE
        if not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_-]{1,62}[a-zA-Z0-9]", store):
            raise ConfigError(f"store name {store!r} in AMEM_CHROMA_URL: use 3-64 of [a-zA-Z0-9_-]")
        try:
            client: Any = chromadb.HttpClient(
                host=url.hostname,
                port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
                settings=quiet,
            )
        except Exception as exc:  # chromadb raises ValueError or httpx errors when it cannot connect
            raise IndexUnavailableError(
                f"cannot reach the Chroma server at {settings.chroma_url}: {exc}"
            ) from exc
    else:
        client = _persistent_client(settings.chroma_path, quiet)
    index = ChromaIndex(client, store, embedder)
    if not settings.chroma_url:
        index.path = settings.chroma_path
    return index


class IndexUnreadableError(IndexUnavailableError):
    """The local index's database file (``chroma.sqlite3``) is damaged: not a database, or one that
    fails SQLite's check. Nothing in the directory can be read; being derived, it is deleted
    (``remove_unreadable``) and built anew from the ledger by ``amem reindex``."""

    def __init__(self, message: str, path: Path, cause: str) -> None:
        super().__init__(message)
        self.path = path
        self.cause = cause


class BuildUnreadableError(BuildMissingError):
    """A collection of the local build in use fails to read or write (its vector files damaged):
    as a build gone missing, a search reports it and a catch-up that writes rebuilds it."""


def _persistent_client(path: Path, settings: ChromaSettings) -> Any:
    """A client of the local index at ``path``. One that cannot be opened (a damaged or read-only
    database file, a directory it may not write) raises IndexUnavailableError naming the
    directory, the cause and the fix (IndexUnreadableError: damaged); Chroma's own error said
    "internal error ... a bug in amem". Chroma keeps a client's system per directory for the
    process, and leaves a system that failed to start in that cache, so every later open of the
    directory in the process failed ("'RustBindingsAPI' object has no attribute 'bindings'"):
    that system is forgotten, and the next open starts afresh."""
    from filelock import FileLock

    try:
        path.mkdir(parents=True, exist_ok=True)
        # Chroma creates its tables on a client's first open without guarding against another
        # process doing the same: two workers starting together on a fresh store failed with
        # "table collections already exists". The opens of one directory take turns.
        with FileLock(str(_open_lock(path))):
            return chromadb.PersistentClient(path=str(path), settings=settings)
    except Exception as exc:  # chromadb's InternalError, an OSError, a lock it cannot take
        _forget_failed_system(str(path))
        cause = _first_line(exc)
        if _damaged(path / "chroma.sqlite3"):
            raise IndexUnreadableError(
                f"the vector index at {path} cannot be opened ({cause}): its database file "
                "chroma.sqlite3 is damaged. The index is derived from the ledger: `amem reindex` "
                "deletes the directory and builds a new one from the vectors the ledger keeps",
                path,
                cause,
            ) from exc
        raise IndexUnavailableError(
            f"the vector index at {path} cannot be opened ({cause}): this process must be able to "
            "create, read and write that directory and its files (AMEM_HOME/index). The index is "
            "derived from the ledger: once the directory is writable, or moved away, `amem reindex` "
            "builds it again"
        ) from exc


def _open_lock(path: Path) -> Path:
    return path.with_name(path.name + ".open.lock")


def _forget_failed_system(identifier: str) -> None:
    """Drop the system Chroma cached for ``identifier`` (a directory) when no client holds it: one
    whose start failed (a client that opened it would hold a reference)."""
    from chromadb.api.shared_system_client import SharedSystemClient

    with SharedSystemClient._refcount_lock:
        if SharedSystemClient._identifier_to_refcount.get(identifier, 0) > 0:
            return
        system = SharedSystemClient._identifier_to_system.pop(identifier, None)
    if system is not None:
        with contextlib.suppress(Exception):  # it never started whole
            system.stop()


def _damaged(database: Path) -> bool:
    """Whether ``database`` exists and SQLite cannot read it whole (read-only, so a file another
    process has open, or one this process may not write, is never taken for damaged)."""
    import sqlite3

    if not database.is_file():
        return False
    try:
        db = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False  # not opened at all: a permission, not a damaged file
    try:
        return db.execute("PRAGMA quick_check(1)").fetchone() != ("ok",)
    except sqlite3.OperationalError:  # locked, or unreadable to this user: not the file's fault
        return False
    except sqlite3.DatabaseError:  # "file is not a database", "database disk image is malformed"
        return True
    finally:
        db.close()


def remove_unreadable(path: Path) -> bool:
    """Delete the unreadable index directory ``path`` so a new one can be built in its place.
    Deleted, never kept aside: it holds nothing the ledger does not (every vector is stored there),
    and a copy kept would hold what a later erasure must remove (tags) where no erasure reaches.
    Renamed first under the open lock, so no process opens it half deleted, and only if its database
    file is still damaged there: another `amem reindex` that met the same damage may have replaced it
    since (deleting that one failed its rename, or took a new index from under the processes using
    it). Returns whether it deleted the directory."""
    import shutil

    from filelock import FileLock

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    doomed = path.with_name(f".{path.name}.removing-{stamp}")
    with FileLock(str(_open_lock(path))):
        if not _damaged(path / "chroma.sqlite3"):
            return False
        path.rename(doomed)
    _forget_failed_system(str(path))
    shutil.rmtree(doomed, ignore_errors=True)
    return True


def _first_line(exc: BaseException) -> str:
    """An exception in one line: its type and its first line."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def collection_name(store: str, build: str, scope: str) -> str:
    """``<store>.<build>.<readable part of the scope>.<digest of the scope>``: valid for Chroma,
    unique, and never the name of another build's collection."""
    readable = re.sub(r"[^a-zA-Z0-9_-]+", "-", scope)[:40].strip("-_") or "scope"
    digest = hashlib.sha256(scope.encode()).hexdigest()[:16]
    return f"{store}.{build}.{readable}.{digest}"


def marker_name(store: str, build: str) -> str:
    """The empty collection made when ``build`` begins, with its BuildOrigin in its metadata."""
    return f"{store}.{build}"


def build_of(store: str, name: str) -> str | None:
    """The build a collection of ``store`` belongs to (its marker or an entry collection); None for
    a collection an older amem named (``<store>``, ``<store>.<scope>.<digest>``)."""
    parts = name.split(".")
    if parts[0] != store or len(parts) not in (2, 4):
        return None
    return parts[1]


def new_build_id() -> str:
    return uuid.uuid4().hex[:16]


class ChromaIndex:
    """A store of note entries in Chroma: one collection per scope, cosine space, amem's vectors."""

    #: The directory of a local, persistent Chroma (None with a server).
    path: Path | None = None

    def __init__(self, client: Any, store: str, embedder: Embedder, build: str = "") -> None:
        self.client = client
        self.store = store
        self.embedder = embedder
        #: The build this object reads and writes ("" before the sync has chosen one: no entries).
        self.build = build
        #: A view of a build being made (``building``): a write into a dropped collection raises
        #: BuildDroppedError instead of being let go.
        self._making = False
        self._function = AmemEmbeddingFunction(embedder.model_id, embedder)
        self._batch = max(1, min(1000, int(client.get_max_batch_size())))
        #: Collection handles by (build, scope): a thread that read the build just before ``use``
        #: switched it never files another build's handle under the new one.
        self._scopes: dict[tuple[str, str], Any] = {}
        #: Asks the ledger which build it records (``watch``): None, a missing build answers nothing.
        self._recorded: Callable[[], str | None] | None = None
        #: Builds in use a query found damaged, with the first error: written no more (``_writable``).
        self._damaged: dict[str, IndexUnavailableError] = {}
        #: Another process's build was adopted: what Chroma loaded of the one it replaced is to go.
        self._release_pending = False

    def _collection(self, scope: str, *, create: bool, build: str | None = None) -> Any | None:
        """``scope``'s collection of ``build`` (the build in use by default; None: none there)."""
        build = self.build if build is None else build
        found = self._scopes.get((build, scope))
        if found is not None or not build:
            return found
        name = collection_name(self.store, build, scope)
        if create:
            # Never into a build that was dropped: a write a process began before an erasure
            # would leave the erased notes' vectors in a collection no compaction removes. The
            # marker is checked before and after (drop_builds deletes it before it lists the
            # collections to delete: a collection made after that listing finds it gone).
            if not self.has_build(build):
                return self._dropped(build)
            found = self.client.get_or_create_collection(
                name,
                configuration={"hnsw": dict(HNSW)},
                metadata={_SCOPE: scope},
                embedding_function=self._function,
            )
            if not self.has_build(build):
                with contextlib.suppress(NotFoundError, ValueError):
                    self.client.delete_collection(name)
                return self._dropped(build)
        else:
            try:
                found = self.client.get_collection(name, embedding_function=self._function)
            except (NotFoundError, ValueError):
                return None
        self._scopes[(build, scope)] = found
        return found

    def _dropped(self, build: str) -> None:
        if self._making:
            raise BuildDroppedError(f"build {build} was dropped while being made")
        return None

    def _in_scope(
        self, scope: str, create: bool, work: Callable[[Any], T], empty: T, *, reading: bool = False
    ) -> T:
        """Run ``work`` on the scope's collection; when the collection was dropped meanwhile (the
        build was replaced, by this or another process), once more with a fresh handle of the
        build this object uses now, never creating it again: a dropped build stays dropped, and
        what was written into it is applied again to the build that replaced it. A read
        (``reading``) of a build the ledger no longer records raises BuildReplacedError instead of
        answering nothing: its caller follows the recorded build and reads again.

        Each attempt names its build once (``build``): another thread may adopt a new build
        meanwhile (``use``), and a failure of the build read must never be taken for one of the
        build adopted."""
        for attempt in (1, 2):
            build = self.build
            try:
                collection = self._collection(scope, create=create and attempt == 1, build=build)
            except InternalError as exc:
                return self._unreadable(scope, build, exc, reading, empty)
            if collection is None:
                self._refuse_missing(build, reading)
                return empty
            try:
                return work(collection)
            except NotFoundError:
                if self._making:
                    raise BuildDroppedError(f"build {build} was dropped while being made") from None
                self._scopes.pop((build, scope), None)
                self._scopes = {k: v for k, v in self._scopes.items() if v is not collection}
                if attempt == 2:
                    self._refuse_missing(build, reading)
                    return empty
            except InternalError as exc:
                return self._unreadable(scope, build, exc, reading, empty)
        return empty

    def _unreadable(self, scope: str, build: str, exc: InternalError, reading: bool, empty: T) -> T:
        """Chroma failed to read or write ``build``'s collection of ``scope``. A build the ledger
        no longer records is being dropped by the rebuild that replaced it (Chroma reads a
        collection another process is deleting as "Missing metadata segment"): a read raises
        BuildReplacedError, a write is let go (``_in_scope``). A local build still recorded: its
        files are damaged (a vector file zeroed, Chroma's id map gone: "Error finding id"), which
        BuildUnreadableError says, and a catch-up that writes rebuilds it from the ledger, as a
        build gone missing. A server, or a build being made: the index cannot answer now."""
        cause = _first_line(exc)
        if not self._making and self._replaced(build):
            self._scopes = {k: v for k, v in self._scopes.items() if k[0] != build}
            if reading:
                raise BuildReplacedError(build) from exc
            return empty
        if self.path is None:
            raise IndexUnavailableError(f"the Chroma server failed on scope {scope!r}: {cause}") from exc
        if self._making:
            raise IndexUnavailableError(
                f"the vector index at {self.path} could not be written: {cause}"
            ) from exc
        error = BuildUnreadableError(
            f"the vector index's files for scope {scope!r} cannot be read ({cause}; in {self.path}): "
            "the next open, or catch-up that writes, rebuilds it from the ledger; `amem reindex` "
            "rebuilds it now"
        )
        self._damaged.setdefault(build, error)
        raise error from exc

    def _replaced(self, build: str) -> bool:
        """Whether the ledger records a build other than ``build`` (asked after ``build`` failed, so
        a rebuild that dropped it has recorded its own by then)."""
        if not build or self._recorded is None:
            return False
        recorded = self._recorded()
        return recorded is not None and recorded != build

    def _writable(self) -> None:
        """Refuse a write into a build in use found damaged (BuildUnreadableError): Chroma takes
        the write (into its log) and still fails every query of the damaged scope, so the
        catch-up writing it rebuilds the build instead, as it does a build gone missing."""
        damaged = None if self._making else self._damaged.get(self.build)
        if damaged is not None:
            raise BuildUnreadableError(str(damaged))

    def _refuse_missing(self, build: str, reading: bool) -> None:
        """A scope without a collection is an empty scope, unless ``build`` is gone: while the ledger
        still records it (no rebuild replaced it: something else deleted it, an older amem of
        another store on this location, an emptied server), answering nothing would hide that
        every entry is lost, so BuildMissingError says so; once the ledger records another build
        (a rebuild replaced it since the caller looked), a read raises BuildReplacedError, as the
        build replaced holds entries that the scope's empty answer would leave out."""
        if not build or self._making or self._recorded is None or self.has_build(build):
            return
        recorded = self._recorded()
        if recorded == build:
            raise BuildMissingError(
                f"the vector index's build {build} is gone from Chroma (deleted by something other than "
                "an amem rebuild: another store on the same index location, an emptied server or "
                "directory): the next catch-up that writes rebuilds it from the ledger; `amem reindex` "
                "rebuilds it now"
            )
        if reading and recorded is not None:
            raise BuildReplacedError(build)

    def watch(self, recorded: Callable[[], str | None]) -> None:
        """``recorded``: which build the ledger records now (asked only when a build is found
        missing or failing: replaced by a rebuild, or lost or damaged)."""
        self._recorded = recorded

    def writing(self) -> AbstractContextManager[object]:
        """A local Chroma loads a collection's vectors once and writes them back whole on each
        write: a process writing a view loaded before another process's write would erase that
        write from the files. The writers of one directory take turns (a file lock beside it) and
        catch their view up with the ledger inside that turn. A server keeps one copy: no lock."""
        if self.path is None:
            return contextlib.nullcontext()
        return _write_lock(self.path)

    def unanswering(self) -> list[str]:
        """The scopes whose collection counts entries but does not answer one of its own vectors
        with itself, or fails to answer (truncated, zeroed or missing vector files). A collection
        whose vector files look whole (``hnsw_files.looks_whole``: a header and a few bytes of each
        file) is not asked: only the others are loaded and queried once, so an open stays cheap. A
        local Chroma only: a server's files are its own."""
        if not self.build or self.path is None:
            return []
        from amem.index import hnsw_files

        prefix = f"{self.store}.{self.build}."
        segments = self._vector_segments()
        broken: list[str] = []
        for c in self._store_collections():
            if not c.name.startswith(prefix):
                continue
            directory = segments.get(str(c.id))
            if directory is not None and hnsw_files.looks_whole(directory):
                continue
            try:
                if c.count() == 0:
                    continue
                got = c.get(limit=1, include=["embeddings"])
                probe = np.asarray(got["embeddings"][:1], dtype=np.float32)
                if len(probe):  # counted, yet no vector to read: as broken as one that answers nothing
                    answer = c.query(query_embeddings=probe, n_results=1, include=["distances"])
                    # an entry's own vector is its nearest neighbour: a zeroed length file answered
                    # other entries, each at distance 1
                    if answer["ids"][0] and float(answer["distances"][0][0]) <= _OWN_DISTANCE:
                        continue
            except NotFoundError:
                continue  # dropped meanwhile: no longer the build in use
            except ChromaError as exc:
                log.warning("index collection %s cannot answer a query: %s", c.name, exc)
            broken.append(str((c.metadata or {}).get(_SCOPE, c.name)))
        return broken

    def _vector_segments(self) -> dict[str, Path]:
        """Each collection's vector segment directory, by collection id (a local Chroma)."""
        import sqlite3

        assert self.path is not None
        db = sqlite3.connect(str(self.path / "chroma.sqlite3"))
        try:
            rows = db.execute("SELECT id, collection FROM segments WHERE scope = 'VECTOR'").fetchall()
        finally:
            db.close()
        return {str(collection): self.path / str(segment) for segment, collection in rows}

    def _store_collections(self, *, legacy: bool = False) -> list[Any]:
        """The store's collections (``legacy``: with the one an older amem named after the store
        alone, which kept its build's id)."""
        prefix = f"{self.store}."
        found, offset, page = [], 0, 100
        while True:
            batch = self.client.list_collections(limit=page, offset=offset)
            found += [c for c in batch if c.name.startswith(prefix) or (legacy and c.name == self.store)]
            if len(batch) < page:
                return found
            offset += page

    # -- builds ---------------------------------------------------------------------------------

    def has_build(self, build: str) -> bool:
        """Whether ``build`` exists in this Chroma (its marker does)."""
        return self.origin(build) is not None

    def building(self, build: str, origin: BuildOrigin) -> ChromaIndex:
        """Begin ``build`` (its marker, holding ``origin``, comes before any of its entries) and
        return a view of the same Chroma that reads and writes it."""
        self.client.get_or_create_collection(
            marker_name(self.store, build),
            metadata={
                _REPLACES: origin.replaces,
                _HEAD: origin.head,
                _ERASURES: origin.erasures,
                **({_LEDGER: origin.ledger} if origin.ledger else {}),
            },
            embedding_function=self._function,
        )
        view = ChromaIndex(self.client, self.store, self.embedder, build)
        view.path = self.path
        view._recorded = self._recorded
        view._making = True
        return view

    def origin(self, build: str) -> BuildOrigin | None:
        if not build:
            return None
        try:
            marker = self.client.get_collection(
                marker_name(self.store, build), embedding_function=self._function
            )
        except (NotFoundError, ValueError):
            return None
        return _origin(marker.metadata)

    def use(self, build: str) -> None:
        """Read and write ``build``'s collections from now on (a build adopted: made by this process
        or another one)."""
        self.build = build
        self._scopes = {k: v for k, v in self._scopes.items() if k[0] == build}

    def release_later(self) -> None:
        """Another process's build was adopted: let go of the one it replaced at the next
        ``release_loaded(pending_only=True)`` (never inside the caller's read transaction)."""
        self._release_pending = self.path is not None

    def release_loaded(self, *, pending_only: bool = False) -> bool:
        """Let go of every collection this process's local Chroma loaded. Chroma keeps each one it
        loaded, its vectors in memory and its files open, until the process ends, and has no call
        to let go of one that another process deleted: a server grew by a copy of the index at
        every reindex and erasure another process made (10.7 MB each at 4,000 notes), the erased
        entries' vectors among them. Chroma's bindings are made anew; they load the build in use
        again as it is searched, and a call in flight ends on the old ones, which then go.

        Only while no write of this process is in flight on the old bindings (another Memory on
        the same store shares them): the write lock is taken without waiting, and when another
        writer holds it the release stays pending for a later call, so no search waits on a
        write. ``pending_only``: only if ``release_later`` asked for it. Returns whether the
        bindings were made anew (never with a Chroma server, or bindings of another kind)."""
        if pending_only and not self._release_pending:
            return False
        server = getattr(self.client, "_server", None)
        if self.path is None or server is None or not hasattr(server, "bindings"):
            self._release_pending = False
            return False
        from filelock import FileLock, Timeout

        lock = self.writing()
        try:
            lock.acquire(timeout=0)
        except Timeout:  # a writer's turn, here or in another process: after it
            self._release_pending = True
            return False
        try:
            with FileLock(str(_open_lock(self.path))):  # as every open of the directory
                server.start()  # sets the new bindings once they are made: the old ones until then
        except Exception as exc:  # kept as they were: searches go on, the memory stays taken
            log.warning("could not let go of the replaced index build's memory: %s", _first_line(exc))
            self._release_pending = False
            return False
        finally:
            lock.release()
        self._release_pending = False
        _return_freed_memory()
        return True

    def drop_builds(self, recorded: Callable[[], str | None], *, ledger: str = "") -> int:
        """Delete every collection of the store that belongs to no build which can still be
        recorded: all but the build ``recorded()`` names (the ledger's, read after each listing of
        the collections, so a build recorded meanwhile is not taken for a doomed one) and the
        builds descended from it (begun to replace it, or one of those), which may be recorded
        next. So the builds it replaced go, builds begun to replace one of those (their
        compare-and-set can only fail; a process that died left them), and the collections of an
        older amem, named after the store alone. Each doomed build's marker goes first, then the
        collections are listed again: a process about to make a collection of a doomed build finds
        its marker gone (``_collection``), or made it before that listing. Returns how many
        collections were deleted.

        Only the builds of the ledger ``ledger`` identifies are doomed: those whose marker names
        it, the ones the recorded build replaced (an older amem's markers name no ledger) and
        those begun from one of them. Another ledger opened on the same location (a scratch
        database on the production machine, another store on one server) leaves them alone."""
        dropped = 0
        doomed: set[str] = set()
        for doomed_markers in (True, False):
            collections = self._store_collections(legacy=True)
            keep = recorded()
            if keep is None:
                return dropped
            origins = self._origins(collections)
            kept = self._kept(origins, keep)
            doomed |= self._mine(origins, keep, ledger) - kept
            for c in collections:
                build = build_of(self.store, c.name)
                if build is not None and (build in kept or (build in origins and build not in doomed)):
                    continue
                if doomed_markers and (build is None or c.name != marker_name(self.store, build)):
                    continue
                with contextlib.suppress(NotFoundError, ValueError):
                    self.client.delete_collection(c.name)
                    dropped += 1
            self._scopes = {k: v for k, v in self._scopes.items() if k[0] not in doomed}
        if dropped:
            self._remove_dropped_segments()  # else each rebuild would leave a copy of the vectors
        return dropped

    def _origins(self, collections: Sequence[Any]) -> dict[str, BuildOrigin]:
        """Each build's origin, from its marker among ``collections`` (or read, for a build whose
        marker was made after the listing read that part of it); a build without one has none."""
        origins: dict[str, BuildOrigin] = {}
        unmarked: set[str] = set()
        for c in collections:
            build = build_of(self.store, c.name)
            if build is not None and c.name == marker_name(self.store, build):
                origins[build] = _origin(c.metadata)
            elif build is not None:
                unmarked.add(build)
        for build in unmarked - set(origins):
            found = self.origin(build)
            if found is not None:
                origins[build] = found
        return origins

    @staticmethod
    def _kept(origins: Mapping[str, BuildOrigin], keep: str) -> set[str]:
        """``keep`` and the builds descended from it (begun to replace it, or one of those)."""
        kept = {keep}
        while more := {b for b, o in origins.items() if o.replaces in kept} - kept:
            kept |= more
        return kept

    @staticmethod
    def _mine(origins: Mapping[str, BuildOrigin], keep: str, ledger: str) -> set[str]:
        """The builds of the ledger ``ledger`` identifies ("": not known yet): those whose marker
        names it, ``keep`` and the builds it replaced (as far as their markers name no other
        ledger), and the builds begun from one of those."""
        ours = ("", ledger)
        mine = {b for b, o in origins.items() if ledger and o.ledger == ledger}
        chain: set[str] = set()
        at = keep
        while at and at not in chain:
            origin = origins.get(at)
            if origin is not None and origin.ledger not in ours and at != keep:
                break  # another ledger's build (a clone's): never this one's to drop
            chain.add(at)
            if origin is None:
                break
            at = origin.replaces
        mine |= chain
        while more := {b for b, o in origins.items() if o.replaces in mine and o.ledger in ours} - mine:
            mine |= more
        return mine

    def builds_replacing(self, build: str) -> list[BuildOrigin]:
        """The origins of the builds begun to replace ``build`` (being made, or abandoned)."""
        origins = self._origins(self._store_collections())
        return [o for o in origins.values() if o.replaces == build]

    def drop(self) -> None:
        """Delete this object's build (a build that lost the race to another one), its marker first."""
        prefix = f"{self.store}.{self.build}."
        found = self._store_collections()
        found.sort(key=lambda c: c.name != marker_name(self.store, self.build))
        for collection in found:
            if collection.name.startswith(prefix) or collection.name == marker_name(self.store, self.build):
                with contextlib.suppress(NotFoundError, ValueError):
                    self.client.delete_collection(collection.name)
        self._scopes.clear()
        self._remove_dropped_segments()

    # -- entries --------------------------------------------------------------------------------

    def upsert(self, entries: Sequence[IndexEntry], vectors: NDArray[Any]) -> None:
        self._writable()
        rows = np.asarray(vectors, dtype=np.float32)
        for scope, positions in _by_scope(entries).items():
            for start in range(0, len(positions), self._batch):
                part = positions[start : start + self._batch]

                def write(collection: Any, part: list[int] = part) -> None:
                    collection.upsert(
                        ids=[entries[i].note_id for i in part],
                        embeddings=rows[part],
                        documents=[""] * len(part),  # the text stays in the ledger
                        metadatas=[dict(entries[i].metadata) for i in part],
                    )

                self._in_scope(scope, True, write, None)

    def update_metadata(self, entries: Sequence[IndexEntry]) -> None:
        self._writable()
        for scope, positions in _by_scope(entries).items():
            for start in range(0, len(positions), self._batch):
                part = positions[start : start + self._batch]

                def write(collection: Any, part: list[int] = part) -> None:
                    collection.update(
                        ids=[entries[i].note_id for i in part],
                        documents=[""] * len(part),  # as upsert: no text left from an older amem
                        metadatas=[dict(entries[i].metadata) for i in part],
                    )

                self._in_scope(scope, False, write, None)

    def delete(self, scope: str, note_ids: Sequence[str]) -> None:
        self._writable()
        for start in range(0, len(note_ids), self._batch):
            part = list(note_ids[start : start + self._batch])
            self._in_scope(scope, False, lambda c, part=part: c.delete(ids=part), None)

    def count(self) -> int:
        """The entries of this object's build (a collection dropped meanwhile counts none)."""
        if not self.build:
            return 0
        prefix = f"{self.store}.{self.build}."
        total = 0
        for c in self._store_collections():
            if c.name.startswith(prefix):
                with contextlib.suppress(NotFoundError):
                    total += int(c.count())
        return total

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
        """Nearest first. Retired entries are dropped after the query when a few extra neighbours
        cover them (the usual case); only otherwise does Chroma filter on invalid_at.

        ``retired``: which of these ids are retired at ``alive_at``, answered by the caller (a
        search asks its index view, which knows the ledger's retirements). The neighbours are
        then drawn without their metadata: Chroma reads an entry's metadata row by row, which
        made the query 3-4x slower (60 neighbours: 1.0-1.6 ms with distances only, 3.5-5.2 ms
        with metadata; bench/README.md, "Peers", tenth session).

        ``created_by``: Chroma filters on created_at (a search as of a past moment only, so the
        common query stays unfiltered)."""
        tag_clauses: list[Mapping[str, Any]] = [{"tags": {"$contains": tag}} for tag in tags]
        if created_by is not None:
            tag_clauses.append({"created_at": {"$lte": as_utc(created_by).timestamp()}})
        if alive_at is None:
            return self._query(scope, vector, k, tag_clauses)
        moment = as_utc(alive_at).timestamp()
        wanted = k + RETIRED_MARGIN
        if retired is not None:
            drawn = self._query(scope, vector, wanted, tag_clauses)
            gone = retired([h.note_id for h in drawn]) if drawn else frozenset()
            alive = [h for h in drawn if h.note_id not in gone]
        else:
            pairs = self._query(scope, vector, wanted, tag_clauses, with_metadata=True)
            drawn = [h for h, _ in pairs]
            alive = [h for h, meta in pairs if float(meta.get("invalid_at", 0.0)) > moment]  # type: ignore[union-attr]
        if len(alive) >= k or len(drawn) < wanted:
            return alive[:k]
        return self._query(scope, vector, k, [*tag_clauses, {"invalid_at": {"$gt": moment}}])

    def _query(
        self,
        scope: str,
        vector: NDArray[Any],
        k: int,
        clauses: Sequence[Mapping[str, Any]],
        *,
        with_metadata: bool = False,
    ) -> Any:
        where = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": list(clauses)}

        def run(collection: Any) -> Any:
            result = collection.query(
                query_embeddings=np.asarray([vector], dtype=np.float32),
                n_results=max(1, k),
                where=where,
                include=["distances", "metadatas"] if with_metadata else ["distances"],
            )
            hits = [
                VectorHit(i, 1.0 - float(d))
                for i, d in zip(result["ids"][0], result["distances"][0], strict=True)
            ]
            if with_metadata:
                return list(zip(hits, result["metadatas"][0], strict=True))
            return hits

        return self._in_scope(scope, False, run, [], reading=True)

    def compact(self) -> int:
        """After an erasure and a rebuild: merge Chroma's full-text index, purge its write-ahead log
        and VACUUM its SQLite file, so no page keeps an erased document; remove the vector segment
        directories of the collections the rebuild deleted (Chroma leaves them on disk, with the
        erased notes' vectors); and clear
        the unused capacity of the live segments' files, which Chroma writes from memory it never
        zeroed (amem.index.hnsw_files). A local, persistent Chroma only: a server's files are out of
        amem's reach (README, erasure: what it does not reach).

        Returns the live segments whose files were not checked, their layout being one this code
        does not know (a Chroma release that changed it)."""
        if self.path is None:
            return 0
        import shutil
        import sqlite3

        from amem.index import hnsw_files

        dropped, live = self._segment_directories()
        db = sqlite3.connect(str(self.path / "chroma.sqlite3"))
        try:
            listed = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = {str(row[0]) for row in listed}
            # Chroma (1.5) deleting a collection leaves its entries' array metadata (a note's tags,
            # erased ones included) in embedding_metadata_array, live rows VACUUM keeps: every
            # metadata row, and full-text row, of an entry that is gone goes
            for table, key in _ENTRY_ROWS:
                if table in tables and "embeddings" in tables:
                    db.execute(f"DELETE FROM {table} WHERE {key} NOT IN (SELECT id FROM embeddings)")
            db.commit()
            if _CHROMA_FTS in tables:
                # FTS5 deletes a document by adding a tombstone; its terms and their positions (the
                # text, trigram by trigram) stay in the index until its segments are merged
                db.execute(f"INSERT INTO {_CHROMA_FTS}({_CHROMA_FTS}) VALUES ('optimize')")
                db.commit()
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
        unchecked = 0
        for directory in dropped:
            shutil.rmtree(directory, ignore_errors=True)
        for directory in live:
            if hnsw_files.is_segment(directory) and hnsw_files.clear_unused_capacity(directory) is None:
                log.warning(
                    "index segment %s: unknown file layout, its unused capacity was not cleared",
                    directory.name,
                )
                unchecked += 1
        return unchecked

    def _segment_directories(self) -> tuple[list[Path], list[Path]]:
        """The vector segment directories of deleted collections (Chroma leaves them on disk) and
        of live ones. Listed before the live segments are read: Chroma records a segment before it
        writes its directory, so a directory another process is creating is never taken for one
        left behind."""
        import sqlite3

        assert self.path is not None
        candidates = [p for p in self.path.iterdir() if p.is_dir() and _is_uuid(p.name)]
        db = sqlite3.connect(str(self.path / "chroma.sqlite3"))
        try:
            live = {str(row[0]) for row in db.execute("SELECT id FROM segments")}
        finally:
            db.close()
        return [d for d in candidates if d.name not in live], [d for d in candidates if d.name in live]

    def _remove_dropped_segments(self) -> int:
        """Remove the vector segment directories of deleted collections. Returns how many.

        Each file is emptied before it is removed: another process open on the store (a server, a
        worker) keeps a replaced build's files open until it ends, and removing a name frees no
        byte while a process holds the file, so every reindex and erasure left a copy of the
        vectors on disk for as long as any server ran, the erased entries' among them. Emptying
        frees them at once; no process reads them again (Chroma loaded them into memory, and a
        build replaced is not searched)."""
        if self.path is None:
            return 0
        import shutil

        dropped, _ = self._segment_directories()
        for directory in dropped:
            _empty_files(directory)
            shutil.rmtree(directory, ignore_errors=True)
        return len(dropped)

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            close()


def _return_freed_memory() -> None:
    """Hand what the old bindings freed back to the system (glibc's ``malloc_trim``, where there is
    one): glibc keeps freed memory in the arena of the thread that used it, and with Chroma's and
    the embedder's threads a server's resident memory still grew by about 4 MB a rebuild at 4,000
    notes though nothing leaked (bench/follower_memory.py)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def _empty_files(directory: Path) -> None:
    """Truncate every file under ``directory`` to no bytes (one that cannot be is left as it is)."""
    for file in directory.rglob("*"):
        with contextlib.suppress(OSError):
            if file.is_file() and not file.is_symlink():
                os.truncate(file, 0)


#: One write lock per local index directory and process (a FileLock counts its holder's re-entries).
_WRITE_LOCKS: dict[str, Any] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> Any:
    """The lock the writers of the local index at ``path`` take turns with, beside it."""
    from filelock import FileLock

    name = str(path.with_name(path.name + ".write.lock"))
    with _WRITE_LOCKS_GUARD:
        lock = _WRITE_LOCKS.get(name)
        if lock is None:
            lock = _WRITE_LOCKS[name] = FileLock(name)
        return lock


def _origin(metadata: Mapping[str, Any] | None) -> BuildOrigin:
    meta = metadata or {}
    return BuildOrigin(
        str(meta.get(_REPLACES, "")),
        int(meta.get(_HEAD, -1)),
        int(meta.get(_ERASURES, -1)),
        str(meta.get(_LEDGER, "")),
    )


def _is_uuid(name: str) -> bool:
    try:
        uuid.UUID(name)
    except ValueError:
        return False
    return True


def _by_scope(entries: Sequence[IndexEntry]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        groups.setdefault(str(entry.metadata["scope"]), []).append(i)
    return groups
