"""Review queue: one item per input, its evidence highlighted, decided whole, value by value, or
all matching the filters after a count and a confirmation; conflicts and refusals by role."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from amem.domain.models import Note, Proposal, ProposalStatus, Proposer
from amem.memory import Memory
from tests.approval_ui.conftest import open_console, plain, texts
from tests.factories import llm_proposer, make_note, said

CALL = "Call with Acme: they need SSO via Okta because IT mandates it. Next step: send the quote."


def _model(mem: Memory) -> Proposer:
    """The model behind the queue's held values, naming the call it made."""
    return llm_proposer(mem, name="offline", model="gpt-4o-mini", prompt_version="evolve/3")


def hold(mem: Memory, note: Note, attribute: str, value: object, **kw: object) -> Proposal:
    p = mem.propose(
        note.id,
        attribute,
        value,
        reason=str(kw.pop("reason", "stated in the call")),
        proposer=kw.pop("proposer", None) or _model(mem),  # type: ignore[arg-type]
        raw_log_ids=note.raw_log_ids,
        **kw,  # type: ignore[arg-type]
    )
    assert p.status == ProposalStatus.PENDING
    return p


def call_item(mem: Memory) -> tuple[Note, list[Proposal]]:
    note = said(mem, CALL, at=datetime(2026, 3, 4, 15, 0, tzinfo=UTC))
    return note, [
        hold(mem, note, "decision_rationale", "IT mandates it", evidence="because IT mandates it"),
        hold(mem, note, "next_step", "send the quote"),
        hold(mem, note, "valid_at", "2026-03-04T00:00:00Z"),
    ]


def test_an_item_shows_the_input_its_evidence_and_values_in_words(mem: Memory) -> None:
    note, proposals = call_item(mem)
    at = open_console("alice")
    page = plain(texts(at))
    assert "acme" in page and "said 4 March 2026, 15:00 UTC by agent:sales-agent" in page
    assert f"item {note.raw_log_ids[0]} · 3 held value(s)" in page
    raw = texts(at)
    assert ":orange-background[because IT mandates it]" in raw  # evidence highlighted
    assert ":orange-background[send the quote]" in raw  # no evidence: its own words are found
    codes = [c.value for c in at.code]
    assert "IT mandates it" in codes and "(none)" in codes  # proposed and current
    assert "4 March 2026" in codes  # a date, as a date
    assert CALL in codes  # the raw log verbatim, in the expander
    assert "gpt-4o-mini" in page and "evolve/3" in page and "stated in the call" in page
    buttons = [b.key for b in at.button]
    assert f"approve_item_{note.raw_log_ids[0]}" in buttons
    assert all(f"approve_{p.id}" in buttons for p in proposals)


def test_approve_an_item_whole(mem: Memory) -> None:
    note, proposals = call_item(mem)
    at = open_console("alice")
    at.text_input(key=f"comment_{note.raw_log_ids[0]}").input("matches the call")
    at.button(key=f"approve_item_{note.raw_log_ids[0]}").click().run()
    decided = [mem.proposal(p.id) for p in proposals]
    assert {d.status for d in decided} == {ProposalStatus.APPROVED}
    assert {d.reviewer for d in decided} == {"alice"} and decided[0].review_comment == "matches the call"
    assert f"Approved item {note.raw_log_ids[0]}: 3 approved." in plain(at.success[0].value)
    assert "Nothing waiting for review here." in plain(texts(at))


def _last_decisions(at: object) -> list[object]:
    return [e for e in at.expander if e.label.startswith("Your last decision")]  # type: ignore[attr-defined]


def test_a_reviewer_sees_their_last_decisions_after_a_reload(mem: Memory) -> None:
    """The page's message goes with the session; the ledger's record of what she decided stays:
    a fresh session (a reload, a lost browser tab) still tells alice what she did last, and not
    what bob did."""
    note, proposals = call_item(mem)
    at = open_console("alice")
    assert not _last_decisions(at)  # nothing decided yet
    at.text_input(key=f"comment_{note.raw_log_ids[0]}").input("matches the call")
    at.button(key=f"approve_item_{note.raw_log_ids[0]}").click().run()

    reloaded = open_console("alice")
    (shown,) = _last_decisions(reloaded)
    label = plain(shown.label)  # type: ignore[attr-defined]
    assert label.startswith("Your last decision: approved ") and f"of {note.id} (acme), just now" in label
    rows = reloaded.dataframe[0].value.to_dict("records")
    assert len(rows) == len(proposals) and {r["decision"] for r in rows} == {"approved"}
    assert {r["comment"] for r in rows} == {"matches the call"}
    assert not _last_decisions(open_console("bob"))  # his own decisions only
    assert len(mem.decided_by("alice", limit=2)) == 2


def test_the_last_decisions_name_values_in_the_cards_words(mem: Memory) -> None:
    """What was just approved reads as the card read it, a date as a date and a list item by item,
    never as Python's or JSON's text; still so once a newer policy no longer declares the attribute."""
    import os
    from pathlib import Path

    import yaml

    from amem.domain.models import utcnow
    from amem.policy import load_policy
    from amem.services.policy_registry import record_install

    note = said(mem, "Acme call: uptime and SSO matter most. Renewal on 1 March 2027.")
    hold(mem, note, "customer_priorities", ["uptime", "SSO"])
    hold(mem, note, "valid_at", "2027-03-01T00:00:00Z")
    at = open_console("alice")
    assert {"• uptime\n• SSO", "1 March 2027"} <= {c.value for c in at.code}
    at.button(key=f"approve_item_{note.raw_log_ids[0]}").click().run()

    proposed = set(open_console("alice").dataframe[0].value["proposed"])
    assert proposed == {"• uptime / • SSO", "1 March 2027"}

    path = Path(os.environ["AMEM_POLICY"])  # a newer policy in force drops the team attribute
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    del data["attributes"]["customer_priorities"]
    data["roles"]["sales_lead"]["approves"].remove("customer_priorities")
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    newer = load_policy(path)
    with mem.ledger.write() as tx:  # as an install before installs refused dropping a held attribute
        record_install(tx, newer, installed_by="alice", now=utcnow(), previous=tx.installed_policy())
    assert not newer.knows("customer_priorities")
    at = open_console("alice")
    assert set(at.dataframe[0].value["proposed"]) == {"• uptime / • SSO", "1 March 2027"}


def test_field_by_field_approve_one_reject_one(mem: Memory) -> None:
    note, proposals = call_item(mem)
    at = open_console("alice")
    at.button(key=f"approve_{proposals[1].id}").click().run()
    assert mem.proposal(proposals[1].id).status == ProposalStatus.APPROVED
    assert mem.read(note.id).extra["next_step"] == "send the quote"
    at.button(key=f"reject_{proposals[0].id}").click().run()  # no comment: refused
    assert "needs a comment" in plain(texts(at))
    at.text_input(key=f"comment_{note.raw_log_ids[0]}").input("not the reason given").run()
    at.button(key=f"reject_{proposals[0].id}").click().run()
    assert mem.proposal(proposals[0].id).review_comment == "not the reason given"
    assert mem.proposal(proposals[2].id).status == ProposalStatus.PENDING  # the rest stays
    assert f"approve_{proposals[2].id}" in [b.key for b in at.button]


def test_a_contradiction_shows_the_older_fact_beside_the_newer(mem: Memory) -> None:
    old = said(mem, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(mem, "Acme now pays $55 per seat", at=datetime(2026, 4, 2, tzinfo=UTC))
    mem.propose(
        old.id,
        "invalid_at",
        "2026-04-02T00:00:00Z",
        reason="different price",
        proposer=llm_proposer(mem),
        raw_log_ids=new.raw_log_ids,
        evidence="now pays $55 per seat",
    )
    at = open_console("alice")
    page = plain(texts(at))
    assert "**Older fact** · said 10 January 2026" in page
    assert "**Newer fact** · said 2 April 2026" in page
    assert "Retires the older fact from **2 April 2026**" in page
    codes = [c.value for c in at.code]
    assert "Acme pays $42 per seat" in codes and "Acme now pays $55 per seat" in codes


def test_a_late_older_record_shows_the_newer_fact_that_retires_it(mem: Memory) -> None:
    """An older price imported after the newer one: the item is the older record's own input, so
    the console showed it as the "Newer fact" beside Current/Proposed; now the newer fact is beside it."""
    june = "As of today Globex pays $55 per seat per month."
    march = "Pricing call: Globex pays $42 per seat per month."
    mem.add_note(june, at="2026-06-08T10:00:00Z", actor="agent:crm", scope="acme", wait=True)
    mem.add_note(march, at="2026-03-10T10:00:00Z", actor="agent:crm", scope="acme", wait=True)
    at = open_console("alice")
    page = plain(texts(at))
    assert "**Older fact** · said 10 March 2026" in page
    assert "**Newer fact** · said 8 June 2026" in page
    assert "Retired by the newer fact from **" in page
    codes = [c.value for c in at.code]
    assert march in codes and june in codes


def test_bringing_a_retired_fact_back_or_a_persons_end_date_is_no_retirement(mem: Memory) -> None:
    """A person's proposal to clear a wrong retirement showed as one: "Older fact" beside an empty
    "Newer fact · said unknown time" and "Retires the older fact from (none)", though approving
    brings the fact back. A person's end date without an input behind it showed the same empty
    box. Both now read as the note's current and proposed dates, the first said in words."""
    from tests.factories import contradict, signed_in

    old = said(mem, "Acme requires SSO via Okta", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(mem, "Acme dropped the SSO requirement", at=datetime(2026, 3, 5, tzinfo=UTC))
    mem.approve(contradict(mem, old, new, "2026-03-05T00:00:00Z").id, reviewer=signed_in(mem, "alice"))
    (back,) = mem.update(old.id, actor="bob", reason="the requirement still stands", invalid_at=None)
    other = said(mem, "Globex runs on Okta", scope="globex")
    (ended,) = mem.update(other.id, actor="bob", reason="contract ended", invalid_at="2026-06-30T00:00:00Z")
    at = open_console("alice")
    page = plain(texts(at))
    assert "Older fact" not in page and "Newer fact" not in page and "Retires" not in page, page
    codes = [c.value for c in at.code]
    assert "5 March 2026" in codes and "(none)" in codes  # current and proposed, in words
    assert "30 June 2026" in codes
    assert (
        "Brings the fact back (retired from 5 March 2026): approving removes its end date, "
        "so it holds again." in page
    )
    assert page.count("Brings the fact back") == 1  # the end date bob gives globex retires it
    assert mem.proposal(back.id).status == mem.proposal(ended.id).status == ProposalStatus.PENDING


def test_approve_all_matching_counts_confirms_and_spans_pages(mem: Memory) -> None:
    notes = [said(mem, f"Acme call {i}") for i in range(12)]
    for n in notes:
        hold(mem, n, "next_step", "book a demo")
    other = said(mem, "Globex call", scope="globex")
    kept = hold(mem, other, "next_step", "call back")
    at = open_console("alice")
    at.selectbox(key="queue_scope").select("acme").run()
    assert len([b for b in at.button if b.key and b.key.startswith("approve_item_")]) == 10  # one page
    at.button(key="approve_all").click().run()
    assert "Approve all 12 matching items (12 held values), on every page?" in plain(texts(at))
    assert mem.count_review_items().items == 13  # nothing decided before the confirmation
    at.button(key="confirm_all").click().run()
    assert "Approved all 12 matching items: 12 approved." in plain(texts(at))
    assert all(mem.read(n.id).extra["next_step"] == "book a demo" for n in notes)
    assert mem.proposal(kept.id).status == ProposalStatus.PENDING


def test_a_lead_limited_to_their_accounts_sees_and_approves_only_those(mem: Memory) -> None:
    """carol owns acme (reviewers.yaml scopes): globex's items are not hers to see in the queue or
    to approve, with approve-all or otherwise; alice, a lead of every account, sees both."""
    ours = [hold(mem, said(mem, f"Acme call {i}"), "next_step", "book a demo") for i in range(2)]
    theirs = hold(mem, said(mem, "Globex call", scope="globex"), "next_step", "call back")
    at = open_console("carol")
    assert "Your accounts: acme" in plain(texts(at))
    assert at.selectbox(key="queue_scope").options == ["any", "acme"]
    approve_buttons = [b.key for b in at.button if b.key and b.key.startswith("approve_item_")]
    assert len(approve_buttons) == 2 and theirs.raw_log_ids[0] not in "".join(approve_buttons)
    at.button(key="approve_all").click().run()
    assert "Approve all 2 matching items (2 held values), on every page?" in plain(texts(at))
    at.button(key="confirm_all").click().run()
    assert "Approved all 2 matching items: 2 approved." in plain(texts(at))
    assert [mem.proposal(p.id).status for p in ours] == [ProposalStatus.APPROVED] * 2
    assert mem.proposal(theirs.id).status == ProposalStatus.PENDING

    alice = open_console("alice")
    assert "Your accounts" not in plain(texts(alice))
    assert [b.key for b in alice.button if b.key and b.key.startswith("approve_item_")] != []


def test_reject_all_matching_asks_why_then_rejects_every_page(mem: Memory) -> None:
    """A run of wrong values (an import that misread dates) goes in one step, the reviewer's reason
    recorded on each; without a reason nothing is rejected and the question stays."""
    notes = [said(mem, f"Acme call {i}") for i in range(12)]
    held = [hold(mem, n, "next_step", "book a demo") for n in notes]
    kept = hold(mem, said(mem, "Globex call", scope="globex"), "next_step", "call back")
    at = open_console("alice")
    at.selectbox(key="queue_scope").select("acme").run()
    at.button(key="reject_all").click().run()
    assert "Reject all 12 matching items (12 held values), on every page?" in plain(texts(at))
    at.button(key="confirm_all").click().run()  # no reason given
    assert "a rejection needs a comment" in plain(texts(at))
    assert mem.count_review_items().items == 13
    at.text_input(key="reject_all_comment").input("the import misread these").run()
    at.button(key="confirm_all").click().run()
    assert "Rejected all 12 matching items: 12 rejected." in plain(texts(at))
    decided = {(mem.proposal(p.id).status, mem.proposal(p.id).review_comment) for p in held}
    assert decided == {(ProposalStatus.REJECTED, "the import misread these")}
    assert mem.proposal(kept.id).status == ProposalStatus.PENDING


def test_approve_all_is_refused_when_the_set_changed_after_the_count(mem: Memory) -> None:
    first = said(mem, "Acme call")
    hold(mem, first, "next_step", "book a demo")
    at = open_console("alice")
    at.button(key="approve_all").click().run()
    late = said(mem, "Acme again")
    hold(mem, late, "next_step", "send the deck")  # arrives while the reviewer reads the question
    at.button(key="confirm_all").click().run()
    assert "changed since they were counted" in plain(texts(at))
    assert mem.count_review_items().proposals == 2  # nothing was decided


def test_a_refusal_by_role_is_reported_not_hidden(mem: Memory) -> None:
    note = said(mem, "Globex is a duplicate account")
    why = hold(mem, note, "decision_rationale", "a duplicate")
    gone = hold(mem, note, "deleted", True)  # sales_lead may not
    at = open_console("bob")
    assert "bob (roles: sales_lead) may not decide changes to deleted" in plain(texts(at))
    at.button(key=f"approve_item_{note.raw_log_ids[0]}").click().run()
    warning = plain(" ".join(w.value for w in at.warning))
    assert "1 approved, 1 skipped" in warning and f"Skipped {gone.id}" in warning
    assert mem.proposal(why.id).status == ProposalStatus.APPROVED
    assert mem.proposal(gone.id).status == ProposalStatus.PENDING


def test_a_stale_value_is_flagged_and_approving_it_records_the_conflict(mem: Memory) -> None:
    note = make_note(mem, "Globex contract", tags=["contract"])
    stale = mem.propose(
        note.id, "context", "renewal talks", reason="from the call", proposer=llm_proposer(mem)
    )
    # a model's change of tags that drops contract waits too; a reviewer approves it, then the
    # context is no longer held and bob's edit applies: the pending context is now stale
    untag = mem.propose(note.id, "tags", [], reason="not a contract yet", proposer=llm_proposer(mem))
    mem.approve(untag.id, reviewer=mem.authentication.signed_in("alice", method="test"))
    mem.update(note.id, actor="bob", context="pilot only")
    at = open_console("alice")
    assert "the note changed since" in plain(texts(at))
    assert "pilot only" in [c.value for c in at.code]
    at.button(key=f"approve_{stale.id}").click().run()
    assert mem.proposal(stale.id).status == ProposalStatus.CONFLICT
    assert "Conflict on context" in plain(" ".join(w.value for w in at.warning))


def test_an_auditor_reads_the_queue_without_decision_controls(mem: Memory) -> None:
    call_item(mem)
    at = open_console("audrey")
    assert "Read-only" in plain(texts(at))
    assert "IT mandates it" in [c.value for c in at.code]
    assert not [b for b in at.button if b.key and b.key.startswith(("approve", "reject"))]


def test_note_content_cannot_inject_markup(mem: Memory) -> None:
    hostile = "<script>alert('x')</script> [click me](javascript:alert(1)) see https://evil.example"
    note = said(mem, hostile)
    p = mem.propose(
        note.id,
        "decision_rationale",
        "**bold** <img src=x onerror=alert(1)>",
        reason="<b>why</b> [x](y)",
        proposer=llm_proposer(mem),
        raw_log_ids=note.raw_log_ids,
        evidence="[click me](javascript:alert(1))",
    )
    at = open_console("alice")
    rendered = texts(at)
    for element in (*at.markdown, *at.caption, *at.warning, *at.error, *at.success, *at.info):
        assert not re.search(r"(?<!\\)[<>]", element.value), element.value
        assert "](javascript" not in element.value and "https://" not in element.value
        assert not getattr(element.proto, "allow_html", False)
    assert "\\<script\\>" in rendered and "\\[click me\\]\\(javascript" in rendered
    assert "\\<b\\>why\\<\\/b\\>" in rendered
    assert hostile in [c.value for c in at.code]
    assert p.id in plain(rendered)


def test_the_console_decides_only_under_the_installed_policy(mem: Memory) -> None:
    p = hold(mem, make_note(mem, "Acme call"), "decision_rationale", "Okta because IT mandates it")
    other = mem.policy.model_copy(update={"self_approval": True})  # not the console's file
    # installed over the store's version 1 (the console's file) by alice, an admin of it
    mem.install_policy(other, by=mem.authentication.signed_in("alice", method="test"))
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


def test_a_reviewer_corrects_a_held_value_and_another_reviewer_approves_it(mem: Memory) -> None:
    """A date one year off is fixed where it is read, not only rejected: the widget fits the value's
    type (a date picker for a date, one line a value for a list), the correction waits for a second
    person, and whoever opens the item next sees it beside the same input."""
    note, proposals = call_item(mem)
    when = proposals[2]
    at = open_console("alice")
    assert not [w for w in at.date_input if w.key == f"correct_value_{when.id}"]  # drawn when asked for
    at.button(key=f"correcting_{when.id}").click().run()
    assert at.date_input(key=f"correct_value_{when.id}").value == datetime(2026, 3, 4).date()
    at.date_input(key=f"correct_value_{when.id}").set_value(datetime(2027, 3, 4).date())
    at.text_input(key=f"correct_comment_{when.id}").input("the call is about next year")
    at.button(key=f"correct_{when.id}").click().run()
    assert "the proposed value is rejected and your value waits for another reviewer" in plain(
        at.success[0].value
    )
    assert mem.proposal(when.id).status == ProposalStatus.REJECTED
    (fix,) = mem.pending(attribute="valid_at")
    assert (fix.corrects, fix.new_value, fix.proposer.id) == (when.id, "2027-03-04T00:00:00+00:00", "alice")

    at = open_console("alice")  # their own correction: the ledger refuses a decision by them
    assert "self-approval" in plain(texts(at)) and "second look" not in plain(texts(at))
    at = open_console("bob")
    page = plain(texts(at))
    assert "1 correction by another reviewer waits for your second look" in page
    assert "4 March 2027" in [c.value for c in at.code] and f"correction of {when.id}" in page
    assert f"alice corrected the value llm:offline proposed ({when.id}): ~~4 March 2026~~" in page
    other = hold(mem, said(mem, "Globex call", scope="globex"), "next_step", "call back")
    at.selectbox(key="queue_kind").select("correction").run()
    items = [b.key for b in at.button if b.key and b.key.startswith("approve_item_")]
    assert items == [f"approve_item_{note.raw_log_ids[0]}"] and other.raw_log_ids[0] not in "".join(items)
    at.selectbox(key="queue_kind").select("any").run()
    at.button(key=f"approve_{fix.id}").click().run()
    assert mem.read(note.id).valid_at == datetime(2027, 3, 4, tzinfo=UTC)

    steps = proposals[1]
    at.button(key=f"correcting_{steps.id}").click().run()
    at.text_area(key=f"correct_value_{steps.id}").input("send the quote\ncall their IT lead").run()
    at.button(key=f"correct_{steps.id}").click().run()
    assert mem.proposal(steps.id).status == ProposalStatus.REJECTED
    assert [p.new_value for p in mem.pending(attribute="next_step", note_id=note.id)] == [
        "send the quote\ncall their IT lead"
    ]


def test_an_auditor_and_a_deletion_get_no_correction(mem: Memory) -> None:
    note, proposals = call_item(mem)
    gone = hold(mem, note, "deleted", True, reason="duplicate")
    keys = {b.key for b in open_console("audrey").button}
    assert not any(k.startswith("correct") for k in keys)
    keys = {b.key for b in open_console("alice").button}
    assert {f"correcting_{p.id}" for p in proposals} <= keys and f"correcting_{gone.id}" not in keys


def test_a_models_held_values_are_looked_at_and_rejected_on_their_own(mem: Memory) -> None:
    """The audit log names a model whose values reviewers mostly turn down: the queue filters by
    proposer, and "reject all matching" then rejects that model's values only."""
    noisy = llm_proposer(mem, model="cheap-model", prompt_version="construct/1")
    bad = [
        hold(mem, said(mem, f"Acme call {i}"), "valid_at", "2026-01-05T00:00:00Z", proposer=noisy)
        for i in range(3)
    ]
    good = hold(mem, said(mem, "Acme call about SSO"), "next_step", "send the quote")
    at = open_console("alice")
    assert at.selectbox(key="queue_proposer").options == ["any", "llm:cheap-model", "llm:offline"]
    at.selectbox(key="queue_proposer").select("llm:cheap-model").run()
    assert len([b for b in at.button if b.key and b.key.startswith("approve_item_")]) == 3
    at.button(key="reject_all").click().run()
    assert "Reject all 3 matching items (3 held values), on every page?" in plain(texts(at))
    at.text_input(key="reject_all_comment").input("this model guesses dates").run()
    at.button(key="confirm_all").click().run()
    assert {mem.proposal(p.id).status for p in bad} == {ProposalStatus.REJECTED}
    assert mem.proposal(good.id).status == ProposalStatus.PENDING


def test_approving_an_item_whose_value_the_policy_froze_since_is_no_success(mem: Memory) -> None:
    """An item approved whole, one of its values frozen by a newer policy meanwhile: that value is
    rejected, and the message says so as a warning, not in a green success."""
    import os
    from pathlib import Path

    import yaml

    from amem.policy import load_policy

    note = said(mem, "Acme call: next step is to send the quote, because of the budget.")
    step = hold(mem, note, "next_step", "send the quote")
    why = hold(mem, note, "decision_rationale", "the budget")
    path = os.environ["AMEM_POLICY"]
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data["attributes"]["next_step"]["mode"] = "frozen"
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f)
    mem.install_policy(load_policy(Path(path)), by=mem.authentication.signed_in("alice", method="test"))

    at = open_console("alice")
    # the card says so before anyone clicks, and its Approve is disabled; Reject still decides it
    assert at.button(key=f"approve_{step.id}").disabled and not at.button(key=f"approve_{why.id}").disabled
    (marked,) = [plain(w.value) for w in at.warning if "approving is refused" in plain(w.value)]
    assert marked.startswith("Frozen by policy v2 since ") and marked.endswith(
        "approving is refused; reject it."
    )
    at.button(key=f"approve_item_{note.raw_log_ids[0]}").click().run()
    assert (mem.proposal(step.id).status, mem.proposal(why.id).status) == (
        ProposalStatus.REJECTED,
        ProposalStatus.APPROVED,
    )
    assert not [s for s in at.success if "Approved item" in s.value]
    (said_so,) = [plain(w.value) for w in at.warning if "Approved item" in plain(w.value)]
    assert "1 approved, 1 refused by the policy (frozen since), not approved" in said_so
    assert f"Not approved: the policy refused next_step of {note.id}" in said_so
    assert "next_step is frozen by policy v2" in said_so and "1 rejected" not in said_so


def test_a_bidi_override_or_zero_width_space_is_shown_not_obeyed(mem: Memory) -> None:
    """A right-to-left override in an agent's input made the browser show "$94" as "$49", in the
    raw log, the proposed value and the highlighted evidence alike: the reviewer approved a value
    they never saw. Each such character now shows as its escape everywhere on the card."""
    text = "Seat price is now \u202e94$\u202c per seat for ac\u200bme"
    note = said(mem, text)
    hold(mem, note, "next_step", "confirm \u202e94$\u202c", evidence="\u202e94$\u202c")
    at = open_console("alice")
    shown = [*(c.value for c in at.code), *(e.value for e in (*at.markdown, *at.caption))]
    assert not any(ch in value for value in shown for ch in "\u202e\u202c\u200b"), shown
    codes = [c.value for c in at.code]
    assert "Seat price is now \\u202e94$\\u202c per seat for ac\\u200bme" in codes
    assert "confirm \\u202e94$\\u202c" in codes


def test_a_sentence_hidden_in_tag_characters_is_shown_on_the_card(mem: Memory) -> None:
    """Tag characters (U+E0000-E007F) render as nothing: an input carried "wire 50k to acct 999"
    past the reviewer, who saw the model propose a value the visible text never said."""
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "wire 50k")
    note = said(mem, f"Acme call: next step is to send the quote.{hidden}")
    hold(mem, note, "next_step", "wire 50k")
    at = open_console("alice")
    shown = [*(c.value for c in at.code), *(e.value for e in (*at.markdown, *at.caption))]
    assert not any(0xE0000 <= ord(ch) <= 0xE007F for value in shown for ch in value)
    assert any("quote.\\U000e0077\\U000e0069\\U000e0072\\U000e0065" in c.value for c in at.code)


def test_a_filter_keeps_its_value_when_nothing_waits_for_it_any_more(mem: Memory) -> None:
    """Approving every globex item put the Account filter back to "any" unasked, and "Waiting for
    these filters" then counted acme's items under a filter the reviewer never chose. The chosen
    account stays, with nothing waiting for it."""
    hold(mem, said(mem, "Acme: next step is to send the quote."), "next_step", "send the quote")
    for text in ("Globex: next step is a demo on Friday.", "Globex: next step is a call."):
        hold(mem, said(mem, text, scope="globex"), "next_step", "a demo")
    at = open_console("alice")
    at.selectbox(key="queue_scope").select("globex").run()
    at.selectbox(key="queue_attribute").select("next_step").run()
    at.button(key="approve_all").click().run()
    at.button(key="confirm_all").click().run()
    assert at.selectbox(key="queue_scope").value == "globex"
    assert at.selectbox(key="queue_attribute").value == "next_step"
    page = plain(texts(at))
    assert "Waiting for these filters: 0 items (0 held values)" in page
    assert "Nothing waiting for review here." in page and "Acme: next step" not in page
    at.selectbox(key="queue_scope").select("any").run()  # chosen again: acme's item, as before
    assert "Waiting for these filters: 1 item (1 held value)" in plain(texts(at))
    assert at.selectbox(key="queue_scope").options == ["any", "acme"]
