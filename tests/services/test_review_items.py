"""Review items: one per input, its evidence located, values in words, decided whole, field by
field, or all matching a filter with a count that must still hold. Both backends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from amem.domain.models import Note, ProposalStatus
from amem.errors import NotFoundError, ReviewSetChangedError
from amem.memory import Memory
from amem.services.review import ReviewFilter
from tests.factories import llm_proposer, said, signed_in

MARCH_1 = "2026-03-01T00:00:00+00:00"


def held(
    mem: Memory,
    note: Note,
    attribute: str,
    value: object,
    *,
    evidence: str | None = None,
    source: Note | None = None,
    reason: str = "stated in the call",
):
    p = mem.propose(
        note.id,
        attribute,
        value,
        reason=reason,
        proposer=llm_proposer(mem),
        raw_log_ids=(source or note).raw_log_ids,
        evidence=evidence,
    )
    assert p.status == ProposalStatus.PENDING
    return p


CALL = "Acme decided to renew in March because their auditor asked for SSO. Next step: send the quote."


@pytest.fixture
def call(memory: Memory) -> tuple[Note, list]:
    note = said(memory, CALL, at=datetime(2026, 1, 15, 10, 0, tzinfo=UTC))
    return note, [
        held(
            memory,
            note,
            "decision_rationale",
            "their auditor asked for SSO",
            evidence="because their auditor asked for SSO",
        ),
        held(memory, note, "valid_at", MARCH_1, evidence="renew in March"),
        held(memory, note, "next_step", "send the quote"),  # no evidence: its own words are found
        held(memory, note, "customer_priorities", ["single sign-on"]),  # not in the text: no highlight
    ]


def test_one_item_per_input_with_its_evidence_located(memory: Memory, call: tuple[Note, list]) -> None:
    note, proposals = call
    other = said(memory, "Globex wants a pilot", scope="globex")
    held(memory, other, "next_step", "plan the pilot")
    page = memory.review_items()
    assert page.total == 2 and [i.key for i in page.items] == [note.raw_log_ids[0], other.raw_log_ids[0]]
    item = page.items[0]
    assert item.scope == "acme" and item.said_by == "agent:sales-agent"
    assert item.said_at == datetime(2026, 1, 15, 10, 0, tzinfo=UTC)
    assert [f.proposal.id for f in item.fields] == [p.id for p in proposals]
    marked = {p.text: p.attributes for p in item.pieces if p.marked}
    assert marked == {
        "because their auditor asked for SSO": ["decision_rationale"],
        "renew in March": ["valid_at"],
        "send the quote": ["next_step"],
    }
    assert "".join(p.text for p in item.pieces) == CALL  # the raw log, whole, in order
    by_attr = {f.attribute: f for f in item.fields}
    assert by_attr["valid_at"].proposed_words == "1 March 2026"  # a date, in words
    assert by_attr["valid_at"].current_words == "(none)"
    assert by_attr["customer_priorities"].proposed_words == "• single sign-on"
    assert by_attr["customer_priorities"].span is None
    assert (
        by_attr["next_step"].located_by == "value" and by_attr["decision_rationale"].located_by == "evidence"
    )
    assert by_attr["decision_rationale"].proposal.proposer.model == "offline"
    # filters select items; an item still shows all of its held values
    scoped = memory.review_items(ReviewFilter(scope="acme", attribute="valid_at"))
    assert scoped.total == 1 and len(scoped.items[0].fields) == 4


def test_a_contradiction_shows_the_older_fact_beside_the_newer(memory: Memory) -> None:
    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 2, 1, tzinfo=UTC))
    new = said(memory, "Acme now pays $55 per seat", at=datetime(2026, 5, 1, tzinfo=UTC))
    p = held(memory, old, "invalid_at", "2026-05-01T00:00:00Z", evidence="now pays $55 per seat", source=new)
    item = memory.review_item(new.raw_log_ids[0])
    (field,) = item.fields
    assert field.kind == "contradiction" and field.proposal.id == p.id
    assert field.older is not None and field.older.content == "Acme pays $42 per seat"
    assert field.older.said_at == datetime(2026, 2, 1, tzinfo=UTC)
    assert field.proposed_words == "1 May 2026"
    assert memory.count_review_items(ReviewFilter(kind="contradiction")).items == 1
    assert memory.count_review_items(ReviewFilter(kind="value")).items == 0


def test_an_end_date_without_a_newer_input_or_its_removal_shows_no_older_fact(memory: Memory) -> None:
    """Only an input saying otherwise retires a note beside it: a person's end date (no raw log)
    and a proposal that clears a retirement (no date) read as current and proposed values, and the
    second says it brings the fact back (`amem pending` and the console both read these fields)."""
    alice = signed_in(memory, "alice")
    old = said(memory, "Acme requires SSO", at=datetime(2026, 2, 1, tzinfo=UTC))
    new = said(memory, "Acme dropped SSO", at=datetime(2026, 5, 1, tzinfo=UTC))
    memory.approve(held(memory, old, "invalid_at", "2026-05-01T00:00:00Z", source=new).id, reviewer=alice)
    (back,) = memory.update(old.id, actor="bob", reason="it still stands", invalid_at=None)
    other = said(memory, "Acme uses Okta")
    (ended,) = memory.update(other.id, actor="bob", reason="contract ended", invalid_at="2026-06-30")
    fields = {f.proposal.id: f for item in memory.review_items().items for f in item.fields}
    assert fields[back.id].older is None and fields[ended.id].older is None
    assert fields[back.id].brings_back and not fields[ended.id].brings_back
    assert (fields[back.id].current_words, fields[back.id].proposed_words) == ("1 May 2026", "(none)")
    assert (fields[ended.id].current_words, fields[ended.id].proposed_words) == ("(none)", "30 June 2026")


def test_approve_a_whole_item_and_skip_what_the_reviewer_may_not_decide(memory: Memory) -> None:
    note = said(memory, "Acme will not renew. Reason: the new CFO wants one vendor")
    why = held(memory, note, "decision_rationale", "the new CFO wants one vendor")
    gone = held(memory, note, "deleted", True)  # sales_lead may not decide deletions
    key = note.raw_log_ids[0]
    report = memory.approve_item(
        key, reviewer=signed_in(memory, "bob"), shown=[why.id, gone.id], comment="as said"
    )
    assert [p.id for p in report.decided] == [why.id]
    assert [s.proposal_id for s in report.skipped] == [gone.id]
    assert "may not decide changes to deleted" in report.skipped[0].reason
    assert report.summary() == "1 approved, 1 skipped"
    assert memory.proposal(gone.id).status == ProposalStatus.PENDING
    assert memory.read(note.id).decision_rationale == "the new CFO wants one vendor"
    # the item stays in the queue with what is left; alice (cs_lead) finishes it
    assert [f.attribute for f in memory.review_item(note.raw_log_ids[0]).fields] == ["deleted"]
    memory.approve_item(key, reviewer=signed_in(memory, "alice"), shown=[gone.id])
    with pytest.raises(NotFoundError):
        memory.review_item(note.raw_log_ids[0])


def test_field_by_field_and_reject_the_rest(memory: Memory, call: tuple[Note, list]) -> None:
    note, proposals = call
    memory.approve(proposals[1].id, reviewer=signed_in(memory, "alice"))  # one field: valid_at
    assert memory.read(note.id).valid_at == datetime(2026, 3, 1, tzinfo=UTC)
    item = memory.review_item(note.raw_log_ids[0])
    assert "valid_at" not in [f.attribute for f in item.fields] and len(item.fields) == 3
    report = memory.reject_item(
        note.raw_log_ids[0],
        reviewer=signed_in(memory, "alice"),
        shown=item.proposal_ids,
        comment="not what was agreed",
    )
    assert report.count(ProposalStatus.REJECTED) == 3
    assert memory.review_items().total == 0


def test_approve_all_matching_a_filter_beyond_one_page(memory: Memory) -> None:
    notes = [said(memory, f"Account {i}: next step is a demo") for i in range(105)]
    for n in notes:
        held(memory, n, "next_step", "book a demo")
    held(memory, notes[0], "decision_rationale", "wants a demo first")  # same item, other attribute
    elsewhere = said(memory, "Globex: next step is a call", scope="globex")
    held(memory, elsewhere, "next_step", "call back")
    f = ReviewFilter(scope="acme", attribute="next_step")
    counted = memory.count_review_items(f)
    assert (counted.items, counted.proposals) == (105, 105)
    report = memory.approve_matching(
        f, reviewer=signed_in(memory, "alice"), expected_items=105, fingerprint=counted.fingerprint
    )
    assert report.count(ProposalStatus.APPROVED) == 105 and not report.skipped
    assert all(memory.read(n.id).extra["next_step"] == "book a demo" for n in notes)
    left = memory.review_items()
    assert left.total == 2  # the other attribute of the first item, and the other account
    assert {f.attribute for i in left.items for f in i.fields} == {"decision_rationale", "next_step"}


def test_approve_all_matching_refuses_when_the_set_changed(memory: Memory) -> None:
    a, b = said(memory, "one"), said(memory, "two")
    pa = held(memory, a, "next_step", "call")
    held(memory, b, "next_step", "write")
    f = ReviewFilter(attribute="next_step")
    counted = memory.count_review_items(f)
    late = said(memory, "three")
    held(memory, late, "next_step", "visit")  # arrives after the count
    with pytest.raises(ReviewSetChangedError, match="nothing was decided"):
        memory.approve_matching(
            f,
            reviewer=signed_in(memory, "alice"),
            expected_items=counted.items,
            fingerprint=counted.fingerprint,
        )
    # the same number of items, but not the same ones: the fingerprint tells
    memory.approve(pa.id, reviewer=signed_in(memory, "alice"))
    again = memory.count_review_items(f)
    assert again.items == counted.items and again.fingerprint != counted.fingerprint
    with pytest.raises(ReviewSetChangedError):
        memory.approve_matching(
            f,
            reviewer=signed_in(memory, "alice"),
            expected_items=counted.items,
            fingerprint=counted.fingerprint,
        )
    assert memory.count_review_items(f).proposals == 2  # nothing was decided
    report = memory.approve_matching(
        f, reviewer=signed_in(memory, "alice"), expected_items=2, fingerprint=again.fingerprint
    )
    assert report.count(ProposalStatus.APPROVED) == 2


def test_an_agent_can_never_approve_an_item(memory: Memory, call: tuple[Note, list]) -> None:
    from amem.errors import PermissionDeniedError

    note, proposals = call
    with pytest.raises(PermissionDeniedError, match="can never approve"):
        memory.approve_item(
            note.raw_log_ids[0],
            reviewer=signed_in(memory, "agent:sales-agent"),
            shown=[p.id for p in proposals],
        )
    assert len(memory.review_item(note.raw_log_ids[0]).fields) == 4


def test_an_item_is_decided_as_it_was_shown_or_not_at_all(memory: Memory) -> None:
    """Another reviewer's correction joins the item the reviewer is looking at (it keeps the raw
    log of the value it replaces): approving the item as shown must not approve the correction
    unseen. Nothing is decided; shown again, the item is decided as shown."""
    note = said(memory, "Acme: next step is a pricing call with Dana on Friday")
    model = held(memory, note, "next_step", "pricing call with Dana on Friday")
    key = note.raw_log_ids[0]
    alice, bob = signed_in(memory, "alice"), signed_in(memory, "bob")
    seen = memory.review_item(key).proposal_ids
    assert seen == [model.id]
    correction = memory.correct(model.id, "send Dana a 40% discount", reviewer=bob).correction
    assert correction.status == ProposalStatus.PENDING  # waits for a second person
    for decide in (memory.approve_item, memory.reject_item):
        with pytest.raises(ReviewSetChangedError, match="1 joined, 1 decided or replaced"):
            decide(key, reviewer=alice, shown=seen, comment="as shown")
    assert memory.proposal(correction.id).status == ProposalStatus.PENDING
    assert "next_step" not in memory.read(note.id).extra
    now = memory.review_item(key)
    assert [f.proposal.new_value for f in now.fields] == ["send Dana a 40% discount"]
    report = memory.approve_item(key, reviewer=alice, shown=now.proposal_ids)
    assert [p.id for p in report.decided] == [correction.id]
    assert memory.read(note.id).extra["next_step"] == "send Dana a 40% discount"


def test_approve_all_matching_needs_the_fingerprint_of_the_count(memory: Memory) -> None:
    """A count alone cannot tell a value replaced inside an item: the decision needs the count's
    fingerprint, so a correction that joined since is never approved unseen."""
    note = said(memory, "Acme: next step is a pricing call")
    model = held(memory, note, "next_step", "pricing call")
    f = ReviewFilter(attribute="next_step")
    counted = memory.count_review_items(f)
    memory.correct(model.id, "a discount call", reviewer=signed_in(memory, "bob"))
    assert memory.count_review_items(f).items == counted.items
    with pytest.raises(TypeError):
        memory.approve_matching(f, reviewer=signed_in(memory, "alice"), expected_items=counted.items)  # type: ignore[call-arg]
    with pytest.raises(ReviewSetChangedError):
        memory.approve_matching(
            f,
            reviewer=signed_in(memory, "alice"),
            expected_items=counted.items,
            fingerprint=counted.fingerprint,
        )
    assert "next_step" not in memory.read(note.id).extra


def test_values_of_an_attribute_a_newer_policy_dropped_still_show_and_approving_rejects_them(
    memory: Memory,
) -> None:
    """A ledger whose installed policy dropped a list attribute while a value of it waited (older
    ledgers hold such values: the install refuses it now): the queue still loads, the value read
    from its own shape, not correctable; approving the item rejects it, saying why."""
    from amem.domain.models import utcnow
    from amem.services.policy_registry import record_install

    note = said(memory, "Acme call: uptime matters most, then price")
    alice = signed_in(memory, "alice")
    first = held(memory, note, "customer_priorities", ["uptime"])
    memory.approve(first.id, reviewer=alice)
    p = held(memory, note, "customer_priorities", ["uptime", "price"])
    attributes = {k: v for k, v in memory.policy.attributes.items() if k != "customer_priorities"}
    dropped = memory.policy.model_copy(update={"attributes": attributes})
    with memory.ledger.write() as tx:  # as an install before it refused this
        record_install(tx, dropped, installed_by="alice", now=utcnow(), previous=tx.installed_policy())

    with Memory(memory.home, database_url=memory.settings.database_url, policy=dropped) as later:
        (item,) = later.review_items().items
        (shown,) = item.fields
        assert (shown.proposal.id, shown.current_value, shown.stale) == (p.id, ["uptime"], False)
        assert (shown.current_words, shown.proposed_words) == ("• uptime", "• uptime\n• price")
        assert shown.value_type == "list[str]" and not shown.correctable
        report = later.approve_item(item.key, reviewer=signed_in(later, "alice"), shown=item.proposal_ids)
        assert [(d.id, d.status) for d in report.decided] == [(p.id, ProposalStatus.REJECTED)]
        assert "no longer declared by policy v" in (report.decided[0].review_comment or "")
        assert later.review_items().items == []


def test_a_corrected_retirement_date_waits_for_a_second_look_as_a_correction(memory: Memory) -> None:
    """The date a newer fact retires an older one from is correctable (governance allows it): its
    correction must be counted and listed as one, or it waits unseen for another reviewer."""
    from tests.factories import contradict

    old = said(memory, "Acme renewal on 1 March 2027", at=datetime(2026, 2, 1, tzinfo=UTC))
    new = said(memory, "Acme renewal moved to 1 June 2027", at=datetime(2026, 5, 1, tzinfo=UTC))
    model = contradict(memory, old, new, "2027-06-01T00:00:00Z")
    fix = memory.correct(model.id, "2027-05-15", reviewer=signed_in(memory, "bob")).correction
    assert fix.status == ProposalStatus.PENDING and fix.corrects == model.id

    assert memory.second_looks("alice") == 1 and memory.second_looks("bob") == 0  # not their own
    listed = memory.review_items(ReviewFilter(kind="correction"))
    assert listed.total == 1 and [f.proposal.id for f in listed.items[0].fields] == [fix.id]
    (field,) = listed.items[0].fields
    assert field.kind == "correction" and field.corrected is not None
    assert field.corrected.proposed_words == "1 June 2027" and field.proposed_words == "15 May 2027"
    assert field.older is not None and field.older.content == "Acme renewal on 1 March 2027"
    assert memory.count_review_items(ReviewFilter(kind="contradiction")).items == 0


def test_every_held_value_has_one_kind_and_the_counts_per_kind_add_up(memory: Memory) -> None:
    """Reverts of a retirement and of a deletion, a corrected retirement date and a corrected
    value, beside first-hand ones: each is listed under the kind its card names, and under no other."""
    from tests.factories import contradict

    alice, bob = signed_in(memory, "alice"), signed_in(memory, "bob")
    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 2, 1, tzinfo=UTC))
    new = said(memory, "Acme pays $55 per seat", at=datetime(2026, 5, 1, tzinfo=UTC))
    memory.approve(contradict(memory, old, new, "2026-05-01T00:00:00Z").id, reviewer=alice)
    gone = said(memory, "Acme duplicate call note")
    memory.approve(memory.delete(gone.id, actor="bob", reason="duplicate").id, reviewer=alice)
    changes = {c.attribute: c.seq for n in (old, gone) for c in memory.note_versions(n.id)}
    memory.revert(changes["invalid_at"], reviewer=bob, reason="retired by mistake")
    memory.revert(changes["deleted"], reviewer=alice, reason="not a duplicate")
    later = said(memory, "Acme pays $60 per seat", at=datetime(2026, 9, 1, tzinfo=UTC))
    memory.correct(contradict(memory, new, later, "2026-09-01T00:00:00Z").id, "2026-10-01", reviewer=bob)
    first_hand = said(memory, "Acme has 40 seats", at=datetime(2026, 3, 1, tzinfo=UTC))
    contradict(memory, first_hand, later, "2026-09-01T00:00:00Z")
    memory.correct(held(memory, new, "next_step", "send teh quote").id, "send the quote", reviewer=bob)
    held(memory, new, "decision_rationale", "budget")
    held(memory, later, "deleted", True)

    every = memory.review_items(limit=100)
    kinds = {f.proposal.id: f.kind for item in every.items for f in item.fields}
    assert sorted(kinds.values()) == sorted(
        ["revert", "revert", "correction", "correction", "contradiction", "value", "deletion"]
    )
    for kind in ("contradiction", "deletion", "correction", "revert", "value"):
        f = ReviewFilter(kind=kind)  # type: ignore[arg-type]
        matched = {pid for item in memory.review_items(f, limit=100).items for pid in item.proposal_ids}
        counted = memory.count_review_items(f)
        of_kind = {pid for pid, k in kinds.items() if k == kind}
        assert counted.proposals == len(of_kind), kind
        assert of_kind <= matched, kind  # an item also shows its values of other kinds
    assert memory.second_looks("alice") == 2
