"""Shared mechanics of the analyst's tasks: data blocks in prompts, JSON answers, prompt digests.

Untrusted text (raw logs, neighbours' contents) always enters a prompt as JSON inside a named
block, with ``<`` and ``>`` escaped, so nothing in it can close the block or pose as instructions.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from amem.domain.text import json_problem

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class InvalidAnswer(ValueError):
    """The model's text is not a valid answer; the message tells the model what to fix."""


def data_block(tag: str, value: Any) -> str:
    """``value`` as JSON inside ``<tag>...</tag>``; the JSON cannot contain ``<`` or ``>``."""
    encoded = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    encoded = encoded.replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<{tag}>\n{encoded}\n</{tag}>"


def prompt_sha256(messages: Sequence[dict[str, Any]]) -> str:
    """A stable digest of the exact messages sent (what the ledger keeps instead of the prompt)."""
    canonical = json.dumps(list(messages), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def extract_json(text: str | None) -> Any:
    """The JSON object in a model's answer: bare, or in a ```json fenced block."""
    if text is None or not text.strip():
        raise InvalidAnswer("the answer was empty; reply with one JSON object")
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    error: json.JSONDecodeError | None = None
    unreadable: ValueError | RecursionError | None = None
    for candidate in candidates:
        try:
            data = json.loads(candidate)
            problem = json_problem(data, "the answer") if isinstance(data, dict) else None
        except json.JSONDecodeError as exc:
            error = error or exc
            continue
        except (ValueError, RecursionError) as exc:
            # an integer over Python's digit limit, or nesting deeper than the parser's stack: a
            # malformed answer like any other (sent back to the model and recorded), never an error
            # that stops the whole batch
            unreadable = unreadable or exc
            continue
        if isinstance(data, dict):
            if problem:  # NaN, a NUL or a lone surrogate: the ledger could not store it
                raise InvalidAnswer(f"{problem}; reply with plain text values and finite numbers")
            return data
    if unreadable is not None:
        raise InvalidAnswer(
            f"the answer could not be read ({type(unreadable).__name__}: {str(unreadable)[:120]}); reply "
            "with one JSON object of plain values, no number longer than 4,300 digits, little nesting"
        ) from unreadable
    detail = ""
    if error is not None:
        # json words some messages to be followed by a position ("Invalid control character at")
        detail = f" ({error.msg.removesuffix(' at')} at line {error.lineno} column {error.colno})"
    raise InvalidAnswer(f"the answer is not a JSON object{detail}; reply with one JSON object only")


def validate(model: type[M], data: Any, context: dict[str, Any] | None = None) -> M:
    """Strict validation; errors become an InvalidAnswer naming each wrong field."""
    try:
        return model.model_validate(data, strict=True, context=context)
    except ValidationError as exc:
        raise InvalidAnswer(describe_errors(exc)) from exc


def describe_errors(exc: ValidationError, limit: int = 8) -> str:
    """``field.path: problem`` for each error, short enough to send back to the model."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "(the object)"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {msg}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more problems")
    return "; ".join(parts)
