"""A record analysed after the note that retires it (a late import, a retry): its retirement cites
the newer note's raw log beside its own and quotes that note's words, so the review queue finds the
newer note from the proposal's data, not from its reason's text; a retirement recorded before (its
reason naming the note, its own raw log alone) still shows it (history is never rewritten)."""

from __future__ import annotations

from amem.domain.models import ProposalStatus
from amem.memory import Memory
from amem.services.review import ReviewField, contested_words
from tests.factories import llm_proposer, signed_in

MARCH_PRICE = "Pricing call: Globex pays $42 per seat per month."
JUNE_PRICE = "Pricing update. As of today Globex pays $55 per seat per month."
#: the span of June's raw log that says otherwise
JUNE_SAYS = "As of today Globex pays $55 per seat per month."
MARCH_AT, JUNE_AT = "2026-03-10T10:00:00Z", "2026-06-08T10:00:00Z"


def _add(memory: Memory, text: str, at: str) -> str:
    return memory.add_note(text, at=at, actor="agent:crm", scope="globex", wait=True)


def _source(memory: Memory, note_id: str) -> str:
    return memory.read(note_id).raw_log_ids[0]


def _retirement(memory: Memory, note_id: str) -> ReviewField:
    (field,) = [f for item in memory.review_items().items for f in item.fields if f.attribute == "invalid_at"]
    assert field.note_id == note_id
    return field


def test_a_late_record_s_retirement_cites_the_newer_note_and_quotes_its_words(memory: Memory) -> None:
    june = _add(memory, JUNE_PRICE, JUNE_AT)
    march = _add(memory, MARCH_PRICE, MARCH_AT)  # an import of older history, analysed last

    field = _retirement(memory, march)
    p = field.proposal

    # the record's own input first (the item is the record's), then the newer note's
    assert p.raw_log_ids == [_source(memory, march), _source(memory, june)]
    (june_log,) = memory.raw_logs([_source(memory, june)])
    assert p.evidence == JUNE_SAYS and p.evidence in june_log.text  # the span saying otherwise
    assert field.newer is not None and field.newer.note_id == june
    assert field.newer.span is not None
    start, end = field.newer.span
    assert field.newer.content[start:end] == p.evidence
    assert memory.verify().ok


def test_a_late_record_is_contested_in_the_newer_note_s_words_as_in_order(memory: Memory) -> None:
    _add(memory, JUNE_PRICE, JUNE_AT)
    march = _add(memory, MARCH_PRICE, MARCH_AT)

    fact = {f.note.id: f for f in memory.facts("globex").facts}[march]
    waiting = fact.retirement_waiting
    assert waiting is not None and waiting.evidence == JUNE_SAYS

    said = contested_words(waiting.evidence, waiting.reason, fact.note.content)
    assert said == f'a newer note says otherwise: "{JUNE_SAYS}"'


def test_the_queue_finds_the_newer_note_from_the_proposal_s_sources_not_its_reason(memory: Memory) -> None:
    """Its reason names no note: the newer fact beside the record comes from the raw logs it cites."""
    older = _add(memory, "Globex signed the order form for the Growth plan.", MARCH_AT)
    newer = _add(memory, "Globex booked the onboarding kickoff for next week.", JUNE_AT)
    assert memory.pending(attribute="invalid_at") == []
    memory.propose(
        older,
        "invalid_at",
        JUNE_AT,
        reason="a later fact makes it untrue",
        proposer=llm_proposer(memory),
        raw_log_ids=[_source(memory, older), _source(memory, newer)],
        evidence="booked the onboarding kickoff",
    )

    field = _retirement(memory, older)

    assert field.older is None
    assert field.newer is not None and field.newer.note_id == newer
    assert field.newer.said_at is not None and field.newer.said_at.isoformat().startswith("2026-06-08T10:00")


def test_a_retirement_recorded_before_its_sources_named_the_newer_note_still_shows_it(memory: Memory) -> None:
    """An older amem cited the record's own raw log alone and named the newer note in its reason."""
    older = _add(memory, "Globex signed the order form for the Growth plan.", MARCH_AT)
    newer = _add(memory, "Globex booked the onboarding kickoff for next week.", JUNE_AT)
    memory.propose(
        older,
        "invalid_at",
        JUNE_AT,
        reason=f"contradicted by newer note {newer}: a later fact",
        proposer=llm_proposer(memory),
        raw_log_ids=[_source(memory, older)],
        evidence="Globex signed the order form",
    )

    field = _retirement(memory, older)

    assert field.newer is not None and field.newer.note_id == newer
    assert field.newer.span is None  # its evidence is the record's own sentence, marked in the item
    assert field.span is not None


def test_a_reviewer_s_correction_of_a_late_record_s_retirement_still_shows_the_newer_fact(
    memory: Memory, reviewer_passwords: dict[str, str]
) -> None:
    june = _add(memory, JUNE_PRICE, JUNE_AT)
    march = _add(memory, MARCH_PRICE, MARCH_AT)
    wrong = _retirement(memory, march).proposal

    fix = memory.correct(wrong.id, "2026-06-01", reviewer=signed_in(memory, "alice")).correction

    assert fix.raw_log_ids == wrong.raw_log_ids and fix.evidence == JUNE_SAYS
    field = _retirement(memory, march)
    assert field.proposal.id == fix.id
    assert field.newer is not None and field.newer.note_id == june


def test_erasing_the_newer_input_withdraws_the_late_record_s_retirement_that_quotes_it(
    memory: Memory, reviewer_passwords: dict[str, str]
) -> None:
    """The retirement's evidence is the newer input's words, one of its sources: erased on request,
    that input takes the proposal with it (withdrawn, its evidence redacted), as any value made from
    an erased input; no reviewer is asked to retire the record for a fact that is gone."""
    june = _add(memory, JUNE_PRICE, JUNE_AT)
    march = _add(memory, MARCH_PRICE, MARCH_AT)
    wrong = _retirement(memory, march).proposal

    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=_source(memory, june))

    gone = memory.proposal(wrong.id)
    assert gone.status == ProposalStatus.SUPERSEDED and JUNE_SAYS not in (gone.evidence or "")
    assert memory.pending(attribute="invalid_at") == []
    assert memory.read(march).invalid_at is None
    assert memory.verify().ok
