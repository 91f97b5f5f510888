"""The HTTP API's answers to what a caller sends: who an input is recorded as, and what a body,
a batch or a field that is wrong is told (tests/agents/test_http_api.py drives the rest)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.memory import Memory
from tests.factories import signed_in


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _actor_of(memory: Memory, raw_log_id: str) -> str:
    (raw,) = memory.raw_logs([raw_log_id])
    return f"{raw.actor.kind.value}:{raw.actor.id}"


def test_an_input_added_with_a_reviewers_token_is_the_persons_not_an_agents(memory: Memory) -> None:
    """alice's own reviewer token added inputs as agent:alice, the actor an operator's agent token
    named alice records: the trail could not tell the person from the agent, and the two shared
    idempotency keys (the agent's retry answered with the person's input)."""
    person, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    agent, _ = memory.tokens.create("alice", "agent")
    with TestClient(create_app(memory)) as api:
        keyed = {"Idempotency-Key": "msg-1"}
        by_person = api.post(
            "/v1/inputs", json={"content": "Acme wants SSO", "scope": "acme"}, headers=_bearer(person) | keyed
        )
        by_agent = api.post(
            "/v1/inputs",
            json={"content": "Acme wants a discount", "scope": "acme"},
            headers=_bearer(agent) | keyed,
        )
        batch = api.post(
            "/v1/inputs/batch",
            json={"inputs": [{"content": "Acme signs in March", "scope": "acme"}]},
            headers=_bearer(person),
        )
    assert by_person.status_code == 202 and by_agent.status_code == 202, (by_person.text, by_agent.text)
    assert by_agent.json()["status"] == "queued"  # its own key, not the person's input
    assert _actor_of(memory, by_person.json()["raw_log_id"]) == "person:alice"
    assert _actor_of(memory, by_agent.json()["raw_log_id"]) == "agent:alice"
    assert _actor_of(memory, batch.json()["inputs"][0]["raw_log_id"]) == "person:alice"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            '{"content": "Caf\xe9 au lait", "scope": "acme"}'.encode("latin-1"),
            "the body is not UTF-8: byte 0xe9 at position 16",
        ),
        (
            b'{"content": "x", "scope": "acme", "metadata": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
            "nested too deep",
        ),
    ],
)
def test_a_body_that_cannot_be_read_says_why_and_when_the_token_expires(
    memory: Memory, body: bytes, said: str
) -> None:
    """Bytes that are not UTF-8, or JSON nested deeper than Python reads, got FastAPI's bare 400
    "There was an error parsing the body", without the `Amem-Token-Expires` header every answer to
    a token with an expiry carries."""
    token, info = memory.tokens.create("crm", "agent", expires_in_days=30)
    assert info.expires_at is not None
    headers = _bearer(token) | {"Content-Type": "application/json"}
    with TestClient(create_app(memory)) as api:
        answer = api.post("/v1/inputs", content=body, headers=headers)
    assert answer.status_code == 400, answer.text
    assert said in answer.json()["detail"], answer.text
    assert answer.headers.get("Amem-Token-Expires") == info.expires_at.isoformat()
    assert memory.count_raw_logs() == 0


@pytest.mark.parametrize(
    ("scope", "said"),
    [("   ", "scope is empty"), ("\u200b", "shows nothing"), ("ac\nme", "control character")],
)
def test_a_limited_tokens_batch_with_no_scope_is_told_what_is_wrong_not_refused(
    memory: Memory, scope: str, said: str
) -> None:
    """A token limited to acme sending a batch whose scope is empty, invisible or two lines got 403
    "may not use the scope of 1 input(s)", where the same input alone is 422 naming the problem;
    every wrong input is named, as for any token, and nothing is kept."""
    token, _ = memory.tokens.create("acme-sync", "agent", scopes=["acme"])
    inputs = [{"content": "x", "scope": scope}, {"content": "\u200b", "scope": "acme"}]
    with TestClient(create_app(memory)) as api:
        alone = api.post("/v1/inputs", json=inputs[0], headers=_bearer(token))
        batch = api.post("/v1/inputs/batch", json={"inputs": inputs}, headers=_bearer(token))
        elsewhere = api.post(
            "/v1/inputs/batch",
            json={"inputs": [{"content": "x", "scope": "acme"}, {"content": "x", "scope": "globex"}]},
            headers=_bearer(token),
        )
    assert alone.status_code == 422 and said in alone.json()["detail"], alone.text
    assert batch.status_code == 422, batch.text
    detail = batch.json()["detail"]
    assert "input 1: scope" in detail and said in detail and "input 2: content" in detail, detail
    assert elsewhere.status_code == 403 and "input 2: scope 'globex'" in elsewhere.json()["detail"]
    assert memory.count_raw_logs() == 0


def test_a_422_names_the_field_without_echoing_what_was_sent(memory: Memory) -> None:
    """A missing field's 422 held FastAPI's `input`, the whole body: 5 M characters sent came back
    as a 30 MB answer, and the text went into the client's logs."""
    token, _ = memory.tokens.create("crm", "agent")
    content = "confidential customer text " * 40_000
    with TestClient(create_app(memory)) as api:
        answer = api.post("/v1/inputs", json={"content": content}, headers=_bearer(token))
    assert answer.status_code == 422
    (problem,) = answer.json()["detail"]
    assert problem["loc"] == ["body", "scope"] and problem["msg"] == "Field required"
    assert "confidential" not in answer.text and len(answer.content) < 1000
