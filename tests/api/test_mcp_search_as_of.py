"""The MCP tools `search` and `search_agentic` take `as_of`, as `GET /v1/search` does: an agent
asking what was known on a past moment got today's notes, their values as they stand now (the tools
had no such argument)."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi.testclient import TestClient
from mcp import Client

from amem.api.mcp_server import create_mcp_server
from amem.domain.models import utcnow
from amem.memory import Memory
from tests.factories import llm_proposer, said


def test_a_search_as_of_a_past_moment_finds_the_notes_as_they_stood_then(
    memory: Memory, client: TestClient, agent: dict[str, str]
) -> None:
    old = said(memory, "Acme pays $42 per seat")
    then = utcnow().isoformat()
    memory.propose(old.id, "tags", ["pricing"], reason="t", proposer=llm_proposer(memory))
    new = said(memory, "Acme pays $49 per seat from now on")
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)
    question = {"query": "price per seat", "scope": "acme"}

    async def main() -> list[Any]:
        async with Client(server) as mcp:
            return [
                await mcp.call_tool("search", question),
                await mcp.call_tool("search", question | {"as_of": then}),
                await mcp.call_tool("search_agentic", question | {"as_of": then}),
                await mcp.call_tool("search", question | {"as_of": "June 1st"}),
                await mcp.call_tool("search_agentic", question | {"as_of": "0.99999"}),
            ]

    now, past, past_agentic, wrong, number = anyio.run(main)
    hits = {h["note_id"]: h for h in now.structured_content["result"]}
    assert set(hits) == {old.id, new.id} and hits[old.id]["tags"] == ["pricing"]
    for answer in (past, past_agentic):
        assert not answer.is_error, answer.content
        # the later note was not made yet, nor the tag given
        assert [(h["note_id"], h["tags"]) for h in answer.structured_content["result"]] == [(old.id, [])]
    http = client.get(
        "/v1/search", params={"q": question["query"], "scope": "acme", "as_of": then}, headers=agent
    )
    assert [h["note_id"] for h in http.json()] == [old.id]

    for answer, value in ((wrong, "June 1st"), (number, "0.99999")):
        assert answer.is_error
        said_by_http = client.get(
            "/v1/search", params={"q": question["query"], "scope": "acme", "as_of": value}, headers=agent
        )
        assert said_by_http.status_code == 422
        # the same words ("Error executing tool search: " is the MCP SDK's own)
        assert answer.content[0].text.endswith(": " + said_by_http.json()["detail"])
        assert f"as_of: {value!r} is not an ISO 8601 date-time" in answer.content[0].text
