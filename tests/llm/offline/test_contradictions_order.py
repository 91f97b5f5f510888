"""A record said before the note that changed it but analysed after it (a late import, a retry):
its retirement's reason reads from its own side, since its review item shows its own raw log."""

from __future__ import annotations

from amem.llm.offline.contradictions import contradiction, facts, made_untrue

MARCH_PRICE = "Pricing call: Globex pays $42 per seat per month."
JUNE_PRICE = "As of today Globex pays $55 per seat per month."


def test_a_late_record_s_reason_gives_its_own_value_here_and_the_newer_one_in_that_note() -> None:
    found = made_untrue(facts(JUNE_PRICE), facts(MARCH_PRICE), MARCH_PRICE, "price")

    assert found is not None
    assert found.reason == "different price per seat: $42/seat here, $55/seat in that note"
    assert found.evidence == MARCH_PRICE  # the span its retirement is proposed with, in its raw log


def test_in_order_the_newer_note_s_reason_still_gives_the_newer_value_here() -> None:
    found = contradiction(facts(JUNE_PRICE), facts(MARCH_PRICE), MARCH_PRICE, "price")

    assert found is not None
    assert found.reason == "different price per seat: $55/seat here, $42/seat in that note"
    assert found.evidence == JUNE_PRICE


def test_a_late_seat_count_reads_from_its_own_side_too() -> None:
    older = "Globex signed for 120 seats."
    newer = "Globex expanded: that takes us to 150 seats."

    in_order = contradiction(facts(newer), facts(older), older, "count")
    late = made_untrue(facts(newer), facts(older), older, "count")

    assert in_order is not None and late is not None
    assert in_order.reason == "different number of seats: 150 here, 120 in that note"
    assert late.reason == "different number of seats: 120 here, 150 in that note"
