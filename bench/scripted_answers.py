"""A scripted model's construction answer for benchmarks (tests/scripted_llm.py's provider answers
with it): valid JSON at once, keywords from the capitalised words of the prompt."""

from __future__ import annotations

import json


def construct(user: str) -> str:
    words = [w.strip(".,;()") for w in user.split() if w[:1].isupper()][:5] or ["note"]
    return json.dumps(
        {
            "keywords": words,
            "tags": [words[0].lower()],
            "context": "A customer conversation.",
            "category": "meeting",
            "decision_rationale": None,
            "valid_at": None,
            "extra": {},
        }
    )
