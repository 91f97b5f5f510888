"""What the audit log's "What reviewers decide" costs as the ledger's decisions grow.

The table counts, per attribute and per model, the held values reviewers approved, corrected or
rejected in a window (`Memory.review_verdicts`): a correction is a rejected proposal that a later
proposal names (`proposals.corrects`, migration 0021's index). This builds SQLite ledgers of decided
next_step proposals as `bench/decided_by.py` does, then times the read with the index and, as the
baseline in the same run, with the index dropped; the page's existing "Time to review" read
(`Memory.review_times`) is timed beside them for scale.

    python bench/verdicts.py                   # 1,000 and 10,000 decided proposals
    python bench/verdicts.py --sizes 1000 20000 --repeat 10
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sqlalchemy as sa
from decided_by import build, timed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="amem-verdicts-bench-"))
    rows = []
    try:
        for size in args.sizes:
            mem = build(root / str(size), size)
            try:
                verdicts = mem.review_verdicts(days=30)
                assert sum(r.approved for r in verdicts.by_attribute) == size, verdicts
                times = timed(lambda: mem.review_times(days=30), args.repeat)  # noqa: B023
                with_index = timed(lambda: mem.review_verdicts(days=30), args.repeat)  # noqa: B023
                with mem.ledger.engine.begin() as conn:
                    conn.execute(sa.text("DROP INDEX ix_proposals_corrects"))
                without = timed(lambda: mem.review_verdicts(days=30), args.repeat)  # noqa: B023
            finally:
                mem.close()
            rows.append((size, times, with_index, without))
        print(f"\n{'decided':>10}{'review_times':>14}{'verdicts':>12}{'no index':>12}{'ratio':>8}")
        for size, times, with_index, without in rows:
            print(
                f"{size:>10,}{times * 1000:>11.1f} ms{with_index * 1000:>9.1f} ms{without * 1000:>9.1f} ms"
                f"{without / with_index:>7.1f}x"
            )
        print(f"\nmedian of {args.repeat} reads of a 30-day window, SQLite, 2 reviewers' approvals")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
