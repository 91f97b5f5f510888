"""An agent's retry of an input erased on a data subject's request (its idempotency key, or its `at`):
the HTTP API and the MCP server answered `recorded_before`, as if the input were kept. They now say
`erased`, naming the erasure, and keep nothing again; the answer stays a success (202), so the
agent does not send it once more, in other words or without its key, which would keep it again."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi.testclient import TestClient
from mcp import Client

from amem.api.app import create_app
from amem.api.mcp_server import create_mcp_server
from amem.memory import Memory
from tests.agents.test_mcp_server import data
from tests.factories import signed_in

KEYED = {"content": "Globex's CFO Paul Smith wants one invoice a year", "scope": "globex"}
TIMED = {"content": "Paul Smith asked for the annual plan", "scope": "globex", "at": "2026-03-01T10:00:00Z"}


def _erase(memory: Memory, raw_log_id: str) -> str:
    """Erase one input on a data subject's request; the erasure's id."""
    report = memory.erase(
        by=signed_in(memory, "alice"), reason="GDPR art. 17", raw_log_id=raw_log_id, wait_s=0
    )
    return report.erasure_id


def test_a_retry_of_an_erased_input_is_answered_erased_with_its_erasure(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    keyed = {**agent, "Idempotency-Key": "mail-17"}
    first = [
        client.post("/v1/inputs", json=KEYED, headers=keyed).json(),
        client.post("/v1/inputs", json=TIMED, headers=agent).json(),
    ]
    memory.worker().run_once()
    erasures = [_erase(memory, f["raw_log_id"]) for f in first]

    again = [
        client.post("/v1/inputs", json=KEYED, headers=keyed),
        client.post("/v1/inputs", json=TIMED, headers=agent),
    ]
    assert [a.status_code for a in again] == [202, 202]  # a success: nothing to send again
    assert [(a.json()["status"], a.json()["raw_log_id"], a.json()["erasure_id"]) for a in again] == [
        ("erased", first[0]["raw_log_id"], erasures[0]),
        ("erased", first[1]["raw_log_id"], erasures[1]),
    ]
    followed = client.get(again[0].json()["status_url"], headers=agent).json()
    assert followed["status"] == "erased"
    assert memory.count_raw_logs() == 2  # nothing kept again
    assert memory.input_status(first[0]["raw_log_id"]).status == "erased"
    # an input kept is still told apart, with no erasure
    kept = client.post("/v1/inputs", json={**TIMED, "at": "2026-03-02T10:00:00Z"}, headers=agent).json()
    retried = client.post("/v1/inputs", json={**TIMED, "at": "2026-03-02T10:00:00Z"}, headers=agent).json()
    assert (kept["status"], retried["status"], retried["erasure_id"]) == ("queued", "recorded_before", None)


def test_a_batch_says_which_of_its_inputs_were_erased(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    batch = {
        "inputs": [
            {**KEYED, "idempotency_key": "mail-17"},
            TIMED,
            {"content": "Initech renewed", "scope": "initech", "at": "2026-03-03T10:00:00Z"},
        ]
    }
    first = client.post("/v1/inputs/batch", json=batch, headers=agent).json()["inputs"]
    memory.worker().run_once()
    erasure = _erase(memory, first[0]["raw_log_id"])
    timed_erasure = _erase(memory, first[1]["raw_log_id"])

    again = client.post("/v1/inputs/batch", json=batch, headers=agent)
    assert again.status_code == 202
    assert [(i["status"], i["raw_log_id"], i["erasure_id"]) for i in again.json()["inputs"]] == [
        ("erased", first[0]["raw_log_id"], erasure),
        ("erased", first[1]["raw_log_id"], timed_erasure),
        ("recorded_before", first[2]["raw_log_id"], None),
    ]
    assert memory.count_raw_logs() == 3


def test_the_spec_documents_the_erased_answer(memory: Memory) -> None:
    schemas = create_app(memory).openapi()["components"]["schemas"]
    for name in ("Accepted", "AcceptedInput"):
        fields = schemas[name]["properties"]
        assert fields["status"]["enum"] == ["queued", "recorded_before", "erased"], name
        assert "erased:" in fields["status"]["description"], name
        assert "data subject" in fields["erasure_id"]["description"], name


def _mcp_add(memory: Memory, calls: list[dict[str, Any]], erase_after: int = 0) -> list[dict[str, Any]]:
    """add_note called with each of ``calls`` in turn, over the MCP client; the raw logs of the first
    ``erase_after`` answers erased (their note built first) before the rest are sent."""
    server = create_mcp_server(memory, actor="agent:mcp-test", workers=0)

    async def main() -> list[dict[str, Any]]:
        answers: list[dict[str, Any]] = []
        async with Client(server) as client:
            for n, call in enumerate(calls):
                if n == erase_after and erase_after:
                    await anyio.to_thread.run_sync(_built_and_erased, memory, answers)
                answers.append(data(await client.call_tool("add_note", call)))
        return answers

    return anyio.run(main)


def _built_and_erased(memory: Memory, answers: list[dict[str, Any]]) -> None:
    memory.worker().run_once()
    for answer in answers:
        answer["erased_by"] = _erase(memory, answer["raw_log_id"])


def test_mcp_add_note_answers_a_timed_retry_with_the_input_kept(memory: Memory) -> None:
    """The same `at`, no key: kept once, and the retry names the raw log that holds it."""
    kept, retried, later = _mcp_add(memory, [TIMED, TIMED, {**TIMED, "at": "2026-03-02T10:00:00Z"}])
    assert (kept["status"], retried["status"], later["status"]) == ("queued", "recorded_before", "queued")
    assert retried["raw_log_id"] == kept["raw_log_id"] != later["raw_log_id"]
    assert retried.get("erasure_id") is None
    assert memory.count_raw_logs() == 2


def test_mcp_add_note_answers_a_retry_of_an_erased_input_erased(memory: Memory) -> None:
    keyed = {**KEYED, "idempotency_key": "mail-17"}
    first_keyed, first_timed, keyed_again, timed_again = _mcp_add(
        memory, [keyed, TIMED, keyed, TIMED], erase_after=2
    )
    for first, again in ((first_keyed, keyed_again), (first_timed, timed_again)):
        assert (again["status"], again["raw_log_id"], again["erasure_id"]) == (
            "erased",
            first["raw_log_id"],
            first["erased_by"],
        )
    assert memory.count_raw_logs() == 2
