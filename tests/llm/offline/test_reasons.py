"""reasons: the rationale is the reason span only, found however the reason is worded."""

from __future__ import annotations

import pytest

from amem.llm.offline.reasons import decided, reason
from amem.llm.offline.text import sentences


def _reason(text: str) -> str | None:
    found = reason(sentences(text))
    if found is None:
        return None
    assert text[found.start : found.end] == found.text  # an exact span of the raw log
    return found.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Globex renewed for two years because the migration to our EU region removed their "
            "data-residency blocker",
            "the migration to our EU region removed their data-residency blocker",
        ),
        (
            "Soylent cancelled the pilot: the budget was cut after their reorg",
            "the budget was cut after their reorg",
        ),
        ("Stark opted for monthly billing as cash flow is tight", "cash flow is tight"),
        (
            "Dunder Mifflin will not renew. Reason: the new CFO wants one vendor",
            "the new CFO wants one vendor",
        ),
        (
            "Globex opted out of the connector for now, as their CRM migration is still running.",
            "their CRM migration is still running",
        ),
        ("Due to the Benelux slowness, Globex postponed the rollout by a month.", "the Benelux slowness"),
        ("Because of the hiring freeze, Initech postponed the rollout.", "the hiring freeze"),
        ("The budget was cut, so Soylent cancelled the pilot.", "The budget was cut"),
        ("We moved the QBR to May 13, so Hank Scorpio can join.", "Hank Scorpio can join"),
        (
            "Globex will reduce to 135 seats, since the reorg removes the Benelux team.",
            "the reorg removes the Benelux team",
        ),
        ("The board postponed it to Q2 because of the hiring freeze.", "the hiring freeze"),
        (
            "Globex no longer wants the annual plan. Finance wants monthly billing so they can scale down.",
            "they can scale down",
        ),
        (
            "Elaine asked us to push the renewal so it lines up with their fiscal year. We agreed.",
            "it lines up with their fiscal year",
        ),
        (
            # the factor named, and the colon that goes on to explain it
            "Globex renewed. Elaine said the EU data residency was what tipped it: legal signed off.",
            "the EU data residency was what tipped it: legal signed off",
        ),
        (
            "Initech picked us over Looker. Peter said the deciding factor was the native Jira integration.",
            "the native Jira integration",
        ),
        (
            "We have decided against the expansion. The reason is simple: QA is moving to a vendor.",
            "QA is moving to a vendor",
        ),
        (
            "Soylent has pulled the plug on the add-on — their budget got cut in the reorg.",
            "their budget got cut in the reorg",
        ),
        ("Initech opted to prepay the year as that locks the $33 rate.", "that locks the $33 rate"),
        ("Their auditor requires SSO, which is why Acme chose Enterprise.", "Their auditor requires SSO"),
        (
            "Their auditor requires SSO. That's why Acme chose the Enterprise tier.",
            "Their auditor requires SSO",
        ),
    ],
)
def test_the_reason_span_without_its_connective(text: str, expected: str) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "We decided to go with the annual plan for Hooli.",  # a decision, no reason
        "The call with Umbrella ran late because of traffic on the bridge.",  # a reason, no decision
        "Dashboards load slowly for the Benelux team since the EU migration.",  # 'since' + a time
        "Ticket #4502: login fails because the certificate expired.",
        "Their renewal decision now sits with the new CFO, so we will send her the proposal.",
        "Nina pushed back on $36: Initech wants $33 per seat.",  # a negotiation, not a decision
        # what followed the decision, not why it was taken
        "Hana signed the add-on, so they now have 100 seats.",
        "We moved the call, so it's now Tuesday at 10.",
    ],
)
def test_no_rationale_without_both_a_decision_and_its_reason(text: str) -> None:
    assert _reason(text) is None


@pytest.mark.parametrize(
    "text",
    [
        # a wish, a plan, an option or a question is not a decision, whatever reason it gives
        "The CFO would like to move to quarterly billing once the audit is over, since cash is tight.",
        "They might switch to the Starter tier because the team is shrinking.",
        "Should we cancel the pilot after all, given the freeze?",
        "Ops is considering renewing for two years as that locks the rate.",
        "Lee wants to upgrade to Enterprise - nothing decided yet.",
        "Maya would like to pilot the mobile app in Q1, not committed.",
        # a colon that goes on describing what was signed is not a reason
        "The amendment is signed: adds 12 kiosks at $9/device/month from June.",
    ],
)
def test_no_rationale_for_a_wish_a_plan_a_question_or_an_elaboration(text: str) -> None:
    assert _reason(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the reason in the sentence before, pointed back to
        (
            "The warehouse move ran late. With that in mind we have decided to delay the rollout.",
            "The warehouse move ran late",
        ),
        # a stated factor keeps what its colon explains
        (
            "Umbrella picked the Pro tier. The driver was security: their auditors require SSO.",
            "security: their auditors require SSO",
        ),
        # connectives worded otherwise, and a change of course
        (
            "Finance approved moving the renewal to March, on the grounds that it matches their budget.",
            "it matches their budget",
        ),
        (
            "We're reinstating the kiosk add-on - the night shift refused to share logins.",
            "the night shift refused to share logins",
        ),
        # a consequence in the next sentence is not the reason
        (
            "We postponed the training to May. The venue is free then, so we keep the budget.",
            None,
        ),
        # "mainly for", a semicolon splice, "Reason being", a verdict after a bare colon
        (
            "They chose us over Competitor X mainly for the Salesforce integration.",
            "the Salesforce integration",
        ),
        ("Hooli declined the upsell; they're consolidating vendors.", "they're consolidating vendors"),
        ("Renewal signed for 3 years. Reason being the price lock.", "the price lock"),
        (
            "Pied Piper cancelled: too expensive for their current stage.",
            "too expensive for their current stage",
        ),
        ("Agreed: too many open questions go to the steering group.", None),  # the content, not why
    ],
)
def test_reasons_worded_many_ways(text: str, expected: str | None) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a choice between two options, and its reason after a dash
        (
            "They will host the bridge on their own VM rather than use our connector - their IT wants no "
            "instrument on the internet.",
            "their IT wants no instrument on the internet",
        ),
        # a reason whose subject ends in a parenthesis is still a clause
        (
            "Kim approved going from 40 to 65 seats, since the second lab (25 people) joins at go-live.",
            "the second lab (25 people) joins at go-live",
        ),
    ],
)
def test_choices_and_parenthesised_subjects(text: str, expected: str) -> None:
    assert _reason(text) == expected


def test_a_cause_in_the_sentence_before_explains_that_sentence_not_the_decision() -> None:
    text = "The export failed because the token expired. We switched them to the new API key."
    assert _reason(text) is None
    # a purpose in the sentence before is what the decision that follows agrees to
    text = "Dana asked us to push the renewal to March so it lines up with their fiscal year. We agreed."
    assert _reason(text) == "it lines up with their fiscal year"


@pytest.mark.parametrize(
    "text",
    [
        # what follows a colon after a decision is its content when it states an action or a
        # change, not why it was taken
        "Deal moved to stage Trial: Hooper Ltd accepted a two-week trial for 10 agents.",
        "Their COO signed off yesterday: we're going with the Scale tier, 80 seats.",
        "Agreed with Omar: Hooper Ltd drops from 80 to 60 seats next month.",
        "Pipeline moved to Won: Hooper Ltd renews in May, 60 seats.",
        # "As promised" is a manner, not a cause; "dropped in" is a visit, not a decision
        "As promised, the order form is attached, matching what we agreed.",
        "Omar dropped in for five minutes: the metric he watches is first-response time.",
        # an input that says no decision was taken gives no reason for one
        "Check-in went fine. Omar dropped the add-on idea because budgets are frozen. No decisions yet.",
    ],
)
def test_no_rationale_from_a_colon_that_gives_the_content_or_without_a_decision(text: str) -> None:
    assert _reason(text) is None


def test_a_reason_label_after_a_colon_that_gives_the_content_is_still_found() -> None:
    text = "Change agreed with Omar: the renewal date moves to 1 May. Reason: their budget year starts then."
    assert _reason(text) == "their budget year starts then"
    text = "Agreed: Hooper Ltd drops to 60 seats. We allow it since the support team was never onboarded."
    assert _reason(text) == "the support team was never onboarded"
    text = "Hooper Ltd cancelled the pilot: the sponsor was let go last week."
    assert _reason(text) == "the sponsor was let go last week"  # a cause after a colon still counts


def test_an_irregular_past_verb_makes_the_words_after_since_a_clause() -> None:
    text = "Security approved the vendor, since the audit report came back clean."
    assert _reason(text) == "the audit report came back clean"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a rollout decided or called off, in the progressive, is a decision
        (
            "We're not rolling the app out to the drivers after all: the depot is closing in March.",
            "the depot is closing in March",
        ),
        (
            "They are rolling SSO out to every office because the audit flagged shared logins.",
            "the audit flagged shared logins",
        ),
        ("We're not seeing errors since the patch went in.", None),  # a progressive of no decision
    ],
)
def test_a_rollout_decided_or_called_off_is_a_decision(text: str, expected: str | None) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Weekly sync. The legacy importer can't handle nested accounts and Priya doesn't want it "
            "blocking the other regions. So we agreed: a staged rollout instead of one launch.",
            "The legacy importer can't handle nested accounts and Priya doesn't want it blocking the "
            "other regions",
        ),
        (
            "> Raj, SAML is mandatory for us, which rules out the cheaper plan. So: approved at $30/seat "
            "on Business, 50 seats.",
            "Raj, SAML is mandatory for us, which rules out the cheaper plan",
        ),
        ("So far the team has renewed twice without a discount.", None),
    ],
)
def test_a_sentence_opened_by_so_is_the_consequence_of_the_sentence_before(
    text: str, expected: str | None
) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Agreed: Maria runs the pilot with their own data on the 9th.",
        "Decided with Helen: the project team picks the rollout order.",
        "The order form was countersigned as approved by their legal team.",
        "Please file the change as agreed.",
    ],
)
def test_no_reason_from_the_content_after_a_bare_colon_or_from_as_with_a_participle(text: str) -> None:
    assert _reason(text) is None


def test_switching_a_setting_on_or_off_is_no_decision() -> None:
    text = "Posting fails twice. It started after we switched on the multi-entity sync because finance asked."
    assert _reason(text) is None
    assert _reason("They switched to the annual plan because it is cheaper.") == "it is cheaper"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Depot go-live re-planned to early June (was May 12). Cause: the label printers arrived late.",
            "the label printers arrived late",
        ),
        (
            "The cutover moves from May 4 to May 25 due to 3k duplicate vendor records; cleanup takes time.",
            "3k duplicate vendor records",
        ),
    ],
)
def test_a_date_re_planned_or_moved_from_one_day_to_another_is_a_decision_with_its_cause(
    text: str, expected: str
) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Training for the Porto depot pushed from May 4 to May 18. Their forklift fleet is being "
            "replaced that week and the shift leads can't spare anyone. Materials stay as they are.",
            "Their forklift fleet is being replaced that week and the shift leads can't spare anyone",
        ),
        (
            "We'll pass on the analytics add-on this year. Our data team is down to two people and "
            "nobody would own it.",
            "Our data team is down to two people and nobody would own it",
        ),
        (
            "Bad news: we need to move the audit from June 2 to June 9. Their controller is on leave "
            "until June 5 and she won't sign off without reviewing it.",
            "Their controller is on leave until June 5 and she won't sign off without reviewing it",
        ),
    ],
)
def test_a_circumstance_stated_right_after_a_decision_is_its_reason(text: str, expected: str) -> None:
    found = reason(sentences(text), text)
    assert found is not None and found.text == expected


@pytest.mark.parametrize(
    "text",
    [
        # a new paragraph, an errand, an ongoing action, a consequence of its own: no reason
        "We switched the depot to the nightly feed.\nThe warehouse team is happy with the screens.",
        "We switched the depot to the nightly feed. Marta to send the new schedule on Friday.",
        "We switched the depot to the nightly feed. Engineering is rolling out the proper fix.",
        "We switched the depot to the nightly feed. The old feed is slow, so the team stays late.",
        "We switched the depot to the nightly feed. We signed the order form too, the price is fine.",
        # a step still to take before it holds
        "Contoso will renew on the Business tier for another year. Legal needs to review the DPA first.",
    ],
)
def test_no_bare_reason_across_a_paragraph_or_from_an_errand_an_action_or_another_decision(text: str) -> None:
    assert reason(sentences(text), text) is None


def test_as_in_or_as_with_compares_and_gives_no_reason() -> None:
    text = "Good news, the discount is approved. Everything else as in Monday's quote."
    assert reason(sentences(text), text) is None


def test_a_possessive_label_naming_the_reasoning_opens_the_reason() -> None:
    text = "Ivo rang back, they're going with Plus. His logic: the audit module saves them a contractor."
    assert _reason(text) == "the audit module saves them a contractor"


def test_a_justification_line_anywhere_in_a_decision_note_is_the_reason() -> None:
    text = (
        "Discount desk - Lumen Foods\nApproved terms:\n- Plus @ $19 per seat, 300 seats\n"
        "- onboarding fee waived\nTotal year one: $68,400\n\n"
        "Justification: a reference logo in frozen foods and a two-year commitment."
    )
    assert _reason(text) == "a reference logo in frozen foods and a two-year commitment"
    # no decision, no reason
    assert _reason("Draft terms below.\n\nJustification: a reference logo in frozen foods.") is None


def test_a_rollout_announced_with_will_is_a_decision() -> None:
    text = "The warehouse pilot went better than the office one, so we'll roll the app out to all sites."
    assert _reason(text) == "The warehouse pilot went better than the office one"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a dash after "going ahead with <what>" opens the reason; only a colon after "agreed
        # with <someone>" opens the decision's content
        (
            "We're going ahead with the Leeds rollout — their planners can't keep building rosters by hand.",
            "their planners can't keep building rosters by hand",
        ),
        # a reason after a dash may open with a common noun as its subject
        (
            "We're moving the check-in to quarterly — adoption is high and support tickets have dried up.",
            "adoption is high and support tickets have dried up",
        ),
        # "must move" is a decision taken, as "need to move" is
        (
            "We must move the Leeds kickoff to May 4 because the depot is closed for inventory that week.",
            "the depot is closed for inventory that week",
        ),
    ],
)
def test_a_reason_after_a_dash_or_a_necessity_taken_as_a_decision(text: str, expected: str) -> None:
    assert _reason(text) == expected


def test_a_colon_after_agreed_with_someone_still_opens_the_content() -> None:
    assert _reason("Agreed with Omar: Hooper Ltd drops from 80 to 60 seats next month.") is None
    assert _reason("Agreed with Omar - the board has cut every vendor budget by a tenth.") is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the next sentence states what has happened, or what someone wants, with no connective
        (
            "We're moving the Leeds team onto the hosted plan. Running our own server has cost us "
            "three outages this quarter.",
            "Running our own server has cost us three outages this quarter",
        ),
        (
            "We've decided to bill both regions through one contract. Procurement wants a single "
            "renewal date and it saves Omar a second approval.",
            "Procurement wants a single renewal date and it saves Omar a second approval",
        ),
        (
            "Halden opted for the Basic tier. Their IT team hasn't finished the SSO review yet.",
            "Their IT team hasn't finished the SSO review yet",
        ),
    ],
)
def test_a_bare_next_sentence_of_what_has_happened_or_is_wanted_is_the_reason(
    text: str, expected: str
) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Go/no-go with Priya. Result: no-go for the March date. The data export is still failing.",
            "The data export is still failing",
        ),
        (
            "I said no to the 20% discount because it breaks our partner pricing.",
            "it breaks our partner pricing",
        ),
        (
            "- Decision: Keiko is moving the support team onto Tickets in May. She wants one queue for both "
            "regions.",
            "She wants one queue for both regions",
        ),
        (
            "We're keeping the two contractors on, they were the only ones who knew the old system.",
            "they were the only ones who knew the old system",
        ),
        (
            "Asked about the sandbox workspace; decided to close it, it's only confusing the new hires.",
            "it's only confusing the new hires",
        ),
    ],
)
def test_decisions_worded_as_a_verdict_a_refusal_a_label_or_a_keep(text: str, expected: str) -> None:
    assert _reason(text) == expected


def test_a_comma_splice_after_no_decision_gives_no_reason() -> None:
    assert _reason("The demo went well, they liked the dashboards.") is None
    assert _reason("Status call with Rhea. All of them have accented names in the export.") is None


def test_an_option_taken_off_the_table_is_a_decision_and_its_dash_gives_why() -> None:
    text = "The Samsara connector is off the table — their trucks get Geotab units when the leases end."
    assert _reason(text) == "their trucks get Geotab units when the leases end"


def test_as_after_a_verb_of_taking_a_role_names_the_role_not_a_cause() -> None:
    text = "I've accepted a role elsewhere. Omar joins as VP Operations on May 1 and he'll own the renewal."
    assert _reason(text) is None
    assert _reason("They renewed early, as the new budget year opens in January.") == (
        "the new budget year opens in January"
    )


@pytest.mark.parametrize(
    "sentence",
    [
        'Importing the payroll file: 212 of 640 rows rejected with "invalid character".',
        "Subject: customs declarations rejected - E0004",
        "Every filing comes back rejected with E0004.",
        "Ops confirmed 14 EDAs accepted since the fix.",
        "I've accepted a role at another company and my last day is June 26.",
        "Payroll picked up the extra hour.",
        "Then Tomasz dropped the news: he's leaving at the end of August.",
    ],
)
def test_what_a_system_takes_in_or_turns_away_is_no_decision(sentence: str) -> None:
    assert decided(sentence) is None


@pytest.mark.parametrize(
    "sentence",
    [
        "Soylent accepted our quote: $38 per user.",
        "The customer rejected the three-year option.",
        "Kenji picked the annual plan.",
        "Lena accepted by phone.",
        "Northwind dropped the Lisbon expansion.",
        "They shelved the rollout until legal signs off.",
    ],
)
def test_a_person_accepting_rejecting_or_picking_decides(sentence: str) -> None:
    assert decided(sentence) is not None


@pytest.mark.parametrize(
    "sentence",
    [
        "The works council hasn't approved the rollout yet.",
        "We haven't decided on the renewal.",
        "Ana didn't agree.",
    ],
)
def test_a_decision_verb_after_a_negated_auxiliary_is_no_decision_taken(sentence: str) -> None:
    assert decided(sentence) is None


def test_a_constraint_with_a_verb_not_taken_after_a_decision_is_its_reason() -> None:
    text = (
        "We're pausing the rollout for the Dublin team. The works council hasn't approved call "
        "recording yet, and Legal doesn't want Dublin treated differently."
    )
    assert _reason(text) == (
        "The works council hasn't approved call recording yet, and Legal doesn't want Dublin treated "
        "differently"
    )
    # a decision taken in the next sentence is that sentence's own, not a reason
    assert (
        _reason("We're pausing the rollout for the Dublin team. The works council approved it last week.")
        is None
    )


def test_a_verdict_opening_a_clause_is_a_decision_with_its_reason() -> None:
    text = "Legal came back. Yes to the liability cap; no to net-60, as finance won't carry that much credit."
    assert _reason(text) == "finance won't carry that much credit"
    assert decided("No to the three-year term.") is not None
    assert decided("There is no to-do list yet.") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # what follows "so" is asked for, not why the move was made
        (
            "Halden demo moved to 3pm Thursday (was 10). "
            "Their CFO is joining so pls have the cash view ready.",
            None,
        ),
        # the factor that decided, and the colon that goes on to explain it
        (
            "We're going with the three-year plan. Single sign-on was the deciding factor: Omar's team "
            "loses a morning every week to manual account changes.",
            "Single sign-on was the deciding factor: Omar's team loses a morning every week to manual "
            "account changes",
        ),
    ],
)
def test_a_request_after_so_is_no_reason_and_a_deciding_factor_keeps_its_explanation(
    text: str, expected: str | None
) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a counter-offer refused is a decision, its reason worded many ways
        (
            "Omar countered at $28 a seat. We said no since $28 is under our two-year floor.",
            "$28 is under our two-year floor",
        ),
        (
            "Omar asked whether we'd do $28 for the extra seats. I told him no. The reason is that $31 is "
            "already the multi-year rate.",
            "$31 is already the multi-year rate",
        ),
        ("Omar wants $30. Told him no – $34 is already 10% under list.", "$34 is already 10% under list"),
        ("Halden turned it down because their budget closes in March.", "their budget closes in March"),
    ],
)
def test_a_refusal_is_a_decision_with_its_reason(text: str, expected: str) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the terms agreed after a colon are what was agreed, not why
        (
            "Deal terms agreed with Omar logged for Halden (from call 4/24): Growth plan, $48/seat/month, "
            "1-year term, setup fee waived.",
            None,
        ),
        # a dash between two dates is a range, not a reason's opening
        (
            "- Omar agreed to renew: 2-year term Jan 1, 2027 - Dec 31, 2028, "
            "90 Growth seats, $41/seat/month\n"
            "- Petra sends the order form Monday",
            None,
        ),
    ],
)
def test_terms_after_a_colon_and_a_date_range_s_dash_are_no_reason(text: str, expected: str | None) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a decision taken back, by words other than the usual verbs
        (
            "Ops reversed the freeze on new hires because two warehouses opened early.",
            "two warehouses opened early",
        ),
        (
            "Gemma reversed herself after the auditors flagged the manual exports.",
            "the auditors flagged the manual exports",
        ),
        (
            "We've changed our minds on the API add-on: the partner portal can't push orders without it.",
            "the partner portal can't push orders without it",
        ),
        (
            "The board has resolved to renew for two years, as the rollout met every milestone.",
            "the rollout met every milestone",
        ),
        ("Priya's call, as the annual plan saves them 8%.", "the annual plan saves them 8%"),
        ("Tom OK'd the Pro tier since their usage doubled in Q2.", "their usage doubled in Q2"),
        (
            "went w/ Ohio first since Tony's team can mentor the other stores",
            "Tony's team can mentor the other stores",
        ),
        # a dash after a figure opens a reason, not a range
        (
            "They moved to monthly billing from Q3 — cash is tight after the merger.",
            "cash is tight after the merger",
        ),
        # a verdict after a comma, and a reason labelled inline
        (
            "Kim decided not to add the chat module, too much overlap with Slack.",
            "too much overlap with Slack",
        ),
        (
            "REVERSED: the kiosk mode goes live at all sites. reason: tablets at the door cut queues.",
            "tablets at the door cut queues",
        ),
    ],
)
def test_decisions_and_reasons_in_more_words(text: str, expected: str) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("At the end we agreed 61 EUR per technician, given they commit to a 24 months term.",
         "they commit to a 24 months term"),
        ("Go-live moves from 01.06. to 29.06.2026. Reason: the SAP interface is not ready.",
         "the SAP interface is not ready"),
        ("Marcus decided to pilot at 2 branches before the other 9 - his officers never used a cloud LOS.",
         "his officers never used a cloud LOS"),
        ("Pinecrest repriced: $86 per seat from 5/1, as at 45 seats they're below the 50-seat tier.",
         "at 45 seats they're below the 50-seat tier"),
        ("Dana is scrapping the 2-branch pilot. Her reasoning: the incumbent contract ends in September.",
         "the incumbent contract ends in September"),
        # a sentence naming the driver, wherever it stands
        ("Deal desk approved $82 per seat. Can't do 80. The driver is the 3-year commit.",
         "the 3-year commit"),
    ],
)  # fmt: skip
def test_reasons_after_given_a_dash_or_named_as_such(text: str, expected: str) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "We agreed 61 EUR per technician. Invoicing rhythm is still open.",
        "OGC has agreed to the 3x cap. Your edits to the IP schedule are fine.",
        "The agreement is signed by both sides. The commencement date is 1 July 2026, for two years.",
    ],
)
def test_what_is_still_open_accepted_or_the_terms_is_no_reason(text: str) -> None:
    assert _reason(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a status report's decisions line, a change of plan, a negotiation's outcome
        ("Decisions: older history stays in the old system. Reason: inspections only look back a year.",
         "inspections only look back a year"),
        ("Change of plan on the old records: please migrate them after all, because an audit is coming.",
         "an audit is coming"),
        ("call w/ renee. landed at $31/seat for all seats, since they're prepaying the full year.",
         "they're prepaying the full year"),
        # notes typed fast
        ("they're starting w/ just the 4 columbus clinics, since those offices have the worst no-shows.",
         "those offices have the worst no-shows"),
        ("training done. pushing westerville's sessions to mon 3/30 b/c their office mgr is out on leave.",
         "their office mgr is out on leave"),
    ],
)  # fmt: skip
def test_decisions_in_status_reports_and_fast_notes(text: str, expected: str) -> None:
    assert _reason(text) == expected


def test_an_errand_after_a_decision_is_no_reason() -> None:
    assert (
        _reason("Confirming we're going ahead with the other 10 clinics. Tom's team will send the PO.")
        is None
    )


def test_a_reason_in_words_beats_a_sentence_that_only_follows_the_decision() -> None:
    text = (
        "Lee approved the bundle with Pro at $30 per seat and onboarding waived. "
        "Hardware stays at list, the supplier won't budge. "
        "We're doing this so the total stays under their $20k cap."
    )
    assert _reason(text) == "the total stays under their $20k cap"


@pytest.mark.parametrize(
    "text",
    [
        # an errand agreed is a next step, not a decision with a reason
        "Agreed that we send the security pack by Friday so Omar can take it to the board on the 9th.",
        "Agreed with Lena: her team to install the agent tomorrow, so we can re-run the sync.",
        # a closing pleasantry is no reason
        "From July the renewal moves to 30 June. I trust this matches, but do let me know otherwise.",
        # a day's call is a meeting, not a person's decision
        "Notes from today's call: pricing still open, as Finance is out.",
    ],
)
def test_no_rationale_for_an_errand_agreed_a_pleasantry_or_a_days_call(text: str) -> None:
    assert _reason(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Go-live moved to 13 April. Reason given by Priya: the milestone sync is still unproven.",
         "the milestone sync is still unproven"),
        ('Denise confirmed they will renew for 3 years. Reason per Denise: "the rollout took two weeks."',
         "the rollout took two weeks"),
        ("They will renew for two years, reason from Olga: the EU region removed their blocker.",
         "the EU region removed their blocker"),
    ],
)  # fmt: skip
def test_a_reason_labelled_with_whose_reason_it_is(text: str, expected: str) -> None:
    assert _reason(text) == expected


@pytest.mark.parametrize(
    ("text", "taken"),
    [
        ("We'll take the early renewal - new term starts October 1st.", True),
        ("On the add-on you quoted at £6 per user - we're going to pass for now.", True),
        ("Since the prepay fits our budget better, we'll take the $58 on annual billing.", True),
        ("I'll take the minutes and send them round.", False),
        ("We'll take the weekend to think about it.", False),
    ],
)
def test_an_offer_taken_or_passed_on_is_a_decision(text: str, taken: bool) -> None:
    assert (decided(text) is not None) is taken


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "We'll hold off on the analytics add-on until next year; our stores are still short of staff.",
            "our stores are still short of staff",
        ),
        (
            "One more point: we choose quarterly billing, as our budget for the year is already approved.",
            "our budget for the year is already approved",
        ),
        (
            "Big news: the new COO reverses the decision from April, the Leeds site joins this year. "
            "Reason from her: the old system there fails its audit in October.",
            "the old system there fails its audit in October",
        ),
    ],
)
def test_waiting_choosing_in_the_present_and_a_reason_named_by_a_pronoun(text: str, expected: str) -> None:
    assert _reason(text) == expected


def test_a_decision_reversed_then_restated_after_a_colon_has_no_reason_there() -> None:
    text = "Ana, we're reversing the decision on Lisbon: Lisbon joins the rollout after all. Raj approved."
    assert _reason(text) != "Lisbon joins the rollout after all"


@pytest.mark.parametrize(
    "text",
    [
        "Subject: Approved expenses missing from the export\n\nSince the upgrade, expenses approved by "
        "managers do not show in the CSV export. Reproduced on two laptops.",
        "Release 7.2 went out on Monday. Since then, approved refunds reach the ledger within a minute. "
        "OK to close.",
        "Approved timesheets stuck in review. After go-live, timesheets approved by leads stay in the "
        "review queue.",
    ],
)
def test_a_time_opening_a_sentence_before_its_comma_is_no_reason(text: str) -> None:
    assert _reason(text) is None


def test_a_cause_opening_the_next_sentence_before_its_comma_is_still_the_reason() -> None:
    text = "Acme approved the move to quarterly billing. Since their CFO banned prepayments, annual is out."
    assert _reason(text) is not None and _reason(text).startswith("their CFO banned prepayments")


def test_a_requirement_stated_with_rather_than_is_no_decision_taken() -> None:
    assert (
        decided(
            "Two conditions: we need invoicing in CHF rather than in EUR, our treasury hedges once a year."
        )
        is None
    )
    assert decided("They require a named CSM rather than the pooled team.") is None
    # a decision in a clause of its own, or a necessity to change a plan, still decides
    assert decided("They need SSO, so they went with Enterprise rather than Pro.") is not None
    assert decided("We need to move the go-live from May 4 to May 11.") is not None


@pytest.mark.parametrize(
    "text",
    [
        "They approved the rollout as soon as the audit closed.",
        "We moved the go-live to June as long as the SSO work is done.",
        "Acme signed the order form as early as the board allowed.",
    ],
)
def test_as_soon_as_and_as_long_as_are_a_time_or_a_condition_not_a_reason(text: str) -> None:
    assert _reason(text) is None


def test_as_alone_still_gives_the_reason() -> None:
    assert _reason("They renewed for two years as the migration removed their blocker.") == (
        "the migration removed their blocker"
    )
