"""What FTS5's bm25() costs as the store grows, apart from the rows it ranks.

The link step's keyword query ranks a window of a scope's newest matches. This script times, on
each store given, that query shape with and without bm25(), and bm25() on only 10 rows. bm25()
counts, once per query, every row of the whole index that holds each query word (its IDF), so
that count grows with the store however few rows are ranked and whatever the rowid range.

    python bench/fts_bm25_cost.py --home /tmp/scale-base /tmp/scale100k/store

Read-only; the first store is the baseline.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from scale import ACCOUNTS, pct, sentence  # noqa: E402

from amem.ledger.search_queries import FTS5_BLOCK_BITS, FTS5_WEIGHTS, fts5_match, query_terms  # noqa: E402

WEIGHTS = ", ".join(str(w) for w in FTS5_WEIGHTS)
MATCH = "FROM notes_fts WHERE notes_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid DESC"
SHAPES = {
    "rowids only, newest 1000": f"SELECT rowid {MATCH} LIMIT 1000",
    "bm25, newest 10": f"SELECT rowid, bm25(notes_fts, {WEIGHTS}) {MATCH} LIMIT 10",
    "bm25, newest 1000, best 60": (
        f"SELECT rowid FROM (SELECT rowid, bm25(notes_fts, {WEIGHTS}) AS r {MATCH} LIMIT 1000) "
        "ORDER BY r LIMIT 60"
    ),
}


def measure(ledger: Path, queries: int) -> tuple[int, dict[str, float]]:
    db = sqlite3.connect(f"{ledger.resolve().as_uri()}?mode=ro", uri=True)
    blocks = dict(db.execute("SELECT scope, number FROM fts_scopes"))
    notes = db.execute("SELECT count(*) FROM notes").fetchone()[0]
    rng = random.Random(5)
    asks = []
    for _ in range(queries):
        number = blocks[rng.choice([s for s in ACCOUNTS if s in blocks])]
        first = number << FTS5_BLOCK_BITS
        asks.append((fts5_match(query_terms(sentence(rng))), first, first + (1 << FTS5_BLOCK_BITS) - 1))
    p50 = {}
    for label, sql in SHAPES.items():
        times = []
        for ask in asks:
            started = time.perf_counter()
            db.execute(sql, ask).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        p50[label] = pct(times, 0.5)
    return notes, p50


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, nargs="+", required=True, help="stores (schema 0004)")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rows = [measure(home / "ledger.sqlite3", args.queries) for home in args.home]
    base = rows[0][1]
    print(f"p50 ms over {args.queries} synthetic neighbour queries (x: against the first store)")
    print("| notes | " + " | ".join(SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    for notes, p50 in rows:
        cells = [f"{p50[k]:.2f} ({p50[k] / base[k]:.1f}x)" for k in SHAPES]
        print(f"| {notes:,} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
