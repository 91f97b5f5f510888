"""The category of a raw log: which sales or customer-success topic its cue words point to.

Each label has a cue pattern; the label with the most cues wins (a tie goes to the earlier one).
A text with no cue, or only chat (thanks, greetings, congratulations), has no category: it is noise.
"""

from __future__ import annotations

import re

from amem.llm.offline.contradictions import TICKET_KEY_OPENING, fix_confirmed
from amem.llm.offline.dates import offer_note
from amem.llm.offline.reasons import decided
from amem.llm.offline.text import sentence_around

#: Label -> cue pattern, in priority order (a tie goes to the earlier label).
_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(pattern, re.IGNORECASE))
    for label, pattern in (
        (
            "support issue",
            r"\b(bugs?|errors?|outages?|tickets?|incidents?|broken|crash(?:es|ed)?|fail(?:s|ed|ing|ure)?|"
            r"not working|down ?time|escalat\w*|latency|slow(?:ness|ly)?|workaround|regression|"
            r"times? out|timeouts?|severity|fix(?:ed)?|blank|empty|gap|resolved|root cause)\b|"
            # a hash-numbered id is a ticket's ("#4411", "#BL-40211")
            r"(?<!\w)#(?:[A-Z]{1,5}-?)?\d{3,}\b",
        ),
        ("renewal", r"\b(renew\w*|churn\w*|expir\w*|extension|auto-renew)\b"),
        (
            "contract",
            r"\b(contracts?|agreements?|msa|sla|dpa|terms and conditions|(?<!e-)signatures?|"
            r"signed (?:the|an?|our)|"
            r"legal|"
            # "procurement" as a department in a person's title or role ("Sr. Procurement Manager",
            # "procurement = Lena") names who someone is, not a contract
            r"clauses?|procurement(?!\s+(?:manager|lead|director|officer|contact|specialist|analyst|head)\b)"
            r"(?!\s*[=:]\s*[A-Z])|redlines?|order forms?|seat count|seats? instead|countersign\w*|"
            r"closed won|economic buyer|amendments?|signed by|countersigned|signatory|purchase orders?|"
            # a contract's own terms and its signed copy: "12-month term", "payment terms", "net 45",
            # "liability cap", "termination for convenience", "signed copy attached"
            r"signed (?:copy|version|it)|\d+[- ]?(?:months?|mo|years?|yrs?)[- ]term|terms? length|"
            r"payment terms|net[- ]?\d{2}|liability(?: cap)?|indemnit\w*|termination|subscription|"
            # a statement of work, a lease of devices, a seat count written as a change ("seats 46 → 42")
            r"sow|statement of work|leas(?:e|ed|es|ing)|seats?(?: change| count)?:?\s+\d+(?=\s*(?:→|->))|"
            r"PO \d[\w-]*|"
            # a buyer's security review of the vendor is a step of procurement ("vendor security
            # questionnaire", "InfoSec review", "vendor risk assessment")
            r"(?:security|vendor|infosec|it security)\s+(?:questionnaires?|reviews?|assessments?)|"
            r"questionnaires?|vendor risk|"
            # a number of licences held: "150 seats", "25 more seats", "seats provisioned: 85"
            # (not seats said to lie idle: "takes 30 seats out of use")
            # (seats in use are a usage figure: "498k minutes across 160 active seats")
            r"\d[\d,]* (?:(?:more|extra|additional|named|licensed|"
            r"(?!(?:active|used|inactive|occupied)\b)[a-z]+) )?(?:seats|licen[cs]es)"
            r"(?!\s+(?:out of use|idle|unused|inactive|not in use))|"
            r"(?:seats|licen[cs]es)(?: \w+){0,3}: \d+|"
            r"(?:needs?|reduc\w* to|bring\w* (?:them |it )?to|adds?|grow\w* to|cut\w* to|down to|up to) "
            r"\d+ (?:seats|users|licen[cs]es))\b",
        ),
        (
            "pricing",
            r"(\$|€|£|\b(price[ds]?|pricing|offers?|discounts?|quotes?|quoted|cost[s]?|budget\w*|invoices?|"
            r"per seat|/seat|fees?|billing|payments?|tiers?|list price|annual plan|monthly plan|"
            # a price per user or per licence, and a bill sent ("invoiced quarterly in advance")
            r"per (?:user|licen[cs]e)|/user|invoiced|invoicing|"
            r"(?:commercial|pricing|price) proposals?|commercials)\b)",
        ),
        (
            "onboarding",
            r"\b(onboard\w*|training|rollout|roll(?:ing)? (?:us )?out|go-live|goes live|set ?up|"
            r"implementation|migrat\w*|cutover|workspace|connector|active users?|went live|go live|"
            r"logged in|sandbox|provision\w*|admin training|"
            # a kickoff starts a project: the pilot's, the rollout's, a site's onboarding
            r"kick-?offs?|"
            # a trial under way and the project's people ("trial started today", "exec sponsor = Dana")
            r"trials?|exec(?:utive)? sponsor|project roles|"
            # "live as of yesterday", "phase 1 now live"
            r"live (?:as of|since|from)|(?:is|are|now) live)\b",
        ),
        (
            "feature request",
            r"\b(feature requests?|roadmap|would like (?:to see|a)|wish(?:es)?|could your product|"
            r"can you add|beta|asked about|can your product|would love|top ask|asked for|could you add|"
            r"integration with|'d love|would be great if|"
            r"is there an? (?:way|api|option|setting|integration) to|"
            # a capability asked after: "any API for raw CAN-bus data?", "asked whether Draftwell could
            # generate ...", "would very much welcome a template", "logs both as FRs", "ask #1:"
            r"any (?:api|way|option|setting|integration|export) (?:for|to)|"
            r"asked (?:if|whether) (?:\w+ ){0,4}?(?:could|can|would|supports?)|"
            r"would (?:very much |really |greatly )?welcome|FRs|ask #\d|"
            r"nice to have|enhancement|"
            r"requests? from (?:our|their|the) (?:users|managers|team|reps|admins)|"
            # a feature request's own id ("FR-88", "logged as FR-1432"), a must-have asked for,
            # and the release that ships it ("Release 5.19 shipped with SCIM")
            r"(?<!\w)FR-\d+|must[- ]haves?|requirements? logged|release \d[\d.]*|ships? in)\b",
        ),
        (
            "meeting",
            # "call recording", "call transcripts": the product's object, not a meeting
            r"\b(meetings?|calls?(?!\s+(?:\w+ing\b|transcripts?|volumes?|cent(?:er|re)s?|logs?|data))|"
            r"demo(?:s|ed)?|sync|agenda|workshop|onsite|qbr|check-in|met with|"
            r"spoke with|talked to|business review|intro|review with|board|renewal review|"
            r"steering committee|check-?in|deep-?dive|touchpoint|stand-?up|walk-?throughs?)\b",
        ),
        (
            "decision",
            r"\b(decided|decide|decision|chose|opted|postpon\w*|going with|went with|approved|"
            r"picked(?! up\b)|pulled the plug|called off|settled)\b",
        ),
        (
            "personal",
            r"\b(family|kids?|children|son|daughter|wife|husband|partner|mom|dad|mother|father|"
            r"vacation|birthday|wedding|hobby|hobbies|friends?|pets?|dog|cat|painting|music|hiking|"
            r"camping|school|leaving|coaches|prefers|personal\w*|married|honeymoon|fan|lunch|retir\w*|"
            r"vegetarian|allerg\w*|baby|holidays?|parental leave|maternity|paternity|on leave|time off|"
            r"out of office|marathon|half marathon|race|triathlon|running club|good-luck card)\b",
        ),
    )
)

#: Chat that carries nothing to remember, whatever words it contains.
_CHAT = re.compile(
    r"^\W*(?:[A-Z][a-z]+,\s*)?(?:(?:hi|hey|hello|thanks|thank you|thx|great|nice|awesome|congrats|cheers|"
    r"happy|ok|okay|got it|noted|sounds good|will do|drinks)\b[^.!?]*[.!?]*\s*){1,3}$",
    re.IGNORECASE,
)


#: An acknowledgement opening a short reply ("Thanks, got it - we'll fix it on our side").
_ACK = re.compile(
    r"^\W*(?:[A-Z][a-z]+,\s*)?(?:thanks|thank you|thx|ok|okay|got it|noted|perfect|cheers)\b", re.IGNORECASE
)


#: A message that says it was sent automatically ("Automatic reply: ...", "Auto-reply", "I am out of
#: the office until ..."): it states the sender's absence, no fact about the account.
_AUTO_REPLY = re.compile(
    r"^\W*(?:subject\s*:\s*)?(?:re:\s*)?"
    r"(?:automatic reply|auto-?reply|autoreply|out of (?:the )?office)\b|"
    r"^\W*(?:thank you for your (?:e-?mail|message)\.?\s*)?"
    r"I(?:'m| am) (?:currently )?out of (?:the )?office\b|"
    r"^\W*this is an automated (?:message|e-?mail|notification|response)\b",
    re.IGNORECASE | re.MULTILINE,
)


def chat(text: str) -> bool:
    """Whether the text is only chat (thanks, greetings, "see you then"), a short reply that
    acknowledges (its own small promise is logistics), or an automatic reply: nothing to remember."""
    if _AUTO_REPLY.search(text):
        return True
    words = len(text.split())
    stripped = text.strip()
    if not ((words <= 12 and _CHAT.match(stripped)) or (words <= 15 and _ACK.match(stripped))):
        return False
    # unless it also states a decision or a figure ("Thanks, we signed the order form today")
    return not re.search(r"\d", stripped) and decided(stripped) is None


#: A meeting noun right after a topic word: the topic only names the meeting.
_MEETING_HEAD = re.compile(
    r"\s+(?:review|call|meeting|sync|session|workshop|walk-?through|check-?in|kick-?off|planning|agenda)s?\b",
    re.I,
)


#: Onboarding's own topics: a meeting named by one ("Pilot kickoff", "Onboarding workshop #1",
#: "Rollout planning with ...") is a step of the onboarding, not a meeting on another topic.
_ONBOARDING_TOPIC = re.compile(
    r"\b(?:onboarding|pilot|rollout|roll-out|implementation|training|go-live|cutover|migration|trial)\s+$",
    re.IGNORECASE,
)
_PHASE_MEETING = re.compile(
    r"\b(?:onboarding|pilot|rollout|roll-out|implementation|training|go-live|cutover|migration|trial)\s+"
    r"(?:kick-?off|check-?in|call|meeting|sync|session|workshop|planning|close-?out|status|walk-?through)",
    re.I,
)

#: The labels, in the cues' priority order.
LABELS: tuple[str, ...] = tuple(label for label, _ in _CUES)

#: Before a seat count, in its sentence: a price or a tier, then "for": the count is what it is for.
_PRICED_COUNT = re.compile(
    r"(?:[$€£]\s?\d|\bper seat\b|/seat\b|\btiers?\b)[^.;!?]*\bfor (?:the |all |all the )?$", re.I
)


#: A contract's terms: what an order form states, and what a price offer states too.
_TERMS = re.compile(
    r"\d+[- ]?(?:months?|mo|years?|yrs?)[- ]term|terms? length|payment terms|net[- ]?\d{2}|subscription",
    re.IGNORECASE,
)
#: An amount of money.
_PRICE = re.compile(r"[$€£]\s?\d|\d\s?(?:USD|EUR|GBP)\b|\b(?:USD|EUR|GBP|AUD|CAD|NZD|CHF|INR|SGD)\s?\d")


def _sentence_before(text: str, start: int) -> str:
    return text[max(text.rfind(c, 0, start) for c in ".;!?\n") + 1 : start]


def cue_scores(text: str, lead: str = "", ignore: tuple[int, int] | None = None) -> list[float]:
    """Per label (in ``LABELS`` order), how strongly the text's cues point to it.

    ``lead`` (the first sentence, where a note names its topic) counts again (0.9 a cue); cues
    inside ``ignore`` (the reason span: why, not what) do not count; a topic word that only names
    a meeting ("the renewal review") counts for the meeting.
    """
    out: list[float] = []
    offer = offer_note(text)
    opening = " ".join(lead.split()[:3])
    phase = _PHASE_MEETING.search(opening) is not None
    for label, pattern in _CUES:
        score = 0.0
        for match in pattern.finditer(text):
            if ignore and ignore[0] <= match.start() < ignore[1]:
                continue
            # in a note that opens as an onboarding step ("Pilot kickoff", "Onboarding workshop
            # #1"), a meeting named by onboarding's topic is a step of the onboarding
            before = text[max(0, match.start() - 20) : match.start()]
            if label == "meeting" and phase and _ONBOARDING_TOPIC.search(before):
                continue
            if (
                label != "meeting"
                and not (phase and label == "onboarding")
                and _MEETING_HEAD.match(text, match.end())
            ):
                continue  # "the renewal review", "a pricing call": a meeting, named by its topic
            if label == "contract" and _PRICED_COUNT.search(_sentence_before(text, match.start())):
                continue  # "$49 per seat for the 135 seats": the quantity a price is for
            if label == "contract" and offer and re.match(r"\d", match.group(0)):
                continue  # "Proposal sent: add the 40 CS seats": the quantity an offer is for
            terms = _TERMS.fullmatch(match.group(0))
            priced = terms and _PRICE.search(sentence_around(text, match.start(), match.end()))
            if label == "contract" and priced:
                continue  # "150 seats at $54 per seat, 12-month term, net-60": the terms of a price offered
            score += 1
        score += 0.9 * sum(
            1 for m in pattern.finditer(lead) if label == "meeting" or not _MEETING_HEAD.match(lead, m.end())
        )
        if label == "meeting" and pattern.search(opening) and not phase:
            score += 1.5  # "QBR with ...", "Renewal call with ...": the note of a meeting
        if label == "onboarding" and phase:
            score += 1.5  # "Pilot kickoff ...", "Rollout planning with ...": the note of an onboarding step
        out.append(score)
    return out


#: An input that opens by naming itself a ticket or an incident ("Ticket #4411 | ...", "Re: Ticket
#: #88", "Incident 2291:"), or by a ticket's key (``TICKET_KEY_OPENING``: "TW-41877: that was it"):
#: its form says it reports a fault, whatever the product's own words are.
_TICKET_FORM = re.compile(r"^\W*(?:re:\s*)?(?:ticket|incident|bug report|support case)\b", re.IGNORECASE)


#: A billing cadence: "quarterly invoicing", "monthly billing", "annual prepay", "billed annually".
_BILLING_CADENCE = re.compile(
    r"\b(?:annual|annually|yearly|monthly|quarterly)\s+(?:billing|invoic\w+|pre-?pa(?:y|id|yment)|payments?)\b|"
    r"\b(?:billed|invoiced|paid)\s+(?:annually|yearly|monthly|quarterly)\b",
    re.IGNORECASE,
)


#: An input that opens with a feature request's key ("FR-2291 | Budget alerts", "FR-88 logged for
#: ..."): a product team's request record, whatever the request's own words are (prices, seats).
_REQUEST_FORM = re.compile(r"^\W*FR-\d+\b")


_DOCUMENT = r"(?:amendment|order form|purchase order|PO|MSA|contract|agreement|SOW|statement of work|DPA)"
_EXECUTION = r"(?:signed|executed|countersigned|issued)"
#: An opening sentence that reports a contract document executed: whatever prices it lists, the
#: note is about the contract.
_EXECUTED = re.compile(
    rf"\b{_DOCUMENT}\b[^.\n]{{0,60}}?\b{_EXECUTION}\b|\b{_EXECUTION}\b[^.\n]{{0,40}}?\b{_DOCUMENT}\b",
    re.IGNORECASE,
)
#: A decision that changes when something happens: a rollout postponed, a go-live moved. On the
#: onboarding's timing it is a ``decision`` (a choice of setup stays onboarding; a meeting moved
#: stays a meeting, as the other topics keep their own decisions).
_RESCHEDULED = re.compile(
    r"\b(?:postpon\w*|push(?:es|ed|ing)?|delay\w*|reschedul\w*|re-?plann\w*|mov(?:e|es|ed|ing)|slip\w*|"
    r"brought forward|bring\w* forward|pull\w* (?:in|forward))\b",
    re.IGNORECASE,
)


#: A rollout's own words: the decision's sentence moves a go-live, a rollout or a cutover.
_ROLLOUT = re.compile(
    r"\b(?:go-?live|go(?:es)? live|roll-?out|rolling out|cut-?over|launch)\b", re.IGNORECASE
)


#: A change log's arrow between two values ("Go-live date changed: 2026-06-15 -> 2026-07-06").
_ARROW = re.compile(r"\S\s*(?:->|→|=>)\s*\S")


def category(text: str, lead: str = "", ignore: tuple[int, int] | None = None) -> str | None:
    """The label whose cues the text holds most (a tie goes to the earlier one), or None for noise.

    Chat is noise; so is a short text with a single cue (a subject line, a one-word reply).
    """
    if chat(text):
        return None
    opening = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0]
    if _EXECUTED.search(opening):
        return "contract"  # "Order form OF-12 countersigned.", "Amendment #2 signed by ...": the act
    best, best_score = None, 0.0
    scores = cue_scores(text, lead, ignore)
    if (_TICKET_FORM.match(text) or TICKET_KEY_OPENING.match(text)) and len(text.split()) >= 8:
        scores[LABELS.index("support issue")] += 3.0
    if _REQUEST_FORM.match(text):
        scores[LABELS.index("feature request")] += 3.0
    if _BILLING_CADENCE.search(text):
        # how often the customer is billed is pricing (LABELS.md: choosing a billing plan), whatever
        # contract words come with it ("... into the order form", "this subscription")
        scores[LABELS.index("pricing")] += 1.5
    if fix_confirmed(text, explicit=True) is not None and not (lead and decided(lead)):
        # a fault confirmed fixed ends a support issue (in a note stating no decision, whose topic
        # the decision would name)
        scores[LABELS.index("support issue")] += 2.0
    for label, score in zip(LABELS, scores, strict=True):
        if score > best_score:
            best, best_score = label, score
    if len(text.split()) < 5 and best_score < 2:
        return None
    if best is None and any(decided(s) for s in re.split(r"(?<=[.!?])\s+|\n", text)):
        # a decision on no topic of its own ("will not expand to the Paris office this year") is
        # still a decision, not noise
        return "decision"
    logged_move = _RESCHEDULED.search(lead) is not None or re.search(r"\bchanged\b", lead, re.I) is not None
    moved = lead and logged_move and (decided(lead) is not None or _ARROW.search(lead))
    if moved and (best == "onboarding" or _ROLLOUT.search(lead)):
        # a rollout postponed or a go-live moved: a decision on no other topic, whatever else the
        # note goes on to say (a weekly's other bullets: a workaround, an import)
        return "decision"
    return best
