"""The offline analyst on an input analysed after notes said later than it (a slower model call
on another worker, a retry after an outage, an import of older history): the contradictions go by
when each note was said, not by when each was written."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from amem.domain.models import Note
from amem.llm.offline import OfflineAnalyst
from amem.policy import Policy
from tests.llm.builders import note, raw_log

MARCH = datetime(2026, 3, 10, 10, tzinfo=UTC)
APRIL = datetime(2026, 4, 20, 10, tzinfo=UTC)
JUNE = datetime(2026, 6, 8, 10, tzinfo=UTC)
SEPTEMBER = datetime(2026, 9, 1, 10, tzinfo=UTC)
MARCH_PRICE = "Pricing call: Globex pays $42 per seat per month."
JUNE_PRICE = "As of today Globex pays $55 per seat per month."


@pytest.fixture(scope="module")
def analyst() -> OfflineAnalyst:
    return OfflineAnalyst()


def _note(analyst: OfflineAnalyst, policy: Policy, text: str, note_id: str) -> Note:
    answer = analyst.construct(raw_log(text, scope="globex"), policy.declared_attributes()).answer
    return note(
        text,
        note_id=note_id,
        keywords=answer.keywords,
        tags=answer.tags,
        context=answer.context,
        category=answer.category,
        scope="globex",
    )


def _contradictions(analyst: OfflineAnalyst, new: Note, at: datetime, *shown: tuple[Note, datetime]):
    """The link step's contradictions for ``new``, said ``at``, shown (neighbour, when said) pairs."""
    said = {n.id: when for n, when in shown}
    raw = raw_log(new.content, occurred_at=at, scope="globex")
    return analyst.link_and_evolve(new, raw, [n for n, _ in shown], said).answer.contradictions


def test_a_late_older_price_is_made_untrue_by_the_newer_one_already_written(analyst, policy) -> None:
    """The June price was analysed first: the March price, analysed after it, is the fact the June
    one changed. The answer names the June note, with the March input's own sentence as evidence
    (the span its retirement is proposed with)."""
    june = _note(analyst, policy, JUNE_PRICE, "n_june")
    march = _note(analyst, policy, MARCH_PRICE, "n_march")

    (found,) = _contradictions(analyst, march, MARCH, (june, JUNE))

    assert found.note_id == "n_june"
    assert found.evidence == MARCH_PRICE
    assert "$42/seat here, $55/seat in that note" in found.reason  # read from the March input's side


def test_in_its_time_the_same_pair_gives_the_same_contradiction(analyst, policy) -> None:
    """Analysed in order, the June price retires the March one for the same change, each reason read
    from the side of the input its review item shows ("here")."""
    june = _note(analyst, policy, JUNE_PRICE, "n_june")
    march = _note(analyst, policy, MARCH_PRICE, "n_march")

    (late,) = _contradictions(analyst, march, MARCH, (june, JUNE))
    (in_order,) = _contradictions(analyst, june, JUNE, (march, MARCH))

    assert in_order.note_id == "n_march"
    assert late.reason.endswith("different price per seat: $42/seat here, $55/seat in that note")
    assert in_order.reason.endswith("different price per seat: $55/seat here, $42/seat in that note")


def test_a_late_price_is_retired_by_the_first_change_after_it_not_a_later_one(analyst, policy) -> None:
    """March $42 arrives after June ($55) and September ($60) were written: its fact held until
    June, which is the note that makes it untrue; September changed June's price, not March's."""
    june = _note(analyst, policy, JUNE_PRICE, "n_june")
    september = _note(analyst, policy, "From today Globex pays $60 per seat per month.", "n_september")
    march = _note(analyst, policy, MARCH_PRICE, "n_march")

    found = _contradictions(analyst, march, MARCH, (september, SEPTEMBER), (june, JUNE))

    assert [c.note_id for c in found] == ["n_june"]


def test_a_price_said_in_between_holds_it_so_the_later_change_retires_that_one(analyst, policy) -> None:
    """An April note states the price between the late March one and June's change: in order,
    June would have found April the holder of the price, not March, so June makes nothing of
    March untrue, and April (the same price as March) leaves it current as in-order analysis would."""
    april = _note(analyst, policy, "Globex renewal call: they pay $42 per seat per month.", "n_april")
    june = _note(analyst, policy, JUNE_PRICE, "n_june")
    march = _note(analyst, policy, MARCH_PRICE, "n_march")

    found = _contradictions(analyst, march, MARCH, (june, JUNE), (april, APRIL))

    assert found == []


def test_a_newer_neighbour_said_before_is_still_retired_and_a_later_one_is_not(analyst, policy) -> None:
    """June's price, analysed after a September note was written: it retires March's (said before
    it) and is itself made untrue by September's (said after it)."""
    march = _note(analyst, policy, "Globex now pays $42 per seat per month after the discount.", "n_march")
    september = _note(analyst, policy, "From today Globex pays $60 per seat per month.", "n_september")
    june = _note(analyst, policy, JUNE_PRICE, "n_june")

    found = {
        c.note_id: c for c in _contradictions(analyst, june, JUNE, (september, SEPTEMBER), (march, MARCH))
    }

    assert set(found) == {"n_march", "n_september"}
    assert found["n_september"].evidence == JUNE_PRICE  # the span of June's own raw log
