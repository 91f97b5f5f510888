"""Erasure and the numbers an erased input held: a phone number is one number however its digit
groups are written (spaces, dots, hyphens, brackets, a country code), so a kept note that copied it
loses it; short numbers, years and quarters the erased input also said are no one's, and stay."""

from __future__ import annotations

import sqlalchemy as sa

from amem.domain.hashing import REDACTED
from amem.memory import Memory
from tests.factories import signed_in

ERASED = (
    "Cyberdyne: their new admin Miles Dyson wants a callback on +1 415 555 0199 or at 415-555-0142; "
    "he wants 40 seats from Q2 2027 out of the FY 2026-2027 budget."
)


def _agent_edit(memory: Memory, note_id: str, **values: object) -> None:
    """An agent that had read the erased input writes into a kept note; a reviewer approves."""
    for p in memory.update(note_id, actor="agent:sales-agent", **values):
        memory.approve(p.id, reviewer=signed_in(memory, "alice"))


def test_a_phone_number_written_with_spaces_leaves_the_kept_note_that_copied_it(memory: Memory) -> None:
    """Before, the number was read as four short words ("1", "415", "555", "0199"), none of them a
    long number: the kept note's next step kept "+1 415 555 0199" after the erasure, in the note,
    its proposal and its change (the hyphenated 415-555-0142 was caught)."""
    kept = memory.add_note(
        "Cyberdyne renewal call scheduled; pricing unchanged.", actor="agent:sales-agent", scope="cyb"
    )
    other = memory.add_note("Cyberdyne asked for a quote.", actor="agent:sales-agent", scope="cyb")
    gone = memory.add_note(ERASED, actor="agent:sales-agent", scope="cyb")
    _agent_edit(memory, kept, next_step="Call the new admin back on +1 415 555 0199")
    # the same number as another person writes it: without the country code, the area code in brackets
    _agent_edit(memory, other, decision_rationale="the admin at (415) 555-0199 asked for it")

    report = memory.erase(
        by=signed_in(memory, "alice"), reason="request", raw_log_id=memory.read(gone).raw_log_ids[0]
    )

    assert memory.read(kept).extra["next_step"] == REDACTED
    assert memory.read(other).decision_rationale == REDACTED
    assert report.values_quoting == 2
    with memory.ledger.engine.connect() as conn:
        for table in ("raw_logs", "llm_calls", "notes", "proposals", "changes"):
            rows = conn.execute(sa.text(f"SELECT * FROM {table}")).all()
            assert not [r for r in rows if "555 0199" in str(tuple(r)) or "555-0199" in str(tuple(r))], table
    result = memory.verify()
    assert result.ok, result.problems


def test_years_quarters_and_short_numbers_the_erased_input_said_stay_in_a_kept_note(memory: Memory) -> None:
    """ "40 seats", "Q2 2027" and "FY 2026-2027" are what an account's notes all say. Before, the year
    range was read as a number of eight digits, a mark: the kept note's value went with the erasure."""
    kept = memory.add_note("Cyberdyne asked for a quote.", actor="agent:sales-agent", scope="cyb")
    gone = memory.add_note(ERASED, actor="agent:sales-agent", scope="cyb")
    step = "Quote 40 seats from Q2 2027 against the FY 2026-2027 budget"
    _agent_edit(memory, kept, next_step=step)

    report = memory.erase(
        by=signed_in(memory, "alice"), reason="request", raw_log_id=memory.read(gone).raw_log_ids[0]
    )

    assert memory.read(kept).extra["next_step"] == step and report.values_quoting == 0


def test_a_number_is_one_number_however_its_groups_are_written() -> None:
    """The marks of a phone number match its copies in other spellings; digits side by side that are
    not one number are never joined; a kept input holding the number, with or without its country
    code, holds the mark."""
    from amem.services.erased_words import held_by, marks_of, quotes

    marks = marks_of("Reach Miles on +1 415 555 0199 or 020 7946 0958, order 88231.")
    for copy in ("+1 (415) 555-0199", "415.555.0199", "14155550199", "+44 20 7946 0958", "ref 88231"):
        assert quotes(copy, marks), copy
    for other in ("415 555 0198", "40 seats in 2027", "Q2 2027", "2026-2027", "3 seats", "1 2 3 4 5"):
        assert not quotes(other, marks), other
    # years, quarters and small numbers side by side make no mark of their own
    assert marks_of("In 2027 40 seats, 2027 400 users, Q2-2027, FY 2026 2027; options 1 2 3 4 5") == set()
    # a kept input holding the number without its country code: it identifies nothing erased
    assert held_by(marks_of("call +1 415 555 0199"), "Office line: 415-555-0199") == marks_of(
        "call +1 415 555 0199"
    )
    # two numbers are not forms of one another: 12345 is not 123456
    assert held_by({"12345"}, "ticket 123456") == set()
