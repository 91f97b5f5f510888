"""Review queue: reading a proposal, deciding it alone or in bulk, conflicts, refusals by role."""

from __future__ import annotations

import re

from amem.domain.models import Proposal, ProposalStatus, Proposer
from amem.memory import Memory
from tests.approval_ui.conftest import open_console, plain, texts
from tests.factories import LLM, make_note

MODEL = Proposer(kind="llm", id="offline", model="gpt-4o-mini", prompt_version="evolve/3")


def pending_rationale(mem: Memory, content: str, value: str, reason: str = "stated in the call") -> Proposal:
    note = make_note(mem, content)
    p = mem.propose(
        note.id, "decision_rationale", value, reason=reason, proposer=MODEL, raw_log_ids=note.raw_log_ids
    )
    assert p.status == ProposalStatus.PENDING
    return p


def test_a_pending_proposal_shows_values_reason_raw_log_and_model(mem: Memory) -> None:
    p = pending_rationale(mem, "Call with Acme: they need SSO via Okta", "Okta because IT mandates it")
    at = open_console("alice")
    page = plain(texts(at))
    assert "decision_rationale" in page
    assert "Okta because IT mandates it" in [c.value for c in at.code]  # the proposed value
    assert "(empty)" in [c.value for c in at.code]  # the current value
    assert "Call with Acme: they need SSO via Okta" in [c.value for c in at.code]  # the raw log
    assert "stated in the call" in page
    assert "gpt-4o-mini" in page and "evolve/3" in page
    assert ":green-background[" in texts(at)  # the difference, highlighted
    assert p.id in page
    assert at.metric[0].value == "1"


def test_approve_applies_the_value_as_the_signed_in_reviewer(mem: Memory) -> None:
    p = pending_rationale(mem, "Acme call", "Okta because IT mandates it")
    at = open_console("alice")
    at.text_input(key=f"comment_{p.id}").input("matches the call")
    at.button(key=f"approve_{p.id}").click().run()
    decided = mem.proposal(p.id)
    assert decided.status == ProposalStatus.APPROVED
    assert decided.reviewer == "alice" and decided.review_comment == "matches the call"
    assert mem.read(p.note_id).decision_rationale == "Okta because IT mandates it"
    assert plain(at.success[0].value) == f"Approved: decision_rationale of {p.note_id}."
    assert not any(b.key == f"approve_{p.id}" for b in at.button)  # gone from the queue


def test_reject_needs_a_comment_then_records_it(mem: Memory) -> None:
    p = pending_rationale(mem, "Acme call", "a guess")
    at = open_console("alice")
    at.button(key=f"reject_{p.id}").click().run()
    assert "needs a comment" in plain(texts(at))
    assert mem.proposal(p.id).status == ProposalStatus.PENDING
    at.text_input(key=f"comment_{p.id}").input("not what was said").run()
    at.button(key=f"reject_{p.id}").click().run()
    decided = mem.proposal(p.id)
    assert decided.status == ProposalStatus.REJECTED and decided.review_comment == "not what was said"
    assert mem.read(p.note_id).decision_rationale is None


def test_bulk_approve_decides_only_the_selected(mem: Memory) -> None:
    a = pending_rationale(mem, "one", "first")
    b = pending_rationale(mem, "two", "second")
    c = pending_rationale(mem, "three", "third")
    at = open_console("alice")
    at.checkbox(key=f"sel_{a.id}").check()
    at.checkbox(key=f"sel_{c.id}").check().run()
    at.button(key="bulk_approve").click().run()
    assert [mem.proposal(x.id).status for x in (a, b, c)] == [
        ProposalStatus.APPROVED,
        ProposalStatus.PENDING,
        ProposalStatus.APPROVED,
    ]
    assert "2 selected: 2 approved" in plain(texts(at))


def test_bulk_reject_with_select_all_and_a_comment(mem: Memory) -> None:
    ids = [pending_rationale(mem, f"note {i}", f"value {i}").id for i in range(3)]
    at = open_console("alice")
    at.checkbox(key="bulk_all").check().run()
    at.button(key="bulk_reject").click().run()  # no comment: refused before touching the ledger
    assert all(mem.proposal(i).status == ProposalStatus.PENDING for i in ids)
    assert "needs a comment" in plain(texts(at))
    at.checkbox(key="bulk_all").check().run()
    at.text_input(key="bulk_comment").input("duplicates of the CRM import").run()
    at.button(key="bulk_reject").click().run()
    decided = [mem.proposal(i) for i in ids]
    assert {d.status for d in decided} == {ProposalStatus.REJECTED}
    assert {d.review_comment for d in decided} == {"duplicates of the CRM import"}


def test_a_stale_proposal_is_flagged_and_approving_it_shows_the_conflict(mem: Memory) -> None:
    # context needs review on contract notes; once the tag is gone a person's edit applies at once
    note = make_note(mem, "Globex contract", tags=["contract"])
    stale = mem.propose(note.id, "context", "renewal talks", reason="from the call", proposer=LLM)
    assert stale.status == ProposalStatus.PENDING
    mem.propose(note.id, "tags", [], reason="not a contract yet", proposer=LLM)
    mem.update(note.id, actor="bob", context="pilot only")
    at = open_console("alice")
    assert "The note changed since this proposal was made" in plain(texts(at))
    assert "pilot only" in [c.value for c in at.code]  # the value that is current now
    at.button(key=f"approve_{stale.id}").click().run()
    assert mem.proposal(stale.id).status == ProposalStatus.CONFLICT
    warning = plain(" ".join(w.value for w in at.warning))
    assert "Conflict on context" in warning and "Current value now: pilot only" in warning
    assert mem.read(note.id).context == "pilot only"


def test_a_refusal_by_role_comes_from_the_governance_service(mem: Memory) -> None:
    note = make_note(mem, "Globex renewal")
    p = mem.propose(note.id, "deleted", True, reason="duplicate", proposer=LLM)  # sales_lead may not
    at = open_console("bob")
    assert any(b.key == f"approve_{p.id}" for b in at.button)  # the button is there: the service decides
    at.button(key=f"approve_{p.id}").click().run()
    error = plain(" ".join(e.value for e in at.error))
    assert "Refused by the policy" in error
    assert "bob (roles: sales_lead) may not decide changes to deleted; needs: cs_lead" in error
    assert mem.proposal(p.id).status == ProposalStatus.PENDING
    assert mem.read(note.id).deleted is False


def test_an_auditor_reads_the_queue_without_decision_controls(mem: Memory) -> None:
    p = pending_rationale(mem, "Acme call", "Okta")
    at = open_console("audrey")
    assert "Read-only" in plain(texts(at))
    assert "Okta" in [c.value for c in at.code]
    assert not [b for b in at.button if b.key and p.id in b.key]
    assert not [c for c in at.checkbox if c.key and c.key.startswith("sel_")]


def test_filters_and_pages(mem: Memory) -> None:
    acme = [pending_rationale(mem, f"acme {i}", f"value {i}") for i in range(3)]
    globex_note = make_note(mem, "globex", scope="globex")
    g = mem.propose(globex_note.id, "next_step", "send quote", reason="r", proposer=LLM)
    at = open_console("alice")
    at.selectbox(key="queue_scope").select("globex").run()
    shown = {b.key for b in at.button if b.key and b.key.startswith("approve_")}
    assert shown == {f"approve_{g.id}"}
    at.selectbox(key="queue_scope").select("any")
    at.selectbox(key="queue_size").select(10).run()
    at.selectbox(key="queue_order").select("newest first").run()
    first = next(b.key for b in at.button if b.key and b.key.startswith("approve_"))
    assert first == f"approve_{g.id}"
    at.selectbox(key="queue_attribute").select("decision_rationale").run()
    shown = [b.key for b in at.button if b.key and b.key.startswith("approve_")]
    assert shown == [f"approve_{p.id}" for p in reversed(acme)]
    at.selectbox(key="queue_proposer").select("llm:offline").run()
    assert "3 pending match" in plain(texts(at))


def test_note_content_cannot_inject_markup(mem: Memory) -> None:
    hostile = "<script>alert('x')</script> [click me](javascript:alert(1)) see https://evil.example"
    note = make_note(mem, hostile)
    p = mem.propose(
        note.id,
        "decision_rationale",
        "**bold** <img src=x onerror=alert(1)>",
        reason="<b>why</b> [x](y)",
        proposer=LLM,
        raw_log_ids=note.raw_log_ids,
    )
    at = open_console("alice")
    rendered = texts(at)
    for element in (*at.markdown, *at.caption, *at.warning, *at.error, *at.success, *at.info):
        # markup characters only ever appear escaped, and no element may render HTML
        assert not re.search(r"(?<!\\)[<>]", element.value.removeprefix("> ")), element.value
        assert "](javascript" not in element.value and "https://" not in element.value
        assert not getattr(element.proto, "allow_html", False)
    assert "\\<script\\>" in rendered and "\\[click me\\]\\(javascript" in rendered
    assert "\\*\\*bold\\*\\*" in rendered and "\\<b\\>why\\<\\/b\\>" in rendered
    assert hostile in [c.value for c in at.code]  # the raw log, verbatim in a code block
    assert p.id in plain(rendered)


def test_the_console_decides_only_under_the_installed_policy(mem: Memory) -> None:
    from amem.policy import fingerprint
    from amem.services.authentication import Authentication

    p = pending_rationale(mem, "Acme call", "Okta because IT mandates it")
    other = mem.policy.model_copy(update={"self_approval": True})  # not the console's file
    by = Authentication(other, fingerprint(other)).signed_in("alice", method="test")
    mem.install_policy(other, by=by)
    at = open_console("alice")
    assert any("decides nothing" in w.value for w in at.warning)
    at.button(key=f"approve_{p.id}").click().run()
    assert "decides nothing" in plain(texts(at))
    assert mem.proposal(p.id).status == ProposalStatus.PENDING

    same = mem.policy  # the console's own file, installed as the next version by a policy admin
    with Memory(policy=other) as current:
        current.install_policy(same, by=current.authentication.signed_in("alice", method="test"))
    at = open_console("alice")
    at.button(key=f"approve_{p.id}").click().run()
    assert mem.proposal(p.id).status == ProposalStatus.APPROVED
