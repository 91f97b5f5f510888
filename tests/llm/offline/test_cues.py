"""cues: team attributes as the shortest span of the raw log that states them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from amem.llm.construct_note import offered_attributes
from amem.llm.offline.cues import extras
from amem.llm.offline.text import sentences
from amem.policy import Policy

AT = datetime(2026, 3, 17, tzinfo=UTC)


def _extras(policy: Policy, text: str) -> dict[str, object]:
    found = extras(sentences(text), offered_attributes(policy.declared_attributes()), AT)
    for value in found.values():
        assert value.evidence in text  # each value names its exact span
    return {name: value.value for name, value in found.items()}


@pytest.mark.parametrize(
    ("text", "step"),
    [
        (
            "Their blocker is data residency. Next step: Leo to send the EU migration plan to Maria.",
            "Leo to send the EU migration plan to Maria",
        ),
        (
            "Task created for Priya Shah: send Elaine the renewal proposal by Friday.",
            "send Elaine the renewal proposal by Friday",
        ),
        (
            "He asked about the beta; Leo will enable it for Globex next Monday.",
            "Leo will enable it for Globex next Monday",
        ),
        # an errand assigned without a label, after the facts of the call
        (
            "Eldon asked about validation scripts; Maren to send a quote for it by Friday.",
            "Maren to send a quote for it by Friday",
        ),
        ("Thanks for the call. I'll send the order form tomorrow.", "I'll send the order form tomorrow"),
        ("Happy to walk you through it.", None),  # courtesy, not an agreed action
        ("Happy to send the deck whenever it suits you.", None),
        ("Need to schedule the training before May.", None),
        ("I will wait for her answer.", None),
        # a month or a day before "to <verb>" says when, it names no one
        ("Contoso's board meets in December to sign off the budget.", None),
        ("The team is off until Monday to review the results.", None),
    ],
)
def test_next_step_is_the_action_span(policy: Policy, text: str, step: str | None) -> None:
    assert _extras(policy, text).get("next_step") == step


@pytest.mark.parametrize(
    ("text", "priorities"),
    [
        (
            "What matters most to Maria is getting weekly reports without manual exports.",
            ["getting weekly reports without manual exports"],
        ),
        (
            "Hank's top priority for next year is consolidating their three BI tools into one.",
            ["consolidating their three BI tools into one"],
        ),
        (
            "Priya, keeping the per-seat price under $50 is the one thing I need to get this past our CFO.",
            ["keeping the per-seat price under $50"],
        ),
        (
            "Their top priority is uptime and a single consolidated invoice.",
            ["uptime", "a single consolidated invoice"],
        ),
        (
            "Our execs care most about time saved on reporting, so lead with that.",
            ["time saved on reporting"],
        ),
    ],
)
def test_customer_priorities_are_spans_after_or_before_the_cue(
    policy: Policy, text: str, priorities: list[str]
) -> None:
    assert _extras(policy, text).get("customer_priorities") == priorities


@pytest.mark.parametrize(
    "text",
    [
        "Ticket #9120 | Priority: High",
        "Incident 77, priority: P1, login fails.",
        "Ticket #9121 (priority: normal)\nSubject: exports fail",  # the field inside a parenthesis
        # the severity field followed by the next field of the record: neither is a priority
        "Case 4410 | Priority: Medium | Reporter: Greta Olsen (Lille depot)\nSubject: labels misprint",
    ],
)
def test_a_ticket_s_priority_field_is_no_customer_priority(policy: Policy, text: str) -> None:
    assert "customer_priorities" not in _extras(policy, text)


@pytest.mark.parametrize(
    "text",
    [
        "Low priority, but the logo on the login page is blurry.",  # a rating, not what matters most
        "Ticket is high priority: the export is slow for large ranges.",
        "Their blocker was the SSO bug, which we fixed yesterday.",  # a priority of the past
    ],
)
def test_a_rating_or_a_past_priority_is_no_customer_priority(policy: Policy, text: str) -> None:
    assert "customer_priorities" not in _extras(policy, text)


def test_a_next_step_that_says_there_is_none_is_no_step(policy: Policy) -> None:
    assert "next_step" not in _extras(policy, "Good call overall. Next step: none for now.")
    assert _extras(policy, "Next step: Leo to send the plan.")["next_step"] == "Leo to send the plan"


def test_a_clause_in_a_quotation_s_free_relative_is_no_next_step(policy: Policy) -> None:
    text = 'Proposal sent to Raj: $40/seat. His reply: "that is more than what Carla will sign." Mo joined.'
    assert "next_step" not in _extras(policy, text)
    assert _extras(policy, "Ask whether Leo will send the plan. Carla will send the MSA by Friday.")[
        "next_step"
    ] == "Carla will send the MSA by Friday"


def test_priorities_as_the_subject_of_a_copula_are_the_span_before_it(policy: Policy) -> None:
    text = (
        "As discussed: a fixed price per seat and quarterly invoicing are your two priorities; "
        "Ana is considering a pilot of the mobile app in Q3."
    )
    assert _extras(policy, text)["customer_priorities"] == ["a fixed price per seat", "quarterly invoicing"]
    # the value after a cue never crosses the end of its clause
    assert "customer_priorities" not in _extras(policy, "Let us talk priorities; Ana is considering a pilot.")


@pytest.mark.parametrize(
    ("text", "step"),
    [
        (
            "Good demo, the pickers liked it.\nNext: Ola to book the floor walk for Thursday",
            "Ola to book the floor walk for Thursday",
        ),
        ("Walkthrough done.\nf/u: I mail the admin guide to Tomas", "I mail the admin guide to Tomas"),
    ],
)
def test_a_line_opened_by_next_or_f_u_gives_the_step(policy: Policy, text: str, step: str) -> None:
    assert _extras(policy, text).get("next_step") == step


@pytest.mark.parametrize(
    "text",
    [
        "The vendor is patching the connector; I'll update here.",
        "Still looking at the logs, we'll follow up soon.",
    ],
)
def test_a_promise_with_no_object_is_no_next_step(policy: Policy, text: str) -> None:
    assert "next_step" not in _extras(policy, text)
