"""restatements: a recap or a CRM entry that repeats an earlier note with nothing new."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from amem.llm.offline.restatements import restatement_score


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "Maria, attached is the plan for moving your workspace to our EU region. "
            "The EU region goes live mid-May.",
            "Email logged: Leo sent Maria the EU region migration plan; EU region live mid-May.",
        ),
        (
            "We are adding the Benelux team, so we will need 150 seats instead of 120 from May.",
            "Seat count updated to 150 (was 120), starting May 1.",
        ),
        (
            "Initech's renewal moves up to January 31, 2027, so it lands before their freeze.",
            "Renewal date for Initech changed from 2027-03-27 to 2027-01-31.",
        ),
        (
            "Elaine asked us to push the renewal from October 1 to January 15 to match their fiscal year. "
            "We agreed.",
            "Recap for the team: the renewal moves to January 15 to match their fiscal year.",
        ),
    ],
)
def test_a_recap_of_known_values_restates(old: str, new: str) -> None:
    assert restatement_score(new, old, {"globex", "initech"}) > 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Renewal date set to October 1.", "Renewal date changed to January 15."),  # a new value
        (
            "Hooli will roll out the Slack integration.",
            "Hooli is no longer rolling out the Slack integration.",
        ),
        (
            "Globex no longer wants the annual plan. Finance wants monthly billing.",
            "Globex switched to monthly billing effective September 1.",
        ),
        ("Kickoff call with Globex about weekly reports.", "QBR with Globex: active users are up to 132."),
    ],
)
def test_a_new_fact_or_a_reversal_restates_nothing(old: str, new: str) -> None:
    assert restatement_score(new, old, {"globex", "hooli"}) == 0


def test_a_reply_that_changes_the_status_is_news_not_a_recap() -> None:
    report = "Ticket #512: the nightly import fails on the tablets with a stale revision error."
    reply = "Re: #512 - the nightly import fix shipped today, the tablets save again. Closing."
    assert restatement_score(reply, report) == 0.0


def test_a_confirming_note_that_repeats_the_values_is_a_recap() -> None:
    call = "Retro call: Ana leaves at the end of June; from 1 July Raj is our champion and owns the contract."
    mail = "Just confirming what Ana told you: from 1 July I'm your champion and I own the contract."
    assert restatement_score(mail, call) > 0


def test_a_short_field_line_of_a_known_value_is_a_record_of_it() -> None:
    decision = "Deal desk approved pulling the renewal forward to 1 January 2027, for their fiscal year."
    assert restatement_score("Renewal date: 1 January 2027.", decision) > 0
    assert restatement_score("Renewal date: 1 March 2027.", decision) == 0.0  # a new value
    # a line reporting an event is news, even with a known value
    assert restatement_score("Seats provisioned for Acme: 40.", "Order form signed: 40 seats.") == 0.0


def test_a_speaker_prefix_is_no_field_line() -> None:
    """A dialogue turn ("Caroline: ...") names its speaker like a field; with no value it is
    judged by its words, as any note."""
    old = "Caroline: I went to the support group yesterday and it was really powerful."
    new = "Caroline: Thanks, it was a really good day for me."
    assert restatement_score(new, old) == 0.0


def test_a_crm_entry_naming_its_source_and_fiscal_year_restates_the_call() -> None:
    """The date that dates the source ("per call notes of 3 Nov") and a name with a number in it
    ("FY27") are no values of the entry's own."""
    old = "Renewal call with Acme: Omar confirmed Acme will renew in March for 160 seats."
    new = (
        "Renewal opportunity 'Acme - FY27' moved to Commit: renews in March, 160 seats "
        "(per call notes of 3 Nov)."
    )
    assert restatement_score(new, old) == 1.0


def test_a_deal_logged_closed_won_restates_the_decision_but_not_a_quote() -> None:
    decision = "We're going ahead: please send the paperwork for 40 seats at the $96 rate."
    quote = "Sent Acme the quote: 40 seats at the $96 rate."
    logged = "Opportunity 'Acme - Research': stage Closed Won. 40 seats @ $96/seat/mo."
    assert restatement_score(logged, decision) == 1.0
    assert restatement_score(logged, quote) == 0.0  # the deal won is news after a quote


def test_a_recap_naming_the_old_value_of_a_move_restates_the_note_that_moved_it() -> None:
    old = "Weekly call, 3 June. The depot go-live moves from June 2 to June 30. Ana signed off on the call."
    recap = "Quick recap of today's call: the depot go-live moves to June 30 (was June 2). Ana approved."
    assert restatement_score(recap, old) > 0
    # a new note that moves a date away from one the old note never stated is news
    moved = "Go-live date changed from 2026-05-20 to 2026-06-30."
    assert restatement_score(moved, "The go-live is on 30 June 2026.") > 0
    assert restatement_score("Go-live changed from June 30 to July 14.", old) == 0


def test_a_crm_update_heading_is_a_recap_cue() -> None:
    old = "Hi all, I'm leaving Acme on July 3; Lee Chan takes over as our sponsor for the rollout."
    log = "Contact update, Acme: Rui Sousa leaves 2026-07-03. New sponsor: Lee Chan."
    assert restatement_score(log, old) > 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "We're pushing the Lisbon go-live to August 10. Their warehouse move comes first.",
            "Go-live date changed: 2026-07-20 -> 2026-08-10 (customer request).",
        ),
        (
            "Renewal now lands on 2028-02-01 after the co-term; the licence price is $27 from March 1.",
            "Renewal updated: renewal date 2027-09-01 → 2028-02-01; price $29 → $27 from 2027-03-01.",
        ),
    ],
)
def test_a_change_log_names_the_old_value_before_its_arrow(old: str, new: str) -> None:
    """A CRM's "A -> B": A is what the change leaves behind, not a value the log states anew."""
    assert restatement_score(new, old, {"lisbon"}) > 0


def test_a_change_log_of_a_value_no_note_stated_is_news() -> None:
    old = "We're pushing the Lisbon go-live to August 10. Their warehouse move comes first."
    assert restatement_score("Go-live date changed: 2026-08-10 -> 2026-08-24.", old, set()) == 0


def test_a_relative_day_of_the_earlier_note_is_read_against_its_own_time() -> None:
    """A CRM entry writes out the day its source said as "today"."""
    email = "Approved: go ahead with the 6 seats effective today. That takes us to 36."
    log = "Seats updated: 30 -> 36 (add-on approved). Effective 2026-06-16."
    assert restatement_score(log, email, old_at=datetime(2026, 6, 16, 14, 22, tzinfo=UTC)) > 0
    assert restatement_score(log, email, old_at=datetime(2026, 6, 30, 9, 0, tzinfo=UTC)) == 0
    assert restatement_score(log, email) == 0  # not knowing when it was said, the day is news


@pytest.mark.parametrize(
    "log",
    [
        "Starter workspace provisioned for Acme, 12 seats, per N. Ferreira's email.",
        "[Seats] Acme: 12 seats on Starter. Source: call notes 3/3, D. Whitfield.",
    ],
)
def test_an_entry_naming_its_source_restates_it(log: str) -> None:
    email = "Please set us up on Starter for now, 12 seats to begin with. Thanks, Nadia"
    assert restatement_score(log, email, {"acme"}) > 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a reply answering an email: "RE:" is its subject, not a recap, and it chooses a time
        (
            "Subject: Demo times\n\nHi Ana, the demo could be Tuesday 10 ET or Thursday 11 ET. Sam",
            "Subject: RE: Demo times\n\nThursday 11 ET works. I'll bring our IT lead along.",
        ),
        # a chat line moving a meeting: one number in common ("10") says nothing of what it repeats
        (
            "Priya confirmed the renewal walkthrough for Tuesday at 10.",
            "Omar: moving us to 2pm instead of 10, invite updated.",
        ),
    ],
)
def test_a_reply_or_a_chat_line_sharing_one_number_is_no_recap(old: str, new: str) -> None:
    assert restatement_score(new, old) == 0.0


def test_a_crm_entry_naming_two_known_values_still_restates_with_few_words_in_common() -> None:
    old = "Nina: Halden needs 95 seats, not 110, from November 1, after the contractor offboarding."
    assert restatement_score("Seat count for Halden changed to 95 from November 1.", old) == 1.0


def test_a_buying_role_given_after_the_call_that_met_the_person_is_news() -> None:
    call = (
        "Intro call with Acme: Ana Ruiz (VP Operations) and Ben Cole (IT lead). 40 vans, routes built "
        "in Excel every night, proof of delivery on paper."
    )
    roles = (
        "Contact roles updated: Ana Ruiz (VP Operations) = Economic Buyer. Ben Cole (IT lead) = Influencer."
    )
    assert restatement_score(roles, call, {"acme"}) == 0.0
    # after the note that gave her the deciding power, the CRM entry logs a known fact
    handover = (
        "Heads-up: Ana Ruiz (VP Operations) now owns the renewal decision; Ben Cole (IT lead) stays on."
    )
    assert restatement_score(roles, handover, {"acme"}) > 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the day written month/day is the day the call named
        (
            "Weekly call: their two board meetings fall in late May, so the go-live moves from June 1 to "
            "June 15. Agreed.",
            "Recap of today's call: go-live moved to 6/15 because of the board meetings.",
        ),
        # the plan named in another form is the same plan
        (
            "We're going with the three-year Growth Pro ramp, 90 seats, because SSO matters most.",
            "Renewal opportunity updated: Stage -> Verbal Commit. Growth Pro, 90 seats, three-year ramp.",
        ),
    ],
)
def test_a_day_or_a_plan_written_another_way_is_no_new_value(old: str, new: str) -> None:
    assert restatement_score(new, old) > 0


def test_a_month_day_the_old_note_does_not_name_is_news() -> None:
    old = "Weekly call: the go-live moves from June 1 to June 15. Agreed."
    assert restatement_score("Recap of today's call: go-live moved to 6/22.", old) == 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a term in years and the same term in months; a price with its cents
        (
            "Deal desk signed off $47 a seat for Orion's 220 seats on a 1yr term.",
            "Opportunity note logged: $47.00/seat/month, 220 seats, 12-month term.",
        ),
        # counts said in words, logged in digits
        (
            "spoke to nadia she agreed to sixty four a seat for all ninety seats on a two year term",
            "Logged from the call: $64 per seat, 90 seats, 24 months.",
        ),
        # a day given yearless in the offer, written out in full by the entry that logs it
        (
            "Offer: $52 per seat for 75 seats, valid thru 6/30.",
            "Quote logged for Orion: $52/seat, 75 seats, valid until 2026-06-30.",
        ),
        # a numeric day read the other way round
        (
            "Renewal confirmed for 3 years, 180 seats, new term starts 4/1/27 (spoke 10/14).",
            "Recap for the forecast: 180 seats, 3 years, term from 4/1/27.",
        ),
    ],
)
def test_a_value_written_another_way_is_the_same_value(old: str, new: str) -> None:
    assert restatement_score(new, old) > 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a record of fields, from a CRM or a signing tool, of values the note gave
        (
            "Order form OF-77 signed by R. Abara: 40 seats, 12 months, starting 2026-09-01.",
            "[eSign] envelope OF-77 | status=completed | signer=Rita Abara | seats=40 | term=12mo | "
            "start=2026-09-01",
        ),
        (
            "We agreed $29 per seat for the 300 seats, 36-month term, with a free 30-day pilot.",
            "Opportunity NX-2026-07 | Nexo | Seats: 300 | Price: $29/seat/month | Term: 36 months | "
            "Pilot: 30 days",
        ),
        # a letter for the files, repeating the change it confirms
        (
            "Dear Ms Lowe, with effect from the first of June the firm moves to the Premium plan at "
            "£58 per user per month, as the firm pays annually in advance.",
            "For your records: from the first of June the firm moves to the Premium plan at £58 per "
            "user per month.",
        ),
        # an account update headed with a dash
        (
            "Went live yesterday for all three depots; 96 of 100 users signed in on day one.",
            "Account update - Pellworth: went live on all three depots, 96 of 100 users signed in.",
        ),
    ],
)
def test_a_record_that_logs_known_values_restates(old: str, new: str) -> None:
    assert restatement_score(new, old) > 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the same March 1, a year later: the renewal is not the start
        (
            "Order form: 140 users at £36 per user, subscription start 1 March 2026, 12-month term.",
            "Renewal record created: renewal date 2027-03-01, 12-month term from start 2026-03-01.",
        ),
        # a ticket the old note never named
        (
            "Victor wants SCIM provisioning from Okta before the audit.",
            "FR-88 logged for Orion: SCIM provisioning from Okta. Requester: Victor.",
        ),
        # a phone number is no value, but a price the old note did not give is news
        (
            "Greg says $65 a user is over budget; they need $55 or less.",
            "Recap for the team: Greg now offers $58 a user.\nGreg Hale | (813) 555-0164",
        ),
    ],
)
def test_a_new_day_ticket_or_price_is_news(old: str, new: str) -> None:
    assert restatement_score(new, old) == 0


def test_a_phone_number_in_a_signature_is_no_new_value() -> None:
    old = "Go-live stays on Monday, May 4th for all 180 users."
    new = (
        "Recap of today's readiness check: no change, go-live remains Monday, May 4th.\n"
        "Marcus | (617) 555-0173"
    )
    assert restatement_score(new, old, old_at=datetime(2026, 3, 16, tzinfo=UTC)) > 0


def test_the_old_value_a_record_names_in_brackets_is_not_stated() -> None:
    old = "We are pushing go-live to July 6 for both hospitals."
    new = "Go-live date updated: 2026-07-06 (was 2026-05-04)."
    assert restatement_score(new, old, old_at=datetime(2026, 4, 21, tzinfo=UTC)) > 0


def test_a_day_the_earlier_note_gave_without_its_year_is_that_years_day() -> None:
    """Read against its own time, "go-live June 1" is June 1, 2026: a renewal a year on is news."""
    old = "Signed copy attached: 44 scanners for 12 months, go-live June 1 for all three depots."
    new = "Opportunity logged: signed, 12 months from go-live. Renewal date set to 2027-06-01."
    said = datetime(2026, 4, 24, tzinfo=UTC)
    assert restatement_score(new, old, old_at=said) == 0
    assert restatement_score("Go-live date logged: 2026-06-01, 44 scanners.", old, old_at=said) > 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "Walkthrough of the renewal options with Priya's finance team next Tuesday 10am.",
            "Carl: moving the renewal walkthrough next Tuesday to 2pm instead of 10. invite updated",
        ),
        (
            "They signed for 25 seats at $55, starting June 1. Greg sends the signed order form.",
            "Order form logged: fully executed, signed by Ellen. PO 4500-22871 follows. Start June 1.",
        ),
    ],
)
def test_a_move_or_a_new_purchase_order_is_news(old: str, new: str) -> None:
    assert restatement_score(new, old, old_at=datetime(2026, 5, 14, tzinfo=UTC)) == 0


def test_a_day_of_the_month_alone_in_the_earlier_note_is_that_month_s_day() -> None:
    said = datetime(2026, 5, 11, 9, 0, tzinfo=UTC)
    old = "Signed copy attached, we're going ahead with the Leeds pilot. Our crews are ready on the 25th."
    log = 'Opportunity "Leeds pilot" -> Closed Won. Pilot agreement signed. Pilot start 2026-05-25.'
    assert restatement_score(log, old, old_at=said) == 1.0
    # another day is news
    assert restatement_score(log.replace("05-25", "05-28"), old, old_at=said) == 0.0


def test_the_day_the_earlier_note_was_said_is_a_day_it_knows() -> None:
    said = datetime(2026, 4, 28, 17, 15, tzinfo=UTC)
    old = "Call with Ines: she gave us the verbal, Growth at $11.75 for 12 months. Legal next."
    log = "Opportunity updated: stage Verbal -> Legal. Growth, $11.75, 12-mo term. Verbal from Ines on 4/28."
    assert restatement_score(log, old, old_at=said) == 1.0
    assert restatement_score(log.replace("4/28", "4/21"), old, old_at=said) == 0.0


def test_the_thousands_of_a_large_count_are_no_value_of_their_own() -> None:
    old = "Ines confirmed: Growth at $11.75 for 12 months, signing next week."
    log = "Recap logged: Growth, 2,000 employees @ $11.75, 12-mo term, signing next week."
    assert restatement_score(log, old) == 1.0
    assert restatement_score(log.replace("2,000", "2,400"), old) == 1.0  # its thousands say nothing
    assert restatement_score(log.replace("$11.75", "$12.25"), old) == 0.0


def test_an_amount_the_known_values_come_to_is_no_new_value() -> None:
    old = "Agreed with Hilde: $43/seat/month on Growth for 70 seats, 12-month prepay. Annual plan."
    assert (
        restatement_score("Opportunity amount updated: Growth, 70 seats x $43/seat/mo = $36,120/yr.", old)
        == 1.0
    )
    assert (
        restatement_score("Opportunity amount updated: Growth, 70 seats x $43/seat/mo = $3,010/mo.", old)
        == 1.0
    )
    # an amount the values do not come to is news (a discount, a fee)
    assert (
        restatement_score("Opportunity amount updated: Growth, 70 seats x $43/seat/mo = $33,900/yr.", old)
        == 0.0
    )


def test_a_week_number_dates_an_entry_and_a_long_account_key_names_it() -> None:
    old = "Deal desk approved $44/seat/month for 120 seats on a 2-year term, for the multi-year commit."
    week = (
        "Wk 13: deal desk approved $44/seat/month for 120 seats on a 2-year term, for the multi-year commit."
    )
    assert restatement_score(week, old) > 0
    assert restatement_score(week.replace("120 seats", "130 seats"), old) == 0
    key = "Recap logged for opportunity PINEHOLLOW-2026-07: $44/seat/month for 120 seats, 2-year term."
    assert restatement_score(key, old) > 0


def test_a_negation_in_a_relative_clause_negates_nothing_the_recap_states() -> None:
    old = "Leeds is live since yesterday! 112 technicians logged in on day one and zero sync errors."
    recap = (
        "Subject: Leeds go-live recap\n\nFor Helena and the steering group, who aren't on the channel: "
        "Leeds went live on 4 May, 112 technicians logged in on day one and zero sync errors."
    )
    assert restatement_score(recap, old, old_at=datetime(2026, 5, 5, 13, 30, tzinfo=UTC)) > 0
    reversed_ = "Leeds go-live recap: Leeds did not go live on 4 May, 112 technicians could not log in."
    assert restatement_score(reversed_, old, old_at=datetime(2026, 5, 5, 13, 30, tzinfo=UTC)) == 0


def test_a_chat_line_relaying_what_was_just_emailed_restates_the_email() -> None:
    email = "Good news: we accept $35.50 per seat per month for 150 seats on Professional, 36-month term."
    assert (
        restatement_score("Just emailed you: yes to $35.50 x 150 seats, Professional, 36 months.", email) > 0
    )
    assert (
        restatement_score("Just emailed you: yes to $35.50 x 160 seats, Professional, 36 months.", email) == 0
    )
