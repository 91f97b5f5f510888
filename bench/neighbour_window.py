"""What bounding the link step's keyword side costs and buys: neighbours found, and time taken.

add_note's link step offers the analyst a new note's nearest notes of its scope, found by hybrid
search. Its keyword side ranks only the scope's newest matches (NEIGHBOUR_KEYWORD_WINDOW); ranking
every match costs time in proportion to the scope. On a store made by bench/scale.py this script
draws synthetic new notes (not written) and, for each window, times the neighbour search
(SearchService.nearest_many, one note at a time as add_note does) and compares its top link_k
neighbours with those of the exact search (every match ranked):

    python bench/neighbour_window.py --home /tmp/scale100k/store --windows all 1000 250 0

"overlap": the share of the exact top-k the window also finds; "same list": how often the top-k is
identical, order included. Window 0 is the vector side alone (as in the A-MEM paper).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from scale import ACCOUNTS, pct, sentence  # noqa: E402

from amem.domain.models import Note, new_id, utcnow  # noqa: E402
from amem.memory import Memory  # noqa: E402


def draft(rng: random.Random) -> tuple[Note, str]:
    """A new note as the scripted analyst of bench/scale.py would construct it, and its query."""
    text = sentence(rng)
    words = [w.strip(".,;()") for w in text.split() if w[:1].isupper()][:5] or ["note"]
    now = utcnow()
    note = Note(
        id=new_id("n"),
        scope=rng.choice(ACCOUNTS),
        content=text,
        keywords=words,
        tags=[words[0].lower()],
        context="A customer conversation.",
        category="meeting",
        created_at=now,
        updated_at=now,
    )
    return note, " ".join([text, *words])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--windows", nargs="+", default=["all", "1000", "250", "0"])
    parser.add_argument("--notes", type=int, default=200)
    args = parser.parse_args()
    windows: list[int | None] = [None if w == "all" else int(w) for w in args.windows]
    rng = random.Random(11)
    asks = [draft(rng) for _ in range(args.notes)]
    with Memory(args.home) as memory:
        service = memory.search_service
        service.neighbour_keyword_scope_limit = None  # the windows are compared in scopes of any size
        k = memory.settings.link_k
        with memory.ledger.read() as tx:
            size = tx.count_notes()
        service.nearest_many(asks[:5], k)  # warm up
        found: dict[int | None, list[list[str]]] = {}
        times: dict[int | None, list[float]] = {}
        for window in [None, *(w for w in windows if w is not None)]:
            service.neighbour_keyword_window = window
            found[window], times[window] = [], []
            for ask in asks:
                t0 = time.perf_counter()
                (neighbours,) = service.nearest_many([ask], k)
                times[window].append((time.perf_counter() - t0) * 1000)
                found[window].append([n.id for n in neighbours])
    print(f"\nstore {args.home}: {size:,} notes; {args.notes} new notes; top {k} neighbours")
    print(f"| {'keyword window':>14} | {'p50 ms':>6} | {'p95 ms':>6} | {'overlap':>7} | {'same list':>9} |")
    print(f"|{'-' * 16}|{'-' * 8}|{'-' * 8}|{'-' * 9}|{'-' * 11}|")
    exact = found[None]
    for window in windows:
        got = found[window]
        overlap = sum(len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(exact, got, strict=True)) / len(
            got
        )
        same = sum(a == b for a, b in zip(exact, got, strict=True)) / len(got)
        label = "all (exact)" if window is None else str(window)
        print(
            f"| {label:>14} | {pct(times[window], 0.5):>6.1f} | {pct(times[window], 0.95):>6.1f} | "
            f"{overlap:>7.3f} | {same:>9.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
