"""What storing each note's document text in Chroma costs the index, as a collection grows.

amem reads notes from the ledger, never documents from the index; Chroma keeps a document in its
SQLite metadata and in a trigram full-text table. This script fills two persistent collections in
the same way (amem's HNSW settings), one given the documents and one not (vectors only, the same
ids and metadata), and times single-note upserts, as add_note makes them, at each size, plus the
store's size on disk:

    python bench/chroma_documents.py --sizes 1000 10000 50000

Vectors are random unit vectors (the HNSW work is the same in both columns), documents are
bench/scale.py's synthetic sentences with keywords, tags and context, as amem's documents are.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import chromadb  # noqa: E402
import numpy as np  # noqa: E402
from chromadb.config import Settings  # noqa: E402
from scale import PEOPLE, TOPICS, pct, sentence  # noqa: E402

from amem.index.chroma import HNSW  # noqa: E402

DIM = 384


def document(rng: random.Random) -> str:
    """A note's document as amem builds it: content, then keywords, tags and context."""
    text = sentence(rng)
    return (
        f"{text}\nkeywords: {rng.choice(PEOPLE)}, {rng.choice(TOPICS)}\ntags: account, "
        f"{rng.choice(TOPICS).split()[0].lower()}\ncontext: a conversation about {rng.choice(TOPICS)}"
    )


def vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 50_000])
    parser.add_argument("--upserts", type=int, default=300, help="single upserts timed at each size")
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="amem-chroma-docs-"))
    quiet = Settings(anonymized_telemetry=False)
    arms = {}
    for arm in ("with documents", "vectors only"):
        client = chromadb.PersistentClient(path=str(root / arm.replace(" ", "-")), settings=quiet)
        arms[arm] = client.get_or_create_collection(
            "notes", embedding_function=None, configuration={"hnsw": dict(HNSW)}
        )
    py_rng, np_rng = random.Random(3), np.random.default_rng(3)
    added = 0
    print(f"stores under {root}; {args.upserts} single upserts timed at each size\n")
    print(
        f"| {'notes':>7} | {'arm':>14} | {'upsert p50 ms':>13} | {'mean':>6} | {'p95':>6} | {'disk MB':>7} |"
    )
    print(f"|{'-' * 9}|{'-' * 16}|{'-' * 15}|{'-' * 8}|{'-' * 8}|{'-' * 9}|")
    for size in sorted(args.sizes):
        while added < size:
            n = min(args.batch, size - added)
            ids = [f"n{added + i}" for i in range(n)]
            docs = [document(py_rng) for _ in range(n)]
            vecs = vectors(np_rng, n)
            metas = [{"scope": "acme", "created": added + i} for i in range(n)]
            for arm, collection in arms.items():
                collection.upsert(
                    ids=ids,
                    embeddings=vecs,
                    metadatas=metas,
                    documents=docs if arm == "with documents" else None,
                )
            added += n
        timed: dict[str, list[float]] = {arm: [] for arm in arms}
        for _ in range(args.upserts):  # interleaved, so drift hits both arms alike
            doc, vec, meta = document(py_rng), vectors(np_rng, 1), [{"scope": "acme", "created": added}]
            for arm, collection in arms.items():
                t0 = time.perf_counter()
                collection.upsert(
                    ids=[f"n{added}"],
                    embeddings=vec,
                    metadatas=meta,
                    documents=[doc] if arm == "with documents" else None,
                )
                timed[arm].append((time.perf_counter() - t0) * 1000)
            added += 1
        for arm in arms:
            disk = (
                sum(f.stat().st_size for f in (root / arm.replace(" ", "-")).rglob("*") if f.is_file())
                / 2**20
            )
            t = timed[arm]
            p50, mean, p95 = pct(t, 0.5), statistics.mean(t), pct(t, 0.95)
            print(
                f"| {size:>7,} | {arm:>14} | {p50:>13.2f} | {mean:>6.2f} | {p95:>6.2f} | {disk:>7.0f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
