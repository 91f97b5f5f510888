"""categories: the topic the cue words point to; chat and subject lines are noise."""

from __future__ import annotations

import pytest

from amem.llm.offline.categories import category, chat


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ticket #4411: the scheduled CSV export times out; managers get no report.", "support issue"),
        ("Globex pays $42 per seat per month, and the discount holds.", "pricing"),
        ("Initech's renewal is due June 30; they expect to renew for two years.", "renewal"),
        ("Globex signed the order form for 120 seats.", "contract"),
        ("QBR with Globex: Hank joined for twenty minutes; billing came up.", "meeting"),  # a meeting's note
        ("Admin training for the workspace owners is booked for tomorrow.", "onboarding"),
        ("Could your product email the usage digest as a PDF every Friday?", "feature request"),
        ("Ravi decided to postpone the Hamburg rollout to Q2.", "decision"),
        ("Lunch with Peter: he is getting married in September.", "personal"),
    ],
)
def test_category_follows_the_sales_and_success_vocabulary(text: str, expected: str) -> None:
    assert category(text, text.split(".")[0]) == expected


@pytest.mark.parametrize(
    "text",
    ["thanks Leo, got it", "Jonas, thanks, got it, see you in December.", "great news!! drinks on Priya"],
)
def test_chat_has_no_category(text: str) -> None:
    assert chat(text) and category(text) is None


def test_a_subject_line_alone_is_noise() -> None:
    assert category("Subject: renewal paperwork") is None


def test_the_words_of_the_reason_do_not_decide_the_topic() -> None:
    text = "Due to the Benelux slowness and the outages, Globex chose the annual plan."
    assert category(text, text) == "support issue"
    assert category(text, text, ignore=(7, 43)) == "pricing"
    # a rollout postponed is a decision, whatever its reason's words
    moved = "Due to the Benelux slowness, Globex postponed the rollout to Antwerp."
    assert category(moved, moved) == "decision"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a number of licences held is a contract fact, however it is written
        ("Licensed seats provisioned for Umbrella: 40 (Oslo 25 / Bergen 15).", "contract"),
        ("Umbrella approved 10 more seats for Bergen, same rate.", "contract"),
        # a wish for the product, and time away, in everyday words
        (
            "Our planners would really like it if exports ran hourly; we'd love that in the next release.",
            "feature request",
        ),
        ("FYI Kim starts parental leave in May; Ola covers questions while she's away.", "personal"),
    ],
)
def test_category_from_general_vocabulary_of_each_topic(text: str, expected: str) -> None:
    assert category(text, text.split(".")[0]) == expected


@pytest.mark.parametrize(
    ("text", "noise"),
    [
        ("Thanks, got it - we'll fix the CSV on our side.", True),  # a short acknowledgement
        ("Ok, noted, talk soon", True),
        ("Thanks, we signed the order form today.", False),  # it also states a decision
        ("Thanks! Seat count goes to 40.", False),  # or a figure
    ],
)
def test_a_short_acknowledgement_is_noise_unless_it_states_a_fact(text: str, noise: bool) -> None:
    assert chat(text) is noise


def test_a_ticket_reference_points_to_a_support_issue() -> None:
    text = "Re #40977: the reply URL was missing the tenant suffix. Deepa confirmed it works. Resolved."
    assert category(text, text.split(".")[0]) == "support issue"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a topic word naming a meeting ("the renewal review") counts for the meeting, not the topic
        ("Umbrella moved the renewal review to next Wednesday after the offsite ran long.", "meeting"),
        ("Recap of the onboarding call: Oslo goes first, Bergen follows.", "meeting"),
        ("Contract walkthrough with Acme Legal booked for Thursday at 3pm.", "meeting"),
    ],
)
def test_a_meeting_named_by_its_topic(text: str, expected: str) -> None:
    assert category(text, text.split(".")[0]) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "PO 4500-77 issued for the renewal: 30 seats at $50/seat/month, countersigned by legal.",
            "contract",
        ),
        ("Stakeholders: Kim Lee - champion and signatory for tools under $100k.", "contract"),
        ("Security deep-dive with their CISO booked in two weeks.", "meeting"),
        # the seats a price is for are its quantity, not a contract's count
        ("Agreed with Acme procurement: $49 per seat per month for the 135 seats.", "pricing"),
        ("I'll send the final proposal by Friday, with a volume tier for 150 seats.", "pricing"),
        ("Acme signed the order form for 150 seats.", "contract"),
        ("quick one: is there an API to pull results straight into an experiment?", "feature request"),
        # an electronic signature is a product feature, not a contract being signed
        ("Go-live done today: both labs on the platform, e-signature workflow validated.", "onboarding"),
    ],
)
def test_contract_meeting_and_request_vocabulary(text: str, expected: str) -> None:
    assert category(text, text.split(".")[0]) == expected


def test_an_input_in_the_form_of_a_ticket_is_a_support_issue_whatever_the_product_s_words() -> None:
    # a billing product's tickets are full of prices and invoices; the form says what it reports
    text = (
        "Ticket #QX-5521 | Reporter: Ada Lind | Subject: Credit note totals show $ instead of GBP | "
        "Steps: open invoice 7781 > print | Expected: £1,200.00 | Actual: $1,200.00 on every invoice"
    )
    assert category(text) == "support issue"
    assert category("Re: #AB-3310 the payment page is fine again after the deploy, thanks") == "support issue"


@pytest.mark.parametrize(
    ("text", "lead", "expected"),
    [
        (
            "Update: the data load is late, so we're pushing the Madrid rollout to 14 September.",
            "Update: the data load is late, so we're pushing the Madrid rollout to 14 September.",
            "decision",
        ),
        (
            "Plant go-live moved from June 2 to June 30: the migration needs two more weeks.",
            "Plant go-live moved from June 2 to June 30: the migration needs two more weeks.",
            "decision",
        ),
        # a choice of setup stays onboarding; a meeting moved stays a meeting
        (
            "They opted for the hosted connector over the on-site one for the rollout.",
            "They opted for the hosted connector over the on-site one for the rollout.",
            "onboarding",
        ),
        ("We moved the onboarding call to Thursday.", "We moved the onboarding call to Thursday.", "meeting"),
    ],
)
def test_a_rollout_postponed_or_a_go_live_moved_is_a_decision(text: str, lead: str, expected: str) -> None:
    assert category(text, lead) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Rollout kickoff with the three depot leads. Weekly status calls on Mondays until go-live.",
        "Implementation workshop #2 with their admins. SSO is configured; the data import is next.",
        "Training session planning with Ana. Sessions run each Friday in May for all 40 agents.",
    ],
)
def test_a_meeting_named_by_an_onboarding_topic_is_an_onboarding_step(text: str) -> None:
    assert category(text, text.split(". ")[0]) == "onboarding"


def test_a_go_live_stated_as_live_is_onboarding() -> None:
    text = "The Lyon depot live as of Monday, all four depots now on the new system."
    assert category(text) == "onboarding"


@pytest.mark.parametrize(
    "text",
    [
        "Amendment #3 executed by their COO: 55 Pro seats at $29/seat/mo from July, priced per seat.",
        "PO 7781-22 issued for the renewal: 70 seats at $31/seat/month, billed annually, quote QT-9.",
    ],
)
def test_a_contract_document_executed_is_a_contract_note_whatever_prices_it_lists(text: str) -> None:
    assert category(text) == "contract"


def test_procurement_as_a_department_in_a_title_or_a_role_is_no_contract() -> None:
    card = "New contact: Rui Sousa, Senior Procurement Manager. Prefers email."
    assert category(card) != "contract"
    roles = "Project roles: sponsor = Ana Lima; admin = Lee Chan; procurement = Rui Sousa."
    assert category(roles) != "contract"
    assert category("Procurement sent back the redlines on the liability clause.") == "contract"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hi Ana, could we have the final commercial proposal by Friday? Our CFO decides in May.", "pricing"),
        (
            "Two requests from our managers: a Polish transcript option and a CSV export of scorecards.",
            "feature request",
        ),
        (
            "Ran the Porto half marathon on Sunday, legs still sore. Will look at the numbers next week.",
            "personal",
        ),
    ],
)
def test_general_words_of_pricing_requests_and_personal_life(text: str, expected: str) -> None:
    assert category(text) == expected


def test_call_as_a_modifier_of_the_product_s_object_is_no_meeting() -> None:
    text = "We are pausing call recording for the Lyon reps until the council approves call transcripts."
    assert category(text) != "meeting"


def test_seats_said_to_lie_idle_are_no_contract_count() -> None:
    assert category("The pause takes 30 seats out of use for now, nothing else changes.") != "contract"


def test_a_fault_confirmed_fixed_is_a_support_issue_unless_a_decision_names_the_topic() -> None:
    assert category("changed the invoice template like Jo said, the € sign shows correctly now") == (
        "support issue"
    )
    text = "Deep-dive with IT. One tense moment, resolved. Outcome: they chose the EU region."
    assert category(text, "Outcome: they chose the EU region.") != "support issue"


@pytest.mark.parametrize(
    "text",
    [
        "Subject: Automatic reply: renewal paperwork\n\nThank you for your message. I am out of the office "
        "until Tuesday, May 12 and will have no access to email. For contract questions write to Ivo Berg.",
        "Auto-reply: I'm at the Rotterdam site until 14 June. Urgent order form issues: call the front desk.",
        "Thank you for your email. I am out of the office until Monday with limited access to the "
        "pricing tool.",
    ],
)
def test_an_automatic_reply_is_noise_and_dates_nothing(text: str) -> None:
    assert category(text) is None
    assert chat(text)


@pytest.mark.parametrize(
    "text",
    [
        "Signed copy attached, thanks. We can start on the 1st as planned.",
        "Their counsel came back on the MSA.\n- Liability cap: 2x annual fees.\n- Payment terms: net 45.",
        "Subscription active: Business plan, 60 support seats. Invoice INV-204 for $9,000 issued.",
        "Kept to a 24-month term at the price we had; termination for convenience in the first 60 days.",
    ],
)
def test_a_contract_s_own_terms_and_signed_copy_make_it_a_contract_note(text: str) -> None:
    assert category(text, text.split(".")[0]) == "contract"


@pytest.mark.parametrize(
    "text",
    [
        "Final proposal attached: Growth plan, 80 seats at $54 per seat per month, 12-month term, net-60.",
        "Proposal sent to Ines: move the whole team to Enterprise at $61 a seat and add the 40 CS seats.",
    ],
)
def test_the_terms_and_seats_of_a_price_offered_stay_pricing(text: str) -> None:
    assert category(text, text.split(".")[0]) == "pricing"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Kickoff - Halden Foods (remote). Attendees: Rhea, Omar. Go-live dates confirmed for both sites.",
            "onboarding",
        ),
        ("Trial started today for the finance team, 30 days, 12 users.", "onboarding"),
        ("Project roles (Halden): exec sponsor = Rhea Mohan; admin = Omar.", "onboarding"),
        ("FR-204 logged for Halden: export of the audit log to S3. Requester: Omar.", "feature request"),
        ("Release 7.2 shipped with the S3 audit export; Omar switched it on today.", "feature request"),
        ("Please take the 5 tablets at the Leeds site off the lease from March 1.", "contract"),
        ("Maren, we will not be going ahead with SOW-22 after all.", "contract"),
        ("Go-live date changed: 2026-06-15 -> 2026-07-06 (customer request).", "decision"),
    ],
)
def test_the_vocabulary_of_a_kickoff_a_feature_request_a_lease_and_a_moved_go_live(
    text: str, expected: str
) -> None:
    assert category(text, text.split(".")[0]) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a helpdesk's update opens with the ticket's key, whatever the product's words are
        (
            "QX-55120: that was it, the Okta app now logs everyone in on both tenants. Closing.",
            "support issue",
        ),
        (
            "HD-7731 — Closing this out. The invoice template ships with the fixed tax field today.",
            "support issue",
        ),
        # a feature request's key opens a request record, whatever its words (seats, prices)
        ("FR-310 logged for Halden: a weekly digest of overdue tasks by region.", "feature request"),
        (
            "FR-2291 | Budget alerts | Halden (prospect)\nAsk: alert the lead when a client's hours pass "
            "80% of the $4,000 monthly retainer.\nDeal context: ~90 seat opportunity.",
            "feature request",
        ),
        # a buyer's security review of the vendor is a step of the contract
        (
            "Subject: Halden - vendor security questionnaire\n\nOmar, attached our answers and the SOC 2 "
            "Type II report; the pen test summary follows under NDA.",
            "contract",
        ),
    ],
)
def test_a_ticket_key_opens_a_support_update_and_a_security_review_is_procurement(
    text: str, expected: str
) -> None:
    assert category(text, text.split("\n")[0].split(". ")[0]) == expected


def test_a_go_live_moved_is_a_decision_whatever_the_other_bullets_say() -> None:
    text = (
        "Halden weekly 5/12\n- SSO working on the workaround, 40 users in\n"
        "- import: 11 of 12 months loaded, one file has broken encoding\n"
        "- Go-live: their pitches land late May. So: the go-live moves from June 1 to June 15. Agreed."
    )
    lead = "So: the go-live moves from June 1 to June 15."
    assert category(text, lead) == "decision"


@pytest.mark.parametrize(
    "text",
    [
        "Contoso will not expand to the Paris office this year due to a hiring freeze.",
        "They shelved the warehouse project after the merger.",
    ],
)
def test_a_decision_on_no_topic_of_its_own_is_a_decision_not_noise(text: str) -> None:
    assert category(text) == "decision"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a capability asked after, however it is worded
        ("Omar q: any API for raw telematics data? nothing promised, checking w/ PM.", "feature request"),
        (
            "The tax team has asked whether the tool could produce returns in French and English.",
            "feature request",
        ),
        ("The trainees would very much welcome a template for expert reports.", "feature request"),
        (
            "Prep notes: ask #1 is depot geofences, ask #2 a nightly export. Priya logs both as FRs.",
            "feature request",
        ),
        # a price per user and a bill sent are pricing, not a contract
        (
            "We suggest the Professional plan at £65 per user per month, invoiced quarterly in advance.",
            "pricing",
        ),
        # seats in use are a usage figure, not seats under contract
        ("June came in at 498k build minutes across 160 active seats; builds are faster.", None),
    ],
)
def test_requests_prices_and_usage_in_more_words(text: str, expected: str | None) -> None:
    assert category(text, text.split(".")[0]) == expected


def test_an_automated_message_is_noise() -> None:
    text = "This is an automated message. Your response to RFQ-14 was received at 4:58pm on 12/2/26."
    assert chat(text) and category(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "We go with quarterly invoicing, please put it like this into the order form.",
        "Starting July 1 we're moving this subscription to annual prepay. Please adjust the invoicing.",
    ],
)
def test_a_billing_cadence_chosen_is_pricing(text: str) -> None:
    assert category(text, text.split(".")[0]) == "pricing"
