"""Agents on loopback: N concurrent clients adding and searching, over HTTP and MCP, while workers run.

For each code version (this tree, and with --baseline REF the code of that git ref, extracted with
`git archive`, measured first in the same run on the same store) and each transport (--transports
http mcp), it starts the server with no workers of its own (`amem serve --workers 0`, or
`amem mcp --transport http --workers 0`) and --worker-processes `amem worker` processes (the
offline analyst), then N clients each loop: add an input (the acknowledgement: the raw log
committed; HTTP POST /v1/inputs, MCP tool add_note) or search (GET /v1/search, tool search), at
--search-share. The queue's depth is read from the ledger twice a second. With --kill, every worker
is killed with SIGKILL half-way and started again; at the end every acknowledged input must have
its note (the exit status says so).

Two ways to load it:
  --rate 0 (default): a closed loop, each client sends its next call as soon as the last answers:
      the server's capacity; latency is then mostly waiting in line (N clients / throughput).
  --rate R: an open loop, R calls a second in all, each client on its own Poisson schedule;
      latency counts from when the call was due (a client still busy sends late, and that lateness
      counts), so the percentiles are those of an agent population sending R calls a second.

The store: --store N notes before the run (filled through Memory.add_notes with the offline
analyst); with --home DIR the store is kept there and reused by the next run (only missing notes
are added; a PostgreSQL store's URL is kept in DIR/bench-database-url, and a PostgreSQL store is
ANALYZEd after it is filled and VACUUM ANALYZEd before each run, as autovacuum would), so a
10,000-note store is built once:

    python bench/agents.py --home /tmp/agents-10k --store 10000 --seconds 0   # build it (~10 min)
    python bench/agents.py --home /tmp/agents-10k --store 10000 --rate 100 --baseline HEAD~5
    python bench/agents.py --backend postgres --clients 16 --seconds 30 --store 2000 --kill
    python bench/agents.py --transports http mcp --rate 50 --seconds 20

Prints one table (and --json for the figures), with the targets of issue 14 and the machine's
load average before and after each run (its cores are shared: figures from one run compare; across
runs they do not).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any
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
#: What `amem serve` (this tree) prints at exit: documents its index embedded itself.
EMBEDDED = re.compile(r"index embedded (\d+) note document")


def sentence(rng: random.Random, account: str) -> str:
    return (
        f"{account} {rng.choice(WORDS)} the {rng.choice(TOPICS)} on call {rng.randrange(10_000)}: "
        f"{rng.randrange(5, 500)} seats at ${rng.randrange(10, 90)} per seat, next step {rng.choice(TOPICS)}."
    )


def query(rng: random.Random) -> str:
    """A search an agent might send; varied (a number in it), so no cache answers it twice."""
    return f"{rng.choice(TOPICS)} {rng.choice(WORDS)} {rng.randrange(5, 500)} seats"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a live process has used: what a call costs the server, which
    the machine's other load disturbs far less than it disturbs latency."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the store ------------------------------------------------------------------------------------


def database(backend: str, home: Path) -> str:
    """The store's database URL: kept in ``home`` so a later run reuses the same store."""
    kept = home / "bench-database-url"
    if kept.exists():
        return kept.read_text().strip()
    if backend == "sqlite":
        url = f"sqlite:///{home / 'ledger.sqlite3'}"
    else:
        base = os.environ.get("AMEM_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
        schema = f"bench_agents_{uuid.uuid4().hex[:8]}"
        engine = sa.create_engine(base)
        with engine.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        engine.dispose()
        sep = "&" if "?" in base else "?"
        url = f"{base}{sep}options={quote(f'-csearch_path={schema}')}"
    kept.write_text(url)
    return url


def note_count(memory: Memory) -> int:
    from amem.ledger.tables import notes

    with memory.ledger.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(notes)).scalar_one())


def fill(home: Path, url: str, notes: int, rng: random.Random) -> tuple[int, float]:
    """Add notes until the store holds ``notes``; (notes added, seconds)."""
    started = time.perf_counter()
    with Memory(home, database_url=url) as memory:
        missing = max(0, notes - note_count(memory))
        batch: list[dict[str, str]] = []
        for i in range(missing):
            account = ACCOUNTS[i % len(ACCOUNTS)]
            batch.append({"content": sentence(rng, account), "scope": account})
            if len(batch) == 256 or i == missing - 1:
                memory.add_notes(batch, actor="agent:filler", batch_size=256)
                batch = []
                print(f"  store: {i + 1:,} of {missing:,} notes added", file=sys.stderr, flush=True)
        if missing and url.startswith("postgresql"):
            # Planner statistics for the new rows, as autovacuum would gather them: this project's
            # PostgreSQL runs with autovacuum off, and a freshly filled store never analysed
            # searched at p50 50 ms instead of 35 (2026-12-01, 10,000 notes).
            with memory.ledger.engine.begin() as conn:
                conn.execute(sa.text("ANALYZE"))
    return missing, time.perf_counter() - started


def code_of(ref: str, into: Path) -> Path:
    """The code of git ``ref`` (its tracked files, via git archive), to run a baseline from."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", ref], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


# -- one run --------------------------------------------------------------------------------------


@dataclass
class Figures:
    ack_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    depth: list[tuple[float, int, int]] = field(default_factory=list)


class Run:
    def __init__(
        self, args: argparse.Namespace, home: Path, url: str, code: Path, transport: str, token: str
    ) -> None:
        self.args, self.home, self.url, self.code, self.transport, self.token = (
            args,
            home,
            url,
            code,
            transport,
            token,
        )
        self.env = {**os.environ, "PYTHONPATH": str(code), "AMEM_WORKER_LEASE_SECONDS": str(args.lease)}
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workers: list[subprocess.Popen[bytes]] = []
        self.kills = 0
        self.fig = Figures()
        self.server_log = Path(tempfile.mkstemp(prefix="amem-bench-server-", suffix=".log")[1])

    def amem(self, *argv: str) -> list[str]:
        return [sys.executable, "-m", "amem", "--home", str(self.home), "--database-url", self.url, *argv]

    def start_server(self) -> subprocess.Popen[bytes]:
        if self.transport == "http":
            argv = self.amem("serve", "--port", str(self.port), "--workers", "0")
        else:
            argv = self.amem("mcp", "--transport", "http", "--port", str(self.port), "--workers", "0")
        with self.server_log.open("wb") as log:
            return subprocess.Popen(argv, env=self.env, cwd=self.code, stdout=log, stderr=subprocess.STDOUT)

    def start_workers(self) -> None:
        for _ in range(self.args.worker_processes):
            self.workers.append(
                subprocess.Popen(
                    self.amem("worker", "--batch-size", str(self.args.batch_size)),
                    env=self.env,
                    cwd=self.code,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    preexec_fn=self.lower_priority,
                )
            )

    def lower_priority(self) -> None:
        """In a worker process, before it runs: analysis yields the CPU to the server (--worker-nice)."""
        if self.args.worker_nice:
            os.nice(self.args.worker_nice)

    def kill_workers(self) -> None:
        for worker in self.workers:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
        self.workers = []
        self.kills += 1

    def stop_workers(self) -> None:
        for worker in self.workers:
            worker.send_signal(signal.SIGTERM)
        for worker in self.workers:
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
        self.workers = []

    # -- the two transports: one call each way ------------------------------------------------

    async def http_session(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return httpx.AsyncClient(
            base_url=self.base,
            timeout=120,
            headers={"Authorization": f"Bearer {self.token}"},
            limits=httpx.Limits(max_connections=1),
        )

    async def mcp_session(self) -> contextlib.AbstractAsyncContextManager[Any]:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        # the token is the MCP server's too since it asks for one over HTTP (older codes ignore it)
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        return Client(streamable_http_client(f"{self.base}/mcp", http_client=http), read_timeout_seconds=120)

    async def add(self, session: Any, content: str, scope: str) -> str | None:
        if self.transport == "http":
            r = await session.post("/v1/inputs", json={"content": content, "scope": scope})
            if r.status_code != 202:
                self.fig.errors.append(f"add {r.status_code}")
                return None
            return str(r.json()["raw_log_id"])
        result = await session.call_tool("add_note", {"content": content, "scope": scope})
        if result.is_error:
            self.fig.errors.append(f"add_note: {result.content[0].text[:80]}")
            return None
        data = result.structured_content or json.loads(result.content[0].text)
        return str(data["raw_log_id"])

    async def search(self, session: Any, q: str, scope: str) -> bool:
        if self.transport == "http":
            r = await session.get("/v1/search", params={"q": q, "scope": scope})
            if r.status_code != 200:
                self.fig.errors.append(f"search {r.status_code}")
            return bool(r.status_code == 200)
        result = await session.call_tool("search", {"query": q, "scope": scope})
        if result.is_error:
            self.fig.errors.append(f"search: {result.content[0].text[:80]}")
        return not result.is_error

    async def ready(self, server: subprocess.Popen[bytes]) -> None:
        """The server answers a search (its index is open) before the clock starts."""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise RuntimeError(f"the server exited: {self.server_log.read_text()[-2000:]}")
            try:
                opener = self.http_session() if self.transport == "http" else self.mcp_session()
                async with await opener as session:
                    if await self.search(session, "warm up", ACCOUNTS[0]):
                        self.fig.errors.clear()
                        return
            except Exception:  # not listening yet
                pass
            self.fig.errors.clear()
            await asyncio.sleep(0.3)
        raise RuntimeError("the server did not answer within 300 s")

    # -- clients ---------------------------------------------------------------------------------

    async def client(self, rng: random.Random, t0: float, until: float) -> None:
        opener = self.http_session() if self.transport == "http" else self.mcp_session()
        rate = self.args.rate / self.args.clients if self.args.rate > 0 else 0.0
        async with await opener as session:
            due = t0 + (rng.expovariate(rate) if rate else 0.0)
            while due < until:
                now = time.perf_counter()
                if due > now:
                    await asyncio.sleep(due - now)
                started = due if rate else time.perf_counter()
                account = rng.choice(ACCOUNTS)
                if rng.random() < self.args.search_share:
                    if await self.search(session, query(rng), account):
                        self.fig.search_ms.append((time.perf_counter() - started) * 1000)
                else:
                    raw_log_id = await self.add(session, sentence(rng, account), account)
                    if raw_log_id is not None:
                        self.fig.ack_ms.append((time.perf_counter() - started) * 1000)
                        self.fig.acknowledged.append(raw_log_id)
                due = due + rng.expovariate(rate) if rate else time.perf_counter()

    def sample_depth(self, memory: Memory, t0: float, stop: threading.Event) -> None:
        while not stop.is_set():
            d = memory.queue_depth()
            self.fig.depth.append((time.perf_counter() - t0, d["queued"], d["processing"]))
            stop.wait(0.5)

    async def drive(self, memory: Memory) -> tuple[float, float]:
        """Clients for --seconds (workers killed half-way with --kill), then the queue drains.
        Returns (seconds of load, seconds to drain after it)."""
        rng = random.Random(self.args.seed)
        t0 = time.perf_counter()
        until = t0 + self.args.seconds
        stop = threading.Event()
        sampler = threading.Thread(target=self.sample_depth, args=(memory, t0, stop), daemon=True)
        sampler.start()
        clients = [
            asyncio.create_task(self.client(random.Random(rng.random()), t0, until))
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
        while time.perf_counter() < deadline:
            d = await asyncio.to_thread(memory.queue_depth)
            if d["queued"] == 0 and d["processing"] == 0:
                break
            await asyncio.sleep(0.5)
        drained = time.perf_counter() - t0 - elapsed
        stop.set()
        sampler.join()
        return elapsed, drained


def vacuum(url: str) -> None:
    """PostgreSQL: VACUUM ANALYZE the store before a run, as autovacuum would have after the last.

    This project's PostgreSQL runs with autovacuum off; each run leaves a dead row version of every
    note it evolved and of every raw log's state behind (14,382 in notes and 18,738 in
    raw_log_states after five runs on a 10k store), and stale planner statistics."""
    if not url.startswith("postgresql"):
        return
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text("VACUUM ANALYZE"))
    engine.dispose()


def measure(
    args: argparse.Namespace, home: Path, url: str, token: str, version: str, code: Path, transport: str
) -> dict[str, Any]:
    vacuum(url)
    run = Run(args, home, url, code, transport, token)
    load_before = load_average()
    server = run.start_server()
    try:
        with Memory(home, database_url=url) as memory:
            asyncio.run(run.ready(server))
            run.start_workers()
            cpu_before = cpu_seconds(server.pid)
            elapsed, drained = asyncio.run(run.drive(memory))
            cpu = cpu_seconds(server.pid) - cpu_before
            statuses = [memory.input_status(i) for i in run.fig.acknowledged]
    finally:
        run.stop_workers()
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    load_after = load_average()
    embedded = EMBEDDED.findall(run.server_log.read_text(errors="replace"))
    fig = run.fig
    done = [s for s in statuses if s.status == "done" and s.note_id]
    to_note_ms = [(s.updated_at - s.received_at).total_seconds() * 1000 for s in done]
    return {
        "version": version,
        "transport": transport,
        "seconds": round(elapsed, 1),
        "drain_s": round(drained, 1),
        "adds": len(fig.ack_ms),
        "searches": len(fig.search_ms),
        "adds_per_s": round(len(fig.ack_ms) / elapsed, 1),
        "searches_per_s": round(len(fig.search_ms) / elapsed, 1),
        "ack_ms": {q: round(percentile(fig.ack_ms, q), 1) for q in (50, 95, 99)},
        "search_ms": {q: round(percentile(fig.search_ms, q), 1) for q in (50, 95, 99)},
        "ack_to_note_ms": {
            "p50": round(percentile(to_note_ms, 50)),
            "p95": round(percentile(to_note_ms, 95)),
            "max": round(max(to_note_ms, default=0)),
        },
        "server_cpu_ms_per_call": round(cpu * 1000 / max(1, len(fig.ack_ms) + len(fig.search_ms)), 2),
        "queue_peak": max((q + p for _, q, p in fig.depth), default=0),
        "queue_depth": [(round(t, 1), q, p) for t, q, p in fig.depth[:: max(1, len(fig.depth) // 12)]],
        "api_embedded_notes": int(embedded[-1]) if embedded else None,
        "worker_kills": run.kills,
        "acknowledged": len(statuses),
        "without_note": len(statuses) - len(done),
        "errors": sorted(set(fig.errors)),
        "load_before": load_before,
        "load_after": load_after,
    }


def print_table(args: argparse.Namespace, rows: list[dict[str, Any]], store_notes: int) -> None:
    mode = f"open loop, {args.rate:g} calls/s in all" if args.rate > 0 else "closed loop (no pause)"
    print(
        f"\nbench/agents.py: {args.backend}, {args.clients} clients, {mode}, "
        f"search share {args.search_share}, "
        f"{store_notes:,}-note store, {args.worker_processes} worker process(es), {args.seconds:g} s a run, "
        f"worker niceness {args.worker_nice}, kill -9 mid-run: {args.kill}; {os.cpu_count()} cores"
    )
    print(
        "| code | transport | adds/s | ack p50 / p95 / p99 ms | searches/s | search p50 / p95 / p99 ms "
        "| server CPU ms a call | ack to note p50 / p95 ms | queue peak | API embedded | lost "
        "| load avg before-after |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        a, s, n = r["ack_ms"], r["search_ms"], r["ack_to_note_ms"]
        print(
            f"| {r['version']} | {r['transport']} | {r['adds_per_s']} | {a[50]} / **{a[95]}** / {a[99]} "
            f"| {r['searches_per_s']} | {s[50]} / **{s[95]}** / {s[99]} | {r['server_cpu_ms_per_call']} "
            f"| {n['p50']} / {n['p95']} "
            f"| {r['queue_peak']} | {'n/a' if r['api_embedded_notes'] is None else r['api_embedded_notes']} "
            f"| {r['without_note']} of {r['acknowledged']} | {r['load_before']}-{r['load_after']} |"
        )
    print(f"targets (issue 14): ack p95 < {TARGET_ACK_P95_MS:g} ms, search p95 < {TARGET_SEARCH_P95_MS:g} ms")
    for r in rows:
        depth = ", ".join(f"{t:g}s {q}+{p}" for t, q, p in r["queue_depth"])
        print(f"queue depth, {r['version']} {r['transport']} (s: queued+processing): {depth}")
        if r["errors"]:
            print(f"errors, {r['version']} {r['transport']}: {r['errors']}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--home", help="keep the store here and reuse it (default: a new temporary one)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rate", type=float, default=0, help="calls a second in all (0: closed loop)")
    parser.add_argument("--seconds", type=float, default=30, help="load per run (0: only build the store)")
    parser.add_argument("--store", type=int, default=2000, help="notes in the store before the run")
    parser.add_argument("--search-share", type=float, default=0.5)
    parser.add_argument("--transports", nargs="+", choices=["http", "mcp"], default=["http"])
    parser.add_argument("--baseline", metavar="REF", help="also measure git REF's code first, same store")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each version, alternating")
    parser.add_argument("--worker-processes", type=int, default=1)
    parser.add_argument(
        "--worker-nice", type=int, default=0, help="run the worker processes at this niceness (both versions)"
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lease", type=float, default=5.0, help="AMEM_WORKER_LEASE_SECONDS of the workers")
    parser.add_argument("--kill", action="store_true", help="SIGKILL every worker half-way, then restart")
    parser.add_argument("--drain-timeout", type=float, default=600)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="amem-bench-agents-"))
    home.mkdir(parents=True, exist_ok=True)
    url = database(args.backend, home)
    added, fill_s = fill(home, url, args.store, random.Random(args.seed)) if args.store else (0, 0.0)
    with Memory(home, database_url=url) as memory:
        store_notes = note_count(memory)
        token, _ = memory.tokens.create(f"bench-{uuid.uuid4().hex[:6]}", "agent")
    print(f"store {home}: {store_notes:,} notes ({added:,} added in {fill_s:.0f} s)", file=sys.stderr)
    if args.seconds <= 0:
        return 0

    versions: list[tuple[str, Path]] = []
    scratch = Path(tempfile.mkdtemp(prefix="amem-bench-baseline-"))
    if args.baseline:
        versions.append((f"baseline {args.baseline}", code_of(args.baseline, scratch)))
    versions.append(("this tree", REPO))
    rows = []
    for round_ in range(args.repeat):  # alternate the versions: drift in the machine's load hits both
        for version, code in versions if round_ % 2 == 0 else versions[::-1]:
            for transport in args.transports:
                print(f"running: {version}, {transport} ...", file=sys.stderr, flush=True)
                rows.append(measure(args, home, url, token, version, code, transport))
    if args.json:
        print(json.dumps(rows, indent=2))
    print_table(args, rows, store_notes)
    return 0 if all(r["without_note"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
