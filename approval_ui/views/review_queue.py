"""Review queue: pending proposals, one page at a time, with what a reviewer needs to decide them.

Decisions go to Memory.approve / Memory.reject as the signed-in reviewer; the governance service
decides whether that reviewer may (its refusal is shown as is). Buttons run as callbacks, so the
page that follows a click already reflects the decision.
"""

from __future__ import annotations

from datetime import timedelta

import streamlit as st

from amem.domain.models import ProposalStatus, utcnow
from amem.errors import AmemError, PermissionDeniedError
from amem.ledger.store import ProposalFilter
from amem.memory import Memory
from amem.services import audit
from amem.services.accounts import Account
from amem.services.audit import ReviewItem
from approval_ui import state
from approval_ui.render import (
    age,
    fmt_time,
    md_escape,
    short,
    value_text,
    word_diff_markdown,
)

PAGE_SIZES = (10, 25, 50, 100)
ANY = "any"
AGES: dict[str, tuple[timedelta | None, timedelta | None]] = {
    "any age": (None, None),
    "last 24 hours": (None, timedelta(days=1)),
    "older than 1 day": (timedelta(days=1), None),
    "older than 7 days": (timedelta(days=7), None),
    "older than 30 days": (timedelta(days=30), None),
}
ORDERS = ("oldest first", "newest first")
PAGE_IDS_KEY = "queue_page_ids"


def _reset_page() -> None:
    st.session_state["queue_page"] = 1


def _selected(ids: list[str]) -> list[str]:
    return [pid for pid in ids if st.session_state.get(f"sel_{pid}")]


def _forget(pid: str) -> None:
    for key in (f"sel_{pid}", f"comment_{pid}"):
        st.session_state.pop(key, None)


def _decide_one(mem: Memory, account: Account, pid: str, action: str, comment: str) -> tuple[str, str]:
    """Calls the service; returns (outcome, message), outcome one of approved, rejected, conflict,
    refused (by the policy) or error."""
    try:
        reviewer = state.authenticated(mem, account)
        if action == "approve":
            decided = mem.approve(pid, reviewer=reviewer, comment=comment or None)
        else:
            decided = mem.reject(pid, reviewer=reviewer, comment=comment)
    except PermissionDeniedError as exc:
        return "refused", f"Refused by the policy: {exc}"
    except AmemError as exc:
        return "error", str(exc)
    if decided.status == ProposalStatus.CONFLICT:
        item = audit.review_items(mem.ledger, mem.policy, [decided])[0]
        now = value_text(item.current_value) or "(empty)"
        return (
            "conflict",
            f"Conflict on {decided.attribute} of {decided.note_id}: the note changed since the proposal "
            f"was made, so nothing was applied. Current value now: {short(now, 200)}",
        )
    verb = {"approved": "Approved", "rejected": "Rejected"}.get(decided.status.value, decided.status.value)
    return decided.status.value, f"{verb}: {decided.attribute} of {decided.note_id}."


_KIND = {
    "approved": "success",
    "rejected": "info",
    "conflict": "warning",
    "refused": "error",
    "error": "error",
}


def _on_decide(pid: str, action: str) -> None:
    mem, account = state.memory(), state.current_account()
    comment = (st.session_state.get(f"comment_{pid}") or "").strip()
    outcome, message = _decide_one(mem, account, pid, action, comment)
    state.flash(_KIND[outcome], message)  # type: ignore[arg-type]
    if outcome not in ("refused", "error"):
        _forget(pid)


def _on_bulk(action: str) -> None:
    mem, account = state.memory(), state.current_account()
    chosen = _selected(st.session_state.get(PAGE_IDS_KEY, []))
    if not chosen:
        state.flash("warning", "Select at least one proposal first.")
        return
    comment = (st.session_state.get("bulk_comment") or "").strip()
    if action == "reject" and not comment:
        state.flash("error", "A rejection needs a comment saying why: nothing was rejected.")
        return
    counts: dict[str, int] = {}
    problems: list[str] = []
    for pid in chosen:
        outcome, message = _decide_one(mem, account, pid, action, comment)
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome in ("refused", "error", "conflict"):
            problems.append(f"{pid}: {message}")
        else:
            _forget(pid)
    summary = ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
    kind = "success" if not problems else ("warning" if len(problems) < len(chosen) else "error")
    state.flash(kind, "\n".join([f"{len(chosen)} selected: {summary}.", *problems]))  # type: ignore[arg-type]
    st.session_state["bulk_all"] = False


def _on_select_all() -> None:
    value = bool(st.session_state.get("bulk_all"))
    for pid in st.session_state.get(PAGE_IDS_KEY, []):
        st.session_state[f"sel_{pid}"] = value


def _filters(mem: Memory) -> ProposalFilter:
    choices = audit.pending_choices(mem.ledger)
    cols = st.columns([1.2, 1.2, 1.4, 1.1, 1])
    scope = cols[0].selectbox("Scope", [ANY, *choices["scopes"]], key="queue_scope", on_change=_reset_page)
    attribute = cols[1].selectbox(
        "Attribute", [ANY, *choices["attributes"]], key="queue_attribute", on_change=_reset_page
    )
    proposer = cols[2].selectbox(
        "Proposer", [ANY, *choices["proposers"]], key="queue_proposer", on_change=_reset_page
    )
    age_label = cols[3].selectbox("Age", list(AGES), key="queue_age", on_change=_reset_page)
    order = cols[4].selectbox("Order", ORDERS, key="queue_order", on_change=_reset_page)
    older, newer = AGES[age_label]
    now = utcnow()
    return ProposalFilter(
        status=[ProposalStatus.PENDING.value],
        scope=None if scope == ANY else scope,
        attribute=None if attribute == ANY else attribute,
        proposer=None if proposer == ANY else proposer,
        created_before=now - older if older else None,
        created_after=now - newer if newer else None,
        newest_first=order == "newest first",
    )


def _card(mem: Memory, account: Account, item: ReviewItem) -> None:
    p = item.proposal
    with st.container(border=True):
        head = st.columns([0.04, 0.66, 0.30], vertical_alignment="center")
        if not account.read_only:
            head[0].checkbox("Select", key=f"sel_{p.id}", label_visibility="collapsed")
        head[1].markdown(
            f"**{md_escape(p.attribute)}** &nbsp;·&nbsp; note `{p.note_id}` &nbsp;·&nbsp; "
            f"scope **{md_escape(p.scope or '')}**"
        )
        head[2].caption(md_escape(f"{age(p.created_at)} · {fmt_time(p.created_at)}"))
        model = " · ".join(x for x in (p.proposer.model, p.proposer.prompt_version) if x)
        st.caption(
            md_escape(
                f"Proposed by {p.proposer.kind.value}:{p.proposer.id}"
                + (f" · model {model}" if model else "")
                + f" · {p.id} · rule {p.rule}"
            )
        )
        if item.stale:
            st.warning(
                md_escape(
                    "The note changed since this proposal was made: approving it records a conflict "
                    "and applies nothing. The current value is shown below."
                ),
                icon=":material/warning:",
            )
        if item.note is not None:
            quote, link = st.columns([0.82, 0.18], vertical_alignment="center")
            quote.markdown(f"> {md_escape(short(item.note.content, 300), keep_newlines=False)}")
            link.page_link(
                "views/note_explorer.py",
                label="Open the note",
                icon=":material/open_in_new:",
                query_params={"note": p.note_id},
            )
        left, right = st.columns(2)
        with left:
            st.markdown("**Current value**")
            st.code(value_text(item.current_value) or "(empty)", language=None, wrap_lines=True)
        with right:
            st.markdown("**Proposed value**")
            st.code(value_text(p.new_value) or "(empty)", language=None, wrap_lines=True)
        st.markdown("**Difference**")
        with st.container(border=False):
            st.markdown(word_diff_markdown(item.current_value, p.new_value) or "(no difference)")
        st.markdown(f"**Reason** &nbsp; {md_escape(p.reason)}")
        label = f"Raw log{'s' if len(item.raw_logs) != 1 else ''} behind it ({len(item.raw_logs)})"
        with st.expander(label, icon=":material/description:"):
            if not item.raw_logs:
                st.caption("No raw log is attached to this proposal.")
            for raw in item.raw_logs:
                st.caption(md_escape(f"{raw.id} · {raw.actor} · {fmt_time(raw.occurred_at)}"))
                st.code(raw.text, language=None, wrap_lines=True)
        if account.read_only:
            return
        try:
            mem.governance.check_may_approve(p, state.authenticated(mem, account))
        except PermissionDeniedError as exc:
            st.caption(md_escape(f"⚠ {exc}. The ledger will refuse a decision by you."))
        row = st.columns([0.64, 0.18, 0.18], vertical_alignment="bottom")
        row[0].text_input(
            "Comment",
            key=f"comment_{p.id}",
            placeholder="Why (required to reject)",
            label_visibility="collapsed",
        )
        row[1].button(
            "Approve",
            key=f"approve_{p.id}",
            type="primary",
            icon=":material/check:",
            on_click=_on_decide,
            args=(p.id, "approve"),
            width="stretch",
        )
        row[2].button(
            "Reject",
            key=f"reject_{p.id}",
            icon=":material/close:",
            on_click=_on_decide,
            args=(p.id, "reject"),
            width="stretch",
        )


def main() -> None:
    mem, account = state.memory(), state.current_account()
    st.title("Review queue")
    state.show_flashes()
    summary = audit.queue_summary(mem.ledger)
    m = st.columns(4)
    m[0].metric("Pending", f"{summary.pending:,}")
    m[1].metric("Oldest waiting", age(summary.oldest_pending).replace(" ago", "") if summary.pending else "—")
    m[2].metric("Conflicts", f"{summary.by_status.get('conflict', 0):,}")
    m[3].metric("Approved", f"{summary.by_status.get('approved', 0):,}")
    if account.read_only:
        st.info(
            md_escape(f"Read-only: your roles ({', '.join(account.roles) or 'none'}) approve nothing."),
            icon=":material/visibility:",
        )

    f = _filters(mem)
    total = mem.count_proposals(f)
    size_col, page_col, info_col = st.columns([1, 1, 3], vertical_alignment="bottom")
    size = size_col.selectbox("Per page", PAGE_SIZES, index=1, key="queue_size", on_change=_reset_page)
    pages = max(1, -(-total // size))
    if st.session_state.get("queue_page", 1) > pages:
        st.session_state["queue_page"] = pages
    page = page_col.number_input("Page", min_value=1, max_value=pages, step=1, key="queue_page")
    first = (page - 1) * size
    info_col.caption(
        f"{total:,} pending match"
        + (f" · showing {first + 1:,}–{min(first + size, total):,}" if total else "")
    )
    items = mem.proposals(f, limit=size, offset=first)
    st.session_state[PAGE_IDS_KEY] = [p.id for p in items]
    if not items:
        st.success("Nothing waiting for review here.", icon=":material/done_all:")
        return

    if not account.read_only:
        with st.container(border=True):
            bulk = st.columns([0.22, 0.46, 0.16, 0.16], vertical_alignment="bottom")
            bulk[0].checkbox("Select all on this page", key="bulk_all", on_change=_on_select_all)
            bulk[1].text_input(
                "Comment for the selected", key="bulk_comment", placeholder="Why (required to reject)"
            )
            chosen = len(_selected([p.id for p in items]))
            bulk[2].button(
                f"Approve selected ({chosen})",
                key="bulk_approve",
                type="primary",
                on_click=_on_bulk,
                args=("approve",),
                disabled=chosen == 0,
                width="stretch",
            )
            bulk[3].button(
                f"Reject selected ({chosen})",
                key="bulk_reject",
                on_click=_on_bulk,
                args=("reject",),
                disabled=chosen == 0,
                width="stretch",
            )

    for item in audit.review_items(mem.ledger, mem.policy, items):
        _card(mem, account, item)


main()
