"""What an account's facts as of a past moment cost, beside its current facts, as the account grows.

`Memory.facts(scope, as_of=...)` (`amem facts --as-of`, the console's "As of" day,
`GET /v1/facts?as_of=`) reads the account's note ids made by then with the last `deleted` and
`invalid_at` change of each applied by then, and rebuilds only the page's notes from their
changes. The current facts page pages in SQL on the notes' own columns. This builds one account of
N notes (every tenth retired by a later change, auto-applied under a bench policy), then times the
first page (25 facts) now and as of the middle of the build, in the same run.

    python bench/facts_as_of.py                     # 1,000, 10,000 and 100,000 notes, SQLite
    python bench/facts_as_of.py --sizes 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import amem  # noqa: E402
from amem.domain.hashing import sha256_text  # noqa: E402
from amem.domain.models import Actor, RawLog, new_id, utcnow  # noqa: E402
from amem.memory import Memory  # noqa: E402
from amem.services.governance import Draft  # noqa: E402
from bench.decided_by import timed  # noqa: E402
from tests.factories import llm_proposer  # noqa: E402

AGENT = Actor(kind="agent", id="sales-agent")
BATCH = 1000
PAGE = 25


def bench_policy(directory: Path) -> Path:
    """The packaged policy with retirements applied at once, so a build needs no reviewer."""
    text = (Path(amem.__file__).parent / "defaults" / "policies.yaml").read_text(encoding="utf-8")
    path = directory / "policies.yaml"
    text = text.replace("invalid_at: {mode: review}", "invalid_at: {mode: auto}")
    path.write_text(text.replace("reviewers_file: reviewers.yaml", ""), encoding="utf-8")  # no one decides
    return path


def build(directory: Path, size: int, *, policy: Path | None = None) -> tuple[Memory, object]:
    """``size`` notes of acme; every tenth retired by a change applied in the next batch. Returns
    the store and a moment halfway through the build. ``policy``: default ``bench_policy``."""
    directory.mkdir(parents=True, exist_ok=True)
    mem = Memory(
        directory / "home",
        database_url=f"sqlite:///{directory / 'ledger.sqlite3'}",
        policy=policy or bench_policy(directory),
    )
    middle = None
    retire: list[str] = []
    model = llm_proposer(mem, prompt_version="bench/1")  # a model's proposals name its call
    for start in range(0, size, BATCH):
        with mem.ledger.write() as tx:
            now = utcnow()
            if retire:
                mem.governance.propose_in(
                    tx, [Draft(n, "invalid_at", now.isoformat(), "a newer fact", model) for n in retire]
                )
                retire = []
            for i in range(start, min(start + BATCH, size)):
                text = f"Call {i} with acme: the price per seat was agreed at ${40 + i % 30}."
                raw = RawLog(
                    id=new_id("r"), text=text, occurred_at=now, actor=AGENT, scope="acme", received_at=now,
                    sha256=sha256_text(text),
                )  # fmt: skip
                tx.insert_raw_logs([raw], now)
                note = mem.governance.create_note(tx, scope="acme", content=text, raw_logs=[raw], actor=AGENT)
                if i % 10 == 0:
                    retire.append(note.id)
        if middle is None and start + BATCH >= size // 2:
            middle = utcnow()
    with mem.ledger.write() as tx:
        mem.governance.propose_in(
            tx, [Draft(n, "invalid_at", utcnow().isoformat(), "a newer fact", model) for n in retire]
        )
    return mem, middle


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="amem-facts-bench-"))
    rows = []
    try:
        for size in args.sizes:
            started = time.perf_counter()
            mem, middle = build(root / str(size), size)
            built = time.perf_counter() - started
            try:
                now = timed(lambda: mem.facts("acme", limit=PAGE), args.repeat)  # noqa: B023
                then = timed(lambda: mem.facts("acme", limit=PAGE, as_of=middle), args.repeat)  # noqa: B023
                held = mem.facts("acme", limit=PAGE, as_of=middle).total
            finally:
                mem.close()
            rows.append((size, built, held, now, then))
        print(f"\n{'notes':>9}{'built in':>10}{'held then':>11}{'now':>11}{'as of then':>13}{'ratio':>8}")
        for size, built, held, now, then in rows:
            print(
                f"{size:>9,}{built:>9.0f}s{held:>11,}{now * 1000:>8.1f} ms{then * 1000:>10.1f} ms"
                f"{then / now:>7.1f}x"
            )
        print(f"\nmedian of {args.repeat} reads of the first page ({PAGE} facts) of acme, SQLite")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
