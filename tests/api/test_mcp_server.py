"""The MCP server's answers when something is wrong: the ledger out of reach (at a tool and at the
token check), a page out of range, and who an input added with a reviewer's token is recorded as
(tests/agents/test_mcp_server.py drives the tools themselves)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from starlette.testclient import TestClient

from amem.api.inputs import LEDGER_UNREACHABLE
from amem.api.mcp_server import create_mcp_server
from amem.memory import Memory
from tests.agents.test_mcp_server import data, served_over_http, with_token
from tests.conftest import ScratchDatabase
from tests.factories import signed_in


@pytest.mark.postgres
def test_input_status_says_the_ledger_is_out_of_reach(
    tmp_path: Path, scratch_database: ScratchDatabase
) -> None:
    """Every other tool said it in words; input_status answered a bare "Error executing tool
    input_status" (the driver's exception escaped it), whether it waited or not."""
    with Memory(tmp_path / "home", database_url=scratch_database.url) as memory:
        server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

        async def main() -> list[Any]:
            async with Client(server) as client:
                added = data(
                    await client.call_tool("add_note", {"content": "Acme wants SSO", "scope": "acme"})
                )
                scratch_database.drop()
                asked = {"raw_log_id": added["raw_log_id"]}
                return [
                    await client.call_tool("input_status", asked),
                    await client.call_tool("input_status", asked | {"wait_seconds": 1}),
                ]

        answers = anyio.run(main)
    for answer in answers:
        assert answer.is_error, answer.content
        text = answer.content[0].text
        assert LEDGER_UNREACHABLE in text and scratch_database.name not in text, text


@pytest.mark.postgres
def test_a_token_checked_while_the_ledger_is_out_of_reach_is_a_503_saying_so(
    tmp_path: Path, scratch_database: ScratchDatabase
) -> None:
    """Over streamable HTTP the token check let the driver's error escape: a bare 500, read as
    amem's bug. It is the machine's state: 503 with the HTTP API's words (not 401, which would tell
    the client its good token is bad)."""
    with Memory(tmp_path / "home", database_url=scratch_database.url) as memory:
        token, _ = memory.tokens.create("crm", "agent")
        server = create_mcp_server(memory, actor="agent:mcp-test", workers=0, tokens_at="http://127.0.0.1")
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
        scratch_database.drop()
        with TestClient(server.streamable_http_app(), raise_server_exceptions=False) as web:
            answer = web.post("/mcp", json=call, headers=headers)
    assert answer.status_code == 503, answer.text
    assert answer.json()["error_description"] == LEDGER_UNREACHABLE
    assert scratch_database.name not in answer.text


def test_an_offset_out_of_range_is_said_with_this_tools_bounds(memory: Memory) -> None:
    """account_facts documents limit 1 to 100; an offset beyond the service's bound answered
    "limit must be 1 to 1,000", the service's words about another field."""
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def main() -> list[Any]:
        async with Client(server) as client:
            return [
                await client.call_tool("account_facts", {"scope": "acme", "offset": 2**63}),
                await client.call_tool("account_facts", {"scope": "acme", "offset": -1}),
            ]

    for answer in anyio.run(main):
        assert answer.is_error
        text = answer.content[0].text
        assert "offset must be 0 to" in text and "limit" not in text, text


def test_a_note_added_with_a_reviewers_token_is_the_persons(memory: Memory) -> None:
    """Over HTTP an input is recorded as the token's holder: alice's reviewer token added it as
    agent:alice, an agent of her name."""
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))

    async def main(url: str) -> dict[str, Any]:
        async with Client(with_token(url, token)) as client:
            return data(await client.call_tool("add_note", {"content": "Acme wants SSO", "scope": "acme"}))

    with served_over_http(memory) as url:
        added = anyio.run(main, url)
    (raw,) = memory.raw_logs([added["raw_log_id"]])
    assert (raw.actor.kind.value, raw.actor.id) == ("person", "alice")
