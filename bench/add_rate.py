"""add_notes with the offline analyst: notes per second, and where the time goes, beside a baseline.

Each run ingests the same inputs into a fresh store through ``Memory.add_notes`` (offline analyst,
offline embedder, no LLM configured) in batches, in a child process, and times each phase with
wrappers around the functions that do it (cumulative wall time, nested rows overlap: "embed" is
inside "neighbours" and "index catch-up"). The baseline is the same script run against another
commit's ``amem`` (extracted with ``git archive`` into a temporary directory, default: the commit
before the write-path work), interleaved with the current tree so that load on a shared machine
hits both alike:

    python bench/add_rate.py                          # the 279 sample inputs, 3 rounds each
    python bench/add_rate.py --inputs short --count 1000
    python bench/add_rate.py --baseline-ref HEAD~3 --rounds 2
    python bench/add_rate.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/bench

``--inputs samples``: amem/samples' account history (about 110 characters a text, documents with
keywords, tags and context about 130 tokens); ``short``: bench/ingest.py's one-line sales notes.
The figure to compare is notes/s (median of the rounds); phase rows are the median round's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import baseline  # bench/, beside this script

REPO = Path(__file__).resolve().parents[1]
#: The commit before the write path was reworked (issue 16, part 2).
DEFAULT_BASELINE = "863f2b3"

#: (label, module, attribute path, kind): kind "call" times a call, "cm" a context manager's body.
PHASES: list[tuple[str, str, str, str]] = [
    ("add_notes (total)", "amem.services.pipeline", "WritePipeline.add_notes", "call"),
    ("  raw logs (enqueue)", "amem.services.queue", "InputQueue.enqueue", "call"),
    ("  analyst: construct", "amem.llm.offline.analyst", "OfflineAnalyst.construct", "call"),
    ("  neighbours (nearest_many)", "amem.services.search", "SearchService.nearest_many", "call"),
    ("    vector query (Chroma)", "amem.index.chroma", "ChromaIndex.query", "call"),
    ("    keyword query (ledger)", "amem.ledger.search_queries", "keyword_search", "call"),
    ("  analyst: link and evolve", "amem.llm.offline.analyst", "OfflineAnalyst.link_and_evolve", "call"),
    ("  drafting (pure)", "amem.services.pipeline", "draft", "call"),
    ("  write transactions (all)", "amem.ledger.store", "Ledger.write", "cm"),
    ("    governance.propose_in", "amem.services.governance", "Governance.propose_in", "call"),
    ("  derived writes (vectors, position)", "amem.ledger.index_queries", "derived_write", "cm"),
    ("  index catch-up", "amem.index.sync", "IndexSync.catch_up", "call"),
    ("    Chroma upsert", "amem.index.chroma", "ChromaIndex.upsert", "call"),
    ("  embed (all calls)", "amem.index.embedders", "MiniLMEmbedder.embed", "call"),
]


# -- the child: one run of one code tree ------------------------------------------------------------


def _install_timers(times: dict[str, float], calls: dict[str, int], texts: list[int]) -> None:
    import importlib

    for label, module_name, path, kind in PHASES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner: Any = module
        *parents, name = path.split(".")
        for part in parents:
            owner = getattr(owner, part, None)
        real = getattr(owner, name, None) if owner is not None else None
        if real is None:
            continue
        depth = {"n": 0}

        def wrap(real: Callable[..., Any] = real, label: str = label, kind: str = kind, depth=depth) -> Any:
            if kind == "cm":

                @contextlib.contextmanager
                def timed_cm(*args: Any, **kwargs: Any) -> Iterator[Any]:
                    started = time.perf_counter()
                    depth["n"] += 1
                    try:
                        with real(*args, **kwargs) as value:
                            yield value
                    finally:
                        depth["n"] -= 1
                        if depth["n"] == 0:
                            times[label] = times.get(label, 0.0) + time.perf_counter() - started
                        calls[label] = calls.get(label, 0) + 1

                return timed_cm

            def timed(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                depth["n"] += 1
                try:
                    return real(*args, **kwargs)
                finally:
                    depth["n"] -= 1
                    if depth["n"] == 0:
                        times[label] = times.get(label, 0.0) + time.perf_counter() - started
                    calls[label] = calls.get(label, 0) + 1
                    if label.strip().startswith("embed"):
                        texts.append(len(args[1]) if len(args) > 1 else 0)

            return timed

        setattr(owner, name, wrap())


def _inputs(kind: str, count: int) -> list[dict[str, Any]]:
    if kind == "samples":
        from amem.samples import load_inputs

        base = [dict(i) for i in load_inputs()]
        out = []
        for copy in range(max(1, -(-count // len(base))) if count else 1):
            for item in base:
                scope = item["scope"] if copy == 0 else f"{item['scope']}-{copy}"
                out.append({**item, "scope": scope})
        return out[:count] if count else out
    sys.path.insert(0, str(REPO / "bench"))
    from ingest import ACCOUNTS, sentence

    rng = random.Random(7)
    return [{"content": sentence(rng), "scope": rng.choice(ACCOUNTS)} for _ in range(count or 1000)]


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(args.code))
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for key in [k for k in os.environ if k.startswith("AMEM_LLM")]:
        del os.environ[key]
    from amem.memory import Memory

    times: dict[str, float] = {}
    calls: dict[str, int] = {}
    texts: list[int] = []
    items = json.loads(Path(args.inputs_file).read_text())  # the parent's, so both codes get the same
    with Memory(args.home, llm="offline", database_url=args.database_url) as memory:
        memory.add_notes(items[:8], actor="agent:bench", batch_size=args.batch_size)  # load models, warm up
        _install_timers(times, calls, texts)
        started = time.perf_counter()
        outcomes = memory.add_notes(items[8:], actor="agent:bench", batch_size=args.batch_size)
        seconds = time.perf_counter() - started
    done = sum(1 for o in outcomes if o.note_id)
    result = {
        "code": str(args.code),
        "notes": done,
        "failed": len(outcomes) - done,
        "seconds": seconds,
        "notes_per_second": done / seconds,
        "times": times,
        "calls": calls,
        "texts_embedded": sum(texts),
    }
    print(json.dumps(result))


# -- the parent: interleaved rounds, a table -----------------------------------------------------


def _reset_postgres(url: str) -> None:
    """Empty the bench database before each run (its public schema is dropped: never a shared one)."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    if "bench" not in (make_url(url).database or ""):
        raise SystemExit(f"--database-url {url}: each run drops its schema; use a database named *bench*")

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP SCHEMA public CASCADE")
        conn.exec_driver_sql("CREATE SCHEMA public")
    engine.dispose()


def _run(code: Path, args: argparse.Namespace) -> dict[str, Any]:
    if args.database_url:
        _reset_postgres(args.database_url)
    with tempfile.TemporaryDirectory(prefix="amem-rate-") as home:
        # The inputs come from this tree: another commit's amem.samples may hold other accounts.
        inputs_file = Path(home) / "inputs.json"
        inputs_file.write_text(json.dumps(_inputs(args.inputs, args.count), default=str))
        home = str(Path(home) / "store")
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            "--code",
            str(code),
            "--home",
            home,
            "--inputs-file",
            str(inputs_file),
            "--batch-size",
            str(args.batch_size),
        ]
        if args.database_url:
            command += ["--database-url", args.database_url]
        env = {**os.environ, "PYTHONPATH": str(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=str(code))
        if done.returncode != 0:
            raise SystemExit(done.stderr[-4000:])
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inputs", choices=["samples", "short"], default="samples")
    parser.add_argument("--count", type=int, default=0, help="inputs (samples: repeated under new scopes)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-ref", default=DEFAULT_BASELINE, help="git ref; 'none' to skip")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--json", action="store_true", help="print the runs as JSON too")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--code", type=Path, default=REPO, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--inputs-file", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="amem-baseline-") as tmp:
        trees = baseline.trees(args.baseline_ref, Path(tmp))
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, code in trees.items():
                runs[name].append(_run(code, args))
                print(f"  {name}: {runs[name][-1]['notes_per_second']:.1f} notes/s", file=sys.stderr)
    load = os.getloadavg()
    print(
        f"\nadd_notes, offline analyst, {args.inputs} inputs "
        f"({runs['current'][0]['notes']} after 8 warm-up), "
        f"batches of {args.batch_size}, {args.rounds} rounds interleaved, "
        f"{'PostgreSQL' if args.database_url else 'SQLite'}; load average now {load[0]:.1f} on "
        f"{os.cpu_count()} CPUs\n"
    )
    medians = {name: sorted(r, key=lambda x: x["notes_per_second"])[len(r) // 2] for name, r in runs.items()}
    names = list(runs)
    header = "| phase (ms per note, median round) | " + " | ".join(names) + " |"
    print(header)
    print("|" + "---|" * (len(names) + 1))
    rates = [statistics.median(x["notes_per_second"] for x in runs[n]) for n in names]
    print("| **notes/s** (median) | " + " | ".join(f"**{r:.1f}**" for r in rates) + " |")
    print(
        "| notes/s (each round) | "
        + " | ".join(", ".join(f"{x['notes_per_second']:.1f}" for x in runs[n]) for n in names)
        + " |"
    )
    for label, *_ in PHASES:
        cells = []
        for n in names:
            m = medians[n]
            if label not in m["times"]:
                cells.append("-")
                continue
            cells.append(f"{m['times'][label] * 1000 / m['notes']:.2f} ({m['calls'].get(label, 0)}x)")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(
        "| texts embedded per note | "
        + " | ".join(f"{medians[n]['texts_embedded'] / medians[n]['notes']:.2f}" for n in names)
        + " |"
    )
    if len(names) == 2:
        print(f"\ncurrent / baseline: {rates[1] / rates[0]:.2f}x notes/s")
    if args.json:
        print(json.dumps(runs))


if __name__ == "__main__":
    main()
