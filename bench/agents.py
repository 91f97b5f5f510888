"""Agents on loopback: N concurrent HTTP clients adding and searching while workers run.

Starts `amem serve --workers 0` (the API: acknowledgement and search) and separate `amem worker`
processes (the offline analyst), on a store first filled with --store notes. Each client loops:
POST /v1/inputs (the acknowledgement: the raw log committed) or GET /v1/search, at --search-share.
A sampler reads GET /v1/queue twice a second. With --kill, every worker process is killed with
SIGKILL half-way through and started again; at the end every acknowledged input must have its note.

    python bench/agents.py --backend sqlite --clients 16 --seconds 30 --store 2000 --kill
    python bench/agents.py --backend postgres --clients 16 --seconds 30 --store 2000 --kill

Prints one table (and --json for the figures); the targets of issue 14 are printed beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
import sqlalchemy as sa  # noqa: E402

from amem.memory import Memory  # noqa: E402

ACCOUNTS = [f"account{i:02d}" for i in range(20)]
TOPICS = ["SSO rollout", "renewal pricing", "seat count", "support ticket", "security review", "onboarding"]
WORDS = ["asked", "confirmed", "delayed", "approved", "questioned", "escalated", "signed", "postponed"]
TARGET_ACK_P95_MS = 20.0
TARGET_SEARCH_P95_MS = 50.0


def sentence(rng: random.Random, account: str) -> str:
    return (
        f"{account} {rng.choice(WORDS)} the {rng.choice(TOPICS)} on call {rng.randrange(10_000)}: "
        f"{rng.randrange(5, 500)} seats at ${rng.randrange(10, 90)} per seat, next step {rng.choice(TOPICS)}."
    )


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def database(backend: str, home: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{home / 'ledger.sqlite3'}"
    base = os.environ.get("AMEM_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
    schema = f"bench_agents_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(base)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    engine.dispose()
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options={quote(f'-csearch_path={schema}')}"


def fill(home: Path, url: str, notes: int, rng: random.Random) -> float:
    started = time.perf_counter()
    with Memory(home, database_url=url) as memory:
        batch: list[dict[str, str]] = []
        for i in range(notes):
            account = ACCOUNTS[i % len(ACCOUNTS)]
            batch.append({"content": sentence(rng, account), "scope": account})
            if len(batch) == 256 or i == notes - 1:
                memory.add_notes(batch, actor="agent:filler", batch_size=256)
                batch = []
    return time.perf_counter() - started


class Run:
    def __init__(self, args: argparse.Namespace, home: Path, url: str) -> None:
        self.args, self.home, self.url = args, home, url
        self.env = {**os.environ, "PYTHONPATH": str(REPO), "AMEM_WORKER_LEASE_SECONDS": str(args.lease)}
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workers: list[subprocess.Popen[bytes]] = []
        self.ack_ms: list[float] = []
        self.search_ms: list[float] = []
        self.acknowledged: list[str] = []
        self.errors: list[str] = []
        self.depth: list[tuple[float, int, int]] = []
        self.kills = 0

    def amem(self, *argv: str) -> list[str]:
        return [sys.executable, "-m", "amem", "--home", str(self.home), "--database-url", self.url, *argv]

    def start_workers(self) -> None:
        for _ in range(self.args.worker_processes):
            self.workers.append(
                subprocess.Popen(
                    self.amem("worker", "--batch-size", str(self.args.batch_size)),
                    env=self.env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )

    def kill_workers(self) -> None:
        for worker in self.workers:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
        self.workers = []
        self.kills += 1

    async def client(self, http: httpx.AsyncClient, token: str, rng: random.Random, until: float) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        while time.perf_counter() < until:
            account = rng.choice(ACCOUNTS)
            started = time.perf_counter()
            if rng.random() < self.args.search_share:
                query = f"{rng.choice(TOPICS)} {rng.choice(WORDS)}"
                r = await http.get("/v1/search", params={"q": query, "scope": account}, headers=headers)
                if r.status_code == 200:
                    self.search_ms.append((time.perf_counter() - started) * 1000)
                else:
                    self.errors.append(f"search {r.status_code}")
            else:
                r = await http.post(
                    "/v1/inputs", json={"content": sentence(rng, account), "scope": account}, headers=headers
                )
                if r.status_code == 202:
                    self.ack_ms.append((time.perf_counter() - started) * 1000)
                    self.acknowledged.append(r.json()["raw_log_id"])
                else:
                    self.errors.append(f"add {r.status_code}")
            if self.args.think_ms:  # an agent between two calls (0: a closed loop, as fast as it answers)
                await asyncio.sleep(rng.expovariate(1000 / self.args.think_ms))

    async def sampler(self, http: httpx.AsyncClient, token: str, t0: float, stop: asyncio.Event) -> None:
        while not stop.is_set():
            r = await http.get("/v1/queue", headers={"Authorization": f"Bearer {token}"})
            if r.status_code == 200:
                d = r.json()
                self.depth.append((time.perf_counter() - t0, d["queued"], d["processing"]))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)

    async def drive(self, token: str) -> float:
        rng = random.Random(self.args.seed)
        limits = httpx.Limits(max_connections=self.args.clients + 2)
        async with httpx.AsyncClient(base_url=self.base, timeout=60, limits=limits) as http:
            t0 = time.perf_counter()
            until = t0 + self.args.seconds
            stop = asyncio.Event()
            sampler = asyncio.create_task(self.sampler(http, token, t0, stop))
            clients = [
                asyncio.create_task(self.client(http, token, random.Random(rng.random()), until))
                for _ in range(self.args.clients)
            ]
            if self.args.kill:
                await asyncio.sleep(self.args.seconds / 2)
                self.kill_workers()
                await asyncio.sleep(1.0)
                self.start_workers()
            await asyncio.gather(*clients)
            elapsed = time.perf_counter() - t0
            deadline = time.perf_counter() + self.args.drain_timeout
            while time.perf_counter() < deadline:  # the queue drains (the sampler keeps sampling)
                r = await http.get("/v1/queue", headers={"Authorization": f"Bearer {token}"})
                d = r.json()
                if d["queued"] == 0 and d["processing"] == 0:
                    break
                await asyncio.sleep(0.5)
            stop.set()
            await sampler
            return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--store", type=int, default=2000, help="notes in the store before the run")
    parser.add_argument("--search-share", type=float, default=0.5)
    parser.add_argument("--think-ms", type=float, default=0, help="mean pause between a client's calls")
    parser.add_argument("--worker-processes", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lease", type=float, default=5.0, help="AMEM_WORKER_LEASE_SECONDS of the workers")
    parser.add_argument("--kill", action="store_true", help="SIGKILL every worker half-way, then restart")
    parser.add_argument("--drain-timeout", type=float, default=600)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="amem-bench-agents-"))
    url = database(args.backend, home)
    fill_s = fill(home, url, args.store, random.Random(args.seed)) if args.store else 0.0
    with Memory(home, database_url=url) as memory:
        token, _ = memory.tokens.create("bench", "agent")
    run = Run(args, home, url)
    server = subprocess.Popen(
        run.amem("serve", "--port", str(run.port), "--workers", "0"),
        env=run.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # the API answers (and its search index is open) before the clock starts
            try:
                r = httpx.get(
                    f"{run.base}/v1/search",
                    params={"q": "warm", "scope": ACCOUNTS[0]},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=60,
                )
                if r.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        run.start_workers()
        elapsed = asyncio.run(run.drive(token))
    finally:
        for worker in run.workers:
            worker.send_signal(signal.SIGTERM)
        for worker in run.workers:
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)

    with Memory(home, database_url=url) as memory:
        statuses = [memory.input_status(i) for i in run.acknowledged]
    done = [s for s in statuses if s.status == "done" and s.note_id]
    to_note_ms = [(s.updated_at - s.received_at).total_seconds() * 1000 for s in done]
    lost = len(statuses) - len(done)
    peak_depth = max((q + p for _, q, p in run.depth), default=0)
    figures = {
        "backend": args.backend,
        "clients": args.clients,
        "store_notes": args.store,
        "fill_s": round(fill_s, 1),
        "seconds": round(elapsed, 1),
        "adds": len(run.ack_ms),
        "searches": len(run.search_ms),
        "adds_per_s": round(len(run.ack_ms) / elapsed, 1),
        "searches_per_s": round(len(run.search_ms) / elapsed, 1),
        "ack_ms": {q: round(percentile(run.ack_ms, q), 1) for q in (50, 95, 99)},
        "search_ms": {q: round(percentile(run.search_ms, q), 1) for q in (50, 95, 99)},
        "ack_to_note_ms": {
            "p50": round(percentile(to_note_ms, 50), 0),
            "p95": round(percentile(to_note_ms, 95), 0),
            "max": round(max(to_note_ms, default=0)),
        },
        "queue_peak": peak_depth,
        "queue_depth": [(round(t, 1), q, p) for t, q, p in run.depth[:: max(1, len(run.depth) // 20)]],
        "worker_kills": run.kills,
        "acknowledged": len(statuses),
        "without_note": lost,
        "errors": sorted(set(run.errors)),
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    ack, srch, note = figures["ack_ms"], figures["search_ms"], figures["ack_to_note_ms"]
    print(
        f"\nbench/agents.py: {args.backend}, {args.clients} clients, {args.store:,}-note store, "
        f"{args.worker_processes} worker process(es), {elapsed:.0f} s, kill -9 mid-run: {args.kill}"
    )
    print("| measure | p50 | p95 | p99 | target |")
    print("|---|---|---|---|---|")
    ok_ack = "met" if ack[95] < TARGET_ACK_P95_MS else "MISSED"
    ok_search = "met" if srch[95] < TARGET_SEARCH_P95_MS else "MISSED"
    print(
        f"| acknowledgement ms ({figures['adds_per_s']}/s) | {ack[50]} | {ack[95]} | {ack[99]} | "
        f"p95 < {TARGET_ACK_P95_MS:.0f}: {ok_ack} |"
    )
    print(
        f"| search ms ({figures['searches_per_s']}/s) | {srch[50]} | {srch[95]} | {srch[99]} | "
        f"p95 < {TARGET_SEARCH_P95_MS:.0f}: {ok_search} |"
    )
    print(f"| acknowledgement to note ms | {note['p50']} | {note['p95']} | max {note['max']} | |")
    print(f"queue depth (s, queued, processing): {figures['queue_depth']}; peak {peak_depth}")
    print(
        f"acknowledged {len(statuses)}, without a note at the end: {lost}; worker kills: {run.kills}; "
        f"errors: {figures['errors'] or 'none'}; store filled in {fill_s:.0f} s"
    )
    return 0 if lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
