"""An edit held for review on a note deleted since: approving it would change a value nobody reads
and not bring the note back, so it is refused (single, item and "all matching" alike: skipped and
counted), said on its review item, and can still be rejected; reverting the deletion makes it
approvable again. Both backends."""

from __future__ import annotations

import pytest

from amem.domain.models import Note, Proposal, ProposalStatus
from amem.errors import NoteDeletedError
from amem.memory import Memory
from amem.services.review import ReviewFilter
from tests.factories import held_by_model, said, signed_in


def _held_edit(memory: Memory, note: Note, value: str = "send the quote") -> Proposal:
    p = held_by_model(memory, note, "next_step", value)
    assert p.status == ProposalStatus.PENDING
    return p


def _deleted(memory: Memory, note: Note) -> int:
    """Delete ``note`` as an agent asks and alice approves; the change that deleted it."""
    asked = memory.delete(note.id, actor="agent:sales-agent", reason="a duplicate")
    memory.approve(asked.id, reviewer=signed_in(memory, "alice"))
    assert memory.read(note.id).deleted
    return max(e.change_seq for e in memory.history(note.id) if e.change_seq is not None)


@pytest.fixture
def edit_of_deleted(memory: Memory) -> tuple[Note, Proposal, int]:
    note = said(memory, "Acme call: next step is to send the quote")
    edit = _held_edit(memory, note)
    return note, edit, _deleted(memory, note)


def test_approving_an_edit_of_a_deleted_note_is_refused_saying_who_deleted_it_and_when(
    memory: Memory, edit_of_deleted: tuple[Note, Proposal, int]
) -> None:
    note, edit, seq = edit_of_deleted
    with pytest.raises(NoteDeletedError) as refused:
        memory.approve(edit.id, reviewer=signed_in(memory, "alice"))
    message = str(refused.value)
    assert f"note {note.id} was deleted on " in message
    assert f"by person:alice (change {seq})" in message
    assert "reject it, or restore the note first" in message and f"amem revert {seq}" in message
    # nothing recorded: still pending, the deleted note unchanged
    assert memory.proposal(edit.id).status == ProposalStatus.PENDING
    assert memory.read(note.id).extra.get("next_step") is None
    # a reviewer's correction would approve a value of it too: refused, nothing recorded
    with pytest.raises(NoteDeletedError):
        memory.correct(edit.id, "call them back", reviewer=signed_in(memory, "alice"))
    assert memory.proposal(edit.id).status == ProposalStatus.PENDING


def test_the_review_item_says_the_note_was_deleted_and_rejecting_still_works(
    memory: Memory, edit_of_deleted: tuple[Note, Proposal, int]
) -> None:
    note, edit, seq = edit_of_deleted
    item = memory.review_item(note.raw_log_ids[0])
    [field] = item.fields
    assert field.note_deleted is not None
    assert field.note_deleted.change_seq == seq and field.note_deleted.by == "person:alice"
    assert not field.note_deleted.erased
    decided = memory.reject(edit.id, reviewer=signed_in(memory, "alice"), comment="the note is gone")
    assert decided.status == ProposalStatus.REJECTED
    assert memory.review_items().total == 0


def test_approving_the_item_or_all_matching_skips_the_deleted_notes_edits_and_counts_them(
    memory: Memory, edit_of_deleted: tuple[Note, Proposal, int]
) -> None:
    note, edit, _ = edit_of_deleted
    alice = signed_in(memory, "alice")
    item = memory.review_item(note.raw_log_ids[0])
    report = memory.approve_item(item.key, reviewer=alice, shown=item.proposal_ids)
    assert report.decided == [] and [s.proposal_id for s in report.skipped] == [edit.id]
    assert report.skipped[0].note_deleted and report.summary() == "1 skipped (1 on a note deleted since)"
    live = said(memory, "Globex call: next step is a pilot")
    other = _held_edit(memory, live, "plan the pilot")
    f = ReviewFilter(attribute="next_step")
    counted = memory.count_review_items(f, reviewer=alice.id)
    assert counted.items == 2
    report = memory.approve_matching(
        f, reviewer=alice, expected_items=counted.items, fingerprint=counted.fingerprint
    )
    assert [p.id for p in report.decided] == [other.id]
    assert [s.proposal_id for s in report.skipped] == [edit.id]
    assert report.summary() == "1 approved, 1 skipped (1 on a note deleted since)"
    assert memory.read(live.id).extra["next_step"] == "plan the pilot"
    assert memory.proposal(edit.id).status == ProposalStatus.PENDING


def test_once_the_deletion_is_reverted_the_edit_is_approved(
    memory: Memory, edit_of_deleted: tuple[Note, Proposal, int]
) -> None:
    note, edit, seq = edit_of_deleted
    restore = memory.revert(seq, reviewer=signed_in(memory, "bob"), reason="not a duplicate")
    memory.approve(restore.id, reviewer=signed_in(memory, "alice"))
    assert not memory.read(note.id).deleted
    assert memory.review_item(note.raw_log_ids[0]).fields[0].note_deleted is None
    assert memory.approve(edit.id, reviewer=signed_in(memory, "alice")).status == ProposalStatus.APPROVED
    assert memory.read(note.id).extra["next_step"] == "send the quote"
