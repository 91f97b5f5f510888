"""What telling a retry from a new input costs one `POST /v1/inputs`: plain (nothing tells them
apart), with `at` (the input's time, scope, author and text looked up), with an `Idempotency-Key`
(the key looked up, then recorded with the raw log).

In process through FastAPI's TestClient (no network, no workers): N POSTs each way on a fresh store
each, rounds alternated so drift hits all ways alike. Needs the api extra.

    python bench/post_inputs.py --posts 500 --rounds 3
    python bench/post_inputs.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import sqlalchemy as sa
from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.memory import Memory

WAYS = ("plain", "at", "key")


def body(way: str, i: int) -> tuple[dict[str, object], dict[str, str]]:
    item: dict[str, object] = {"content": f"Account {i % 20} asked about seat {i}", "scope": f"acct{i % 20}"}
    if way == "at":
        item["at"] = f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z"
    return item, ({"Idempotency-Key": f"msg-{i}"} if way == "key" else {})


def database_for(base: str | None, home: Path) -> tuple[str, str | None]:
    """A fresh ledger: a SQLite file, or a new schema (returned, to drop) on the server of ``base``."""
    if base is None:
        return f"sqlite:///{home / 'ledger.sqlite3'}", None
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with sa.create_engine(base).begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    return f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}", schema


def one_round(way: str, posts: int, base: str | None) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        url, schema = database_for(base, Path(tmp))
        mem = Memory(Path(tmp) / "home", database_url=url)
        try:
            token, _ = mem.tokens.create("bench-agent", "agent")
            auth = {"Authorization": f"Bearer {token}"}
            with TestClient(create_app(mem)) as client:
                client.post("/v1/inputs", json={"content": "warm up", "scope": "warm"}, headers=auth)
                took = []
                for i in range(posts):
                    item, extra = body(way, i)
                    start = time.perf_counter()
                    answer = client.post("/v1/inputs", json=item, headers={**auth, **extra})
                    took.append(1000 * (time.perf_counter() - start))
                    assert answer.status_code == 202, answer.text
            return took
        finally:
            mem.close()
            if schema is not None:
                with sa.create_engine(str(base)).begin() as conn:
                    conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--posts", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server (default: SQLite files)")
    args = parser.parse_args()
    rows: dict[str, list[list[float]]] = {way: [] for way in WAYS}
    for r in range(args.rounds):
        order = WAYS if r % 2 == 0 else tuple(reversed(WAYS))
        for way in order:
            rows[way].append(one_round(way, args.posts, args.database_url))
    backend = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{args.posts} POST /v1/inputs a round, {backend}, in process; ms a POST, mean (p50 / p95)")
    print(
        "| way | "
        + " | ".join(f"round {r + 1}" for r in range(args.rounds))
        + " | vs plain (mean of rounds) |"
    )
    print("|---|" + "---|" * (args.rounds + 1))
    plain = statistics.fmean(statistics.fmean(t) for t in rows["plain"])
    for way in WAYS:
        cells = []
        for took in rows[way]:
            q = statistics.quantiles(took, n=20)
            cells.append(f"{statistics.fmean(took):.2f} ({statistics.median(took):.2f} / {q[18]:.2f})")
        mean = statistics.fmean(statistics.fmean(t) for t in rows[way])
        print(f"| {way} | " + " | ".join(cells) + f" | {mean - plain:+.2f} ms |")


if __name__ == "__main__":
    main()
