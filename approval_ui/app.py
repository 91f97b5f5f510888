"""Entry script of the approval console (``amem ui`` runs ``streamlit run`` on this file).

Signs the reviewer in, then hands over to the page they chose. Reads the store from AMEM_HOME,
AMEM_DATABASE_URL and AMEM_POLICY, like every other amem entry point.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import streamlit as st

from amem.errors import AmemError, ledger_unreachable
from approval_ui import auth, state
from approval_ui.render import md_escape

st.set_page_config(
    page_title="amem · approval console",
    page_icon=":material/fact_check:",
    layout="wide",
    initial_sidebar_state="expanded",
)


def _console() -> None:
    """Sign in, then the chosen page."""
    try:
        mem = state.memory()
    except AmemError as exc:  # no store, an old schema, a broken policy: say what to do, no traceback
        st.error(md_escape(str(exc)), icon=":material/error:")
        st.stop()
    account = auth.require_sign_in(mem)

    pages = [
        st.Page("views/review_queue.py", title="Review queue", icon=":material/inbox:", default=True),
        st.Page("views/note_explorer.py", title="Note explorer", icon=":material/search:"),
        st.Page("views/account_facts.py", title="Account facts", icon=":material/fact_check:"),
        st.Page("views/audit_log.py", title="Audit log", icon=":material/verified_user:"),
        st.Page("views/policy.py", title="Policy", icon=":material/policy:"),
        st.Page("views/my_tokens.py", title="Your tokens", icon=":material/key:"),
    ]
    page = st.navigation(pages)
    auth.resume_address(pages, page)  # a link followed before signing in: its page, now
    state.on_page(page.url_path)  # another page's messages are about what was done there

    with st.sidebar:
        st.markdown(f"**{md_escape(account.name)}**")
        roles = ", ".join(account.roles) or "no role"
        accounts_of = (
            ""
            if account.scopes is None
            else f" · accounts {', '.join(account.scopes)}"
            if account.scopes
            else " · no account"  # `scopes: []`: governance refuses their decisions everywhere
        )
        st.caption(
            md_escape(f"{account.id} · {roles}{accounts_of}" + (" · read-only" if account.read_only else ""))
        )
        if not auth.trusted_header():
            auth.remember_sign_in()
            st.button("Sign out", on_click=auth.sign_out, icon=":material/logout:", key="amem_sign_out")
        st.divider()
        st.caption(md_escape(f"Ledger: {mem.settings.shown_database_url}"))
        st.caption(md_escape(f"Policy: {mem.policy_in_force.describe()}"))
        if mem.governance.mismatch:
            st.warning(md_escape(mem.governance.mismatch), icon=":material/policy:")

    page.run()


def _say_unreachable(text: str) -> None:
    st.error(md_escape(text), icon=":material/cloud_off:")


notice = state.unreachable_notice()  # a button's callback found the ledger's database gone
if notice is not None:
    _say_unreachable(notice)
try:
    _console()
except Exception as exc:  # the ledger's database down or missing, at the first open or since
    reason = ledger_unreachable(exc)
    if reason is None:
        raise
    if notice is None:
        _say_unreachable(state.unreachable_message(reason))
