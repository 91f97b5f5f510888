"""Scale: add_note cost, search latency and memory as the store grows to 1k, 10k and 100k notes.

Synthetic sales / customer-success notes (sentences from word lists, 20 account scopes) go through
the real pipeline with a scripted, zero-latency LLM answering valid JSON through the real litellm
path (tests/scripted_llm.py), so what is measured is amem's own work: raw log commit, analysis
plumbing, neighbour search, governance, ledger writes, embedding and the index catch-up.

The store is filled with Memory.add_notes (batches of --batch) up to the last --window notes of
each size; those go through Memory.add_note one at a time and are timed one by one. At each size:
the per-note cost of add_note over the window and of add_notes over the last batches before it,
hybrid search latency (k=10, random scope, generated queries), and peak RSS (ru_maxrss). The
first size is the baseline: a flat per-note cost keeps "vs first" near 1.00x.

    python bench/scale.py                          # 1,000, 10,000, 100,000 (about 1 h 45 min on 2 cores)
    python bench/scale.py --sizes 1000 10000
    python bench/scale.py --sizes 300 600 --window 100 --queries 50   # a quick check
    python bench/scale.py --home /tmp/scale    # resumes a store left by an interrupted run
    python bench/scale.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/scale  # PostgreSQL
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import random
import re
import resource
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scripted_answers import construct  # noqa: E402

from amem.memory import Memory  # noqa: E402
from amem.services.search import NEIGHBOUR_KEYWORD_SCOPE_LIMIT, NEIGHBOUR_KEYWORD_WINDOW  # noqa: E402
from tests import scripted_llm  # noqa: E402

_ACCOUNT_NAMES = """acme globex initech umbrella hooli stark wayne wonka cyberdyne tyrell soylent aperture
    massive gringotts oscorp vandelay pied-piper dunder-mifflin prestige duff"""
ACCOUNTS = [f"account-{name}" for name in _ACCOUNT_NAMES.split()]
_PEOPLE = "Dana Luis Priya Tom Mei Omar Sara Ken Aiko Bruno Chloe Dev Elena Farid Greta Hugo"
PEOPLE = _PEOPLE.split()
ROLES = ["CFO", "CTO", "admin", "champion", "buyer", "procurement lead", "IT director", "VP of sales"]
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
    "SAML configuration",
    "audit logging",
    "sandbox access",
    "usage report",
    "contract redlines",
    "migration timeline",
    "mobile app crash",
    "webhook retries",
    "GDPR request",
    "training session",
]
ACTIONS = [
    "asked about",
    "pushed back on",
    "confirmed",
    "wants to revisit",
    "escalated",
    "approved",
    "is worried about",
    "needs a workaround for",
    "praised",
    "requested a demo of",
    "postponed",
    "signed off on",
    "raised a ticket about",
    "shared feedback on",
    "asked for a discount on",
]
DETAILS = [
    "follow-up in {n} days",
    "{n} seats affected",
    "budget is {n}k dollars",
    "deadline is in {n} weeks",
    "{n} users are blocked",
    "renewal due in {n} months",
    "priority {p}",
    "ticket #{n}{n}",
]
QUESTIONS = [
    "who asked about {topic}",
    "problems with {topic}",
    "what did {person} say about {topic}",
    "{topic} status",
    "discount for the renewal",
    "security concerns of the {role}",
    "blocked users",
]
ID = re.compile(r'"id": "(n_[0-9a-f]{16})"')


def sentence(rng: random.Random) -> str:
    detail = rng.choice(DETAILS).format(n=rng.randint(2, 90), p=rng.choice(["P1", "P2", "P3"]))
    return (
        f"{rng.choice(PEOPLE)} ({rng.choice(ROLES)}) {rng.choice(ACTIONS)} the {rng.choice(TOPICS)}; "
        f"{detail}."
    )


def question(rng: random.Random) -> str:
    return rng.choice(QUESTIONS).format(
        topic=rng.choice(TOPICS), person=rng.choice(PEOPLE), role=rng.choice(ROLES)
    )


def answer(messages: list[dict[str, str]]) -> str:
    """Valid JSON at once: keywords from the capitalised words; links to the two nearest neighbours."""
    user = messages[-1]["content"]
    if "<neighbours>" in user:
        ids = ID.findall(user)
        links = [{"note_id": i, "reason": "same account thread"} for i in ids[:2]]
        return json.dumps({"links": links, "updates": [], "contradictions": []})
    return construct(user)


@dataclass
class Checkpoint:
    notes: int
    batch_ms: float
    add_mean_ms: float
    add_p50_ms: float
    add_p95_ms: float
    search_p50_ms: float
    search_p95_ms: float
    peak_rss_mb: float
    indexed: int


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure_search(memory: Memory, rng: random.Random, queries: int) -> list[float]:
    for _ in range(5):  # warm the model and each scope's collection out of the timing
        memory.search(question(rng), 10, scope=rng.choice(ACCOUNTS))
    latencies = []
    for _ in range(queries):
        q, scope = question(rng), rng.choice(ACCOUNTS)
        started = time.perf_counter()
        memory.search(q, 10, scope=scope)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--window", type=int, default=1000, help="notes added (and timed) one by one")
    parser.add_argument("--batch", type=int, default=256, help="add_notes batch size for the rest")
    parser.add_argument("--queries", type=int, default=200, help="searches timed at each size")
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument(
        "--database-url", default=None, help="the ledger (an empty database); default: SQLite in --home"
    )
    parser.add_argument(
        "--link-keyword-scope-limit",
        type=lambda v: None if v == "all" else int(v),
        default=NEIGHBOUR_KEYWORD_SCOPE_LIMIT,
        help="add_note's link step has a keyword side only in scopes of at most N notes ('all': any size)",
    )
    parser.add_argument(
        "--neighbour-keyword-window",
        type=lambda v: None if v == "all" else int(v),
        default=NEIGHBOUR_KEYWORD_WINDOW,
        help="the link step ranks the newest N keyword matches ('all': every match; 0: none)",
    )
    args = parser.parse_args()

    faulthandler.enable()  # a crash in native code (onnxruntime, chromadb) still leaves a trace
    faulthandler.register(signal.SIGTERM, chain=True)  # and so does being stopped
    handler = scripted_llm.install()
    handler.default = answer
    rng = random.Random(7)
    home = args.home or Path(tempfile.mkdtemp(prefix="amem-scale-"))
    window = "all" if args.neighbour_keyword_window is None else args.neighbour_keyword_window
    limit = "any" if args.link_keyword_scope_limit is None else f"{args.link_keyword_scope_limit:,}"
    print(
        f"store: {home}; {os.cpu_count()} CPUs; scripted zero-latency LLM through litellm; "
        f"link step's keyword side: in scopes of at most {limit} notes, window {window}",
        flush=True,
    )
    rows: list[Checkpoint] = []
    started = time.perf_counter()
    with Memory(home, database_url=args.database_url, llm="scripted/bench") as memory:
        print(f"ledger: {memory.ledger.dialect}", flush=True)
        memory.search_service.neighbour_keyword_window = args.neighbour_keyword_window
        memory.search_service.neighbour_keyword_scope_limit = args.link_keyword_scope_limit
        memory.reprocess()  # a raw log an interrupted run left unanalysed
        with memory.ledger.read() as tx:
            added = tx.count_notes()
        if added:
            print(f"resuming a store of {added:,} notes (sizes at or below it are skipped)", flush=True)
            rng = random.Random(added)
        for size in sorted(s for s in args.sizes if s > added):
            window: list[float] = []
            batches: list[float] = []  # ms per note of each add_notes batch
            while added < size - args.window:
                n = min(args.batch, size - args.window - added)
                items = [{"content": sentence(rng), "scope": rng.choice(ACCOUNTS)} for _ in range(n)]
                t0 = time.perf_counter()
                outcomes = memory.add_notes(items, actor="agent:bench", batch_size=args.batch)
                batches.append((time.perf_counter() - t0) * 1000 / n)
                if any(o.note_id is None for o in outcomes):
                    raise SystemExit(f"analysis failed: {[o.error for o in outcomes if o.error][:3]}")
                before, added = added, added + n
                if added // 5000 != before // 5000:
                    print(f"  {added:,} notes, {time.perf_counter() - started:.0f} s", flush=True)
            while added < size:
                text, scope = sentence(rng), rng.choice(ACCOUNTS)
                t0 = time.perf_counter()
                memory.add_note(text, actor="agent:bench", scope=scope)
                window.append((time.perf_counter() - t0) * 1000)
                added += 1
            latencies = measure_search(memory, rng, args.queries)
            memory.search_service.catch_up()  # the notes add_note staged beside the index, written in
            rows.append(
                Checkpoint(
                    notes=size,
                    # the last 4 batches before the window (fewer at small sizes); nan if none ran
                    batch_ms=statistics.mean(batches[-4:]) if batches else float("nan"),
                    add_mean_ms=statistics.mean(window),
                    add_p50_ms=pct(window, 0.5),
                    add_p95_ms=pct(window, 0.95),
                    search_p50_ms=pct(latencies, 0.5),
                    search_p95_ms=pct(latencies, 0.95),
                    peak_rss_mb=peak_rss_mb(),
                    indexed=memory.search_service.index.count(),
                )
            )
            print_table(rows, args.window)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return 0


def print_table(rows: list[Checkpoint], window: int) -> None:
    base = rows[0]
    print(f"\nadd_note: the last {window:,} notes of each size; add_notes before them; search k=10")
    print(
        f"| {'notes':>8} | {'add_notes ms':>12} | {'add_note mean':>13} | {'vs first':>8} | {'p50':>6} | "
        f"{'p95':>6} | {'search p50 ms':>13} | {'search p95 ms':>13} | {'peak RSS MB':>11} | {'indexed':>8} |"
    )
    print("|" + "|".join("-" * (w + 2) for w in (8, 12, 13, 8, 6, 6, 13, 13, 11, 8)) + "|")
    for r in rows:
        print(
            f"| {r.notes:>8,} | {r.batch_ms:>12.1f} | {r.add_mean_ms:>13.1f} | "
            f"{r.add_mean_ms / base.add_mean_ms:>7.2f}x | {r.add_p50_ms:>6.1f} | {r.add_p95_ms:>6.1f} | "
            f"{r.search_p50_ms:>13.1f} | {r.search_p95_ms:>13.1f} | {r.peak_rss_mb:>11.0f} | "
            f"{r.indexed:>8,} |"
        )
    print(
        f"baseline: the {base.notes:,}-note row (per-note cost flat in N keeps 'vs first' near 1.00x); "
        "add_notes: ms per note of the last batches before the window",
        flush=True,
    )


if __name__ == "__main__":
    raise SystemExit(main())
