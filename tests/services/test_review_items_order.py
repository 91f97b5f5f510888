"""A review item for a record analysed after the note that retires it (a late import, a retry):
the item is the record's own input, so the newer fact is shown beside it; in order, the older
fact is shown beside the newer input, as before. A contested fact is given in the newer note's
words, never in its own."""

from __future__ import annotations

from amem.memory import Memory
from amem.services.review import contested_words

MARCH_PRICE = "Pricing call: Globex pays $42 per seat per month."
JUNE_PRICE = "As of today Globex pays $55 per seat per month."
MARCH_AT, JUNE_AT = "2026-03-10T10:00:00Z", "2026-06-08T10:00:00Z"


def _add(memory: Memory, text: str, at: str) -> str:
    return memory.add_note(text, at=at, actor="agent:crm", scope="globex", wait=True)


def _retirement_field(memory: Memory, note_id: str):
    (field,) = [f for item in memory.review_items().items for f in item.fields if f.attribute == "invalid_at"]
    assert field.note_id == note_id
    return field


def test_a_late_record_s_item_shows_the_newer_fact_and_a_reason_from_its_side(memory: Memory) -> None:
    june = _add(memory, JUNE_PRICE, JUNE_AT)
    march = _add(memory, MARCH_PRICE, MARCH_AT)  # an import of older history

    field = _retirement_field(memory, march)

    assert field.older is None  # the item's raw log is the older fact itself
    assert field.newer is not None and field.newer.note_id == june
    assert field.newer.content == JUNE_PRICE and field.newer.said_at is not None
    assert field.newer.said_at.isoformat().startswith("2026-06-08T10:00")
    assert field.proposal.reason.endswith("$42/seat here, $55/seat in that note")


def test_in_order_the_item_still_shows_the_older_fact_beside_the_newer(memory: Memory) -> None:
    march = _add(memory, MARCH_PRICE, MARCH_AT)
    _add(memory, JUNE_PRICE, JUNE_AT)

    field = _retirement_field(memory, march)

    assert field.newer is None
    assert field.older is not None and field.older.content == MARCH_PRICE
    assert field.proposal.reason.endswith("$55/seat here, $42/seat in that note")


def test_a_late_record_is_contested_in_the_newer_note_s_words_not_its_own(memory: Memory) -> None:
    _add(memory, JUNE_PRICE, JUNE_AT)
    march = _add(memory, MARCH_PRICE, MARCH_AT)

    facts = {f.note.id: f for f in memory.facts("globex").facts}
    waiting = facts[march].retirement_waiting
    assert waiting is not None
    said = contested_words(waiting.evidence, waiting.reason, facts[march].note.content)

    assert MARCH_PRICE not in said
    assert said == f'a newer note says otherwise: "{JUNE_PRICE}"'  # its evidence: the June note's words


def test_a_retirement_recorded_with_the_record_s_own_sentence_is_contested_by_its_reason() -> None:
    """An older amem's evidence for a late record was its own sentence: quoting it as the newer
    note's would say the opposite of what happened, so the reason (naming that note) is given."""
    why = "different price per seat: $42/seat here, $55/seat in that note"
    reason = f"contradicted by newer note n_0000000000june: {why}"

    said = contested_words("Globex pays $42 per seat", reason, MARCH_PRICE)

    assert said == f"a newer note (n_0000000000june) says otherwise: {why}"


def test_in_order_a_contested_fact_quotes_the_newer_note(memory: Memory) -> None:
    march = _add(memory, MARCH_PRICE, MARCH_AT)
    _add(memory, JUNE_PRICE, JUNE_AT)

    facts = {f.note.id: f for f in memory.facts("globex").facts}
    waiting = facts[march].retirement_waiting
    assert waiting is not None

    said = contested_words(waiting.evidence, waiting.reason, facts[march].note.content)
    assert said == f'a newer note says otherwise: "{JUNE_PRICE}"'
