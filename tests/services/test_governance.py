"""Governance: routing by policy, who may decide, conflicts, revert, history and as_of."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from amem.domain.models import ProposalStatus, Proposer
from amem.errors import (
    FrozenAttributeError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    ProposalStateError,
)
from amem.memory import Memory
from amem.policy import AttributePolicy, fingerprint
from amem.services.authentication import Authentication
from tests.conftest import REPO
from tests.factories import admin_can_sign_in, llm_proposer, make_note, policy_with_scopes, signed_in

AGENT = Proposer(kind="agent", id="sales-agent")


# -- routing -----------------------------------------------------------------------------------


def test_auto_attribute_applies_at_once_and_is_recorded(memory: Memory) -> None:
    note = make_note(memory, "Acme asked about SSO")
    p = memory.propose(note.id, "tags", ["sso", "security"], reason="topic", proposer=llm_proposer(memory))
    assert p.status == ProposalStatus.AUTO_APPLIED
    assert p.rule == "attributes.tags.mode -> auto"
    assert memory.read(note.id).tags == ["sso", "security"]
    applied = memory.changes()[-1]
    assert (applied.attribute, applied.new_value, applied.proposal_id) == ("tags", ["sso", "security"], p.id)


def test_review_attribute_waits_for_a_reviewer(memory: Memory) -> None:
    note = make_note(memory, "We chose Postgres because the team knows it")
    p = memory.propose(
        note.id, "decision_rationale", "team knows it", reason="stated", proposer=llm_proposer(memory)
    )
    assert p.status == ProposalStatus.PENDING
    assert memory.read(note.id).decision_rationale is None
    assert [x.id for x in memory.pending()] == [p.id]
    approved = memory.approve(p.id, reviewer=signed_in(memory, "alice"), comment="matches the call notes")
    assert approved.status == ProposalStatus.APPROVED and approved.reviewer == "alice"
    assert memory.read(note.id).decision_rationale == "team knows it"
    assert memory.pending() == []


def test_a_proposal_keeps_the_evidence_span_it_was_made_with(memory: Memory) -> None:
    note = make_note(memory, "We chose Postgres because the team knows it")
    p = memory.propose(
        note.id,
        "decision_rationale",
        "the team knows it",
        reason="stated",
        proposer=llm_proposer(memory),
        evidence="the team knows it",
    )
    assert memory.proposal(p.id).evidence == "the team knows it"
    plain = memory.propose(note.id, "valid_at", "2026-03-01", reason="stated", proposer=llm_proposer(memory))
    assert memory.proposal(plain.id).evidence is None


def test_frozen_attribute_is_recorded_as_rejected_with_the_rule(memory: Memory) -> None:
    note = make_note(memory, "original text")
    p = memory.propose(note.id, "content", "rewritten", reason="improve", proposer=llm_proposer(memory))
    assert p.status == ProposalStatus.REJECTED
    assert "content.mode -> frozen" in p.rule
    assert memory.read(note.id).content == "original text"
    assert memory.proposal(p.id).status == ProposalStatus.REJECTED


def test_clearing_the_category_of_a_contract_note_waits_for_a_person(memory: Memory) -> None:
    """Re-filing a note away from contract waits for a person (README); clearing its category
    applied at once, and the agent's next change of the note's context with it."""
    note = make_note(memory, "Contract for Acme: renewal terms agreed.", category="contract")
    assert note.category == "contract" and "contract" not in note.tags
    (cleared,) = memory.update(note.id, actor="agent:sales-agent", reason="r", category=None)
    assert cleared.status == ProposalStatus.PENDING and "drops contract" in (cleared.rule or "")
    (context,) = memory.update(note.id, actor="agent:sales-agent", reason="r", context="nothing here")
    assert context.status == ProposalStatus.PENDING
    assert memory.read(note.id).category == "contract" and memory.read(note.id).context is None


def test_rule_narrows_context_to_review_for_contract_notes(memory: Memory) -> None:
    plain = make_note(memory, "Kickoff call notes", tags=["meeting"])
    contract = make_note(memory, "MSA redlines from legal", tags=["contract"])
    p1 = memory.propose(plain.id, "context", "kickoff", reason="summary", proposer=llm_proposer(memory))
    p2 = memory.propose(
        contract.id, "context", "legal redlines", reason="summary", proposer=llm_proposer(memory)
    )
    assert p1.status == ProposalStatus.AUTO_APPLIED
    assert p2.status == ProposalStatus.PENDING
    assert "rules[0] (note tagged contract)" in p2.rule


def test_declared_team_attribute_is_routed_and_type_checked(memory: Memory) -> None:
    note = make_note(memory, "They care most about uptime and a Q2 launch")
    p = memory.propose(
        note.id,
        "customer_priorities",
        ["uptime", "Q2 launch"],
        reason="stated",
        proposer=llm_proposer(memory),
    )
    assert p.status == ProposalStatus.PENDING
    memory.approve(p.id, reviewer=signed_in(memory, "bob"))
    assert memory.read(note.id).extra["customer_priorities"] == ["uptime", "Q2 launch"]
    with pytest.raises(InvalidInputError, match="list of strings"):
        memory.propose(note.id, "customer_priorities", "uptime", reason="x", proposer=llm_proposer(memory))


def test_unknown_attribute_and_missing_note_are_refused(memory: Memory) -> None:
    note = make_note(memory, "x")
    with pytest.raises(InvalidInputError, match="unknown attribute 'favourite_colour'"):
        memory.propose(note.id, "favourite_colour", "blue", reason="x", proposer=llm_proposer(memory))
    with pytest.raises(NotFoundError):
        memory.propose("n_missing", "tags", ["a"], reason="x", proposer=llm_proposer(memory))
    with pytest.raises(InvalidInputError, match="needs a reason"):
        memory.propose(note.id, "tags", ["a"], reason=" ", proposer=llm_proposer(memory))


def test_links_never_cross_scopes(memory: Memory) -> None:
    a = make_note(memory, "Acme SSO", scope="acme")
    b = make_note(memory, "Globex SSO", scope="globex")
    c = make_note(memory, "Acme SAML", scope="acme")
    with pytest.raises(InvalidInputError, match="across scopes"):
        memory.propose(
            a.id,
            "links",
            [{"note_id": b.id, "reason": "same topic"}],
            reason="x",
            proposer=llm_proposer(memory),
        )
    with pytest.raises(InvalidInputError, match="no such note"):
        memory.propose(
            a.id,
            "links",
            [{"note_id": "n_invented", "reason": "?"}],
            reason="x",
            proposer=llm_proposer(memory),
        )
    memory.propose(
        a.id, "links", [{"note_id": c.id, "reason": "both SSO"}], reason="x", proposer=llm_proposer(memory)
    )
    assert [link.note_id for link in memory.read(a.id).links] == [c.id]


def test_in_one_batch_the_later_of_two_pending_proposals_supersedes_the_earlier(memory: Memory) -> None:
    from amem.services.governance import Draft

    note = make_note(memory, "x")  # nothing waits on it yet
    by = llm_proposer(memory)
    drafts = [Draft(note.id, "decision_rationale", v, reason=f"r-{v}", proposer=by) for v in ("one", "two")]
    with memory.ledger.write() as tx:
        first, second = memory.governance.propose_in(tx, drafts)
    assert memory.proposal(first.id).status == ProposalStatus.SUPERSEDED
    assert memory.proposal(first.id).review_comment == f"superseded by {second.id}"
    assert memory.proposal(second.id).status == ProposalStatus.PENDING
    assert memory.verify().ok


def test_on_a_note_created_in_the_same_transaction_the_later_pending_proposal_supersedes_too(
    memory: Memory,
) -> None:
    from amem.services.governance import Draft

    by = llm_proposer(memory)
    drafts = lambda note_id, values: [  # noqa: E731
        Draft(note_id, "decision_rationale", v, reason=f"r-{v}", proposer=by) for v in values
    ]
    with memory.ledger.write() as tx:
        note = memory.governance.create_note(tx, scope="acme", content="x", raw_logs=[], actor=by.actor)
        (only,) = memory.governance.propose_in(tx, drafts(note.id, ["one"]))
        (later,) = memory.governance.propose_in(tx, drafts(note.id, ["two"]))  # a later input of the batch
    assert memory.proposal(only.id).status == ProposalStatus.SUPERSEDED
    assert memory.proposal(later.id).status == ProposalStatus.PENDING
    assert [p.id for p in memory.pending()] == [later.id]
    assert memory.verify().ok


def test_new_proposal_supersedes_older_pending_one(memory: Memory) -> None:
    note = make_note(memory, "x")
    first = memory.propose(note.id, "decision_rationale", "one", reason="r1", proposer=llm_proposer(memory))
    second = memory.propose(note.id, "decision_rationale", "two", reason="r2", proposer=llm_proposer(memory))
    assert memory.proposal(first.id).status == ProposalStatus.SUPERSEDED
    assert [p.id for p in memory.pending()] == [second.id]


def test_a_later_contradiction_leaves_the_earlier_pending_retirement_standing(memory: Memory) -> None:
    """A note stopped holding when the first newer fact came ($42, then $55 in April, then $49 in
    August): the August contradiction is recorded, but does not move the end the reviewer decides
    to August, which would rewrite what held in between. An earlier end still replaces a later one
    (an import of older history after newer)."""
    from datetime import UTC, datetime

    from tests.factories import contradict, said

    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    april = said(memory, "Acme now pays $55 per seat", at=datetime(2026, 4, 2, tzinfo=UTC))
    august = said(memory, "Acme pays $49 per seat after renewal", at=datetime(2026, 8, 20, tzinfo=UTC))
    first = contradict(memory, old, april, "2026-04-02T00:00:00Z")
    later = contradict(memory, old, august, "2026-08-20T00:00:00Z")
    assert later.status == ProposalStatus.SUPERSEDED and first.id in (later.review_comment or "")
    assert memory.proposal(first.id).status == ProposalStatus.PENDING
    assert [p.id for p in memory.pending(note_id=old.id)] == [first.id]

    march = said(memory, "Acme moved off $42 in March", at=datetime(2026, 3, 1, tzinfo=UTC))
    earliest = contradict(memory, old, march, "2026-03-01T00:00:00Z")
    assert earliest.status == ProposalStatus.PENDING
    assert memory.proposal(first.id).status == ProposalStatus.SUPERSEDED
    memory.approve(earliest.id, reviewer=signed_in(memory, "alice"))
    assert memory.read(old.id).invalid_at == datetime(2026, 3, 1, tzinfo=UTC)

    # a person who says when it ended is taken at their word: their proposal supersedes as before
    other = said(memory, "Acme pays $30 per seat for support", at=datetime(2026, 1, 10, tzinfo=UTC))
    analyst = contradict(memory, other, april, "2026-04-02T00:00:00Z")
    person = memory.propose(
        other.id, "invalid_at", "2026-06-30T00:00:00Z", reason="ended then", proposer="bob"
    )
    assert person.status == ProposalStatus.PENDING
    assert memory.proposal(analyst.id).status == ProposalStatus.SUPERSEDED
    assert memory.verify().ok


# -- who may decide -----------------------------------------------------------------------------


def test_agents_can_never_approve(memory: Memory) -> None:
    note = make_note(memory, "x")
    p = memory.propose(note.id, "decision_rationale", "because", reason="r", proposer=llm_proposer(memory))
    for who in ("agent:sales-agent", "sales-agent", "llm:offline"):
        with pytest.raises(PermissionDeniedError, match=r"agents and LLMs can never approve|not a person"):
            memory.approve(p.id, reviewer=signed_in(memory, who))
    assert memory.proposal(p.id).status == ProposalStatus.PENDING


def test_self_approval_is_refused(memory: Memory) -> None:
    note = make_note(memory, "x")
    p = memory.propose(note.id, "decision_rationale", "mine", reason="r", proposer="alice")
    with pytest.raises(PermissionDeniedError, match="self-approval"):
        memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    assert memory.approve(p.id, reviewer=signed_in(memory, "bob")).status == ProposalStatus.APPROVED


def test_roles_decide_what_a_reviewer_may_approve(memory: Memory) -> None:
    note = make_note(memory, "x")
    p = memory.propose(note.id, "deleted", True, reason="duplicate", proposer=AGENT)
    with pytest.raises(PermissionDeniedError, match=r"bob .*sales_lead.* may not decide changes to deleted"):
        memory.approve(p.id, reviewer=signed_in(memory, "bob"))
    with pytest.raises(PermissionDeniedError, match="audrey"):
        memory.reject(p.id, reviewer=signed_in(memory, "audrey"), comment="no")
    with pytest.raises(PermissionDeniedError, match="not a reviewer"):
        memory.approve(p.id, reviewer=signed_in(memory, "mallory"))
    assert memory.approve(p.id, reviewer=signed_in(memory, "alice")).status == ProposalStatus.APPROVED
    assert memory.read(note.id).deleted is True


def test_reject_needs_a_comment_and_decisions_are_final(memory: Memory) -> None:
    note = make_note(memory, "x")
    p = memory.propose(
        note.id, "valid_at", "2026-01-05T00:00:00Z", reason="dated", proposer=llm_proposer(memory)
    )
    with pytest.raises(InvalidInputError, match="comment"):
        memory.reject(p.id, reviewer=signed_in(memory, "alice"), comment="")
    rejected = memory.reject(p.id, reviewer=signed_in(memory, "alice"), comment="wrong date")
    assert rejected.status == ProposalStatus.REJECTED and rejected.review_comment == "wrong date"
    with pytest.raises(ProposalStateError, match="rejected by alice"):
        memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    assert memory.read(note.id).valid_at is None


def test_approving_a_stale_proposal_gives_conflict_not_overwrite(database_url: str, tmp_path) -> None:
    from amem.policy import load_policy

    policy = load_policy(REPO / "policies.yaml")
    # a team lets people edit the rationale directly; the LLM's suggestions still need review
    rules = [{"when": {"proposer_kinds": ["person"]}, "mode": "auto"}]
    attrs = policy.model_dump()["attributes"]
    attrs["decision_rationale"] = {"mode": "review", "rules": rules}
    policy = policy.model_validate({**policy.model_dump(), "attributes": attrs})
    with Memory(tmp_path / "h", database_url=database_url, policy=policy) as memory:
        note = make_note(memory, "We chose annual billing")
        stale = memory.propose(
            note.id, "decision_rationale", "discount", reason="r", proposer=llm_proposer(memory)
        )
        edit = memory.update(note.id, actor="person:bob", decision_rationale="finance asked for it")
        assert edit[0].status == ProposalStatus.AUTO_APPLIED
        decided = memory.approve(stale.id, reviewer=signed_in(memory, "alice"))
        assert decided.status == ProposalStatus.CONFLICT
        assert "changed since the proposal was made" in (decided.review_comment or "")
        assert memory.read(note.id).decision_rationale == "finance asked for it"
        with pytest.raises(ProposalStateError, match="conflict"):
            memory.approve(stale.id, reviewer=signed_in(memory, "alice"))


# -- revert, history, as_of ---------------------------------------------------------------------


def test_revert_is_a_new_proposal_routed_by_policy(memory: Memory) -> None:
    note = make_note(memory, "x", tags=["first"])
    memory.propose(note.id, "tags", ["second"], reason="retag", proposer=llm_proposer(memory))
    change = memory.changes()[-1]
    assert change.new_value == ["second"]
    p = memory.revert(change.seq, reviewer=signed_in(memory, "bob"), reason="wrong tag")
    assert p.status == ProposalStatus.AUTO_APPLIED and p.revert_of == change.seq
    assert memory.read(note.id).tags == ["first"]
    last = memory.changes()[-1]
    assert last.kind.value == "revert" and last.old_value == ["second"]
    # the reverted change is still in history: nothing rewritten
    assert memory.changes()[-2] == change
    assert memory.verify().ok


def test_revert_of_reviewed_attribute_waits_for_review(memory: Memory) -> None:
    note = make_note(memory, "x")
    p = memory.propose(note.id, "decision_rationale", "because", reason="r", proposer=llm_proposer(memory))
    memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    change = memory.changes()[-1]
    back = memory.revert(change.seq, reviewer=signed_in(memory, "bob"))
    assert back.status == ProposalStatus.PENDING and back.new_value is None
    memory.approve(back.id, reviewer=signed_in(memory, "alice"))
    assert memory.read(note.id).decision_rationale is None


def test_a_revert_is_the_persons_edit_and_a_held_one_waits_for_a_covering_reviewer(
    database_url: str, tmp_path: Path
) -> None:
    """A revert is a person's edit restoring the earlier value, routed by the policy like any
    person's proposal. A role check blocked bob (sales_lead) from undoing a tags change he may make
    himself (tags apply by themselves), while an auditor could still propose tags directly."""
    policy = policy_with_scopes(tmp_path / "policy", bob=["acme"])
    with Memory(tmp_path / "home", database_url=database_url, policy=policy) as mem:
        bob = signed_in(mem, "bob")
        note = make_note(mem, "Acme call: SSO via Okta needed.", tags=["sso", "okta"])
        mem.propose(note.id, "tags", ["okta"], reason="retag", proposer=llm_proposer(mem))
        tags = [c for c in mem.note_versions(note.id) if c.attribute == "tags"][-1]
        back = mem.revert(tags.seq, reviewer=bob, reason="SSO was right")
        assert back.status == ProposalStatus.AUTO_APPLIED and mem.read(note.id).tags == ["sso", "okta"]
        assert back.proposer.kind.value == "person" and back.proposer.id == "bob"
        # an auditor's revert is their edit too: applied where their edit would be
        undo = [c for c in mem.note_versions(note.id) if c.attribute == "tags"][-1]
        by_auditor = mem.revert(undo.seq, reviewer=signed_in(mem, "audrey"), reason="r")
        assert by_auditor.status == ProposalStatus.AUTO_APPLIED and mem.read(note.id).tags == ["okta"]

        # outside the accounts bob decides in: refused, nothing proposed
        elsewhere = make_note(mem, "Globex call", scope="globex", tags=["pilot"])
        mem.propose(elsewhere.id, "tags", ["trial"], reason="retag", proposer=llm_proposer(mem))
        theirs = [c for c in mem.note_versions(elsewhere.id) if c.attribute == "tags"][-1]
        proposals = len(mem.proposals(limit=1000))
        with pytest.raises(PermissionDeniedError, match="bob decides in acme only, not in globex"):
            mem.revert(theirs.seq, reviewer=bob, reason="r")
        assert len(mem.proposals(limit=1000)) == proposals and mem.read(elsewhere.id).tags == ["trial"]

        # a held attribute: the revert waits, and only a reviewer whose role covers it decides it
        keep = mem.propose(note.id, "deleted", True, reason="duplicate", proposer=llm_proposer(mem))
        mem.approve(keep.id, reviewer=signed_in(mem, "alice"))
        deleted = [c for c in mem.note_versions(note.id) if c.attribute == "deleted"][-1]
        held = mem.revert(deleted.seq, reviewer=bob, reason="not a duplicate")
        assert held.status == ProposalStatus.PENDING and mem.read(note.id).deleted
        with pytest.raises(PermissionDeniedError, match=r"bob \(roles: sales_lead\) may not decide"):
            mem.approve(held.id, reviewer=bob)
        with pytest.raises(PermissionDeniedError, match="may not decide changes to deleted"):
            mem.approve(held.id, reviewer=signed_in(mem, "audrey"))
        assert mem.approve(held.id, reviewer=signed_in(mem, "carol")).status == ProposalStatus.APPROVED
        assert not mem.read(note.id).deleted
        assert mem.verify().ok


def test_approving_a_held_value_the_note_already_holds_records_no_change(memory: Memory) -> None:
    """A value proposed equal to the note's own (an agent's "keep it") applied at once makes no
    change; approved, it made one (and a new version) that changed nothing."""
    note = make_note(memory, "Hooli wants a cheaper plan.")
    keep = memory.propose(note.id, "deleted", False, reason="keep it", proposer=AGENT)
    assert keep.status == ProposalStatus.PENDING
    before = memory.read(note.id)
    changes = len(memory.changes())

    approved = memory.approve(keep.id, reviewer=signed_in(memory, "alice"), comment="right")
    assert approved.status == ProposalStatus.APPROVED and approved.reviewer == "alice"
    assert len(memory.changes()) == changes
    assert memory.read(note.id).version == before.version and not memory.read(note.id).deleted
    assert [e.event for e in memory.history(note.id)][-2:] == ["proposed", "approved"]
    assert memory.verify().ok


def test_revert_of_creation_is_refused(memory: Memory) -> None:
    note = make_note(memory, "x")
    first = memory.changes()[0]
    assert first.note_id == note.id
    with pytest.raises(InvalidInputError, match="created the note"):
        memory.revert(first.seq, reviewer=signed_in(memory, "bob"))


def test_a_revert_never_puts_back_a_value_an_erasure_redacted(memory: Memory) -> None:
    """The value a change replaced quoted an erased input: reverting it would write the marker
    "[erased]" into a kept note, applied and searchable. Refused, saying so; nothing is proposed."""
    kept = memory.add_note(
        "Acme renewal call went well; they want SSO before signing.",
        actor="agent:sales-agent",
        scope="acme",
        at="2025-01-10T10:00:00Z",
    )
    gone = memory.add_note(
        "Call with Mrs Quibblestone of Acme: she is the new buyer, reach her on 0612345678.",
        actor="agent:sales-agent",
        scope="acme",
        at="2025-01-11T10:00:00Z",
    )
    memory.update(
        kept, actor="agent:sales-agent", context="Mrs Quibblestone is the buyer for the SSO renewal"
    )
    memory.update(kept, actor="agent:sales-agent", context="Buyer to confirm the SSO renewal")
    last = [c for c in memory.note_versions(kept) if c.attribute == "context"][-1]
    alice = signed_in(memory, "alice")
    memory.erase(by=alice, reason="data subject request", raw_log_id=memory.read(gone).raw_log_ids[0])
    proposals = len(memory.proposals(limit=1000))

    with pytest.raises(InvalidInputError, match=f"the value change {last.seq} replaced was erased"):
        memory.revert(last.seq, reviewer=alice, reason="the earlier context was better")
    assert memory.read(kept).context == "Buyer to confirm the SSO renewal"
    assert len(memory.proposals(limit=1000)) == proposals
    assert memory.verify().ok


def test_history_says_who_what_when_why_and_from_which_raw_logs(memory: Memory) -> None:
    note = make_note(memory, "We picked vendor X because of price", tags=["vendor"])
    p = memory.propose(
        note.id,
        "decision_rationale",
        "price",
        reason="stated in call",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    memory.reject(p.id, reviewer=signed_in(memory, "alice"), comment="too vague")
    events = memory.history(note.id)
    assert [e.event for e in events] == ["created", "applied", "proposed", "applied", "proposed", "rejected"]
    assert events == sorted(events, key=lambda e: e.at)
    proposed = events[4]
    assert proposed.actor == "llm:offline" and proposed.model == "offline"
    assert proposed.reason == "stated in call" and proposed.raw_log_ids == note.raw_log_ids
    assert events[5].actor == "person:alice" and events[5].comment == "too vague"


def test_as_of_rebuilds_the_note_at_each_instant(memory: Memory) -> None:
    note = make_note(memory, "Acme: 50 seats", tags=["seats"])
    memory.propose(note.id, "tags", ["seats", "pricing"], reason="r", proposer=llm_proposer(memory))
    p = memory.propose(
        note.id, "invalid_at", "2026-06-01T00:00:00Z", reason="superseded", proposer=llm_proposer(memory)
    )
    memory.approve(p.id, reviewer=signed_in(memory, "alice"))
    created, tagged, retagged, retired = memory.changes()
    tick = timedelta(microseconds=1)

    assert memory.as_of(note.id, created.applied_at - tick) is None
    at_creation = memory.as_of(note.id, created.applied_at)
    assert at_creation is not None and at_creation.tags == [] and at_creation.content == "Acme: 50 seats"
    assert memory.as_of(note.id, tagged.applied_at).tags == ["seats"]
    assert memory.as_of(note.id, retagged.applied_at).tags == ["seats", "pricing"]
    before_retire = memory.as_of(note.id, retired.applied_at - tick)
    assert before_retire.invalid_at is None
    now = memory.as_of(note.id, retired.applied_at)
    assert now.invalid_at is not None and now.model_dump() == memory.read(note.id).model_dump()


def test_a_version_shows_that_version_though_its_changes_share_a_moment(memory: Memory) -> None:
    """An add_note applies its attributes in one write, at one moment: "version 2" is the note after
    its second change, not everything applied at that moment."""
    note_id = memory.add_note(
        "Call with Acme: they renew only if we ship SSO by March. Price is $40 per seat.",
        actor="agent:sales-agent",
        scope="acme",
    )
    changes = memory.note_versions(note_id)
    assert len(changes) >= 3 and len({c.applied_at for c in changes[1:]}) == 1  # one moment
    for change in changes:
        past = memory.as_of_version(note_id, change.note_version)
        assert past.version == change.note_version
        newer = [c.attribute for c in changes if c.note_version > change.note_version]
        for attribute in newer:  # what later versions set is not there yet
            assert getattr(past, attribute) in (None, [], ""), (change.note_version, attribute)
    assert memory.as_of_version(note_id, changes[-1].note_version) == memory.read(note_id)
    with pytest.raises(NotFoundError, match="has no version 0"):
        memory.as_of_version(note_id, 0)
    with pytest.raises(NotFoundError, match=f"has no version {len(changes) + 1}"):
        memory.as_of_version(note_id, len(changes) + 1)


def test_history_names_the_model_call_behind_a_value(memory: Memory) -> None:
    """From a note's value to the model call that proposed it: the history event carries its id,
    and the recorded call (task, model, answer) is read by it."""
    note_id = memory.add_note("Acme renews if we ship SSO by March.", actor="agent:sales-agent", scope="acme")
    keywords = next(c for c in memory.note_versions(note_id) if c.attribute == "keywords")
    proposed = next(
        e for e in memory.history(note_id) if e.event == "proposed" and e.proposal_id == keywords.proposal_id
    )
    assert proposed.llm_call_id is not None
    assert proposed.llm_call_id == memory.proposal(keywords.proposal_id).proposer.llm_call_id
    call = memory.llm_call(proposed.llm_call_id)
    assert call.id == proposed.llm_call_id and call.model == proposed.model and call.response_text
    with pytest.raises(NotFoundError, match="model call llm_nope does not exist"):
        memory.llm_call("llm_nope")


def test_a_value_of_an_attribute_a_newer_policy_dropped_is_rejected_when_approved(memory: Memory) -> None:
    """A ledger whose installed policy dropped a team attribute while values of it were pending (the
    install refuses that now; older ledgers hold such values): approving one rejects it, saying
    why, as for a frozen attribute; approving many decides the rest; a correction is refused."""
    from amem.domain.models import utcnow
    from amem.services.policy_registry import record_install

    note = make_note(memory, "Acme call: Leo drafts the ROI summary")
    step = memory.propose(
        note.id, "next_step", "Leo drafts the ROI summary", reason="r", proposer=llm_proposer(memory)
    )
    other = make_note(memory, "Globex call: Ann sends the quote")
    again = memory.propose(
        other.id, "next_step", "Ann sends the quote", reason="r", proposer=llm_proposer(memory)
    )
    why = memory.propose(
        note.id, "decision_rationale", "auditor asked", reason="r", proposer=llm_proposer(memory)
    )
    attributes = {k: v for k, v in memory.policy.attributes.items() if k != "next_step"}
    roles = {
        name: role.model_copy(update={"approves": [a for a in role.approves if a != "next_step"]})
        for name, role in memory.policy.roles.items()
    }
    dropped = memory.policy.model_copy(update={"attributes": attributes, "roles": roles})
    with memory.ledger.write() as tx:  # as an install before it refused this
        record_install(tx, dropped, installed_by="alice", now=utcnow(), previous=tx.installed_policy())

    with Memory(memory.home, database_url=memory.settings.database_url, policy=dropped) as later:
        alice = signed_in(later, "alice")
        with pytest.raises(InvalidInputError, match="next_step is no longer declared by the policy"):
            later.correct(step.id, "Leo sends the ROI summary", reviewer=alice)
        with pytest.raises(
            FrozenAttributeError,
            match=rf"refused by the policy: next_step is no longer declared by policy v2 .* {step.id} was",
        ):
            later.approve(step.id, reviewer=alice)
        report = later.governance.approve_many([again.id, why.id], reviewer=alice)
    assert [(d.id, d.status) for d in report.decided] == [
        (again.id, ProposalStatus.REJECTED),
        (why.id, ProposalStatus.APPROVED),
    ]
    assert report.skipped == []
    decided = memory.proposal(step.id)
    assert decided.status == ProposalStatus.REJECTED and decided.reviewer == "alice"  # who asked
    assert decided.review_comment is not None and decided.review_comment.startswith(
        "refused by policy: next_step is no longer declared by policy v2 (sha256 "
    )
    assert decided.review_comment.endswith("approval asked by person:alice")
    assert "next_step" not in memory.read(note.id).extra and memory.read(note.id).decision_rationale
    assert memory.verify().ok


def test_approving_what_the_policy_has_since_frozen_records_the_rejection(memory: Memory) -> None:
    """One approval raises, the rejection committed; a bulk approval reports it among the decided
    (rejected, saying why), not as skipped: it was decided, and the ledger says so."""
    note = make_note(memory, "We chose Postgres because the team knows it")
    p = memory.propose(
        note.id, "decision_rationale", "team knows it", reason="stated", proposer=llm_proposer(memory)
    )
    other = make_note(memory, "We chose Chroma because it runs embedded")
    q = memory.propose(
        other.id, "decision_rationale", "runs embedded", reason="stated", proposer=llm_proposer(memory)
    )
    attributes = {**memory.policy.attributes, "decision_rationale": AttributePolicy(mode="frozen")}
    frozen = admin_can_sign_in(memory.policy).model_copy(update={"attributes": attributes})
    # the ledger's policy since: installed over the new ledger's version 1 (no admin has a password)
    by = Authentication(frozen, fingerprint(frozen)).signed_in("alice", method="test")
    assert memory.install_policy(frozen, by=by)[0].version == 2
    refused = (
        rf"refused by the policy: decision_rationale is frozen by policy v2 since .* {p.id} was not approved"
    )
    with Memory(memory.home, database_url=memory.settings.database_url, policy=frozen) as later:
        # the queue marks it before anyone approves: the version and since when it is frozen
        marked = later.review_item(p.raw_log_ids[0] if p.raw_log_ids else p.id).fields[0].policy_frozen
        v2 = memory.policy_versions()[-1]
        assert marked is not None and (marked.version, marked.since, marked.sha256) == (
            2,
            v2.installed_at,
            v2.sha256,
        )
        with pytest.raises(FrozenAttributeError, match=refused):
            later.approve(p.id, reviewer=signed_in(later, "alice"), comment="fine")
    with Memory(memory.home, database_url=memory.settings.database_url, policy=frozen) as later:
        report = later.approve_item(q.id, reviewer=signed_in(later, "alice"), shown=[q.id])
    assert [(d.id, d.status) for d in report.decided] == [(q.id, ProposalStatus.REJECTED)]
    assert report.skipped == [] and report.summary() == "1 refused by the policy (frozen since), not approved"
    decided = memory.proposal(p.id)  # another connection: the rejection was committed
    # the policy's rejection at alice's request: she is named as who asked, with her own words
    assert decided.status == ProposalStatus.REJECTED and decided.reviewer == "alice"
    assert decided.review_comment == (
        f"refused by policy: decision_rationale is frozen by policy v2 (sha256 {v2.sha256[:12]}, "
        "attributes.decision_rationale.mode); approval asked by person:alice, who wrote: fine"
    )
    [event] = [e for e in memory.history(note.id) if e.proposal_id == p.id and e.event == "rejected"]
    assert event.actor == "policy"
    assert memory.pending() == [] and memory.read(note.id).decision_rationale is None
    assert memory.read(other.id).decision_rationale is None
    assert memory.verify().ok
