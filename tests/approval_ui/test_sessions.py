"""How long a console sign-in lasts: a changed password, a sign-out or a reviewer taken out of the
policy ends the open sessions and the saved re-sign-in cookie, before the next decision."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from amem.domain.models import Proposal, ProposalStatus
from amem.memory import Memory
from amem.policy import load_policy
from amem.services.accounts import hash_password
from approval_ui.auth import COOKIE_NAME
from approval_ui.state import ACCOUNT_KEY, REMEMBER_KEY
from tests.approval_ui.conftest import APP, PASSWORD, plain
from tests.factories import llm_proposer, said

FORM = ["Reviewer", "Password"]


def _signed_in(reviewer: str = "bob") -> AppTest:
    """A new browser session signed in through the password form."""
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    fields = {t.label: t for t in at.text_input}
    fields["Reviewer"].input(reviewer)
    fields["Password"].input(PASSWORD)
    next(b for b in at.button if b.label == "Sign in").click()
    at.run()
    assert at.session_state[ACCOUNT_KEY] == reviewer
    return at


def _cookie(at: AppTest) -> str:
    """The re-sign-in cookie the session asked the browser to keep."""
    token, _expires = at.session_state[REMEMBER_KEY]
    return str(token)


def _with_cookie(monkeypatch: pytest.MonkeyPatch, token: str) -> AppTest:
    """A new browser session (a reload, a new tab) that sends ``token`` as the console's cookie."""
    import streamlit.runtime.context as context

    monkeypatch.setattr(context.ContextProxy, "cookies", property(lambda _self: {COOKIE_NAME: token}))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _held(mem: Memory, text: str) -> tuple[str, Proposal]:
    """An input waiting in the queue: its item key and its held proposal."""
    note = said(mem, text)
    p = mem.propose(
        note.id,
        "next_step",
        "book a demo",
        reason="said",
        proposer=llm_proposer(mem),
        raw_log_ids=note.raw_log_ids,
    )
    assert p.status == ProposalStatus.PENDING
    return note.raw_log_ids[0], p


def _install_reviewers(mem: Memory, edit: str, replacement: str) -> None:
    """Edit the reviewers file (``edit`` -> ``replacement``) and install the policy, as an admin would."""
    policy = Path(os.environ["AMEM_POLICY"])
    reviewers = policy.parent / "reviewers.yaml"
    text = reviewers.read_text(encoding="utf-8")
    assert edit in text
    reviewers.write_text(text.replace(edit, replacement), encoding="utf-8")
    mem.install_policy(load_policy(str(policy)), by=mem.authentication.signed_in("alice", method="test"))


def _change_bobs_password(mem: Memory, password_hash: str) -> None:
    new = hash_password("a-brand-new-pass-2", rounds=4)
    _install_reviewers(
        mem,
        f'roles: [sales_lead], password_hash: "{password_hash}"',
        f'roles: [sales_lead], password_hash: "{new}"',
    )


def _warning(at: AppTest) -> str:
    return plain(" ".join(w.value for w in at.warning))


def test_a_changed_password_ends_an_open_session_before_its_next_decision(
    mem: Memory, password_hash: str
) -> None:
    key, p = _held(mem, "Acme call: next step book a demo")
    at = _signed_in("bob")
    assert at.button(key=f"approve_item_{key}")
    _change_bobs_password(mem, password_hash)
    at.button(key=f"approve_item_{key}").click().run()  # the page drawn before the change
    assert not at.exception, [e.value for e in at.exception]
    assert mem.proposal(p.id).status == ProposalStatus.PENDING
    assert ACCOUNT_KEY not in at.session_state
    assert [t.label for t in at.text_input] == FORM
    assert "The password of bob was changed since this sign-in" in _warning(at)


def test_a_saved_sign_in_from_before_a_password_change_gets_the_form(
    mem: Memory, password_hash: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = _cookie(_signed_in("bob"))
    assert _with_cookie(monkeypatch, token).session_state[ACCOUNT_KEY] == "bob"  # a reload, before
    _change_bobs_password(mem, password_hash)
    at = _with_cookie(monkeypatch, token)
    assert ACCOUNT_KEY not in at.session_state
    assert [t.label for t in at.text_input] == FORM
    assert "Your saved sign-in has ended: the password of bob was changed" in _warning(at)
    assert password_hash not in token and "$2b$" not in token  # the cookie holds a digest only


def test_signing_out_ends_the_saved_sign_in_and_the_other_open_tabs(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, p = _held(mem, "Acme call: next step book a demo")
    tab1, tab2 = _signed_in("bob"), _signed_in("bob")
    token = _cookie(tab1)
    tab1.button(key="amem_sign_out").click().run()
    assert [t.label for t in tab1.text_input] == FORM

    copied = _with_cookie(monkeypatch, token)  # the cookie, kept from before the sign-out
    assert ACCOUNT_KEY not in copied.session_state
    assert [t.label for t in copied.text_input] == FORM
    assert "Your saved sign-in has ended: bob signed out of the console" in _warning(copied)

    tab2.button(key=f"approve_item_{key}").click().run()
    assert mem.proposal(p.id).status == ProposalStatus.PENDING
    assert [t.label for t in tab2.text_input] == FORM
    assert "bob signed out of the console (in this or another tab)" in _warning(tab2)

    again = _signed_in("bob")  # signing in again works, and its cookie with it
    assert _with_cookie(monkeypatch, _cookie(again)).session_state[ACCOUNT_KEY] == "bob"


def test_a_saved_sign_in_of_a_reviewer_taken_out_of_the_policy_gets_the_form(
    mem: Memory, password_hash: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = _cookie(_signed_in("bob"))
    line = f'  bob: {{name: Bob Chen, roles: [sales_lead], password_hash: "{password_hash}"}}\n'
    _install_reviewers(mem, line, "")
    at = _with_cookie(monkeypatch, token)  # no traceback: the form, and why
    assert ACCOUNT_KEY not in at.session_state
    assert [t.label for t in at.text_input] == FORM
    assert re.search(r"saved sign-in has ended: bob is no longer a reviewer", _warning(at))
    fields = {t.label: t for t in at.text_input}
    fields["Reviewer"].input("alice")
    fields["Password"].input(PASSWORD)
    next(b for b in at.button if b.label == "Sign in").click()
    at.run()
    assert at.session_state[ACCOUNT_KEY] == "alice"


def test_a_reviewer_taken_out_of_the_policy_mid_session_is_told_before_their_click_is_dropped(
    mem: Memory, password_hash: str
) -> None:
    """Bob's open session ended without a word when he was taken off the reviewers: his click
    decided nothing (right) and the sign-in form came back with no reason, as if the console had
    lost his sign-in. It now says why, as for a changed password."""
    key, p = _held(mem, "Acme call: next step book a demo")
    at = _signed_in("bob")
    line = f'  bob: {{name: Bob Chen, roles: [sales_lead], password_hash: "{password_hash}"}}\n'
    _install_reviewers(mem, line, "")
    at.text_input(key=f"comment_{key}").input("as said")
    at.button(key=f"approve_item_{key}").click().run()  # the page drawn before the removal
    assert not at.exception, [e.value for e in at.exception]
    assert mem.proposal(p.id).status == ProposalStatus.PENDING
    assert ACCOUNT_KEY not in at.session_state
    assert [t.label for t in at.text_input] == FORM
    assert re.search(r"^bob is no longer a reviewer in .+: this session has ended", _warning(at))
