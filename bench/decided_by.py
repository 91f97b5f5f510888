"""What a reviewer's "Your last decision" line costs as the ledger's decisions grow.

The console's queue page reads the signed-in reviewer's newest decisions on every draw
(`Memory.decided_by`, migration 0020's index on proposals by reviewer and decision time). This
builds SQLite ledgers whose proposals were decided by four reviewers through governance (approved
in bulk, each decision its own transaction, as the console does), then times the read with the index
and, as the baseline in the same run, with the index dropped (what every draw would pay without it).

    python bench/decided_by.py                   # 1,000 and 10,000 decided proposals
    python bench/decided_by.py --sizes 1000 20000 --repeat 50
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import sqlalchemy as sa  # noqa: E402

from amem.domain.hashing import sha256_text  # noqa: E402
from amem.domain.models import Actor, RawLog, new_id, utcnow  # noqa: E402
from amem.memory import Memory  # noqa: E402
from amem.services.governance import Draft  # noqa: E402
from amem.services.review import ReviewFilter  # noqa: E402
from tests.factories import llm_proposer  # noqa: E402

AGENT = Actor(kind="agent", id="sales-agent")
#: Reviewers of the default policy whose roles approve next_step.
REVIEWERS = ("alice", "bob")


def build(directory: Path, decided: int) -> Memory:
    """A ledger with ``decided`` next_step proposals approved, alternately by alice and bob."""
    mem = Memory(directory / "home", database_url=f"sqlite:///{directory / 'ledger.sqlite3'}")
    drafts: list[Draft] = []
    model = llm_proposer(mem, prompt_version="bench/1")  # a model's proposals name its call
    with mem.ledger.write() as tx:
        now = utcnow()
        for i in range(decided):
            text = f"Call {i} with acme: the next step was agreed."
            raw = RawLog(
                id=new_id("r"), text=text, occurred_at=now, actor=AGENT, scope="acme", received_at=now,
                sha256=sha256_text(text),
            )  # fmt: skip
            tx.insert_raw_logs([raw], now)
            note = mem.governance.create_note(tx, scope="acme", content=text, raw_logs=[raw], actor=AGENT)
            drafts.append(Draft(note.id, "next_step", f"send quote {i}", "said in the call", model, [raw.id]))
        mem.governance.propose_in(tx, drafts)
    page = mem.review_items(ReviewFilter(), limit=decided)  # once: each reviewer takes every other item
    for i, reviewer in enumerate(REVIEWERS):
        who = mem.authentication.signed_in(reviewer, method="test")
        items = [item for n, item in enumerate(page.items) if n % len(REVIEWERS) == i]
        for item in items:
            mem.approve_item(item.key, reviewer=who, shown=item.proposal_ids)
    return mem


def timed(read: Callable[[], object], repeat: int) -> float:
    """The median of ``repeat`` calls of ``read``, after one to warm it."""
    read()
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="amem-decided-bench-"))
    rows = []
    try:
        for size in args.sizes:
            started = time.perf_counter()
            mem = build(root / str(size), size)
            built = time.perf_counter() - started
            try:
                with_index = timed(lambda: mem.decided_by("alice", limit=8), args.repeat)  # noqa: B023
                with mem.ledger.engine.begin() as conn:
                    conn.execute(sa.text("DROP INDEX ix_proposals_reviewer_reviewed"))
                without = timed(lambda: mem.decided_by("alice", limit=8), args.repeat)  # noqa: B023
            finally:
                mem.close()
            rows.append((size, built, with_index, without))
        print(f"\n{'decided proposals':>18}{'built in':>10}{'with index':>13}{'no index':>12}{'ratio':>8}")
        for size, built, with_index, without in rows:
            print(
                f"{size:>18,}{built:>9.0f}s{with_index * 1000:>10.2f} ms{without * 1000:>9.2f} ms"
                f"{without / with_index:>7.1f}x"
            )
        print(f"\nmedian of {args.repeat} reads of alice's last 8 decisions (Memory.decided_by), SQLite")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
