"""What a poll of the change feed costs a CRM sync that follows one quiet account.

`GET /v1/changes?after=N` (``Memory.change_feed``) answers ``next_after`` for the next poll. Before,
it was the last change the page returned, so the poller of a quiet account asked again from its own
last change and each poll walked every busier account's changes since then. Now it is the chain
head the read covered. This builds ledgers where one account (acme) takes nearly every change and
another (initech) one in a thousand of the first tenth, then none (an account gone quiet for a
while, its sync still polling), then times, in the same run, initech's steady poll (nothing new
for it) from where each rule leaves the poller:

- ``after`` = initech's own last change (the old ``next_after``): the walk over acme's changes;
- ``after`` = the head (the new ``next_after``).

    python bench/change_feed.py                       # 10,000 and 100,000 changes, SQLite
    python bench/change_feed.py --sizes 10000 --database-url postgresql+psycopg://postgres@127.0.0.1:5432/test
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import sqlalchemy as sa  # noqa: E402

from amem.domain.hashing import sha256_text  # noqa: E402
from amem.domain.models import Actor, RawLog, new_id, utcnow  # noqa: E402
from amem.memory import Memory  # noqa: E402
from bench.decided_by import timed  # noqa: E402

AGENT = Actor(kind="agent", id="sales-agent")
#: One change in this many is the quiet account's.
QUIET_EVERY = 1000
BATCH = 5000


def build(home: Path, database_url: str, changes: int) -> Memory:
    """A ledger of ``changes`` notes (one change each: the note made), initech's every
    ``QUIET_EVERY``-th of the first tenth and acme's the rest; written ``BATCH`` notes a transaction."""
    mem = Memory(home, database_url=database_url)
    for start in range(0, changes, BATCH):
        with mem.ledger.write() as tx:
            now = utcnow()
            for i in range(start, min(start + BATCH, changes)):
                quiet = i < changes // 10 and i % QUIET_EVERY == QUIET_EVERY // 2
                scope = "initech" if quiet else "acme"
                text = f"Call {i} with {scope}: the next step was agreed."
                raw = RawLog(
                    id=new_id("r"), text=text, occurred_at=now, actor=AGENT, scope=scope, received_at=now,
                    sha256=sha256_text(text),
                )  # fmt: skip
                tx.insert_raw_logs([raw], now)
                mem.governance.create_note(tx, scope=scope, content=text, raw_logs=[raw], actor=AGENT)
    return mem


def polls(mem: Memory, repeat: int) -> tuple[int, float, float]:
    """acme's changes after initech's last, and the median poll from there and from the head."""
    everything = mem.change_feed(scopes=["initech"], limit=1000)
    own_last, head = everything.changes[-1].seq, everything.next_after
    assert head > own_last and not everything.more
    old = timed(lambda: mem.change_feed(after=own_last, scopes=["initech"]), repeat)
    new = timed(lambda: mem.change_feed(after=head, scopes=["initech"]), repeat)
    return head - own_last, old, new


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--database-url", default=None, help="a PostgreSQL URL (a schema of its own)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="amem-feed-bench-"))
    rows = []
    try:
        for size in args.sizes:
            url, schema = args.database_url, None
            if url is None:
                url = f"sqlite:///{root / f'{size}.sqlite3'}"
            else:
                schema = f"feed_bench_{uuid.uuid4().hex[:8]}"
                with sa.create_engine(url).begin() as conn:
                    conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
                url += ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"
            started = time.perf_counter()
            mem = build(root / str(size), url, size)
            built = time.perf_counter() - started
            try:
                walked, old, new = polls(mem, args.repeat)
            finally:
                mem.close()
                if schema is not None:
                    with sa.create_engine(args.database_url).begin() as conn:
                        conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
            rows.append((size, built, walked, old, new))
        backend = "SQLite" if args.database_url is None else "PostgreSQL"
        print(f"\n{'changes':>9}{'built in':>10}{'walked':>8}{'from its own last':>19}", end="")
        print(f"{'from the head':>15}{'ratio':>8}")
        for size, built, walked, old, new in rows:
            print(
                f"{size:>9,}{built:>9.0f}s{walked:>8,}{old * 1000:>16.2f} ms{new * 1000:>12.2f} ms"
                f"{old / new:>7.1f}x"
            )
        print(
            f"\nmedian of {args.repeat} polls of initech's changes with nothing new for it "
            f"(Memory.change_feed, {backend}); walked: acme's changes after initech's last"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
