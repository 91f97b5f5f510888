"""An empty answer about a scope no input was ever kept under says so: `scope_unknown` and
`did_you_mean` (the CLI's did-you-mean, among the scopes the token may use), still 200, for an
agent may ask about an account before its first input. /v1/search, a list, says it in headers.
Before, `scope=acmee` or `scope=Acme` answered 200 with nothing, as an account that exists."""

from __future__ import annotations

from urllib.parse import unquote

from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.memory import Memory
from tests.factories import signed_in


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _accounts(memory: Memory) -> None:
    """acme and acmex hold notes; globex an input no worker has analysed yet (no note)."""
    for scope in ("acme", "acmex"):
        memory.add_note(f"{scope} wants SSO before the renewal", actor="agent:sales-agent", scope=scope)
    memory.add_note("Globex asked for a quote", actor="agent:sales-agent", scope="globex", wait=False)


def test_facts_and_search_say_when_the_scope_is_unknown(
    memory: Memory, client: TestClient, agent: dict[str, str]
) -> None:
    _accounts(memory)

    facts = client.get("/v1/facts", params={"scope": "acmee"}, headers=agent)
    assert facts.status_code == 200
    body = facts.json()
    assert body["facts"] == [] and body["scope_unknown"] is True and body["did_you_mean"][0] == "acme"

    # a case variant is pointed to the spelling kept; a scope nothing resembles gets no suggestion
    body = client.get("/v1/facts", params={"scope": "ACMEX"}, headers=agent).json()
    assert body["scope_unknown"] is True and body["did_you_mean"][0] == "acmex"
    body = client.get("/v1/facts", params={"scope": "initech"}, headers=agent).json()
    assert body["scope_unknown"] is True and body["did_you_mean"] == []

    # a known scope: facts, or none yet (globex's input waits for a worker), never "unknown"
    for scope in ("acme", "globex"):
        body = client.get("/v1/facts", params={"scope": scope}, headers=agent).json()
        assert body["scope_unknown"] is False and body["did_you_mean"] == [], scope
    assert client.get("/v1/facts", params={"scope": "acme"}, headers=agent).json()["total"] == 1

    found = client.get("/v1/search", params={"q": "SSO", "scope": "Acme"}, headers=agent)
    assert found.status_code == 200 and found.json() == []
    assert found.headers["Amem-Scope-Unknown"] == "true"
    suggested = [unquote(s) for s in found.headers["Amem-Did-You-Mean"].split(",")]
    assert suggested[0] == "acme"
    for scope in ("acme", "globex"):  # hits, or none in a scope that holds an input
        found = client.get("/v1/search", params={"q": "SSO", "scope": scope}, headers=agent)
        assert found.status_code == 200 and "Amem-Scope-Unknown" not in found.headers, scope
    assert client.get("/v1/search", params={"q": "SSO", "scope": "acme"}, headers=agent).json()


def test_did_you_mean_names_only_scopes_the_token_may_use(memory: Memory) -> None:
    _accounts(memory)
    token, _ = memory.tokens.create("acme-sync", "agent", scopes=["acme", "acmey"])
    with TestClient(create_app(memory)) as api:
        body = api.get("/v1/facts", params={"scope": "acmey"}, headers=_bearer(token)).json()
    assert body["scope_unknown"] is True and body["did_you_mean"] == ["acme"]  # never acmex


def test_review_counts_say_when_the_scope_is_unknown(memory: Memory) -> None:
    _accounts(memory)
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    with TestClient(create_app(memory)) as api:
        counted = api.get("/v1/review/items/count", params={"scope": "acmee"}, headers=_bearer(token))
        items = api.get("/v1/review/items", params={"scope": "acmee"}, headers=_bearer(token))
        pending = api.get("/v1/review/count", params={"scope": "acmee"}, headers=_bearer(token))
        known = api.get("/v1/review/items/count", params={"scope": "globex"}, headers=_bearer(token))
        everywhere = api.get("/v1/review/items/count", headers=_bearer(token))
    for answer in (counted, items, pending):
        assert answer.status_code == 200
        assert answer.json()["scope_unknown"] is True and answer.json()["did_you_mean"][0] == "acme"
    assert counted.json()["items"] == 0 and items.json()["items"] == [] and pending.json()["pending"] == 0
    assert known.json()["items"] == 0 and known.json()["scope_unknown"] is False
    assert everywhere.json()["scope_unknown"] is False


def test_the_hint_is_in_the_openapi_schema(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name in ("FactPage", "MatchCount", "ReviewPage", "PendingCount"):
        assert {"scope_unknown", "did_you_mean"} <= set(schemas[name]["properties"]), name
    headers = spec["paths"]["/v1/search"]["get"]["responses"]["200"]["headers"]
    assert {"Amem-Scope-Unknown", "Amem-Did-You-Mean"} <= set(headers)
