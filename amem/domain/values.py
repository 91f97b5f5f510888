"""Attribute values: one canonical JSON form per type, so diffs and conflicts compare exactly."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from amem.domain.models import CORE_ATTRIBUTES, Note, as_utc
from amem.domain.text import check_json, check_text
from amem.errors import InvalidInputError


def parse_datetime(value: Any, *, what: str = "time") -> datetime:
    parsed: datetime | None = value if isinstance(value, datetime) else None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            parsed = None
    if parsed is None:
        shown = value.encode("unicode_escape").decode("ascii") if isinstance(value, str) else repr(value)
        raise InvalidInputError(f"{what}: {shown!r} is not an ISO 8601 date-time (e.g. 2026-03-01T09:30:00Z)")
    try:
        return as_utc(parsed)
    except OverflowError:
        raise InvalidInputError(
            f"{what}: {parsed.isoformat()} is out of range: in UTC it falls outside the years 1 to 9999"
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
        return check_json(value, where)
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


def current_value(note: Note, attribute: str, attr_type: str) -> Any:
    """The note's value of ``attribute`` in canonical form."""
    if attribute in CORE_ATTRIBUTES:
        raw = getattr(note, attribute)
        if attr_type == "links":
            raw = [link.model_dump() for link in raw]
    else:
        raw = note.extra.get(attribute)
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
