"""add_note on a small and a large store in one process, interleaved, so drift hits both alike.

bench/scale.py times each size in its own stretch of minutes, and on a shared 2-core machine the
speed of the machine itself drifts by 10-20% between them. This script opens stores made by
bench/scale.py (any sizes) in one process and adds one note to each in turn, round after round,
with the same scripted zero-latency LLM; each store's row is its mean over the same rounds.
``--arms`` also times the largest store under other link-step settings, in the same rounds:

    python bench/scale.py --home /tmp/s10k --sizes 10000
    python bench/scale.py --home /tmp/s100k --sizes 100000
    python bench/scale_pair.py /tmp/s10k /tmp/s100k --rounds 1000 --arms window-1000

Arms: ``default`` (the defaults), ``window-1000`` (keyword side in scopes of any size, newest 1,000
matches: the defaults before the scope limit), ``every-match`` (keyword side at any size, every
match ranked), ``vector-only``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from scale import ACCOUNTS, answer, pct, sentence  # noqa: E402

from amem.memory import Memory  # noqa: E402
from tests import scripted_llm  # noqa: E402

#: name -> (scope limit, window) of the link step's keyword side
ARMS: dict[str, tuple[int | None, int | None] | None] = {
    "default": None,
    "window-1000": (None, 1000),
    "every-match": (None, None),
    "vector-only": (0, None),
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("homes", type=Path, nargs="+", help="stores made by bench/scale.py, smallest first")
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--arms", nargs="*", default=[], choices=[a for a in ARMS if a != "default"])
    args = parser.parse_args()

    handler = scripted_llm.install()
    handler.default = answer
    rng = random.Random(5)
    memories = [Memory(home, llm="scripted/bench") for home in args.homes]
    try:
        sizes = []
        for memory in memories:
            with memory.ledger.read() as tx:
                sizes.append(tx.count_notes())
        # (label, memory, settings or None for the defaults)
        rows = [(f"{size:,} notes", memory, None) for size, memory in zip(sizes, memories, strict=True)]
        rows += [(f"{sizes[-1]:,} notes, {arm}", memories[-1], ARMS[arm]) for arm in args.arms]
        for _, memory, _ in rows:  # warm each store and scope out of the timing
            for scope in ACCOUNTS:
                memory.search("renewal", 1, scope=scope)
            memory.add_note(sentence(rng), actor="agent:bench", scope=ACCOUNTS[0])
        timed: list[list[float]] = [[] for _ in rows]
        for _ in range(args.rounds):
            text, scope = sentence(rng), rng.choice(ACCOUNTS)
            for i, (_, memory, arm) in enumerate(rows):
                service = memory.search_service
                kept = service.neighbour_keyword_scope_limit, service.neighbour_keyword_window
                if arm is not None:
                    service.neighbour_keyword_scope_limit, service.neighbour_keyword_window = arm
                t0 = time.perf_counter()
                memory.add_note(text, actor="agent:bench", scope=scope)
                timed[i].append((time.perf_counter() - t0) * 1000)
                service.neighbour_keyword_scope_limit, service.neighbour_keyword_window = kept
    finally:
        for memory in memories:
            memory.close()

    base = statistics.mean(timed[0])
    print(f"\n{args.rounds} rounds; each round adds the same note to every row's store, in turn")
    print(f"| {'store':<36} | {'add_note mean ms':>16} | {'vs first':>8} | {'p50':>6} | {'p95':>6} |")
    print(f"|{'-' * 38}|{'-' * 18}|{'-' * 10}|{'-' * 8}|{'-' * 8}|")
    for (label, _, _), t in zip(rows, timed, strict=True):
        mean, p50, p95 = statistics.mean(t), pct(t, 0.5), pct(t, 0.95)
        print(f"| {label:<36} | {mean:>16.1f} | {mean / base:>7.2f}x | {p50:>6.1f} | {p95:>6.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
