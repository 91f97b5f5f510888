"""The offline analyst on LoCoMo turns: milliseconds per note, and what it finds.

One run, one table, with its own baseline: note construction alone; then construction plus
link/evolve with k = 0, 5, 10 neighbours (each pass with a fresh analyst); then add_note end to
end through ``Memory`` (SQLite ledger, Chroma, offline embedder, k = 5) on the first turns, to show
the analyst's share of the whole write. In the analyst-only passes, neighbours are the same
conversation's earlier notes ranked by shared keywords and tags, a stand-in for the vector index
ranked outside the timed region. Timings on shared machines vary: compare rows by their ratio.

    python bench/offline_analyst.py                          # 500 turns, k 0 5 10, 200 add_note
    python bench/offline_analyst.py --turns 1000 --pipeline 0
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from amem.domain.hashing import sha256_text  # noqa: E402
from amem.domain.models import Actor, Note, RawLog, new_id  # noqa: E402
from amem.llm.offline import OfflineAnalyst  # noqa: E402
from amem.memory import Memory  # noqa: E402
from amem.policy import load_policy  # noqa: E402

LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")
#: Earlier notes of the conversation the stand-in ranking looks at.
RECENT = 300
ACTOR = Actor.parse("agent:bench")


@dataclass(frozen=True)
class Turn:
    scope: str
    at: datetime
    text: str


@dataclass
class Pass:
    """One configuration's timings (ms per note) and findings."""

    name: str
    ms: list[float] = field(default_factory=list)
    links: int = 0
    updates: int = 0
    contradictions: int = 0
    with_valid_at: int = 0
    with_rationale: int = 0
    with_category: int = 0


def load_turns(path: Path, limit: int) -> list[Turn]:
    """LoCoMo turns in conversation order, each "<speaker>: <text>" at its session's time."""
    turns: list[Turn] = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        conversation = item["conversation"]
        session = 1
        while f"session_{session}" in conversation:
            when = datetime.strptime(
                conversation[f"session_{session}_date_time"], "%I:%M %p on %d %B, %Y"
            ).replace(tzinfo=UTC)
            for turn in conversation[f"session_{session}"]:
                turns.append(Turn(item["sample_id"], when, f"{turn['speaker']}: {turn['text']}"))
            session += 1
    return turns[:limit]


def raw_log(turn: Turn) -> RawLog:
    return RawLog(
        id=new_id("r"),
        text=turn.text,
        occurred_at=turn.at,
        actor=ACTOR,
        scope=turn.scope,
        received_at=turn.at,
        sha256=sha256_text(turn.text),
    )


def terms(note: Note) -> frozenset[str]:
    return frozenset(w for phrase in [*note.keywords, *note.tags] for w in re.findall(r"\w+", phrase.lower()))


def analyst_pass(turns: Sequence[Turn], declared: dict, k: int | None) -> Pass:
    """Construct every turn's note; with ``k`` set, also link/evolve it against k earlier notes."""
    result = Pass("construct alone (baseline)" if k is None else f"construct + link/evolve, k={k}")
    analyst = OfflineAnalyst()
    earlier: dict[str, list[tuple[Note, frozenset[str]]]] = {}
    for turn in turns:
        raw = raw_log(turn)
        start = time.perf_counter()
        answer = analyst.construct(raw, declared).answer
        took = time.perf_counter() - start
        note = Note(
            id=new_id("n"),
            scope=turn.scope,
            content=turn.text,
            keywords=answer.keywords,
            tags=answer.tags,
            context=answer.context,
            category=answer.category,
            raw_log_ids=[raw.id],
            created_at=turn.at,
            updated_at=turn.at,
        )
        result.with_valid_at += answer.valid_at is not None
        result.with_rationale += answer.decision_rationale is not None
        result.with_category += answer.category is not None
        if k is not None:
            mine = terms(note)
            prior = earlier.setdefault(turn.scope, [])
            ranked = sorted(prior[-RECENT:], key=lambda p: -len(mine & p[1]))[:k]
            start = time.perf_counter()
            linked = analyst.link_and_evolve(note, raw, [n for n, _ in ranked]).answer
            took += time.perf_counter() - start
            prior.append((note, mine))
            result.links += len(linked.links)
            result.updates += len(linked.updates)
            result.contradictions += len(linked.contradictions)
        result.ms.append(took * 1000)
    return result


def pipeline_pass(turns: Sequence[Turn]) -> tuple[Pass, float]:
    """add_note end to end on a fresh store. Returns the pass and the store's setup time (ms)."""
    with tempfile.TemporaryDirectory(prefix="amem-bench-") as home:
        memory = Memory(home, database_url=f"sqlite:///{home}/ledger.sqlite3", llm="offline")
        try:
            start = time.perf_counter()
            memory.pipeline  # noqa: B018  (built now: analyst, embedder, Chroma)
            setup = (time.perf_counter() - start) * 1000
            result = Pass(f"add_note end to end, k={memory.settings.link_k}")
            for turn in turns:
                start = time.perf_counter()
                memory.add_note(turn.text, at=turn.at, actor=ACTOR, scope=turn.scope)
                result.ms.append((time.perf_counter() - start) * 1000)
            evolved: set[tuple[str, str]] = set()
            for proposal in memory.proposals(limit=1_000_000):
                if proposal.attribute == "links":
                    result.links += len(proposal.new_value)
                elif proposal.reason.startswith("memory evolution"):
                    evolved.add((proposal.note_id, proposal.reason.split(":", 1)[0]))
                elif proposal.attribute == "invalid_at":
                    result.contradictions += 1
            result.updates = len(evolved)
            assert memory.verify().ok
        finally:
            memory.close()
    return result, setup


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def print_timings(passes: Sequence[Pass], baseline: Pass) -> None:
    base = statistics.mean(baseline.ms)
    print("| configuration | notes | mean ms | p50 ms | p95 ms | max ms | notes/s | x baseline |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for p in passes:
        mean = statistics.mean(p.ms)
        print(
            f"| {p.name} | {len(p.ms)} | {mean:.2f} | {percentile(p.ms, 0.5):.2f} | "
            f"{percentile(p.ms, 0.95):.2f} | {max(p.ms):.2f} | {1000 / mean:.0f} | {mean / base:.1f} |"
        )


def print_findings(passes: Sequence[Pass]) -> None:
    """For add_note, from the ledger: links stored, neighbours evolved, retirements proposed."""
    print("| configuration | links /100 notes | neighbours evolved /100 | contradictions /100 |")
    print("|---|---:|---:|---:|")
    for p in passes:
        n = len(p.ms) / 100
        print(f"| {p.name} | {p.links / n:.1f} | {p.updates / n:.1f} | {p.contradictions / n:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=500, help="LoCoMo turns for the analyst passes")
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 5, 10], help="neighbours per link step")
    parser.add_argument("--pipeline", type=int, default=200, help="turns through add_note (0: skip)")
    parser.add_argument("--data", type=Path, default=LOCOMO, help="locomo_dev.json")
    args = parser.parse_args()

    turns = load_turns(args.data, args.turns)
    declared = dict(load_policy(REPO / "policies.yaml").declared_attributes())
    start = time.perf_counter()
    OfflineAnalyst()
    setup = (time.perf_counter() - start) * 1000

    analyst_pass(turns[:50], declared, max(args.ks))  # warm-up: lazy imports, regex and date caches
    baseline = analyst_pass(turns, declared, None)
    passes = [baseline, *(analyst_pass(turns, declared, k) for k in args.ks)]
    store_setup = None
    if args.pipeline:
        end_to_end, store_setup = pipeline_pass(turns[: args.pipeline])
        passes.append(end_to_end)

    print(f"{len(turns)} LoCoMo turns from {len({t.scope for t in turns})} conversations; ", end="")
    print(f"analyst setup {setup:.0f} ms", end="")
    print(f", store setup (Chroma, embedder) {store_setup:.0f} ms" if store_setup is not None else "")
    print()
    print_timings(passes, baseline)
    print()
    print(
        f"construction: category set on {baseline.with_category / len(turns):.0%}, "
        f"valid_at on {baseline.with_valid_at / len(turns):.0%}, "
        f"decision_rationale on {baseline.with_rationale / len(turns):.0%} of the turns"
    )
    print()
    print_findings([p for p in passes if p is not baseline])


if __name__ == "__main__":
    main()
