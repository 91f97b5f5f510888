"""Where one add_note's time goes, phase by phase, on a store of any size.

Adds --notes synthetic notes (bench/scale.py's generator and scripted zero-latency LLM) to the
store at --home one at a time, under cProfile, and prints the mean time per add_note spent in
each phase (cumulative, so nested phases overlap: "neighbours" contains "keyword query"). Run it on
a small and a large store in one session to see which phase grows with N:

    python bench/scale.py --home /tmp/s1k --sizes 1000 --window 10
    python bench/add_phases.py --home /tmp/s1k --notes 300
    python bench/add_phases.py --home /tmp/scale100k/store --notes 300

It writes to the store (the notes it adds stay). cProfile slows Python code more than native code
(the embedding, Chroma, SQLite), so compare rows between stores, not with bench/scale.py's totals.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from scale import ACCOUNTS, answer, sentence  # noqa: E402

from amem.memory import Memory  # noqa: E402
from tests import scripted_llm  # noqa: E402

#: (label, file suffix, function name): cumulative time of that function per add_note.
PHASES = [
    ("add_note (total)", "amem/memory.py", "add_note"),
    ("  record raw log", "amem/services/pipeline.py", "record"),
    ("  construct (LLM)", "amem/llm/litellm_analyst.py", "construct"),
    ("  neighbours", "amem/services/search.py", "nearest_many"),
    ("    index catch-up (before)", "amem/services/search.py", "_catch_up_for_neighbours"),
    ("    embed", "amem/index/embedders.py", "embed"),
    ("    vector query", "amem/index/chroma.py", "query"),
    ("    keyword query", "amem/ledger/search_queries.py", "keyword_search"),
    ("    fuse", "amem/index/fusion.py", "fuse"),
    ("    read notes", "amem/ledger/store.py", "get_notes"),
    ("  link and evolve (LLM)", "amem/llm/litellm_analyst.py", "link_and_evolve"),
    ("  write transaction", "amem/services/pipeline.py", "_apply"),
    ("    event chain: digest, hash", "amem/ledger/store.py", "append_event"),
    ("    events + head at commit", "amem/ledger/store.py", "_flush_head"),
    ("  index catch-up (after)", "amem/services/pipeline.py", "_catch_up_index"),
    ("    chroma upsert", "amem/index/chroma.py", "upsert"),
    ("    vectors and position (ledger)", "amem/index/sync.py", "_record"),
]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--top", type=int, default=0, help="also print the N costliest functions")
    args = parser.parse_args()
    scripted_llm.install().default = answer
    rng = random.Random(time.time_ns())
    with Memory(args.home, llm="scripted/bench") as memory:
        with memory.ledger.read() as tx:
            size = tx.count_notes()
        for _ in range(20):  # warm up out of the profile
            memory.add_note(sentence(rng), actor="agent:bench", scope=rng.choice(ACCOUNTS))
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        for _ in range(args.notes):
            memory.add_note(sentence(rng), actor="agent:bench", scope=rng.choice(ACCOUNTS))
        profile.disable()
        wall = (time.perf_counter() - started) * 1000 / args.notes
    stats = pstats.Stats(profile)
    table: dict[tuple[str, str], float] = {}
    for (file, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for label, suffix, fn in PHASES:
            if name == fn and file.endswith(suffix):
                table[(label, fn)] = table.get((label, fn), 0.0) + ct
    print(f"\nstore {args.home}: {size:,} notes; {args.notes} add_note calls, {wall:.1f} ms each (profiled)")
    print(f"| {'phase':<30} | {'ms per add_note':>15} |")
    print(f"|{'-' * 32}|{'-' * 17}|")
    for label, _suffix, fn in PHASES:
        ms = table.get((label, fn), 0.0) * 1000 / args.notes
        print(f"| {label:<30} | {ms:>15.2f} |")
    if args.top:
        stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
