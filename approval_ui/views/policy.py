"""Policy: the rules in force, readable. Which attributes apply at once, wait for review, or
never change; the rules that narrow them; and which roles approve what."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from amem.services.accounts import accounts
from approval_ui import state
from approval_ui.render import dataframe_height, md_escape


def _where_you_decide(scopes: tuple[str, ...] | None) -> str:
    """The accounts the policy limits a reviewer to, as the sidebar says them: `scopes: []` leaves
    none, and governance refuses their every decision."""
    if scopes is None:
        return ""
    if not scopes:
        return ", but in no account (the policy gives you none, so every decision of yours is refused)"
    return f", in the accounts {', '.join(scopes)} only"


def main() -> None:
    mem, account = state.memory(), state.current_account()
    overview = mem.policy_overview()
    st.title("Policy")
    st.caption(md_escape(f"In force from {overview.source or 'the built-in default'}"))
    # what the policy in force keeps that amem refuses in a new one (installed before the check),
    # and what its file would introduce: each says what to do, which a policy admin reads here
    for warning in mem.policy_in_force.warnings:
        st.warning(md_escape(warning), icon=":material/warning:")

    m = st.columns(4)
    modes = [a.mode for a in overview.attributes]
    m[0].metric("Applied at once", modes.count("auto"))
    m[1].metric("Wait for review", modes.count("review"))
    m[2].metric("Frozen", modes.count("frozen"))
    m[3].metric("Self-approval", "allowed" if overview.self_approval else "never")

    mine = [a.attribute for a in overview.attributes if set(account.roles) & set(a.approver_roles)]
    who = f"You ({account.id}, roles: {', '.join(account.roles) or 'none'})"
    mismatch = mem.policy_in_force.mismatch
    if mismatch:  # governance refuses every decision of this process: say so, not what one may decide
        st.warning(
            md_escape(
                f"{who} decide nothing in this console now: {mismatch}. Under the policy below you "
                "would decide: "
                + (", ".join(mine) if mine else "nothing (read-only)")
                + _where_you_decide(account.scopes)
                + "."
            ),
            icon=":material/badge:",
        )
    else:
        st.info(
            md_escape(
                f"{who} may decide: "
                + (", ".join(mine) if mine else "nothing (read-only)")
                + _where_you_decide(account.scopes)
                + ". Agents and LLMs can never approve."
            ),
            icon=":material/badge:",
        )

    st.subheader("Attributes")
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "attribute": a.attribute,
                    "mode": a.mode,
                    "rules": f"{len(a.rules)} (below)" if a.rules else "",
                    "reviewed by": ", ".join(a.approver_roles)
                    or ("nobody (frozen)" if a.mode == "frozen" else "nobody"),
                    "type": a.type,
                    "kind": "core" if a.core else "team",
                    "description": a.description or "",
                }
                for a in overview.attributes
            ]
        ),
        hide_index=True,
        width="stretch",
        height=dataframe_height(len(overview.attributes), max_rows=40),
        column_config={"description": st.column_config.TextColumn(width="large")},
    )
    st.caption(
        md_escape(
            f"Attributes without a mode of their own use the default ({overview.default_mode}). "
            "A rule that matches the note and the proposer wins over the attribute's mode."
        )
    )
    ruled = [(a.attribute, r) for a in overview.attributes for r in a.rules]
    if ruled:  # whole, in words: in a table column they were cut after a dozen characters
        st.markdown(
            "**Rules**  \n"
            + "\n".join(f"- **{md_escape(name)}**: when {md_escape(r.when)} → {r.mode}" for name, r in ruled)
        )

    # one above the other, each the page's width: side by side, what a role approves was cut
    with st.container():
        st.subheader("Roles")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "role": r.role,
                        "approves": "everything"
                        if "*" in r.approves
                        else (", ".join(r.approves) or "nothing"),
                        "reviewers": ", ".join(r.reviewers),
                        "description": r.description or "",
                    }
                    for r in overview.roles
                ]
            ),
            hide_index=True,
            width="stretch",
        )
    with st.container():
        st.subheader("Reviewers")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "reviewer": a.id,
                        "name": a.name,
                        "roles": ", ".join(a.roles),
                        "accounts": ", ".join(a.scopes) if a.scopes is not None else "all",
                        "password sign-in": "yes" if a.can_sign_in_with_password else "no",
                    }
                    for a in accounts(mem.policy).values()
                ]
            ),
            hide_index=True,
            width="stretch",
        )
        st.caption(md_escape("Agents (never approve): " + (", ".join(overview.agents) or "none")))


main()
