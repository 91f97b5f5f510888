"""Your tokens: a reviewer makes, rotates and revokes their own tokens in the console, each one on
the record, and never anyone else's."""

from __future__ import annotations

import pytest

from amem.errors import PermissionDeniedError
from amem.memory import Memory
from amem.services.tokens import NotAuthenticatedError
from tests.approval_ui.conftest import open_console, texts
from tests.factories import signed_in


def test_a_reviewer_makes_a_token_that_is_shown_once_and_acts_as_them(mem: Memory) -> None:
    at = open_console("alice", "tokens")
    assert "You have no token yet" in texts(at)

    at.number_input[0].set_value(30)
    at.button(key="FormSubmitter:amem_new_token-Make a token").click().run()

    (shown,) = [c.value for c in at.code]
    assert mem.tokens.authenticate(shown).identity == "alice"
    (token,) = mem.tokens.reviewer_tokens("alice")
    assert token.created_by == "alice" and (token.expires_at - token.created_at).days == 30
    (row,) = at.dataframe[0].value.to_dict("records")
    assert row["token"] == token.id
    assert row["made"].endswith(" UTC") and row["expires"].endswith(" UTC")  # whose clock: said
    at.run()  # the next rerun: the secret is gone from the page
    assert shown not in texts(at)


def test_rotation_revokes_the_old_token_in_the_same_step(mem: Memory) -> None:
    old, _ = mem.tokens.create("alice", "reviewer", by=signed_in(mem, "alice"))
    at = open_console("alice", "tokens")

    assert at.checkbox[0].value is True  # with a token already, rotation is the default
    at.button(key="FormSubmitter:amem_new_token-Make a token").click().run()

    with pytest.raises(NotAuthenticatedError, match="revoked"):
        mem.tokens.authenticate(old)
    assert [e.action for e in mem.tokens.history()][-2:] == ["revoked", "created"]


def test_a_reviewer_revokes_their_own_token_and_no_one_elses(mem: Memory) -> None:
    token, info = mem.tokens.create("alice", "reviewer", by=signed_in(mem, "alice"))
    mem.tokens.create("bob", "reviewer", by=signed_in(mem, "bob"))
    mem.tokens.create("crm-sync", "agent")

    at = open_console("alice", "tokens")
    assert [b.label for b in at.button if b.label.startswith("Revoke")] == [f"Revoke {info.id}"]
    at.button(key=f"amem_revoke_{info.id}").click().run()

    assert "revoked" in texts(at)
    with pytest.raises(NotAuthenticatedError):
        mem.tokens.authenticate(token)
    assert mem.tokens.history()[-1].by == "alice"
    bob_id = mem.tokens.reviewer_tokens("bob")[0].id
    with pytest.raises(PermissionDeniedError, match="only their own"):
        mem.tokens.revoke_own(bob_id, by=signed_in(mem, "alice"))
    agent_id = next(t.id for t in mem.tokens.list() if t.name == "crm-sync")
    with pytest.raises(PermissionDeniedError, match="only their own"):
        mem.tokens.revoke_own(agent_id, by=signed_in(mem, "alice"))


def test_a_pages_messages_stay_on_it(mem: Memory) -> None:
    """ "Approved item ..." followed the reviewer to "Your tokens", "Token ... made." to the review
    queue, and the Policy page kept the queue's message for when they came back: each told of
    something done elsewhere as if done there. A page's messages now go when the reviewer leaves it."""
    from tests.approval_ui.conftest import PAGES, plain
    from tests.approval_ui.test_review_queue import hold
    from tests.factories import said

    note = said(mem, "Acme: next step is to send the quote.")
    hold(mem, note, "next_step", "send the quote")
    at = open_console("alice")
    at.button(key=f"approve_item_{note.raw_log_ids[0]}").click().run()
    assert "Approved item" in texts(at)
    for page in ("policy", "tokens"):
        at.switch_page(PAGES[page]).run()
        assert "Approved item" not in texts(at), page
        at.switch_page(PAGES["queue"]).run()
        assert "Approved item" not in texts(at), page

    at.switch_page(PAGES["tokens"]).run()
    at.button(key="FormSubmitter:amem_new_token-Make a token").click().run()
    assert " made." in plain(texts(at))
    at.switch_page(PAGES["queue"]).run()
    assert not at.exception and " made." not in plain(texts(at))
