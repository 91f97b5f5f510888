"""A reviewer's correction of a held value: the model's value rejected, the reviewer's proposed from
the same raw logs, routed by the policy, and traceable both ways."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from amem.domain.models import ActorKind, ProposalStatus
from amem.errors import InvalidInputError, PermissionDeniedError, ProposalStateError
from amem.ledger import schema
from amem.memory import Memory
from amem.policy import fingerprint
from amem.services.authentication import Authentication
from tests.factories import admin_can_sign_in, llm_proposer, said, signed_in

RENEWAL = "Acme will renew in March, said on the call of 30 November"


def _wrong_date(memory: Memory) -> tuple[str, str]:
    """A note said on 2026-11-30 and the model's valid_at for it, a March in the past; (note, proposal)."""
    note = said(memory, RENEWAL, at=datetime(2026, 11, 30, tzinfo=UTC))
    p = memory.propose(
        note.id,
        "valid_at",
        "2026-03-01",
        reason="renewal date",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
        evidence="renew in March",
    )
    assert p.status == ProposalStatus.PENDING
    return note.id, p.id


def test_a_correction_rejects_the_value_and_proposes_the_reviewers_for_a_second_look(memory: Memory) -> None:
    note_id, wrong = _wrong_date(memory)
    alice = signed_in(memory, "alice")
    done = memory.correct(wrong, "2027-03-01", reviewer=alice, comment="March of next year")

    assert done.corrected.id == wrong and done.corrected.status == ProposalStatus.REJECTED
    assert done.corrected.reviewer == "alice"
    assert done.corrected.review_comment == "March of next year (corrected by alice)"
    fix = done.correction
    assert (fix.corrects, fix.attribute, fix.note_id) == (wrong, "valid_at", note_id)
    assert fix.new_value == "2027-03-01T00:00:00+00:00"
    assert (fix.proposer.kind, fix.proposer.id) == (ActorKind.PERSON, "alice")
    # traceable to the same input and the same span the model read
    assert fix.raw_log_ids == memory.proposal(wrong).raw_log_ids and fix.evidence == "renew in March"
    assert fix.reason == f"March of next year (correction of {wrong})"
    # self-approval is off: a held value still gets a second person's look
    assert fix.status == ProposalStatus.PENDING
    assert memory.read(note_id).valid_at is None
    assert [p.id for p in memory.pending()] == [fix.id]
    with pytest.raises(PermissionDeniedError, match="self-approval"):
        memory.approve(fix.id, reviewer=alice)
    assert memory.approve(fix.id, reviewer=signed_in(memory, "bob")).status == ProposalStatus.APPROVED
    assert memory.read(note_id).valid_at == datetime(2027, 3, 1, tzinfo=UTC)
    history = memory.history(note_id)
    assert [(e.event, e.proposal_id) for e in history if e.attribute == "valid_at"] == [
        ("proposed", wrong),
        ("rejected", wrong),
        ("proposed", fix.id),
        ("approved", fix.id),
        ("applied", fix.id),
    ]
    assert memory.verify().ok


def test_where_the_policy_allows_self_approval_the_correction_applies_at_once(memory: Memory) -> None:
    note_id, wrong = _wrong_date(memory)
    looser = admin_can_sign_in(memory.policy).model_copy(update={"self_approval": True})
    admin = Authentication(looser, fingerprint(looser)).signed_in("alice", method="test")
    memory.install_policy(looser, by=admin)
    with Memory(memory.home, database_url=memory.settings.database_url, policy=looser) as mem:
        fix = mem.correct(wrong, "2027-03-01", reviewer=signed_in(mem, "alice")).correction
        assert fix.status == ProposalStatus.APPROVED and fix.reviewer == "alice"
        assert mem.read(note_id).valid_at == datetime(2027, 3, 1, tzinfo=UTC)
        applied = mem.changes()[-1]
        assert (applied.proposal_id, applied.actor.id) == (fix.id, "alice")
        assert mem.proposal(wrong).status == ProposalStatus.REJECTED
        assert mem.verify().ok


def test_a_correction_that_is_no_correction_is_refused_and_the_value_still_waits(memory: Memory) -> None:
    note_id, wrong = _wrong_date(memory)
    alice = signed_in(memory, "alice")
    with pytest.raises(InvalidInputError, match=r"is the value proposal .* proposes: approve it"):
        memory.correct(wrong, "2026-03-01", reviewer=alice)
    with pytest.raises(InvalidInputError, match="valid_at"):
        memory.correct(wrong, "sometime in spring", reviewer=alice)
    memory.propose(note_id, "next_step", "send the quote", reason="r", proposer=llm_proposer(memory))
    step = memory.approve(memory.pending(attribute="next_step")[0].id, reviewer=alice)
    assert step.status == ProposalStatus.APPROVED
    again = memory.propose(
        note_id, "next_step", "send the quote by Friday", reason="r", proposer=llm_proposer(memory)
    )
    with pytest.raises(InvalidInputError, match="already the note's next_step: reject"):
        memory.correct(again.id, "send the quote", reviewer=alice)
    assert memory.proposal(wrong).status == ProposalStatus.PENDING
    assert memory.proposal(again.id).status == ProposalStatus.PENDING
    assert len(memory.pending()) == 2


def test_only_a_reviewer_who_may_decide_the_value_corrects_it(memory: Memory) -> None:
    _, wrong = _wrong_date(memory)
    for who in ("agent:sales-agent", "audrey", "mallory"):
        with pytest.raises(PermissionDeniedError):
            memory.correct(wrong, "2027-03-01", reviewer=signed_in(memory, who))
    note = said(memory, "Acme's duplicate of the renewal note")
    tombstone = memory.propose(note.id, "deleted", True, reason="duplicate", proposer=llm_proposer(memory))
    with pytest.raises(InvalidInputError, match="deletes a note: approve or reject it"):
        memory.correct(tombstone.id, False, reviewer=signed_in(memory, "alice"))
    memory.reject(wrong, reviewer=signed_in(memory, "bob"), comment="no date was said")
    with pytest.raises(ProposalStateError, match="rejected by bob"):
        memory.correct(wrong, "2027-03-01", reviewer=signed_in(memory, "alice"))
    assert not any(p.corrects for p in memory.proposals())


def test_a_corrections_link_is_on_its_chained_record(memory: Memory) -> None:
    """Who corrected what is tamper-evident: the link is covered by the proposal's event."""
    _, wrong = _wrong_date(memory)
    fix = memory.correct(wrong, "2027-03-01", reviewer=signed_in(memory, "alice")).correction
    assert memory.verify().ok
    with memory.ledger.engine.begin() as conn:
        conn.execute(sa.text("UPDATE proposals SET corrects = NULL WHERE id = :id"), {"id": fix.id})
    result = memory.verify()
    assert not result.ok and any(fix.id in p for p in result.problems)


def test_a_downgrade_below_0021_is_refused_while_a_correction_is_on_the_record(memory: Memory) -> None:
    from amem.errors import MigrationRefusedError

    _, wrong = _wrong_date(memory)
    schema.downgrade(memory.ledger.engine, "0020")  # no correction yet: it goes down and up
    schema.upgrade(memory.ledger.engine)
    memory.correct(wrong, "2027-03-01", reviewer=signed_in(memory, "alice"))
    with pytest.raises(MigrationRefusedError, match="1 proposal"):
        schema.downgrade(memory.ledger.engine, "0020")
    assert schema.current_revision(memory.ledger.engine) == schema.head_revision()
    assert memory.verify().ok


def test_the_second_reviewer_reads_the_correction_beside_the_value_it_replaces(memory: Memory) -> None:
    from amem.services.review import ReviewFilter

    _, wrong = _wrong_date(memory)
    fix = memory.correct(wrong, "2027-03-01", reviewer=signed_in(memory, "alice")).correction
    (item,) = memory.review_items(ReviewFilter(kind="correction")).items
    (field,) = item.fields
    assert (field.proposal.id, field.kind, field.proposed_words) == (fix.id, "correction", "1 March 2027")
    c = field.corrected
    assert c is not None
    assert (c.proposal_id, c.proposed_words, c.proposer, c.corrected_by) == (
        wrong,
        "1 March 2026",
        "llm:offline",
        "alice",
    )
    assert field.located_by == "evidence"  # the span the model read, still highlighted
    assert memory.review_items(ReviewFilter(kind="value")).items == []
    assert memory.count_review_items(ReviewFilter(kind="correction")).items == 1


def test_where_the_policy_freezes_a_persons_value_the_correction_is_refused_and_nothing_lost(
    memory: Memory,
) -> None:
    """A rule that takes no person's value for valid_at: correcting would reject the model's value
    and record the reviewer's as refused, losing both; it is refused before anything is decided."""
    from amem.policy import AttributePolicy, Condition, Rule

    _, wrong = _wrong_date(memory)
    people_frozen = AttributePolicy(
        mode="review", rules=[Rule(when=Condition(proposer_kinds=["person"]), mode="frozen")]
    )
    strict = admin_can_sign_in(memory.policy).model_copy(
        update={"attributes": {**memory.policy.attributes, "valid_at": people_frozen}}
    )
    memory.install_policy(
        strict, by=Authentication(strict, fingerprint(strict)).signed_in("alice", method="test")
    )
    with Memory(memory.home, database_url=memory.settings.database_url, policy=strict) as mem:
        with pytest.raises(InvalidInputError, match="freezes valid_at for a person's value"):
            mem.correct(wrong, "2027-03-01", reviewer=signed_in(mem, "alice"))
        assert mem.proposal(wrong).status == ProposalStatus.PENDING
        assert len(mem.proposals()) == len(memory.proposals())  # no correction recorded


def test_each_reviewer_is_told_how_many_corrections_wait_for_their_second_look(memory: Memory) -> None:
    _, wrong = _wrong_date(memory)
    assert memory.second_looks("bob") == 0
    memory.correct(wrong, "2027-03-01", reviewer=signed_in(memory, "alice"))
    assert (memory.second_looks("bob"), memory.second_looks("alice")) == (1, 0)  # not her own


def test_a_correction_that_shows_nothing_is_refused_and_the_models_value_still_waits(memory: Memory) -> None:
    """Spaces or a zero-width character were stripped to "" and replaced the model's value with an
    empty correction; refused, as an input whose content shows nothing is."""
    note = said(memory, RENEWAL)
    held = memory.propose(note.id, "next_step", "send the quote", reason="r", proposer=llm_proposer(memory))
    alice = signed_in(memory, "alice")
    for nothing in ("   ", "\u200b", " \u200b\t", "\u2060"):
        with pytest.raises(InvalidInputError, match=r"value of 'next_step' shows nothing"):
            memory.correct(held.id, nothing, reviewer=alice)
    assert memory.proposal(held.id).status == ProposalStatus.PENDING
    assert [p.id for p in memory.pending()] == [held.id]  # no empty correction beside it
    fixed = memory.correct(held.id, " send the revised quote ", reviewer=alice).correction
    assert fixed.new_value == "send the revised quote"
