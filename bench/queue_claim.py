"""One worker claim as the input queue grows: the claim's read in the order of the claim index
(``ix_raw_log_states_claim``, migration 0025) against the read it replaced (raw_logs joined and
ordered by their seq, which no index gave: every queued input read and sorted, on SQLite under the
writer lock that acknowledgements wait on).

One store, its backlog grown step by step with ``add_notes(wait=False)`` (no model, no worker);
at each size both reads claim a batch the whole way (``InputQueue.claim``: read, lease, commit)
then give it back, alternated so drift hits both alike; the figure is the least of the tries (what
the query costs, not the machine's noise) and their median. The old read is swapped in for
``queue_queries._free_rows`` on the same database, so only the read differs. On PostgreSQL the
table is analysed after each step, as autovacuum would do on a live store, before either read.
A last row marks the oldest 99% processed (``--processed``): a store whose queue is short behind
many analysed inputs, which the old read walked past on PostgreSQL (its plan follows raw_logs.seq).

    python bench/queue_claim.py                                   # 1,000 / 20,000 / 100,000 queued
    python bench/queue_claim.py --sizes 1000,20000 --tries 9
    python bench/queue_claim.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/bench
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import sqlalchemy as sa

from amem.domain.models import RawLogState
from amem.ledger import queue_queries
from amem.ledger.store import LedgerTx
from amem.ledger.tables import raw_log_states, raw_logs
from amem.memory import Memory

WAYS = ("before (join, order by raw_logs.seq)", "after (claim index)")


def old_free_rows(
    tx: LedgerTx, *, states: Sequence[RawLogState], now: datetime, after_seq: int, limit: int
) -> list[Any]:
    """The claim's read before migration 0025 (amem/ledger/queue_queries.py at 7262873)."""
    free = sa.or_(raw_log_states.c.lease_until.is_(None), raw_log_states.c.lease_until <= now)
    stmt = (
        sa.select(raw_log_states.c.raw_log_id, raw_log_states.c.claims, raw_logs.c.seq)
        .join(raw_logs, raw_logs.c.id == raw_log_states.c.raw_log_id)
        .where(raw_log_states.c.state.in_([s.value for s in states]), free, raw_logs.c.seq > after_seq)
        .order_by(raw_logs.c.seq)
        .limit(limit)
    )
    if tx.dialect == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True, of=raw_log_states)
    return list(tx.conn.execute(stmt).all())


NEW_FREE_ROWS: Callable[..., list[Any]] = queue_queries._free_rows


def database_for(base: str | None, home: Path) -> tuple[str, str | None]:
    """A fresh ledger: a SQLite file, or a new schema (returned, to drop) on the server of ``base``."""
    if base is None:
        return f"sqlite:///{home / 'ledger.sqlite3'}", None
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with sa.create_engine(base).begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    return f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}", schema


def grow(mem: Memory, start: int, target: int) -> None:
    """Queue inputs ``start`` .. ``target`` - 1 (in imports of 20,000 at most)."""
    for first in range(start, target, 20_000):
        last = min(target, first + 20_000)
        lines = [
            {"content": f"Backlog item {i}: Hooli asked about invoice {i}.", "scope": f"a{i % 40}"}
            for i in range(first, last)
        ]
        mem.add_notes(lines, actor="agent:api", wait=False)


def one_claim(mem: Memory, way: int, batch: int, owner: str) -> float:
    """ms for one claim of ``batch`` read ``way``; the batch is given back after the clock stops."""
    queue_queries._free_rows = old_free_rows if way == 0 else NEW_FREE_ROWS  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        taken = mem.queue.claim(owner, batch)
        took = 1000 * (time.perf_counter() - start)
    finally:
        queue_queries._free_rows = NEW_FREE_ROWS  # type: ignore[assignment]
    assert len(taken) == batch, len(taken)
    mem.queue.release(owner, [raw.id for raw in taken])
    return took


def analyse(mem: Memory, database_url: str | None) -> None:
    """Fresh planner statistics on PostgreSQL (autovacuum's work on a live store); SQLite has none."""
    if database_url:
        with mem.ledger.engine.begin() as conn:
            conn.exec_driver_sql("ANALYZE raw_log_states")
            conn.exec_driver_sql("ANALYZE raw_logs")


def timed(mem: Memory, tries: int, batch: int) -> list[list[float]]:
    """ms of ``tries`` claims each way, alternated, after one untimed claim each way."""
    one_claim(mem, 0, batch, "warm")
    one_claim(mem, 1, batch, "warm")
    took: list[list[float]] = [[], []]
    for t in range(tries):
        for way in (0, 1) if t % 2 == 0 else (1, 0):
            took[way].append(one_claim(mem, way, batch, f"probe-{t}"))
    return took


def plan(mem: Memory, way: int) -> str:
    """The read's plan on this store, one line (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN)."""
    caught: list[tuple[str, Any]] = []

    def catch(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if statement.lstrip().startswith("SELECT") and "ORDER BY" in statement:
            caught.append((statement, parameters))

    sa.event.listen(mem.ledger.engine, "before_cursor_execute", catch)
    try:
        one_claim(mem, way, 1, "plan")
    finally:
        sa.event.remove(mem.ledger.engine, "before_cursor_execute", catch)
    statement, parameters = caught[0]
    with mem.ledger.engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            rows = conn.exec_driver_sql("EXPLAIN " + statement, parameters)
            return " / ".join(str(r[0]).strip().split("  (")[0] for r in rows)
        rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
        return " / ".join(str(r[-1]) for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,20000,100000", help="queued inputs at each step")
    parser.add_argument("--tries", type=int, default=7, help="claims timed per size and read")
    parser.add_argument("--batch", type=int, default=16, help="inputs a claim takes (a worker's batch)")
    parser.add_argument(
        "--processed",
        type=float,
        default=0.99,
        help="then mark this share of the inputs processed, oldest first, and time again (0: skip)",
    )
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server (default: a SQLite file)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backend = "PostgreSQL" if args.database_url else "SQLite"
    results: dict[str, list[list[float]]] = {}
    plans: list[str] = []
    with tempfile.TemporaryDirectory(prefix="amem-queue-claim-") as tmp:
        url, schema = database_for(args.database_url, Path(tmp))
        mem = Memory(Path(tmp) / "home", database_url=url)
        mem.queue.max_claims = 10**9  # the same inputs are claimed again and again: never given up
        try:
            queued = 0
            for size in sizes:
                started = time.perf_counter()
                grow(mem, queued, size)
                queued = size
                print(f"queued {size:,} inputs ({time.perf_counter() - started:.0f} s)", flush=True)
                analyse(mem, args.database_url)
                results[f"{size:,}"] = timed(mem, args.tries, args.batch)
            plans = [plan(mem, way) for way in (0, 1)]
            if args.processed:
                settled = int(queued * args.processed)
                with mem.ledger.engine.begin() as conn:  # a bench's shortcut: analysed, as by workers
                    conn.execute(
                        sa.update(raw_log_states)
                        .where(raw_log_states.c.raw_log_seq <= settled)
                        .values(state=RawLogState.PROCESSED.value)
                    )
                analyse(mem, args.database_url)
                results[f"{queued - settled:,} (after {settled:,} processed)"] = timed(
                    mem, args.tries, args.batch
                )
        finally:
            mem.close()
            if schema is not None:
                with sa.create_engine(str(args.database_url)).begin() as conn:
                    conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
    print(
        f"\nOne claim of {args.batch} ({backend}, InputQueue.claim: read, lease, commit), ms: "
        f"least of {args.tries} (median)"
    )
    print("| queued | " + " | ".join(WAYS) + " | before / after |")
    print("|---|---|---|---|")
    for size, took in results.items():
        cells = [f"{min(t):.2f} ({statistics.median(t):.2f})" for t in took]
        print(f"| {size} | " + " | ".join(cells) + f" | {min(took[0]) / min(took[1]):.1f}x |")
    print(f"\nplans at {sizes[-1]:,} queued:")
    for way, text in zip(WAYS, plans, strict=True):
        print(f"  {way}: {text}")


if __name__ == "__main__":
    main()
