"""Signing in: the password form (streamlit-authenticator on the policy's bcrypt hashes), the
proxy header, and what each identity may see."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from amem.memory import Memory
from approval_ui.state import ACCOUNT_KEY
from tests.approval_ui.conftest import APP, PASSWORD, open_console, plain, texts


def _sign_in(at: AppTest, reviewer: str, password: str) -> AppTest:
    fields = {t.label: t for t in at.text_input}
    fields["Reviewer"].input(reviewer)
    fields["Password"].input(password)
    next(b for b in at.button if b.label == "Sign in").click()
    return at.run()


def test_nothing_shows_before_signing_in(mem: Memory) -> None:
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert [t.label for t in at.text_input] == ["Reviewer", "Password"]
    assert "Review queue" not in [t.value for t in at.title]


def test_the_right_password_signs_the_reviewer_in(mem: Memory) -> None:
    at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "bob", PASSWORD)
    assert not at.exception
    assert at.session_state[ACCOUNT_KEY] == "bob"
    assert "Review queue" in [t.value for t in at.title]
    assert "Bob Chen" in plain(texts(at))


def test_a_wrong_password_or_unknown_reviewer_is_refused(mem: Memory) -> None:
    at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "alice", "not-the-password")
    assert "Wrong reviewer name or password." in [e.value for e in at.error]
    assert ACCOUNT_KEY not in at.session_state
    at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "mallory", PASSWORD)
    assert "Wrong reviewer name or password." in [e.value for e in at.error]
    # carol is a reviewer without a password_hash: no password can sign her in
    at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "carol", PASSWORD)
    assert ACCOUNT_KEY not in at.session_state


def test_failed_sign_ins_lock_the_name_in_the_console(mem: Memory) -> None:
    """The console checks passwords through the library's Authentication, and shares its count of
    failures across runs and sessions: after five, the right password is refused until the window
    ends, and another reviewer still signs in."""
    from amem.services.authentication import MAX_FAILED_SIGN_INS

    at = AppTest.from_file(str(APP), default_timeout=60).run()
    for _ in range(MAX_FAILED_SIGN_INS):
        at = _sign_in(at, "alice", "not-the-password")
        assert [e.value for e in at.error] == ["Wrong reviewer name or password."]
    at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "alice", PASSWORD)
    locked = "Too many failed sign-ins for alice: try again in 15 minutes."
    assert [plain(e.value) for e in at.error] == [locked]
    assert ACCOUNT_KEY not in at.session_state
    at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "bob", PASSWORD)
    assert at.session_state[ACCOUNT_KEY] == "bob"


def test_a_guesser_at_another_address_does_not_lock_the_reviewer_out(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failures are counted by the client's address: five from a guesser's lock it, and alice,
    signing in from her own, is let in."""
    import approval_ui.auth
    from amem.services.authentication import MAX_FAILED_SIGN_INS

    monkeypatch.setattr(approval_ui.auth, "_client_address", lambda: "203.0.113.7")
    for _ in range(MAX_FAILED_SIGN_INS):
        at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "alice", "guess")
        assert [e.value for e in at.error] == ["Wrong reviewer name or password."]
    at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "alice", PASSWORD)
    assert [plain(e.value) for e in at.error] == [
        "Too many failed sign-ins for alice from this address: try again in 15 minutes."
    ]
    monkeypatch.setattr(approval_ui.auth, "_client_address", lambda: "198.51.100.2")
    at = _sign_in(AppTest.from_file(str(APP), default_timeout=60).run(), "alice", PASSWORD)
    assert at.session_state[ACCOUNT_KEY] == "alice"


def test_signing_out_returns_to_the_form(mem: Memory) -> None:
    at = open_console("alice")
    at.button(key="amem_sign_out").click().run()
    assert [t.label for t in at.text_input] == ["Reviewer", "Password"]
    assert ACCOUNT_KEY not in at.session_state


def test_an_identity_no_longer_in_the_policy_is_signed_out(mem: Memory) -> None:
    at = open_console(None)
    at.session_state[ACCOUNT_KEY] = "eve"  # e.g. removed from reviewers.yaml since she signed in
    at.run()
    assert [t.label for t in at.text_input] == ["Reviewer", "Password"]


def test_with_a_trusted_header_configured_no_password_form_is_offered(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AMEM_UI_TRUSTED_HEADER", "X-Forwarded-User")
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[ACCOUNT_KEY] = "alice"  # a session identity never replaces the proxy's word
    at.run()
    assert not at.text_input
    assert "the proxy must send X-Forwarded-User" in plain(" ".join(e.value for e in at.error))
    assert "Review queue" not in [t.value for t in at.title]
