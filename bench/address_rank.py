"""Whether a note holding a query's address whole (an email, ticket id, version, path) comes first.

The sample account histories (amem/samples, 1,056 notes in 18 account scopes) are written as notes
(no analysis). Each query asks about an address of a note ("What do we know about TW-41877?"): the
32 addresses chosen are those whose words other notes of the scope hold apart, so ranking decides.
For each, SQLite's keyword search (FTS5 bm25) is asked three ways, query by query in turn:

- ``words``: the query's words alone (amem before the address phrase on SQLite);
- ``phrase x1``: the words, and the address as the phrase of its words, once;
- ``phrase xN``: the same, the phrase weighted by the number of its words (``search_terms``, as amem
  asks now, and as PostgreSQL is asked since 0026).

It prints, over the top 5: P@1 (the first hit holds the address whole), MRR of the first such hit,
recall@5 of the notes holding it, and the p50 of the keyword query alone (also at 1,000 notes in
one scope with ``--one-scope``). ``--database-url`` adds PostgreSQL's answers to the same queries.

    python bench/address_rank.py
    python bench/address_rank.py --one-scope --repeat 20       # latency, 1,056 notes in one scope
    python bench/address_rank.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/bench
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from amem.domain.hashing import sha256_text  # noqa: E402
from amem.domain.models import Actor, RawLog, new_id  # noqa: E402
from amem.domain.values import parse_datetime  # noqa: E402
from amem.ledger import search_queries as sq  # noqa: E402
from amem.memory import Memory  # noqa: E402
from amem.samples import load_inputs  # noqa: E402

QUERIES = 32
TOP = 5
AGENT = Actor(kind="agent", id="agent:address-bench")
Match = Callable[[str], str]
WAYS: dict[str, Match] = {
    "words": lambda q: sq.fts5_match(sq.query_terms(q)),
    "phrase x1": lambda q: sq.fts5_match(dict.fromkeys(sq.search_terms(q), 1)),
    "phrase xN": lambda q: sq.fts5_match(sq.search_terms(q)),
}


def addresses(text: str) -> list[str]:
    """The addresses ``search_terms`` finds in ``text`` (its terms that hold a separator)."""
    return [t for t in sq.search_terms(text) if not t.isalnum()]


def build(memory: Memory, one_scope: bool) -> dict[str, tuple[str, str]]:
    """Every sample input as a note; note id -> (scope, lower-cased content)."""
    out: dict[str, tuple[str, str]] = {}
    with memory.ledger.write() as tx:
        for line in load_inputs():
            scope = "all" if one_scope else line["scope"]
            at = parse_datetime(line["at"])
            raw = RawLog(
                id=new_id("r"),
                text=line["content"],
                occurred_at=at,
                actor=AGENT,
                scope=scope,
                received_at=at,
                sha256=sha256_text(line["content"]),
            )
            tx.insert_raw_logs([raw], raw.received_at)
            note = memory.governance.create_note(
                tx, scope=scope, content=line["content"], raw_logs=[raw], actor=AGENT
            )
            out[note.id] = (scope, sq._lower(line["content"]))
    return out


def pick() -> list[tuple[str, str]]:
    """(account, address): addresses of at least two words, each of which some sample note of the
    account without the address holds; one an account in turn, so accounts mix."""
    texts: dict[str, list[str]] = {}
    for line in load_inputs():
        texts.setdefault(line["scope"], []).append(sq._lower(line["content"]))
    by_scope: dict[str, list[str]] = {}
    for scope, lines in sorted(texts.items()):
        for text in lines:
            for address in addresses(text):
                if address in by_scope.get(scope, []) or sq.search_terms(address)[address] < 2:
                    continue
                others = [set(sq.query_terms(t)) for t in lines if address not in addresses(t)]
                if all(any(w in o for o in others) for w in sq.query_terms(address)):
                    by_scope.setdefault(scope, []).append(address)
    chosen: list[tuple[str, str]] = []
    while len(chosen) < QUERIES and any(by_scope.values()):
        for scope in sorted(by_scope):
            if by_scope[scope] and len(chosen) < QUERIES:
                chosen.append((scope, by_scope[scope].pop(0)))
    return chosen


def holding(notes: dict[str, tuple[str, str]], scope: str, address: str) -> set[str]:
    """The notes of ``scope`` that hold ``address`` whole."""
    return {i for i, (s, t) in notes.items() if s == scope and address in addresses(t)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--one-scope", action="store_true", help="every note in one scope")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each query")
    parser.add_argument("--database-url", default=None, help="also a PostgreSQL ledger's answers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        memory = Memory(Path(home) / "sqlite")
        notes = build(memory, args.one_scope)
        chosen = [("all" if args.one_scope else scope, address) for scope, address in pick()]
        ranked: dict[str, list[list[str]]] = {w: [] for w in WAYS}
        times: dict[str, list[float]] = {w: [] for w in WAYS}
        with memory.ledger.read() as tx:
            for scope, address in chosen:
                question = f"What do we know about {address}?"
                for way, match in WAYS.items():
                    hits = sq._fts5(tx, match(question), scope, TOP, (), None, None)
                    ranked[way].append([h.note_id for h in hits])
                for _ in range(args.repeat):
                    for way, match in WAYS.items():  # in turn, so load on the machine hits all alike
                        started = time.perf_counter()
                        sq._fts5(tx, match(question), scope, 10, (), None, None)
                        times[way].append((time.perf_counter() - started) * 1000)
        if args.database_url:
            ranked["postgresql"] = postgres(args.database_url, Path(home), args.one_scope, chosen, notes)
        memory.close()
    print(f"{len(chosen)} address queries, top {TOP}, {len(notes):,} notes, one scope: {args.one_scope}")
    print("| asked | P@1 | MRR | R@5 | p50 ms |")
    print("|---|---|---|---|---|")
    for way, lists in ranked.items():
        p1, rr, r5 = [], [], []
        for (scope, address), hits in zip(chosen, lists, strict=True):
            holders = holding(notes, scope, address)
            held = [h in holders for h in hits]
            p1.append(1.0 if held[:1] == [True] else 0.0)
            rr.append(next((1 / (k + 1) for k, h in enumerate(held) if h), 0.0))
            r5.append(sum(held) / min(TOP, len(holders)))
        p50 = f"{statistics.median(times[way]):.2f}" if way in times else "-"
        print(
            f"| {way} | {statistics.mean(p1):.3f} | {statistics.mean(rr):.3f} | "
            f"{statistics.mean(r5):.3f} | {p50} |"
        )
    print("; ".join(f"{s}: {a} ({len(holding(notes, s, a))})" for s, a in chosen))
    return 0


def postgres(
    url: str,
    home: Path,
    one_scope: bool,
    chosen: list[tuple[str, str]],
    sqlite_notes: dict[str, tuple[str, str]],
) -> list[list[str]]:
    """The same queries on a PostgreSQL ledger, its hits named by the SQLite store's note ids."""
    memory = Memory(home / "postgres", database_url=url)
    notes = build(memory, one_scope)
    same = {v: k for k, v in sqlite_notes.items()}
    out: list[list[str]] = []
    with memory.ledger.read() as tx:
        for scope, address in chosen:
            hits = sq.keyword_search(tx, f"What do we know about {address}?", scope=scope, limit=TOP)
            out.append([same[notes[h.note_id]] for h in hits])
    memory.close()
    return out


if __name__ == "__main__":
    raise SystemExit(main())
