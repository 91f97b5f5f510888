"""The MCP server through the official SDK's own client, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from amem.api.mcp_server import create_mcp_server
from amem.memory import Memory
from tests.conftest import ScratchDatabase

REPO = Path(__file__).resolve().parents[2]
TOOLS = {
    "add_note",
    "changes_since",
    "input_status",
    "search",
    "search_agentic",
    "read_note",
    "note_history",
    "pending_review_count",
    "account_facts",
}


def data(result: Any) -> Any:
    """A tool's answer: its structured content (lists come wrapped as {"result": [...]})."""
    assert not result.is_error, result.content
    structured = result.structured_content
    if isinstance(structured, dict) and set(structured) == {"result"}:
        return structured["result"]
    return structured if structured is not None else json.loads(result.content[0].text)


async def exercise(client: Client, scope: str) -> dict[str, Any]:
    """What an agent does: add, wait for its note, search, read, history, review count."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS  # nothing that approves, rejects, reverts, erases or edits
    assert all(tools[name].annotations.read_only_hint for name in TOOLS - {"add_note"})
    assert "input_status" in (tools["add_note"].description or "")

    added = data(await client.call_tool("add_note", {"content": "Acme renews only with SSO", "scope": scope}))
    assert added["status"] == "queued"
    follow = {"raw_log_id": added["raw_log_id"], "wait_seconds": 30}
    for _ in range(4):  # each call waits up to 30 s for the server's worker, and answers once done
        status = data(await client.call_tool("input_status", follow))
        if status["status"] != "queued" and status["status"] != "processing":
            break
    assert status["status"] == "done", status
    too_long = await client.call_tool("input_status", follow | {"wait_seconds": 31})
    assert too_long.is_error and "give 0 to 30" in too_long.content[0].text

    note = data(await client.call_tool("read_note", {"note_id": status["note_id"]}))
    assert note["raw_log_ids"] == [added["raw_log_id"]] and note["content"] == "Acme renews only with SSO"
    hits = data(await client.call_tool("search", {"query": "single sign-on SSO renewal", "scope": scope}))
    assert [h["note_id"] for h in hits] == [status["note_id"]]
    linked = data(await client.call_tool("search_agentic", {"query": "SSO", "scope": scope}))
    assert linked[0]["note_id"] == status["note_id"]
    history = data(await client.call_tool("note_history", {"note_id": status["note_id"]}))
    assert history and {e["actor"] for e in history} >= {"agent:mcp-test"}
    facts = data(await client.call_tool("account_facts", {"scope": scope}))
    assert facts["total"] == 1 and [f["note_id"] for f in facts["facts"]] == [status["note_id"]]
    too_many = await client.call_tool("account_facts", {"scope": scope, "limit": 1000})
    assert too_many.is_error and "limit must be 1 to 100" in too_many.content[0].text
    count = data(await client.call_tool("pending_review_count", {}))
    assert isinstance(count["pending"], int)
    feed = data(await client.call_tool("changes_since", {"scope": scope}))
    made = [c for c in feed["changes"] if c["note_id"] == status["note_id"] and c["kind"] == "create"]
    assert [c["raw_log_ids"] for c in made] == [[added["raw_log_id"]]]  # what became of that input
    later = data(await client.call_tool("changes_since", {"scope": scope, "after": feed["next_after"]}))
    assert later["changes"] == [] and later["next_after"] == feed["next_after"]

    timed = {"content": "Globex renewed", "scope": scope, "at": "2026-03-01T10:00:00Z"}
    kept = data(await client.call_tool("add_note", timed))
    retried = data(await client.call_tool("add_note", timed))  # a retry keeps nothing twice
    assert (kept["status"], retried["status"]) == ("queued", "recorded_before")
    assert retried["raw_log_id"] == kept["raw_log_id"]
    named = {"content": "Globex asked for SSO", "scope": scope, "idempotency_key": "mail-17"}
    kept = data(await client.call_tool("add_note", named))
    retried = data(await client.call_tool("add_note", named))  # no `at`: the key tells the retry
    assert (kept["status"], retried["status"], retried["raw_log_id"]) == (
        "queued",
        "recorded_before",
        kept["raw_log_id"],
    )

    missing = await client.call_tool("read_note", {"note_id": "n_missing"})
    assert missing.is_error and "does not exist" in missing.content[0].text
    empty = await client.call_tool("add_note", {"content": " ", "scope": scope})
    assert empty.is_error and "content is empty" in empty.content[0].text
    return status


@pytest.mark.slow
def test_the_stdio_server_started_by_a_client_adds_and_finds_with_its_own_worker(memory: Memory) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "amem",
            "--home",
            str(memory.home),
            "--database-url",
            memory.settings.database_url,
            "mcp",
            "--workers",
            "1",
            "--actor",
            "agent:mcp-test",
        ],
        env=env,
    )

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return await exercise(client, "acme")

    status = anyio.run(main)
    assert memory.input_status(status["raw_log_id"]).note_id == status["note_id"]


@pytest.fixture
def http_mcp(memory: Memory) -> Iterator[str]:
    """The server over streamable HTTP on a free loopback port, asking every request for a token."""
    with served_over_http(memory) as url:
        yield url


@contextmanager
def served_over_http(memory: Memory) -> Iterator[str]:
    """``http_mcp`` for a memory a test makes itself (another policy): the endpoint's URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = create_mcp_server(memory, actor="agent:mcp-stdio", workers=1, tokens_at=url)
    web = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=web.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    ready = threading.Event()
    while not web.started and thread.is_alive():
        ready.wait(0.05)
    try:
        yield f"{url}/mcp"
    finally:
        web.should_exit = True
        thread.join(timeout=60)
        sock.close()


def with_token(url: str, token: str | None) -> Any:
    """A streamable HTTP transport to ``url`` sending ``token`` as its bearer token (None: none)."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


@pytest.mark.slow
def test_the_streamable_http_server_serves_the_same_tools(http_mcp: str, memory: Memory) -> None:
    """Over HTTP a request needs a token of the ledger's, and what it adds is the token's."""
    token, _ = memory.tokens.create("mcp-test", "agent")

    async def main() -> None:
        async with Client(with_token(http_mcp, token)) as client:
            await exercise(client, "globex")

    anyio.run(main)


def test_the_http_server_refuses_a_request_without_a_known_token(http_mcp: str, memory: Memory) -> None:
    """No token, an unknown one, a revoked one or an expired one: 401 before any tool runs, whatever
    is asked."""
    from datetime import timedelta

    import httpx
    import sqlalchemy as sa

    from amem.domain.models import utcnow
    from amem.ledger.tables import api_tokens

    token, _ = memory.tokens.create("revoked-agent", "agent")
    memory.tokens.revoke("revoked-agent")
    expired, info = memory.tokens.create("expired-agent", "agent", expires_in_days=1)
    with memory.ledger.engine.begin() as conn:
        past = utcnow() - timedelta(seconds=1)
        conn.execute(sa.update(api_tokens).where(api_tokens.c.id == info.id).values(expires_at=past))
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {}}}
    accept = {"Accept": "application/json, text/event-stream"}
    for sent in (None, "amem_not-a-real-token", token, expired):
        headers = accept | ({"Authorization": f"Bearer {sent}"} if sent is not None else {})
        answer = httpx.post(http_mcp, json=call, headers=headers, timeout=30)
        assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer")
    assert memory.unprocessed_count() == 0


def test_a_search_hit_tells_the_agent_when_a_newer_note_contradicts_it(memory: Memory) -> None:
    """Through the server in memory: a hit whose retirement waits for a reviewer says so, with the
    newer note's words, beside when it was said; an uncontested hit carries no such key."""
    from datetime import UTC, datetime

    from tests.factories import contradict, said

    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(memory, "Acme pays $49 per seat from now on", at=datetime(2026, 8, 20, tzinfo=UTC))
    p = contradict(memory, old, new, "2026-08-20T00:00:00Z")
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def main() -> list[dict[str, Any]]:
        async with Client(server) as client:
            return data(await client.call_tool("search", {"query": "price per seat", "scope": "acme"}))

    hits = {h["note_id"]: h for h in anyio.run(main)}
    assert hits[old.id]["retired"] is False and hits[old.id]["said_at"].startswith("2026-01-10")
    waiting = hits[old.id]["retirement_waiting"]
    assert waiting["proposal_id"] == p.id and waiting["evidence"] == "Acme pays $49 per seat from now on"
    assert "retirement_waiting" not in hits[new.id]

    async def facts() -> dict[str, Any]:
        async with Client(server) as client:
            return data(await client.call_tool("account_facts", {"scope": "acme"}))

    page = anyio.run(facts)  # the account's facts say the same
    by_id = {f["note_id"]: f for f in page["facts"]}
    assert list(by_id) == [new.id, old.id] and by_id[old.id]["said_at"].startswith("2026-01-10")
    assert by_id[old.id]["retirement_waiting"]["proposal_id"] == p.id
    assert "retirement_waiting" not in by_id[new.id]


def test_a_search_hit_carries_the_decision_rationale_and_the_teams_attributes(memory: Memory) -> None:
    """An agent asking "why?" through MCP gets the approved rationale and the team's attributes
    on each hit, as the account's facts and the HTTP search give them."""
    from tests.factories import llm_proposer, said, signed_in

    note = said(memory, "Globex chose the annual plan for the 15% discount")
    alice = signed_in(memory, "alice")
    for attribute, value in (("decision_rationale", "the 15% discount"), ("next_step", "send the contract")):
        memory.approve(
            memory.propose(note.id, attribute, value, reason="said", proposer=llm_proposer(memory)).id,
            reviewer=alice,
        )
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def main() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
        async with Client(server) as client:
            asked = {"query": "why the annual plan", "scope": "acme"}
            hits = data(await client.call_tool("search", asked))
            linked = data(await client.call_tool("search_agentic", asked))
            facts = data(await client.call_tool("account_facts", {"scope": "acme"}))
            return hits, linked, facts

    hits, linked, facts = anyio.run(main)
    for hit in (hits[0], linked[0], facts["facts"][0]):
        assert hit["note_id"] == note.id and hit["decision_rationale"] == "the 15% discount"
        assert hit["attributes"]["next_step"] == "send the contract"


def test_an_agent_reads_an_accounts_facts_as_they_stood_on_a_past_moment(memory: Memory) -> None:
    """account_facts with as_of: the notes made by then, as they stood then (a retirement applied
    later does not count), and a clear error for a moment that is not a date."""
    from datetime import UTC, datetime

    from amem.domain.models import utcnow
    from tests.factories import llm_proposer, said, signed_in

    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    then = utcnow().isoformat()
    new = said(memory, "Acme now pays $49 per seat", at=datetime(2026, 8, 20, tzinfo=UTC))
    retire = memory.propose(
        old.id, "invalid_at", "2026-08-20T00:00:00Z", reason="newer price", proposer=llm_proposer(memory)
    )
    memory.approve(retire.id, reviewer=signed_in(memory, "alice"))
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def main() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with Client(server) as client:
            past = data(await client.call_tool("account_facts", {"scope": "acme", "as_of": then}))
            now = data(await client.call_tool("account_facts", {"scope": "acme"}))
            wrong = await client.call_tool("account_facts", {"scope": "acme", "as_of": "June 1st"})
            return past, now, wrong

    past, now, wrong = anyio.run(main)
    assert [(f["note_id"], f["retired"]) for f in past["facts"]] == [(old.id, False)]
    assert past["as_of"].startswith(then[:19]) and "as_of" not in now
    assert [f["note_id"] for f in now["facts"]] == [new.id]
    assert wrong.is_error and "as_of: 'June 1st' is not an ISO 8601 date-time" in wrong.content[0].text


def test_the_mcp_extra_alone_serves_without_fastapi(memory: Memory) -> None:
    """`pip install 'amem[mcp]'` brings no FastAPI: the server must import and build without it
    (before, it imported the HTTP API's module for two helpers and failed)."""
    import subprocess

    script = (
        "import sys; sys.modules['fastapi'] = None\n"
        "from amem.api.mcp_server import create_mcp_server\n"
        "from amem.memory import Memory\n"
        "with Memory(sys.argv[1], database_url=sys.argv[2]) as m:\n"
        "    create_mcp_server(m, workers=0, tokens_at='http://127.0.0.1:8766')\n"
        "print('built')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    child = subprocess.run(
        [sys.executable, "-c", script, str(memory.home), memory.settings.database_url],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0 and child.stdout.strip() == "built", child.stderr[-2000:]


async def _reach(client: Client, theirs: str) -> dict[str, str]:
    """What a client limited to acme gets when it reaches for globex, tool by tool."""
    errors: dict[str, str] = {}
    asks = {
        "add_note": {"content": "Globex churns", "scope": "globex"},
        "search": {"query": "price", "scope": "globex"},
        "search_agentic": {"query": "price", "scope": "globex"},
        "account_facts": {"scope": "globex"},
        "pending_review_count": {"scope": "globex"},
        "changes_since": {"scope": "globex"},
        "read_note": {"note_id": theirs},
        "note_history": {"note_id": theirs},
    }
    for tool, arguments in asks.items():
        answer = await client.call_tool(tool, arguments)
        assert answer.is_error, tool
        errors[tool] = answer.content[0].text
    ours = data(await client.call_tool("add_note", {"content": "Acme adds 5 seats", "scope": "acme"}))
    assert ours["status"] == "queued"
    errors["count"] = str(data(await client.call_tool("pending_review_count", {}))["pending"])
    seen = data(await client.call_tool("changes_since", {}))["changes"]
    errors["changes seen in"] = ",".join(sorted({c["scope"] for c in seen}))
    return errors


def _expect_limited(errors: dict[str, str], theirs: str, holder: str) -> None:
    for tool in (
        "add_note",
        "search",
        "search_agentic",
        "account_facts",
        "pending_review_count",
        "changes_since",
    ):
        assert f"{holder} may not use scope 'globex'" in errors[tool], (tool, errors[tool])
    assert errors["changes seen in"] in ("", "acme")  # never globex's, whatever acme holds yet
    for tool in ("read_note", "note_history"):
        assert errors[tool].endswith(f": note {theirs} does not exist"), (tool, errors[tool])


def test_a_stdio_server_started_for_one_account_reaches_no_other(memory: Memory) -> None:
    from tests.factories import llm_proposer, said

    theirs = said(memory, "Globex pays $55 per seat", scope="globex")
    memory.propose(theirs.id, "decision_rationale", "matched", reason="r", proposer=llm_proposer(memory))
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0, scopes=["acme"])

    async def main() -> dict[str, str]:
        async with Client(server) as client:
            return await _reach(client, theirs.id)

    errors = anyio.run(main)
    _expect_limited(errors, theirs.id, "this MCP server")
    assert errors["count"] == "0" and memory.count_pending() == 1  # globex's held value is not counted
    assert memory.count_raw_logs() == 2  # globex's, and the one acme input


def test_a_token_limited_to_one_account_reaches_no_other_over_http(http_mcp: str, memory: Memory) -> None:
    from tests.factories import said

    theirs = said(memory, "Globex pays $55 per seat", scope="globex")
    token, _ = memory.tokens.create("acme-mcp", "agent", scopes=["acme"])

    async def main() -> dict[str, str]:
        async with Client(with_token(http_mcp, token)) as client:
            return await _reach(client, theirs.id)

    _expect_limited(anyio.run(main), theirs.id, "token 'acme-mcp'")
    assert memory.count_raw_logs() == 2  # globex's, and the one acme input


def test_a_search_asking_for_more_hits_than_allowed_is_refused_saying_the_limit(memory: Memory) -> None:
    """k outside 1 to 100 is the agent's mistake, said as such (a huge one came back as an opaque
    index error), for search and search_agentic alike."""
    from tests.factories import said

    said(memory, "Acme pays $40 per seat")
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def main() -> dict[tuple[str, int], Any]:
        async with Client(server) as client:
            return {
                (tool, k): await client.call_tool(tool, {"query": "price", "scope": "acme", "k": k})
                for tool in ("search", "search_agentic")
                for k in (0, 101, 10**9, 100)
            }

    answers = anyio.run(main)
    for (tool, k), answer in answers.items():
        if k == 100:
            assert len(data(answer)) == 1, tool
        else:
            assert answer.is_error and f"k must be 1 to 100, not {k}" in answer.content[0].text, (tool, k)


def test_a_reviewer_token_is_refused_once_its_reviewer_left_the_policy(
    database_url: str, tmp_path: Path
) -> None:
    """The MCP server checks tokens as the HTTP API does: a reviewer token whose reviewer the policy
    in force no longer names is no token (401 before any tool runs), not one that reads every account."""
    from amem.api.mcp_server import LedgerTokens
    from tests.agents.test_http_api import installed_elsewhere, policy_without
    from tests.factories import policy_with_scopes, signed_in

    home, before = tmp_path / "home", policy_with_scopes(tmp_path / "p1", alice=["acme"])
    with Memory(home, database_url=database_url, policy=before) as memory:
        alice, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
        assert anyio.run(LedgerTokens(memory).verify_token, alice) is not None
    after = policy_without(tmp_path / "p2", "alice")
    installed_elsewhere(home, database_url, after)
    with Memory(home, database_url=database_url, policy=after) as memory:
        assert anyio.run(LedgerTokens(memory).verify_token, alice) is None
        carol, _ = memory.tokens.create("carol", "reviewer", by=signed_in(memory, "carol"))
        assert anyio.run(LedgerTokens(memory).verify_token, carol) is not None


def test_a_scope_with_a_stray_space_is_the_account_for_every_tool_and_an_empty_one_is_refused(
    memory: Memory,
) -> None:
    """changes_since(scope=" acme") answered an empty page whose next_after moved past every acme
    change, so a poller never saw them; pending_review_count(scope="") counted every account."""
    from tests.factories import llm_proposer, said

    note = said(memory, "Acme pays $40 per seat", scope="acme")
    said(memory, "Globex pays $55 per seat", scope="globex")
    memory.propose(note.id, "decision_rationale", "matched", reason="r", proposer=llm_proposer(memory))
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def main() -> tuple[list[Any], list[Any]]:
        async with Client(server) as client:

            async def asked(scope: str) -> list[Any]:
                return [
                    data(await client.call_tool("changes_since", {"scope": scope})),
                    data(await client.call_tool("pending_review_count", {"scope": scope})),
                    data(await client.call_tool("account_facts", {"scope": scope}))["total"],
                ]

            answers = [await asked(scope) for scope in ("acme", " acme", "acme ")]
            refused = [
                await client.call_tool(tool, {"scope": blank})
                for tool in ("changes_since", "pending_review_count")
                for blank in ("", "  ", "\u200b")
            ]
            return answers, refused

    answers, refused = anyio.run(main)
    exact = answers[0]
    assert [c["scope"] for c in exact[0]["changes"]] == ["acme"] and exact[1] == {"pending": 1}
    assert answers[1] == exact and answers[2] == exact
    for answer in refused:
        assert answer.is_error and "scope" in answer.content[0].text, answer.content


def test_a_reviewers_token_counts_their_queue_as_over_the_http_api(database_url: str, tmp_path: Path) -> None:
    """alice decides in acme only: the HTTP API's /v1/review/count said 1 for her token, the MCP
    server's pending_review_count every account's 3."""
    from fastapi.testclient import TestClient

    from amem.api.app import create_app
    from tests.factories import llm_proposer, policy_with_scopes, said, signed_in

    policy = policy_with_scopes(tmp_path / "policy", alice=["acme"])
    with Memory(tmp_path / "home", database_url=database_url, policy=policy) as memory:
        acme, globex = (
            said(memory, "Acme pays $40", scope="acme"),
            said(memory, "Globex pays $55", scope="globex"),
        )
        memory.propose(acme.id, "decision_rationale", "matched", reason="r", proposer=llm_proposer(memory))
        memory.propose(globex.id, "decision_rationale", "matched", reason="r", proposer=llm_proposer(memory))
        memory.propose(globex.id, "next_step", "call them", reason="r", proposer=llm_proposer(memory))
        alice, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
        http = TestClient(create_app(memory)).get(
            "/v1/review/count", headers={"Authorization": f"Bearer {alice}"}
        )

        async def main() -> list[Any]:
            async with Client(with_token(url, alice)) as client:
                return [
                    data(await client.call_tool("pending_review_count", {})),
                    data(await client.call_tool("pending_review_count", {"scope": " acme"})),
                ]

        with served_over_http(memory) as url:
            counted = anyio.run(main)
    assert http.json()["pending"] == 1
    assert [c["pending"] for c in counted] == [1, 1]


def test_a_failed_input_is_said_to_wait_for_an_operator_not_to_be_retried(memory: Memory) -> None:
    """The tool said a failed input was "retried later"; nothing retries it until an operator runs
    `amem reprocess`, and an agent's model reads the tool's description to decide what to do."""
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def main() -> str:
        async with Client(server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            return tools["input_status"].description or ""

    described = " ".join(anyio.run(main).split())
    assert "amem reprocess" in described and "retried later" not in described


def test_a_server_started_for_a_scope_with_a_stray_space_is_refused_before_it_serves(memory: Memory) -> None:
    """`amem mcp --scope " acme"` served, then refused acme itself: the scope is checked as a
    token's `--scope` is."""
    from amem.errors import InvalidInputError

    for wrong in (" acme", "acme ", "", "\u200b"):
        with pytest.raises(InvalidInputError, match="no space at either end"):
            create_mcp_server(memory, actor="agent:mcp-test", workers=0, scopes=[wrong])


@pytest.mark.postgres
def test_a_ledger_database_gone_is_said_in_words_to_the_agent(
    tmp_path: Path, scratch_database: ScratchDatabase
) -> None:
    """The ledger's database dropped or out of reach under a running MCP server: a tool answered
    the driver's raw error (naming the server's address and database). It says, as the HTTP API
    does, that the ledger cannot be reached; the driver's words stay in the server's log."""
    from tests.factories import said

    with Memory(tmp_path / "home", database_url=scratch_database.url) as memory:
        said(memory, "Acme wants SSO", scope="acme")
        server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

        async def main() -> tuple[Any, Any]:
            async with Client(server) as client:
                before = await client.call_tool("account_facts", {"scope": "acme"})
                scratch_database.drop()
                return before, await client.call_tool("account_facts", {"scope": "acme"})

        before, gone = anyio.run(main)
    assert len(data(before)["facts"]) == 1
    assert gone.is_error, gone.content
    text = gone.content[0].text
    assert "the ledger database cannot be reached" in text and scratch_database.name not in text, text
