"""The HTTP API through its own ASGI app (httpx's TestClient): every status code it documents."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.domain.models import InputStatus, ProposalStatus, utcnow
from amem.ledger.tables import api_tokens
from amem.memory import Memory
from tests.conftest import ScratchDatabase
from tests.factories import llm_proposer, said, signed_in


@pytest.fixture
def reviewer(memory: Memory) -> dict[str, str]:
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    return {"Authorization": f"Bearer {token}"}


def test_an_input_is_accepted_at_once_and_followed_to_its_note(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    sent = {"content": "Acme will renew in March only with SSO", "scope": "acme", "metadata": {"call": 7}}
    accepted = client.post("/v1/inputs", json=sent, headers=agent)
    assert accepted.status_code == 202
    body = accepted.json()
    assert body["status"] == "queued" and body["status_url"].endswith(f"/v1/inputs/{body['raw_log_id']}")

    status = client.get(body["status_url"], headers=agent)
    assert status.status_code == 200 and status.json()["status"] == "queued"
    assert client.get("/v1/queue", headers=agent).json() == {"queued": 1, "processing": 0, "failed": 0}

    memory.worker().run_once()
    done = client.get(body["status_url"], headers=agent).json()
    assert done["status"] == "done" and done["note_id"]

    note = client.get(f"/v1/notes/{done['note_id']}", headers=agent)
    assert note.status_code == 200 and note.json()["raw_log_ids"] == [body["raw_log_id"]]
    history = client.get(f"/v1/notes/{done['note_id']}/history", headers=agent)
    assert history.status_code == 200 and history.json()[0]["actor"] == "agent:sales-agent"
    with memory.ledger.read() as tx:
        (raw,) = tx.get_raw_logs([body["raw_log_id"]])
    assert raw.actor.id == "sales-agent" and raw.metadata == {"call": 7}  # the token says who

    hits = client.get(
        "/v1/search", params={"q": "single sign-on SSO renewal", "scope": "acme"}, headers=agent
    )
    assert hits.status_code == 200 and [h["note_id"] for h in hits.json()] == [done["note_id"]]
    count = client.get("/v1/review/count", headers=agent)
    assert count.status_code == 200 and count.json()["pending"] == len(memory.pending(limit=1000))


class _WaitingRequest:
    """A status request with ``wait=30`` in a thread, every status read it makes recorded."""

    def __init__(
        self,
        client: TestClient,
        memory: Memory,
        url: str,
        headers: dict[str, str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        self.read_once, self.reads, self.answers = threading.Event(), list[InputStatus](), list[Any]()
        status_of = memory.input_status

        def reading(raw_log_id: str) -> InputStatus:
            self.reads.append(status := status_of(raw_log_id))
            self.read_once.set()
            return status

        monkeypatch.setattr(memory, "input_status", reading)
        self.thread = threading.Thread(
            target=lambda: self.answers.append(client.get(url, params={"wait": 30}, headers=headers))
        )
        self.thread.start()
        assert self.read_once.wait(60)  # the request has read its input queued and waits

    def answer(self) -> Any:
        self.thread.join(60)
        (answer,) = self.answers
        return answer


def test_one_status_request_waits_for_the_note(
    client: TestClient, memory: Memory, agent: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `wait`, the status request reads the input queued, keeps waiting while a worker
    analyses it, and answers with the note: one request instead of polling."""
    accepted = client.post("/v1/inputs", json={"content": "Acme wants SSO", "scope": "acme"}, headers=agent)
    url = accepted.json()["status_url"]
    waiting = _WaitingRequest(client, memory, url, agent, monkeypatch)
    memory.worker().run_once()
    answer, reads = waiting.answer(), waiting.reads
    assert answer.status_code == 200 and answer.json()["status"] == "done" and answer.json()["note_id"]
    assert reads[0].status == "queued" and len(reads) >= 2

    queued = client.post(
        "/v1/inputs", json={"content": "Acme asked for a demo", "scope": "acme"}, headers=agent
    )
    still = client.get(queued.json()["status_url"], params={"wait": 0.2}, headers=agent)
    assert still.status_code == 200 and still.json()["status"] == "queued"  # the time is up, no worker ran
    assert client.get(url, params={"wait": 31}, headers=agent).status_code == 422
    assert client.get("/v1/inputs/r_missing", params={"wait": 30}, headers=agent).status_code == 404


def test_on_postgresql_a_waiting_request_reads_the_status_when_the_ledger_says_it_settled(
    client: TestClient, memory: Memory, agent: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's commit notifies (migration 0018), so the request reads the status twice: queued,
    then done. Reading on a timer, it would read it every 50 to 250 ms while the worker ran."""
    listener = memory.settled_listener()
    if listener is None:
        pytest.skip("SQLite has no notification between processes: the request reads on a timer")
    assert listener.listening(timeout=30)
    worker = memory.worker()
    worker.run_once()  # the pipeline built before the request waits: its run is the input's alone
    accepted = client.post("/v1/inputs", json={"content": "Acme wants SSO", "scope": "acme"}, headers=agent)
    waiting = _WaitingRequest(client, memory, accepted.json()["status_url"], agent, monkeypatch)
    notified = listener.notified
    worker.run_once()

    answer, reads = waiting.answer(), waiting.reads
    assert answer.status_code == 200 and answer.json()["status"] == "done"
    assert listener.notified > notified
    assert reads[0].status == "queued" and len(reads) <= 3, [r.status for r in reads]


def test_a_batch_is_kept_at_once_all_or_none_and_a_retry_keeps_nothing_twice(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    batch = {
        "inputs": [
            {"content": "Acme renewed for two years", "scope": "acme", "at": "2026-03-01T10:00:00Z"},
            {"content": "Globex asked for SSO", "scope": "globex", "at": "2026-03-02T10:00:00Z"},
            {"content": "Initech wants a call", "scope": "initech"},
        ]
    }
    accepted = client.post("/v1/inputs/batch", json=batch, headers=agent)
    assert accepted.status_code == 202
    first = accepted.json()["inputs"]
    assert [i["status"] for i in first] == ["queued"] * 3
    assert all(i["status_url"].endswith(f"/v1/inputs/{i['raw_log_id']}") for i in first)
    assert client.get("/v1/queue", headers=agent).json()["queued"] == 3

    again = client.post("/v1/inputs/batch", json=batch, headers=agent).json()["inputs"]
    assert [i["status"] for i in again] == ["recorded_before", "recorded_before", "queued"]
    assert [i["raw_log_id"] for i in again[:2]] == [i["raw_log_id"] for i in first[:2]]

    memory.worker().run_once()
    done = [client.get(i["status_url"], headers=agent).json() for i in first]
    assert [d["status"] for d in done] == ["done"] * 3
    with memory.ledger.read() as tx:
        kept = list(tx.iter_raw_logs())
    assert len(kept) == 4 and {r.actor.id for r in kept} == {"sales-agent"}


def test_a_retried_input_with_its_time_is_kept_once(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """A retry after a timeout answers with the raw log that already holds the input; an input
    without `at` cannot be told from a new one and is kept again."""
    sent = {"content": "Acme renewed for two years", "scope": "acme", "at": "2026-03-01T10:00:00Z"}
    first = client.post("/v1/inputs", json=sent, headers=agent).json()
    again = client.post("/v1/inputs", json=sent, headers=agent)
    assert again.status_code == 202 and first["status"] == "queued"
    assert again.json()["status"] == "recorded_before" and again.json()["raw_log_id"] == first["raw_log_id"]
    untimed = {"content": "Acme renewed for two years", "scope": "acme"}
    ids = {client.post("/v1/inputs", json=untimed, headers=agent).json()["raw_log_id"] for _ in range(2)}
    assert len(ids) == 2
    with memory.ledger.read() as tx:
        assert len(list(tx.iter_raw_logs())) == 3
    bad = client.post("/v1/inputs", json={**sent, "at": "next week"}, headers=agent)
    assert bad.status_code == 422 and bad.json()["detail"].startswith("at: 'next week' is not an ISO 8601")


def test_inputs_differing_only_in_metadata_are_two_inputs(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """Two CRM records said at one moment in the same words (a voicemail left for the CFO and for
    the CTO) are two inputs, each kept with its own metadata; a retry of either answers with its
    own raw log, as a re-run of an import skips its lines."""
    said = {"content": "Left a voicemail, no answer", "scope": "acme", "at": "2026-03-01T10:00:00Z"}
    cfo, cto = said | {"metadata": {"contact": "CFO"}}, said | {"metadata": {"contact": "CTO"}}
    first = [client.post("/v1/inputs", json=body, headers=agent).json() for body in (cfo, cto)]
    assert [f["status"] for f in first] == ["queued", "queued"]
    kept = memory.raw_logs([f["raw_log_id"] for f in first])
    assert sorted(r.metadata["contact"] for r in kept) == ["CFO", "CTO"]
    again = client.post("/v1/inputs/batch", json={"inputs": [cto, cfo]}, headers=agent).json()["inputs"]
    assert [(a["status"], a["raw_log_id"]) for a in again] == [
        ("recorded_before", first[1]["raw_log_id"]),
        ("recorded_before", first[0]["raw_log_id"]),
    ]
    assert memory.count_raw_logs() == 2


def test_an_input_named_by_an_idempotency_key_is_kept_once_without_its_time(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """The answer to the first request is lost (a timeout): the agent sends it again as it was, with
    its Idempotency-Key, and learns the raw log that holds it; nothing is kept twice."""
    sent = {"content": "Acme asked for SSO", "scope": "acme"}
    key = {**agent, "Idempotency-Key": "call-2026-12-05-0042"}
    first = client.post("/v1/inputs", json=sent, headers=key)
    again = client.post("/v1/inputs", json=sent, headers=key)
    assert (first.status_code, again.status_code) == (202, 202)
    assert (first.json()["status"], again.json()["status"]) == ("queued", "recorded_before")
    assert again.json()["raw_log_id"] == first.json()["raw_log_id"]
    in_body = client.post(
        "/v1/inputs", json={**sent, "idempotency_key": "call-2026-12-05-0042"}, headers=agent
    )
    assert in_body.json()["raw_log_id"] == first.json()["raw_log_id"]

    reused = client.post("/v1/inputs", json={**sent, "content": "Acme signed"}, headers=key)
    assert reused.status_code == 422 and "names another input" in reused.json()["detail"]
    differ = client.post("/v1/inputs", json={**sent, "idempotency_key": "other"}, headers=key)
    assert differ.status_code == 422 and "differ" in differ.json()["detail"]
    batch = {
        "inputs": [{**sent, "idempotency_key": "call-2026-12-05-0042"}, {**sent, "idempotency_key": "b-1"}]
    }
    batched = client.post("/v1/inputs/batch", json=batch, headers=agent).json()["inputs"]
    assert [i["status"] for i in batched] == ["recorded_before", "queued"]
    assert batched[0]["raw_log_id"] == first.json()["raw_log_id"]
    with memory.ledger.read() as tx:
        assert len(list(tx.iter_raw_logs())) == 2


def test_a_batch_with_wrong_inputs_names_them_all_and_keeps_none(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    good = {"content": "Acme renewed", "scope": "acme"}
    bad = [
        good,
        {"content": "Acme", "scope": "acme", "at": "next week"},
        good,
        {"content": "\u200b", "scope": "a"},
    ]
    refused = client.post("/v1/inputs/batch", json={"inputs": bad}, headers=agent)
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert (
        detail.startswith("2 inputs are wrong: input 2: at: 'next week'")
        and "input 4: content shows nothing" in detail
    )
    missing = client.post(
        "/v1/inputs/batch", json={"inputs": [good, {"scope": "acme"}, {"content": "x"}]}, headers=agent
    )
    assert missing.status_code == 422  # numbered as the others, from 1
    assert missing.json()["detail"] == (
        "2 inputs are wrong: input 2: content: Field required; input 3: scope: Field required; "
        "nothing was recorded"
    )
    too_many = client.post("/v1/inputs/batch", json={"inputs": [good] * 501}, headers=agent)
    assert too_many.status_code == 422
    assert client.post("/v1/inputs/batch", json={"inputs": [good]}).status_code == 401
    assert memory.unprocessed_count() == 0 and client.get("/v1/queue", headers=agent).json()["queued"] == 0


def test_an_agent_reads_an_accounts_facts_with_what_is_contested(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """What holds now about an account, newest said first, a page at a time; a fact a newer note
    contradicts says so while its retirement waits for a reviewer."""
    from datetime import UTC, datetime

    from tests.factories import contradict, said

    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(memory, "Acme pays $49 per seat from now on", at=datetime(2026, 8, 20, tzinfo=UTC))
    p = contradict(memory, old, new, "2026-08-20T00:00:00Z")

    page = client.get("/v1/facts", params={"scope": "acme"}, headers=agent)
    assert page.status_code == 200
    body = page.json()
    assert body["total"] == 2 and [f["note"]["id"] for f in body["facts"]] == [new.id, old.id]
    assert body["facts"][1]["retirement_waiting"]["proposal_id"] == p.id
    assert body["facts"][0]["retirement_waiting"] is None
    second = client.get("/v1/facts", params={"scope": "acme", "limit": 1, "offset": 1}, headers=agent)
    assert [f["note"]["id"] for f in second.json()["facts"]] == [old.id]
    assert client.get("/v1/facts", params={"scope": "acme"}).status_code == 401
    assert client.get("/v1/facts", headers=agent).status_code == 422
    assert client.get("/v1/facts", params={"scope": "acme", "limit": 0}, headers=agent).status_code == 422
    huge = client.get("/v1/facts", params={"scope": "acme", "offset": 2**64}, headers=agent)
    assert huge.status_code == 422


def test_an_accounts_facts_as_of_a_past_moment(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """`GET /v1/facts?as_of=`: the facts as the ledger stood then (a CRM's audit of what the
    memory said the day a quote went out)."""
    from datetime import UTC, datetime

    from amem.domain.models import utcnow
    from tests.factories import contradict, said

    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    moment = utcnow()
    new = said(memory, "Acme pays $49 per seat from now on", at=datetime(2026, 8, 20, tzinfo=UTC))
    retirement = contradict(memory, old, new, "2026-01-20T00:00:00Z")
    memory.approve(retirement.id, reviewer=signed_in(memory, "alice"))
    then = client.get("/v1/facts", params={"scope": "acme", "as_of": moment.isoformat()}, headers=agent)
    assert then.status_code == 200
    assert [f["note"]["id"] for f in then.json()["facts"]] == [old.id]
    assert then.json()["as_of"] is not None
    now = client.get("/v1/facts", params={"scope": "acme"}, headers=agent).json()
    assert [f["note"]["id"] for f in now["facts"]] == [new.id] and now["as_of"] is None
    bad = client.get("/v1/facts", params={"scope": "acme", "as_of": "last tuesday"}, headers=agent)
    assert bad.status_code == 422
    # a number was taken as seconds since 1970 (0.99999: 1970-01-01T00:00:00.999990Z), which the
    # OpenAPI document's date-time denies and the MCP tool refused: refused here too, by name
    number = client.get("/v1/facts", params={"scope": "acme", "as_of": "0.99999"}, headers=agent)
    assert number.status_code == 422 and "as_of" in number.text and "ISO 8601" in number.text


@pytest.mark.parametrize("header", [None, "Bearer amem_not-a-real-token", "Basic c2VjcmV0", "Bearer "])
def test_no_token_or_a_wrong_one_is_401(client: TestClient, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    for method, path in [("post", "/v1/inputs"), ("get", "/v1/inputs/r_x"), ("get", "/v1/notes/n_x")]:
        response = client.request(method, path, headers=headers, json={"content": "x", "scope": "s"})
        assert response.status_code == 401, (method, path)
        assert response.headers["www-authenticate"] == "Bearer"


def test_a_revoked_token_is_401_from_the_next_request(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    assert client.get("/v1/queue", headers=agent).status_code == 200
    assert memory.tokens.revoke("sales-agent") == 1
    response = client.get("/v1/queue", headers=agent)
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_a_token_past_its_expiry_is_401_saying_so(client: TestClient, memory: Memory) -> None:
    token, info = memory.tokens.create("nightly-sync", "agent", expires_in_days=30)
    assert info.expires_at is not None
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get("/v1/queue", headers=headers).status_code == 200
    with memory.ledger.engine.begin() as conn:  # 30 days later
        conn.execute(
            sa.update(api_tokens)
            .where(api_tokens.c.id == info.id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    response = client.get("/v1/queue", headers=headers)
    assert response.status_code == 401 and "this token expired on" in response.json()["detail"]


def test_each_answer_says_when_the_token_expires(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    token, info = memory.tokens.create("nightly-sync", "agent", expires_in_days=30)
    answer = client.get("/v1/queue", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200 and info.expires_at is not None
    assert answer.headers["Amem-Token-Expires"] == info.expires_at.isoformat()
    assert "Amem-Token-Expires" not in client.get("/v1/queue", headers=agent).headers  # never expires


def test_the_review_queue_is_for_reviewers_only_and_nothing_decides(
    client: TestClient, agent: dict[str, str], reviewer: dict[str, str]
) -> None:
    denied = client.get("/v1/review/pending", headers=agent)
    assert denied.status_code == 403 and "reviewer" in denied.json()["detail"]
    assert client.get("/v1/review/pending", headers=reviewer).status_code == 200

    spec = client.get("/openapi.json").json()
    writes = [(m, p) for p, ops in spec["paths"].items() for m in ops if m not in ("get", "parameters")]
    # no approve, reject, revert, erase or edit, for anyone
    assert sorted(writes) == [("post", "/v1/inputs"), ("post", "/v1/inputs/batch")]
    assert "Agents never decide" in spec["info"]["description"]
    for path in ("/v1/proposals/p_1/approve", "/v1/notes/n_1"):
        assert client.post(path, headers=reviewer, json={}).status_code in (404, 405)


def test_a_reviewer_reads_the_queue_as_items_one_per_input(
    client: TestClient, memory: Memory, agent: dict[str, str], reviewer: dict[str, str]
) -> None:
    """The unit a reviewer decides on (issue 12): an item per input, with its account, its raw log
    and every value it holds, filtered as the console filters; for reviewers' tokens only."""
    from amem.services.review import ReviewFilter

    said = "Acme decided to renew for two years because the SSO rollout went well; it starts 2027-03-01."
    memory.add_note(said, actor="agent:crm", scope="acme")
    memory.add_note(
        "Globex will renew in March because the pilot went well", actor="agent:crm", scope="globex"
    )
    expected = memory.review_items(ReviewFilter(scope="acme"))
    assert expected.total >= 1, "the analyst held a value of Acme's input for review"

    page = client.get("/v1/review/items", params={"scope": "acme"}, headers=reviewer)

    assert page.status_code == 200
    body = page.json()
    assert body["total"] == expected.total
    assert [i["key"] for i in body["items"]] == [i.key for i in expected.items]
    (item,) = body["items"]
    assert item["scope"] == "acme" and item["raw_log"]["text"] == said
    held = [(f["proposal"]["id"], f["proposal"]["attribute"], f["proposed_words"]) for f in item["fields"]]
    assert held == [(f.proposal.id, f.proposal.attribute, f.proposed_words) for f in expected.items[0].fields]
    everything = client.get("/v1/review/items", headers=reviewer).json()
    assert everything["total"] == memory.review_items().total > expected.total
    assert client.get("/v1/review/items", headers=agent).status_code == 403
    assert client.get("/v1/review/items", params={"kind": "approve"}, headers=reviewer).status_code == 422


def test_unknown_inputs_and_notes_are_404(client: TestClient, agent: dict[str, str]) -> None:
    for path in ("/v1/inputs/r_missing", "/v1/notes/n_missing", "/v1/notes/n_missing/history"):
        response = client.get(path, headers=agent)
        assert response.status_code == 404 and "does not exist" in response.json()["detail"], path


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"scope": "acme"}, "content"),
        ({"content": "", "scope": "acme"}, "content"),
        ({"content": "   ", "scope": "acme"}, "content is empty"),
        ({"content": "x", "scope": ""}, "scope"),
        ({"content": "x", "scope": "acme", "approve": True}, "approve"),
        ({"content": "x" * 20_001, "scope": "acme"}, "over the limit"),
        ({"content": "x", "scope": "acme", "at": "not a time"}, "at"),
    ],
)
def test_malformed_inputs_are_422_and_nothing_is_recorded(
    client: TestClient, memory: Memory, agent: dict[str, str], body: dict[str, object], says: str
) -> None:
    response = client.post("/v1/inputs", json=body, headers=agent)
    assert response.status_code == 422 and says in str(response.json()["detail"])
    assert memory.queue_depth()["queued"] == 0


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ('{"content": "a\\ud800b", "scope": "acme"}', "valid string"),  # lone surrogate: JSON, not UTF-8
        ('{"content": "ok", "scope": "ac\\udc80"}', "valid string"),
        ('{"content": "a\\u0000b", "scope": "acme"}', "NUL"),
        ('{"content": "ok", "scope": "acme", "metadata": {"k": NaN}}', "not a finite number"),
        ('{"content": "\\u200b\\u200d", "scope": "acme"}', "shows nothing"),
        ('{"content": "ok", "scope": "acme", "at": "9999-12-31T23:00:00-05:00"}', "out of range"),
    ],
)
def test_bad_text_in_a_body_is_422_never_500(
    client: TestClient, memory: Memory, agent: dict[str, str], raw: str, says: str
) -> None:
    """Issue 13 part 6 over HTTP: the same one-message refusal as the Python API and the CLI."""
    response = client.post("/v1/inputs", content=raw, headers={**agent, "Content-Type": "application/json"})
    assert response.status_code == 422 and says in str(response.json()["detail"]), response.text
    assert memory.queue_depth()["queued"] == 0


def test_a_search_without_its_query_is_422(client: TestClient, agent: dict[str, str]) -> None:
    assert client.get("/v1/search", params={"scope": "acme"}, headers=agent).status_code == 422
    assert (
        client.get("/v1/search", params={"q": "x", "scope": "acme", "k": 0}, headers=agent).status_code == 422
    )


def test_a_search_as_of_a_past_moment_and_by_tags_is_the_librarys(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """`as_of` and `tag` were ignored by /v1/search (unknown query parameters): an agent asking what
    was known before a note existed got it anyway."""
    from amem.domain.models import utcnow
    from tests.factories import llm_proposer, said

    old = said(memory, "Acme pays $42 per seat")
    then = utcnow().isoformat()
    new = said(memory, "Acme pays $49 per seat from now on")
    memory.propose(new.id, "tags", ["pricing"], reason="t", proposer=llm_proposer(memory))
    question = {"q": "price per seat", "scope": "acme"}

    def hits(**more: object) -> list[str]:
        answer = client.get("/v1/search", params={**question, **more}, headers=agent)
        assert answer.status_code == 200, answer.text
        return [h["note_id"] for h in answer.json()]

    assert set(hits()) == {old.id, new.id}
    assert hits(as_of=then) == [old.id]
    assert hits(tag="pricing") == [new.id]
    assert hits(as_of=then) == [h.note_id for h in memory.search("price per seat", scope="acme", as_of=then)]
    wrong = client.get("/v1/search", params={**question, "as_of": "June 1st"}, headers=agent)
    assert wrong.status_code == 422 and "is not an ISO 8601" in wrong.text


def test_a_token_limited_to_one_account_reaches_nothing_else(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """A CRM sync for acme's workspace: it adds, follows, searches and reads acme's memory, and gets
    nothing of globex's: naming globex is refused (403) and keeps nothing; globex's inputs and notes
    are answered as if they did not exist (404), so their ids tell it nothing."""
    token, _ = memory.tokens.create("acme-sync", "agent", scopes=["acme"])
    acme = {"Authorization": f"Bearer {token}"}
    theirs = client.post(
        "/v1/inputs", json={"content": "Globex pays $55 per seat", "scope": "globex"}, headers=agent
    )
    ours = client.post(
        "/v1/inputs", json={"content": "Acme pays $42 per seat", "scope": "acme"}, headers=acme
    )
    assert (theirs.status_code, ours.status_code) == (202, 202)
    memory.worker().run_once()
    memory.worker().run_once()
    their_note = memory.input_status(theirs.json()["raw_log_id"]).note_id
    our_note = memory.input_status(ours.json()["raw_log_id"]).note_id
    raw_logs = memory.count_raw_logs()

    refused = client.post("/v1/inputs", json={"content": "Globex churns", "scope": "globex"}, headers=acme)
    assert refused.status_code == 403 and "may not use scope 'globex'" in refused.json()["detail"]
    batch = {
        "inputs": [{"content": "Acme adds 5 seats", "scope": "acme"}, {"content": "x", "scope": "globex"}]
    }
    refused = client.post("/v1/inputs/batch", json=batch, headers=acme)
    assert refused.status_code == 403 and "input 2: scope 'globex'" in refused.json()["detail"]
    assert memory.count_raw_logs() == raw_logs  # all or none: acme's line of the batch was not kept

    for path, params in (
        ("/v1/search", {"q": "price per seat", "scope": "globex"}),
        ("/v1/facts", {"scope": "globex"}),
    ):
        answer = client.get(path, params=params, headers=acme)
        assert answer.status_code == 403, path
    hidden = [
        f"/v1/inputs/{theirs.json()['raw_log_id']}",
        f"/v1/notes/{their_note}",
        f"/v1/notes/{their_note}/history",
    ]
    for path in hidden:
        answer = client.get(path, headers=acme)
        assert answer.status_code == 404 and "does not exist" in answer.json()["detail"], path
    assert (
        client.get(f"/v1/notes/n_{'0' * 20}", headers=acme).json()["detail"]
        == f"note n_{'0' * 20} does not exist"
    )

    hits = client.get("/v1/search", params={"q": "price per seat", "scope": "acme"}, headers=acme).json()
    assert [h["note_id"] for h in hits] == [our_note]
    assert client.get(f"/v1/notes/{our_note}", headers=acme).status_code == 200
    assert client.get(ours.json()["status_url"], headers=acme).json()["status"] == "done"
    held = ((our_note, "decision_rationale"), (their_note, "decision_rationale"), (their_note, "next_step"))
    for note_id, attribute in held:
        memory.propose(
            note_id, attribute, "budget approved", reason="r", proposer=llm_proposer(memory)
        )  # held for review
    pending = {scope: memory.count_pending(scope) for scope in ("acme", "globex")}
    assert pending == {"acme": 1, "globex": 2}
    assert client.get("/v1/review/count", headers=acme).json()["pending"] == pending["acme"]
    assert client.get("/v1/review/count", params={"scope": "globex"}, headers=acme).status_code == 403
    everywhere = client.get("/v1/review/count", headers=agent).json()["pending"]
    assert everywhere == pending["acme"] + pending["globex"]  # an unlimited token, as before


@pytest.fixture
def deciding(memory: Memory) -> Iterator[TestClient]:
    """The API served with ``amem serve --decisions``."""
    with TestClient(create_app(memory, decisions=True)) as c:
        yield c


def _reviewer_token(memory: Memory, name: str) -> dict[str, str]:
    token, _ = memory.tokens.create(name, "reviewer", by=signed_in(memory, name))
    return {"Authorization": f"Bearer {token}"}


def test_with_decisions_on_a_reviewer_decides_through_the_api_as_in_the_console(
    deciding: TestClient, memory: Memory, agent: dict[str, str], reviewer: dict[str, str]
) -> None:
    """A team's own review tool (a Slack approval, a CRM sidebar) decides through the API: a
    reviewer's token under the same governance as the console, recorded as that reviewer's; an
    agent's token never, an auditor's role decides nothing, and a decision made meanwhile is 409."""
    from amem.services.review import ReviewFilter

    said = "Acme decided to renew for two years because the SSO rollout went well; it starts 2027-03-01."
    note_id = memory.add_note(said, actor="agent:crm", scope="acme")
    (item,) = memory.review_items(ReviewFilter(scope="acme")).items
    held = [f.proposal.id for f in item.fields]
    assert item.key == memory.read(note_id).raw_log_ids[0] and held

    shown = {"proposals": held}
    refused = deciding.post(f"/v1/review/items/{item.key}/approve", json=shown, headers=agent)
    assert refused.status_code == 403 and "agents can never approve" in refused.json()["detail"]
    audrey = _reviewer_token(memory, "audrey")  # an auditor: approves nothing
    refused = deciding.post(f"/v1/review/proposals/{held[0]}/approve", json={}, headers=audrey)
    assert refused.status_code == 403
    no_reason = deciding.post(f"/v1/review/items/{item.key}/reject", json=shown, headers=reviewer)
    assert no_reason.status_code == 422
    unseen = deciding.post(f"/v1/review/items/{item.key}/approve", json={}, headers=reviewer)
    assert unseen.status_code == 422 and "proposals" in str(unseen.json()["detail"])
    # shown one value of the item only: the others were never seen, so nothing is decided
    part = deciding.post(
        f"/v1/review/items/{item.key}/approve", json={"proposals": held[:1]}, headers=reviewer
    )
    assert len(held) > 1 and part.status_code == 409
    assert "changed since it was shown" in part.json()["detail"]
    assert memory.count_pending("acme") == len(held)  # nothing decided by any of these

    approved = deciding.post(
        f"/v1/review/items/{item.key}/approve", json={"comment": "ok", **shown}, headers=reviewer
    )
    assert approved.status_code == 200 and "Amem-Token-Expires" in approved.headers  # as every answer
    decided = approved.json()["decided"]
    assert sorted(p["id"] for p in decided) == sorted(held)
    assert {(p["status"], p["reviewer"], p["review_comment"]) for p in decided} == {
        ("approved", "alice", "ok")
    }
    applied = {c.proposal_id for c in memory.note_versions(note_id)}
    assert set(held) <= applied  # the values are in the note now, each a change of its proposal
    again = deciding.post(f"/v1/review/items/{item.key}/approve", json=shown, headers=reviewer)
    assert again.status_code == 404 and "was decided" in again.json()["detail"]
    again = deciding.post(f"/v1/review/proposals/{held[0]}/reject", json={"comment": "no"}, headers=reviewer)
    assert again.status_code == 409 and "not pending" in again.json()["detail"]


def test_with_decisions_on_approving_all_matching_refuses_a_set_that_changed(
    deciding: TestClient, memory: Memory, reviewer: dict[str, str]
) -> None:
    """Approve-all by filter is given the count the reviewer saw: an input held meanwhile makes it
    decide nothing (409); with a fresh count it decides every matching item, however many pages."""
    texts = [
        "Globex will renew in March because the pilot went well",
        "Globex chose annual billing because their CFO wants one invoice a year",
        "Globex moved to our EU region because of their data-residency rules",
    ]
    for text in texts[:2]:
        memory.add_note(text, actor="agent:crm", scope="globex")
    counted = deciding.get("/v1/review/items/count", params={"scope": "globex"}, headers=reviewer).json()
    assert counted["items"] == 2 and counted["proposals"] >= 2
    memory.add_note(texts[2], actor="agent:crm", scope="globex")  # held while the reviewer looked

    stale = {"scope": "globex", "expected_items": 2, "fingerprint": counted["fingerprint"]}
    refused = deciding.post("/v1/review/approve-matching", json=stale, headers=reviewer)
    assert refused.status_code == 409 and memory.count_pending("globex") > counted["proposals"]

    fresh = deciding.get("/v1/review/items/count", params={"scope": "globex"}, headers=reviewer).json()
    body = {"scope": "globex", "expected_items": fresh["items"], "fingerprint": fresh["fingerprint"]}
    done = deciding.post("/v1/review/approve-matching", json=body, headers=reviewer)
    assert done.status_code == 200 and len(done.json()["decided"]) == fresh["proposals"]
    assert memory.count_pending("globex") == 0


def test_with_decisions_on_rejecting_all_matching_says_why_on_each(
    deciding: TestClient, memory: Memory, reviewer: dict[str, str]
) -> None:
    for text in ("Globex will renew in March because the pilot went well", "Globex chose annual billing"):
        note = said(memory, text, scope="globex")
        memory.propose(
            note.id,
            "next_step",
            "call back",
            reason="r",
            proposer=llm_proposer(memory),
            raw_log_ids=note.raw_log_ids,
        )
    counted = deciding.get("/v1/review/items/count", params={"scope": "globex"}, headers=reviewer).json()
    body = {"scope": "globex", "expected_items": counted["items"], "fingerprint": counted["fingerprint"]}
    assert deciding.post("/v1/review/reject-matching", json=body, headers=reviewer).status_code == 422
    done = deciding.post("/v1/review/reject-matching", json=body | {"comment": "misread"}, headers=reviewer)
    assert done.status_code == 200
    assert {(p["status"], p["review_comment"]) for p in done.json()["decided"]} == {("rejected", "misread")}
    assert memory.count_pending("globex") == 0


def test_with_decisions_on_a_reviewer_corrects_a_held_value_for_a_second_look(
    deciding: TestClient, memory: Memory, agent: dict[str, str], reviewer: dict[str, str]
) -> None:
    note = said(memory, "Globex will renew in March", scope="globex")
    wrong = memory.propose(
        note.id,
        "valid_at",
        "2026-03-01",
        reason="r",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    path = f"/v1/review/proposals/{wrong.id}/correct"
    assert deciding.post(path, json={"value": "2027-03-01"}, headers=agent).status_code == 403
    assert deciding.post(path, json={"value": "in spring"}, headers=reviewer).status_code == 422
    assert memory.proposal(wrong.id).status == ProposalStatus.PENDING
    done = deciding.post(path, json={"value": "2027-03-01", "comment": "next March"}, headers=reviewer)
    assert done.status_code == 200
    fix = done.json()["correction"]
    assert (fix["corrects"], fix["status"], fix["proposer"]["id"]) == (wrong.id, "pending", "alice")
    assert done.json()["corrected"]["status"] == "rejected"
    again = deciding.post(path, json={"value": "2027-03-02"}, headers=reviewer)
    assert again.status_code == 409
    bob = _reviewer_token(memory, "bob")
    approved = deciding.post(f"/v1/review/proposals/{fix['id']}/approve", json={}, headers=bob)
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    assert memory.read(note.id).valid_at.year == 2027


def test_without_decisions_the_api_decides_nothing_for_any_token(
    client: TestClient, memory: Memory, reviewer: dict[str, str]
) -> None:
    memory.add_note(
        "Globex will renew in March because the pilot went well", actor="agent:crm", scope="globex"
    )
    pending = memory.count_pending("globex")
    assert pending
    (item,) = memory.review_items().items
    for path in (
        f"/v1/review/items/{item.key}/approve",
        f"/v1/review/proposals/{item.fields[0].proposal.id}/approve",
        f"/v1/review/proposals/{item.fields[0].proposal.id}/correct",
    ):
        assert client.post(path, json={}, headers=reviewer).status_code in (404, 405)
    assert memory.count_pending("globex") == pending
    assert "decides nothing" in client.get("/openapi.json").json()["info"]["description"]


def test_a_reviewer_limited_to_some_accounts_reads_and_decides_in_those(database_url: str, tmp_path) -> None:
    """alice owns acme (reviewers.yaml scopes): through the API her token lists, counts and
    approves acme's items only, as the console would show her."""
    from tests.factories import llm_proposer, policy_with_scopes

    policy = policy_with_scopes(tmp_path / "policy", alice=["acme"])
    with Memory(tmp_path / "home", database_url=database_url, policy=policy) as memory:
        for scope in ("acme", "globex"):
            note = said(memory, f"{scope.title()} renews in March", scope=scope)
            memory.propose(
                note.id, "decision_rationale", "SSO shipped", reason="r", proposer=llm_proposer(memory)
            )
        alice = _reviewer_token(memory, "alice")
        with TestClient(create_app(memory, decisions=True)) as api:
            listed = api.get("/v1/review/items", headers=alice).json()
            assert [i["scope"] for i in listed["items"]] == ["acme"] and listed["total"] == 1
            assert api.get("/v1/review/count", headers=alice).json()["pending"] == 1  # her queue
            held = api.get("/v1/review/pending", headers=alice).json()
            assert [p["scope"] for p in held] == ["acme"]  # as her items, not every account's
            everyone = api.get("/v1/review/pending", headers=_reviewer_token(memory, "carol")).json()
            assert sorted(p["scope"] for p in everyone) == ["acme", "globex"]
            counted = api.get("/v1/review/items/count", headers=alice).json()
            assert counted["items"] == 1
            body = {"expected_items": 1, "fingerprint": counted["fingerprint"]}
            done = api.post("/v1/review/approve-matching", json=body, headers=alice)
            assert done.status_code == 200 and len(done.json()["decided"]) == 1
            (theirs,) = memory.pending(limit=10)
            refused = api.post(f"/v1/review/proposals/{theirs.id}/approve", json={}, headers=alice)
            assert refused.status_code == 403 and "not in globex" in refused.json()["detail"]
        assert [p.scope for p in memory.pending(limit=10)] == ["globex"]


def test_the_change_feed_tells_a_crm_each_value_as_it_lands_in_its_accounts(
    client: TestClient, memory: Memory, agent: dict[str, str]
) -> None:
    """A CRM sync polls `GET /v1/changes?after=N`: each applied value once, in order, with who
    applied it (the model, the reviewer who approved, the one who corrected) and from which input;
    a token limited to one account sees that account's changes only."""
    note = said(memory, "Acme will renew in March", scope="acme")
    other = said(memory, "Globex pays $55 per seat", scope="globex")
    rationale = memory.propose(
        note.id,
        "decision_rationale",
        "SSO shipped",
        reason="r",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    memory.approve(rationale.id, reviewer=signed_in(memory, "alice"))
    wrong = memory.propose(
        note.id,
        "valid_at",
        "2026-03-01",
        reason="r",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    fix = memory.correct(wrong.id, "2027-03-01", reviewer=signed_in(memory, "alice")).correction
    memory.approve(fix.id, reviewer=signed_in(memory, "bob"))

    feed = client.get("/v1/changes", headers=agent).json()
    assert feed["more"] is False and feed["next_after"] == feed["changes"][-1]["seq"]
    rows = [(c["scope"], c["attribute"], c["actor"], c["kind"]) for c in feed["changes"]]
    assert rows == [
        ("acme", "content", "agent:sales-agent", "create"),
        ("globex", "content", "agent:sales-agent", "create"),
        ("acme", "decision_rationale", "person:alice", "apply"),
        ("acme", "valid_at", "person:bob", "apply"),
    ]
    last = feed["changes"][-1]
    assert (last["new_value"], last["corrects"], last["proposal_id"]) == (
        "2027-03-01T00:00:00+00:00",
        wrong.id,
        fix.id,
    )
    assert last["raw_log_ids"] == note.raw_log_ids  # what became of that input
    seqs = [c["seq"] for c in feed["changes"]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)

    paged, after = [], 0  # one a page: the same changes, each once
    while True:
        page = client.get("/v1/changes", params={"after": after, "limit": 1}, headers=agent).json()
        paged += [c["seq"] for c in page["changes"]]
        after = page["next_after"]
        if not page["more"]:
            break
    assert paged == seqs
    assert client.get("/v1/changes", params={"after": after}, headers=agent).json() == {
        "changes": [],
        "next_after": after,
        "more": False,
    }

    token, _ = memory.tokens.create("acme-sync", "agent", scopes=["acme"])
    acme = {"Authorization": f"Bearer {token}"}
    mine = client.get("/v1/changes", headers=acme).json()["changes"]
    assert {c["scope"] for c in mine} == {"acme"} and len(mine) == 3
    assert client.get("/v1/changes", params={"scope": "globex"}, headers=acme).status_code == 403
    assert client.get("/v1/changes", params={"after": -1}, headers=agent).status_code == 422
    assert client.get("/v1/changes").status_code == 401
    assert other.scope == "globex"


def installed_elsewhere(memory_home: Path, database_url: str, policy: Path) -> None:
    """``policy`` installed in the ledger by another process (an admin's), as `amem policy install`."""
    from amem.policy import load_policy

    new = load_policy(policy)
    with Memory(memory_home, database_url=database_url, policy=policy) as admin:
        # carol, an admin with a password, signs in under the installed policy (tests/factories.py)
        admin.install_policy(new, by=admin.authentication.signed_in("carol", method="test"))


def policy_without(directory: Path, name: str) -> Path:
    """The policy of ``policy_with_scopes`` without the reviewer ``name`` (they left the team)."""
    import yaml

    from tests.factories import policy_with_scopes

    policy = policy_with_scopes(directory)
    listed = directory / "reviewers.yaml"
    data = yaml.safe_load(listed.read_text("utf-8"))
    del data["reviewers"][name]
    listed.write_text(yaml.safe_dump(data), "utf-8")
    return policy


def test_a_reviewer_token_is_refused_once_its_reviewer_left_the_policy(
    database_url: str, tmp_path: Path
) -> None:
    """alice, limited to acme, is removed from the policy: her token (valid for 90 days) is refused
    with a 403 that says why, on every route, instead of showing her every account's queue."""
    from tests.factories import llm_proposer, policy_with_scopes

    home, before = tmp_path / "home", policy_with_scopes(tmp_path / "p1", alice=["acme"])
    with Memory(home, database_url=database_url, policy=before) as memory:
        for scope in ("acme", "globex"):
            note = said(memory, f"{scope.title()} renews in March", scope=scope)
            memory.propose(
                note.id, "decision_rationale", "SSO shipped", reason="r", proposer=llm_proposer(memory)
            )
        alice = _reviewer_token(memory, "alice")
        with TestClient(create_app(memory)) as api:
            assert [p["scope"] for p in api.get("/v1/review/pending", headers=alice).json()] == ["acme"]
    after = policy_without(tmp_path / "p2", "alice")
    installed_elsewhere(home, database_url, after)
    with Memory(home, database_url=database_url, policy=after) as memory:  # the server started again
        with TestClient(create_app(memory, decisions=True)) as api:
            held = memory.pending(limit=10)
            for method, path in [
                ("get", "/v1/review/items"),
                ("get", "/v1/review/pending"),
                ("get", "/v1/review/count"),
                ("get", "/v1/review/items/count"),
                ("get", "/v1/queue"),
                ("post", f"/v1/review/proposals/{held[0].id}/approve"),
            ]:
                answer = api.request(method, path, headers=alice, json={})
                assert answer.status_code == 403, (method, path, answer.text)
                assert "alice is not a reviewer of the policy in force" in answer.json()["detail"]
            carol = _reviewer_token(memory, "carol")  # a reviewer still in it reads on
            assert len(api.get("/v1/review/pending", headers=carol).json()) == 2
        assert len(memory.pending(limit=10)) == 2  # nothing decided


def test_a_reviewer_removed_while_a_read_only_server_runs_is_refused_at_once(
    database_url: str, tmp_path: Path
) -> None:
    """The server writes nothing (no input arrives): alice's removal, installed by another process,
    still refuses her token on her next request, not at the server's next write or restart."""
    from tests.factories import llm_proposer, policy_with_scopes

    home = tmp_path / "home"
    with Memory(home, database_url=database_url, policy=policy_with_scopes(tmp_path / "p1")) as memory:
        note = said(memory, "Acme renews in March", scope="acme")
        memory.propose(
            note.id, "decision_rationale", "SSO shipped", reason="r", proposer=llm_proposer(memory)
        )
        alice, carol = _reviewer_token(memory, "alice"), _reviewer_token(memory, "carol")
        with TestClient(create_app(memory)) as api:
            assert api.get("/v1/review/items", headers=alice).status_code == 200
            installed_elsewhere(home, database_url, policy_without(tmp_path / "p2", "alice"))
            refused = api.get("/v1/review/items", headers=alice)
            assert refused.status_code == 403
            assert "alice is not a reviewer of the policy in force" in refused.json()["detail"]
            assert api.get("/v1/review/items", headers=carol).status_code == 200


def test_the_pending_list_follows_a_policy_installed_while_the_server_runs(
    database_url: str, tmp_path: Path
) -> None:
    """A new policy limits alice to acme while the API server runs: /v1/review/pending narrows her
    list as /v1/review/items does, by the policy the server now follows (not the one it opened with)."""
    from tests.factories import llm_proposer, policy_with_scopes

    home = tmp_path / "home"
    with Memory(home, database_url=database_url, policy=policy_with_scopes(tmp_path / "p1")) as memory:
        for scope in ("acme", "globex"):
            note = said(memory, f"{scope.title()} renews in March", scope=scope)
            memory.propose(
                note.id, "decision_rationale", "SSO shipped", reason="r", proposer=llm_proposer(memory)
            )
        alice = _reviewer_token(memory, "alice")
        with TestClient(create_app(memory)) as api:
            assert len(api.get("/v1/review/pending", headers=alice).json()) == 2
            installed_elsewhere(home, database_url, policy_with_scopes(tmp_path / "p2", alice=["acme"]))
            said(memory, "Acme asked for a quote", scope="acme")  # the server's worker writes a note
            items = api.get("/v1/review/items", headers=alice).json()["items"]
            pending = api.get("/v1/review/pending", headers=alice).json()
            assert [p["scope"] for p in pending] == [i["scope"] for i in items] == ["acme"]


def test_a_scope_with_a_stray_space_is_the_account_everywhere_and_an_empty_one_is_refused(
    client: TestClient, memory: Memory, agent: dict[str, str], reviewer: dict[str, str]
) -> None:
    """ " acme" was acme's memory for inputs and search, but no account at all for the change feed
    (an empty page whose next_after moved past every acme change) and the review counts; "" counted
    every account's held values."""
    note = said(memory, "Acme will renew in March", scope="acme")
    said(memory, "Globex pays $55 per seat", scope="globex")
    memory.propose(note.id, "decision_rationale", "SSO shipped", reason="r", proposer=llm_proposer(memory))
    token, _ = memory.tokens.create("acme-sync", "agent", scopes=["acme"])
    limited = {"Authorization": f"Bearer {token}"}

    def answers(scope: str) -> list[Any]:
        return [
            client.get("/v1/changes", params={"scope": scope}, headers=agent).json()["changes"],
            client.get("/v1/changes", params={"scope": scope}, headers=limited).json()["changes"],
            client.get("/v1/review/count", params={"scope": scope}, headers=agent).json(),
            client.get("/v1/review/count", params={"scope": scope}, headers=limited).json(),
            client.get("/v1/review/count", params={"scope": scope}, headers=reviewer).json(),
            client.get("/v1/review/items", params={"scope": scope}, headers=reviewer).json()["total"],
            client.get("/v1/review/items/count", params={"scope": scope}, headers=reviewer).json(),
            client.get("/v1/facts", params={"scope": scope}, headers=agent).json()["total"],
        ]

    exact = answers("acme")
    assert [c["scope"] for c in exact[0]] == ["acme"] and exact[2]["pending"] == 1
    assert answers(" acme") == exact and answers("acme ") == exact
    for endpoint, who in (
        ("/v1/review/count", agent),
        ("/v1/review/count", reviewer),
        ("/v1/changes", agent),
    ):
        for blank in ("", " ", "\u200b"):
            refused = client.get(endpoint, params={"scope": blank}, headers=who)
            assert refused.status_code == 422, (endpoint, blank, refused.text)
            assert "scope" in refused.text, (endpoint, blank)


def test_an_index_or_model_that_cannot_answer_is_a_503_saying_why_and_no_secret(
    database_url: str, tmp_path: Path, scripted_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """These were a bare `500 Internal Server Error`: a Chroma server out of reach, an index built
    with another embedding model, an embedding model that fails. The MCP server always said why."""
    import litellm

    token, home = None, tmp_path / "home"
    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    with Memory(home, database_url=database_url) as memory:
        token, _ = memory.tokens.create("crm", "agent")
        said(memory, "Acme wants SSO", scope="acme")
        assert memory.search("SSO", 5, scope="acme")  # the index is built, by embed-v1
    agent = {"Authorization": f"Bearer {token}"}
    question = {"q": "SSO", "scope": "acme"}

    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v2")
    with Memory(home, database_url=database_url) as memory, TestClient(create_app(memory)) as api:
        changed = api.get("/v1/search", params=question, headers=agent)
    assert changed.status_code == 503 and "embed-v1" in changed.json()["detail"], changed.text

    def down(texts: list[str]) -> list[list[float]]:
        raise litellm.AuthenticationError(
            "Incorrect API key provided: sk-proj-abcdefghijklmnop", llm_provider="openai", model="embed-v1"
        )

    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    scripted_llm.embedder = down
    with Memory(home, database_url=database_url) as memory:
        api = TestClient(create_app(memory), raise_server_exceptions=False)
        failed = api.get("/v1/search", params=question, headers=agent)
    assert failed.status_code == 503 and "AuthenticationError" in failed.json()["detail"], failed.text
    assert "sk-proj" not in failed.text and "abcdefghijklmnop" not in failed.text

    monkeypatch.setenv("AMEM_CHROMA_URL", "http://admin:chroma-pass-1@127.0.0.1:9")
    with Memory(home, database_url=database_url) as memory, TestClient(create_app(memory)) as api:
        unreachable = api.get("/v1/search", params=question, headers=agent)
        facts = api.get("/v1/facts", params={"scope": "acme"}, headers=agent)
    detail = unreachable.json()["detail"]
    assert unreachable.status_code == 503 and "cannot reach the Chroma server" in detail, detail
    assert "chroma-pass-1" not in unreachable.text and "127.0.0.1:9" in detail
    assert facts.status_code == 200 and facts.json()["total"] == 1  # the ledger still answers


def test_every_answer_to_an_expiring_token_says_when_errors_too(client: TestClient, memory: Memory) -> None:
    """README: every answer to a token with an expiry carries `Amem-Token-Expires`; a 404 or a 422
    did not. A body that is not JSON is a 400, as the OpenAPI document says (it was a 422)."""
    token, info = memory.tokens.create("nightly-sync", "agent", expires_in_days=3)
    headers = {"Authorization": f"Bearer {token}"}
    assert info.expires_at is not None
    answers = {
        404: client.get("/v1/notes/n_missing", headers=headers),
        422: client.post("/v1/inputs", json={"content": " ", "scope": "acme"}, headers=headers),
        400: client.post(
            "/v1/inputs", content="not json", headers={**headers, "Content-Type": "application/json"}
        ),
    }
    for status, answer in answers.items():
        assert answer.status_code == status, (status, answer.text)
        assert answer.headers.get("Amem-Token-Expires") == info.expires_at.isoformat(), status
    assert (
        client.get("/v1/search", params={"scope": "acme"}, headers=headers).headers["Amem-Token-Expires"]
        == info.expires_at.isoformat()
    )  # a query FastAPI refuses (no q): 422
    assert "the body is not JSON" in answers[400].json()["detail"]
    assert memory.count_raw_logs() == 0
    documented = client.get("/openapi.json").json()["paths"]["/v1/inputs"]["post"]["responses"]
    assert "not JSON" in documented["400"]["description"]
    status = client.get("/openapi.json").json()["paths"]["/v1/inputs/{raw_log_id}"]["get"]["description"]
    assert "amem reprocess" in status  # a failed input waits for an operator, nothing retries it


@pytest.mark.postgres
def test_a_ledger_database_gone_is_a_503_saying_so_not_a_server_failure(
    tmp_path: Path, scratch_database: ScratchDatabase
) -> None:
    """The PostgreSQL server's database dropped or out of reach under a running API: every request
    was `500 the server failed (OperationalError)`, read as amem's bug. It is the machine's state:
    503, saying what cannot be reached (the URL and the driver's words stay in the server's log)."""
    with Memory(tmp_path / "home", database_url=scratch_database.url) as memory:
        token, _ = memory.tokens.create("crm", "agent")
        said(memory, "Acme wants SSO", scope="acme")
        api = TestClient(create_app(memory), raise_server_exceptions=False)
        agent = {"Authorization": f"Bearer {token}"}
        assert api.get("/v1/facts", params={"scope": "acme"}, headers=agent).status_code == 200
        scratch_database.drop()
        gone = api.get("/v1/facts", params={"scope": "acme"}, headers=agent)
        again = api.get("/v1/facts", params={"scope": "acme"}, headers=agent)
    for answer in (gone, again):
        assert answer.status_code == 503, answer.text
        assert answer.json()["detail"].startswith("the ledger database cannot be reached"), answer.text
        assert scratch_database.name not in answer.text
