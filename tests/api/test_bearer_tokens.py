"""What a request whose bearer token is missing, or is no amem token at all, is told: the two are
different mistakes with different fixes."""

from __future__ import annotations

from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.memory import Memory


def test_a_token_that_is_not_an_amem_token_is_told_so_not_that_none_was_given(memory: Memory) -> None:
    """Before, `Authorization: Bearer WRONG` got 401 "a bearer token is required (amem tokens
    create ...)", the answer to a request with no token: a caller sending another service's token
    looked for a missing header."""
    with TestClient(create_app(memory)) as api:
        wrong = api.get("/v1/queue", headers={"Authorization": "Bearer WRONG"})
        missing = api.get("/v1/queue")
        unknown = api.get("/v1/queue", headers={"Authorization": "Bearer amem_not-one-we-made"})

    assert wrong.status_code == 401, wrong.text
    assert "not an amem token" in wrong.text and "start with amem_" in wrong.text
    assert "is required" not in wrong.text
    assert missing.status_code == 401 and "a bearer token is required" in missing.text
    assert unknown.status_code == 401 and "unknown or revoked" in unknown.text
