"""A keyed input a reviewer's token sent before the upgrade that records it as ``person:NAME`` was
recorded as ``agent:NAME``: its retry after the upgrade is the same input, found, not kept twice
(amem/ledger/queue_queries.py ``recorded_by_key``). An agent's key of that name still never
answers, nor refuses, another input of the person's."""

from __future__ import annotations

from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.domain.models import Actor
from amem.ledger import queue_queries
from amem.memory import Memory
from tests.factories import signed_in

SSO = {"content": "Acme wants SSO", "scope": "acme"}


def _as_before_the_upgrade(memory: Memory, key: str = "msg-1", content: str = SSO["content"]) -> str:
    """What the older amem recorded for alice's reviewer token: a keyed input of agent:alice."""
    (outcome,) = memory.add_notes(
        [{"content": content, "scope": "acme", "idempotency_key": key}], actor="agent:alice", wait=False
    )
    return outcome.raw_log_id


def _looked_up(memory: Memory, actor: str, *keys: str) -> dict[str, queue_queries.Keyed]:
    with memory.ledger.read() as tx:
        return queue_queries.recorded_by_key(tx, Actor.parse(actor), list(keys))


def test_a_person_s_key_finds_the_agent_of_their_name_s_input_recorded_before_theirs(memory: Memory) -> None:
    kept = _as_before_the_upgrade(memory)
    (found,) = _looked_up(memory, "person:alice", "msg-1").values()
    assert found.by_scope == {}  # not the person's own record
    assert found.as_agent_before["acme"].recorded.raw_log_id == kept
    assert _looked_up(memory, "person:bob", "msg-1") == {}  # another name's agent is no one's answer
    (agents,) = _looked_up(memory, "agent:alice", "msg-1").values()
    assert agents.by_scope["acme"].recorded.raw_log_id == kept and agents.as_agent_before == {}


def test_an_agent_s_key_recorded_after_the_person_s_first_key_is_the_agent_s_alone(memory: Memory) -> None:
    """Once alice's own token has recorded a key as person:alice the upgrade is behind her: an
    agent:alice key recorded since is an agent's named alice, never hers."""
    before = _as_before_the_upgrade(memory)
    memory.add_notes(
        [{"content": "Acme signs in March", "scope": "acme", "idempotency_key": "msg-2"}],
        actor="person:alice",
        wait=False,
    )
    _as_before_the_upgrade(memory, key="msg-3", content="Acme wants a discount")
    found = _looked_up(memory, "person:alice", "msg-1", "msg-2", "msg-3")
    assert found["msg-1"].as_agent_before["acme"].recorded.raw_log_id == before
    assert set(found["msg-2"].by_scope) == {"acme"} and found["msg-2"].as_agent_before == {}
    assert "msg-3" not in found


def _post(memory: Memory, token: str, body: dict[str, str], key: str = "msg-1") -> dict[str, object]:
    with TestClient(create_app(memory)) as api:
        answer = api.post(
            "/v1/inputs", json=body, headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key}
        )
    assert answer.status_code == 202, answer.text
    return answer.json()


def test_a_reviewer_s_retry_across_the_upgrade_is_recorded_before(memory: Memory) -> None:
    """Sent with alice's reviewer token before the upgrade (recorded as agent:alice), sent again
    after it (as person:alice): answered 202 queued, and the input was kept twice."""
    kept = _as_before_the_upgrade(memory)
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    retry = _post(memory, token, SSO)
    assert retry["status"] == "recorded_before" and retry["raw_log_id"] == kept
    assert memory.count_raw_logs() == 1


def test_another_input_under_the_agent_s_key_is_the_person_s_own(memory: Memory) -> None:
    """The key an agent named alice used for another input is not alice's: her input is kept, not
    refused as a key given again for another input, nor answered with the agent's."""
    kept = _as_before_the_upgrade(memory)
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    other = _post(memory, token, {"content": "Acme wants a discount", "scope": "acme"})
    assert other["status"] == "queued" and other["raw_log_id"] != kept
    assert memory.count_raw_logs() == 2


TIMED = {**SSO, "at": "2026-12-01T10:00:00Z"}


def _timed_as_before_the_upgrade(memory: Memory) -> str:
    """What the older amem recorded for an input alice's reviewer token sent with its time and no
    key (the HTTP API looks such an input up: ``skip_recorded``): agent:alice's."""
    (outcome,) = memory.add_notes([TIMED], actor="agent:alice", wait=False, skip_recorded=True)
    return outcome.raw_log_id


def test_a_reviewer_s_timed_retry_without_a_key_across_the_upgrade_is_recorded_before(memory: Memory) -> None:
    """Sent with alice's reviewer token and its time before the upgrade, again after it: before,
    answered 202 queued under a new raw log, and the input was kept (and analysed) twice."""
    kept = _timed_as_before_the_upgrade(memory)
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    with TestClient(create_app(memory)) as api:
        retry = api.post("/v1/inputs", json=TIMED, headers={"Authorization": f"Bearer {token}"}).json()
    assert retry["status"] == "recorded_before" and retry["raw_log_id"] == kept
    assert memory.count_raw_logs() == 1


def test_an_agent_s_timed_input_after_the_person_s_first_input_is_the_agent_s_alone(memory: Memory) -> None:
    """Once person:alice has recorded an input the upgrade is behind her: the same words at the same
    time recorded since by an agent named alice are the agent's, and hers are kept apart."""
    memory.add_notes([{"content": "Acme signs in March", "scope": "acme"}], actor="person:alice", wait=False)
    agents = _timed_as_before_the_upgrade(memory)
    (hers,) = memory.add_notes([TIMED], actor="person:alice", wait=False, skip_recorded=True)
    assert not hers.recorded_before and hers.raw_log_id != agents
    assert memory.count_raw_logs() == 3
