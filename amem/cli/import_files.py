"""What `amem import` reads: JSON Lines or CSV (a CRM's export), as inputs with their line numbers,
and every line it cannot read with what is wrong, so one run names them all."""

from __future__ import annotations

import codecs
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
    """One JSON object a line; blank lines are skipped. A file in UTF-16 or UTF-32 (Windows
    PowerShell's ``>``) is refused as a whole, saying to save it as UTF-8: read line by line, each
    of its lines was "not JSON", and one more for its final NUL byte."""
    _refuse_wide_encoding(data, "as UTF-8")
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
            read.unread.append((number, f"not JSON ({_json_problem(exc)})"))
            continue
        if not isinstance(item, dict):
            read.unread.append((number, "expected a JSON object"))
            continue
        if _is_number(item.get("at")):
            read.unread.append((number, _NUMBER_AT.format(at=item["at"])))
            continue
        read.numbers.append(number)
        read.items.append(item)
    return read


#: A time given as a JSON number: read as seconds since 1970 it was 20260301 -> 1970-08-23.
_NUMBER_AT = (
    "at: {at} is a number; write the time as ISO 8601 text, in quotes "
    '(e.g. "2026-03-01" or "2026-03-01T09:30:00Z")'
)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_problem(exc: json.JSONDecodeError) -> str:
    """What the JSON parser found wrong, and the column (characters from 1) where. Its message
    for a control character in a string ends in "at", the place cut off: that one says which
    character and how JSON writes it."""
    if exc.msg.startswith("Invalid control character"):
        character = exc.doc[exc.pos]
        name = _CONTROL_NAMES.get(character, f"a control character (U+{ord(character):04X})")
        escaped = _JSON_ESCAPES.get(character, f"\\u{ord(character):04x}")
        return f"{name} inside a string at column {exc.colno}: write it as {escaped}"
    return f"{exc.msg} at column {exc.colno}"


#: How JSON writes a control character inside a string, and its name, for those met in text.
_JSON_ESCAPES = {"\t": "\\t", "\b": "\\b", "\f": "\\f"}
_CONTROL_NAMES = {"\t": "a tab", "\b": "a backspace", "\f": "a form feed"}

#: Byte order marks of the encodings that are not UTF-8, the longest first (UTF-32 LE starts as
#: UTF-16 LE does).
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _refuse_wide_encoding(data: bytes, save_as: str) -> None:
    """Refuse a file that starts with a UTF-16 or UTF-32 byte order mark, saying what to do."""
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            raise InvalidInputError(
                f"line 1: the file is {name} (it starts with the byte order mark "
                f"{bom.hex(' ')}), not UTF-8: save it {save_as}"
            )


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
    its cell starts on, where a lenient reader swallowed the rest of the file into that cell. A
    cell may be as long as the file (the store's own limit on an input's text applies later)."""
    _refuse_wide_encoding(data, "as CSV UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InvalidInputError(
            f"line {line}: not UTF-8 (byte 0x{data[exc.start]:02x} at column {column}): save the file "
            "as CSV UTF-8"
        ) from None
    # the csv module's default limit (131,072 characters a cell) refused a long text the store
    # takes (AMEM_MAX_CONTENT_CHARS raised) as "not CSV": the file's length bounds every cell
    csv.field_size_limit(max(csv.field_size_limit(), len(text)))
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
