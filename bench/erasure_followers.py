"""What an erasure does to another process open on the store: a server's searches while the eraser
rebuilds the vector index, and the erasure's own time with and without that process.

Each process keeps its own view of the index (docs/architecture.md, "Vectors are embedded once").
Until the forty-third session a new build (`amem erase`, `amem reindex`) replaced the old one in
the same collections, and a follower's next catch-up applied every change again into it; now the
build is written beside the one in use, which the follower goes on searching, and adopted once
complete ("Builds side by side"). This measures what a rebuild costs a server open on the store.

One SQLite store of N notes in one account is built as in `bench/erasure_scale.py` (stored
vectors, nothing embedded). Then, in the same run:
1. the baseline: one raw log erased with no other process open;
2. another raw log erased while a second process searches the account every 0.2 s.

The table gives both erasures' times and the second process's search latencies before, during
and after the erasure.

    python bench/erasure_followers.py                 # 10,000 notes
    python bench/erasure_followers.py --sizes 1000 10000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUERY = "price per seat"
PAUSE_S = 0.2


def searcher(directory: Path, seconds: float) -> None:
    """The second process: search every PAUSE_S until ``seconds`` pass; print (end time, ms)."""
    from amem.memory import Memory

    with open_store(directory, Memory) as mem:
        mem.search(QUERY, k=10, scope="acme")
        print("ready", flush=True)
        rows, end = [], time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.perf_counter()
            mem.search(QUERY, k=10, scope="acme")
            rows.append((time.monotonic(), (time.perf_counter() - started) * 1000))
            time.sleep(PAUSE_S)  # a paced client, not a synchronisation
    print(json.dumps(rows), flush=True)


def open_store(directory: Path, memory: Any) -> Any:
    """The store bench/facts_as_of.py built in ``directory``, as another process opens it."""
    return memory(
        directory / "home",
        database_url=f"sqlite:///{directory / 'ledger.sqlite3'}",
        policy=directory.parent / "policies.yaml",
    )


def one(root: Path, size: int, window: float) -> dict[str, Any]:
    from bench import erasure_scale, facts_as_of

    root.mkdir(parents=True)
    erasure_scale.with_reviewers(root)
    mem, _ = facts_as_of.build(root / "store", size, policy=root / "policies.yaml")
    erasure_scale.store_vectors(mem)
    mem.reindex()
    first, second = (mem.notes(scope="acme", limit=1, offset=size * f // 3)[0] for f in (1, 2))
    alice = mem.authentication.signed_in("alice", method="test")

    started = time.perf_counter()
    mem.erase(by=alice, reason="bench", raw_log_id=first.raw_log_ids[0])
    alone = time.perf_counter() - started

    child = subprocess.Popen(
        [sys.executable, __file__, "--searcher", str(root / "store"), "--window", str(window)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    time.sleep(10 * PAUSE_S)  # a few searches before the erasure (the follower paces itself)
    begun = time.monotonic()
    mem.erase(by=alice, reason="bench", raw_log_id=second.raw_log_ids[0])
    ended = time.monotonic()
    mem.close()
    rows = json.loads(child.stdout.readline())
    child.wait()
    return {
        "size": size,
        "alone": alone,
        "followed": ended - begun,
        "before": [ms for at, ms in rows if at < begun],
        "during": [ms for at, ms in rows if begun <= at <= ended],
        "after": [ms for at, ms in rows if at > ended],
    }


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ms" if values else "none"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--window", type=float, default=0, help="the searcher's seconds (default: sized)")
    parser.add_argument("--searcher", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.searcher is not None:
        searcher(args.searcher, args.window)
        return
    root = Path(tempfile.mkdtemp(prefix="amem-erasure-followers-"))
    rows = []
    try:
        for size in args.sizes:
            window = args.window or 30 + size / 200  # past the erasure, with room for a stall
            rows.append(one(root / str(size), size, window))
        print(
            "| notes | erasure alone | erasure, a searcher open | searches before (median) "
            "| during: count, longest | after (median) |"
        )
        print("|---|---|---|---|---|---|")
        for r in rows:
            longest = f"{len(r['during'])}, {max(r['during']):,.0f} ms" if r["during"] else "0"
            print(
                f"| {r['size']:,} | {r['alone']:.1f} s | {r['followed']:.1f} s | {_median(r['before'])} "
                f"| {longest} | {_median(r['after'])} |"
            )
        print("\nSQLite, one account, stored vectors; the searcher searches one query every 0.2 s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
