"""contradictions: the same kind of fact stated otherwise, each kind on its own."""

from __future__ import annotations

import pytest

from amem.llm.offline.contradictions import contradiction, facts, kinds, stated_kinds


def _contradicts(new_text: str, old_text: str) -> list[str]:
    new, old = facts(new_text), facts(old_text)
    found = []
    for kind in stated_kinds(new):
        if kind != "reversal" and kind not in kinds(old):
            continue
        c = contradiction(new, old, old_text, kind)
        if c is not None:
            assert c.evidence in new_text  # the span of the new raw log that says it
            found.append(c.kind)
    return found


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("Globex pays $42 per seat per month.", "As of today Globex pays $55 per seat per month.", "price"),
        # "plan" the noun (a tier) is not a plan to do something: the price stays a fact
        ("Acme pays $42 per seat on the Pro plan.", "Acme now pays $55 per seat after the uplift.", "price"),
        (
            "As of today Globex pays $55 per seat per month.",
            "Agreed: $49 per seat per month for 135 seats.",
            "price",
        ),
        (
            "Globex signed the order form for 120 seats.",
            "We will need 150 seats instead of 120 from May.",
            "count",
        ),
        (
            "Globex chose the annual plan over monthly billing.",
            "Globex no longer wants the annual plan.",
            "plan",
        ),
        (
            "Globex chose the annual plan over monthly billing.",
            "Globex switched to monthly billing on Sept 1.",
            "plan",
        ),
        (
            "Renewal date for Globex set to October 1.",
            "We moved the Globex renewal date from October 1 to January 15.",
            "date",
        ),
        (
            "Maria Chen is our champion; Hank Scorpio signs anything above $50k.",
            "Tom says the renewal decision now sits with the new CFO, Elaine Park; "
            "Hank Scorpio is no longer involved.",
            "role:decider",
        ),
        (
            "Maria Chen (VP Operations) is our champion.",
            "I am leaving at the end of July, and Tom Reyes takes over as your main contact.",
            "role:contact",
        ),
        (
            "The board meeting will decide on rolling us out to their US subsidiary.",
            "We have decided not to roll out to the US subsidiary this year.",
            "reversal",
        ),
        (
            "Hooli will roll out the Slack integration to the support team.",
            "Hooli is no longer rolling out the Slack integration to the support team.",
            "reversal",
        ),
    ],
)
def test_each_kind_of_change_is_a_contradiction(old: str, new: str, kind: str) -> None:
    assert kind in _contradicts(new, old)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Globex pays $42 per seat per month.", "Dana proposed $47 per seat if Globex commits to two years."),
        ("Globex pays $42 per seat per month.", "Is the $42 per seat the list price?"),
        ("Globex pays $55 per seat.", "Priya, $55 a seat is more than we budgeted."),
        ("Globex pays $49 per seat.", "Attached is the renewal proposal: 135 seats, $52 per seat."),
        ("Globex pays $42 per seat per month.", "Globex pays $42 per seat per month, confirmed."),
        (
            "Tom Reyes takes over as your main contact.",
            "Intro call with Tom Reyes, the new champion at Globex.",
        ),
        (
            "We will not commit yet.",
            "On the two-year offer: we will not commit yet.",
        ),  # one word is not a topic
        ("Globex opened ticket #4411 for the export.", "Ticket #4502: dashboards load slowly."),
    ],
)
def test_no_contradiction_for_offers_questions_the_same_value_or_another_fact(old: str, new: str) -> None:
    assert _contradicts(new, old) == []
