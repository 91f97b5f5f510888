"""Answers for the scripted model that fit whichever task asks: a construct or a link prompt."""

from __future__ import annotations

import json
from typing import Any


def answer(messages: list[dict[str, Any]]) -> str:
    """A valid answer to the task in ``messages``: a plain note for construct, no links for link."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    if "<neighbours>" in user:
        return json.dumps({"links": [], "updates": [], "contradictions": []})
    return json.dumps(
        {
            "keywords": ["Acme", "renewal"],
            "tags": ["acme"],
            "context": "Something Acme said.",
            "category": "renewal",
            "decision_rationale": None,
            "valid_at": None,
            "extra": {},
        }
    )


def text_of(messages: list[dict[str, Any]]) -> str | None:
    """The raw log's text a construct prompt is about (None for a link prompt)."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    if "<raw_log>" not in user:
        return None
    start = user.index("<raw_log>") + len("<raw_log>")
    return json.loads(user[start : user.index("</raw_log>")])["text"]
