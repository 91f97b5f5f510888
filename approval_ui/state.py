"""What every page shares: the store, the signed-in reviewer, and messages that survive a rerun."""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, ParamSpec

import streamlit as st

from amem.config import Settings
from amem.errors import ConfigError, ledger_unreachable
from amem.memory import Memory, missing_sqlite_file
from amem.policy import Policy, load_policy
from amem.services.accounts import Account, account_for
from amem.services.authentication import AuthenticatedReviewer
from approval_ui.render import md_escape

#: session_state key holding the signed-in reviewer's identity (set by approval_ui.auth).
ACCOUNT_KEY = "amem_reviewer"
#: session_state key holding how that reviewer signed in (a SignIn), checked on every run.
SIGN_IN_KEY = "amem_signed_in"
#: session_state key holding why a sign-in ended, for the sign-in form to say once.
NOTICE_KEY = "amem_sign_in_notice"
#: session_state key holding the re-sign-in cookie to write (approval_ui.auth.remember_sign_in).
REMEMBER_KEY = "amem_remember_sign_in"
#: streamlit-authenticator's own session_state keys; "logout" set makes it ignore the cookie.
AUTHENTICATOR_KEYS = ("authentication_status", "username", "name", "email", "roles")
FLASH_KEY = "amem_flash"
FLASH_SHOWN_KEY = "amem_flash_shown"
#: session_state key holding the page the last run showed: its messages (flash) belong to it.
PAGE_KEY = "amem_page"
#: session_state key holding why a button's callback could not reach the ledger's database.
UNREACHABLE_KEY = "amem_ledger_unreachable"

FlashKind = Literal["success", "info", "warning", "error"]


@st.cache_resource(max_entries=4, show_spinner=False)
def _open_memory(
    home: str, database_url: str, policy_fingerprint: str, installed_sha256: str, _policy: Policy
) -> Memory:
    """One Memory (one connection pool) per store, policy file and installed policy version, shared
    by every session. The store must exist: a console that made an empty one at a mistyped
    AMEM_HOME would say "Nothing waiting" about the wrong ledger."""
    _require_ledger_file(database_url, Path(home))
    return Memory(home, database_url=database_url, policy=_policy, create=False)


def _require_ledger_file(database_url: str, home: Path) -> None:
    """Refuse a SQLite ledger whose file does not exist, naming it, before SQLite creates it empty
    (``amem ui`` passes even the default ledger as AMEM_DATABASE_URL). The file is read from the
    URL as SQLAlchemy reads it: a store path holding "#", "%" or "?" is escaped in its URL."""
    missing = missing_sqlite_file(database_url)
    if missing is None:
        return
    raise ConfigError(
        f"no amem ledger at {missing} (store {home}): the console opens an existing store and "
        "creates none. Check AMEM_HOME or AMEM_DATABASE_URL (`amem --home DIR ui`, `amem where` says "
        "which store a directory uses), or make the store first: `amem --home DIR init`."
    )


def memory() -> Memory:
    """The store named by AMEM_HOME / AMEM_DATABASE_URL / AMEM_POLICY.

    The policy is read on every run (a few milliseconds), so an edited policy or reviewers file
    takes effect at the next click instead of at the next restart.
    """
    settings = Settings.from_env()
    policy = load_policy(settings.policy_path)
    fingerprint = hashlib.sha256(policy.model_dump_json().encode("utf-8")).hexdigest()
    key = (str(settings.home.resolve()), settings.database_url, fingerprint)
    mem = _open_memory(*key, "", policy)
    installed = mem.installed_policy()  # one row: a policy installed since reopens the store under it
    opened = mem.policy_in_force.installed
    if (installed.sha256 if installed else None) != (opened.sha256 if opened else None):
        mem = _open_memory(*key, installed.sha256 if installed else "", policy)
    return mem


@dataclass(frozen=True)
class SignIn:
    """How a session signed in: whom, the digest of the password hash it was checked against
    (accounts.password_digest, never the hash), and when (seconds since the epoch; a re-sign-in
    cookie keeps the time of the password sign-in it came from)."""

    reviewer: str
    password_digest: str
    at: float


#: Reviewer -> when they last signed out of this console process. A sign-out ends every session
#: and re-sign-in cookie of theirs made before it, here; it lives in this process's memory only.
_SIGNED_OUT: dict[str, float] = {}
_SIGNED_OUT_LOCK = threading.Lock()


def note_sign_out(reviewer: str) -> None:
    """Record that ``reviewer`` signed out now, ending their earlier sign-ins in this process."""
    with _SIGNED_OUT_LOCK:
        _SIGNED_OUT[reviewer] = time.time()


def sign_in_problem(account: Account, password_digest: str, at: float) -> str | None:
    """Why a sign-in of ``account`` made at ``at`` against ``password_digest`` no longer holds
    under the policy in force (the account comes from it), or None while it holds."""
    if password_digest != account.password_digest:
        return f"The password of {account.id} was changed since this sign-in: sign in with the new one."
    with _SIGNED_OUT_LOCK:
        signed_out = _SIGNED_OUT.get(account.id)
    if signed_out is not None and at <= signed_out:
        return (
            f"{account.id} signed out of the console (in this or another tab) since this sign-in: "
            "sign in again."
        )
    return None


def record_sign_in(account: Account, at: float | None = None) -> SignIn:
    """Sign this session in as ``account``, tied to its password hash as it is now."""
    sign_in = SignIn(account.id, account.password_digest, time.time() if at is None else at)
    st.session_state[ACCOUNT_KEY] = account.id
    st.session_state[SIGN_IN_KEY] = sign_in
    return sign_in


def end_session(notice: str | None = None) -> None:
    """Sign this session out: identity, the cookie it would write, streamlit-authenticator's keys
    (set to None, as its own logout does) and "logout", so the saved cookie is ignored and deleted
    by the sign-in form. ``notice``: why, said once by that form."""
    for key in (ACCOUNT_KEY, SIGN_IN_KEY, REMEMBER_KEY):
        st.session_state.pop(key, None)
    for key in AUTHENTICATOR_KEYS:
        st.session_state[key] = None
    st.session_state["logout"] = True
    if notice:
        st.session_state[NOTICE_KEY] = notice


def signed_in_account(policy: Policy) -> Account | None:
    """The reviewer this session signed in as, while that sign-in holds under ``policy`` (the
    policy in force): still a reviewer, with the password hash they signed in with, not signed out
    since. One that no longer holds ends the session here, keeping why for the sign-in form.

    Behind a trusted proxy, which vouches for every request itself, only the first is checked.
    """
    identity = st.session_state.get(ACCOUNT_KEY)
    account = account_for(policy, identity)
    if os.environ.get("AMEM_UI_TRUSTED_HEADER"):
        return account
    if account is None:
        if identity:  # signed in, then taken off the reviewers: say so rather than sign out silently
            where = policy.source or "the policy in force"
            end_session(
                f"{identity} is no longer a reviewer in {where}: this session has ended, and nothing "
                "was decided as them since."
            )
        return None
    sign_in = st.session_state.get(SIGN_IN_KEY)
    if not isinstance(sign_in, SignIn):  # an identity put into session_state directly (tests, bench)
        sign_in = record_sign_in(account)
    problem = (
        f"This session signed in as {sign_in.reviewer}, not {account.id}: sign in again."
        if sign_in.reviewer != account.id
        else sign_in_problem(account, sign_in.password_digest, sign_in.at)
    )
    if problem is not None:
        end_session(problem)
        return None
    return account


def current_account() -> Account:
    """The signed-in reviewer; the entry script stops before any page runs without one."""
    account = signed_in_account(memory().policy)
    if account is None:  # a page opened on its own (tests) without signing in
        st.error(md_escape(st.session_state.get(NOTICE_KEY) or "Sign in first."))
        st.stop()
    return account


def callback_account() -> Account | None:
    """The signed-in reviewer for a button's callback (a decision, a token), checked against the
    policy in force: callbacks run before the page, so before the entry script's check. None when
    the sign-in no longer holds: the callback then does nothing, and the run that follows shows
    the sign-in form and why."""
    return signed_in_account(memory().policy)


def authenticated(mem: Memory, account: Account) -> AuthenticatedReviewer:
    """The signed-in reviewer as governance takes them: the console vouches for its own sign-in
    (password form or trusted proxy header), and governance still checks the policy in force."""
    method = "trusted-header" if os.environ.get("AMEM_UI_TRUSTED_HEADER") else "console"
    return mem.authentication.signed_in(account.id, method=method)


def on_page(page: str) -> None:
    """The entry script names the page this run shows: messages queued on another page (a
    decision on the queue, a token made) are about what was done there, and are dropped."""
    if st.session_state.get(PAGE_KEY) != page:
        clear_flashes()
    st.session_state[PAGE_KEY] = page


def flash(kind: FlashKind, text: str) -> None:
    """Queue a message for the top of the page (callbacks run before the page draws). It stays
    through reruns nobody asked for (a browser component reporting back) until the reviewer's next
    action replaces it or they leave the page."""
    if st.session_state.get(FLASH_SHOWN_KEY):
        st.session_state[FLASH_KEY] = []
        st.session_state[FLASH_SHOWN_KEY] = False
    st.session_state.setdefault(FLASH_KEY, []).append((kind, text))


def show_flashes() -> None:
    for kind, text in st.session_state.get(FLASH_KEY, []):
        getattr(st, kind)(md_escape(text))
    st.session_state[FLASH_SHOWN_KEY] = True


def clear_flashes() -> None:
    """On another page: the review queue's messages are about what was done there."""
    st.session_state.pop(FLASH_KEY, None)


def unreachable_message(reason: str) -> str:
    """What the console says when the ledger's database cannot be reached, as the CLI does."""
    try:
        ledger = Settings.from_env().shown_database_url
    except Exception:  # an unreadable URL: the reason says enough
        ledger = "the ledger"
    return (
        f"The ledger database cannot be reached ({reason}): {ledger}. Check that its server runs "
        "and the URL the console was given (AMEM_DATABASE_URL); the page comes back at the next "
        "click once it answers."
    )


def unreachable_notice() -> str | None:
    """Why a button's callback of this run found the ledger unreachable (said once), or None."""
    return st.session_state.pop(UNREACHABLE_KEY, None)


_P = ParamSpec("_P")


def guarded(callback: Callable[_P, None]) -> Callable[_P, None]:
    """A button's callback that reads or writes the ledger: callbacks run before the entry script,
    so one that finds the ledger's database unreachable leaves that for the page to say instead of
    a traceback."""

    @functools.wraps(callback)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> None:
        try:
            callback(*args, **kwargs)
        except Exception as exc:
            reason = ledger_unreachable(exc)
            if reason is None:
                raise
            st.session_state[UNREACHABLE_KEY] = unreachable_message(reason)

    return run
