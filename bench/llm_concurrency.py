"""add_notes with a remote model: what keeping several model calls in flight buys.

A scripted model behind the real litellm path answers after a fixed latency (--latency-ms, what a
hosted model's round trip costs), so the run shows how a batch's wall time follows
AMEM_LLM_CONCURRENCY. The first row (one call at a time) is the baseline.

    python bench/llm_concurrency.py                    # 64 notes, 300 ms a call, 1 / 2 / 4 / 8
    python bench/llm_concurrency.py --notes 128 --latency-ms 800 --concurrency 1 4 16
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from scale import ACCOUNTS, answer, sentence  # noqa: E402

from amem.config import Settings  # noqa: E402
from amem.memory import Memory  # noqa: E402
from tests import scripted_llm  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=300)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()

    def slow(messages: list[dict[str, str]]) -> str:
        time.sleep(args.latency_ms / 1000)  # the provider's round trip
        return answer(messages)

    scripted_llm.install().default = slow
    rng = random.Random(5)
    print(f"{args.notes} notes in one add_notes batch; each model call takes {args.latency_ms:g} ms")
    print(f"| {'concurrency':>11} | {'batch s':>8} | {'ms per note':>11} | {'speed-up':>8} |")
    print(f"|{'-' * 13}|{'-' * 10}|{'-' * 13}|{'-' * 10}|")
    base = None
    for workers in args.concurrency:
        with tempfile.TemporaryDirectory() as home:
            settings = Settings.from_env(home=home, llm_model="scripted/bench", llm_concurrency=workers)
            with Memory(settings=settings) as memory:
                memory.add_note(sentence(rng), actor="agent:bench", scope=ACCOUNTS[0])  # warm up
                items = [{"content": sentence(rng), "scope": rng.choice(ACCOUNTS)} for _ in range(args.notes)]
                started = time.perf_counter()
                outcomes = memory.add_notes(items, actor="agent:bench", batch_size=args.notes)
                seconds = time.perf_counter() - started
        assert all(o.note_id for o in outcomes)
        base = base or seconds
        print(
            f"| {workers:>11} | {seconds:>8.2f} | {seconds * 1000 / args.notes:>11.1f} | "
            f"{base / seconds:>7.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
