"""Attribute values: one canonical JSON form per type, so diffs and conflicts compare exactly."""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

from amem.domain.models import CORE_ATTRIBUTES, Note, as_utc
from amem.domain.text import check_json, check_text
from amem.errors import InvalidInputError


def parse_datetime(value: Any, *, what: str = "time") -> datetime:
    """The exact moment ``value`` names (a datetime, or ISO 8601 text; naive: UTC), in UTC. For a
    moment a person gives as "as of", see ``parse_as_of``."""
    parsed: datetime | None = value if isinstance(value, datetime) else None
    if isinstance(value, str):
        parsed = _iso_or_none(value.strip())
    if parsed is None:
        raise InvalidInputError(
            f"{what}: {_shown(value)!r} is not an ISO 8601 date-time (e.g. 2026-03-01T09:30:00Z)"
        )
    return _in_utc(parsed, what)


def offset_given(value: Any) -> bool:
    """Whether ``value`` (a datetime, or ISO 8601 text) says its offset from UTC: one that does not
    is read as UTC by ``parse_datetime``, though its writer may have meant their local time."""
    parsed = value if isinstance(value, datetime) else None
    if isinstance(value, str):
        parsed = _iso_or_none(value.strip())
    return parsed is not None and parsed.tzinfo is not None


def parse_as_of(value: Any, *, what: str = "as_of") -> datetime:
    """The moment an "as of" a person gives stands for, in UTC: the END of the period it names,
    inclusive. A date is the end of that day in UTC (2026-12-07: 23:59:59.999999Z); a time to the
    minute the end of that minute, to the second the end of that second (04:41:09: 04:41:09.999999),
    to a tenth of a second the end of that tenth, and so on; six decimals name one exact moment.
    People copy the times amem shows (history to the second, the console to the minute, a day in a
    date picker), and the ledger times its changes to the microsecond: read as the start of the
    period, "as of 04:41:09" missed the change history shows at 04:41:09, and "as of 2026-12-07"
    missed everything that day. A datetime object is the exact moment it holds; a date object is
    the end of that day in UTC."""
    if isinstance(value, datetime):
        return parse_datetime(value, what=what)
    if isinstance(value, date):
        return datetime.combine(value, time.max, tzinfo=UTC)
    text = _utc_as_iso(value.strip()) if isinstance(value, str) else None
    if text is not None:
        try:
            return datetime.combine(date.fromisoformat(text), time.max, tzinfo=UTC)
        except ValueError:
            pass
    parsed = _iso_or_none(text) if text is not None else None
    if text is None or parsed is None:
        raise InvalidInputError(
            f"{what}: {_shown(value)!r} is not an ISO 8601 date-time (e.g. 2026-03-01T09:30:00Z) "
            "or date (2026-03-01)"
        )
    return _in_utc(_end_of_given_precision(parsed, text), what, shown=_shown(text))


_SAID_IN_UTC = re.compile(r"(.*?\d)\s*UTC", re.IGNORECASE)
_HAS_OFFSET = re.compile(r"(?:Z|[+-]\d{2}(?::?\d{2})?)$")


def _utc_as_iso(text: str) -> str:
    """``text`` with a trailing " UTC", as amem prints times (`amem history`, the facts' header),
    written the ISO 8601 way, so a time copied from amem's output is read back: "2026-12-07
    10:22:33 UTC" is 2026-12-07 10:22:33Z, "2026-12-07 UTC" the day."""
    said = _SAID_IN_UTC.fullmatch(text)
    if said is None:
        return text
    base = said.group(1)
    try:
        date.fromisoformat(base)  # a date alone (2026-12-07, 20261207): the day, read as a date is
        return base
    except ValueError:
        pass
    return base if _HAS_OFFSET.search(base) else base + "Z"


#: The time of day at the end of an ISO 8601 date-time, as typed: hours, then minutes, seconds
#: and a fraction if given (with or without colons), then any offset. It follows the separator
#: after the date (T, a space), so it is the first such run that reaches the end of the text.
_CLOCK = re.compile(
    r"(?<!\d)(\d{2})(?::?(\d{2})(?::?(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(?:Z|[+-]\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?)?$"
)


def _end_of_given_precision(moment: datetime, text: str) -> datetime:
    """``moment``, read from ``text``, moved to the last microsecond of the smallest unit the
    text gives (an hour, a minute, a second, a fraction of one)."""
    found = _CLOCK.search(text)
    if found is None:  # no clock as ISO 8601 writes one: the moment as it is
        return moment
    _, minutes, seconds, fraction = found.groups()
    if minutes is None:
        return moment.replace(minute=59, second=59, microsecond=999_999)
    if seconds is None:
        return moment.replace(second=59, microsecond=999_999)
    if fraction is None:
        return moment.replace(microsecond=999_999)
    if len(fraction) >= 6:
        return moment
    step = 10 ** (6 - len(fraction))
    return moment.replace(microsecond=moment.microsecond // step * step + step - 1)


def _iso_or_none(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _shown(value: Any) -> str:
    return value.encode("unicode_escape").decode("ascii") if isinstance(value, str) else repr(value)


def _in_utc(parsed: datetime, what: str, shown: str | None = None) -> datetime:
    try:
        return as_utc(parsed)
    except OverflowError:
        raise InvalidInputError(
            f"{what}: {shown or parsed.isoformat()} is out of range: in UTC it falls outside the "
            "years 1 to 9999"
        ) from None


def normalize(attribute: str, attr_type: str, value: Any) -> Any:
    """Validate ``value`` for ``attribute`` and return its canonical JSON form."""
    where = f"value of {attribute!r}"
    if value is None:
        if attr_type in ("list[str]", "links"):
            return []
        if attr_type == "bool":
            return False
        return None
    if attr_type == "text":
        if not isinstance(value, str):
            raise InvalidInputError(f"{where} must be text, got {type(value).__name__}")
        return check_text(value, where).strip()
    if attr_type == "list[str]":
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise InvalidInputError(f"{where} must be a list of strings, got {type(value).__name__}")
        out: list[str] = []
        for item in value:
            if not isinstance(item, str):
                raise InvalidInputError(f"{where} must be a list of strings, found {type(item).__name__}")
            item = check_text(item, where).strip()
            if item and item not in out:
                out.append(item)
        return out
    if attr_type == "datetime":
        return parse_datetime(value, what=where).isoformat()
    if attr_type == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInputError(f"{where} must be a number, got {type(value).__name__}")
        return _stored_number(check_json(value, where), where)
    if attr_type == "bool":
        if not isinstance(value, bool):
            raise InvalidInputError(f"{where} must be true or false, got {type(value).__name__}")
        return value
    if attr_type == "links":
        if not isinstance(value, list):
            raise InvalidInputError(f"{where} must be a list of links, got {type(value).__name__}")
        links: list[dict[str, str]] = []
        seen: set[str] = set()
        for item in value:
            if hasattr(item, "model_dump"):
                item = item.model_dump()
            if not isinstance(item, dict) or not isinstance(item.get("note_id"), str):
                raise InvalidInputError(f"{where}: each link needs a note_id (and a reason)")
            if set(item) - {"note_id", "reason"}:
                raise InvalidInputError(
                    f"{where}: unexpected link fields {sorted(set(item) - {'note_id', 'reason'})}"
                )
            reason = item.get("reason") or ""
            if not isinstance(reason, str):
                raise InvalidInputError(f"{where}: a link's reason must be text")
            check_json(item, where)
            if item["note_id"] not in seen:
                seen.add(item["note_id"])
                links.append({"note_id": item["note_id"], "reason": reason.strip()})
        return links
    raise InvalidInputError(f"unknown attribute type {attr_type!r} for {attribute!r}")


#: The numbers a number attribute holds: SQLite's integers' range. A value is kept alone in a JSON
#: column (a proposal's and a change's old and new value), which SQLite reads as a number (its
#: NUMERIC affinity): a larger one it keeps as a float of 16 digits or so, PostgreSQL exactly, and
#: neither gives back the number hashed.
_NUMBERS = range(-(2**63), 2**63)


def _stored_number(value: int | float, where: str) -> int | float:
    """A number as both ledgers give it back when it is stored alone in a JSON column, so the value
    a proposal and its change are hashed on is the value `amem verify` reads: a whole number as an
    integer (SQLite stores 5.0 as the integer 5; PostgreSQL's JSONB gives 1e20 back as
    100000000000000000000 and -0.0 as 0.0), its digits as written (1.2345678901234568e+17 is
    123456789012345680); a fraction as it is, which both keep exactly (SQLite is handed the float
    itself, ``amem.ledger.tables.ExactJSON``: parsing its JSON text, SQLite 3.40 gave some floats
    back one unit in the last place off). Before, 5.0 failed `amem verify` on SQLite and 1e20 and
    -0.0 on PostgreSQL. One beyond ``_NUMBERS`` is refused, saying so."""
    stored = int(Decimal(repr(value))) if isinstance(value, float) and value.is_integer() else value
    if isinstance(stored, int) and stored not in _NUMBERS:
        raise InvalidInputError(
            f"{where}: {value!r} is out of range: a number is kept exactly from {_NUMBERS.start} to "
            f"{_NUMBERS.stop - 1}"
        )
    return stored


def _beyond_numbers(value: Any) -> bool:
    """A number out of ``_NUMBERS`` (kept before they were refused)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and not _NUMBERS.start <= value < _NUMBERS.stop
    )


def current_value(note: Note, attribute: str, attr_type: str) -> Any:
    """The note's value of ``attribute`` in canonical form. A number kept before numbers out of
    range were refused stays as the ledger gives it back: refused here, the attribute could never
    be changed again."""
    if attribute in CORE_ATTRIBUTES:
        raw = getattr(note, attribute)
        if attr_type == "links":
            raw = [link.model_dump() for link in raw]
    else:
        raw = note.extra.get(attribute)
    if attr_type == "number" and _beyond_numbers(raw):
        return raw
    return normalize(attribute, attr_type, raw)


def with_value(note: Note, attribute: str, attr_type: str, value: Any) -> Note:
    """A copy of ``note`` with ``attribute`` set to the canonical ``value``."""
    if attribute in CORE_ATTRIBUTES:
        if attr_type == "datetime" and value is not None:
            value = parse_datetime(value)
        return note.model_copy(
            update={attribute: value} if attribute != "links" else {"links": _links(value)}
        )
    extra = dict(note.extra)
    extra[attribute] = value
    return note.model_copy(update={"extra": extra})


def _links(value: list[dict[str, str]]) -> list[Any]:
    from amem.domain.models import Link

    return [Link(**item) for item in value or []]
