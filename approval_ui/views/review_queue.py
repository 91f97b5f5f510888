"""Review queue: one item per input, decidable at a glance.

Each item shows the account, when it was said and by whom, the raw log with the evidence of
each held value highlighted, and each value's current and proposed versions in words; for a
contradiction, the older fact beside the newer one (for a record analysed after the note that
retires it, the newer note's words are the evidence, highlighted in that fact, not in the raw log).
A reviewer approves or rejects an item whole or value by value, or approves every item matching
the filters after seeing their count and confirming it. Decisions go to the facade as the
signed-in reviewer; governance decides whether that reviewer may (a refusal is reported, never
hidden). Buttons run as callbacks, so the page that follows a click already reflects the decision.
"""

from __future__ import annotations

from datetime import date

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from amem.domain.models import ProposalStatus
from amem.domain.text import revealed
from amem.domain.values import parse_datetime
from amem.errors import AmemError, PermissionDeniedError, ReviewSetChangedError
from amem.memory import Memory
from amem.services.accounts import Account
from amem.services.governance import DecisionReport
from amem.services.review import (
    REVIEW_KINDS,
    MatchCount,
    ReviewField,
    ReviewFilter,
    ReviewItem,
    date_words,
    proposal_words,
)
from approval_ui import state
from approval_ui.render import (
    age,
    counted,
    highlighted_markdown,
    highlighted_span_markdown,
    md_escape,
    short,
)

PAGE_SIZES = (5, 10, 25, 50)
ANY = "any"
ORDERS = ("oldest first", "newest first")
CONFIRM_KEY = "queue_confirm_all"
#: The held value whose correction form is open (one at a time).
CORRECTING_KEY = "queue_correcting"
#: Keys that approve and reject the first item on the page, as in labelling tools (Prodigy's A and
#: X): a reviewer reads the top item, presses A, and the next one is on top. R is Streamlit's own.
APPROVE_KEY, REJECT_KEY = "A", "X"
_YOUR_ACCOUNTS = (
    "The policy limits your decisions to these accounts (reviewers.yaml, `scopes`): the queue shows "
    "their items only, and approving all matching approves in them only."
)


def _reset_page() -> None:
    st.session_state["queue_page"] = 1
    st.session_state.pop(CONFIRM_KEY, None)


def _when(item: ReviewItem) -> str:
    return date_words(item.said_at) if item.said_at else "unknown time"


# -- decisions (callbacks) -----------------------------------------------------------------------

_KIND = {"approved": "success", "rejected": "info", "conflict": "warning"}


def _flash_report(report: DecisionReport, what: str) -> None:
    lines = [f"{what}: {report.summary()}."]
    approving = what.startswith("Approved")
    # approving finds the attribute frozen or dropped by the policy now: the policy's rejection
    refused = report.refused_by_policy() if approving else []
    for p in report.decided:
        if p.status == ProposalStatus.CONFLICT:
            lines.append(
                f"Conflict on {p.attribute} of {p.note_id}: the note changed since; nothing applied."
            )
        elif p in refused:
            lines.append(
                f"Not approved: the policy refused {p.attribute} of {p.note_id} "
                f"({p.review_comment or 'refused by policy'})."
            )
    lines += [f"Skipped {s.proposal_id}: {s.reason}" for s in report.skipped]
    if report.skipped and not report.decided:
        kind = "error"
    elif report.skipped or refused or report.count(ProposalStatus.CONFLICT):
        kind = "warning"  # not all of it went as asked: never green
    else:
        kind = "success"
    state.flash(kind, "\n".join(lines))  # type: ignore[arg-type]


@state.guarded
def _on_item(key: str, action: str, shown: list[str]) -> None:
    """``shown``: the held values the item showed; if it holds others now, nothing is decided."""
    mem, account = state.memory(), state.callback_account()
    if account is None:  # signed out meanwhile: the page says so instead
        return
    comment = (st.session_state.get(f"comment_{key}") or "").strip()
    try:
        reviewer = state.authenticated(mem, account)
        if action == "approve":
            report = mem.approve_item(key, reviewer=reviewer, shown=shown, comment=comment or None)
        else:
            report = mem.reject_item(key, reviewer=reviewer, shown=shown, comment=comment)
    except AmemError as exc:
        state.flash("error", str(exc))
        return
    _flash_report(report, f"{'Approved' if action == 'approve' else 'Rejected'} item {key}")
    st.session_state.pop(f"comment_{key}", None)


@state.guarded
def _on_field(pid: str, key: str, action: str) -> None:
    mem, account = state.memory(), state.callback_account()
    if account is None:  # signed out meanwhile: the page says so instead
        return
    comment = (st.session_state.get(f"comment_{key}") or "").strip()
    try:
        reviewer = state.authenticated(mem, account)
        if action == "approve":
            decided = mem.approve(pid, reviewer=reviewer, comment=comment or None)
        else:
            decided = mem.reject(pid, reviewer=reviewer, comment=comment)
    except PermissionDeniedError as exc:
        state.flash("error", f"Refused by the policy: {exc}")
        return
    except AmemError as exc:
        state.flash("error", str(exc))
        return
    if decided.status == ProposalStatus.CONFLICT:
        state.flash(
            "warning",
            f"Conflict on {decided.attribute} of {decided.note_id}: the note changed since the proposal "
            "was made, so nothing was applied.",
        )
        return
    verb = {"approved": "Approved", "rejected": "Rejected"}.get(decided.status.value, decided.status.value)
    state.flash(_KIND.get(decided.status.value, "info"), f"{verb}: {decided.attribute} of {decided.note_id}.")  # type: ignore[arg-type]


@state.guarded
def _on_correct(pid: str, value_type: str) -> None:
    """The reviewer's value instead of the proposed one (Governance.correct): the proposal is
    rejected and theirs proposed from the same input, routed by the policy."""
    mem, account = state.memory(), state.callback_account()
    if account is None:  # signed out meanwhile: the page says so instead
        return
    value = _typed(st.session_state.get(f"correct_value_{pid}"), value_type)
    comment = (st.session_state.get(f"correct_comment_{pid}") or "").strip() or None
    try:
        done = mem.correct(pid, value, reviewer=state.authenticated(mem, account), comment=comment)
    except PermissionDeniedError as exc:
        state.flash("error", f"Refused by the policy: {exc}")
        return
    except AmemError as exc:
        state.flash("error", f"Not corrected: {exc}")
        return
    st.session_state[CORRECTING_KEY] = None
    fix = done.correction
    outcome = {
        "pending": "your value waits for another reviewer (the policy does not let reviewers approve "
        "their own proposals)",
        "approved": "your value is applied",
        "auto_applied": "your value is applied",
    }.get(fix.status.value, f"your value is {fix.status.value}")
    state.flash(
        "success" if fix.status.value != "rejected" else "warning",
        f"Corrected {fix.attribute} of {fix.note_id}: the proposed value is rejected and {outcome} "
        f"({fix.id}).",
    )


def _toggle_correction(pid: str) -> None:
    """Open the correction form of one value (closing any other), or close it: the form's widgets
    are drawn for that value only, so a page of held values stays as quick as before."""
    open_now = st.session_state.get(CORRECTING_KEY) == pid
    st.session_state[CORRECTING_KEY] = None if open_now else pid


def _typed(raw: object, value_type: str) -> object:
    """A correction as the widget gave it, in the form governance reads for ``value_type``."""
    if value_type == "datetime" and hasattr(raw, "isoformat"):
        return raw.isoformat()  # type: ignore[union-attr]
    if value_type == "list[str]" and isinstance(raw, str):
        return [line.strip() for line in raw.splitlines() if line.strip()]
    return raw


def _correction(field: ReviewField) -> None:
    """The controls of a correction: the value in a widget of its type, prefilled with the proposed
    one, and why."""
    p, key = field.proposal, f"correct_value_{field.proposal.id}"
    st.caption("Your value replaces the proposed one; the proposal is rejected, and history keeps both.")
    if field.value_type == "datetime":
        try:
            proposed: date | None = parse_datetime(p.new_value).date()
        except AmemError:
            proposed = None
        st.date_input("The right date", value=proposed, key=key, format="YYYY-MM-DD")
    elif field.value_type == "list[str]":
        items = p.new_value if isinstance(p.new_value, list) else []
        st.text_area("The right values, one a line", value="\n".join(map(str, items)), key=key)
    elif field.value_type == "number":
        st.number_input("The right number", value=float(p.new_value or 0), key=key)
    elif field.value_type == "bool":
        st.checkbox("Yes", value=bool(p.new_value), key=key)
    else:
        st.text_area("The right value", value=str(p.new_value or ""), key=key)
    st.text_input("Why (optional)", key=f"correct_comment_{p.id}")
    st.button(
        "Save the correction",
        key=f"correct_{p.id}",
        type="primary",
        on_click=_on_correct,
        args=(p.id, field.value_type),
    )


@state.guarded
def _on_all_request(f: ReviewFilter, action: str) -> None:
    matched = state.memory().count_review_items(f)
    st.session_state[CONFIRM_KEY] = (f, matched.items, matched.proposals, matched.fingerprint, action)


@state.guarded
def _on_all_confirm() -> None:
    mem, account = state.memory(), state.callback_account()
    if account is None:  # signed out meanwhile: the page says so instead
        return
    pending = st.session_state.get(CONFIRM_KEY)
    if pending is None:
        return
    f, items, _proposals, fingerprint, action = pending
    comment = (st.session_state.get("reject_all_comment") or "").strip()
    if action == "reject" and not comment:
        state.flash("error", "Say why they are wrong: a rejection needs a comment.")
        return  # the question stays, for the reason to be given
    st.session_state.pop(CONFIRM_KEY, None)
    who = state.authenticated(mem, account)
    try:
        if action == "approve":
            report = mem.approve_matching(f, reviewer=who, expected_items=items, fingerprint=fingerprint)
        else:
            report = mem.reject_matching(
                f, reviewer=who, expected_items=items, fingerprint=fingerprint, comment=comment
            )
    except ReviewSetChangedError as exc:
        state.flash("error", str(exc))
        return
    except AmemError as exc:
        state.flash("error", str(exc))
        return
    done = "Approved" if action == "approve" else "Rejected"
    _flash_report(report, f"{done} all {counted(items, 'matching item')}")


def _on_all_cancel() -> None:
    st.session_state.pop(CONFIRM_KEY, None)


# -- drawing -------------------------------------------------------------------------------------


def _options(key: str, waiting: list[str]) -> list[str]:
    """A filter's choices: "any", the values something waits for, and the value the reviewer chose
    even once nothing waits for it any more (its last item decided): Streamlit would otherwise put
    the filter back to "any" unasked, under "Waiting for these filters"."""
    chosen = st.session_state.get(key)
    kept = [chosen] if isinstance(chosen, str) and chosen != ANY and chosen not in waiting else []
    return [ANY, *waiting, *kept]


def _filters(mem: Memory, account: Account) -> tuple[ReviewFilter, int, MatchCount]:
    choices = mem.review_choices()
    mine = [s for s in choices["scopes"] if account.scopes is None or s in account.scopes]
    cols = st.columns([1.1, 1.2, 1.0, 1.2, 1.3, 0.7, 0.6], vertical_alignment="bottom")
    scope = cols[0].selectbox(
        "Account", _options("queue_scope", mine), key="queue_scope", on_change=_reset_page
    )
    attribute = cols[1].selectbox(
        "Attribute",
        _options("queue_attribute", choices["attributes"]),
        key="queue_attribute",
        on_change=_reset_page,
    )
    kind = cols[2].selectbox("Kind", [ANY, *REVIEW_KINDS], key="queue_kind", on_change=_reset_page)
    proposer = cols[3].selectbox(
        "Proposed by",
        _options("queue_proposer", choices["proposers"]),
        key="queue_proposer",
        on_change=_reset_page,
        help="A model whose values your team mostly turns down (the audit log's \"What reviewers "
        'decide") can be looked at, or rejected, on its own.',
    )
    order = cols[4].selectbox("Order", ORDERS, key="queue_order", on_change=_reset_page)
    size = cols[5].selectbox("Per page", PAGE_SIZES, index=1, key="queue_size", on_change=_reset_page)
    f = ReviewFilter(
        scope=None if scope == ANY else scope,
        attribute=None if attribute == ANY else attribute,
        kind=None if kind == ANY else kind,
        proposer=None if proposer == ANY else proposer,
        newest_first=order == "newest first",
        within=account.scopes,  # a lead limited to the accounts they own sees those only
    )
    matched = mem.count_review_items(f)
    pages = max(1, -(-matched.items // size))
    if st.session_state.get("queue_page", 1) > pages:
        st.session_state["queue_page"] = pages
    page = cols[6].number_input("Page", min_value=1, max_value=pages, step=1, key="queue_page")
    return f, (page - 1) * size, matched


def _second_looks(mem: Memory, account: Account) -> str:
    """`` · N corrections by other reviewers wait for your second look`` (or nothing): a correction
    waits for someone other than its author, so the four-eyes loop must not stall unseen."""
    theirs = mem.second_looks(account.id)
    if not theirs:
        return ""
    said = "correction by another reviewer waits" if theirs == 1 else "corrections by other reviewers wait"
    return f" · {theirs:,} {said} for your second look (Kind: correction)"


def _approve_all_bar(f: ReviewFilter, total: int, held: int, note: str = "") -> None:
    pending = st.session_state.get(CONFIRM_KEY)
    if pending is not None and pending[0] == f:
        _, items, proposals, _, action = pending
        with st.container(border=True):
            row = st.columns([0.64, 0.18, 0.18], vertical_alignment="center")
            row[0].warning(
                md_escape(
                    f"{action.title()} all {counted(items, 'matching item')} "
                    f"({counted(proposals, 'held value')}), on every page? "
                    "Values your roles do not cover"
                    + (", and edits of notes deleted since," if action == "approve" else "")
                    + " are skipped and reported."
                ),
                icon=":material/help:",
            )
            row[1].button(
                f"Yes, {action} {items}",
                key="confirm_all",
                type="primary",
                on_click=_on_all_confirm,
                width="stretch",
            )
            row[2].button("Cancel", key="cancel_all", on_click=_on_all_cancel, width="stretch")
            if action == "reject":
                st.text_input("Why they are wrong (required, recorded on each)", key="reject_all_comment")
        return
    text, actions = st.columns([0.45, 0.55], vertical_alignment="center")
    text.caption(f"Waiting for these filters: {counted(total, 'item')} ({counted(held, 'held value')}){note}")
    row = _actions(actions)
    row.button(
        f"Approve all {total:,} matching",
        key="approve_all",
        icon=":material/done_all:",
        on_click=_on_all_request,
        args=(f, "approve"),
        disabled=total == 0,
    )
    row.button(
        f"Reject all {total:,} matching",
        key="reject_all",
        icon=":material/remove_done:",
        on_click=_on_all_request,
        args=(f, "reject"),
        disabled=total == 0,
    )


def _actions(column: DeltaGenerator) -> DeltaGenerator:
    """A right-aligned row in ``column`` whose buttons take their label's width (a comment box the
    rest), wrapping to a second line before any label is cut: at 1280 px, equal columns cut
    "Approve item" to "Approve…"."""
    return column.container(horizontal=True, horizontal_alignment="right", vertical_alignment="center")


def _field(mem: Memory, account: Account, item: ReviewItem, field: ReviewField) -> None:
    p = field.proposal
    deleted = field.note_deleted  # approving is refused: said before anyone clicks
    frozen = field.policy_frozen  # approving is the policy's rejection: said before anyone clicks
    refused = deleted is not None or frozen is not None
    text, actions = st.columns([0.45, 0.55], vertical_alignment="center")
    text.markdown(
        f"**{md_escape(p.attribute)}** · {md_escape(field.kind)} · note `{p.note_id}`"
        + (" · :red[note deleted since]" if deleted is not None else "")
        + (" · :red[frozen by the policy since]" if frozen is not None and deleted is None else "")
        + (
            " · :orange[the note changed since: approving records a conflict]"
            if field.stale and not refused
            else ""
        )
    )
    if not account.read_only:
        row = _actions(actions)
        row.button(
            "Approve",
            key=f"approve_{p.id}",
            icon=":material/check:",
            on_click=_on_field,
            args=(p.id, item.key, "approve"),
            disabled=refused,
            help="The note was deleted: approving is refused"
            if deleted is not None
            else "The policy freezes it now: approving is refused; reject it"
            if frozen is not None
            else None,
        )
        row.button(
            "Reject",
            key=f"reject_{p.id}",
            icon=":material/close:",
            on_click=_on_field,
            args=(p.id, item.key, "reject"),
        )
        if field.correctable and not refused:
            row.button(
                "Correct",
                key=f"correcting_{p.id}",
                icon=":material/edit:",
                on_click=_toggle_correction,
                args=(p.id,),
            )
    if deleted is not None:
        st.warning(md_escape(f"{deleted.words()}: approving is refused; {deleted.advice()}."))
    elif frozen is not None:
        st.warning(md_escape(f"{frozen.words().capitalize()}: approving is refused; reject it."))
    if st.session_state.get(CORRECTING_KEY) == p.id and not account.read_only:
        with st.container(border=True):
            _correction(field)
    if field.corrected is not None:
        c = field.corrected
        by = f"{c.corrected_by} corrected" if c.corrected_by else "Corrects"
        st.markdown(
            md_escape(f"{by} the value {c.proposer} proposed ({c.proposal_id}): ")
            + f"~~{md_escape(short(c.proposed_words, 200))}~~"
        )
    if field.older is not None:
        older, newer = st.columns(2)
        with older:
            said = date_words(field.older.said_at) if field.older.said_at else "unknown time"
            st.markdown(f"**Older fact** · said {md_escape(said)}")
            st.code(revealed(field.older.content), language=None, wrap_lines=True)
        with newer:
            st.markdown(f"**Newer fact** · said {md_escape(_when(item))}")
            st.code(revealed(item.raw_log.text) if item.raw_log else "", language=None, wrap_lines=True)
        st.markdown(f"Retires the older fact from **{md_escape(field.proposed_words)}**")
    elif field.newer is not None:  # an older record analysed after the note that retires it
        older, newer = st.columns(2)
        with older:
            st.markdown(f"**Older fact** · said {md_escape(_when(item))}")
            st.code(revealed(item.raw_log.text) if item.raw_log else "", language=None, wrap_lines=True)
        with newer:
            said = date_words(field.newer.said_at) if field.newer.said_at else "unknown time"
            st.markdown(f"**Newer fact** · said {md_escape(said)}")
            if field.newer.span is not None:  # the evidence is the newer note's words: marked there
                st.markdown(highlighted_span_markdown(field.newer.content, field.newer.span, p.attribute))
                st.caption(md_escape(f"Highlighted: the evidence for {p.attribute}"))
            else:  # a proposal an older amem recorded: its evidence is marked in the record's raw log
                st.code(revealed(field.newer.content), language=None, wrap_lines=True)
        st.markdown(f"Retired by the newer fact from **{md_escape(field.proposed_words)}**")
    else:
        current, proposed = st.columns(2)
        with current:
            st.markdown("**Current**")
            st.code(revealed(field.current_words), language=None, wrap_lines=True)
        with proposed:
            st.markdown("**Proposed**")
            st.code(revealed(field.proposed_words), language=None, wrap_lines=True)
        if field.brings_back:
            ended = f" (retired from {field.current_words})" if field.current_value is not None else ""
            st.markdown(
                md_escape(f"Brings the fact back{ended}: approving removes its end date, so it holds again.")
            )
    model = " · ".join(x for x in (p.proposer.model, p.proposer.prompt_version) if x)
    st.caption(
        md_escape(
            f"Reason: {p.reason}"
            + (f" · evidence: “{short(p.evidence, 160)}”" if p.evidence else "")
            + f" · by {p.proposer.kind.value}:{p.proposer.id}"
            + (f" · model {model}" if model else "")
            + f" · {p.id}"
        )
    )
    if not account.read_only:
        try:
            mem.governance.check_may_approve(p, state.authenticated(mem, account))
        except PermissionDeniedError as exc:
            st.caption(md_escape(f"⚠ {exc}. The ledger will refuse a decision by you."))


def _card(mem: Memory, account: Account, item: ReviewItem, *, top: bool = False) -> None:
    """``top``: the page's first item, whose Approve and Reject answer the keys A and X (Streamlit
    ignores them while a text box has the focus, so typing a comment decides nothing)."""
    with st.container(border=True):
        text, actions = st.columns([0.4, 0.6], vertical_alignment="center")
        who = f" by {item.said_by}" if item.said_by else ""
        text.markdown(
            f"**{md_escape(item.scope)}** · said {md_escape(_when(item) + who)}  \n"
            f":gray[{md_escape(f'item {item.key} · {len(item.fields)} held value(s)')}]"
        )
        if not account.read_only:
            row = _actions(actions)
            row.text_input(
                "Comment",
                key=f"comment_{item.key}",
                placeholder="Why (required to reject)",
                label_visibility="collapsed",
            )
            row.button(
                "Approve item",
                key=f"approve_item_{item.key}",
                type="primary",
                icon=":material/check:",
                on_click=_on_item,
                args=(item.key, "approve", item.proposal_ids),
                shortcut=APPROVE_KEY if top else None,
            )
            row.button(
                "Reject item",
                key=f"reject_item_{item.key}",
                icon=":material/close:",
                on_click=_on_item,
                args=(item.key, "reject", item.proposal_ids),
                shortcut=REJECT_KEY if top else None,
            )
        if item.raw_log is not None:
            st.markdown(highlighted_markdown(item.pieces))
            marked = sorted({a for piece in item.pieces for a in piece.attributes})
            if marked:
                st.caption(md_escape(f"Highlighted: the evidence for {', '.join(marked)}"))
            with st.expander("The raw log as received", icon=":material/description:"):
                st.caption(md_escape(f"{item.raw_log.id} · {item.raw_log.actor} · {age(item.said_at)}"))
                st.code(revealed(item.raw_log.text), language=None, wrap_lines=True)
        else:
            st.caption("No raw log: a person's edit.")
        for field in item.fields:
            with st.container(border=True):
                _field(mem, account, item, field)


def _last_decisions(mem: Memory, account: Account) -> None:
    """The reviewer's own last decisions, from the ledger: what they just did is still said after a
    reload or a lost browser session, when the page's own message is gone."""
    decided = mem.decided_by(account.id, limit=8)
    if not decided:
        return
    last = decided[0]
    label = (
        f"Your last decision: {last.status.value} {last.attribute} of {last.note_id} "
        f"({last.scope}), {age(last.reviewed_at)}"
    )
    with st.expander(md_escape(label, keep_newlines=False), icon=":material/history:"):
        st.dataframe(
            [
                {
                    "when": age(p.reviewed_at),
                    "decision": p.status.value,
                    "account": p.scope,
                    "value": f"{p.attribute} of {p.note_id}",
                    # the card's words, on one line: "• uptime / • SSO", "1 March 2027"
                    "proposed": short(" / ".join(proposal_words(mem.policy, p).splitlines()), 60),
                    "comment": p.review_comment or "",
                }
                for p in decided
            ],
            hide_index=True,
            width="stretch",
        )
        st.caption(
            "The note explorer and the audit log show each in full; the note explorer's History "
            "reverts a change that was applied (it proposes the earlier value, routed by the policy)."
        )


def main() -> None:
    mem, account = state.memory(), state.current_account()
    st.title("Review queue")
    state.show_flashes()
    if account.read_only:
        st.info(
            md_escape(f"Read-only: your roles ({', '.join(account.roles) or 'none'}) approve nothing."),
            icon=":material/visibility:",
        )
    if account.scopes is not None:
        yours = (
            ", ".join(account.scopes)
            if account.scopes
            else "none (the policy gives you no account: every decision of yours is refused)"
        )
        st.caption(md_escape(f"Your accounts: {yours}"), help=_YOUR_ACCOUNTS)
    if not account.read_only:
        _last_decisions(mem, account)
    f, offset, matched = _filters(mem, account)
    size = st.session_state.get("queue_size", PAGE_SIZES[1])
    page = mem.review_items(f, limit=size, offset=offset)
    held = matched.proposals
    if not account.read_only:
        _approve_all_bar(f, page.total, held, _second_looks(mem, account))
    else:
        st.caption(f"Waiting: {counted(page.total, 'item')} ({counted(held, 'held value')})")
    if not page.items:
        st.success("Nothing waiting for review here.", icon=":material/done_all:")
        return
    for n, item in enumerate(page.items):
        _card(mem, account, item, top=n == 0)
    if page.total > len(page.items):
        st.caption(f"Items {offset + 1:,}–{offset + len(page.items):,} of {page.total:,}")


main()
