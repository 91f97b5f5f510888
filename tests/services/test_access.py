"""Agent tokens limited to some scopes: what the token service records, and the grant every
interface checks (tests/agents/ drives it through the HTTP API and the MCP server)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from amem.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from amem.ledger.tables import api_tokens
from amem.memory import Memory
from amem.services.access import ScopeGrant
from tests.factories import signed_in


def test_a_token_made_for_some_scopes_carries_them_sorted_and_on_the_record(memory: Memory) -> None:
    token, info = memory.tokens.create("acme-bot", "agent", scopes=["globex", "acme", "acme"])
    assert info.scopes == ["acme", "globex"]
    assert memory.tokens.authenticate(token).scopes == ["acme", "globex"]
    (made,) = memory.tokens.history()
    assert (made.action, made.scopes) == ("created", ["acme", "globex"])
    _, everywhere = memory.tokens.create("crm-sync", "agent")
    assert everywhere.scopes is None and not everywhere.grant.limited
    assert memory.verify().ok, memory.verify().problems


def test_the_grant_refuses_a_named_scope_and_hides_what_is_elsewhere() -> None:
    grant = ScopeGrant.of(["acme"], holder="token 'acme-bot'")
    grant.require("acme")
    grant.require(" acme ")  # add_note keeps a scope stripped
    with pytest.raises(PermissionDeniedError, match=r"token 'acme-bot' may not use scope 'globex'.*'acme'"):
        grant.require("globex")
    with pytest.raises(NotFoundError, match=r"^note n_1 does not exist$"):
        grant.require_visible("globex", "note n_1 does not exist")
    with pytest.raises(PermissionDeniedError, match=r"2 input\(s\), so none was kept \(input 2: .*input 3"):
        grant.require_all(["acme", "globex", "initech"])
    assert grant.within(None) == ["acme"] and grant.within("acme") == ["acme"]
    assert ScopeGrant.everything().within(None) == [None]


def test_a_reviewer_token_takes_no_scopes_and_bad_scopes_are_named(memory: Memory) -> None:
    alice = signed_in(memory, "alice")
    with pytest.raises(InvalidInputError, match="only an agent token may be limited to scopes"):
        memory.tokens.create("alice", "reviewer", by=alice, scopes=["acme"])
    for scopes, message in (
        ([], "needs at least one scope"),
        (["acme\n"], "control character"),
        ([" acme"], "no space at either end"),
        (["x" * 201], "1 to 200 characters"),
        ([f"s{i}" for i in range(101)], "at most 100"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            memory.tokens.create("acme-bot", "agent", scopes=scopes)
    assert memory.tokens.list() == []  # nothing half made


def test_a_rotation_keeps_the_scopes_of_the_token_it_replaces(memory: Memory) -> None:
    """Rotating a limited token must not widen it to every account unasked."""
    memory.tokens.create("acme-bot", "agent", scopes=["acme"])
    _, rotated = memory.tokens.create("acme-bot", "agent", replace=True)
    assert rotated.scopes == ["acme"]
    _, moved = memory.tokens.create("acme-bot", "agent", replace=True, scopes=["globex"])
    assert moved.scopes == ["globex"]
    memory.tokens.create("acme-bot", "agent", scopes=["acme"])  # two active, reaching differently
    with pytest.raises(InvalidInputError, match="reach different scopes"):
        memory.tokens.create("acme-bot", "agent", replace=True)
    assert [t.scopes for t in memory.tokens.list() if t.revoked_at is None] == [["globex"], ["acme"]]


def test_verify_finds_a_token_whose_limit_was_lifted_behind_amems_back(memory: Memory) -> None:
    _, info = memory.tokens.create("acme-bot", "agent", scopes=["acme"])
    with memory.ledger.engine.begin() as conn:
        conn.execute(sa.update(api_tokens).where(api_tokens.c.id == info.id).values(scopes=None))
    report = memory.verify()
    assert not report.ok
    # the wording is integrity's (amem/services/integrity.py): the token and its scopes are named
    assert any(info.id in str(p) and "scopes" in str(p) for p in report.problems), report.problems


def test_a_named_scope_is_read_as_an_input_keeps_it_and_an_empty_one_is_refused() -> None:
    """Every interface passes on what the grant returns: " acme" is acme, for a limited caller and
    an unlimited one; "" is never "every scope"."""
    limited, everyone = ScopeGrant.of(["acme"], holder="token 'acme-bot'"), ScopeGrant.everything()
    for grant in (limited, everyone):
        assert grant.require(" acme ") == "acme"
        assert grant.within("acme\t") == ["acme"] and grant.narrowed(" acme") == ["acme"]
        assert grant.named(None) is None and grant.named(" acme") == "acme"
        for blank, message in (("", "scope is empty"), ("  ", "scope is empty"), ("\u200b", "shows nothing")):
            with pytest.raises(InvalidInputError, match=message):
                grant.within(blank)
            with pytest.raises(InvalidInputError, match=message):
                grant.narrowed(blank)
    assert everyone.narrowed(None) is None and limited.narrowed(None) == ["acme"]


def test_a_batch_scope_that_is_no_scope_is_the_inputs_mistake_not_another_account() -> None:
    """A limited grant answered an empty, invisible or two-line scope of a batch with "may not use
    the scope of 1 input(s)" (403), where one input's is 422 naming the problem: the scopes are
    read first, each wrong one named by its position, then the grant decides on the rest."""
    from amem.errors import InvalidBatchInputError

    grant = ScopeGrant.of(["acme"], holder="token 'acme-sync'")
    with pytest.raises(InvalidBatchInputError) as refused:
        grant.require_all(["acme", "   ", "\u200b", "ac\nme", "globex"])
    assert [p for p, _ in refused.value.problems] == [2, 3, 4]
    assert "scope is empty" in str(refused.value) and "shows nothing" in str(refused.value)
    with pytest.raises(PermissionDeniedError, match="input 2: scope 'globex'"):
        grant.require_all(["acme", "globex"])
    assert grant.require_all([" acme", "acme"]) == ["acme", "acme"]
