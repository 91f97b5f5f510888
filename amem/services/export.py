"""Auditors' export: changes (with their chain hashes), proposals, raw logs and model calls (with
their own event's hash), the event chain itself, the erasures (each row they redacted, with its digests), or
the tokens made and revoked (each with its event), as CSV or JSON Lines.

Streams: rows come page by page from one read transaction (a consistent snapshot of the ledger)
and are written as they come, so an export of any size needs the memory of one page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from amem.domain.spreadsheet import CSV_BOM, csv_writer, spreadsheet_safe
from amem.errors import InvalidInputError
from amem.ledger import export_queries
from amem.ledger.store import Ledger

Kind = Literal["changes", "proposals", "raw_logs", "llm_calls", "events", "erasures", "tokens"]
Format = Literal["csv", "jsonl"]
KINDS: tuple[str, ...] = tuple(export_queries.COLUMNS)
FORMATS: tuple[str, ...] = ("csv", "jsonl")


class TextOut(Protocol):
    """Where an export is written: an open text file, or standard output as UTF-8 bytes."""

    def write(self, text: str, /) -> int: ...


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
    model calls by created_at, events by their time, erasures by erased_at, tokens by when each
    was made or revoked; ``since`` inclusive, ``until`` exclusive), oldest first, in ledger order.

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


def write(rows: Iterator[dict[str, Any]], kind: str, fmt: str, out: TextOut) -> int:
    """Write ``rows`` to ``out`` as CSV (a header, JSON for lists and objects) or JSON Lines.
    Returns how many rows were written.

    CSV is written as the console's audit trail is, for a spreadsheet: a byte order mark first
    (accents read right) and rows ending in CRLF (a cell holding a lone carriage return quoted, so
    its row stays whole); amem's own import reads it back."""
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}: choose csv or jsonl")
    count = 0
    if fmt == "csv":
        names = columns(kind)
        out.write(CSV_BOM)
        writer = csv_writer(out)
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
    """A CSV cell: text made safe to open in a spreadsheet (an agent's input or a model's answer
    can start like a formula), lists and objects as JSON (never read as a formula), times in ISO
    8601. JSON Lines is the exact form."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        return spreadsheet_safe(value)
    return json.dumps(value, ensure_ascii=False)


# -- the change feed: applied values as they land, for machines ----------------------------------


class FeedChange(BaseModel):
    """One applied change: which value of which note became what, who applied it (a person who
    approved or corrected it, or the model where the policy applies at once), and from which input."""

    seq: int
    applied_at: datetime
    scope: str
    note_id: str
    attribute: str
    old_value: Any = None
    new_value: Any = None
    #: ``person:alice`` (approved, corrected or reverted by her), ``llm:MODEL``, ``agent:NAME``.
    actor: str
    #: ``create`` (the note made), ``apply``, ``revert``.
    kind: str
    proposal_id: str
    raw_log_ids: list[str] = []
    #: The model's proposal this value corrected, when a reviewer corrected it.
    corrects: str | None = None
    #: The change's hash in the chain (`amem verify` recomputes it).
    hash: str


class ChangeFeed(BaseModel):
    """A page of the feed; ask again with ``after=next_after`` for what landed since."""

    changes: list[FeedChange]
    next_after: int
    #: The page was full: more may follow at once.
    more: bool


#: The most changes one page of the feed holds.
FEED_LIMIT = 1000
#: The largest change number (a 32-bit column on PostgreSQL).
MAX_SEQ = 2**31 - 1


def change_feed(
    ledger: Ledger, *, after: int = 0, scopes: Sequence[str] | None = None, limit: int = 100
) -> ChangeFeed:
    """Changes applied after change ``after`` (0: from the first), oldest first, in ``scopes``
    (None: every scope). The seq only grows, so a poller keeping ``next_after`` misses nothing and
    sees nothing twice.

    ``next_after`` passes the other scopes' changes the read went over: a poller of a quiet account
    would otherwise walk every busier account's changes again on each poll. It is the chain head
    read first, and only changes up to it are returned: a change is numbered under the head's lock,
    held to its commit, so every change up to a committed head is visible to the read after it."""
    if not 0 <= after <= MAX_SEQ:
        raise InvalidInputError(f"after={after}: a change number is 0 to {MAX_SEQ}")
    if not 1 <= limit <= FEED_LIMIT:
        raise InvalidInputError(f"limit={limit}: 1 to {FEED_LIMIT} changes a page")
    with ledger.read() as tx:
        head = tx.chain_head_seq()
        rows = export_queries.change_feed(tx, after=after, upto=head, scopes=scopes, limit=limit)
    page = [FeedChange(**{**r, "raw_log_ids": r["raw_log_ids"] or []}) for r in rows]
    more = len(page) == limit
    return ChangeFeed(changes=page, next_after=page[-1].seq if more else max(head, after), more=more)
