"""A record said before the note that retires it but analysed after it (a late import, a retry):
its own retirement cites that newer note's raw log beside its own, and its evidence is the newer
note's words saying otherwise, as a newer input's own words are a contradiction's evidence
(amem/services/drafting.py). No database."""

from __future__ import annotations

from datetime import UTC, datetime

from amem.services.drafting import Snapshot, draft
from tests.factories import raw_log
from tests.services.test_drafting import NEW, POLICY, answers, neighbour

MARCH = "Acme pays $42 per seat."
JUNE = "Pricing call. As of today Acme pays $55 per seat."
JUNE_SAID = datetime(2026, 6, 8, 10, tzinfo=UTC)


def _late_retirement(contradiction: dict[str, object]):
    """The invalid_at draft of a March input analysed after June's note, given the link answer's one
    contradiction naming June."""
    june = neighbour("n_00000000000june", JUNE, raw_log_ids=["r_june"])
    raw = raw_log(MARCH, at=datetime(2026, 3, 10, tzinfo=UTC))
    link = {"contradictions": [{"note_id": june.id, "reason": "new price", **contradiction}]}
    snapshot = Snapshot(neighbours={june.id: june}, said_at={"r_june": JUNE_SAID})
    (retired,) = [
        d for d in draft(NEW, raw, answers(link=link), snapshot, POLICY) if d.attribute == "invalid_at"
    ]
    assert (retired.note_id, retired.new_value) == (NEW, JUNE_SAID)
    return raw, june, retired


def test_a_late_record_s_retirement_cites_the_newer_note_and_quotes_its_words() -> None:
    raw, june, retired = _late_retirement(
        {"evidence": MARCH, "newer_evidence": "As of today Acme pays $55 per seat."}
    )

    # the record's own raw log first (its review item), then the newer note's: named in data
    assert list(retired.raw_log_ids) == [raw.id, "r_june"]
    assert retired.evidence == "As of today Acme pays $55 per seat."
    assert retired.evidence in june.content and retired.evidence not in raw.text
    assert retired.reason == f"contradicted by newer note {june.id}: new price"


def test_newer_words_not_in_the_newer_note_are_not_cited_as_its_evidence() -> None:
    """A model's span for the newer note must be that note's text, character for character, as any
    evidence must be its raw log's: else the record's own sentence stays, as before."""
    raw, _, retired = _late_retirement({"evidence": MARCH, "newer_evidence": "Acme pays $60 per seat."})

    assert retired.evidence == MARCH
    assert list(retired.raw_log_ids) == [raw.id, "r_june"]  # the newer note is still named


def test_an_answer_recorded_before_newer_words_were_asked_for_keeps_the_record_s_sentence() -> None:
    raw, _, retired = _late_retirement({"evidence": MARCH})

    assert retired.evidence == MARCH
    assert list(retired.raw_log_ids) == [raw.id, "r_june"]


def test_the_record_s_own_sentence_is_still_required() -> None:
    """The contradiction is kept only where the model cites the record's fact it says was made
    untrue: words of the newer note alone retire nothing."""
    june = neighbour("n_00000000000june", JUNE, raw_log_ids=["r_june"])
    raw = raw_log(MARCH, at=datetime(2026, 3, 10, tzinfo=UTC))
    said = {"note_id": june.id, "reason": "new price", "evidence": "Acme pays $60 per seat."}
    link = {"contradictions": [{**said, "newer_evidence": "As of today Acme pays $55 per seat."}]}
    snapshot = Snapshot(neighbours={june.id: june}, said_at={"r_june": JUNE_SAID})

    drafts = draft(NEW, raw, answers(link=link), snapshot, POLICY)

    assert [d for d in drafts if d.attribute == "invalid_at"] == []


def test_in_order_a_contradiction_cites_only_the_newer_input_and_its_words() -> None:
    """The usual way round is unchanged: the newer input retires the older note with its own words,
    from its own raw log alone (a stray newer_evidence is no source)."""
    march = neighbour("n_0000000000march", MARCH, raw_log_ids=["r_march"])
    raw = raw_log(JUNE, at=JUNE_SAID)
    span = "As of today Acme pays $55 per seat."
    link = {
        "contradictions": [
            {"note_id": march.id, "reason": "new price", "evidence": span, "newer_evidence": MARCH}
        ]
    }
    snapshot = Snapshot(neighbours={march.id: march}, said_at={"r_march": datetime(2026, 3, 10, tzinfo=UTC)})

    (retired,) = [
        d for d in draft(NEW, raw, answers(link=link), snapshot, POLICY) if d.attribute == "invalid_at"
    ]

    assert retired.note_id == march.id
    assert (list(retired.raw_log_ids), retired.evidence) == ([raw.id], span)
