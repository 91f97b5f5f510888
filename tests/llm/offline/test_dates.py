"""dates: tense-aware resolution against the raw log's time; recurring phrases are not dates."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from amem.llm.offline.dates import mentions, valid_at

NOV_30 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # a Monday
OCT_5 = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)  # a Monday
WED_AUG_19 = datetime(2026, 8, 19, 9, 0, tzinfo=UTC)


def _day(text: str, at: datetime) -> date | None:
    found = valid_at(text, at)
    return found.when if found is not None else None


def _resolved(text: str, at: datetime) -> date | None:
    """The first date the text states, as its tense resolves it (whether it is the main fact's date
    is valid_at's question: a date months back dates the background)."""
    found = mentions(text, at)
    return found[0].when if found else None


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("Acme wants to renew in March.", NOV_30, date(2027, 3, 1)),  # the future stays future
        ("The board meeting in December will decide.", OCT_5, date(2026, 12, 1)),
        ("They signed in March.", NOV_30, date(2026, 3, 1)),  # the past stays past
        ("The EU region goes live mid-May.", datetime(2026, 3, 20, tzinfo=UTC), date(2026, 5, 15)),
        ("Maria leaves at the end of July.", datetime(2026, 6, 22, tzinfo=UTC), date(2026, 7, 31)),
        ("The board postponed it to Q2.", datetime(2026, 11, 10, tzinfo=UTC), date(2027, 4, 1)),
        ("Leo will enable it next Monday.", datetime(2026, 11, 24, tzinfo=UTC), date(2026, 11, 30)),
        ("The fix was deployed on Monday.", datetime(2026, 9, 2, tzinfo=UTC), date(2026, 8, 31)),
        ("Send the proposal by Friday.", WED_AUG_19, date(2026, 8, 21)),
        ("The demo is this Friday.", WED_AUG_19, date(2026, 8, 21)),
        ("I will run the cutover in two weeks.", datetime(2026, 4, 23, tzinfo=UTC), date(2026, 5, 7)),
        ("We closed it yesterday.", datetime(2026, 6, 16, tzinfo=UTC), date(2026, 6, 15)),
        ("As of today Globex pays $55 per seat.", datetime(2026, 6, 8, tzinfo=UTC), date(2026, 6, 8)),
        ("Initech went live today.", datetime(2026, 5, 18, tzinfo=UTC), date(2026, 5, 18)),
        ("Contract signed on March 3, 2024.", NOV_30, date(2024, 3, 3)),
        ("Effective 2026-07-01 the price is $36.", NOV_30, date(2026, 7, 1)),
    ],
)
def test_dates_resolve_forward_or_back_as_the_tense_says(text: str, at: datetime, expected: date) -> None:
    assert _resolved(text, at) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The scheduled export times out every Monday around 06:00 UTC.",
        "We meet them on Thursdays until onboarding ends.",
        "The Monday morning export timeout is back.",
        "They run a weekly sync each Friday.",
        "Globex accepted a two-year term and a 30-day trial.",
        "Our execs care about the December board meeting agenda.",
        "The reorg makes our headcount beyond Q4 unclear.",
        "We may revisit the plan; nothing is dated.",
        "I'm out Thursday",  # a bare weekday dates only an event that happened
        "On today's call we covered the roadmap.",
        "Their top priority for next year is one BI tool.",
    ],
)
def test_recurring_phrases_durations_and_attributes_are_not_dates(text: str) -> None:
    assert valid_at(text, NOV_30) is None


def test_the_date_something_moves_to_is_the_fact_s_date() -> None:
    text = "Elaine asked us to push the renewal date from October 1 to January 15. We agreed."
    assert _day(text, datetime(2026, 9, 15, tzinfo=UTC)) == date(2027, 1, 15)


def test_a_start_date_wins_over_an_earlier_mention() -> None:
    text = "Contract signed on March 3, 2024; effective from April 1, 2024."
    assert _day(text, NOV_30) == date(2024, 4, 1)


def test_a_weekday_written_with_its_date_is_one_mention() -> None:
    found = mentions(
        "We moved the QBR to Wednesday, May 13, so Hank can join.", datetime(2026, 5, 4, tzinfo=UTC)
    )
    assert [(m.text, m.when) for m in found] == [("May 13", date(2026, 5, 13))]


def test_a_date_in_a_relative_clause_dates_a_noun_not_the_fact() -> None:
    assert valid_at("The team would love the Slack snapshots that we asked for in June.", NOV_30) is None


def test_the_span_is_the_text_as_written() -> None:
    found = valid_at("Globex renews in early March, they said.", NOV_30)
    assert found is not None and found.text == "in early March" and found.when == date(2027, 3, 1)


@pytest.mark.parametrize(
    "text",
    [
        "Can we start on 1 April?",  # asked, not stated
        "Quick one: is the workshop still on 12 May?",
        "Following Monday's check-in, here are the slides.",  # names a past meeting
        "The dashboard is slow on Monday mornings.",  # recurring
        "We sync weekly on Thursday with their IT team.",
    ],
)
def test_questions_named_meetings_and_cadences_give_no_date(text: str) -> None:
    assert _day(text, datetime(2026, 4, 15, 9, tzinfo=UTC)) is None


def test_a_pencilled_in_date_is_in_the_future() -> None:
    assert _day("Go-live pencilled in for mid-August.", datetime(2026, 6, 8, 9, tzinfo=UTC)) == date(
        2026, 8, 15
    )


def test_a_relative_day_of_a_release_still_dates_it() -> None:
    at = datetime(2026, 4, 9, 9, tzinfo=UTC)  # a Thursday
    assert _day("The fix ships in next Tuesday's release.", at) == date(2026, 4, 14)


@pytest.mark.parametrize(
    "text",
    [
        "The plant runs three shifts until early April.",  # when a state ends
        "Their admin is out till 20 March.",
        "We need SSO working before the 6 July go-live.",  # a deadline for something else
    ],
)
def test_an_end_or_a_deadline_is_not_the_date_a_fact_takes_effect(text: str) -> None:
    assert _day(text, datetime(2026, 3, 5, 9, tzinfo=UTC)) is None


def test_last_night_is_the_day_before() -> None:
    assert _day(
        "Saves fail since the update went out last night.", datetime(2026, 4, 8, 9, tzinfo=UTC)
    ) == date(2026, 4, 7)


def test_by_makes_a_date_future_only_right_before_it() -> None:
    at = datetime(2026, 5, 28, 15, tzinfo=UTC)
    assert _day("The order form was countersigned by their legal team today.", at) == date(2026, 5, 28)


@pytest.mark.parametrize(
    "text",
    [
        "They want the plant live before the audit in September.",  # a deadline, however far the date
        "Maya would like to pilot the portal in Q1, not committed.",  # explicitly not settled
    ],
)
def test_deadlines_and_unsettled_plans_give_no_date(text: str) -> None:
    assert _day(text, datetime(2026, 3, 5, 9, tzinfo=UTC)) is None


@pytest.mark.parametrize(
    "text",
    [
        "HTTP 504 from GET /api/v3/audit/export?from=2025-09-01&to=2026-09-14 on every try.",
        "Stamps show UTC instead of local time (e.g. '2026-11-16 14:02 UTC').",
    ],
)
def test_dates_inside_urls_queries_or_examples_are_data(text: str) -> None:
    assert _day(text, datetime(2026, 11, 17, 9, tzinfo=UTC)) is None


def test_a_start_named_by_its_weekday_is_the_coming_one() -> None:
    at = datetime(2026, 4, 10, 9, tzinfo=UTC)  # a Friday
    assert _day("The 30-day trial for the lab starts Monday.", at) == date(2026, 4, 13)
    # and a past-tense clause does not send a start a year back
    at = datetime(2026, 6, 24, 9, tzinfo=UTC)
    assert _day("They accepted $38 per user for 140 users, starting July 1.", at) == date(2026, 7, 1)


@pytest.mark.parametrize(
    "text",
    [
        "Good call on the roadmap. Next step: Dana to send the security pack by Monday.",
        "Pilot review went fine.\n* Action: Lee to share the training recording by Friday.",
        "Yes, the connector supports it. I'll send you a sample script tomorrow.",
        "The certificate was rotated; agreed with Ana: her team to install the bundle tomorrow morning.",
    ],
)
def test_a_date_that_only_says_when_a_next_step_is_due_is_no_fact_date(text: str) -> None:
    assert valid_at(text, WED_AUG_19) is None


def test_a_fact_date_beside_a_next_step_is_still_found() -> None:
    text = "The EU region goes live on 1 September. Next step: Dana to send the cutover plan by Friday."
    assert _day(text, WED_AUG_19) == date(2026, 9, 1)


@pytest.mark.parametrize(
    "text",
    [
        "Sent: Tuesday, August 18, 2026 10:14 AM\nSubject: RE: invoice\nThanks, we will pay it this week.",
        "Dana forwarded the email from 12 May about the security review; nothing new in it.",
        "One more thing from yesterday: they want the dashboards in French.",
        "Dana asked whether we could start training on 1 September. I said I'd check.",
        "Dana: 'We hope to have budget by September, but nothing is certain.'",
    ],
)
def test_a_date_of_a_header_a_quote_a_message_referred_to_or_a_question_is_no_fact_date(text: str) -> None:
    assert valid_at(text, WED_AUG_19) is None


def test_a_fact_date_after_a_header_is_still_found() -> None:
    text = "Subject: start date\nFrom 1 September the customer pays $44 per seat."
    assert _day(text, WED_AUG_19) == date(2026, 9, 1)


JUNE_10 = datetime(2026, 6, 10, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the tense is the date's own clause's: a past verb in another clause does not pull it back
        ("Quick update: my last day is June 26 and Priya joined in May.", date(2026, 6, 26)),
        ("Priya joined us in spring, but her start on the account is June 29.", date(2026, 6, 29)),
        # "last" is a past marker only as "last week / last Tuesday", not "my last day"
        ("The last workshop is June 24.", date(2026, 6, 24)),
        ("Their last invoice went out on May 28.", date(2026, 5, 28)),
        # a version number's dot ends no clause: "shipped in v2.4.1 today" is past, dated today
        ("Patch shipped in v2.4.1 today and the export works again.", date(2026, 6, 10)),
        # "starts on" / "begins on" introduce when the fact takes effect
        ("We signed today, but the subscription starts on 1 July 2026.", date(2026, 7, 1)),
    ],
)
def test_the_tense_comes_from_the_clause_that_holds_the_date(text: str, expected: date) -> None:
    assert _day(text, JUNE_10) == expected


@pytest.mark.parametrize(
    "text",
    [
        # a participle after a present copula is a state, not the past: a bare weekday stays no date
        "Reminder: the warehouse is closed Friday for stocktaking.",
        # a plan in the past perfect is the plan that was, not the fact's date
        "The Leeds rollout we'd planned for mid-July is off for now.",
        "The training had been scheduled for June 30; it is cancelled.",
        # an aside in parentheses dates something else than the main fact
        "Two asks: dark mode for the dashboard (their night team starts in September) and CSV export.",
    ],
)
def test_states_former_plans_and_asides_give_no_date(text: str) -> None:
    assert _day(text, JUNE_10) is None


def test_a_date_inside_the_reason_is_not_the_decision_s() -> None:
    text = "They cancelled the expansion because the group sells the Lyon plant in October."
    reason = text.index("the group")
    assert _day(text, JUNE_10) == date(2026, 10, 1)  # without the reason's span it would be taken
    assert valid_at(text, JUNE_10, [(reason, len(text))]) is None


def test_a_bare_date_in_parentheses_still_counts() -> None:
    assert _day("The renewal moves to next quarter (1 October).", JUNE_10) == date(2026, 10, 1)


def test_an_irregular_past_verb_dates_an_event_that_happened() -> None:
    assert _day("Steering meeting held today with their COO.", JUNE_10) == date(2026, 6, 10)
    assert _day("They paid the first invoice on Monday.", JUNE_10) == date(2026, 6, 8)


def test_a_date_in_a_non_restrictive_relative_clause_describes_the_noun() -> None:
    text = "I opened the review today. The renewal must match their budget year, which starts on April 1."
    assert _day(text, JUNE_10) == date(2026, 6, 10)


def test_the_decision_s_own_date_wins_over_a_condition_s() -> None:
    text = "Legal approved the DPA yesterday. Conditions: EU hosting for all recordings from 1 January 2027."
    decision = (0, text.index(".") + 1)
    assert _day(text, JUNE_10) == date(2027, 1, 1)  # a start date wins when nothing is decided
    found = valid_at(text, JUNE_10, main=decision)
    assert found is not None and found.when == date(2026, 6, 9)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Order form signed (effective 1 July).", date(2026, 7, 1)),
        ("The pilot is confirmed (kickoff on 15 June).", date(2026, 6, 15)),
    ],
)
def test_a_short_parenthesis_that_names_the_fact_s_date_still_counts(text: str, expected: date) -> None:
    assert _day(text, JUNE_10) == expected


def test_a_possessive_subject_after_and_starts_a_clause_with_its_own_tense() -> None:
    text = "I've accepted an offer elsewhere and my last day at the company is June 26."
    assert _day(text, JUNE_10) == date(2026, 6, 26)


def test_since_after_a_measure_is_a_baseline_and_since_alone_starts_a_state() -> None:
    assert _day("Churn is down 3 points since March. Maria is happy.", JUNE_10) is None
    assert _day("Twice as many logins since April 2.", JUNE_10) is None
    assert _day("Rollout live since Monday for all three plants.", JUNE_10) == date(2026, 6, 8)


def test_a_labelled_new_date_wins_over_the_date_called_off() -> None:
    text = "Go/no-go call. Result: no-go for June 20. The data load failed twice. New date: early July."
    assert _day(text, JUNE_10) == date(2026, 7, 1)


def test_n_weeks_from_now_is_arithmetic_on_the_day() -> None:
    assert _day("The onboarding call moves to two weeks from now.", JUNE_10) == date(2026, 6, 24)


def test_a_colon_ends_the_clause_whose_tense_a_date_takes() -> None:
    # "attached" is the heading's verb; "43 templates today" states a count now, not an event
    assert _day("Final list attached: 43 templates today, 5 of them are retired.", JUNE_10) is None
    assert _day("Go-live done today: both plants on the new system.", JUNE_10) == date(2026, 6, 10)


def test_a_signature_assigned_as_an_errand_is_no_fact_date() -> None:
    text = "As promised, the renewal order form is attached. Rui will sign it by 18 June."
    assert _day(text, JUNE_10) is None


def test_an_offer_s_dates_are_the_offer_s_not_a_fact_s() -> None:
    text = "Subject: renewal proposal\n\nTwo-year renewal from May 1, 2027: 90 seats at $37/seat/mo."
    assert _day(text, JUNE_10) is None
    assert _day("Their pricing is valid until 30 June. The pilot starts on 15 June.", JUNE_10) is None
    assert _day("The pilot starts on 15 June.", JUNE_10) == date(2026, 6, 15)


@pytest.mark.parametrize(
    "text",
    [
        "Good session with the warehouse leads.\nNext: Pia to walk the pickers through the app next Monday.",
        "Walkthrough done, they liked the reports.\nf/u: I mail the admin guide to Tomas by Thursday",
        "- Next: Bo books a training slot for the night shift on Friday.",
    ],
)
def test_a_line_opened_by_a_bare_next_or_f_u_label_is_a_next_step(text: str) -> None:
    assert _day(text, WED_AUG_19) is None


@pytest.mark.parametrize(
    "text",
    [
        "Pricing is agreed in principle. Lotte sends the signed quote by next Wednesday.",
        "Scope is final. I send the updated statement of work tomorrow.",
        "They want the API tier. I'm to come back with the numbers by August 28.",
    ],
)
def test_an_errand_in_the_simple_present_or_with_am_to_dates_the_errand(text: str) -> None:
    assert _day(text, WED_AUG_19) is None


def test_a_condition_in_the_simple_present_is_no_errand() -> None:
    # "Once Ada signs" is a condition, not an errand assigned: the start date is the fact's
    text = "The contract is attached. Once Ada signs, we can begin the rollout on September 7."
    assert _day(text, WED_AUG_19) == date(2026, 9, 7)


def test_an_absence_through_a_named_weekday_and_date_ends_there() -> None:
    text = "I am away from my desk through Thursday, August 27 and will reply when I am back."
    assert _day(text, WED_AUG_19) is None


@pytest.mark.parametrize(
    "text",
    [
        "Hi Noor, lovely speaking with you and Piet yesterday. The rates we discussed are below.",
        "Good to talk to the finance team on Monday; the summary follows.",
    ],
)
def test_a_conversation_referred_to_by_its_verb_dates_the_conversation(text: str) -> None:
    assert _day(text, WED_AUG_19) is None


@pytest.mark.parametrize(
    "text",
    [
        "Renewal proposal - sent to Marit and Joost this morning.\nTwo years from October 1, 40 seats.",
        "Options sent to the CFO:\n1) Stay on Basic.\n2) Move to Plus on a new term starting November 1.",
    ],
)
def test_a_heading_reporting_an_offer_sent_makes_an_offer_note(text: str) -> None:
    assert _day(text, WED_AUG_19) is None


def test_a_date_written_with_its_weekday_takes_the_year_where_they_agree() -> None:
    # 27 March 2026 is a Friday (in 2025 it was a Thursday): a past tense does not make it last year's
    march_24 = datetime(2026, 3, 24, 9, 0, tzinfo=UTC)
    found = mentions("Limited cover: the depot closed on Friday, March 27.", march_24)
    assert [m.when for m in found if m.absolute] == [date(2026, 3, 27)]


def test_a_parenthesis_is_a_clause_of_its_own_for_the_tense() -> None:
    text = "News from Sven: his last day is end of August (starting at a bank, seemed relieved)."
    assert _day(text, WED_AUG_19) == date(2026, 8, 31)


def test_an_action_decided_or_approved_lies_ahead_of_the_decision() -> None:
    text = "Ines approved extending the contract to the Lyon office in Q1."
    assert _day(text, WED_AUG_19) == date(2027, 1, 1)


def test_a_move_to_a_place_is_past_only_a_move_to_a_date_looks_ahead() -> None:
    moved = "Their payroll moved to a new provider in May, nothing else changed."
    assert _resolved(moved, WED_AUG_19) == date(2026, 5, 1)
    assert _day("The steering call moved to September 2.", WED_AUG_19) == date(2026, 9, 2)
    # a release pushed to devices was delivered; a go-live pushed to a date is postponed
    pushed = "Release 4.12 was pushed to our devices on July 21. Swaps show up within a minute."
    assert _resolved(pushed, datetime(2026, 7, 23, tzinfo=UTC)) == date(2026, 7, 21)
    assert _day("The go-live was pushed to July 27.", datetime(2026, 7, 23, tzinfo=UTC)) == date(2026, 7, 27)


def test_a_date_after_a_present_copula_is_the_nearest_one() -> None:
    # "done" is past, but the go-live "is" August 24: the plan's date now, not last year's
    text = "Ops lead: done, the depot go-live is August 24 in the plan now"
    assert _day(text, WED_AUG_19) == date(2026, 8, 24)


def test_a_parenthesis_holding_a_clause_of_its_own_is_an_aside() -> None:
    text = "She wants all renewals on one calendar (FY starts Oct 1) and fewer vendors."
    assert _day(text, WED_AUG_19) is None
    text = "The Lyon site goes live (effective 7 September) with two lines."
    assert _day(text, WED_AUG_19) == date(2026, 9, 7)


def test_a_verbless_delivery_to_someone_by_a_day_is_an_errand() -> None:
    assert _day("Liability cap agreed at 2x fees. Marked-up copy to Ravi by Monday.", WED_AUG_19) is None
    assert _day("Scope is final. Signed SOW to the CFO before 4 September.", WED_AUG_19) is None


def test_an_arrow_after_from_marks_the_date_something_moves_to() -> None:
    assert _day("Depot training pushed from August 24 → Monday August 31.", WED_AUG_19) == date(2026, 8, 31)


def test_the_first_day_of_a_term_s_range_is_when_a_signed_contract_takes_effect() -> None:
    text = "Order form signed 2026-08-18 by the CFO. Plus | 60 seats | 12-month term 2026-09-01 → 2027-08-31"
    assert _day(text, WED_AUG_19) == date(2026, 9, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The whole company moves to HubSpot in January.", date(2027, 1, 1)),  # a plan: ahead
        ("The whole company moved to HubSpot in January.", date(2026, 1, 1)),  # done: behind
    ],
)
def test_a_move_to_somewhere_keeps_the_tense_of_its_verb(text: str, expected: date) -> None:
    (found,) = mentions(text, datetime(2026, 7, 9, 18, tzinfo=UTC))
    assert found.when == expected


def test_what_something_shows_now_is_the_nearest_such_day_whatever_came_before() -> None:
    text = "Refreshed from Maersk, the board now shows Aug 12 and matches the carrier."
    (found,) = mentions(text, datetime(2026, 8, 7, 16, tzinfo=UTC))
    assert found.when == date(2026, 8, 12)


@pytest.mark.parametrize(
    "text",
    [
        "Maya wants both warehouses live by September 14.",
        "Their auditor needs every tool behind SSO by end of Q3.",
        "The CFO asked for the redlines by next Friday, and the scope is unchanged.",
    ],
)
def test_a_deadline_someone_wants_met_is_no_fact_s_date(text: str) -> None:
    assert _day(text, WED_AUG_19) is None


def test_a_day_someone_wants_without_a_deadline_stays_the_fact_s_date() -> None:
    assert _day("Maya wants a QBR in mid-September.", WED_AUG_19) == date(2026, 9, 15)


@pytest.mark.parametrize(
    "text",
    [
        "Some news: I'm leaving Halden at the end of September. Rhea Mohan joins as COO on September 21 "
        "and will own the renewal.",
        "From October 1 I move to the Paris office. Omar takes over the account on September 21.",
    ],
)
def test_a_handover_is_dated_by_the_day_the_successor_starts(text: str) -> None:
    assert _day(text, WED_AUG_19) == date(2026, 9, 21)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # what the report describes is dated, not the fault's course: no date
        ("Ticket #88: the Sept 12 payroll run shows 7 hours for the night crew.", None),
        ("Ticket #91: badges print cut off. The gala is September 24 and we print 800 of them.", None),
        # the fault's own course: when it started, when its fix shipped (a version's dots are no end)
        ("Ticket #93: exports are empty since Monday.", date(2026, 8, 17)),
        ("Ticket #93 resolved: fix shipped in 4.12.1 on Aug 18.", date(2026, 8, 18)),
    ],
)
def test_in_a_fault_report_only_a_date_of_the_fault_s_course_counts(text: str, expected: date | None) -> None:
    found = valid_at(text, WED_AUG_19, fault_report=True)
    assert (found.when if found is not None else None) == expected


def test_outside_a_fault_report_a_described_date_still_counts() -> None:
    assert _day("The gala is September 24 and we print 800 badges.", WED_AUG_19) == date(2026, 9, 24)


@pytest.mark.parametrize(
    "text",
    [
        "QBR. Since June 1: 19 events, 6,420 paid registrations, 31 of 36 seats active.",
        "Numbers: 41 events live since June and 11k registrations.",
        "Attached is the order form as discussed Monday, for 30 seats.",
    ],
)
def test_a_tally_s_start_and_a_conversation_referred_to_date_no_fact(text: str) -> None:
    assert _day(text, datetime(2026, 9, 1, tzinfo=UTC)) is None


def test_a_state_since_a_day_keeps_its_date_beside_a_count_in_another_clause() -> None:
    text = "fyi SSO has been working since Friday, all 9 dispatchers moved over."
    assert _day(text, WED_AUG_19) == date(2026, 8, 14)


def test_a_run_of_question_marks_is_text_shown_not_a_question() -> None:
    # the sentence reports a fault that shows "????": its date is stated, not asked about
    text = "Since we imported the file yesterday, the report shows ???? for every Greek name."
    assert _day(text, datetime(2026, 4, 21, 9, 0, tzinfo=UTC)) == date(2026, 4, 20)
    assert _day("Can we start on 1 April?", datetime(2026, 3, 2, tzinfo=UTC)) is None


def test_a_month_after_starting_is_when_the_fact_takes_effect() -> None:
    at = datetime(2026, 7, 14, 15, 0, tzinfo=UTC)
    found = valid_at("The check-ins go to monthly starting August; the rollout is done.", at)
    assert found is not None and found.when == date(2026, 8, 1) and found.starts
    assert _day("Billing moves to the new entity effective October.", at) == date(2026, 10, 1)


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        # month/day after the weekday it falls on (Thursday 5 March 2026)
        ("Intro call booked Thu 3/5 2:00pm ET.", datetime(2026, 3, 3, tzinfo=UTC), date(2026, 3, 5)),
        # day/month when that is the reading that falls on the weekday
        ("Intro call booked Thu 5/3 at 14:00.", datetime(2026, 3, 3, tzinfo=UTC), date(2026, 3, 5)),
        ("Mapping fixed and deployed Monday 10/5.", datetime(2026, 10, 6, tzinfo=UTC), date(2026, 10, 5)),
    ],
)
def test_a_numeric_day_after_its_weekday(text: str, at: datetime, expected: date) -> None:
    assert _day(text, at) == expected


def test_dates_offered_as_options_date_nothing() -> None:
    at = datetime(2026, 3, 4, tzinfo=UTC)
    assert _day("For the demo Marcus can do Tue 3/10 at 10am PT or Wed 3/11 at 2pm PT.", at) is None
    assert _day("We could start on March 16 or on March 23, whichever suits Ana.", at) is None
    assert _day("We start on March 16 and review on March 23.", at) == date(2026, 3, 16)


def test_a_past_participle_before_for_is_still_the_past() -> None:
    at = datetime(2026, 7, 28, 14, 0, tzinfo=UTC)
    text = "Ticket 4471 resolved. Alerts re-enabled for the Leeds site this morning."
    assert _day(text, at) == date(2026, 7, 28)


def test_an_adjective_in_ed_does_not_put_a_weekday_in_the_past() -> None:
    # said on a Tuesday: the Thursday meant is ahead, never the one before
    at = datetime(2026, 6, 9, 15, 0, tzinfo=UTC)
    text = "fyi I'm out Thursday for my son's graduation, Luis is point for anything cutover related"
    assert _day(text, at) != date(2026, 6, 4)


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        # a date months back dates the background, not what the input reports
        (
            "Attached our SOC 2 Type II report (period ending Dec 2025) and the pen test summary.",
            datetime(2026, 3, 26, tzinfo=UTC),
            None,
        ),
        (
            "Quick recap: utilisation is back at the March 2025 level, the team is happy.",
            datetime(2026, 5, 12, tzinfo=UTC),
            None,
        ),
        # unless a state is said to hold since then
        (
            "Halden has been on the annual plan since January.",
            datetime(2026, 3, 30, tzinfo=UTC),
            date(2026, 1, 1),
        ),
        # a document sent out for signature is only offered
        (
            "Order form OF-77 sent for signature to Omar: 90 seats, subscription start 2026-05-01.",
            datetime(2026, 4, 21, tzinfo=UTC),
            None,
        ),
        # a term's end and seats co-termed to it are no fact's start
        (
            "Add-on quote for 20 seats, co-termed to the main order form (ends 2028-04-30).",
            datetime(2026, 6, 26, tzinfo=UTC),
            None,
        ),
        (
            "Omar wants 6 more seats, co-termed to May 31, 2027, at the same price.",
            datetime(2026, 6, 12, tzinfo=UTC),
            None,
        ),
        # a go-live's date before a step on the way there; not a go-live promised by a deadline
        (
            "Kickoff notes\n- SSO setup mid-May (Omar)\n- go-live target: June 1, both sites",
            datetime(2026, 4, 28, tzinfo=UTC),
            date(2026, 6, 1),
        ),
        (
            "Amendment executed. From 2026-08-01: 130 seats at $45. They commit to go-live by 2026-10-31.",
            datetime(2026, 7, 9, tzinfo=UTC),
            date(2026, 8, 1),
        ),
    ],
)
def test_background_dates_term_starts_ends_and_go_lives(
    text: str, at: datetime, expected: date | None
) -> None:
    assert _day(text, at) == expected


def test_a_move_that_slipped_stays_in_the_future() -> None:
    found = mentions("The HubSpot migration slipped to April.", datetime(2026, 11, 3, tzinfo=UTC))
    assert [m.when for m in found] == [date(2027, 4, 1)]


def test_a_fixed_fault_dated_by_its_own_course_in_a_support_issue() -> None:
    text = "QX-55120: that was it. As of today SSO works on both tenants, password login is off."
    found = valid_at(text, datetime(2026, 5, 22, 15, tzinfo=UTC), fault_report=True)
    assert found is not None and found.when == date(2026, 5, 22)


def test_a_term_said_to_start_on_a_day_beats_the_day_it_was_signed() -> None:
    # the decision's own sentence dates the signing; the term it starts takes effect later
    text = "We signed the order form with Omar today. Subscription starts May 1, 2026."
    signed = (0, text.index(".") + 1)
    found = valid_at(text, datetime(2026, 4, 24, tzinfo=UTC), main=signed)
    assert found is not None and found.when == date(2026, 5, 1)


def test_an_adjective_in_ed_does_not_make_today_past() -> None:
    # "today" in a present description ("a shared Excel today") is now, not a day something happened
    text = "Discovery call\n* punch lists live on paper and a shared Excel today\n* 6 communities, 140 users"
    assert _day(text, datetime(2026, 3, 5, 18, tzinfo=UTC)) is None


@pytest.mark.parametrize(
    ("text", "at"),
    [
        # a day only proposed or forecast takes effect once agreed, in another note
        (
            "Attached the order form (Growth, 90 seats, 12-month term). Proposed subscription start is "
            "June 1, 2026.",
            datetime(2026, 4, 28, tzinfo=UTC),
        ),
        (
            "Opportunity created: Halden. Stage: Evaluation. Seats: 90. Target close: mid-May. Owner: Rhea.",
            datetime(2026, 3, 13, tzinfo=UTC),
        ),
        # an errand agreed, after a label of what was agreed
        (
            "Q3 QBR - Halden\n* 4,212 items closed\nAgreed: Rhea sends the QBR deck by Friday",
            datetime(2026, 8, 18, tzinfo=UTC),
        ),
    ],
)
def test_a_proposed_or_forecast_day_and_an_agreed_errand_are_no_fact_s_date(text: str, at: datetime) -> None:
    assert _day(text, at) is None


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        # the end of a neighbouring period is its last day, not the first of "next month"
        ("The contract starts at the end of next month.", OCT_5, date(2026, 11, 30)),
        ("It ended at the end of last month.", OCT_5, date(2026, 9, 30)),
        ("Go-live by the end of next quarter.", NOV_30, date(2027, 3, 31)),
    ],
)
def test_the_end_of_a_near_period_resolves_near_the_raw_log(text: str, at: datetime, expected: date) -> None:
    assert _resolved(text, at) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Invoices must go out by the 3rd business day.",
        "Their office is on the 2nd floor.",
        "It failed again on the 3rd attempt.",
    ],
)
def test_an_ordinal_naming_something_else_is_no_date(text: str) -> None:
    assert mentions(text, OCT_5) == []


WED_OCT_14 = datetime(2026, 10, 14, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # what was arranged for a day names a day ahead, whatever tense the arranging verb has
        ("Renewal confirmed for January 1. I'll send the invoice on Friday.", date(2027, 1, 1)),
        ("The cutover is locked in for March 2.", date(2027, 3, 2)),
        # a change of plan "to <a name>" is no delivery to a person
        ("They upgraded to Enterprise yesterday.", date(2026, 10, 13)),
        # an errand asked for is due then; the note's fact is elsewhere
        ("Please send the quote by Friday.", None),
        ("Kindly confirm the seat count by October 20.", None),
    ],
)
def test_arranged_days_changes_of_plan_and_requested_errands(text: str, expected: date | None) -> None:
    assert _day(text, WED_OCT_14) == expected


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        # a day that cannot be a month puts the day first, with or without its year
        ("The renewal moves to 28/02/2028.", datetime(2026, 5, 4, tzinfo=UTC), date(2028, 2, 28)),
        ("Patch deployed to their tenant on 17/06: imports work again.", datetime(2026, 6, 18, tzinfo=UTC),
         date(2026, 6, 17)),
        # both readings are dates: the text's other numeric dates say which comes first ...
        ("Signed 14/05/2026; the 12-month term runs from 01/06/2026.", datetime(2026, 5, 14, tzinfo=UTC),
         date(2026, 6, 1)),
        # (one whose second number cannot be a month puts the month first)
        ("Renewal call, 10/14. They renew for 3 years, new term starts 4/1/27.",
         datetime(2026, 10, 14, tzinfo=UTC), date(2027, 4, 1)),
        # a move's target after a short weekday
        ("Decision: go-live moves from Jul 1 to Mon Aug 3.", datetime(2026, 5, 28, tzinfo=UTC),
         date(2026, 8, 3)),
        ("Kickoff moved Wed 6/3 → Thu. 6/4.", datetime(2026, 5, 28, tzinfo=UTC), date(2026, 6, 4)),
        # ... else the reading nearer the raw log's time
        ("Term starts 02/09/2026.", datetime(2026, 8, 20, tzinfo=UTC), date(2026, 9, 2)),
        ("Term starts 09/02/2026.", datetime(2026, 8, 20, tzinfo=UTC), date(2026, 9, 2)),
        # a numeric day without its year after a preposition or a label
        ("Go-live target: 9/14 for the Austin site.", datetime(2026, 8, 3, tzinfo=UTC), date(2026, 9, 14)),
        ("The kickoff moved to 3/9.", datetime(2026, 2, 26, tzinfo=UTC), date(2026, 3, 9)),
    ],
)  # fmt: skip
def test_numeric_dates_read_either_way_round(text: str, at: datetime, expected: date) -> None:
    assert _day(text, at) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Columbus 17/17 routes done; Dayton 9/10.",  # scores, not dates
        "Support is 24/7 for the Enterprise tier.",
        "Reminders go out at 7/14/30 days before expiry.",
    ],
)
def test_ratios_and_scores_are_not_dates(text: str) -> None:
    assert _day(text, datetime(2026, 7, 7, tzinfo=UTC)) is None


def test_a_start_a_few_days_back_is_not_moved_a_year_on() -> None:
    """ "from 1 July" said on 3 July: the change took effect two days ago."""
    said = datetime(2026, 7, 3, tzinfo=UTC)
    assert _day("Per the signed amendment, the rate is $0.12 per scan from 1 July.", said) == date(2026, 7, 1)
    # a start weeks away still looks ahead
    assert _day("The new rate applies from 1 July.", datetime(2026, 6, 2, tzinfo=UTC)) == date(2026, 7, 1)
    assert _day("The new rate applies from 1 June.", datetime(2026, 8, 20, tzinfo=UTC)) == date(2027, 6, 1)


def test_a_month_the_text_then_names_a_day_of_is_that_day() -> None:
    text = (
        "Rollout postponed to November, as their ERP freeze runs to the end of October. "
        "The Leeds office now starts on Tuesday 10 November."
    )
    assert _day(text, datetime(2026, 7, 1, tzinfo=UTC)) == date(2026, 11, 10)
    # a part of the month is a day of its own
    assert _day("Go-live moved to mid-November; a dry run on 3 November.", OCT_5) == date(2026, 11, 15)


@pytest.mark.parametrize(
    "text",
    [
        "Thanks for the time on Tuesday. Their CFO wants the add-on priced separately.",
        "Thank you for yesterday's session, which the team found useful. Pricing is the open question.",
        "Great to meet you on Monday! Sharing the deck as promised.",
        "I would propose that we hold the training sessions on Wednesday mornings, starting next Wednesday.",
        "Paper checklists stay in use thru end of Q3.",
    ],
)
def test_a_conversation_thanked_for_a_day_proposed_or_an_end_is_not_the_facts_date(text: str) -> None:
    assert _day(text, WED_AUG_19) is None


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("The subscription commences on the first of April for twelve months.",
         datetime(2026, 3, 30, tzinfo=UTC), date(2026, 4, 1)),
        ("The renewal date is the thirty-first of March 2028.", datetime(2026, 4, 2, tzinfo=UTC),
         date(2028, 3, 31)),
        ("The tax team will begin onboarding on Monday the twenty-second of June.",
         datetime(2026, 6, 2, tzinfo=UTC), date(2026, 6, 22)),
        ("With effect from the fifteenth of June the firm moves to the Enterprise plan.",
         datetime(2026, 5, 14, tzinfo=UTC), date(2026, 6, 15)),
    ],
)  # fmt: skip
def test_a_day_written_in_words(text: str, at: datetime, expected: date) -> None:
    assert _day(text, at) == expected


def test_first_of_all_is_no_date() -> None:
    assert _day("First of all, the team loved the demo.", WED_AUG_19) is None


def test_a_statement_made_by_its_verb_is_no_errand() -> None:
    """ "I confirm that the review takes place on ..." states the meeting's day; "I'll confirm the
    room by Friday" is an errand's."""
    said = datetime(2026, 10, 6, tzinfo=UTC)
    text = "I confirm that our annual review will take place on Thursday the fifteenth of October."
    assert _day(text, said) == date(2026, 10, 15)
    assert _day("I'll confirm the room by Friday.", said) is None


def test_an_abbreviated_effective_date() -> None:
    assert _day(
        "Dana leaving Zephyr eff. 5/15; new signer is Raj.", datetime(2026, 5, 5, tzinfo=UTC)
    ) == date(2026, 5, 15)


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("With the 24 months term the first renewal is on 01.04.2028, notice three months before.",
         datetime(2026, 3, 6, tzinfo=UTC), date(2028, 4, 1)),
        ("Go-live is planned for 01.06.2026. Admin training runs every Tuesday.",
         datetime(2026, 3, 12, tzinfo=UTC), date(2026, 6, 1)),
        ("I am in parental leave from 17.08. for two months.", datetime(2026, 8, 5, tzinfo=UTC),
         date(2026, 8, 17)),
        ("The first QBR will be on 22. September at your site.", datetime(2026, 9, 2, tzinfo=UTC),
         date(2026, 9, 22)),
    ],
)  # fmt: skip
def test_dates_written_with_dots(text: str, at: datetime, expected: date) -> None:
    assert _day(text, at) == expected


@pytest.mark.parametrize(
    "text",
    [
        "A permanent fix is planned for v3.10.",
        "Fix shipped in release 4.12.3 yesterday evening.",
        "Zero disputes since 4.12. Barney's build takes 40 min now.",
    ],
)
def test_versions_are_not_dotted_dates(text: str) -> None:
    assert all(m.text.count(".") < 2 for m in mentions(text, datetime(2026, 7, 21, tzinfo=UTC)))


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        # a change that takes effect as it is said, beside a later day of another fact
        ("Jonas leaves at the end of May. Petra takes over all decisions with immediate effect.",
         datetime(2026, 4, 16, tzinfo=UTC), date(2026, 4, 16)),
        # a term's start, however it is named
        ("Order form signed. Contract start is 01.04.2026 as agreed.", datetime(2026, 3, 5, tzinfo=UTC),
         date(2026, 4, 1)),
        ("Executed on 4/5/26. The commencement date is 1 July 2026.", datetime(2026, 5, 5, tzinfo=UTC),
         date(2026, 7, 1)),
        # a move's target said again exactly
        ("Go-live moves from 01.06. to the Monday of week 27, that is 29.06.2026.",
         datetime(2026, 5, 6, tzinfo=UTC), date(2026, 6, 29)),
    ],
)  # fmt: skip
def test_when_a_change_takes_effect_in_more_words(text: str, at: datetime, expected: date) -> None:
    assert _day(text, at) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Regarding your offer from 2 July: we will not book the on-site day.",
        "Quote Q-1 emailed to Marcus: 60 seats at $95. Quote expires 7/27/2026.",
        "Hi Jordan, thanks for turning this around so quickly yesterday. We'll take the monthly option.",
    ],
)
def test_an_offers_day_and_a_thanks_are_not_the_facts_date(text: str) -> None:
    assert _day(text, datetime(2026, 7, 15, tzinfo=UTC)) is None


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("They switched to quarterly billing starting Q3, as cash is tight.",
         datetime(2026, 6, 16, tzinfo=UTC), date(2026, 7, 1)),
        ("Renewal date 2027-02-28 → 2027-03-31 so it lines up with their FY.",
         datetime(2026, 6, 3, tzinfo=UTC), date(2027, 3, 31)),
        ("Could the renewal move to March? Our fiscal year starts 1 April.",
         datetime(2026, 5, 13, tzinfo=UTC), None),
    ],
)  # fmt: skip
def test_a_quarter_started_an_arrow_between_dates_and_a_fiscal_year(
    text: str, at: datetime, expected: date | None
) -> None:
    assert _day(text, at) == expected


def test_a_chat_exports_message_stamps_are_not_dates() -> None:
    """ "[24/03/26, 12:00] Anjali: ..." stamps a message; the fact is in what it says."""
    said = datetime(2026, 3, 24, 6, 30, tzinfo=UTC)
    chat = "[24/03/26, 12:00] Anjali: got the countersigned copy, thanks\n[24/03/26, 12:02] Rohan: talk soon"
    assert _day(chat, said) is None
    dated = "[24/03/26, 12:00] Anjali: we go live on 6 April, all 40 agents\n[24/03/26, 12:02] Rohan: great"
    assert _day(dated, said) == date(2026, 4, 6)


def test_a_note_that_opens_as_a_quote_dates_nothing() -> None:
    """An offer takes effect once accepted, in another note."""
    text = "Quote for the six carriers joining the fleet from 2026-06-01: EUR 189 per vessel per month."
    assert _day(text, datetime(2026, 5, 4, tzinfo=UTC)) is None
    assert _day(
        "Quotes came in lower from 2026-06-01 on, the CFO says.", datetime(2026, 5, 4, tzinfo=UTC)
    ) == date(2026, 6, 1)


@pytest.mark.parametrize(
    "text",
    [
        "Transcript excerpt - Discovery call, 12 Jan\n[00:23:51] Tom: users?\n[00:23:58] Priya: 140.",
        "Week 22 status notes – 2026-06-01\nMigration 90% done; training on track.",
    ],
)
def test_the_date_in_a_record_s_title_line_is_the_record_s_not_a_fact_s(text: str) -> None:
    assert _day(text, datetime(2026, 6, 1, 12, tzinfo=UTC)) is None


def test_a_date_in_a_title_that_is_no_record_still_counts() -> None:
    text = "Go-live moves to 15 June\nThe SAP interface is not ready."
    assert _day(text, datetime(2026, 6, 1, 12, tzinfo=UTC)) == date(2026, 6, 15)


def test_a_date_under_a_next_steps_heading_is_an_errand_s_not_the_fact_s() -> None:
    summary = (
        "Call summary - Commercial review\n\nDecisions\n- They opted for quarterly billing.\n\n"
        "Next steps\n- Tom to reissue the order form by Tuesday."
    )
    assert _day(summary, datetime(2026, 1, 29, 15, tzinfo=UTC)) is None
    dated = "Decisions\n- Go-live moves to Monday 13 April.\n\nNext steps\n- Aisha to send it by Friday."
    assert _day(dated, datetime(2026, 3, 11, 16, tzinfo=UTC)) == date(2026, 4, 13)


def test_the_time_of_writing_is_not_the_fact_s_date() -> None:
    text = "As we approach the end of Q3, I confirm that the renewal date is now the thirtieth of June 2027."
    assert _day(text, datetime(2026, 9, 29, 13, tzinfo=UTC)) == date(2027, 6, 30)


@pytest.mark.parametrize(
    "text",
    [
        "CTA opened: Rollout | Priority: High | Owner: Lee | Due: 2026-05-20 | Tasks: price lists",
        "Security questionnaire returned to procurement; the DPA review is due by 12 June.",
        "Deal desk approved $61 per seat on a 3-year term, 80 seats. Approval expires 15 Jun.",
        "We agreed Pilar sends the revised scope by 9 May.",
    ],
)
def test_a_task_s_due_day_an_approval_s_expiry_and_an_agreed_errand_are_not_the_fact_s_date(
    text: str,
) -> None:
    assert _day(text, datetime(2026, 4, 20, tzinfo=UTC)) is None


def test_a_renewal_that_is_due_on_a_day_is_dated_by_it() -> None:
    assert _day("Their renewal is due June 30, 2027.", datetime(2026, 4, 20, tzinfo=UTC)) == date(2027, 6, 30)


@pytest.mark.parametrize(
    "text",
    [
        "Signed copy attached, I countersigned this afternoon. 90 users, 12-month term starting May 1, 2026.",
        "Good news: Ms. Okafor has signed today the order for 40 users. Contract start shall be 01.05.2026.",
        "Order signed today by their CFO. Contract start 01.05.2026, 36 months.",
        "Signed today. The subscription, beginning May 1, 2026, covers 90 users.",
    ],
)
def test_a_term_starting_on_a_day_is_the_day_the_contract_takes_effect(text: str) -> None:
    found = valid_at(text, datetime(2026, 3, 24, 13, 0, tzinfo=UTC))
    assert found is not None and found.when == date(2026, 5, 1)


def test_a_note_about_the_renewal_is_dated_by_the_renewal_date_it_states() -> None:
    said = datetime(2026, 2, 10, 14, 0, tzinfo=UTC)
    record = "Renewal record for Acme: renewal date 2027-03-01, 12-month term from contract start 2026-03-01."
    assert valid_at(record, said, renewal_note=True).when == date(2027, 3, 1)
    assert valid_at(record, said).when == date(2026, 3, 1)  # a contract note: the term's start
    # a change log's old renewal date is not the one that holds
    log = "Field updated: Renewal date 2026-09-30 → 2026-12-31 | Reason: align with their fiscal year-end"
    assert valid_at(log, said, renewal_note=True).when == date(2026, 12, 31)


def test_the_verb_before_a_weekday_dates_it_when_another_clause_follows_a_comma() -> None:
    said = datetime(2026, 3, 26, 14, 0, tzinfo=UTC)  # a Thursday
    text = "QX-2231 fixed, shipped in 3.18 on tuesday, Mia confirmed managers get every swap push since."
    assert _day(text, said) == date(2026, 3, 24)
    # the clause's own future still looks ahead
    assert _day("He is getting married on Tuesday and will be out for a week.", said) == date(2026, 3, 31)


@pytest.mark.parametrize(
    "text",
    [
        "Good news: Acme signed the three-month extension yesterday, covering 1 June to 31 August.",
        "Acme signed the extension yesterday: extension 1 June - 31 August at the current seats.",
    ],
)
def test_the_span_an_extension_covers_starts_when_it_takes_effect(text: str) -> None:
    assert _day(text, datetime(2026, 5, 7, 9, 0, tzinfo=UTC)) == date(2026, 6, 1)


@pytest.mark.parametrize(
    "text",
    [
        "Q2 QBR with Acme: usage up 30%, one S2 ticket resolved. Next QBR early October.",
        "Ana is our champion and she takes the renewal to their board. Intro call with her is next Tuesday.",
        "They sent back the order form at $36, never quoted. Set up a call w/ Ana Thu 5/21 to sort it.",
    ],
)
def test_the_date_of_a_meeting_to_come_is_a_next_step_s(text: str) -> None:
    assert _day(text, datetime(2026, 5, 18, 9, 0, tzinfo=UTC)) is None


def test_a_meeting_moved_is_still_dated() -> None:
    text = "Acme moved the QBR to Thursday June 4; the renewal is on the agenda."
    assert _day(text, datetime(2026, 5, 18, 9, 0, tzinfo=UTC)) == date(2026, 6, 4)
