"""Search latency of stores built by bench/scale.py, measured side by side, query by query.

Each query goes to every store in turn (same query, same scope), so load on a shared machine hits
all alike: the way to compare the SQLite and the PostgreSQL ledger at one size.

    python bench/search_pair.py --store /tmp/scale-sqlite \\
        --store /tmp/scale-pg=postgresql+psycopg://postgres@127.0.0.1:5432/scale --queries 300
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from scale import ACCOUNTS, pct, question  # noqa: E402

from amem.memory import Memory  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", action="append", required=True, help="HOME or HOME=DATABASE_URL")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    stores: list[tuple[str, Memory]] = []
    for spec in args.store:
        home, _, url = spec.partition("=")
        memory = Memory(home, database_url=url or None)
        with memory.ledger.read() as tx:
            notes = tx.count_notes()
        stores.append((f"{memory.ledger.dialect} ({notes:,} notes)", memory))
    rng = random.Random(11)
    asks = [(question(rng), rng.choice(ACCOUNTS)) for _ in range(args.queries + 10)]
    latencies: dict[str, list[float]] = {name: [] for name, _ in stores}
    for i, (q, scope) in enumerate(asks):
        for name, memory in stores:
            started = time.perf_counter()
            memory.search(q, 10, scope=scope)
            if i >= 10:  # the first ten warm the model and the collections
                latencies[name].append((time.perf_counter() - started) * 1000)
    print(f"search k=10, {args.queries} queries, each to every store in turn")
    print("| store | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|")
    for name, values in latencies.items():
        print(f"| {name} | {pct(values, 0.5):.1f} | {pct(values, 0.95):.1f} | {max(values):.1f} |")
    for _, memory in stores:
        memory.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
