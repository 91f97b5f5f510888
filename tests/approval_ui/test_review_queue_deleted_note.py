"""The review queue on an edit whose note was deleted since: the card says so before anyone clicks
(who deleted it, when, the change to revert), its Approve is disabled, Reject still decides it, and
"approve all" skips it, counting it in what it reports."""

from __future__ import annotations

from amem.domain.models import Note, Proposal, ProposalStatus
from amem.memory import Memory
from tests.approval_ui.conftest import delete_notes, open_console, plain, texts
from tests.factories import llm_proposer, said


def _hold(mem: Memory, note: Note, value: str) -> Proposal:
    p = mem.propose(
        note.id, "next_step", value, reason="stated", proposer=llm_proposer(mem), raw_log_ids=note.raw_log_ids
    )
    assert p.status == ProposalStatus.PENDING
    return p


def _deletion_seq(mem: Memory, note: Note) -> int:
    return max(e.change_seq for e in mem.history(note.id) if e.change_seq is not None)


def test_the_card_says_the_note_was_deleted_and_only_reject_decides_it(mem: Memory) -> None:
    note = said(mem, "Acme call: next step is to send the quote")
    edit = _hold(mem, note, "send the quote")
    delete_notes(mem, [note])
    seq = _deletion_seq(mem, note)
    at = open_console("alice")
    page = plain(texts(at))
    assert "note deleted since" in page
    warning = plain(" ".join(w.value for w in at.warning))
    assert f"note {note.id} was deleted on " in warning and f"by person:alice (change {seq})" in warning
    assert f"amem revert {seq}" in warning and "approving is refused" in warning
    assert at.button(key=f"approve_{edit.id}").disabled
    assert f"correcting_{edit.id}" not in [b.key for b in at.button]
    at.text_input(key=f"comment_{note.raw_log_ids[0]}").input("the note is gone")
    at.button(key=f"reject_{edit.id}").click().run()
    assert mem.proposal(edit.id).status == ProposalStatus.REJECTED


def test_approve_all_skips_the_deleted_note_s_edit_and_says_so(mem: Memory) -> None:
    gone = said(mem, "Acme call: next step is to send the quote")
    edit = _hold(mem, gone, "send the quote")
    delete_notes(mem, [gone])
    live = said(mem, "Acme call: next step is a demo")
    other = _hold(mem, live, "book a demo")
    at = open_console("alice")
    at.button(key="approve_all").click().run()
    assert "edits of notes deleted since, are skipped and reported" in plain(texts(at))
    at.button(key="confirm_all").click().run()
    said_after = plain(texts(at))
    assert "Approved all 2 matching items: 1 approved, 1 skipped (1 on a note deleted since)." in said_after
    assert (
        f"Skipped {edit.id}: proposal {edit.id} (next_step) refused: note {gone.id} was deleted" in said_after
    )
    assert mem.proposal(other.id).status == ProposalStatus.APPROVED
    assert mem.proposal(edit.id).status == ProposalStatus.PENDING
