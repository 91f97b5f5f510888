"""Note explorer: finding a note, its attributes, links both ways, raw logs, history, as-of."""

from __future__ import annotations

from datetime import date, timedelta

import pandas as pd
from streamlit.testing.v1 import AppTest

from amem.memory import Memory
from tests.approval_ui.conftest import delete_notes, open_console, plain, texts
from tests.factories import llm_proposer, make_note, signed_in


def _frames(at: AppTest) -> list[pd.DataFrame]:
    return [d.value for d in at.dataframe]


def test_find_lists_notes_of_a_scope_by_their_words(mem: Memory) -> None:
    make_note(mem, "Acme wants SSO via Okta")
    make_note(mem, "Acme renewal in March")
    make_note(mem, "Globex wants SSO too", scope="globex")
    at = open_console("audrey", "explorer")
    listed = _frames(at)[0]
    assert sorted(listed["content"]) == ["Acme renewal in March", "Acme wants SSO via Okta"]
    at.text_input(key="explorer_text").input("sso").run()
    assert list(_frames(at)[0]["content"]) == ["Acme wants SSO via Okta"]
    at.selectbox(key="explorer_scope").select("globex").run()
    assert list(_frames(at)[0]["content"]) == ["Globex wants SSO too"]


def test_a_note_shows_attributes_links_both_ways_raw_logs_and_history(mem: Memory) -> None:
    target = make_note(mem, "Acme needs SSO", tags=["acme"])
    source = make_note(mem, "Acme security review", links=[{"note_id": target.id, "reason": "same customer"}])
    unrelated = make_note(mem, "Other customer")
    p = mem.propose(
        target.id, "decision_rationale", "Okta is mandated", reason="call", proposer=llm_proposer(mem)
    )
    mem.approve(p.id, reviewer=signed_in(mem, "alice"), comment="ok")
    at = open_console("alice", "explorer", note=target.id)
    frames = _frames(at)
    attributes = next(f for f in frames if "attribute" in f.columns and "value" in f.columns)
    values = dict(zip(attributes["attribute"], attributes["value"], strict=True))
    assert values["decision_rationale"] == "Okta is mandated" and values["tags"] == "• acme"
    incoming = next(f for f in frames if "reason" in f.columns and source.id in set(f["note"]))
    assert list(incoming["reason"]) == ["same customer"] and unrelated.id not in set(incoming["note"])
    assert "Acme needs SSO" in [c.value for c in at.code]  # the raw log
    history = plain(texts(at))
    for event in ("created", "proposed", "approved", "applied"):
        assert f"**{event}**" in history
    assert "why: call" in history and "why: ok" in history


def test_outgoing_links_show_the_target(mem: Memory) -> None:
    target = make_note(mem, "Acme needs SSO")
    source = make_note(mem, "Acme security review", links=[{"note_id": target.id, "reason": "same customer"}])
    at = open_console("alice", "explorer", note=source.id)
    outgoing = next(f for f in _frames(at) if "reason" in f.columns and target.id in set(f["note"]))
    assert list(outgoing["content"]) == ["Acme needs SSO"]


def test_as_of_shows_the_note_as_it_stood(mem: Memory) -> None:
    note = make_note(mem, "Acme call")
    p = mem.propose(note.id, "decision_rationale", "first reason", reason="r", proposer=llm_proposer(mem))
    mem.approve(p.id, reviewer=signed_in(mem, "alice"))
    p = mem.propose(note.id, "decision_rationale", "second reason", reason="r", proposer=llm_proposer(mem))
    mem.approve(p.id, reviewer=signed_in(mem, "alice"))
    at = open_console("alice", "explorer", note=note.id)

    at.date_input(key="explorer_asof_day").set_value(date.today() - timedelta(days=2)).run()
    assert "did not exist yet" in plain(" ".join(i.value for i in at.info))

    at.radio(key="explorer_asof_mode").set_value("at a version").run()
    versions = at.selectbox(key="explorer_asof_version")
    middle = next(o for o in versions.options if o.startswith("v2"))
    versions.select(middle).run()
    compared = next(f for f in _frames(at) if "value then" in f.columns)
    row = compared[compared["attribute"] == "decision_rationale"].iloc[0]
    assert (row["value then"], row["value now"], bool(row["changed since"])) == (
        "first reason",
        "second reason",
        True,
    )
    assert "version 2 (now 3)" in plain(texts(at))


def test_a_version_shows_that_version_though_its_changes_share_a_moment(mem: Memory) -> None:
    """One edit of three attributes applies them in one write, at one moment: choosing the version
    after the first shows that one alone, not the three."""
    note = make_note(mem, "Acme call")
    mem.update(note.id, actor="agent:sales-agent", keywords=["acme"], tags=["call"], category="meeting")
    changes = mem.note_versions(note.id)
    assert [c.attribute for c in changes[-3:]] == ["keywords", "tags", "category"]
    assert len({c.applied_at for c in changes[-3:]}) == 1
    at = open_console("alice", "explorer", note=note.id)
    at.radio(key="explorer_asof_mode").set_value("at a version").run()
    versions = at.selectbox(key="explorer_asof_version")
    first = changes[-3].note_version
    versions.select(next(o for o in versions.options if o.startswith(f"v{first} "))).run()
    assert not at.exception
    compared = next(f for f in _frames(at) if "value then" in f.columns).set_index("attribute")
    assert compared.loc["keywords", "value then"] == "• acme"
    assert (compared.loc["tags", "value then"], compared.loc["category", "value then"]) == ("", "")
    assert f"version {first} (now {first + 2})" in plain(texts(at))


def test_history_names_the_model_call_behind_a_proposed_value(mem: Memory) -> None:
    note_id = mem.add_note("Acme needs SSO via Okta.", actor="agent:sales-agent", scope="acme")
    calls = {e.llm_call_id for e in mem.history(note_id) if e.llm_call_id}
    assert calls  # the analysis's model calls, recorded
    shown = plain(texts(open_console("audrey", "explorer", note=note_id)))
    assert all(f"model call {call}" in shown for call in calls)


def test_an_unknown_note_id_says_so(mem: Memory) -> None:
    make_note(mem, "x")
    at = open_console("alice", "explorer", note="n_missing")
    said = plain(" ".join(e.value for e in at.error))
    assert "No such note in this ledger: note n_missing does not exist." in said


def test_semantic_search_ranks_notes_by_meaning(mem: Memory) -> None:
    make_note(mem, "Acme renewal pricing in March")
    make_note(mem, "Acme wants single sign-on via Okta")
    at = open_console("alice", "explorer")
    at.toggle(key="explorer_semantic").set_value(True)
    at.text_input(key="explorer_text").input("SSO login").run()
    assert not at.exception
    assert _frames(at)[0]["content"].iloc[0] == "Acme wants single sign-on via Okta"


def test_semantic_search_marks_a_fact_a_newer_one_contests_before_anyone_decides(mem: Memory) -> None:
    from datetime import UTC, datetime

    from tests.factories import contradict, said

    old = said(mem, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(mem, "Acme pays $49 per seat from now on", at=datetime(2026, 8, 20, tzinfo=UTC))
    contradict(mem, old, new, "2026-08-20T00:00:00Z")
    at = open_console("alice", "explorer")
    at.toggle(key="explorer_semantic").set_value(True)
    at.text_input(key="explorer_text").input("price per seat").run()
    assert not at.exception
    listed = _frames(at)[0].set_index("note")
    assert listed.loc[old.id, "status"] == "contested" and listed.loc[new.id, "status"] == "current"


def test_a_reviewer_reverts_an_approved_value_from_its_history(mem: Memory) -> None:
    """A misclicked approval undone in the console, not only with `amem revert`: the earlier value
    is proposed as the reviewer, routed by the policy (decision_rationale waits for a reviewer
    again), and history keeps both; an auditor sees no revert control."""
    note = make_note(mem, "Acme needs SSO")
    p = mem.propose(
        note.id, "decision_rationale", "Okta is mandated", reason="call", proposer=llm_proposer(mem)
    )
    mem.approve(p.id, reviewer=signed_in(mem, "alice"))
    (change,) = [c for c in mem.note_versions(note.id) if c.attribute == "decision_rationale"]

    assert not [
        b for b in open_console("audrey", "explorer", note=note.id).button if b.key == f"revert_{change.seq}"
    ]
    at = open_console("bob", "explorer", note=note.id)
    at.text_input(key=f"revert_reason_{change.seq}").input("approved by mistake").run()
    at.button(key=f"revert_{change.seq}").click().run()

    assert f"Revert of change {change.seq} proposed" in plain(texts(at))
    assert "it waits for a reviewer in the queue" in plain(texts(at))
    (revert,) = [q for q in mem.pending(note_id=note.id, limit=10) if q.revert_of == change.seq]
    assert (revert.new_value, revert.proposer.id) == (None, "bob") and "approved by mistake" in revert.reason
    assert mem.read(note.id).decision_rationale == "Okta is mandated"  # until a reviewer approves it


#: approval_ui/views/note_explorer.py's PAGE_SIZE (importing a page runs it)
PAGE_SIZE = 25


def test_another_scope_starts_at_its_first_page_and_a_page_past_the_end_shows_the_last(mem: Memory) -> None:
    notes = [make_note(mem, f"Acme note {i}") for i in range(2 * PAGE_SIZE + 5)]
    for i in range(PAGE_SIZE + 3):
        make_note(mem, f"Globex note {i}", scope="globex")
    make_note(mem, "Initech note", scope="initech")
    at = open_console("audrey", "explorer")
    at.selectbox(key="explorer_scope").select("acme").run()
    at.number_input(key="explorer_page").set_value(3).run()
    assert len(_frames(at)[0]) == 5
    at.selectbox(key="explorer_scope").select("globex").run()  # two pages: its first, not nothing
    assert len(_frames(at)[0]) == PAGE_SIZE and at.number_input(key="explorer_page").value == 1
    at.number_input(key="explorer_page").set_value(2).run()
    at.selectbox(key="explorer_scope").select("initech").run()  # one page, no page number
    assert list(_frames(at)[0]["content"]) == ["Initech note"]
    at.selectbox(key="explorer_scope").select("acme").run()
    assert len(_frames(at)[0]) == PAGE_SIZE  # acme again: its first page
    at.number_input(key="explorer_page").set_value(3).run()
    delete_notes(mem, notes[:10])  # meanwhile, by another reviewer: page 3 of acme is gone
    at.run()
    assert len(_frames(at)[0]) == PAGE_SIZE - 5 and at.number_input(key="explorer_page").value == 2
    assert not at.exception


def _select_row(at: AppTest, row: int) -> None:
    """A click on a row of the note list (AppTest cannot click one: the selection is set as the
    browser sends it; Streamlit keeps it across runs and data changes, as a browser does)."""
    at.session_state["explorer_table"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()


def _open_badge(at: AppTest) -> str:
    """The id of the note the detail column shows."""
    (badge,) = [m.value for m in at.markdown if m.value.startswith("`n_")]
    return badge.split("`")[1]


def test_a_row_left_selected_never_overrides_a_note_opened_by_id_or_link(mem: Memory) -> None:
    target = make_note(mem, "Acme needs SSO")
    source = make_note(mem, "Acme security review", links=[{"note_id": target.id, "reason": "same"}])
    other = make_note(mem, "Acme renewal in March")
    at = open_console("alice", "explorer")
    listed = list(_frames(at)[0]["note"])
    _select_row(at, listed.index(source.id))
    assert at.query_params.get("note") == source.id and _open_badge(at) == source.id

    at.text_input(key="explorer_open_id").input(other.id).run()
    assert at.query_params.get("note") == other.id and _open_badge(at) == other.id
    at.run()  # and it stays open: the row selected before does not take it back
    assert _open_badge(at) == other.id

    _select_row(at, listed.index(source.id))  # the same row clicked again opens its note again
    assert _open_badge(at) == source.id
    at.selectbox(key="explorer_linked").select(target.id).run()
    assert at.query_params.get("note") == target.id and _open_badge(at) == target.id
    assert not at.exception


def test_another_scope_page_or_search_opens_no_note_nobody_chose(mem: Memory) -> None:
    for i in range(PAGE_SIZE + 2):
        make_note(mem, f"Acme note {i}")
    globex = make_note(mem, "Globex wants on-prem hosting", scope="globex")
    at = open_console("alice", "explorer")
    at.selectbox(key="explorer_scope").select("acme").run()
    first = _frames(at)[0]["note"].iloc[0]
    _select_row(at, 0)
    assert _open_badge(at) == first

    at.number_input(key="explorer_page").set_value(2).run()
    assert _frames(at)[0]["note"].iloc[0] != first and _open_badge(at) == first
    at.text_input(key="explorer_text").input("note 1").run()
    assert _open_badge(at) == first
    at.text_input(key="explorer_text").input("").run()
    at.selectbox(key="explorer_scope").select("globex").run()
    assert list(_frames(at)[0]["note"]) == [globex.id] and _open_badge(at) == first
    newer = make_note(mem, "Globex call: hosting in Frankfurt", scope="globex")  # rows move meanwhile
    _select_row(at, 0)
    opened = _open_badge(at)
    assert opened in (globex.id, newer.id) and opened == _frames(at)[0]["note"].iloc[0]
    make_note(mem, "Globex email: hosting decided", scope="globex")
    at.run()  # another note takes row 0: the note opened stays the one chosen
    assert _open_badge(at) == opened
    assert not at.exception


def test_a_date_and_minute_show_the_changes_made_in_that_minute(mem: Memory) -> None:
    """History shows a change at "14:05 UTC": the note "on a date" at 14:05 includes it, whatever
    second of the minute it was made."""
    from datetime import UTC

    note = make_note(mem, "Acme call")
    p = mem.propose(note.id, "decision_rationale", "Okta is mandated", reason="r", proposer=llm_proposer(mem))
    mem.approve(p.id, reviewer=signed_in(mem, "alice"))
    (change,) = [c for c in mem.note_versions(note.id) if c.attribute == "decision_rationale"]
    applied = change.applied_at.astimezone(UTC)
    at = open_console("alice", "explorer", note=note.id)
    at.date_input(key="explorer_asof_day").set_value(applied.date())
    at.time_input(key="explorer_asof_time").set_value(applied.time().replace(second=0, microsecond=0)).run()
    compared = next(f for f in _frames(at) if "value then" in f.columns).set_index("attribute")
    assert compared.loc["decision_rationale", "value then"] == "Okta is mandated"
    assert not bool(compared.loc["decision_rationale", "changed since"])


def test_revert_is_offered_only_to_a_reviewer_governance_lets_revert(mem: Memory) -> None:
    """Governance refuses a revert outside the accounts the reviewer decides in; the explorer still
    offered them "Revert change N", whose click only failed. The control is now offered where the
    revert would be taken (a revert is the reviewer's edit, whatever their role: the policy routes
    it), and elsewhere the page says who may revert."""
    note = make_note(mem, "Globex needs SSO", scope="globex", tags=["sso"])
    p = mem.propose(
        note.id, "decision_rationale", "Okta is mandated", reason="call", proposer=llm_proposer(mem)
    )
    mem.approve(p.id, reviewer=signed_in(mem, "alice"))
    seq = {c.attribute: c.seq for c in mem.note_versions(note.id)}

    def reverts(reviewer: str) -> tuple[set[str], str]:
        at = open_console(reviewer, "explorer", note=note.id)
        return {b.key for b in at.button if b.key and b.key.startswith("revert_")}, plain(texts(at))

    offered, page = reverts("alice")  # cs_lead: every attribute, every account
    assert offered == {f"revert_{seq['tags']}", f"revert_{seq['decision_rationale']}"}
    offered, page = reverts("bob")  # sales_lead: his edit of tags is routed by the policy too
    assert offered == {f"revert_{seq['tags']}", f"revert_{seq['decision_rationale']}"}
    assert "may revert" not in page
    offered, page = reverts("carol")  # sales_lead of acme only
    assert offered == set()
    assert "Only a reviewer who decides in globex may revert this change (you decide in acme)." in page
    offered, page = reverts("audrey")  # the auditor decides nothing: no control, no note
    assert offered == set() and "may revert" not in page
