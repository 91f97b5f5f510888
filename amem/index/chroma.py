"""The vector index in ChromaDB: a persistent collection under AMEM_HOME/index, or a Chroma server.

The only module that imports chromadb. The collection's own metadata records how far into the
ledger's changes it is (see IndexPosition), so an index directory deleted, or a server emptied,
is noticed on the next open and rebuilt from the ledger.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import chromadb
import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.config import Settings as ChromaSettings
from chromadb.utils.embedding_functions import register_embedding_function
from numpy.typing import NDArray

from amem.config import Settings
from amem.domain.models import as_utc
from amem.errors import AmemError
from amem.index.base import IndexEntry, IndexPosition, VectorHit
from amem.index.embedders import Embedder, embedder_from_id

DEFAULT_COLLECTION = "amem_notes"
_SEQ, _LEDGER, _BUILT_BY = "amem_last_seq", "amem_ledger", "amem_built_by"


@register_embedding_function
class AmemEmbeddingFunction(EmbeddingFunction[Documents]):
    """amem's embedder, registered under its own name so Chroma rebuilds it from the collection's
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


class IndexUnavailableError(AmemError):
    """The Chroma server cannot be reached (the ledger is unaffected; search needs the index)."""


def open_chroma(settings: Settings, embedder: Embedder) -> ChromaIndex:
    """A persistent collection under ``settings.chroma_path``, or one on ``settings.chroma_url``.

    With a URL, its path (``http://host:8000/my_store``) names the collection, so one server can
    hold several stores; the default collection is ``amem_notes``.
    """
    quiet = ChromaSettings(anonymized_telemetry=False)
    name = DEFAULT_COLLECTION
    if settings.chroma_url:
        url = urlparse(settings.chroma_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise AmemError(f"AMEM_CHROMA_URL {settings.chroma_url!r} is not an http(s)://host:port URL")
        name = url.path.strip("/") or DEFAULT_COLLECTION
        try:
            client: Any = chromadb.HttpClient(
                host=url.hostname,
                port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
                settings=quiet,
            )
        except Exception as exc:  # chromadb raises ValueError / httpx errors on connect
            raise IndexUnavailableError(
                f"cannot reach the Chroma server at {settings.chroma_url}: {exc}"
            ) from exc
    else:
        settings.chroma_path.mkdir(parents=True, exist_ok=True)
        client = chromadb.PersistentClient(path=str(settings.chroma_path), settings=quiet)
    return ChromaIndex(client, name, embedder)


class ChromaIndex:
    """One Chroma collection of note entries, cosine space, vectors computed by amem."""

    def __init__(self, client: Any, name: str, embedder: Embedder) -> None:
        self.client = client
        self.name = name
        self.embedder = embedder
        self._function = AmemEmbeddingFunction(embedder.model_id, embedder)
        self._batch = max(1, min(1000, int(client.get_max_batch_size())))
        self.collection = self._open()

    def _open(self) -> Any:
        return self.client.get_or_create_collection(
            self.name,
            configuration={"hnsw": {"space": "cosine"}},
            metadata=_position_metadata(IndexPosition()),
            embedding_function=self._function,
        )

    # -- position -------------------------------------------------------------------------------

    def position(self) -> IndexPosition:
        meta = self.collection.metadata or {}
        return IndexPosition(
            last_seq=int(meta.get(_SEQ, 0)),
            ledger=str(meta.get(_LEDGER, "")),
            built_by=str(meta.get(_BUILT_BY, "")),
        )

    def set_position(self, position: IndexPosition) -> None:
        self.collection.modify(metadata=_position_metadata(position))

    def reset(self, position: IndexPosition) -> None:
        """Drop every entry (a new collection) and start again at ``position``."""
        with contextlib.suppress(Exception):  # already gone: nothing to drop
            self.client.delete_collection(self.name)
        self.collection = self._open()
        self.set_position(position)

    # -- entries --------------------------------------------------------------------------------

    def upsert(self, entries: Sequence[IndexEntry], vectors: NDArray[Any]) -> None:
        for start, stop in self._chunks(len(entries)):
            part = entries[start:stop]
            self.collection.upsert(
                ids=[e.note_id for e in part],
                embeddings=np.asarray(vectors[start:stop], dtype=np.float32),
                documents=[e.document for e in part],
                metadatas=[dict(e.metadata) for e in part],
            )

    def update_metadata(self, entries: Sequence[IndexEntry]) -> None:
        for start, stop in self._chunks(len(entries)):
            part = entries[start:stop]
            self.collection.update(ids=[e.note_id for e in part], metadatas=[dict(e.metadata) for e in part])

    def delete(self, note_ids: Sequence[str]) -> None:
        for start, stop in self._chunks(len(note_ids)):
            self.collection.delete(ids=list(note_ids[start:stop]))

    def count(self) -> int:
        return int(self.collection.count())

    def query(
        self,
        vector: NDArray[Any],
        k: int,
        *,
        scope: str,
        tags: Sequence[str] = (),
        alive_at: datetime | None = None,
    ) -> list[VectorHit]:
        clauses: list[Mapping[str, Any]] = [{"scope": scope}]
        clauses += [{"tags": {"$contains": tag}} for tag in tags]
        if alive_at is not None:
            clauses.append({"invalid_at": {"$gt": as_utc(alive_at).timestamp()}})
        where = clauses[0] if len(clauses) == 1 else {"$and": clauses}
        result = self.collection.query(
            query_embeddings=np.asarray([vector], dtype=np.float32),
            n_results=max(1, k),
            where=where,
            include=["distances"],
        )
        ids, distances = result["ids"][0], result["distances"][0]
        return [VectorHit(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    def _chunks(self, n: int) -> list[tuple[int, int]]:
        return [(start, min(n, start + self._batch)) for start in range(0, n, self._batch)]


def _position_metadata(position: IndexPosition) -> dict[str, Any]:
    return {_SEQ: position.last_seq, _LEDGER: position.ledger, _BUILT_BY: position.built_by}
