"""Builders for the analyst tests: raw logs and neighbour notes as the index would return them."""

from __future__ import annotations

from datetime import UTC, datetime

from amem.domain.hashing import sha256_text
from amem.domain.models import Actor, Note, RawLog, new_id

#: A Thursday. "last Tuesday" from here is 2024-03-12.
THURSDAY = datetime(2024, 3, 14, 15, 30, tzinfo=UTC)


def raw_log(text: str, occurred_at: datetime = THURSDAY, scope: str = "acme") -> RawLog:
    return RawLog(
        id=new_id("r"),
        text=text,
        occurred_at=occurred_at,
        actor=Actor.parse("agent:sales-agent"),
        scope=scope,
        received_at=occurred_at,
        sha256=sha256_text(text),
    )


def note(
    text: str,
    *,
    note_id: str | None = None,
    keywords: list[str] | None = None,
    tags: list[str] | None = None,
    context: str | None = None,
    category: str | None = None,
    scope: str = "acme",
) -> Note:
    return Note(
        id=note_id or new_id("n"),
        scope=scope,
        content=text,
        keywords=keywords or [],
        tags=tags or [],
        context=context,
        category=category,
        created_at=THURSDAY,
        updated_at=THURSDAY,
    )
