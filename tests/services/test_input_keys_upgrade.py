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


def _alices_reviewer_token(memory: Memory) -> str:
    """alice's own token, made before the upgrade: the older amem recorded what it added as
    agent:alice."""
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    return token


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
    _alices_reviewer_token(memory)
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
    _alices_reviewer_token(memory)
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
    token = _alices_reviewer_token(memory)
    kept = _as_before_the_upgrade(memory)
    retry = _post(memory, token, SSO)
    assert retry["status"] == "recorded_before" and retry["raw_log_id"] == kept
    assert memory.count_raw_logs() == 1


def test_another_input_under_the_agent_s_key_is_the_person_s_own(memory: Memory) -> None:
    """The key an agent named alice used for another input is not alice's: her input is kept, not
    refused as a key given again for another input, nor answered with the agent's."""
    token = _alices_reviewer_token(memory)
    kept = _as_before_the_upgrade(memory)
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
    token = _alices_reviewer_token(memory)
    kept = _timed_as_before_the_upgrade(memory)
    with TestClient(create_app(memory)) as api:
        retry = api.post("/v1/inputs", json=TIMED, headers={"Authorization": f"Bearer {token}"}).json()
    assert retry["status"] == "recorded_before" and retry["raw_log_id"] == kept
    assert memory.count_raw_logs() == 1


def test_an_agent_s_timed_input_after_the_person_s_first_input_is_the_agent_s_alone(memory: Memory) -> None:
    """Once person:alice has recorded an input the upgrade is behind her: the same words at the same
    time recorded since by an agent named alice are the agent's, and hers are kept apart."""
    _alices_reviewer_token(memory)
    memory.add_notes([{"content": "Acme signs in March", "scope": "acme"}], actor="person:alice", wait=False)
    agents = _timed_as_before_the_upgrade(memory)
    (hers,) = memory.add_notes([TIMED], actor="person:alice", wait=False, skip_recorded=True)
    assert not hers.recorded_before and hers.raw_log_id != agents
    assert memory.count_raw_logs() == 3


def test_an_agent_token_of_the_reviewer_s_name_adds_the_agent_s_inputs_never_hers(memory: Memory) -> None:
    """An agent token may share a reviewer's name. What it added, timed or keyed, is the agent's:
    the reviewer sending the same words at the same time, or under the same key, has hers kept as
    person:alice, not answered with the agent's input (which would credit her words to the agent)."""
    agents_token, _ = memory.tokens.create("alice", "agent", by=signed_in(memory, "alice"))
    with TestClient(create_app(memory)) as api:
        timed = api.post("/v1/inputs", json=TIMED, headers={"Authorization": f"Bearer {agents_token}"})
    keyed = _post(memory, agents_token, SSO)
    hers = _alices_reviewer_token(memory)
    with TestClient(create_app(memory)) as api:
        again = api.post("/v1/inputs", json=TIMED, headers={"Authorization": f"Bearer {hers}"}).json()
    assert again["status"] == "queued" and again["raw_log_id"] != timed.json()["raw_log_id"]
    retry = _post(memory, hers, SSO)
    assert retry["status"] == "queued" and retry["raw_log_id"] != keyed["raw_log_id"]
    assert memory.count_raw_logs() == 4
    assert _looked_up(memory, "person:alice", "msg-1")["msg-1"].as_agent_before == {}


def test_an_agent_of_the_reviewer_s_name_without_her_token_is_no_one_s_answer(memory: Memory) -> None:
    """An input recorded as agent:alice while alice had no reviewer token (a library caller, an
    agent token since revoked) cannot have been hers: it answers none of her inputs."""
    _as_before_the_upgrade(memory)
    agents = _timed_as_before_the_upgrade(memory)
    token = _alices_reviewer_token(memory)
    with TestClient(create_app(memory)) as api:
        again = api.post("/v1/inputs", json=TIMED, headers={"Authorization": f"Bearer {token}"}).json()
    assert again["status"] == "queued" and again["raw_log_id"] != agents
    assert "msg-1" not in _looked_up(memory, "person:alice", "msg-1")
