"""Signing reviewers in: a trusted proxy header, or a password checked by streamlit-authenticator.

The identities are the policy's reviewers (amem.services.accounts). Which of the two ways
applies is configuration, never the user's choice:

- AMEM_UI_TRUSTED_HEADER=X-Forwarded-User: a reverse proxy in front of the console has already
  authenticated the user and names them in that header. No password form is shown.
- otherwise: a sign-in form; the password is checked by the library's
  ``Authentication.with_password`` (the reviewer's bcrypt ``password_hash``; the same answer and
  the same time for a wrong name as for a wrong password; after ``MAX_FAILED_SIGN_INS`` failures of
  one name within ``SIGN_IN_WINDOW`` that name is refused until the window ends). A signed
  re-sign-in cookie, read and written with streamlit-authenticator, keeps the reviewer signed in
  across a reload or a new tab for AMEM_UI_COOKIE_DAYS days (default 1). Its secret is
  AMEM_UI_COOKIE_KEY (a long random secret shared by a team's console servers, so the cookie
  outlives a restart), else one the console's process makes when it starts and keeps in memory
  only (never in a file or an environment another process can read): the cookie then lasts until
  the console restarts.

Once signed in, the identity is kept in session_state (server side) under state.ACCOUNT_KEY,
with a state.SignIn: the digest of the password hash it was checked against and when. Every run,
and every decision before it is made, checks it against the policy in force
(state.signed_in_account): a changed password, a reviewer no longer listed, or a sign-out since
(in any tab) ends the session, saying why. The cookie carries the same digest and time, and is
refused on the same grounds. A sign-out ends the reviewer's sessions and earlier cookies in this
console process only: it is remembered in memory, so another console server sharing
AMEM_UI_COOKIE_KEY, or this one after a restart, still accepts a cookie copied before the
sign-out until it expires (the browser that signed out deletes its own).
"""

from __future__ import annotations

import os
import secrets
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import streamlit as st

from amem.errors import AmemError, SignInsLockedError
from amem.memory import Memory
from amem.policy import Policy
from amem.services.accounts import Account, account_for, authenticator_credentials, identity_from_headers
from amem.services.authentication import client_address
from approval_ui.render import md_escape
from approval_ui.state import (
    ACCOUNT_KEY,
    NOTICE_KEY,
    REMEMBER_KEY,
    end_session,
    note_sign_out,
    record_sign_in,
    sign_in_problem,
    signed_in_account,
)

COOKIE_NAME = "amem_console"
#: The page and query a link asked for before the reviewer signed in (resume_address).
WANTED_KEY = "amem_wanted_address"
#: The cookie's claims beside streamlit-authenticator's username and exp_date.
_DIGEST_CLAIM = "password_digest"
_SIGNED_IN_CLAIM = "signed_in_at"


def trusted_header() -> str | None:
    return os.environ.get("AMEM_UI_TRUSTED_HEADER") or None


def require_sign_in(mem: Memory) -> Account:
    """The signed-in reviewer; otherwise draws the sign-in and stops the run."""
    policy = mem.policy
    header = trusted_header()
    if header:
        return _from_proxy(policy, header)
    account = signed_in_account(policy)
    if account is not None:
        return account
    st.session_state.pop(ACCOUNT_KEY, None)
    _remember_address()
    _password_form(mem)
    st.stop()


def _remember_address() -> None:
    """The page and query a link asked for (a note's history sent in a chat), kept through the
    sign-in: the console's pages are only routed once a reviewer is signed in."""
    if WANTED_KEY not in st.session_state:
        path = urlsplit(st.context.url or "").path.rstrip("/").rsplit("/", 1)[-1]
        st.session_state[WANTED_KEY] = (path, st.query_params.to_dict())


def resume_address(pages: list[Any], current: Any) -> None:
    """After a sign-in, go to the page and query the link asked for (kept by _remember_address),
    once; the default page when it named none, or one that does not exist."""
    wanted = st.session_state.pop(WANTED_KEY, None)
    if wanted is None:
        return
    path, params = wanted
    target = next((p for p in pages if path and p.url_path == path), None)
    if target is not None and target.url_path != current.url_path:
        st.switch_page(target, query_params=params)
    elif params and not st.query_params.to_dict():
        st.query_params.from_dict(params)


def _from_proxy(policy: Policy, header: str) -> Account:
    account = identity_from_headers(policy, st.context.headers, header)
    if account is None:
        st.error(
            md_escape(
                f"No reviewer identity: the proxy must send {header} with the name of a reviewer "
                f"listed in {policy.source or 'the policy'}."
            )
        )
        st.stop()
    st.session_state[ACCOUNT_KEY] = account.id
    return account


def _authenticator(policy: Policy) -> object:
    import streamlit_authenticator as stauth

    return stauth.Authenticate(
        authenticator_credentials(policy),
        cookie_name=COOKIE_NAME,
        cookie_key=_cookie_key(),
        cookie_expiry_days=_cookie_days(),
        auto_hash=False,
        login_sleep_time=0,
    )


def _password_form(mem: Memory) -> None:
    policy = mem.policy
    _, middle, _ = st.columns([1, 1.2, 1])
    with middle:
        st.title("amem")
        st.caption("Approval console · sign in with your reviewer account")
        if not authenticator_credentials(policy)["usernames"]:
            st.warning(
                md_escape(
                    f"No reviewer in {policy.source or 'the policy'} has a password yet. "
                    "Make a hash with `amem reviewers hash-password` and put it in the reviewer's "
                    "password_hash, or run the console behind a proxy with AMEM_UI_TRUSTED_HEADER."
                )
            )
            return
        # a re-sign-in cookie signs the reviewer in without the form
        authenticator = _authenticator(policy)
        if st.session_state.get("logout"):
            authenticator.cookie_controller.delete_cookie()  # type: ignore[attr-defined]
        _sign_in_from_cookie(policy, authenticator)
        notice = st.session_state.pop(NOTICE_KEY, None)
        if notice:
            st.warning(md_escape(notice), icon=":material/logout:")
        with st.form("amem_sign_in"):
            st.subheader("Sign in")
            name = st.text_input("Reviewer", autocomplete="off")
            password = st.text_input("Password", type="password", autocomplete="off")
            submitted = st.form_submit_button("Sign in")
        if not submitted:
            return
        try:
            # counted per client address, so a guesser elsewhere cannot lock the reviewer out
            reviewer = mem.authentication.with_password(name, password, source=_client_address())
        except SignInsLockedError as exc:
            st.error(md_escape(f"{str(exc)[:1].upper()}{str(exc)[1:]}."))
            return
        except AmemError:  # a wrong name, password, an agent's name, no password set: one answer
            st.error("Wrong reviewer name or password.")
            return
        account = account_for(policy, reviewer.id)
        if account is None:
            st.error("Wrong reviewer name or password.")
            return
        sign_in = record_sign_in(account)
        st.session_state["logout"] = None
        st.session_state[REMEMBER_KEY] = _cookie_token(account.id, account.password_digest, sign_in.at)
        st.rerun()


def _sign_in_from_cookie(policy: Policy, authenticator: Any) -> None:
    """Sign in with the re-sign-in cookie (read by streamlit-authenticator), when it still holds
    as a password sign-in would: its reviewer is in the policy in force with the password hash the
    cookie's digest names, and has not signed out since it was made. Otherwise the cookie is
    deleted and forgotten, the form is shown, and it says why."""
    from streamlit_authenticator.utilities.exceptions import LoginError

    try:
        authenticator.login(location="unrendered")
    except LoginError:  # the cookie names no reviewer with a password in the policy any more
        claims = _cookie_claims()
        who = claims.get("username") if claims else None
        _refuse_cookie(
            authenticator, f"{who or 'Its reviewer'} is no longer a reviewer with a password here."
        )
        return
    if not st.session_state.get("authentication_status"):
        return
    account = account_for(policy, st.session_state.get("username"))
    claims = _cookie_claims()
    if account is None or claims is None:
        _refuse_cookie(authenticator, "it names no reviewer of the policy.")
        return
    digest, at = claims.get(_DIGEST_CLAIM), claims.get(_SIGNED_IN_CLAIM)
    if not isinstance(digest, str) or not isinstance(at, int | float):  # made before cookies carried them
        _refuse_cookie(authenticator, "it was made by an older console.")
        return
    problem = sign_in_problem(account, digest, float(at))
    if problem is not None:
        _refuse_cookie(authenticator, problem)
        return
    record_sign_in(account, at=float(at))
    st.rerun()


def _refuse_cookie(authenticator: Any, why: str) -> None:
    """Forget a re-sign-in cookie that no longer holds: the session stays signed out, the form says
    why, and the browser's copy is deleted."""
    end_session(f"Your saved sign-in has ended: {why[:1].lower()}{why[1:]}" if why else None)
    authenticator.cookie_controller.delete_cookie()


def _cookie_claims() -> dict[str, Any] | None:
    """The re-sign-in cookie's claims, if it is one this console signed and unexpired."""
    import jwt

    token = st.context.cookies.get(COOKIE_NAME)
    if not isinstance(token, str):
        return None
    try:
        claims = jwt.decode(token, _cookie_key(), algorithms=["HS256"])
    except jwt.PyJWTError:
        return None
    return claims if isinstance(claims, dict) else None


#: The re-sign-in cookie's secret when AMEM_UI_COOKIE_KEY is not set: made once a console process,
#: when this module is first imported, and held in its memory only.
_PROCESS_COOKIE_KEY = secrets.token_hex(32)


def _cookie_key() -> str:
    return os.environ.get("AMEM_UI_COOKIE_KEY") or _PROCESS_COOKIE_KEY


def _cookie_days() -> float:
    """AMEM_UI_COOKIE_DAYS: a number of days from 0 (no cookie kept) to 365, said naming the
    variable when it is anything else."""
    from amem.errors import ConfigError

    given = os.environ.get("AMEM_UI_COOKIE_DAYS", "1")
    try:
        days = float(given)
    except ValueError:
        days = float("nan")
    if not 0 <= days <= 365:
        raise ConfigError(
            f"AMEM_UI_COOKIE_DAYS={given!r}: give a number of days from 0 to 365 (the default is 1)"
        )
    return days


def _cookie_token(username: str, password_digest: str, signed_in_at: float) -> tuple[str, datetime]:
    """A re-sign-in token in streamlit-authenticator's format (HS256 JWT of username and expiry),
    with the digest of the password hash it was signed in with and when, so that a password change
    or a sign-out since ends it (_sign_in_from_cookie)."""
    import jwt

    expires = datetime.now() + timedelta(days=_cookie_days())
    claims = {
        "username": username,
        "exp_date": expires.timestamp(),
        _DIGEST_CLAIM: password_digest,
        _SIGNED_IN_CLAIM: signed_in_at,
    }
    token = jwt.encode(claims, _cookie_key(), algorithm="HS256")
    return token, expires


def remember_sign_in() -> None:
    """Keep the re-sign-in cookie on the page for the session after a password sign-in.

    A small browser component writes it; the same arguments on every run keep that component
    mounted without writing again, however quickly the reviewer clicks on.
    """
    remembered = st.session_state.get(REMEMBER_KEY)
    if not remembered:
        return
    import extra_streamlit_components as stx

    token, expires = remembered
    stx.CookieManager(key="amem_cookies").set(COOKIE_NAME, token, key="amem_cookie_set", expires_at=expires)


def sign_out() -> None:
    """Sign the reviewer out (button callback): this session, and in this console process their
    other sessions and every re-sign-in cookie made before now, which a copied cookie or a tab
    left open would otherwise keep using. A proxy identity cannot sign out here."""
    reviewer = st.session_state.get(ACCOUNT_KEY)
    if isinstance(reviewer, str):
        note_sign_out(reviewer)
    end_session()


def _client_address() -> str | None:
    """The client's address as the console's server sees it (None on localhost, where every
    session is one source), or behind a reverse proxy listed in AMEM_UI_TRUSTED_PROXIES, the
    address that proxy saw (amem.services.authentication.client_address). It spreads failed
    sign-ins over addresses (so a guesser elsewhere cannot lock a reviewer out), while the cap on
    failures from all addresses together bounds what spoofed ones can try."""
    address = st.context.ip_address
    peer = address if isinstance(address, str) else None
    forwarded = st.context.headers.get_all("X-Forwarded-For") if peer is not None else []
    return client_address(peer, forwarded, os.environ.get("AMEM_UI_TRUSTED_PROXIES"))
