"""What the HTTP API and the MCP server share, with no web framework imported: the MCP server runs
with the ``mcp`` extra alone, which brings no FastAPI."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, Literal

import anyio

from amem.domain.models import AddOutcome, InputStatus
from amem.errors import InvalidBatchInputError, InvalidInputError
from amem.memory import Memory
from amem.services.access import ScopeGrant
from amem.services.review import ReviewFilter

#: The longest a status request may wait for its input to be analysed, in seconds.
MAX_WAIT_SECONDS = 30.0
#: What both APIs answer when the ledger's database cannot be reached (``errors.ledger_unreachable``):
#: the machine's state, not a fault of the caller's request; the driver's words, which name the
#: server, stay in the server's log.
LEDGER_UNREACHABLE = (
    "the ledger database cannot be reached: the server's log says why; try again once it is fixed"
)
#: Until it is: the first pause between two reads of the status, and the longest.
_FIRST_PAUSE, _LONGEST_PAUSE = 0.05, 0.25
#: Where the ledger says when an input settles: the longest wait between two reads all the same.
_MISSED_NOTICE_PAUSE = 5.0
_UNSETTLED = ("queued", "processing")


def report_embedded(memory: Memory, who: str) -> None:
    """At exit, on stderr: how many note documents this server's index embedded itself (the
    workers keep each new note's vector in the ledger, so under load this should stay near 0)."""
    embedded = memory.index_embedded()
    if embedded is not None:
        print(f"{who}: the index embedded {embedded} note document(s) itself", file=sys.stderr)


#: What an add answers of one input: kept now, kept by an earlier request, or erased since.
AddedStatus = Literal["queued", "recorded_before", "erased"]


def add_once(memory: Memory, item: dict[str, Any], actor: str) -> AddOutcome:
    """Keep one input for the workers: its outcome (its raw log id; ``recorded_before`` when an
    earlier request kept it, ``erasure_id`` when that one was erased since). Named by its sender's
    ``idempotency_key``, or with its time (``at``), it is kept once, as an import keeps its lines;
    with neither, there is nothing to tell a retry from a new input by, and it is kept at once
    (add_note's path)."""
    if item.get("at") is None and item.get("idempotency_key") is None:
        raw_log_id = memory.add_note(
            item["content"],
            at=None,
            actor=actor,
            scope=item["scope"],
            metadata=item.get("metadata"),
            wait=False,
        )
        return AddOutcome(raw_log_id=raw_log_id)
    try:
        (outcome,) = memory.add_notes([item], actor=actor, wait=False, skip_recorded=True)
    except InvalidBatchInputError as exc:  # one input: its problem, as add_note says it
        raise InvalidInputError(exc.problem) from None
    return outcome


def added_status(outcome: AddOutcome) -> AddedStatus:
    """What both APIs answer of one input added: an input erased on a data subject's request is
    said apart from one kept (it is kept nowhere again, and never analysed), as `amem import` does."""
    if outcome.erasure_id is not None:
        return "erased"
    return "recorded_before" if outcome.recorded_before else "queued"


def waiting_for_review(
    memory: Memory, scope: str | None, grant: ScopeGrant, reviewer: str | None = None
) -> int:
    """How many proposals wait for a reviewer, as both the HTTP API and the MCP server answer it,
    so the two cannot drift: for a reviewer's token (``reviewer``: their identity), in their queue
    (the accounts they decide in, as their review items); for any other caller, in ``scope`` or in
    every scope ``grant`` reaches. ``scope`` is read by the grant (" acme" is acme; "" refused)."""
    if reviewer is not None:
        queue = memory.count_review_items(ReviewFilter(scope=grant.named(scope)), reviewer=reviewer)
        return queue.proposals
    return sum(memory.count_pending(s) for s in grant.within(scope))


def visible_status(memory: Memory, raw_log_id: str, grant: ScopeGrant) -> InputStatus:
    """The input's status, if ``grant`` reaches its scope; else as for an input that does not exist."""
    status = memory.input_status(raw_log_id)
    grant.require_visible(status.scope, f"input {raw_log_id} does not exist (no raw log has that id)")
    return status


async def status_when_settled(
    memory: Memory, raw_log_id: str, wait_seconds: float, grant: ScopeGrant | None = None
) -> InputStatus:
    """The input's status, once it is no longer queued or processing, or after ``wait_seconds``
    (at most ``MAX_WAIT_SECONDS``), whichever comes first: an agent learns its note in one call
    instead of polling. On PostgreSQL the ledger says when an input settles (migration 0018's
    notification) and the status is read then, or every 5 s at most should a notification be
    missed; on SQLite, where the worker may be in another process and nothing tells, it is read
    every 50 to 250 ms. Each read runs in a thread, so a waiting request holds none between them.
    ``grant``: the caller's reach; an input in another scope is answered as one that does not exist."""
    if not 0 <= wait_seconds <= MAX_WAIT_SECONDS:
        raise InvalidInputError(f"wait: {wait_seconds} seconds; give 0 to {MAX_WAIT_SECONDS:g}")
    deadline = time.monotonic() + wait_seconds
    grant = grant or ScopeGrant.everything()
    listener = memory.settled_listener() if wait_seconds > 0 else None
    if listener is not None and listener.listening(timeout=1.0):
        return await _told_when_settled(memory, raw_log_id, deadline, grant)
    status = await anyio.to_thread.run_sync(visible_status, memory, raw_log_id, grant)
    pause = _FIRST_PAUSE
    while status.status in _UNSETTLED and (left := deadline - time.monotonic()) > 0:
        await anyio.sleep(min(pause, left))
        pause = min(pause * 1.5, _LONGEST_PAUSE)
        status = await anyio.to_thread.run_sync(memory.input_status, raw_log_id)
    return status


async def _told_when_settled(
    memory: Memory, raw_log_id: str, deadline: float, grant: ScopeGrant
) -> InputStatus:
    listener = memory.settled_listener()
    assert listener is not None  # PostgreSQL's, listening
    settled = anyio.Event()
    loop = asyncio.get_running_loop()
    # watch before the first read: a notification between the read and the wait is not lost
    unwatch = listener.watch(raw_log_id, lambda: loop.call_soon_threadsafe(settled.set))
    try:
        status = await anyio.to_thread.run_sync(visible_status, memory, raw_log_id, grant)
        while status.status in _UNSETTLED and (left := deadline - time.monotonic()) > 0:
            with anyio.move_on_after(min(_MISSED_NOTICE_PAUSE, left)):
                await settled.wait()
            settled = anyio.Event()
            status = await anyio.to_thread.run_sync(memory.input_status, raw_log_id)
        return status
    finally:
        unwatch()
