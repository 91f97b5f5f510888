"""Audit log: is the ledger intact, what changed, who decided what, how fast reviews go, and what
was erased on a data subject's request (by whom, when, why).

The verification (Memory.verify recomputes the hash chain and each raw log's sha256) runs when the
page first opens in a session and again on "Verify again", so a tampered row shows here before
anything else; "Write a checkpoint" signs the chain heads (Memory.checkpoint, as `amem checkpoint`);
filtering and paging reuse the result, with the time it was taken, because on a big
ledger it reads every row. Exports are built when the button is clicked, from the same filters as
the table.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from functools import partial
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from amem.domain.models import ProposalStatus
from amem.errors import AmemError
from amem.memory import Memory
from amem.services.audit import AuditQuery, VerdictRow
from approval_ui import state
from approval_ui.render import dataframe_height, fmt_time, md_escape, short, value_text

PAGE_SIZE = 50
#: The last verification of this session: (result, when).
VERIFIED_KEY = "audit_verified"
ANY = "any"
KINDS = {"changes": "change", "proposals": "proposal", "decisions": "decision"}
STATUS_COLORS = {
    "pending": "#f0b429",
    "approved": "#2f9e44",
    "auto_applied": "#74c0fc",
    "rejected": "#e03131",
    "conflict": "#f76707",
    "superseded": "#adb5bd",
    "erasure": "#862e9c",
}
WINDOWS = {"7 days": 7, "30 days": 30, "90 days": 90, "365 days": 365}


def _reset_page() -> None:
    st.session_state["audit_page"] = 1


def _verify_again() -> None:
    st.session_state.pop(VERIFIED_KEY, None)


def _verify(mem: Memory) -> None:
    if VERIFIED_KEY not in st.session_state:
        with st.spinner("Verifying the hash chain and every raw log…"):
            st.session_state[VERIFIED_KEY] = (mem.verify(), datetime.now(UTC))
    result, at = st.session_state[VERIFIED_KEY]
    if result.ok:
        st.success(
            md_escape(
                f"Ledger intact. {result.changes_checked:,} changes and {result.raw_logs_checked:,} raw logs "
                f"verified against their hashes at {fmt_time(at)}."
            ),
            icon=":material/verified:",
        )
    else:
        st.error(
            "**Ledger tampered.** "
            + md_escape(result.message)
            + "  \n"
            + md_escape(
                "Rows from that point on cannot be trusted; restore the ledger from a backup and compare."
            ),
            icon=":material/gpp_bad:",
        )
    row = st.container(horizontal=True)
    row.button("Verify again", key="audit_verify_again", on_click=_verify_again, icon=":material/refresh:")
    if row.button("Write a checkpoint", key="audit_checkpoint", icon=":material/approval:"):
        _checkpoint(mem)


def _checkpoint(mem: Memory) -> None:
    """Sign the chain heads with the store's key and append the statement to the checkpoint log."""
    try:
        statement = mem.checkpoint()
    except AmemError as exc:
        st.error(md_escape(str(exc)), icon=":material/key_off:")
        return
    st.success(
        md_escape(
            f"Checkpoint signed by key {statement['key_id']}: events 1..{statement['event_seq']} and "
            f"changes 1..{statement['change_seq']} as of {statement['at']}."
        ),
        icon=":material/approval:",
    )


def _hours(value: float) -> str:
    if value < 1:
        return f"{value * 60:.0f} min"
    if value < 48:
        return f"{value:.1f} h"
    return f"{value / 24:.1f} d"


def _still(chart: alt.Chart, *, height: int) -> None:
    """A chart that keeps its scale: no zoom or pan on the mouse wheel (st.bar_chart's are), so a
    reviewer scrolling the page over a chart scrolls the page instead of stretching the bars."""
    st.altair_chart(chart.properties(height=height), width="stretch")


def _charts(mem: Memory) -> None:
    head = st.columns([3, 1], vertical_alignment="bottom")
    head[0].subheader("At a glance")
    window = head[1].selectbox("Window", list(WINDOWS), index=1, key="audit_window")
    days = WINDOWS[window]
    today = datetime.now(UTC).date()
    axis = [today - timedelta(days=i) for i in range(days - 1, -1, -1)]
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Proposals per day** · by their status now")
        counts = mem.proposals_per_day(days=days)
        if counts:
            frame = pd.DataFrame([c.model_dump() for c in counts])
            table = frame.pivot_table(index="day", columns="status", values="proposals", aggfunc="sum")
            table = table.reindex(axis, fill_value=0).fillna(0)
            table.index = [d.strftime("%m-%d") for d in axis]
            ordered = [c for c in STATUS_COLORS if c in table.columns]
            stacked = table[ordered].reset_index(names="day").melt("day", var_name="status", value_name="n")
            colors = alt.Scale(domain=ordered, range=[STATUS_COLORS[c] for c in ordered])
            _still(
                alt.Chart(stacked)
                .mark_bar()
                .encode(
                    x=alt.X("day:O", title="day (UTC)"),
                    y=alt.Y("n:Q", title="proposals", stack=True),
                    color=alt.Color("status:N", scale=colors, legend=alt.Legend(orient="bottom", title=None)),
                    order=alt.Order("status:N"),
                    tooltip=["day", "status", "n"],
                ),
                height=260,
            )
        else:
            st.caption("No proposals in this window.")
    with right:
        st.markdown("**Time to review** · from proposal to a reviewer's decision")
        times = mem.review_times(days=days)
        if times.decisions and times.median_hours is not None and times.p90_hours is not None:
            m = st.columns(3)
            m[0].metric("Decisions", f"{times.decisions:,}")
            m[1].metric("Median wait", _hours(times.median_hours))
            m[2].metric("90th percentile", _hours(times.p90_hours))
            frame = pd.DataFrame(
                {"median hours": [t.median_hours for t in times.days]},
                index=[t.day for t in times.days],
            ).reindex(axis, fill_value=0.0)
            frame.index = [d.strftime("%m-%d") for d in axis]
            _still(
                alt.Chart(frame.reset_index(names="day"))
                .mark_bar()
                .encode(
                    x=alt.X("day:O", title="decided on (UTC)"),
                    y=alt.Y("median hours:Q", title="median hours"),
                    tooltip=["day", "median hours"],
                ),
                height=170,
            )
        else:
            st.caption("No reviewer decisions in this window.")
    _verdicts(mem, days)


def _verdicts(mem: Memory, days: int) -> None:
    """What reviewers did with held values, per attribute and per model: which of them fill the
    queue with values people turn down (a policy that holds fewer, or a better model, spares them)."""
    verdicts = mem.review_verdicts(days=days)
    st.markdown(
        "**What reviewers decide** · held values judged in this window: approved as proposed, "
        "corrected (the reviewer's value instead) or rejected; and what waits now"
    )
    if not verdicts.by_attribute:
        st.caption("Nothing held for review, and no decisions, in this window.")
        return

    def frame(rows: list[VerdictRow], label: str) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    label: r.name,
                    "waiting": r.waiting,
                    "approved": r.approved,
                    "corrected": r.corrected,
                    "rejected": r.rejected,
                    "conflict": r.conflict,
                    "approved as proposed": r.approved_share,
                }
                for r in rows
            ]
        )

    share = st.column_config.ProgressColumn(
        "approved as proposed", format="percent", min_value=0, max_value=1
    )
    # one above the other, the page's width each: side by side, the share column was cut off
    st.dataframe(
        frame(verdicts.by_attribute, "attribute"),
        hide_index=True,
        column_config={"approved as proposed": share},
        key="audit_verdicts_attribute",
    )
    st.dataframe(
        frame(verdicts.by_source, "proposed by"),
        hide_index=True,
        column_config={"approved as proposed": share},
        key="audit_verdicts_source",
    )
    said = verdicts.noisy_words()
    if said is not None:
        st.warning(md_escape(said), icon=":material/filter_alt:")


def _query(mem: Memory) -> AuditQuery:
    st.subheader("Every change and decision")
    # two rows: in one, the date range and the multiselects were cut at 1280 px
    first, second = st.columns([1.0, 1.2, 1.2, 1.6]), st.columns(2)
    note_id = first[0].text_input("Note", key="audit_note", placeholder="n_…", on_change=_reset_page)
    attributes = [ANY, *mem.policy.attributes.keys()]
    for core in ("content", "keywords", "tags", "context", "category", "links", "deleted"):
        if core not in attributes:
            attributes.append(core)
    attribute = first[1].selectbox("Attribute", attributes, key="audit_attribute", on_change=_reset_page)
    actor = first[2].selectbox("Actor", [ANY, *mem.audit_actors()], key="audit_actor", on_change=_reset_page)
    statuses = second[0].multiselect(
        "Status", [s.value for s in ProposalStatus], key="audit_status", on_change=_reset_page
    )
    kinds = second[1].multiselect("Events", list(KINDS), key="audit_kinds", on_change=_reset_page)
    today = datetime.now(UTC).date()
    span = first[3].date_input(
        "Between (UTC)",
        value=(today - timedelta(days=30), today),
        key="audit_span",
        on_change=_reset_page,
    )
    since = until = None
    if isinstance(span, tuple | list) and span:
        since = datetime.combine(span[0], time.min, tzinfo=UTC)
        if len(span) > 1:
            until = datetime.combine(span[1], time.max, tzinfo=UTC)
    elif isinstance(span, date):
        since = datetime.combine(span, time.min, tzinfo=UTC)
    return AuditQuery(
        note_id=note_id.strip() or None,
        attribute=None if attribute == ANY else attribute,
        actor=None if actor == ANY else actor,
        statuses=tuple(statuses),
        since=since,
        until=until,
        kinds=tuple(KINDS[k] for k in kinds),
    )


def _table(mem: Memory, q: AuditQuery) -> None:
    try:
        total = mem.count_audit_events(q)
    except AmemError as exc:  # a filter no ledger can match (a NUL in the note id): say which
        st.error(md_escape(f"Nothing listed: {exc}."), icon=":material/error:")
        return
    pages = max(1, -(-total // PAGE_SIZE))
    if st.session_state.get("audit_page", 1) > pages:
        st.session_state["audit_page"] = pages
    bar = st.columns([1, 3, 1, 1], vertical_alignment="bottom")
    page = bar[0].number_input("Page", min_value=1, max_value=pages, step=1, key="audit_page")
    bar[1].caption(f"{total:,} events match · newest first")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    bar[2].download_button(
        "CSV",
        data=partial(mem.export_audit_csv, q),
        file_name=f"amem-audit-{stamp}.csv",
        mime="text/csv",
        icon=":material/download:",
        key="audit_csv",
        width="stretch",
        disabled=total == 0,
    )
    bar[3].download_button(
        "JSON Lines",
        data=partial(mem.export_audit_jsonl, q),
        file_name=f"amem-audit-{stamp}.jsonl",
        mime="application/jsonl",
        icon=":material/download:",
        key="audit_jsonl",
        width="stretch",
        disabled=total == 0,
    )
    events = mem.audit_events(q, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    if not events:
        st.caption("Nothing matches these filters.")
        return
    _when_table(
        [
            {
                "when": e.at,
                "event": e.event,
                "note": e.note_id,
                "attribute": e.attribute,
                "actor": e.actor,
                "status": e.status,
                "value": short(value_text(e.new_value), 120),
                "why": short(e.comment or e.reason or "", 120),
                "change": e.change_seq,
                "proposal": e.proposal_id,
            }
            for e in events
        ],
        max_rows=25,
        change=st.column_config.NumberColumn("change", format="%d"),
    )


def _erasures(mem: Memory) -> None:
    """Erasures are events of the history too: who erased what, when and why."""
    st.subheader("Erasures")
    found = mem.erasures()
    if not found:
        st.caption("No erasures: every raw log is as it was received.")
        return
    _when_table(
        [
            {
                "when": r.erased_at,
                "by": r.erased_by,
                "asked": r.asked,
                "why": short(r.reason, 120),
                "rows redacted": r.redacted,
                "erasure": r.id,
            }
            for r in found
        ],
        max_rows=10,
    )


def _tokens(mem: Memory) -> None:
    """Who could act as whom: each token made and revoked, as the event chain records it (a
    reviewer's token stands in for their password)."""
    st.subheader("Tokens made and revoked")
    history = mem.tokens.history()
    if not history:
        st.caption("No token has been made: agents and reviewers sign in with nothing but passwords.")
        return
    _when_table(
        [
            {
                "when": e.at,
                "what": e.action,
                "token of": e.name,
                "role": e.role.value,
                "scopes": ", ".join(e.scopes) if e.scopes else ("all" if e.role.value == "agent" else "-"),
                "by": e.by or "-",
                "expires": e.expires_at.strftime("%Y-%m-%d") if e.expires_at else "never",
                "token": e.token_id,
            }
            for e in reversed(history)
        ],
        max_rows=10,
    )


def _when_table(rows: list[dict[str, Any]], *, max_rows: int, **columns: Any) -> None:
    """Rows whose "when" is an aware time, shown in UTC to the second, at most ``max_rows`` tall;
    ``columns``: further column configs by name."""
    for row in rows:
        row["when"] = row["when"].astimezone(UTC).replace(tzinfo=None)
    frame = pd.DataFrame(rows)
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        height=dataframe_height(len(frame), max_rows=max_rows),
        column_config={
            "when": st.column_config.DatetimeColumn("when (UTC)", format="YYYY-MM-DD HH:mm:ss"),
            **columns,
        },
    )


def main() -> None:
    mem = state.memory()
    state.current_account()
    st.title("Audit log")
    state.clear_flashes()
    # The verification reads every change and raw log again (0.8 s at 10,000 changes): its place
    # is on top, but it runs last, so the charts and the trail are on screen while it works.
    verification = st.container()
    _charts(mem)
    st.divider()
    _table(mem, _query(mem))
    st.divider()
    _erasures(mem)
    st.divider()
    _tokens(mem)
    with verification:
        _verify(mem)


main()
