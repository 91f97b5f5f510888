"""What a status request that waits for its input costs the ledger, and how soon it answers:
reading on a timer (every 50 to 250 ms: SQLite, and PostgreSQL before migration 0018) against
being told by PostgreSQL's notification when the input settles.

In process through FastAPI's TestClient: each round keeps ``--inputs`` inputs, opens one waiting
request (``GET /v1/inputs/{id}?wait=30``) per input in threads, lets them wait ``--hold`` seconds
(a busy worker pool), then a worker analyses them all (``drain``). Per request: how many
times it read the status, and how long after the worker set its input processed (its
``updated_at``, taken just before its commit) the answer came.
The two ways alternate round by round on the same store.

    python bench/status_wait.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import sqlalchemy as sa
from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.ledger.tables import raw_log_states
from amem.memory import Memory


def one_round(
    memory: Memory, client: TestClient, headers: dict[str, str], n: int, hold: float
) -> dict[str, Any]:
    ids = [
        client.post(
            "/v1/inputs",
            json={"content": f"Acme call {uuid.uuid4().hex[:6]}", "scope": "acme"},
            headers=headers,
        ).json()["raw_log_id"]
        for _ in range(n)
    ]
    reads: dict[str, int] = dict.fromkeys(ids, 0)
    answered: dict[str, float] = {}
    status_of = Memory.input_status

    def counting(self: Memory, raw_log_id: str) -> Any:
        if raw_log_id in reads:
            reads[raw_log_id] += 1
        return status_of(self, raw_log_id)

    memory.input_status = counting.__get__(memory)  # type: ignore[method-assign]

    def wait(raw_log_id: str) -> None:
        client.get(f"/v1/inputs/{raw_log_id}", params={"wait": 30}, headers=headers)
        answered[raw_log_id] = time.time()

    threads = [threading.Thread(target=wait, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    time.sleep(hold)  # the bench's stand-in for a worker pool busy elsewhere
    memory.worker().drain()
    for t in threads:
        t.join()
    del memory.input_status
    with memory.ledger.engine.connect() as conn:  # when each input's worker commit set it processed
        settled = dict(
            conn.execute(
                sa.select(raw_log_states.c.raw_log_id, raw_log_states.c.updated_at).where(
                    raw_log_states.c.raw_log_id.in_(ids)
                )
            ).all()
        )
    lags = [(answered[i] - settled[i].timestamp()) * 1000 for i in ids]
    return {"reads": [reads[i] for i in ids], "lag": lags}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--inputs", type=int, default=20)
    parser.add_argument("--hold", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {"timer": [], "told": []}
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{tmp}/ledger.sqlite3"
        schema = None
        if url.startswith("postgresql"):
            schema = f"bench_wait_{uuid.uuid4().hex[:8]}"
            admin = sa.create_engine(url)
            with admin.begin() as conn:
                conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
            url = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
        memory = Memory(Path(tmp) / "home", database_url=url)
        try:
            token, _ = memory.tokens.create("bench-agent", "agent")
            headers = {"Authorization": f"Bearer {token}"}
            told = memory.settled_listener()
            if told is not None:
                told.listening(30)
            memory.worker().run_once()  # the pipeline built before any round
            with TestClient(create_app(memory)) as client:
                for r in range(args.rounds):
                    for way in ("timer", "told") if r % 2 == 0 else ("told", "timer"):
                        if way == "told" and told is None:
                            continue
                        if way == "timer":
                            memory.settled_listener = lambda: None  # type: ignore[method-assign]
                        results[way].append(one_round(memory, client, headers, args.inputs, args.hold))
                        if way == "timer":
                            del memory.settled_listener
        finally:
            memory.close()
            if schema is not None:
                with admin.begin() as conn:
                    conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
    backend = "PostgreSQL" if schema else "SQLite"
    print(
        f"\n{backend}, {args.rounds} rounds of {args.inputs} waiting requests, worker after {args.hold} s\n"
    )
    print("| way | status reads a request | reads a second, about | answer after the commit p50 / max ms |")
    print("|---|---|---|---|")
    for way, rounds in results.items():
        if not rounds:
            continue
        reads = [x for r in rounds for x in r["reads"]]
        lags = [x for r in rounds for x in r["lag"]]
        print(
            f"| {way} | {statistics.mean(reads):.1f} | {statistics.mean(reads) / args.hold:.1f} | "
            f"{statistics.median(lags):.0f} / {max(lags):.0f} |"
        )


if __name__ == "__main__":
    main()
