"""Rotating a token (``--replace``) replaces the name's tokens of its own role: an agent service and
a reviewer may share a name, and one's rotation must neither revoke the other nor take its reach."""

from __future__ import annotations

import pytest

from amem.memory import Memory
from amem.services.tokens import NotAuthenticatedError
from tests.factories import signed_in


def _active(memory: Memory) -> list[tuple[str, list[str] | None]]:
    return [(t.role.value, t.scopes) for t in memory.tokens.list() if t.revoked_at is None]


def test_a_reviewer_rotates_her_token_beside_an_agent_of_her_name(memory: Memory) -> None:
    bot, _ = memory.tokens.create("alice", "agent", scopes=["acme"])  # an agent service named alice
    old, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    new, info = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"), replace=True)
    assert info.scopes is None  # a reviewer token acts as its reviewer: it takes no agent's scopes
    assert memory.tokens.authenticate(bot).scopes == ["acme"]  # the agent works on
    assert memory.tokens.authenticate(new).role.value == "reviewer"
    with pytest.raises(NotAuthenticatedError, match="revoked"):
        memory.tokens.authenticate(old)
    assert sorted(_active(memory), key=str) == [("agent", ["acme"]), ("reviewer", None)]


def test_an_agents_rotation_leaves_a_reviewer_of_its_name_alone(memory: Memory) -> None:
    person, _ = memory.tokens.create("bob", "reviewer", by=signed_in(memory, "bob"))
    memory.tokens.create("bob", "agent", scopes=["initech"])
    _, rotated = memory.tokens.create("bob", "agent", replace=True)
    assert rotated.scopes == ["initech"]  # its own predecessor's reach, kept
    assert memory.tokens.authenticate(person).identity == "bob"
    assert sorted(_active(memory), key=str) == [("agent", ["initech"]), ("reviewer", None)]


def test_a_reviewers_first_token_made_with_replace_revokes_no_agent(memory: Memory) -> None:
    bot, _ = memory.tokens.create("bob", "agent", scopes=["initech"])
    _, info = memory.tokens.create("bob", "reviewer", by=signed_in(memory, "bob"), replace=True)
    assert (info.role.value, info.scopes) == ("reviewer", None)
    assert memory.tokens.authenticate(bot).scopes == ["initech"]
