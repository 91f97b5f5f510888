"""add_note cost as the store grows: LLM calls and prompt tokens per note, time outside the LLM.

A scripted, zero-latency LLM answers through the real litellm path (tests/scripted_llm.py), so
what is measured is amem's own work: raw log commit, prompts, validation, neighbour search,
governance, ledger writes and index catch-up. The store grows to the largest size; figures are
taken over the last WINDOW notes before each checkpoint, and the first checkpoint is the
baseline the others are compared with.

    python bench/ingest.py                  # 100, 1,000, 10,000
    python bench/ingest.py --sizes 100 1000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import sqlalchemy as sa  # noqa: E402

from amem.ledger.tables import llm_calls  # noqa: E402
from amem.memory import Memory  # noqa: E402
from tests import scripted_llm  # noqa: E402

WINDOW = 100
ACCOUNTS = ["acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka"]
TOPICS = [
    "SSO rollout",
    "renewal pricing",
    "seat expansion",
    "support escalation",
    "security review",
    "onboarding plan",
    "API rate limits",
    "invoice dispute",
    "QBR agenda",
    "data export",
]
PEOPLE = ["Dana", "Luis", "Priya", "Tom", "Mei", "Omar", "Sara", "Ken"]
VERBS = ["asked about", "pushed back on", "confirmed", "wants to revisit", "escalated", "approved"]
ID = re.compile(r'"id": "(n_[0-9a-f]{16})"')


def sentence(rng: random.Random) -> str:
    return (
        f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} the {rng.choice(TOPICS)}; "
        f"follow-up in {rng.randint(2, 30)} days, {rng.randint(5, 500)} seats affected."
    )


def answer(messages: list[dict[str, str]]) -> str:
    user = messages[-1]["content"]
    if "<neighbours>" in user:
        ids = ID.findall(user)
        links = [{"note_id": i, "reason": "same account thread"} for i in ids[:2]]
        return json.dumps({"links": links, "updates": [], "contradictions": []})
    words = [w.strip(".,;") for w in user.split() if w[:1].isupper()][:5] or ["note"]
    return json.dumps(
        {
            "keywords": words,
            "tags": [words[0].lower()],
            "context": "A customer call.",
            "category": "meeting",
            "decision_rationale": None,
            "valid_at": None,
            "extra": {},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    args = parser.parse_args()
    handler = scripted_llm.install()
    handler.default = answer
    rng = random.Random(7)
    rows = []
    with tempfile.TemporaryDirectory() as home, Memory(home, llm="scripted/bench") as mem:
        added = 0
        for size in sorted(args.sizes):
            window = []
            while added < size:
                scope = rng.choice(ACCOUNTS)
                calls_before = len(handler.requests)
                t0 = time.perf_counter()
                note_id = mem.add_note(sentence(rng), actor="agent:bench", scope=scope)
                wall_ms = (time.perf_counter() - t0) * 1000
                added += 1
                if added > size - WINDOW:
                    window.append((note_id, wall_ms, len(handler.requests) - calls_before))
            rows.append(measure(mem, size, window))
    print_table(rows)


def measure(mem: Memory, size: int, window: list[tuple[str, float, int]]) -> dict[str, float]:
    ids = [w[0] for w in window]
    with mem.ledger.read() as tx:
        raw_ids = [n.raw_log_ids[0] for n in tx.get_notes(ids)]
        stats = tx.conn.execute(
            sa.select(
                llm_calls.c.raw_log_id,
                sa.func.sum(llm_calls.c.latency_ms),
                sa.func.sum(llm_calls.c.prompt_tokens),
            )
            .where(llm_calls.c.raw_log_id.in_(raw_ids))
            .group_by(llm_calls.c.raw_log_id)
        ).all()
    llm_ms = {r[0]: float(r[1]) for r in stats}
    tokens = {r[0]: int(r[2]) for r in stats}
    outside = [w[1] - llm_ms.get(r, 0.0) for w, r in zip(window, raw_ids, strict=True)]
    return {
        "notes": size,
        "calls": statistics.mean(w[2] for w in window),
        "tokens": statistics.mean(tokens.get(r, 0) for r in raw_ids),
        "outside_p50": statistics.median(outside),
        "outside_mean": statistics.mean(outside),
        "wall_mean": statistics.mean(w[1] for w in window),
    }


def print_table(rows: list[dict[str, float]]) -> None:
    base = rows[0]
    print(
        f"\nadd_note cost over the last {WINDOW} notes before each size "
        "(scripted zero-latency LLM via litellm)"
    )
    print(
        f"{'notes':>8} {'LLM calls/add':>14} {'prompt tok/add':>15} {'outside LLM p50 ms':>19} "
        f"{'outside mean ms':>16} {'vs baseline':>12} {'wall mean ms':>13}"
    )
    for r in rows:
        print(
            f"{r['notes']:>8,} {r['calls']:>14.2f} {r['tokens']:>15.0f} {r['outside_p50']:>19.1f} "
            f"{r['outside_mean']:>16.1f} {r['outside_mean'] / base['outside_mean']:>11.2f}x "
            f"{r['wall_mean']:>13.1f}"
        )
    print(
        f"baseline: the {base['notes']:,}-note row; flat per-note cost means 'vs baseline' stays near 1.00x"
    )


if __name__ == "__main__":
    main()
