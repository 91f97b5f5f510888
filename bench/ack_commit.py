"""The acknowledgement's commit alone, while a worker writes notes (PostgreSQL or SQLite).

For each code version (a baseline's tree extracted beforehand, e.g. `git archive REF | tar -x -C
DIR`, and this tree), alternated baseline / tree / tree / baseline: one `amem worker` at niceness
10 on an existing bench store (bench/agents.py --home DIR), and one client in a process of its own
that commits inputs through `InputQueue.enqueue` (no HTTP) at 5 a second, Poisson, timing each.
Also counts, with --count N, the statements of N synchronous add_notes on a fresh PostgreSQL schema
and how many run while the chain head is locked (bench/README.md, agents, "Tenth session").

    python bench/ack_commit.py --home /tmp/ack/pg10k --baseline-code /tmp/base --seconds 30
    python bench/ack_commit.py --count 100 --database-url postgresql+psycopg://postgres@127.0.0.1/db
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]

CLIENT = r"""
import json, random, sys, time
from pathlib import Path
from amem.memory import Memory
from amem.domain.models import Actor
from amem.services.pipeline import raw_log_from
sys.path.insert(0, sys.argv[4] + "/bench")
from agents import sentence
mem = Memory(Path(sys.argv[1]), database_url=sys.argv[2])
rng, lat, end = random.Random(7), [], time.monotonic() + float(sys.argv[3])
actor = Actor(kind="agent", id="bench")
due = time.monotonic()
while time.monotonic() < end:
    due += rng.expovariate(5.0)
    time.sleep(max(0.0, due - time.monotonic()))
    acct = f"acct{rng.randrange(14)}"
    raw = raw_log_from(mem.settings, sentence(rng, acct), at=None, actor=actor, scope=acct, metadata=None)
    t = time.perf_counter()
    mem.queue.enqueue([raw])
    lat.append(1000 * (time.perf_counter() - t))
mem.close()
print(json.dumps(lat))
"""

COUNT = r"""
import random, sys, tempfile, threading, time
from pathlib import Path
import sqlalchemy as sa
sys.path.insert(0, sys.argv[3] + "/bench")
from agents import sentence
from amem.ledger import store
from amem.memory import Memory
n, url = int(sys.argv[1]), sys.argv[2]
state, counts = threading.local(), {"all": 0, "under_head": 0, "held": 0.0}
with Memory(Path(tempfile.mkdtemp()) / "home", database_url=url, llm="offline") as mem:
    rng = random.Random(1)
    for i in range(10):
        mem.add_note(sentence(rng, f"acct{i % 5}"), actor="agent:x", scope=f"acct{i % 5}")
    real_lock = store.LedgerTx._lock_head
    def lock(self):
        real_lock(self)
        state.locked_at = time.perf_counter()
    store.LedgerTx._lock_head = lock
    engine = mem.ledger.engine
    @sa.event.listens_for(engine, "before_cursor_execute")
    def count(*_a):
        counts["all"] += 1
        counts["under_head"] += getattr(state, "locked_at", None) is not None
    @sa.event.listens_for(engine, "commit")
    def commit(_c):
        if getattr(state, "locked_at", None) is not None:
            counts["held"] += time.perf_counter() - state.locked_at
        state.locked_at = None
    @sa.event.listens_for(engine, "rollback")
    def rollback(_c):
        state.locked_at = None
    for i in range(n):
        mem.add_note(sentence(rng, f"acct{i % 5}"), actor="agent:x", scope=f"acct{i % 5}")
print(f"{n} add_note: {counts['all'] / n:.1f} statements an input, {counts['under_head'] / n:.1f} of them "
      f"under the chain head; head held {1000 * counts['held'] / n:.1f} ms an input (both transactions)")
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def acknowledgements(args: argparse.Namespace) -> None:
    home = Path(args.home)
    url = (
        (home / "bench-database-url").read_text().strip()
        if (home / "bench-database-url").exists()
        else (f"sqlite:///{home / 'ledger.sqlite3'}")
    )
    env0 = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    base = str(Path(args.baseline_code).resolve())
    print("| code | acks | ack p50 / p95 / p99 ms | max ms | load avg before-after |")
    print("|---|---|---|---|---|")
    for label, code in [
        ("baseline", base),
        ("this tree", str(TREE)),
        ("this tree", str(TREE)),
        ("baseline", base),
    ]:
        env = {**env0, "PYTHONPATH": code}
        load = os.getloadavg()[0]
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "amem",
                "--home",
                str(home),
                "--database-url",
                url,
                "worker",
                "--batch-size",
                "16",
            ],
            env=env,
            cwd=code,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=lambda: os.nice(10),
        )
        time.sleep(8)  # the worker's start-up (model, index) before the client starts
        out = subprocess.run(
            [sys.executable, "-c", CLIENT, str(home), url, str(args.seconds), code],
            env=env,
            cwd=code,
            capture_output=True,
            text=True,
        )
        worker.terminate()
        worker.wait()
        if out.returncode:
            sys.exit(out.stderr[-2000:])
        lat = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"| {label} | {len(lat)} | {percentile(lat, 0.5):.1f} / **{percentile(lat, 0.95):.1f}** / "
            f"{percentile(lat, 0.99):.1f} | {max(lat):.1f} | {load:.2f}-{os.getloadavg()[0]:.2f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", help="a bench store (bench/agents.py --home)")
    parser.add_argument("--baseline-code", help="a directory holding the baseline's tree")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--count", type=int, help="count the statements of this many add_notes instead")
    parser.add_argument("--database-url", help="with --count: an empty PostgreSQL schema's URL")
    parser.add_argument("--code", default=str(TREE), help="with --count: the tree whose amem runs")
    args = parser.parse_args()
    if args.count:
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": args.code}
        subprocess.run(
            [sys.executable, "-c", COUNT, str(args.count), args.database_url, str(TREE)], env=env, check=True
        )
    else:
        acknowledgements(args)


if __name__ == "__main__":
    main()
