"""amem's search beside the A-MEM reference's, at 1,000 notes, and beside another commit's amem.

Each system runs in a process of its own, built from the same first 1,000 LoCoMo turns with the
same scripted zero-latency model and the same embedder (amem's offline all-MiniLM-L6-v2 int8; see
bench/peers.py, whose setup this reuses): amem with ``add_notes`` in batches of 50, the baseline
amem (another commit, extracted with ``git archive``) on a copy of that store, A-MEM (the `a-mem`
0.2.6 package, in the bench-only environment of bench/README.md "Peers") with its own
``add_note``. Then every query goes to each process in turn (the same LoCoMo question, k=10), so
load on a shared machine hits all alike; each process times its own call. The two amem processes'
answers are compared hit by hit (ids, order, scores).

    /work/main/.venv/bin/python bench/search_vs_amem.py                 # 300 queries
    /work/main/.venv/bin/python bench/search_vs_amem.py --peer-store /tmp/amem-peer   # keep A-MEM's store
    /work/main/.venv/bin/python bench/search_vs_amem.py --baseline-ref none --peer-python none
    /work/main/.venv/bin/python bench/search_vs_amem.py \\
        --database-url postgresql+psycopg://postgres@127.0.0.1:5432/bench_search

``--peer-store``: A-MEM is built there the first time; later runs copy it and read each of its
notes once (into its cache, as a build leaves it) instead of spending minutes adding them again.
With ``--database-url`` the amem ledger is that PostgreSQL database (emptied first; the
baseline's is a copy of it, ``<name>_base``, dropped at the end).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
#: The code before the search work of issue 16, part 5.
DEFAULT_BASELINE = "95a88f5"
PEER_PYTHON = "/tmp/peers-venv/bin/python"
WARM_UP = 10


# -- the children ----------------------------------------------------------------------------------


def child_amem(code: Path, home: Path, url: str | None, build: bool, n: int) -> None:
    sys.path.insert(0, str(code))
    import amem  # this tree's amem, before bench/peers.py puts the repository first

    if Path(amem.__file__).resolve().parents[1] != code.resolve():
        raise SystemExit(f"imported {amem.__file__}, not the amem of {code}")
    sys.path.insert(1, str(REPO / "bench"))
    import logging

    import peers

    from amem.memory import Memory

    logging.disable(logging.WARNING)
    peers.install_model()
    memory = Memory(home, llm="scripted/amem", database_url=url)
    if build:
        texts = peers.turns(n)
        for start in range(0, n, 50):
            memory.add_notes(
                [{"content": t, "scope": "bench"} for t in texts[start : start + 50]],
                actor="agent:bench",
                batch_size=50,
            )
        if url and url.startswith("postgresql"):
            # Planner statistics, as autovacuum would gather them: this project's server runs
            # without it (bench/README.md, Agents, eleventh session).
            import sqlalchemy as sa

            with memory.ledger.engine.begin() as conn:
                conn.execute(sa.text("ANALYZE"))
        memory.close()
        return

    def search(q: str) -> list[tuple[str, float]]:
        return [(h.note_id, h.score) for h in memory.search(q, 10, scope="bench")]

    serve(search)
    memory.close()


def child_amem_peer(home: Path, n: int, reopen: bool) -> None:
    sys.path.insert(0, str(REPO))
    sys.path.insert(1, str(REPO / "bench"))
    import logging

    import peers

    logging.disable(logging.WARNING)
    peers.install_model()
    system = peers.AMemPeer(home)
    if reopen:  # a store built by an earlier run: its notes read once, into its cache, as after a build
        for note_id in system.system.retriever.collection.get(include=[])["ids"]:
            system.system.read(note_id)
    else:
        for text in peers.turns(n):
            system.add(text)

    def search(q: str) -> list[tuple[str, float]]:
        return [(h["id"], float(h["score"])) for h in system.search(q)]

    serve(search)


def serve(search: Any) -> None:
    """One question a line on stdin (its number), one answer a line on stdout: wall ms, process
    CPU ms (every thread's) and a digest of the hits."""
    sys.path.insert(1, str(REPO / "bench"))
    import peers

    qs = peers.questions(10_000)
    out = sys.stdout
    print("ready", file=out, flush=True)
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        q = qs[int(line) % len(qs)]
        started, cpu = time.perf_counter(), time.process_time()
        hits = search(q)
        ms, cpu_ms = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
        digest = hashlib.sha256(json.dumps(hits).encode()).hexdigest()[:16]
        print(f"{ms:.4f} {cpu_ms:.4f} {digest}", file=out, flush=True)


# -- the parent ------------------------------------------------------------------------------------


class Child:
    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(REPO)
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip() == "ready":
                return
        raise SystemExit(f"{name}: the child ended before it was ready (rc {self.proc.wait()})")

    def ask(self, i: int) -> tuple[float, float, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{i}\n")
        self.proc.stdin.flush()
        ms, cpu_ms, digest = self.proc.stdout.readline().split()
        return float(ms), float(cpu_ms), digest

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _extract(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "amem", "migrations"], check=True, capture_output=True
    )
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _pg_admin(url: str, statements: list[str]) -> None:
    import sqlalchemy as sa

    admin = sa.make_url(url).set(database="postgres")
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for s in statements:
            conn.exec_driver_sql(s)
    engine.dispose()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--baseline-ref", default=DEFAULT_BASELINE, help="git ref; 'none' to skip")
    parser.add_argument("--peer-python", default=PEER_PYTHON, help="the bench venv's python; 'none' to skip")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL database for amem's ledger")
    parser.add_argument(
        "--amem-store", type=Path, help="copy this amem home (SQLite) instead of building one"
    )
    parser.add_argument(
        "--peer-store", type=Path, help="A-MEM's store: built there if missing, else copied and reopened"
    )
    parser.add_argument("--child", choices=["amem", "a-mem"], help=argparse.SUPPRESS)
    parser.add_argument("--code", type=Path, default=REPO, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--reopen", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "amem":
        child_amem(args.code, args.home, args.database_url, args.build, args.notes)
        return 0
    if args.child == "a-mem":
        child_amem_peer(args.home, args.notes, reopen=args.reopen)
        return 0

    me = [sys.executable, str(Path(__file__).resolve()), "--notes", str(args.notes)]
    root = Path(tempfile.mkdtemp(prefix="amem-search-vs-"))
    url, base_url = args.database_url, None
    try:
        if url:
            name = url.rsplit("/", 1)[1]
            base_url = f"{url}_base"
            _pg_admin(
                url,
                [
                    f"DROP DATABASE IF EXISTS {name}_base",
                    f"DROP DATABASE IF EXISTS {name}",
                    f"CREATE DATABASE {name}",
                ],
            )
        db = ["--database-url", url] if url else []
        started = time.perf_counter()
        if args.amem_store and not url:
            shutil.copytree(args.amem_store, root / "amem")
        else:
            subprocess.run([*me, "--child", "amem", "--home", str(root / "amem"), "--build", *db], check=True)
            print(f"amem store built: {args.notes} notes, {time.perf_counter() - started:.0f} s", flush=True)
        if args.baseline_ref != "none":  # a copy of the store, made while nothing has it open
            shutil.copytree(root / "amem", root / "amem-base")
            if url:
                name = url.rsplit("/", 1)[1]
                _pg_admin(url, [f"CREATE DATABASE {name}_base TEMPLATE {name}"])
        children: list[Child] = [
            Child("amem (this tree)", [*me, "--child", "amem", "--home", str(root / "amem"), *db])
        ]
        if args.baseline_ref != "none":
            code = _extract(args.baseline_ref, root / "code-base")
            children.append(
                Child(
                    f"amem {args.baseline_ref} (baseline)",
                    [
                        *me,
                        "--child",
                        "amem",
                        "--code",
                        str(code),
                        "--home",
                        str(root / "amem-base"),
                        *(["--database-url", base_url] if base_url else []),
                    ],
                )
            )
        if args.peer_python != "none":
            started = time.perf_counter()
            peer = [args.peer_python, str(Path(__file__).resolve()), "--notes", str(args.notes)]
            home, reopen = root / "a-mem", []
            if args.peer_store and args.peer_store.exists():
                shutil.copytree(args.peer_store, home)
                reopen = ["--reopen"]
            elif args.peer_store:
                home = args.peer_store
            children.append(
                Child("A-MEM (a-mem 0.2.6)", [*peer, "--child", "a-mem", "--home", str(home), *reopen])
            )
            print(f"A-MEM ready: {time.perf_counter() - started:.0f} s", flush=True)
        load_before = os.getloadavg()
        times: dict[str, list[float]] = {c.name: [] for c in children}
        cpu: dict[str, list[float]] = {c.name: [] for c in children}
        digests: dict[str, list[str]] = {c.name: [] for c in children}
        for i in range(WARM_UP + args.queries):
            for c in children:
                ms, cpu_ms, digest = c.ask(i)
                if i >= WARM_UP:
                    times[c.name].append(ms)
                    cpu[c.name].append(cpu_ms)
                    digests[c.name].append(digest)
        load_after = os.getloadavg()
        for c in children:
            c.close()
    finally:
        if url:
            name = url.rsplit("/", 1)[1]
            _pg_admin(url, [f"DROP DATABASE IF EXISTS {name}_base"])
        shutil.rmtree(root, ignore_errors=True)
    backend = "PostgreSQL" if url else "SQLite"
    print(
        f"\nsearch k=10 at {args.notes:,} notes (amem ledger: {backend}), {args.queries} LoCoMo questions, "
        f"each to every system in turn; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    print("| system | p50 ms | p95 ms | mean ms | CPU ms p50 |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        print(
            f"| {name} | {pct(values, 0.5):.2f} | {pct(values, 0.95):.2f} | {sum(values) / len(values):.2f} "
            f"| {pct(cpu[name], 0.5):.2f} |"
        )
    names = list(times)
    peer_name = next((n for n in names if n.startswith("A-MEM")), None)
    if peer_name:
        for name in names:
            if name != peer_name:
                print(
                    f"{name}: p50 {pct(times[name], 0.5) / pct(times[peer_name], 0.5):.2f}x A-MEM's, "
                    f"CPU p50 {pct(cpu[name], 0.5) / pct(cpu[peer_name], 0.5):.2f}x"
                )
    for other in [n for n in names[1:] if not n.startswith("A-MEM")]:
        same = sum(a == b for a, b in zip(digests[names[0]], digests[other], strict=True))
        print(
            f"{names[0]} / {other}: p50 {pct(times[names[0]], 0.5) / pct(times[other], 0.5):.2f}x; "
            f"identical answers (ids, order, scores) {same} of {args.queries}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
