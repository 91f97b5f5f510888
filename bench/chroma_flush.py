"""How often Chroma should flush a collection's HNSW index: single-upsert cost as one collection
grows, under each ``sync_threshold``, with many collections written beside it.

amem flushes after every write (``HNSW`` in amem/index/chroma.py). Each flush rewrites the
collection's id map in full, so an upsert costs more as its scope grows. This script fills one
collection of --collections (the others take single writes in between, round robin, as other
scopes do) and times single upserts in the big one and in the small ones at each size, and
counts the rows left in Chroma's write-ahead log (``embeddings_queue``), which a flush lets
Chroma purge:

    python bench/chroma_flush.py --thresholds 1 100 --sizes 1000 10000

Vectors only (random unit vectors, 384 dimensions); a fresh store per threshold.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import chromadb  # noqa: E402
import numpy as np  # noqa: E402
from chromadb.config import Settings  # noqa: E402
from scale import pct  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--thresholds", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--collections", type=int, default=20)
    parser.add_argument("--upserts", type=int, default=300, help="single upserts timed at each size")
    args = parser.parse_args()
    rng = np.random.default_rng(1)

    def vectors(n: int) -> np.ndarray:
        v = rng.standard_normal((n, 384)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    print(
        f"| {'sync_threshold':>14} | {'big collection':>14} | {'big: upsert mean ms':>19} | {'p95':>6} ",
        end="",
    )
    print(f"| {'small ones: mean ms':>19} | {'log rows':>8} |")
    print(f"|{'-' * 16}|{'-' * 16}|{'-' * 21}|{'-' * 8}|{'-' * 21}|{'-' * 10}|")
    for threshold in args.thresholds:
        root = tempfile.mkdtemp(prefix=f"amem-chroma-flush-{threshold}-")
        client = chromadb.PersistentClient(path=root, settings=Settings(anonymized_telemetry=False))
        hnsw = {"space": "cosine", "sync_threshold": threshold, "batch_size": max(1, min(threshold, 100))}
        collections = [
            client.get_or_create_collection(
                f"scope{i}", embedding_function=None, configuration={"hnsw": hnsw}
            )
            for i in range(args.collections)
        ]
        big, added, written = collections[0], 0, 0
        for size in sorted(args.sizes):
            while added < size:
                n = min(250, size - added)
                big.upsert(ids=[f"fill{added + i}" for i in range(n)], embeddings=vectors(n))
                added += n
            timed_big: list[float] = []
            timed_small: list[float] = []
            for j in range(2 * args.upserts):
                small = j % 2 == 1
                collection = collections[1 + j // 2 % (args.collections - 1)] if small else big
                t0 = time.perf_counter()
                collection.upsert(ids=[f"one{written}"], embeddings=vectors(1))
                (timed_small if small else timed_big).append((time.perf_counter() - t0) * 1000)
                written += 1
                if not small:
                    added += 1
            with sqlite3.connect(Path(root) / "chroma.sqlite3") as db:
                log_rows = db.execute("SELECT count(*) FROM embeddings_queue").fetchone()[0]
            big_mean, big_p95, small_mean = (
                statistics.mean(timed_big),
                pct(timed_big, 0.95),
                statistics.mean(timed_small),
            )
            print(
                f"| {threshold:>14} | {size:>14,} | {big_mean:>19.2f} | {big_p95:>6.2f} "
                f"| {small_mean:>19.2f} | {log_rows:>8,} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
