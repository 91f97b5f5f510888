"""Account facts: what holds now for one account, newest said first, with the decisions people
took on each fact and their reasons, its validity dates and a link to its history; or, with a
date, what the ledger held about the account at the end of that day (for an auditor).

Reads Memory.facts (amem.services.facts); retired facts (a newer one set their invalid_at) only
on request, marked.
"""

from __future__ import annotations

from datetime import date
from functools import partial

import streamlit as st

from amem.domain.values import parse_as_of
from amem.services.review import contested_words, date_words
from approval_ui import state
from approval_ui.render import md_escape

PAGE_SIZE = 25


def _when(moment: object) -> str:
    return date_words(moment) if moment is not None else "unknown time"  # type: ignore[arg-type]


def _reset_page() -> None:
    """Another account, day or choice of facts lists other facts: start at their first page."""
    st.session_state["facts_page"] = 1


def main() -> None:
    mem = state.memory()
    account = state.current_account()
    state.clear_flashes()
    st.title("Account facts")
    scopes = mem.scopes()
    if account.scopes is not None:  # a lead's own accounts first; the others can still be read
        scopes = sorted(scopes, key=lambda s: s not in account.scopes)
    if not scopes:
        st.info("The ledger has no notes yet.")
        return
    top = st.columns([3, 1.5, 1.5], vertical_alignment="bottom")
    scope = top[0].selectbox("Account", scopes, key="facts_scope", on_change=_reset_page)
    day: date | None = top[1].date_input(
        "As of",
        value=None,
        max_value="today",
        format="YYYY-MM-DD",
        key="facts_as_of",
        on_change=_reset_page,
        help="Empty: now. A day: the facts as the ledger held them at the end of that day (UTC), "
        "each as it stood then, with the decisions taken by then.",
    )
    include_retired = top[2].checkbox("Include retired facts", key="facts_retired", on_change=_reset_page)
    as_of = parse_as_of(day) if day is not None else None  # the day picked is its end, as everywhere
    page_number = st.session_state.get("facts_page", 1)
    facts = partial(mem.facts, scope, limit=PAGE_SIZE, include_retired=include_retired, as_of=as_of)
    page = facts(offset=(page_number - 1) * PAGE_SIZE)
    pages = max(1, -(-page.total // PAGE_SIZE))
    if page_number > pages:  # fewer facts than when that page was chosen (retired, erased meanwhile)
        st.session_state["facts_page"] = page_number = pages
        page = facts(offset=(page_number - 1) * PAGE_SIZE)
    noun = "fact" if page.total == 1 else "facts"
    which = noun if include_retired else ("current " if as_of is None else "") + noun
    when = f" as the ledger held them at the end of {day.isoformat()} (UTC)" if day is not None else ""
    st.caption(f"{page.total:,} {which}{when}, newest said first")
    for fact in page.facts:
        note = fact.note
        with st.container(border=True):
            head, link = st.columns([0.82, 0.18], vertical_alignment="top")
            mark = ":red[**Retired**] · " if fact.retired else ""
            head.markdown(mark + md_escape(note.content))
            link.page_link(
                "views/note_explorer.py",
                label="History",
                icon=":material/history:",
                query_params={"note": note.id},
            )
            said = f"said {_when(fact.said_at)}" + (f" by {fact.said_by}" if fact.said_by else "")
            valid = f"valid from {_when(note.valid_at)}" if note.valid_at else "valid since said"
            if note.invalid_at:
                valid += f" · {'retired' if fact.retired else 'until'} {_when(note.invalid_at)}"
            extras = [said, valid, *([f"category {note.category}"] if note.category else []), note.id]
            st.caption(md_escape(" · ".join(extras)))
            if note.decision_rationale:
                st.markdown(f"**Why** · {md_escape(note.decision_rationale)}")
            waiting = fact.retirement_waiting
            if waiting is not None:  # a newer note says otherwise; a reviewer has not decided yet
                said = contested_words(waiting.evidence, waiting.reason, note.content)
                st.markdown(
                    ":orange[**Contested**] · " + md_escape(f"{said}; its retirement waits for review")
                )
            for d in fact.decisions:
                comment = f": {d.comment}" if d.comment else ""
                st.caption(md_escape(f"{d.attribute} {d.status} by {d.reviewer} on {_when(d.at)}{comment}"))
    if page.total > PAGE_SIZE:
        st.number_input("Page", min_value=1, max_value=-(-page.total // PAGE_SIZE), step=1, key="facts_page")


main()
