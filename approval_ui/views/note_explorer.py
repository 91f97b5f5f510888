"""Note explorer: find a note, then read all of it: attributes, links both ways, raw logs,
its history as a timeline, and the note as it stood on any date.

Search uses Memory.search (the vector and keyword search) when amem.services.search is
installed; a plain "contains" filter on the ledger works either way.
"""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime, time
from functools import partial

import pandas as pd
import streamlit as st

from amem.domain.models import Note
from amem.domain.text import revealed
from amem.domain.values import parse_as_of
from amem.errors import AmemError, NotFoundError
from amem.memory import Memory
from amem.services.accounts import Account
from approval_ui import state
from approval_ui.render import EVENT_ICON, age, dataframe_height, fmt_time, md_escape, short, value_text

PAGE_SIZE = 25
NOTE_PARAM = "note"


def _search_available() -> bool:
    return importlib.util.find_spec("amem.services.search") is not None


TABLE_KEY = "explorer_table"
#: The table's row selection the page last acted on: a row opens its note when the selection
#: changes, never because it is still selected while the list shows other notes.
HANDLED_KEY = "explorer_table_handled"
NO_SELECTION = {"selection": {"rows": [], "columns": [], "cells": []}}


def _open(note_id: str) -> None:
    st.query_params[NOTE_PARAM] = note_id


def _clear_selection() -> None:
    """Forget the table's selected row (Streamlit keeps it across data changes): another list, or
    a note opened another way, must not be replaced by whatever note now sits in that row."""
    st.session_state[TABLE_KEY] = NO_SELECTION
    st.session_state[HANDLED_KEY] = []


def _on_open_id() -> None:
    wanted = (st.session_state.get("explorer_open_id") or "").strip()
    if wanted:
        _clear_selection()
        _open(wanted)


def _on_open_linked() -> None:
    wanted = st.session_state.get("explorer_linked")
    if wanted:
        _clear_selection()
        _open(wanted)


def _attributes(mem: Memory, note: Note) -> pd.DataFrame:
    rows = []
    data = note.model_dump(mode="json")
    extra = data.pop("extra", {})
    declared = list(mem.policy.declared_attributes())
    for name in [*data.keys(), *declared, *(k for k in extra if k not in declared)]:
        if name in ("id", "scope"):
            continue
        value = extra.get(name) if name in declared or name in extra else data.get(name)
        rows.append({"attribute": name, "value": value_text(value)})
    return pd.DataFrame(rows)


def _reset_page() -> None:
    """Another scope or filter lists other notes: start at their first page (as the review queue),
    with no row selected."""
    st.session_state["explorer_page"] = 1
    _clear_selection()


def _note_list(mem: Memory) -> None:
    scopes = mem.scopes()
    if not scopes:
        st.info("The ledger has no notes yet.")
        return
    search = _search_available()
    top = st.columns([3, 2], vertical_alignment="bottom")
    scope = top[0].selectbox("Scope", scopes, key="explorer_scope", on_change=_reset_page)
    semantic = search and top[1].toggle(
        "Semantic",
        key="explorer_semantic",
        value=False,
        help="Rank notes by meaning (Memory.search)",
        on_change=_reset_page,
    )
    text = st.text_input(
        "Find",
        key="explorer_text",
        placeholder="words in the note, or a note id",
        icon=":material/search:",
        on_change=_reset_page,
    )
    status: dict[str, str] = {}
    if semantic:
        include_retired = st.checkbox(
            "Include retired facts",
            key="explorer_retired",
            help="Notes a newer fact retired (invalid_at passed), listed after the current ones.",
            on_change=_clear_selection,
        )
    if semantic and text.strip():
        try:
            results = mem.search(text.strip(), 20, scope=scope, include_retired=include_retired)
        except AmemError as exc:
            st.error(md_escape(f"Search failed: {exc}"))
            return
        found = [r.note for r in results]
        # contested: a newer note says otherwise and its retirement waits for a reviewer
        status = {
            r.note_id: "retired" if r.retired else "contested" if r.retirement_waiting else "current"
            for r in results
        }
        total = len(found)
    else:
        include_deleted = st.checkbox("Include deleted notes", key="explorer_deleted", on_change=_reset_page)
        page = st.session_state.get("explorer_page", 1)
        find = partial(
            mem.find_notes, scope=scope, text=text, include_deleted=include_deleted, limit=PAGE_SIZE
        )
        try:
            result = find(offset=(page - 1) * PAGE_SIZE)
        except AmemError as exc:  # text no note can hold (a NUL): say so, as the search does
            st.error(md_escape(f"Not searched: {exc}."))
            return
        pages = max(1, -(-result.total // PAGE_SIZE))
        if page > pages:  # fewer notes than when that page was chosen (deleted, erased meanwhile)
            st.session_state["explorer_page"] = page = pages
            result = find(offset=(page - 1) * PAGE_SIZE)
        found, total = result.notes, result.total
    st.caption(f"{total:,} notes" + (" · select a row to open it" if total else ""))
    if found:
        frame = pd.DataFrame(
            [
                {
                    **({"status": status.get(n.id, "")} if status else {}),
                    "content": short(n.content, 160),
                    "tags": ", ".join(n.tags),
                    "changed": n.updated_at.astimezone(UTC).replace(tzinfo=None),
                    "note": n.id,
                }
                for n in found
            ]
        )
        event = st.dataframe(
            frame,
            hide_index=True,
            width="stretch",
            height=dataframe_height(len(frame), max_rows=15),
            on_select="rerun",
            selection_mode="single-row",
            key=TABLE_KEY,
            column_config={
                "content": st.column_config.TextColumn(width="large"),
                "changed": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
            },
        )
        rows = list(event.selection.rows) if event is not None else []  # type: ignore[union-attr]
        # Only a selection the reviewer just made opens a note: one left standing while a note
        # was opened by id or link, or while the rows changed, opens nothing.
        if rows != st.session_state.get(HANDLED_KEY, []):
            st.session_state[HANDLED_KEY] = rows
            if rows and rows[0] < len(found):
                _open(found[rows[0]].id)
    if not semantic and total > PAGE_SIZE:
        st.number_input(
            "Page",
            min_value=1,
            max_value=-(-total // PAGE_SIZE),
            step=1,
            key="explorer_page",
            width=160,
            on_change=_clear_selection,
        )


def _links(mem: Memory, note: Note) -> None:
    targets = mem.notes_by_id([link.note_id for link in note.links])
    out_col, in_col = st.container(), st.container()
    with out_col:
        st.markdown(f"**Links from this note** ({len(note.links)})")
        if note.links:
            st.dataframe(
                pd.DataFrame(
                    [
                        {
                            "note": link.note_id,
                            "reason": link.reason,
                            "content": short(targets[link.note_id].content, 80)
                            if link.note_id in targets
                            else "(missing)",
                        }
                        for link in note.links
                    ]
                ),
                hide_index=True,
                width="stretch",
            )
        else:
            st.caption("None.")
    incoming = mem.incoming_links(note)
    with in_col:
        st.markdown(f"**Links to this note** ({len(incoming)})")
        if incoming:
            st.dataframe(
                pd.DataFrame(
                    [
                        {
                            "note": x.note_id,
                            "reason": x.reason or "",
                            "content": short(x.content, 80) + (" (deleted)" if x.deleted else ""),
                        }
                        for x in incoming
                    ]
                ),
                hide_index=True,
                width="stretch",
            )
        else:
            st.caption("None.")
    linked = [link.note_id for link in note.links] + [x.note_id for x in incoming]
    if linked:
        st.selectbox(
            "Open a linked note",
            ["", *list(dict.fromkeys(linked))],
            key="explorer_linked",
            on_change=_on_open_linked,
        )


_REVERTED_KEY = "explorer_revert_result"


@state.guarded
def _on_revert(change_seq: int) -> None:
    """Propose the value a change replaced, as the signed-in reviewer (a misclicked approval, a
    value that turned out wrong): routed by the policy like any proposal, so a held attribute waits
    for a reviewer again, and history keeps both."""
    mem, account = state.memory(), state.callback_account()
    if account is None:  # signed out meanwhile: the page says so instead
        return
    reason = (st.session_state.get(f"revert_reason_{change_seq}") or "").strip() or None
    try:
        proposal = mem.revert(change_seq, reviewer=state.authenticated(mem, account), reason=reason)
    except AmemError as exc:
        st.session_state[_REVERTED_KEY] = ("error", f"Change {change_seq} was not reverted: {exc}")
        return
    outcome = {
        "pending": "it waits for a reviewer in the queue (the policy holds this attribute)",
        "auto_applied": "applied at once (the policy applies this attribute)",
        "rejected": "recorded as rejected (the policy freezes this attribute)",
    }.get(proposal.status.value, proposal.status.value)
    st.session_state[_REVERTED_KEY] = (
        "success" if proposal.status.value != "rejected" else "warning",
        f"Revert of change {change_seq} proposed ({proposal.id}, {proposal.attribute}): {outcome}.",
    )


def _revert_refusal(mem: Memory, account: Account, note: Note) -> str | None:
    """Why governance would refuse ``account``'s revert of a change to ``note`` (a revert takes what
    the reviewer's edit takes: an account they decide in; the policy then routes it, a held one
    waiting for a reviewer whose role covers the attribute), None when it would not: a control it
    would refuse is not offered."""
    policy = mem.policy
    if not policy.decides_in(account.id, note.scope):
        yours = ", ".join(policy.scopes_of(account.id) or ()) or "no account"
        return f"Only a reviewer who decides in {note.scope} may revert this change (you decide in {yours})."
    return None


def _history(mem: Memory, note: Note, account: Account) -> None:
    events = mem.history(note.id)
    said = st.session_state.pop(_REVERTED_KEY, None)
    if said is not None:
        getattr(st, said[0])(md_escape(said[1]))
    st.caption(f"{len(events)} events, oldest first. Every applied change is a row of the hash chain.")
    for e in events:
        with st.container(border=True):
            head = st.columns([0.72, 0.28])
            change = f" · change {e.change_seq}" if e.change_seq else ""
            head[0].markdown(
                f"{EVENT_ICON.get(e.event, '•')} **{md_escape(e.event)}** · {md_escape(e.attribute)}"
                f" · {md_escape(e.actor)}{md_escape(change)}"
            )
            head[1].caption(md_escape(fmt_time(e.at)), help=age(e.at))
            if e.event in ("proposed", "created") and e.new_value is not None:
                st.code(short(value_text(e.new_value), 600) or "(empty)", language=None, wrap_lines=True)
            why = e.reason or e.comment
            details = [f"why: {why}"] if why else []
            if e.model:
                details.append(f"model {e.model}" + (f" ({e.prompt_version})" if e.prompt_version else ""))
            if e.llm_call_id:  # the recorded call: `amem export llm-calls`, Memory.llm_call
                details.append(f"model call {e.llm_call_id}")
            if e.raw_log_ids and e.event in ("created", "proposed"):
                details.append("raw logs " + ", ".join(e.raw_log_ids))
            if e.rule and e.event in ("created", "proposed"):
                details.append(f"rule {e.rule}")
            if details:
                st.caption(md_escape(" · ".join(details)))
            if account.read_only or not e.change_seq or e.attribute == "content":  # content never changes
                continue
            refused = _revert_refusal(mem, account, note)
            if refused is not None:
                st.caption(md_escape(refused))
            else:
                with st.popover(f"Revert change {e.change_seq}", icon=":material/undo:"):
                    st.caption(
                        md_escape(
                            f"Proposes the value before it: {short(value_text(e.old_value), 200) or '(none)'}"
                        )
                    )
                    st.text_input("Why (optional)", key=f"revert_reason_{e.change_seq}")
                    st.button(
                        "Propose the earlier value",
                        key=f"revert_{e.change_seq}",
                        on_click=_on_revert,
                        args=(e.change_seq,),
                    )


def _as_of(mem: Memory, note: Note) -> None:
    how = st.radio("Show the note", ["on a date", "at a version"], horizontal=True, key="explorer_asof_mode")
    if how == "at a version":
        versions = mem.note_versions(note.id)
        change = st.selectbox(
            "Version",
            versions,
            index=len(versions) - 1,
            key="explorer_asof_version",
            format_func=lambda c: (
                f"v{c.note_version} · {fmt_time(c.applied_at)} · {c.attribute} by {c.actor}"
            ),
        )
        # by version, not by its time: the changes of one write (an add_note's attributes) share it
        past = mem.as_of_version(note.id, change.note_version)
        st.markdown(
            md_escape(
                f"As it stood after change {change.seq} ({fmt_time(change.applied_at)}): "
                f"version {past.version} (now {note.version})."
            )
        )
    else:
        cols = st.columns(2, vertical_alignment="bottom")
        day = cols[0].date_input("Date (UTC)", value=datetime.now(UTC).date(), key="explorer_asof_day")
        clock = cols[1].time_input("Time (UTC)", value=time(23, 59), key="explorer_asof_time")
        # the end of the chosen minute, read as every interface reads an as-of (values.parse_as_of):
        # history shows a change's time to the minute, so a change at "14:05 UTC" is one the note
        # had at 14:05, whatever second it was made
        chosen = datetime.combine(day, clock)  # type: ignore[arg-type]
        moment = parse_as_of(chosen.isoformat(timespec="minutes"), what="the date and time")
        at_moment = mem.as_of(note.id, moment)
        if at_moment is None:
            st.info(
                md_escape(
                    f"The note did not exist yet on {fmt_time(moment)} (created {fmt_time(note.created_at)})."
                )
            )
            return
        past = at_moment
        st.markdown(
            md_escape(f"As it stood on {fmt_time(moment)}: version {past.version} (now {note.version}).")
        )
    then, now = _attributes(mem, past), _attributes(mem, note)
    merged = then.merge(now, on="attribute", how="outer", suffixes=(" then", " now")).fillna("")
    merged["changed since"] = merged["value then"] != merged["value now"]
    st.dataframe(merged, hide_index=True, width="stretch", height=dataframe_height(len(merged)))


def _detail(mem: Memory, note_id: str) -> None:
    try:
        note = mem.read(note_id)
    except NotFoundError as exc:  # an id no note has, or can have (a NUL in a typed or linked id)
        st.error(md_escape(f"No such note in this ledger: {exc}."))
        return
    with st.container(border=True):
        badges = [f"`{note.id}`", f"scope **{md_escape(note.scope)}**", f"version {note.version}"]
        if note.deleted:
            badges.append(":red-badge[deleted]")
        st.markdown(" · ".join(badges))
        st.markdown(md_escape(note.content))
        st.caption(
            md_escape(f"created {fmt_time(note.created_at)} · last changed {fmt_time(note.updated_at)}")
        )
    tabs = st.tabs(["Attributes", "Links", "Raw logs", "History", "As of a date"])
    with tabs[0]:
        st.dataframe(_attributes(mem, note), hide_index=True, width="stretch")
    with tabs[1]:
        _links(mem, note)
    with tabs[2]:
        logs = mem.raw_logs(note.raw_log_ids)
        if not logs:
            st.caption("No raw log.")
        for raw in logs:
            st.caption(
                md_escape(f"{raw.id} · {raw.actor} · {fmt_time(raw.occurred_at)} · sha256 {raw.sha256[:12]}…")
            )
            st.code(revealed(raw.text), language=None, wrap_lines=True)
    with tabs[3]:
        _history(mem, note, state.current_account())
    with tabs[4]:
        _as_of(mem, note)


def main() -> None:
    mem = state.memory()
    state.current_account()
    st.title("Note explorer")
    state.clear_flashes()
    list_col, detail_col = st.columns([5, 7], gap="large")
    with list_col:
        _note_list(mem)
        st.text_input("Open a note by id", key="explorer_open_id", on_change=_on_open_id, placeholder="n_…")
    with detail_col:
        note_id = st.query_params.get(NOTE_PARAM)
        if note_id:
            _detail(mem, note_id)
        else:
            st.info("Select a note in the list to read it whole.", icon=":material/arrow_back:")


main()
