"""The HTTP API and the MCP server read an account's facts `as_of` a date or a second as its end
(values.parse_as_of), as the CLI and the console do."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
from fastapi.testclient import TestClient
from mcp import Client

from amem.api.mcp_server import create_mcp_server
from amem.memory import Memory
from tests.factories import said


def _made_at(memory: Memory, note_id: str) -> datetime:
    return next(c for c in memory.changes() if c.note_id == note_id).applied_at.astimezone(UTC)


def test_the_facts_as_of_a_date_or_a_second_over_http_include_what_was_said_in_it(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """`GET /v1/facts?as_of=2026-12-07` read the date as 00:00 UTC: "no facts" for the day the
    note was made, while the console listed it; a second as typed (no fraction) missed a note
    made some microseconds into it."""
    note = said(memory, "Acme pays $42 per seat")
    made = _made_at(memory, note.id)

    day = client.get("/v1/facts", params={"scope": "acme", "as_of": made.date().isoformat()}, headers=agent)
    assert day.status_code == 200 and [f["note"]["id"] for f in day.json()["facts"]] == [note.id]
    assert day.json()["as_of"].startswith(f"{made.date().isoformat()}T23:59:59.999999")
    second = f"{made:%Y-%m-%dT%H:%M:%S}Z"
    then = client.get("/v1/facts", params={"scope": "acme", "as_of": second}, headers=agent)
    assert then.status_code == 200 and [f["note"]["id"] for f in then.json()["facts"]] == [note.id]


def test_an_agent_asking_mcp_for_the_facts_of_a_day_gets_what_was_said_that_day(memory: Memory) -> None:
    """account_facts(as_of="2026-06-01"), the tool's own "what did we know on 1 June?", was read
    as the day's first instant: nothing said on 1 June was in it."""
    note = said(memory, "Acme pays $42 per seat")
    day = _made_at(memory, note.id).date().isoformat()
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def ask() -> Any:
        async with Client(server) as mcp:
            return await mcp.call_tool("account_facts", {"scope": "acme", "as_of": day})

    answer = anyio.run(ask)
    assert not answer.is_error, answer.content
    facts = answer.structured_content
    assert [f["note_id"] for f in facts["facts"]] == [note.id]
    assert facts["as_of"].startswith(f"{day}T23:59:59.999999")
