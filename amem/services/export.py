"""Auditors' export: changes (with their chain hashes), proposals and raw logs (with their own
event's hash), the event chain itself, the erasures (each row they redacted, with its digests), or
the tokens made and revoked (each with its event), as CSV or JSON Lines.

Streams: rows come page by page from one read transaction (a consistent snapshot of the ledger)
and are written as they come, so an export of any size needs the memory of one page.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal, TextIO

from amem.errors import InvalidInputError
from amem.ledger import export_queries
from amem.ledger.store import Ledger

Kind = Literal["changes", "proposals", "raw_logs", "events", "erasures", "tokens"]
Format = Literal["csv", "jsonl"]
KINDS: tuple[str, ...] = tuple(export_queries.COLUMNS)
FORMATS: tuple[str, ...] = ("csv", "jsonl")


def columns(kind: str) -> list[str]:
    if kind not in export_queries.COLUMNS:
        raise InvalidInputError(f"cannot export {kind!r}: choose one of {', '.join(KINDS)}")
    return export_queries.COLUMNS[kind]


def iter_export(
    ledger: Ledger,
    kind: str,
    *,
    scope: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows of ``kind`` (changes by applied_at, proposals by created_at, raw logs by received_at,
    events by their time, erasures by erased_at, tokens by when each was made or revoked;
    ``since`` inclusive, ``until`` exclusive), oldest first, in ledger order.

    Mistakes are raised here, before the first row, so a writer never starts an export it cannot end.
    """
    columns(kind)
    if kind == "events" and scope is not None:
        raise InvalidInputError("the event chain spans every scope: --scope does not apply to events")
    if kind == "erasures" and scope is not None:
        raise InvalidInputError(
            "an erasure is recorded for the whole ledger: --scope does not apply to erasures "
            "(a scope's erasure names it in its selector)"
        )
    if kind == "tokens" and scope is not None:
        raise InvalidInputError("tokens belong to the whole ledger: --scope does not apply to tokens")
    return _rows(ledger, kind, scope=scope, since=since, until=until)


def _rows(
    ledger: Ledger, kind: str, *, scope: str | None, since: datetime | None, until: datetime | None
) -> Iterator[dict[str, Any]]:
    with ledger.read() as tx:
        yield from export_queries.iter_rows(tx, kind, scope=scope, since=since, until=until)


def write(rows: Iterator[dict[str, Any]], kind: str, fmt: str, out: TextIO) -> int:
    """Write ``rows`` to ``out`` as CSV (a header, JSON for lists and objects) or JSON Lines.
    Returns how many rows were written."""
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}: choose csv or jsonl")
    count = 0
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        names = columns(kind)
        writer.writerow(names)
        for row in rows:
            writer.writerow([_cell(row[name]) for name in names])
            count += 1
        return count
    for row in rows:
        out.write(json.dumps({k: _plain(v) for k, v in row.items()}, ensure_ascii=False) + "\n")
        count += 1
    return count


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
