"""What the HTTP API tells a sender of wrong inputs: an `at` in the future is refused (single and
batch), a batch's 422 names every wrong input in one format, counted from 1, and a correction's value
of the wrong kind is said in plain words."""

from __future__ import annotations

from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.memory import Memory
from tests.factories import signed_in


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_an_input_dated_in_the_future_is_refused_alone_and_in_a_batch(memory: Memory) -> None:
    token, _ = memory.tokens.create("crm", "agent")
    late = {"content": "Omega price is 10 EUR per seat.", "scope": "omega", "at": "2096-11-29T10:00:00Z"}
    good = {"content": "Omega price is now 12 EUR per seat.", "scope": "omega", "at": "2026-03-05T00:00:00Z"}
    with TestClient(create_app(memory)) as api:
        alone = api.post("/v1/inputs", json=late, headers=_bearer(token))
        batch = api.post("/v1/inputs/batch", json={"inputs": [good, late]}, headers=_bearer(token))
    assert alone.status_code == 422, alone.text
    assert alone.json()["detail"].startswith(
        "at: '2096-11-29T10:00:00Z' is in the future: this server's clock says it is now "
    )
    assert batch.status_code == 422, batch.text
    assert batch.json()["detail"].startswith("input 2: at: '2096-11-29T10:00:00Z' is in the future")
    assert memory.count_raw_logs() == 0


def test_a_batchs_422_names_every_wrong_input_in_one_format_from_1(memory: Memory) -> None:
    """An empty text (refused by FastAPI's model) was answered alone, in FastAPI's list counted from
    0, and input 3's wrong `at` was not named; "  " got amem's sentence naming both, from 1."""
    token, _ = memory.tokens.create("crm", "agent")
    answers = {}
    with TestClient(create_app(memory)) as api:
        for empty in ("", "  "):
            inputs = [
                {"content": "ok", "scope": "acme"},
                {"content": empty, "scope": "acme"},
                {"content": "b", "scope": "acme", "at": "nope"},
            ]
            answers[empty] = api.post("/v1/inputs/batch", json={"inputs": inputs}, headers=_bearer(token))
        extra = api.post(
            "/v1/inputs/batch",
            json={
                "inputs": [{"content": "ok", "scope": "acme", "sender": "x"}, {"content": 5, "scope": "acme"}]
            },
            headers=_bearer(token),
        )
    for answer in answers.values():
        assert answer.status_code == 422, answer.text
        assert answer.json()["detail"] == (
            "2 inputs are wrong: input 2: content is empty: add_note needs the text to remember; "
            "input 3: at: 'nope' is not an ISO 8601 date-time (e.g. 2026-03-01T09:30:00Z); "
            "nothing was recorded"
        )
    assert extra.status_code == 422
    said = extra.json()["detail"]
    assert said.startswith(
        "2 inputs are wrong: input 1: sender: Extra inputs are not permitted; input 2: content"
    )
    assert memory.count_raw_logs() == 0


def test_a_correction_of_the_wrong_kind_is_said_in_plain_words(memory: Memory) -> None:
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    with TestClient(create_app(memory, decisions=True)) as api:
        answer = api.post("/v1/review/proposals/p_1/correct", json={"value": 12345}, headers=_bearer(token))
    assert answer.status_code == 422, answer.text
    (problem,) = answer.json()["detail"]
    assert problem["loc"] == ["body", "value"]
    assert problem["msg"].startswith("give the right value as text") and problem["msg"].endswith(
        "got a number"
    )
    assert "constrained" not in answer.text
