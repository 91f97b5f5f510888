"""What every page shares: the store, the signed-in reviewer, and messages that survive a rerun."""

from __future__ import annotations

import hashlib
import os
from typing import Literal

import streamlit as st

from amem.config import Settings
from amem.memory import Memory
from amem.policy import Policy, load_policy
from amem.services.accounts import Account, account_for
from amem.services.authentication import AuthenticatedReviewer
from approval_ui.render import md_escape

#: session_state key holding the signed-in reviewer's identity (set by approval_ui.auth).
ACCOUNT_KEY = "amem_reviewer"
FLASH_KEY = "amem_flash"
FLASH_SHOWN_KEY = "amem_flash_shown"

FlashKind = Literal["success", "info", "warning", "error"]


@st.cache_resource(max_entries=4, show_spinner=False)
def _open_memory(
    home: str, database_url: str, policy_fingerprint: str, installed_sha256: str, _policy: Policy
) -> Memory:
    """One Memory (one connection pool) per store, policy file and installed policy version, shared
    by every session."""
    return Memory(home, database_url=database_url, policy=_policy)


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


def signed_in_account(policy: Policy) -> Account | None:
    """The reviewer this session signed in as, if they are still a reviewer of the policy."""
    return account_for(policy, st.session_state.get(ACCOUNT_KEY))


def current_account() -> Account:
    """The signed-in reviewer; the entry script stops before any page runs without one."""
    account = signed_in_account(memory().policy)
    if account is None:  # a page opened on its own (tests) without signing in
        st.error("Sign in first.")
        st.stop()
    return account


def authenticated(mem: Memory, account: Account) -> AuthenticatedReviewer:
    """The signed-in reviewer as governance takes them: the console vouches for its own sign-in
    (password form or trusted proxy header), and governance still checks the policy in force."""
    method = "trusted-header" if os.environ.get("AMEM_UI_TRUSTED_HEADER") else "console"
    return mem.authentication.signed_in(account.id, method=method)


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
