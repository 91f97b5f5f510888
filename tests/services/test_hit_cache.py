"""The rows a search keeps (amem/services/hit_cache.py): only under the ledger state they were read
in, and within their bounds of count and text."""

from __future__ import annotations

from types import SimpleNamespace

from amem.ledger.index_queries import LedgerCheck, StoredPosition
from amem.services.hit_cache import HitRows


def check(head: int = 10, erasures: int = 0, instance: str = "i1", events: int = 30) -> LedgerCheck:
    return LedgerCheck(StoredPosition(head, instance, "model", "ledger"), head, erasures, events)


def row(text: str = "note") -> SimpleNamespace:
    return SimpleNamespace(content=text, context=None)


def test_rows_are_given_back_only_while_the_ledger_reads_the_same() -> None:
    rows = HitRows()
    assert rows.get(check(), ["a"]) == {}
    a = row("Acme pays $42")
    rows.put(check(), {"a": a})
    assert rows.get(check(), ["a", "b"]) == {"a": a}
    # a proposal or a decision (events) moves what a hit's pending retirement says
    for other in (check(head=11), check(erasures=1), check(instance="i2"), check(events=31)):
        assert rows.get(other, ["a"]) == {}  # and dropped
        assert rows.get(check(), ["a"]) == {}
        rows.put(check(), {"a": a})
    assert rows.get(LedgerCheck(None, 10, 0), ["a"]) == {}  # before a build: nothing kept


def test_rows_read_under_an_older_state_are_not_kept_beside_a_newer_one() -> None:
    rows = HitRows()
    rows.get(check(head=11), [])  # a newer search came first
    rows.put(check(head=10), {"a": row()})
    assert rows.get(check(head=11), ["a"]) == {}


def test_the_least_recently_used_rows_go_first_within_both_bounds() -> None:
    rows = HitRows(limit=2)
    rows.get(check(), [])
    rows.put(check(), {"a": row(), "b": row()})
    rows.get(check(), ["a"])  # a was used: b goes first
    rows.put(check(), {"c": row()})
    assert set(rows.get(check(), ["a", "b", "c"])) == {"a", "c"} and len(rows) == 2

    rows = HitRows(limit=10, text_limit=100)
    rows.get(check(), [])
    rows.put(check(), {"a": row("x" * 40), "b": row("y" * 40)})
    rows.put(check(), {"c": row("z" * 40)})  # 120 characters: a, the oldest, goes
    assert set(rows.get(check(), ["a", "b", "c"])) == {"b", "c"}
    rows.put(check(), {"b": row("y")})  # a row read again replaces its text, not adds to it
    rows.put(check(), {"d": row("w" * 55)})
    assert set(rows.get(check(), ["b", "c", "d"])) == {"b", "c", "d"}
