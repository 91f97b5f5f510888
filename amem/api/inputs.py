"""What the HTTP API and the MCP server share, with no web framework imported: the MCP server runs
with the ``mcp`` extra alone, which brings no FastAPI."""

from __future__ import annotations

import sys
from typing import Any

from amem.errors import InvalidBatchInputError, InvalidInputError
from amem.memory import Memory


def report_embedded(memory: Memory, who: str) -> None:
    """At exit, on stderr: how many note documents this server's index embedded itself (the
    workers keep each new note's vector in the ledger, so under load this should stay near 0)."""
    embedded = memory.index_embedded()
    if embedded is not None:
        print(f"{who}: the index embedded {embedded} note document(s) itself", file=sys.stderr)


def add_once(memory: Memory, item: dict[str, Any], actor: str) -> tuple[str, bool]:
    """Keep one input for the workers: (its raw log id, whether an earlier request kept it). Named
    by its sender's ``idempotency_key``, or with its time (``at``), it is kept once, as an import
    keeps its lines; with neither, there is nothing to tell a retry from a new input by, and it is
    kept at once (add_note's path)."""
    if item.get("at") is None and item.get("idempotency_key") is None:
        raw_log_id = memory.add_note(
            item["content"],
            at=None,
            actor=actor,
            scope=item["scope"],
            metadata=item.get("metadata"),
            wait=False,
        )
        return raw_log_id, False
    try:
        (outcome,) = memory.add_notes([item], actor=actor, wait=False, skip_recorded=True)
    except InvalidBatchInputError as exc:  # one input: its problem, as add_note says it
        raise InvalidInputError(exc.problem) from None
    return outcome.raw_log_id, outcome.recorded_before
