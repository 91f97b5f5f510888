"""Rotating a token (``--replace``) replaces the name's tokens of its own role: an agent service and
a reviewer may share a name, and one's rotation must neither revoke the other nor take its reach."""

from __future__ import annotations

import pytest

from amem.errors import NotFoundError
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


def test_a_rotation_after_a_revocation_keeps_the_revoked_tokens_scopes(memory: Memory) -> None:
    """A limited token leaked and was revoked at once, then rotated: the new token reached every
    account, as no active token was left to inherit from. It keeps the name's newest token's reach."""
    memory.tokens.create("acme-sync", "agent", scopes=["acme"])
    memory.tokens.revoke("acme-sync")
    token, rotated = memory.tokens.create("acme-sync", "agent", replace=True)
    assert rotated.scopes == ["acme"]
    assert memory.tokens.authenticate(token).grant.scopes == frozenset({"acme"})
    assert memory.tokens.history()[-1].scopes == ["acme"]  # on the chained record, as verify reads it
    memory.tokens.revoke("acme-sync")  # the newest decides: a limit moved since is the one kept
    memory.tokens.create("acme-sync", "agent", scopes=["globex"])
    memory.tokens.revoke("acme-sync")
    assert memory.tokens.create("acme-sync", "agent", replace=True)[1].scopes == ["globex"]
    _, first = memory.tokens.create("new-sync", "agent", replace=True)  # no token before: nothing kept
    assert first.scopes is None


def test_a_rotation_or_revocation_by_a_variant_of_the_name_reaches_the_old_token(memory: Memory) -> None:
    """`Alice` and `alice` are one identity (amem/domain/identity.py): rotating as `Alice` left
    alice's old reviewer token working, and `CRM`'s rotation left `crm`'s token, limited to acme,
    beside a new one for every account."""
    old, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    new, _ = memory.tokens.create("Alice", "reviewer", by=signed_in(memory, "Alice"), replace=True)
    with pytest.raises(NotAuthenticatedError, match="revoked"):
        memory.tokens.authenticate(old)
    crm, _ = memory.tokens.create("crm", "agent", scopes=["acme"])
    rotated, info = memory.tokens.create("CRM", "agent", replace=True)
    assert info.scopes == ["acme"]
    with pytest.raises(NotAuthenticatedError, match="revoked"):
        memory.tokens.authenticate(crm)
    assert memory.tokens.revoke("ALICE") == 1 and memory.tokens.revoke("Crm") == 1
    for gone in (new, rotated):
        with pytest.raises(NotAuthenticatedError, match="revoked"):
            memory.tokens.authenticate(gone)
    assert _active(memory) == []
    assert memory.verify().ok, memory.verify().problems


def test_a_kind_prefix_revokes_that_roles_tokens_only_and_a_bare_name_both(memory: Memory) -> None:
    """`amem tokens revoke agent:bob` also revoked reviewer bob's own token (and `person:bob` the
    agent's): the prefix was dropped with the identity, so both roles matched."""
    agent, _ = memory.tokens.create("bob", "agent", scopes=["acme"])
    person, _ = memory.tokens.create("bob", "reviewer", by=signed_in(memory, "bob"))
    assert memory.tokens.revoke("agent:bob", by="ops") == 1
    assert memory.tokens.authenticate(person).identity == "bob"  # the reviewer works on
    with pytest.raises(NotAuthenticatedError, match="revoked"):
        memory.tokens.authenticate(agent)
    with pytest.raises(NotFoundError, match="no active token is named 'agent:bob'"):
        memory.tokens.revoke("agent:bob", by="ops")  # none of that role is left, whatever the other's
    agent, _ = memory.tokens.create("bob", "agent")
    assert memory.tokens.revoke("Person: Bob", by="ops") == 1  # a variant of the prefix and the name
    assert memory.tokens.authenticate(agent).role.value == "agent"
    with pytest.raises(NotFoundError, match=r"tokens are agent:NAME or person:NAME"):
        memory.tokens.revoke("llm:bob", by="ops")  # a kind no token has: nothing revoked
    assert memory.tokens.authenticate(agent).role.value == "agent"
    memory.tokens.create("bob", "reviewer", by=signed_in(memory, "bob"))
    assert memory.tokens.revoke("bob", by="ops") == 2  # a bare name: all its active tokens
    assert _active(memory) == []
    assert memory.verify().ok, memory.verify().problems
