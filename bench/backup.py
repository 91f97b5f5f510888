"""What `amem backup` costs, and what it costs the agents writing meanwhile.

Builds a SQLite store from the sample account history (``amem/samples``, every account, ``--copies``
times over under distinct scopes) through ``Memory.add_notes`` with the offline analyst, plus
``--queued`` inputs kept without analysis (raw logs waiting for a worker), then, each round:

- the baseline: ``cp`` of the ledger file and its write-ahead log (what an operator would do; not
  a consistent copy while anyone writes, which is why the command exists);
- ``amem backup`` in a process of its own, its two steps apart: the online copy, and the
  verification of the copy (process start and imports are in neither);
- an agent keeping single inputs (``add_notes(wait=False)``, one input a call) in the bench's
  process all along: its latency while nothing else runs, and while the backup runs.

    python bench/backup.py                       # 2 copies of the samples, 20,000 queued inputs
    python bench/backup.py --copies 1 --queued 0 --rounds 1   # a quick look

Each round then restores the backup into a new store (`amem restore`, its own process): the copy
and its verification, and the whole command with the index rebuilt from the stored vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amem.memory import Memory
from amem.samples import load_inputs
from amem.services.backup import BackupReport


def build(home: Path, copies: int, queued: int) -> Memory:
    mem = Memory(home)
    samples = load_inputs()
    for copy in range(copies):
        inputs = [{**item, "scope": f"{item['scope']}-{copy}"} for item in samples]
        mem.add_notes(inputs, actor="agent:crm-agent")
    for start in range(0, queued, 1000):
        batch = [
            {"content": f"Call note {i}: asked about seats", "scope": "queued"}
            for i in range(start, start + 1000)
        ]
        mem.add_notes(batch[: queued - start], actor="agent:mail", wait=False)
    return mem


class Agent(threading.Thread):
    """Keeps one input a call until stopped; records (start, seconds) of each call."""

    def __init__(self, mem: Memory) -> None:
        super().__init__(daemon=True)
        self.mem, self.calls, self.stop, self.n = mem, [], threading.Event(), 0

    def run(self) -> None:
        while not self.stop.is_set():
            self.n += 1
            started = time.perf_counter()
            self.mem.add_notes(
                [{"content": f"agent input {self.n}", "scope": "live"}], actor="agent:live", wait=False
            )
            self.calls.append((started, time.perf_counter() - started))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--queued", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="amem-bench-backup-") as tmp:
        started = time.perf_counter()
        mem = build(Path(tmp) / "home", args.copies, args.queued)
        with mem.ledger.read() as tx:
            heads = tx.chain_state()
        ledger_file = Path(str(mem.ledger.engine.url.database))
        print(
            f"store: {heads['counts'].get('raw_log', 0)} raw logs, {heads['event_seq']} events, "
            f"{heads['change_seq']} changes, {ledger_file.stat().st_size / 1e6:.1f} MB; built in "
            f"{time.perf_counter() - started:.0f} s"
        )
        rows: dict[str, list[float]] = {
            "cp (file and WAL)": [],
            "backup: copy": [],
            "backup: verify the copy": [],
            "restore: copy and verify": [],
            "restore: the command, index rebuilt": [],
        }
        quiet: list[float] = []
        during: list[float] = []
        for r in range(args.rounds):
            dest = Path(tmp) / f"cp-{r}"
            dest.mkdir()
            t = time.perf_counter()
            # in a process of its own, as an operator's cp: closing a file in the process that
            # holds the ledger open drops its SQLite locks (POSIX advisory locks are per process)
            files = [str(f) for f in (ledger_file, Path(f"{ledger_file}-wal")) if f.exists()]
            subprocess.run(["cp", *files, str(dest)], check=True)
            rows["cp (file and WAL)"].append(time.perf_counter() - t)

            agent = Agent(mem)
            agent.start()
            while len(agent.calls) < 200:  # the agent's quiet latency, before the backup
                time.sleep(0.01)
            quiet_until = len(agent.calls)
            began = time.perf_counter()
            done = subprocess.run(  # as an operator runs it: its own process, beside the agent's
                [
                    sys.executable,
                    "-m",
                    "amem",
                    "--home",
                    str(mem.home),
                    "backup",
                    f"{tmp}/backup-{r}.sqlite3",
                    "--json",
                ],
                capture_output=True,
                text=True,
                env={**os.environ, "AMEM_DEBUG": "1"},
            )
            if done.returncode != 0:
                raise SystemExit(f"amem backup failed ({done.returncode}):\n{done.stderr}")
            report = BackupReport.model_validate_json(done.stdout)
            ended = time.perf_counter()
            agent.stop.set()
            agent.join()
            quiet += [s for _, s in agent.calls[:quiet_until]]
            during += [s for at, s in agent.calls if began <= at < ended]
            assert report.verified.ok, report.verified.problems
            rows["backup: copy"].append(report.copy_seconds)
            rows["backup: verify the copy"].append(report.seconds - report.copy_seconds)
            began = time.perf_counter()  # the backup put back into a new store, as an operator would
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "amem",
                    "--home",
                    f"{tmp}/restored-{r}",
                    "restore",
                    report.path,
                    "--json",
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise SystemExit(f"amem restore failed ({done.returncode}):\n{done.stderr}")
            restored = json.loads(done.stdout)
            assert restored["restored"] and restored["heads"] == report.heads
            rows["restore: copy and verify"].append(restored["seconds"])
            rows["restore: the command, index rebuilt"].append(time.perf_counter() - began)
        mem.close()

    print(f"\n{args.rounds} rounds, 2 cores, SQLite; medians\n")
    print("| step | seconds | vs cp |")
    print("|---|---|---|")
    base = statistics.median(rows["cp (file and WAL)"])
    for name, values in rows.items():
        m = statistics.median(values)
        print(f"| {name} | {m:.2f} | {m / base:.1f}x |")
    print("\n| an agent keeping one input a call | calls | p50 ms | p95 ms |")
    print("|---|---|---|---|")
    print(f"| nothing else running | {len(quiet)} | {pct(quiet, 0.5):.1f} | {pct(quiet, 0.95):.1f} |")
    print(f"| while the backup runs | {len(during)} | {pct(during, 0.5):.1f} | {pct(during, 0.95):.1f} |")


if __name__ == "__main__":
    main()
