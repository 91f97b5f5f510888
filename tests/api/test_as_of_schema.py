"""The `as_of` query parameter of /v1/search and /v1/facts is declared once (``app._as_of``): both
take the same values, a date or a date-time as text, never a number (typed as a datetime, 0.99999
was read as seconds since 1970). Each keeps its own description of what the moment means."""

from __future__ import annotations

from typing import Any

from amem.api.app import create_app
from amem.memory import Memory

DATE_OR_TIME = [
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "date"},
    {"type": "null"},
]


def _as_of(document: dict[str, Any], path: str) -> dict[str, Any]:
    (parameter,) = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == "as_of"]
    return parameter


def test_search_and_facts_take_the_same_as_of(memory: Memory) -> None:
    document = create_app(memory).openapi()
    search, facts = _as_of(document, "/v1/search"), _as_of(document, "/v1/facts")
    for parameter in (search, facts):
        assert parameter["in"] == "query" and parameter["required"] is False
        assert parameter["schema"]["anyOf"] == DATE_OR_TIME
        assert parameter["schema"]["description"] == parameter["description"]
    assert {k: v for k, v in search["schema"].items() if k != "description"} == {
        k: v for k, v in facts["schema"].items() if k != "description"
    }
    assert "as they stood" in search["description"] and "2026-12-07T04:41:09Z" in facts["description"]
