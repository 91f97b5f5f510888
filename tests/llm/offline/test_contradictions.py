"""contradictions: the same kind of fact stated otherwise, each kind on its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from amem.llm.offline.contradictions import (
    contradiction,
    facts,
    fault_reported,
    fix_confirmed,
    holds,
    kinds,
    made_untrue,
    main_text,
    retired_fault,
    stated_kinds,
    tickets,
)


def _contradicts(new_text: str, old_text: str) -> list[str]:
    new, old = facts(new_text), facts(old_text)
    found = []
    for kind in stated_kinds(new):
        if not holds(new, old, old_text, kind):
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
        # two cadences sharing one noun: the first is left, the second taken
        (
            "Globex pays $40 per seat, billed annually.",
            "Omar: they're switching from annual to quarterly billing, finance wants smaller invoices.",
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


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        # a per-seat price in any currency notation or licence unit is one slot
        ("Wayne Corp pays 40 USD per user per month.", "Wayne Corp's price is now 44 USD per user.", "price"),
        ("Wayne Corp pays €30/user/month.", "The per-seat price went up to €34 as of today.", "price"),
        ("Wayne Corp pays $20 a licence.", "From today Wayne Corp pays $25 per seat.", "price"),
        # seat counts in any unit, and a count stated after its label
        ("Wayne Corp is on 200 licences.", "Wayne Corp now has 240 users.", "count"),
        ("Seat count: 200.", "Wayne Corp is cutting back to 150 seats in January.", "count"),
        # a plan left for another, whatever it is called
        (
            "Wayne Corp signed up for the Pro plan.",
            "Wayne Corp is moving from the Pro plan to the Enterprise plan.",
            "plan",
        ),
        ("Wayne Corp is on the Silver package.", "Wayne Corp upgraded to the Gold package.", "plan"),
        (
            "Wayne Corp is billed annually.",
            "Wayne Corp wants quarterly invoicing instead of annual billing.",
            "plan",
        ),
        # the date of one event, named differently
        ("Go-live is planned for June 3.", "Go-live slipped to June 17.", "date"),
        ("Wayne Corp renews on October 1.", "The contract end date is now November 30.", "date"),
        # a person replaced in a role, or leaving it
        (
            "Jane Doe is our champion at Wayne.",
            "John Smith replaced Jane Doe as our main contact.",
            "role:contact",
        ),
        (
            "Ann Lee owns the budget at Wayne.",
            "Ann Lee has resigned; her successor starts in May.",
            "role:decider",
        ),
    ],
)
def test_a_changed_slot_is_a_contradiction_however_it_is_worded(old: str, new: str, kind: str) -> None:
    assert kind in _contradicts(new, old)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a bound or a wish is not the value that holds
        ("Wayne Corp pays $55 per seat.", "Keeping the per-seat price under $50 is what they need."),
        ("Wayne Corp signed for 110 seats.", "They will cap the rollout at 100 seats."),
        (
            "Wayne Corp signed for 110 seats.",
            "Because Wayne Corp is going above 100 seats, they move up a tier.",
        ),
        # people using the product are not the licences bought
        ("Wayne Corp signed for 120 seats.", "Good progress: 80 users active so far."),
        ("Wayne Corp signed for 120 seats.", "Check-in: 95 of 120 seats active every week."),
        # an amount that is not per seat: a total, a credit
        ("Wayne Corp pays $40 per seat.", "We issued a $400 credit to Wayne Corp today."),
        # the value it moves from is the old one, not a new one
        ("Wayne Corp pays $40 per seat.", "The price went from $40 to $40 per seat, unchanged."),
    ],
)
def test_no_contradiction_from_bounds_usage_totals_or_the_old_value(old: str, new: str) -> None:
    assert _contradicts(new, old) == []


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        # a count written as its change, or after a label
        ("Acme signed for 85 seats.", "Acme approved 25 more seats for Berlin (85 -> 110).", "count"),
        ("Licensed seats provisioned for Acme: 85.", "Acme now needs 110 seats.", "count"),
        # a decision left open, then taken
        (
            "Their board meets in March to decide on the multi-year deal.",
            "The board approved the three-year deal since it keeps the price flat.",
            "resolved",
        ),
    ],
)
def test_counts_as_changes_and_open_decisions_taken(old: str, new: str, kind: str) -> None:
    assert kind in _contradicts(new, old)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a catalogue price is not what the customer pays
        ("The Pro tier lists at $45/seat/month.", "Agreed: Acme pays $41 per seat per month."),
        # a thing mentioned in passing is nothing to reverse
        (
            "Lots of questions about tablets and handheld scanners, parked for later.",
            "We've pulled the plug on the handheld scanner add-on.",
        ),
        # the go-live of another site, and a clause that moves something else
        (
            "Confirming go-live on Monday 6 July.",
            "We have decided to move the Berlin go-live to the end of Q3.",
        ),
        (
            "Renewal date set for Acme: 31 May 2027.",
            "Acme will drop to 100 seats at the 31 March renewal, as 10 users moved to shared logins.",
        ),
    ],
)
def test_no_contradiction_from_list_prices_mentions_or_another_event(old: str, new: str) -> None:
    assert _contradicts(new, old) == []


def test_one_event_s_date_does_not_hide_another_s() -> None:
    """Each event is its own slot: the newest note dating a review does not stand for the renewal."""
    new = facts("The renewal moves to January 31.")
    review = facts("Their steering committee meets in January.")
    renewal = facts("The renewal is due March 27.")
    assert "date:renewal" in stated_kinds(new)
    assert "date:renewal" not in kinds(review) and "date:renewal" in kinds(renewal)


def test_a_named_event_is_held_only_by_notes_naming_it() -> None:
    new_text = "We have decided to move the Berlin go-live to the end of Q3."
    other_site = "Confirming go-live on Monday 6 July."
    same_site = "Berlin go-live pencilled in for mid-August."
    new = facts(new_text)
    assert not holds(new, facts(other_site), other_site, "date:go-live")
    assert holds(new, facts(same_site), same_site, "date:go-live")


def test_a_move_that_names_the_old_date_is_held_by_the_note_stating_that_date() -> None:
    """ "From A to B" says which value it ends: a newer note giving the event another date (a
    co-term that was discussed, say) is not the one the move makes untrue."""
    new_text = "Call with the CFO: the renewal moves from March 1, 2027 to September 1, 2027."
    offered = "Co-term discussed with finance: the renewal lands on April 30, 2027."
    stated = "Renewal record created. Renewal date 2027-03-01, owner Priya."
    new = facts(new_text)
    assert not holds(new, facts(offered), offered, "date:renewal")
    assert holds(new, facts(stated), stated, "date:renewal")
    assert _contradicts(new_text, stated) == ["date"]
    # a move that does not name the date it leaves is held by any note dating the event
    plain = facts("The renewal moves to September 1, 2027.")
    assert holds(plain, facts(offered), offered, "date:renewal")


def test_moving_away_from_a_chosen_option_retires_the_choice() -> None:
    old = "Outcome: Umbrella chose the EU region (Frankfurt) for their tenant, owing to GDPR."
    new = "Umbrella is closing its Danish site, so we are moving the tenant from Frankfurt to Virginia."
    assert "left" in _contradicts(new, old)
    # a place only mentioned, not chosen, is not retired
    assert _contradicts(new, "Their CISO flew in from Frankfurt for the security review.") == []


def test_an_account_s_own_event_meets_notes_that_do_not_name_the_account() -> None:
    old = "For our records: the renewal falls on 1 June 2027."
    new = "Deal desk approved pulling Umbrella's renewal forward to 1 January 2027."
    assert "date" in _contradicts(new, old)


def test_a_value_only_in_a_secondary_clause_is_no_fact_to_contradict() -> None:
    """A commitment named in a reason clause of the old note is context: a newer note reversing
    it does not retire that note, whose main fact is something else."""
    old = "Agreed: all seats at the new rate, as the team doubles as design partner for the reporting add-on."
    new = "The customer will not renew the reporting add-on, since the team moved its reporting elsewhere."
    old_facts, new_facts = facts(old), facts(new)
    assert contradiction(new_facts, old_facts, old, "reversal") is None
    # the same commitment as the old note's main clause is reversed
    main = "The team will roll out the reporting add-on to every site."
    assert contradiction(new_facts, facts(main), main, "reversal") is not None


def test_main_text_drops_reasons_and_conditions_but_keeps_the_fact() -> None:
    text = "Hi Sam,\nBecause they grew, they move to the Business tier at $36 per seat, since it ended."
    assert main_text(text) == "they move to the Business tier at $36 per seat"


def _retires(old: str, new: str) -> list[str]:
    new_facts, old_facts = facts(new), facts(old)
    found = []
    for kind in stated_kinds(new_facts):
        if holds(new_facts, old_facts, old, kind):
            hit = contradiction(new_facts, old_facts, old, kind)
            if hit is not None:
                found.append(hit.kind)
    return found


@pytest.mark.parametrize(
    "new",
    [
        "Their sister company pays $55 per seat to a competitor, Dana told us.",  # another party's price
        "Before they joined us, they paid $60 per seat with their old vendor.",  # an old price elsewhere
        "Ticket: 12 users see a blank dashboard after the update.",  # people affected, not licences
        "Their admin deactivated 15 users who left the company.",
        "A renegotiation is planned for the autumn; today they pay $55 per seat.",  # none yet
    ],
)
def test_a_price_or_count_stated_without_a_change_or_a_settlement_retires_nothing(new: str) -> None:
    """A value is a new value of the account's slot only when the input says it changes or settles
    it; otherwise it may be another party's, another product's, or people rather than licences."""
    assert _retires("The customer signed for 120 seats at $40 per seat per month.", new) == []


@pytest.mark.parametrize(
    ("new", "kind"),
    [
        ("From March, the customer pays $44 per seat per month.", "price"),
        ("The customer is cutting back to 90 seats at renewal.", "count"),
        ("They added 30 seats, so they now have 150 seats.", "count"),
        ("Agreed on the call: 150 seats.", "count"),  # settled in the note
        # the value a negotiation ended on (the issue's $42, $55, then $49)
        ("The customer's price per seat is $49 after the renegotiation.", "price"),
        ("Procurement negotiated the seat price down to $37.", "price"),
    ],
)
def test_a_changed_or_settled_value_still_retires_the_old_one(new: str, kind: str) -> None:
    assert kind in _retires("The customer signed for 120 seats at $40 per seat per month.", new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a negation the sentence goes on to undo is a delay, not a reversal
        (
            "The customer will roll out the dashboards to all plants.",
            "They did not roll out the dashboards yesterday because of the storm, they will on Monday.",
        ),
        # a person moving is not the customer moving what it chose
        ("They chose to host their tenant in Frankfurt.", "Their CTO moved from Frankfurt to London."),
        # licences passing between teams leave the total as it was
        ("The customer signed for 120 seats.", "They moved 20 users from the Berlin team to the Paris team."),
    ],
)
def test_wordings_that_look_like_a_change_but_change_no_slot_retire_nothing(old: str, new: str) -> None:
    assert _retires(old, new) == []


def test_moving_what_was_chosen_away_from_it_still_retires_the_choice() -> None:
    old = "Outcome: the customer chose the EU region (Frankfurt) for their tenant."
    new = "We are moving our tenant from Frankfurt to your US region."
    assert _retires(old, new) == ["left"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the event's name modifies another noun: that thing is dated, not the event
        ("The customer renews on 1 October.", "Updated: the renewal quote was sent on 5 September."),
        ("The go-live is on 1 June.", "The launch party for their new product moved to 20 June."),
        ("The kickoff is on 3 March.", "We moved the kickoff notes to the shared drive on 4 March."),
        # a number per person or per session is no licence count
        ("The customer signed for 120 seats.", "Agreed: 3 trainers will run sessions for 40 users each."),
    ],
)
def test_an_event_named_as_a_modifier_or_a_count_per_head_retires_nothing(old: str, new: str) -> None:
    assert _retires(old, new) == []


def test_an_event_that_heads_its_phrase_still_moves() -> None:
    assert _retires("The customer renews on 1 October.", "The renewal moves to 1 December.") == ["date"]
    assert _retires("The go-live is on 1 June.", "We are pushing go-live back to 15 June.") == ["date"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # another product's plan
        ("They are on the Growth plan.", "Their marketing team moved to the Pro plan of their email tool."),
        # "now that ..." is a time clause: the cue in it changes nothing in the main clause
        ("They pay $40 per seat per month.", "Now that the discount ended, a rival charges $50 per user."),
        # a negation that only narrows the commitment
        (
            "They will roll out the mobile app to the warehouse.",
            "They will not roll out the mobile app to the office staff, only the warehouse.",
        ),
    ],
)
def test_another_products_plan_a_time_clause_cue_or_a_narrowing_retire_nothing(old: str, new: str) -> None:
    assert _retires(old, new) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # seats said to lie idle are part of the count bought, not a new count
        ("Hooper Ltd signed for 150 seats.", "The Leeds start is off, so 30 seats are idle for now."),
        ("Hooper Ltd signed for 150 seats.", "That leaves 30 seats unused until Leeds goes ahead."),
        # a date in an aside or one that dates a message is not the event's date
        (
            "Hooper Ltd will renew in March 2027.",
            "Opportunity moved to Commit: the renewal is in March 2027 (per the call notes of 3 Nov).",
        ),
    ],
)
def test_no_contradiction_from_idle_seats_or_a_date_that_dates_something_else(old: str, new: str) -> None:
    assert _contradicts(new, old) == []


def test_a_moved_event_date_still_retires_the_old_one() -> None:
    old, new = "Hooper Ltd will renew in March 2027.", "The renewal moved to May 2027 (their budget cycle)."
    assert _contradicts(new, old) == ["date"]


def test_a_count_with_a_plan_name_between_is_still_a_count() -> None:
    old = "Please find the countersigned order form for 120 Scale seats attached."
    new = "The signed amendment is attached: 160 seats on the Premium plan, effective May 1."
    assert "count" in _contradicts(new, old)


def test_taking_over_the_budget_hands_the_decision_to_someone_else() -> None:
    old = "For the record: Ana Ruiz owns the Hooper budget and signs off any renewal."
    new = "Big news: Omar Haddad joins as CFO next month and takes over the Hooper budget."
    assert _contradicts(new, old) == ["role:decider"]


def test_a_label_before_a_colon_does_not_hide_the_verb_that_moves_the_event() -> None:
    old = "Hooper Ltd will go live on July 1 with 120 seats."
    assert _contradicts("Update: the go-live moves to June 26.", old) == ["date"]


# -- a confirmed fix retires the fault report ------------------------------------------------------

_T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _pool(*texts: str) -> list[tuple[str, str, datetime]]:
    """Neighbours nearest first, each a day older than the one before it (n0 is the newest)."""
    return [(f"n{i}", text, _T0 - timedelta(days=i)) for i, text in enumerate(texts)]


_REPORT = "Ticket #3310 (Acme): invoice PDFs fail to render for the Lisbon office. Error: FONT_MISSING."
_UPDATE = "Ticket #3310: we reproduced it, the Lisbon template references a font that is not installed."


@pytest.mark.parametrize(
    "fix",
    [
        "Ticket #3310 resolved: the font ships with the renderer now; Ana confirmed Lisbon invoices render.",
        "#3310: confirmed fixed, Lisbon PDFs have rendered clean since Tuesday's release.",
        "Re #3310 - the new renderer went out today and Ana confirmed the invoices work again. Closing.",
        "Ticket #3310: fixed in yesterday's release, Lisbon invoices now render in seconds.",
    ],
)
def test_a_confirmed_fix_retires_the_note_that_opened_the_ticket(fix: str) -> None:
    # the nearest note of the ticket is a diagnosis; the report is the oldest note carrying its number
    found = retired_fault(fix, _pool(_UPDATE, "Acme renewed for two years.", _REPORT))
    assert found is not None
    note_id, why = found
    assert note_id == "n2" and "#3310" in why.reason and why.evidence in fix


@pytest.mark.parametrize(
    "not_fixed",
    [
        "Ticket #3310: the fix ships in next Tuesday's release.",
        "Ticket #3310: a permanent fix is planned for v2.4. Workaround: print from the desktop app.",
        "Ticket #3310: root cause found, the Lisbon template needs a font; Ana will install it tomorrow.",
        "Ticket #3310: we are investigating, not yet resolved.",
        "Ticket #3310: it should be fixed by Friday.",
        "Ticket #3310: is it fixed now?",
        "Ticket #3310: the Lisbon rendering fault is back, PDFs failed again yesterday.",
        "Ticket #3310: the fix was deployed on Monday.",
    ],
)
def test_a_planned_fix_a_workaround_a_diagnosis_or_a_regression_retires_nothing(not_fixed: str) -> None:
    assert retired_fault(not_fixed, _pool(_REPORT)) is None


def test_a_young_project_s_two_digit_ticket_key_pairs_the_fix_with_its_report() -> None:
    report = "Support ticket FAB-88: users in the Seoul office can't log in via SSO since Tuesday."
    fix = "FAB-88: root cause was an expired SAML certificate; rotated it and Priya confirmed logins work."
    other = "FAB-87: the export times out for users in the Seoul office, can't log in to retry."
    found = retired_fault(fix, _pool(other, report))
    assert found is not None and found[0] == "n1" and "FAB-88" in found[1].reason
    assert tickets("Top-10 accounts by usage, FAB-88 open, COVID-19 rules") == {"FAB-88", "COVID-19"}


def test_a_fix_of_another_ticket_leaves_a_report_in_the_same_words_alone() -> None:
    fix = "Ticket #3400 resolved: Lisbon invoice PDFs render again, Ana confirmed."
    assert retired_fault(fix, _pool(_REPORT)) is None


def test_without_a_ticket_the_fix_retires_the_nearest_report_of_the_same_fault() -> None:
    reports = _pool(
        "Acme's weekly usage digest is late again.",  # no fault word: not a report
        "The Okta sync fails for contractors every night.",  # a fault, other words
        "Acme says the invoice PDFs fail to render for the Lisbon office.",
        "Acme says invoice PDFs failed to render for Porto last year.",  # older, same words: not nearest
    )
    found = retired_fault("The Lisbon invoice PDF rendering is fixed, Ana says.", reports)
    assert found is not None and found[0] == "n2"


@pytest.mark.parametrize(
    "text",
    [
        # a confirmation that something works is no fix unless it says a fault is fixed
        "Ana confirmed that the Lisbon invoice PDFs render.",
        # a fix in too few of the report's words may be another fault's
        "The Lisbon login page is fixed.",
        # "fixed" of a price, "resolved to" of a decision
        "Acme signed a fixed fee for rendering the Lisbon invoice PDFs.",
    ],
)
def test_without_a_ticket_a_fix_in_other_words_or_no_fix_retires_nothing(text: str) -> None:
    report = "Acme says the invoice PDFs fail to render for the Lisbon office."
    assert retired_fault(text, _pool(report)) is None


def test_a_fault_report_states_a_fault_and_a_fix_states_no_fault() -> None:
    assert fault_reported(_REPORT) is not None
    assert fault_reported("Ticket #3310 resolved: Ana confirmed Lisbon invoices work again.") is None
    assert fault_reported("Acme renewed for two years.") is None
    assert fix_confirmed("All 6 are on the Lisbon profile; everyone else syncs fine.") is None
    assert tickets("Re #3310 and INC-20260301-02, not invoice #4411") == {"#3310", "INC-20260301-02"}


def test_typed_seat_counts_a_version_a_signed_change_and_a_total() -> None:
    assert facts("FR-17 logged: SAML 2.0 user provisioning from Entra.").counts == frozenset()
    assert set(facts("Amendment signed: +25 Business seats (140 total) at $31/seat/mo.").counts) == {
        ("seat", 140.0)
    }
    old, new = "Order form signed: 115 seats at $31/seat/mo.", "Amendment signed: +25 seats (140 total)."
    assert _retires(old, new) == ["count"]


def test_a_price_after_seats_at_or_seats_that_change_to_an_amount_is_per_seat() -> None:
    both = facts("Amendment executed: 90 Business seats @ $38 + 15 Viewer seats @ $9.")
    assert {value for _, _, value in both.prices} == {38.0, 9.0}
    changed = facts("Agreed today: the full seats go to $36 from May.")
    assert {value for _, _, value in changed.prices} == {36.0}


def test_an_option_someone_can_take_is_no_price_that_holds() -> None:
    offer = (
        "There is no viewer plan, but read-only users can sit on a Basic seat at $11/seat/mo. "
        "Shall I write it up?"
    )
    assert facts(offer).prices == frozenset()


def test_a_labelled_new_date_moves_the_event_its_sentence_names() -> None:
    old = "Weekly call. The cutover moves from June 2 to June 30 because the data load is late."
    new = "Go/no-go call: no-go for June 30. New date: mid-July, cutover over a weekend."
    assert _retires(old, new) == ["date"]


def test_an_event_named_at_the_sentence_start_is_that_event_only() -> None:
    other = "Plant A go-live moved to August 10 after the data cleanup."
    new = "Retail go-live moved from Oct 1 to October 20: QA is not done."
    assert _retires(other, new) == []
    assert _retires("Retail planning. Retail go-live set for October 1, after their close.", new) == ["date"]


def test_a_deadline_is_not_the_event_s_date() -> None:
    old = "Amendment signed. The customer commits to the retail go-live by 2026-11-30."
    assert facts(old).events == frozenset()


def test_a_ticket_form_reports_a_fault_in_any_words_and_a_fix_shown_correctly_now_retires_it() -> None:
    report = "Ticket #QX-7720 | Reporter: Ada | Subject: Credit notes land twice in the ledger | Steps: post"
    assert fault_reported(report) is not None
    found = retired_fault("Ticket #QX-7720 | Status: Resolved | fixed in 3.2, Ada confirmed.", _pool(report))
    assert found is not None and found[0] == "n0"
    form = "Ticket #9911\nSubject: Totals show $ for GBP customers\nExpected: £40\nActual: $40 on the summary"
    fixed = retired_fault("changed the summary like Jo said, £ shows correctly now", _pool(form))
    assert fixed is not None and fixed[0] == "n0"
    assert fix_confirmed("Everyone else syncs fine.") is None


def test_a_settled_price_ends_the_newest_offer_made_since_the_last_price_that_held() -> None:
    from amem.llm.offline.contradictions import superseded_offers

    held = "Order form signed: 80 seats at $40/seat/month."
    older_offer = "Quote QX-1 sent to Rui: $44 per seat per month for 100 seats."
    revised = "Revised quote QX-2 to Rui: $43 per seat per month for 100 seats."
    asked = "Call with Rui. He wants $38 per seat; I offered $42 per seat if they prepay. No agreement yet."
    same = "I offered $41 per seat if they sign this quarter."
    settled = facts("Agreed with Rui today: $41 per seat per month for 100 seats.")
    pool = [("asked", facts(asked)), ("same", facts(same)), ("revised", facts(revised)),
            ("older", facts(older_offer)), ("held", facts(held))]  # fmt: skip
    # the newest offer, the open position, ends; the ones before it were countered by it; the price
    # that held is the ordinary contradiction's
    assert [oid for oid, _ in superseded_offers(settled, pool)] == ["asked"]
    # the newest offer was of the settled amount: it became the price, and ends nothing before it
    assert superseded_offers(settled, pool[1:]) == []
    # with no newer offer, the revised quote is the open one
    assert [oid for oid, _ in superseded_offers(settled, pool[2:])] == ["revised"]
    # an offer settles nothing, and a price complained about is no offer
    assert superseded_offers(facts("I offered $39 per seat."), pool) == []
    assert facts("$55 a seat is 30% above what we budgeted.").offers == frozenset()


def test_a_price_on_a_named_tier_states_the_tier() -> None:
    approved_plans = facts("Approved at $39/seat on Enterprise, 60 seats, 12 months.").plans
    assert set(approved_plans) == {("tier", "enterprise")}
    approved = "So: approved at $39/seat on Enterprise, 60 seats, 12 months."
    signed = "Order form countersigned: Enterprise tier, 60 seats @ $39/seat/mo, billed annually."
    # the order form repeats what was approved: the tier holder is the approval, not the quote
    assert "plan" not in _retires(approved, signed)
    assert "plan" in _retires("They signed for the Growth plan: 60 seats at $41 per seat.", approved)


def test_a_progressive_plan_negated_reverses_a_labelled_decision() -> None:
    old = "QBR notes.\n- Decision: Ana is bringing the 30-person billing team onto Pulse in Q3."
    new = "We're not bringing Pulse to the whole billing team after all: the team is being outsourced."
    assert _retires(old, new) == ["reversal"]
    assert _retires(old, "We're not meeting on Friday, Ana is out.") == []


def test_switching_to_the_option_a_decision_turned_down_retires_that_decision() -> None:
    old = "Setup call. They will run the sync agent on site rather than use our hosted gateway."
    new = "We're switching to your hosted gateway after all: the local agent keeps failing."
    assert _retires(old, new) == ["adopted", "undone"]
    assert _retires(old, "We're switching to your hosted reporting module next month.") == []
    assert _retires("They mentioned the gateway once.", new) == []


def test_a_note_that_presents_itself_as_an_offer_states_offers_only() -> None:
    from amem.llm.offline.contradictions import superseded_offers

    proposal = "Subject: renewal proposal\n\nTwo-year renewal from May 1, 2027: 90 seats at $37/seat/mo."
    assert facts(proposal).prices == frozenset() and facts(proposal).counts == frozenset()
    assert {v for _, _, v in facts(proposal).offers} == {37.0}
    assert _retires("Amendment signed: 70 seats at $40/seat/mo.", proposal) == []
    # a revised quote ends the quote before it; a plain one does not
    quote = "Quote QX-1 to Rui: 40 seats at $52/seat/month. Valid until 30 May."
    requote = "Requote QX-2 to Rui: 40 seats at $47/seat/month. Valid until 30 June."
    assert [oid for oid, _ in superseded_offers(facts(requote), [("q", facts(quote))])] == ["q"]
    assert superseded_offers(facts(quote), [("r", facts(requote))]) == []


def test_event_dates_are_compared_site_to_site() -> None:
    old = "Launch dates agreed: Porto June 8, Lyon June 22."
    # the Porto launch moves: it retires the note that dated it
    assert _contradicts("We need to move the Porto launch from June 8 to June 15.", old) == ["date"]
    # a recap of two sites, each on its own date, retires nothing
    moved = "Porto launch moved from June 8 to June 15."
    recap = "Done, Porto launch is June 15 in the plan now, Lyon unchanged on June 22"
    assert _contradicts(recap, moved) == []
    # another site's event (named at the head of its phrase) is not this one's
    assert _contradicts("Milestone updated: Lyon warehouse cutover scheduled 2026-07-01.", moved) == []


def test_seats_of_one_site_or_users_invited_are_no_account_count() -> None:
    old = "Signed: 40 seats on the annual plan, $30 per seat, starting May 1."
    assert _contradicts("Update: 6 Lisbon users now, Rita will be their admin.", old) == []
    assert _contradicts("Pilot setup changed: 12 users invited so far, admin is Rita.", old) == []


def test_a_role_contrasted_away_from_a_first_name_retires_who_held_it() -> None:
    old = "Call notes: Marek owns the budget and signs anything under $50k himself."
    new = "Heads-up from their side: from now on the CFO Ines approves it all, so Ines signs, not Marek."
    assert _contradicts(new, old) == ["role:decider"]
    # the same holder named again retires nothing
    assert _contradicts("Quick note: Marek still signs.", old) == []


def test_a_signature_in_a_condition_names_no_signer() -> None:
    old = "Discovery call: Rosa Tamm, their COO, makes the final call on the budget."
    # "Once Lev signs" is when onboarding can start, not who decides
    new = "Order form attached. Once Lev signs, we start May 4."
    assert "decider" not in {k for k, _ in facts(new).roles}
    assert _contradicts(new, old) == []


def test_a_system_s_own_cutover_is_not_the_go_live() -> None:
    old = "Go-live agreed: Lyon June 22."
    assert _contradicts("Milestone updated: Lyon billing cutover moved to 2026-07-06.", old) == []
    # a bare cutover is the go-live's
    moved = "No-go for June 22. New date: July 6, Lyon cutover over the weekend."
    assert _contradicts(moved, old) == ["date"]


@pytest.mark.parametrize(
    "awaited",
    [
        "Please keep the nightly export paused until the sync is fixed.",
        "We will switch the alerts back on once it's all resolved.",
        "Ana wants a call as soon as the Lisbon template is fixed.",
        "If the renderer is fixed by Friday, we keep the launch date.",
    ],
)
def test_a_fix_awaited_in_a_clause_of_time_or_condition_is_no_fix(awaited: str) -> None:
    assert fix_confirmed(awaited) is None
    # so a report that asks for something until the fault is fixed still reports the fault
    report = f"Ticket #5120: the nightly export fails for the Lisbon office. {awaited}"
    assert fault_reported(report) is not None
    found = retired_fault("Ticket #5120 resolved: Lisbon exports run again.", _pool(report))
    assert found is not None and found[0] == "n0"


@pytest.mark.parametrize(
    ("old", "new", "retires"),
    [
        # any unit a product is sold by, after "per" or "/", is a price slot of its own
        ("Signed: $34/driver/month for 40 drivers.", "From July the price is now $36/driver/month.", True),
        ("We pay $5 per shipment.", "The rate changed to $4 per shipment as of May.", True),
        ("Signed: $34/driver/month for 40 drivers.", "The depot fee is now $300 per depot.", False),
        ("Signed: $34/driver/month for 40 drivers.", "Scanner lease is now $19/month.", False),
        ("Signed at $40 per active user.", "As of today the price is $44 per seat.", True),
    ],
)
def test_a_price_per_any_unit_meets_only_the_price_of_that_unit(old: str, new: str, retires: bool) -> None:
    assert ("price" in _contradicts(new, old)) is retires


def test_a_settled_price_of_one_unit_ends_no_offer_of_another() -> None:
    from amem.llm.offline.contradictions import superseded_offers

    offer = "Quote Q-7 sent: $38 per seat per month for 60 seats."
    revised = "Revised quote Q-8: 85 seats at $45/seat/month. Optional: 40 scanners at $6/device/month."
    # the revised quote ends the seat offer, whatever it says of devices
    assert [oid for oid, _ in superseded_offers(facts(revised), [("q", facts(offer))])] == ["q"]
    settled_devices = facts("Agreed today: scanners at $5/device/month.")
    assert superseded_offers(settled_devices, [("q", facts(offer))]) == []


def test_prices_listed_under_a_catalogue_heading_are_neither_the_customer_s_price_nor_an_offer() -> None:
    catalogue = facts(
        "Hi Ines,\n\nAs promised, our list pricing:\n\n- Core: $24 / driver / month\n"
        "- Plus: $38 / driver / month\n\nAnnual agreements, billed monthly.\n\nWe pay $10 per depot."
    )
    assert {p for p in catalogue.prices | catalogue.offers if p[1] == "driver"} == set()
    assert ("$", "depot", 10.0) in catalogue.prices  # the list ends where its lines do
    walked = facts("Walked list pricing: Professional $65/seat/month, monthly plan.")
    assert walked.prices | walked.offers  # prices walked through in the sentence itself still count


@pytest.mark.parametrize(
    "follow_up",
    [
        "Ticket #3310: Ana confirmed the Lisbon invoices come out clean this morning. Closing.",
        "#3310: as of today Lisbon PDFs render on every template.",
        "Re #3310 - the renderer now embeds the font; Lisbon invoices look right. Marking it resolved.",
        "Ticket #3310: Ana checked that the Lisbon batch printed with the right font.",
    ],
)
def test_a_follow_up_closing_the_same_ticket_in_its_own_words_retires_the_report(follow_up: str) -> None:
    found = retired_fault(follow_up, _pool(_UPDATE, _REPORT))
    assert found is not None and found[0] == "n1" and found[1].evidence in follow_up


@pytest.mark.parametrize(
    "not_closed",
    [
        "Ticket #3310 closed: the fix was deployed on Monday.",  # shipped, not seen to work
        "Ticket #3310: the fix is now deployed to staging.",
        "Ticket #3310: Ana confirmed the Lisbon invoices still fail.",
        "Ticket #3310: we will close it once Ana has checked.",
        "Ticket #3310: now failing for the Porto office too.",
    ],
)
def test_a_follow_up_that_ships_doubts_or_reports_again_closes_nothing(not_closed: str) -> None:
    assert retired_fault(not_closed, _pool(_REPORT)) is None


def test_a_report_that_needs_the_fault_fixed_is_still_a_report() -> None:
    report = (
        "Ticket #7001: badges cut long names off. The summit is May 3, so we need this fixed before then."
    )
    assert fix_confirmed(report) is None and fault_reported(report) is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the total a change comes to, said after it, is the count that now holds
        (
            "Subscription active: 30 organiser seats.",
            "Approved, go ahead with 6 more seats today. That takes us to 36.",
        ),
        (
            "Signed: 40 drivers at $36/driver/month.",
            "Adding 6 seasonal drivers in May. That makes 46 drivers total.",
        ),
        ("Renewed: 80 seats for a year.", "Two teams left in May. That brings the account down to 64 seats."),
    ],
)
def test_the_total_a_change_comes_to_retires_the_old_count(old: str, new: str) -> None:
    assert "count" in _contradicts(new, old)


def test_a_total_of_another_unit_a_term_or_a_price_is_no_count_of_seats() -> None:
    seats = "Renewed: 80 seats for a year."
    assert _contradicts("Adding 6 seasonal drivers. That makes 46 drivers total.", seats) == []
    assert _contradicts("The extension takes us to 18 months.", seats) == []
    assert facts("Globex now pays $42 per seat per month.").counts == frozenset()


def test_a_price_per_employee_per_month_is_a_price_per_employee() -> None:
    assert _contradicts("Renewed today: now $11.50 PEPM for 2,000 employees.", "Signed at $11.75 PEPM.") == [
        "price"
    ]
    assert ("$", "employee", 2000.0) not in facts("Signed at $11.75 PEPM, 2,000 employees.").prices
    assert ("employee", 2000.0) in facts("Signed at $11.75 PEPM, 2,000 employees.").counts


def test_a_certificate_expiring_is_no_renewal_date_but_a_contract_expiring_is() -> None:
    renewal = "Deal desk approved pulling Hooper's renewal forward to 1 January 2027."
    certificate = "Also: our SAML signing certificate expires on 9 October, please rotate it before then."
    assert _contradicts(renewal, certificate) == []
    contract = "Hooper's contract expires on 30 June 2027; they plan to renew."
    assert _contradicts(renewal, contract) == ["date"]


def test_the_note_that_opened_a_ticket_by_its_key_is_the_report_a_fix_retires() -> None:
    opened = "QX-7310 | Slack reminders arrive twice\nEvery reminder DM shows up twice since Monday."
    update = "QX-7310 - diagnosis: the Slack app is installed twice in their workspace."
    fix = "QX-7310 - removed the duplicate install; Omar confirmed reminders now arrive once. Resolved."
    found = retired_fault(fix, _pool(update, opened))
    assert found is not None and found[0] == "n1"


@pytest.mark.parametrize(
    "opened",
    [
        "heads up: the Porto reps say quote emails aren't going out to buyers. opened QX-7311",
        "Raised ticket #8812 with support: the buyers never get the quote email from the Porto reps.",
        "Logged a P2 for the Porto reps, quote emails go nowhere. Ref QX-7311, #8812.",
    ],
)
def test_the_note_that_says_it_opened_the_ticket_is_the_report_whatever_its_words(opened: str) -> None:
    # the symptom is told in words no fault list holds; the note says it opened the ticket
    update = "QX-7311 #8812 - diagnosis: the mail relay drops messages with a PDF over 5 MB."
    fix = "QX-7311 #8812 fixed in 5.2, Rui confirmed the Porto buyers get every quote email since. Closing."
    found = retired_fault(fix, _pool(update, opened))
    assert found is not None and found[0] == "n1"


def test_a_feature_request_logged_under_a_key_is_no_report_a_fix_retires() -> None:
    logged = "fyi logged FR-2290 for Acme: a two-way Yardi sync. Product says Q4, no commitment."
    fix = "FR-2290 ships in the October release; Dana confirmed the beta works. Resolved."
    assert retired_fault(fix, _pool(logged)) is None


@pytest.mark.parametrize(
    ("follow_up", "closes"),
    [
        ("Ticket #3310 closed: the fix shipped Friday, and Ana confirmed no broken PDFs this weekend.", True),
        ("#3310: the 5.2 release is live; Ana verified zero failed invoices in Lisbon since.", True),
        ("Ticket #3310: Ana confirmed there have been no errors since the upgrade.", True),
        ("Ticket #3310: Ana confirmed no progress yet, the PDFs still fail.", False),
        ("Ticket #3310: Ana confirmed no date for the fix yet.", False),
    ],
)
def test_a_confirmation_that_the_symptom_is_gone_closes_the_ticket(follow_up: str, closes: bool) -> None:
    found = retired_fault(follow_up, _pool(_UPDATE, _REPORT))
    assert (found is not None and found[0] == "n1") is closes


def test_a_moved_date_retires_no_support_issue_and_a_quantity_only_its_topic() -> None:
    from amem.llm.offline.contradictions import may_retire

    # "Go-live is June 1 so this is blocking": the ticket's main fact is the fault
    assert not may_retire("date:go-live", "decision", "support issue")
    assert may_retire("date:go-live", "support issue", "support issue")
    assert may_retire("date:go-live", "decision", "onboarding")
    assert not may_retire("price", "pricing", "contract")
    assert may_retire("price", "pricing", "pricing")


def test_a_moved_date_s_reason_is_the_same_in_every_process() -> None:
    """The reason names one of the days the new note states; which one must not depend on the
    process's string hashing (the ledger keeps the reason, and a rerun must write the same)."""
    import subprocess
    import sys

    old = "We've decided to postpone the Halden rollout to Q1 2027, until the sync ships."
    new = (
        "The sync lands in October and their busy season starts in November, so Rhea is reversing "
        "the decision: the rollout starts in two weeks instead of waiting for Q1 2027."
    )
    code = (
        "import sys\n"
        "from amem.llm.offline.contradictions import contradiction, facts\n"
        "c = contradiction(facts(sys.argv[1]), facts(sys.argv[2]), sys.argv[2], 'date:go-live')\n"
        "print(c.reason if c else None)\n"
    )
    reasons = {
        subprocess.run(
            [sys.executable, "-c", code, new, old],
            env={"PYTHONHASHSEED": str(seed), "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(8)
    }
    assert len(reasons) == 1 and "None" not in reasons.pop()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # usage billed by the minute, the hour or the day is a price of one of something
        (
            "Render minutes beyond the 10,000 included are charged at $0.05 per minute.",
            "We agreed to cut their render overage from $0.05 to $0.04 per minute for the rest of the term.",
        ),
        (
            "Onsite consulting is billed at $180 per hour.",
            "Per the signed change order, onsite consulting is now $165 per hour.",
        ),
        # an adjective before the unit does not make it another unit
        (
            "On the Team plan they pay $90 per concurrent build agent.",
            "As of March they pay $75 per build agent.",
        ),
        # a sentence answering a question states its value
        (
            "Ana, to your question on the Berlin office: extra sites are billed at $300 per site.",
            "The site fee is now $250 per site after the renegotiation.",
        ),
    ],
)
def test_metered_prices_and_answered_questions_state_a_price(old: str, new: str) -> None:
    assert "price" in _contradicts(new, old)


@pytest.mark.parametrize(
    "new",
    [
        "Pricing held for 14 days: Enterprise at $38 per seat, annual commitment.",
        "Omar, Lina, proposal attached for the Growth tier: $38 per seat, annual commitment.",
        # a plan in an offer's own lines
        "Omar, Lina, proposal attached for Enterprise:\n• 24 committed runners at $38/runner/month, "
        "annual commitment\nShout with questions.",
    ],
)
def test_an_offer_retires_no_price_or_plan_in_force(new: str) -> None:
    old = "They signed for the Team plan, billed monthly, at $45 per seat."
    assert _contradicts(new, old) == []


def test_a_list_price_stated_is_not_what_the_customer_pays() -> None:
    """The sentence "we understand the list price to be £72" names the catalogue's price: the later £61 agreed
    retires the customer's £58, not the list price."""
    stated = facts("We understand the Enterprise list price to be £72 per user per month.")
    assert stated.prices == frozenset()
    # a list price quoted in an offer is still an offer
    offer = facts("Quote attached, valid until May 1: the list price for the Growth plan is $65 per seat.")
    assert ("$", "seat", 65.0) in offer.offers


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        # a count said as the total a change comes to
        ("Final number for the order form: 120 technician licences.",
         "Please book 25 additional technician licences, so in total 145, starting 01.05.2026.", "count"),
        # a billing cadence chosen in plainer words
        ("We go with quarterly invoicing, please put it like this into the order form.",
         "Ok, then we switch to annual invoicing in advance from 01.07.2026.", "plan"),
        ("Thanks for the quick turnaround. We'll take the monthly billing option.",
         "From July 1 we're moving this subscription to annual prepay.", "plan"),
    ],
)  # fmt: skip
def test_totals_and_cadences_in_plainer_words(old: str, new: str, kind: str) -> None:
    assert kind in _contradicts(new, old)


def test_a_total_of_time_is_no_count() -> None:
    assert facts("We added 3 licences and spent in total 45 minutes on setup.").counts <= {("seat", 3.0)}


def test_a_workaround_confirmed_while_the_fix_is_to_come_fixes_nothing() -> None:
    update = (
        "Ticket #5120 update: root cause is duplicate chart numbers across clinics. Workaround: prefix "
        "them in the export. Gus confirmed the import ran fully with the script. A permanent fix is "
        "planned for a later release."
    )
    assert fix_confirmed(update) is None
    report = "Ticket #5120 - the bridge import stops at 2,300 records with DUPLICATE_KEY."
    assert retired_fault(update, [("n1", report, datetime(2026, 3, 13, tzinfo=UTC))]) is None
    # once the fix itself ships and is confirmed, the report is retired
    fixed = "Ticket #5120: the permanent fix shipped in 4.2; Gus confirmed imports run without the script."
    assert retired_fault(fixed, [("n1", report, datetime(2026, 3, 13, tzinfo=UTC))]) is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a decision against something, then taken after all
        (
            "Helga decided against the translation memory module, since their agency already has one.",
            "Helga changed her mind on the translation memory module: they want it from June.",
        ),
        # a feature switched off, then back on
        (
            "Decision: bulk export stays OFF for the field teams until the audit is done.",
            "Bulk export is back on for the field teams, the auditors signed it off.",
        ),
        # something left out of a rollout, then brought in after all
        (
            "They have decided to keep the Lyon warehouse out of the first wave.",
            "The Lyon warehouse will join the first wave after all, now that its scanners arrived.",
        ),
        # a plan reversed in so many words
        (
            "We're moving the nightly reconciliation onto our own servers.",
            "We've reversed the move of the nightly reconciliation: it stays on your hosted servers.",
        ),
    ],
)
def test_a_decision_undone_retires_the_decision(old: str, new: str) -> None:
    assert "undone" in _retires(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the cue is not about a decision the old note took
        ("Priya agreed to the Berlin office pilot in May.", "Priya pushed back on the renewal price again."),
        ("The team decided to use SSO for all users.", "After all, SSO is what their auditors asked for."),
        ("We're back on track with the data migration.", "We're back on track with the data migration."),
        # undone, but another decision: too little of it is shared
        (
            "Renata approved the premium support add-on for the Ghent site.",
            "We're reinstating the handheld scanner add-on after all, the line leads insisted.",
        ),
        # the old note names the thing but decides nothing about it
        (
            "Questions came up about the translation memory module and its pricing.",
            "Helga changed her mind on the translation memory module: they want it from June.",
        ),
    ],
)
def test_what_is_not_an_undone_decision_retires_nothing(old: str, new: str) -> None:
    assert "undone" not in _retires(old, new)


@pytest.mark.parametrize(
    ("text", "price"),
    [
        ("Agreed: EUR 189 per vessel per month from March.", ("€", "vessel", 189.0)),
        ("Signed at AUD 275 per seat per annum.", ("AUD", "seat", 275.0)),
        ("Closed at INR 2,150/agent/month ex-GST.", ("INR", "seat", 2150.0)),
        ("They now pay 32 USD per user per month.", ("$", "seat", 32.0)),
        # a seat of some kind is a seat
        ("Agreed: AUD 310 per researcher seat per annum.", ("AUD", "seat", 310.0)),
    ],
)
def test_a_price_written_with_a_currency_code_before_or_after_it(text: str, price: tuple) -> None:
    assert facts(text).prices == frozenset({price})


def test_a_currency_code_before_a_limit_in_lakh_is_no_price() -> None:
    assert facts("Agreed: Rajesh approves contracts above INR 25 lakh.").prices == frozenset()


def test_a_price_in_one_currency_code_retires_the_same_code_s_older_price() -> None:
    old = "Agreed with Kari: EUR 210 per vessel per month."
    assert _retires(old, "Revised and agreed today: EUR 189 per vessel per month.") == ["price"]


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Amendment signed: the subscription now covers fifty-seven users.", ("seat", 57.0)),
        ("We're at a hundred and ten named users now.", ("seat", 110.0)),
        ("Order form signed: +30 seats → 180 total.", ("seat", 180.0)),
        ("Going ahead with the Leeds office: 46 additional seats, 66 in total.", ("seat", 66.0)),
        ("Subscription record created: quantity 24 vessels.", ("vessel", 24.0)),
        ("Agreed: the subscription goes from 24 to 30 vessels in June.", ("vessel", 30.0)),
    ],
)
def test_a_count_in_words_a_total_after_a_change_or_another_unit_s_quantity(text: str, count: tuple) -> None:
    assert count in facts(text).counts


def test_years_a_term_or_seats_added_are_no_count() -> None:
    assert facts("Agreed: the contract runs from 2026 to 2028 calendar years.").counts == frozenset()
    assert facts("The amendment adds twelve users to the subscription.").counts == frozenset()


def test_a_count_of_vessels_retires_the_older_count_of_vessels_only() -> None:
    old = "Subscription record created: quantity 24 vessels, start date 2026-03-01."
    new = "Kari approved it: the subscription goes from 24 to 30 vessels from June."
    assert _retires(old, new) == ["count"]
    assert _retires(old, "Kari approved it: we now have 30 seats for the office team.") == []


def test_a_deal_desk_s_shorthand_for_users_reads_as_seats() -> None:
    signed = facts("OF signed! 140u @ $39/u/mo, 12-mo term billed annually.")
    assert signed.prices == frozenset({("$", "seat", 39.0)}) and signed.counts == frozenset({("seat", 140.0)})
    assert facts("Racks: the 2u and 3u chassis ship Friday.").counts == frozenset()


def test_a_new_date_said_after_the_event_s_sentence_moves_that_event() -> None:
    old = "Kickoff recap: go-live target is Wednesday, April 1st for all 180 users."
    new = "We have to push go-live. Our upgrade slipped three weeks. New date is Monday, May 4th."
    assert _retires(old, new) == ["date"]
    # a new date with no event named before it moves nothing
    assert _retires(old, "Thanks for the call. New date is Monday, May 4th.") == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the person who signs leaves; the signer was named with "will sign the order form"
        (
            "For clarity on roles: Rajesh Pillai will sign the order form as CIO.",
            "Rajesh Pillai is leaving at the end of June; Helen Okafor will be the signatory from 1 June.",
        ),
        # a first name leaving meets the full name holding the role
        (
            "New opp: champion and economic buyer for now is Gary Lindqvist (VP Ops).",
            "Gary is leaving at the end of May. Denise Harmon owns the program from 6/1.",
        ),
    ],
)
def test_a_role_holder_leaving_retires_the_note_naming_them(old: str, new: str) -> None:
    assert any(kind.startswith("role:") for kind in _retires(old, new))


def test_a_team_or_a_title_is_no_person_holding_a_role() -> None:
    roles = facts("Contact roles updated: DM is Dir. Fleet Ops, signs anything under $100k.").roles
    assert not any(name == "Fleet Ops" for _, name in roles)
    assert _retires("Gareth Lloyd is our champion.", "Gary is leaving at the end of May.") == []


def test_role_changes_in_more_words() -> None:
    # a champion named officially in the place of another
    old = "fyi Kayla Brooks is our champion at Marlowe and she owns the renewal."
    new = "ok team, Marcus Hale is officially our champion at marlowe and he'll own the renewal."
    assert any(kind.startswith("role:") for kind in _retires(old, new))
    # a leaver whose name is written with an umlaut, who signed what must be signed by them
    old = "Any commercial commitment must be approved and signed by our director, Jürgen Bauer."
    new = "Jürgen Bauer leaves Kestrel in May. Sabine Wolff takes over all FieldLoop decisions."
    assert any(kind.startswith("role:") for kind in _retires(old, new))


def test_a_decimal_comma_is_a_decimal_and_a_thousands_comma_a_thousand() -> None:
    assert ("€", "seat", 39.0) in facts("Price changed to EUR 39,00 per user/month from today.").prices
    assert ("€", "seat", 42.5) in facts("Now EUR 42,5 per user per month.").prices
    assert ("€", "seat", 1250.0) in facts("Now 1,250 EUR per user per year.").prices


@pytest.mark.parametrize("marker", ["(old: {})", "(old {})", "(previous: {})"])
def test_a_change_log_s_old_value_is_not_a_value_it_states(marker: str) -> None:
    moved = "Agreed: the renewal date moves from 31.03.2027 to 30.09.2027, to fit their fiscal year."
    log = f"Renewal ACME moved to 30.09.2027 {marker.format('31.03.2027')}, aligned to their fiscal year."
    assert _contradicts(log, moved) == []  # the same move logged: nothing made untrue
    priced = facts(f"Price changed to EUR 39,00 per user/month {marker.format('42,50')}.").prices
    assert priced == frozenset({("€", "seat", 39.0)})


def test_a_role_given_as_a_field_or_after_a_title_is_read_and_its_holder_leaving_retires_it() -> None:
    champion = "Pipeline review wk 6 - Acme. Champion: Dr. Helen Okafor, Group Medical Director."
    assert ("contact", "Helen Okafor") in facts(champion).roles
    signer = "NEW ACCT -> Acme Freight\n- DM: Dana Kowalczyk, Dir. Fleet Ops, signs anything < $100k"
    assert ("decider", "Dana Kowalczyk") in facts(signer).roles
    assert "role:decider" in _contradicts(
        "Dana Kowalczyk is leaving Acme; new DM + signer = Raj Mehta.", signer
    )
    assert facts("Email the DMs about the launch.").roles == frozenset()  # no field, no role


@pytest.mark.parametrize(
    ("older", "newer", "span"),
    [
        (
            "Pricing call: Globex pays $42 per seat per month.",
            "As of today Globex pays $55 per seat per month.",
            "Pricing call: Globex pays $42 per seat per month.",
        ),
        (
            "Kickoff went well. The go-live is on March 3.",
            "The go-live moved to April 14 after the data migration slipped.",
            "The go-live is on March 3.",
        ),
    ],
)
def test_a_note_said_later_makes_an_older_plain_statement_untrue_with_the_older_note_s_span(
    older: str, newer: str, span: str
) -> None:
    """An older record analysed after the note that changed it (a late import, a retry after an
    outage): asked the usual way round, the older note's plain wording changes nothing; asked which
    later note makes it untrue, the later one's change does, and the span a reviewer sees is the
    older note's own sentence, so the retirement is proposed on the older note."""
    old, new = facts(older), facts(newer)
    kind = next(k for k in stated_kinds(new) if holds(new, old, older, k))
    assert _retires(newer, older) == []  # the older record read as if it were the newer one
    found = made_untrue(new, old, older, kind)
    assert found is not None and found.evidence == span and span in older


def test_a_later_note_repeating_the_older_value_makes_nothing_untrue() -> None:
    older = "Pricing call: Globex pays $42 per seat per month."
    newer = "As of today Globex pays $42 per seat per month."
    assert made_untrue(facts(newer), facts(older), older, "price") is None
