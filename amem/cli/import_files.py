"""What `amem import` reads: JSON Lines or CSV (a CRM's export), as inputs with their line numbers,
and every line it cannot read with what is wrong, so one run names them all."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any

from amem.errors import InvalidInputError


@dataclass
class ImportFile:
    """``items``: the inputs read, each with the line it starts on in ``numbers``; ``unread``: the
    lines that are not inputs (line number, what is wrong)."""

    numbers: list[int] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    unread: list[tuple[int, str]] = field(default_factory=list)


def read_jsonl(data: bytes) -> ImportFile:
    """One JSON object a line; blank lines are skipped."""
    read = ImportFile()
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            read.unread.append((number, f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"))
            continue
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            read.unread.append((number, f"not JSON ({exc.msg})"))
            continue
        if not isinstance(item, dict):
            read.unread.append((number, "expected a JSON object"))
            continue
        read.numbers.append(number)
        read.items.append(item)
    return read


#: The columns read for the account and the time when the import names none.
DEFAULT_SCOPE_COLUMN, DEFAULT_AT_COLUMN = "scope", "at"


def read_csv(
    data: bytes,
    *,
    content: str,
    scope: str | None = None,
    at: str | None = None,
    key: str | None = None,
) -> ImportFile:
    """A CSV file with a header row, as spreadsheets and CRMs export it (UTF-8, with or without a
    byte order mark; fields may span lines in quotes). ``content``, ``scope`` and ``at`` name the
    columns holding the text, the account and the time, ``key`` the one holding each row's own id
    (its idempotency key, also kept in its metadata); every other non-empty cell goes into the
    input's metadata under its column's name. A row's line is the line it starts on.

    A column named here must exist: one mistyped (a letter's case) put every row in the fallback
    account, timed now, without a word. ``scope`` and ``at`` left out read the columns "scope" and
    "at" where the file has them. The file is read strictly: an unclosed quote is named by the line
    its cell starts on, where a lenient reader swallowed the rest of the file into that cell."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InvalidInputError(
            f"line {line}: not UTF-8 (byte 0x{data[exc.start]:02x} at column {column}): save the file "
            "as CSV UTF-8"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        return ImportFile()
    except csv.Error as exc:
        raise InvalidInputError(f"line 1: {_not_csv(exc, 1, reader.line_num)}") from None
    names = [name.strip() for name in header]
    missing = [
        problem
        for problem in (
            _missing_column(names, content, "for the text", "name it with --content-column"),
            _missing_column(names, scope, "for the account", "see --scope-column"),
            _missing_column(names, at, "for the time", "see --at-column"),
            _missing_column(names, key, "for each row's id", "see --key-column"),
        )
        if problem is not None
    ]
    if missing:  # every column named and missing at once
        raise InvalidInputError("; ".join(missing))
    scope = DEFAULT_SCOPE_COLUMN if scope is None else scope
    at = DEFAULT_AT_COLUMN if at is None else at
    # Columns a row's cells cannot go under: unnamed, or repeating an earlier column's name (the
    # metadata keeps one cell a name). Harmless while empty; a cell under one refuses the file.
    extra = _unkeyed_columns(names)
    filled: dict[int, int] = {}  # extra column (0-based) -> the first line with a cell under it
    read = ImportFile()
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            read.unread.append((start, _not_csv(exc, start, reader.line_num)))
            start = reader.line_num + 1
            continue
        number, start = start, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue  # a blank row
        if len(row) > len(names):
            read.unread.append((number, f"{len(row)} cells, more than the header's {len(names)} columns"))
            continue
        for column in extra:
            if column < len(row) and row[column].strip():
                filled.setdefault(column, number)
        cells = {names[i]: cell for i, cell in enumerate(row) if i not in extra}
        item: dict[str, Any] = {"content": cells.get(content, "")}
        if cells.get(scope, "").strip():
            item["scope"] = cells[scope]
        if cells.get(at, "").strip():
            item["at"] = cells[at]
        if key is not None and cells.get(key, "").strip():
            item["idempotency_key"] = cells[key].strip()
        metadata = {k: v for k, v in cells.items() if k not in (content, scope, at) and k and v.strip()}
        if metadata:
            item["metadata"] = metadata
        read.numbers.append(number)
        read.items.append(item)
    if filled:
        raise InvalidInputError(
            "; ".join(
                f"line 1: column {c + 1} {extra[c]}, and line {line} has a cell under it"
                for c, line in sorted(filled.items())
            )
            + ": give each column a name of its own"
        )
    return read


def _unkeyed_columns(names: list[str]) -> dict[int, str]:
    """The header's columns no cell can be kept under, by 0-based position, with what is wrong:
    those with no name, and those repeating an earlier column's name (the metadata keeps one cell
    a name: the others were dropped without a word)."""
    first: dict[str, int] = {}
    extra: dict[int, str] = {}
    for i, name in enumerate(names):
        if not name:
            extra[i] = "has no name"
        elif name in first:
            extra[i] = f"repeats the name {name!r} (column {first[name] + 1})"
        else:
            first[name] = i
    return extra


def _missing_column(names: list[str], column: str | None, what: str, hint: str) -> str | None:
    """What is wrong when a column the import was told to read (``None``: none named) is not in
    the header, naming the columns it has; None when it is."""
    if column is None or column in names:
        return None
    shown = ", ".join(repr(n) for n in names) or "none"
    return f"line 1: no column {column!r} {what} (columns: {shown}); {hint}"


def _not_csv(exc: csv.Error, start: int, end: int) -> str:
    """What is wrong with the row starting on line ``start`` that the reader gave up on at line
    ``end``, in the words of a person fixing the file: a quote opened and never closed, or text
    after a cell's closing quote; anything else as the csv module says it."""
    doubled = 'a quote inside a cell is written twice ("")'
    if "unexpected end of data" in str(exc):
        return (
            "unclosed quote: the quoted cell starting on this line never closes, so the rest of the "
            f"file would be read into it; close it, and {doubled}"
        )
    if "expected after" in str(exc):
        if end == start:
            return (
                "text after a quoted cell's closing quote: a quoted cell ends at a comma or the "
                f"line's end; {doubled}"
            )
        return (
            f"the quoted cell starting on this line runs on to a quote on line {end}, with text after "
            f"it: close the cell on the line it belongs to, and {doubled}"
        )
    return f"not CSV ({exc})"
