"""Would per-scope rowid blocks make the full-text query cheaper? A measurement on a copy.

The ledger's FTS5 index gives notes rowids in creation order and confines a query to its scope
with a scope token ANDed to the words, so each word's posting list is walked across every scope.
This script copies a store's full text into two standalone FTS5 tables (in --out): one as the
ledger has it, one with rowids allocated in per-scope blocks (scope number << 32 | counter), where
the scope becomes a rowid range. It times the link step's query shape (bench/scale.py sentences and
keywords, 60 best, bm25 with the ledger's column weights) on both, for every match and for windows
of the newest matches. Nothing of amem is changed; the notes table is not joined.

    python bench/fts_rowid_blocks.py --ledger /tmp/scale100k/store/ledger.sqlite3
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from scale import ACCOUNTS, pct, sentence  # noqa: E402

from amem.ledger.search_queries import FTS5_WEIGHTS, fts5_match, query_terms, scope_key  # noqa: E402

COLUMNS = "content, keywords, tags, context, scope_key"


def build(ledger: Path, out: Path) -> dict[str, int]:
    src = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    db = sqlite3.connect(out)
    for table in ("by_token", "by_block"):
        db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute(f"CREATE VIRTUAL TABLE {table} USING fts5({COLUMNS}, tokenize='porter unicode61')")
    rows = src.execute(
        "SELECT m.fts_rowid, n.scope, f.content, f.keywords, f.tags, f.context, f.scope_key "
        "FROM notes_fts f JOIN note_fts_rows m ON m.fts_rowid = f.rowid "
        "JOIN notes n ON n.id = m.note_id ORDER BY m.fts_rowid"
    ).fetchall()
    scopes: dict[str, int] = {}
    counters: dict[str, int] = {}
    blocked = []
    for r in rows:
        number = scopes.setdefault(r[1], len(scopes) + 1)
        counters[r[1]] = counters.get(r[1], 0) + 1
        blocked.append(((number << 32) | counters[r[1]], *r[2:]))
    insert = f"INSERT INTO {{}}(rowid, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
    db.executemany(insert.format("by_token"), [(r[0], *r[2:]) for r in rows])
    db.executemany(insert.format("by_block"), blocked)
    for table in ("by_token", "by_block"):
        db.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")
    db.commit()
    print(f"{len(rows):,} notes in {len(scopes)} scopes copied to {out}")
    return scopes


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ledger", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("/tmp/fts_rowid_blocks.sqlite3"))
    parser.add_argument("--queries", type=int, default=150)
    args = parser.parse_args()
    scopes = build(args.ledger, args.out)
    db = sqlite3.connect(args.out)
    weights = ", ".join(str(w) for w in FTS5_WEIGHTS)
    rng = random.Random(3)
    asks = []
    for _ in range(args.queries):
        text = sentence(rng)
        keywords = [w.strip(".,;()") for w in text.split() if w[:1].isupper()][:5]
        scope = rng.choice([s for s in ACCOUNTS if s in scopes])
        asks.append((scope, fts5_match(query_terms(" ".join([text, *keywords])))))

    def timed(sql: str, params: list[tuple[object, ...]]) -> tuple[float, float]:
        times = []
        for p in params:
            started = time.perf_counter()
            db.execute(sql, p).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        return pct(times, 0.5), pct(times, 0.95)

    by_token = [(f'scope_key : "{scope_key(s, "sqlite")}" AND ({q})',) for s, q in asks]
    by_block = [(q, scopes[s] << 32, (scopes[s] << 32) | 0xFFFFFFFF) for s, q in asks]
    print(f"| {'ranked':>16} | {'scope token p50':>15} | {'p95':>6} | {'rowid block p50':>15} | {'p95':>6} |")
    print(f"|{'-' * 18}|{'-' * 17}|{'-' * 8}|{'-' * 17}|{'-' * 8}|")
    for newest in (None, 1000, 250):
        window = "" if newest is None else f" ORDER BY rowid DESC LIMIT {newest}"
        token = timed(
            f"SELECT rowid FROM (SELECT rowid, bm25(by_token, {weights}) AS r FROM by_token "
            f"WHERE by_token MATCH ?{window}) ORDER BY r LIMIT 60",
            by_token,
        )
        block = timed(
            f"SELECT rowid FROM (SELECT rowid, bm25(by_block, {weights}) AS r FROM by_block "
            f"WHERE by_block MATCH ? AND rowid BETWEEN ? AND ?{window}) ORDER BY r LIMIT 60",
            by_block,
        )
        label = "every match" if newest is None else f"newest {newest}"
        print(
            f"| {label:>16} | {token[0]:>15.2f} | {token[1]:>6.2f} | {block[0]:>15.2f} | {block[1]:>6.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
