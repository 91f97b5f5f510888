"""Your tokens: a reviewer's own tokens, which stand in for their password where no console is
(the CLI's AMEM_REVIEWER_TOKEN, the HTTP API). Made, rotated and revoked here by the signed-in
reviewer, each a chained record the audit log shows; the token itself is shown once."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from amem.domain.models import utcnow
from amem.errors import AmemError
from amem.services.tokens import REVIEWER_TOKEN_DAYS, TokenInfo
from approval_ui import state
from approval_ui.render import dataframe_height, fmt_time, md_escape

#: Where a token made on this page is kept for the one rerun that shows it.
SHOWN_ONCE_KEY = "amem_token_shown_once"


def _status(token: TokenInfo) -> str:
    if token.revoked_at is not None:
        return f"revoked {fmt_time(token.revoked_at)}"
    if token.expires_at is not None and token.expires_at <= utcnow():
        return "expired"
    if token.expires_soon():
        return "active, expires soon: make the next one"
    return "active"


def _create(days: int, rotate: bool) -> None:
    mem, account = state.memory(), state.callback_account()
    if account is None:  # signed out meanwhile: the page says so instead
        return
    try:
        token, info = mem.tokens.create(
            account.id,
            "reviewer",
            by=state.authenticated(mem, account),
            expires_in_days=days,
            replace=rotate,
        )
    except AmemError as exc:
        state.flash("error", str(exc))
        return
    st.session_state[SHOWN_ONCE_KEY] = (token, info.id)
    state.flash("success", f"Token {info.id} made" + (": your other tokens are revoked." if rotate else "."))


@state.guarded
def _revoke(token_id: str) -> None:
    mem, account = state.memory(), state.callback_account()
    if account is None:  # signed out meanwhile: the page says so instead
        return
    try:
        mem.tokens.revoke_own(token_id, by=state.authenticated(mem, account))
    except AmemError as exc:
        state.flash("error", str(exc))
        return
    state.flash("success", f"Token {token_id} revoked: it is refused from the next request on.")


def main() -> None:
    mem, account = state.memory(), state.current_account()
    st.title("Your tokens")
    st.caption(
        md_escape(
            "A reviewer token stands in for your password where there is no console: "
            "AMEM_REVIEWER_TOKEN for the amem command, a bearer token for the HTTP API. "
            f"It lasts {REVIEWER_TOKEN_DAYS} days unless you choose otherwise; only you can make yours."
        )
    )
    state.show_flashes()
    shown = st.session_state.pop(SHOWN_ONCE_KEY, None)
    if shown:
        token, token_id = shown
        st.warning(
            md_escape(f"Token {token_id}: copy it now. It is shown once; amem keeps only its digest."),
            icon=":material/key:",
        )
        st.code(token, language=None)

    tokens = mem.tokens.reviewer_tokens(account.id)
    if tokens:
        rows = [
            {
                "token": t.id,
                "made": fmt_time(t.created_at),  # in UTC, and says so
                "expires": fmt_time(t.expires_at) if t.expires_at else "never",
                "last used": fmt_time(t.last_used_at) if t.last_used_at else "never",
                "status": _status(t),
            }
            for t in reversed(tokens)
        ]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=dataframe_height(len(rows)))
        active = [t for t in reversed(tokens) if t.revoked_at is None]
        for t in active:
            st.button(
                f"Revoke {t.id}",
                key=f"amem_revoke_{t.id}",
                on_click=_revoke,
                args=(t.id,),
                icon=":material/key_off:",
            )
    else:
        st.info("You have no token yet.", icon=":material/key:")

    with st.form("amem_new_token"):
        st.subheader("Make a token")
        days = st.number_input(
            "Expires in days", min_value=1, max_value=3650, value=REVIEWER_TOKEN_DAYS, step=1
        )
        rotate = st.checkbox(
            "Revoke my other tokens in the same step (rotation)",
            value=any(t.revoked_at is None for t in tokens),
        )
        if st.form_submit_button("Make a token", icon=":material/key:"):
            _create(int(days), rotate)
            st.rerun()


main()
