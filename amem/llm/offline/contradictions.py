"""Quantities and the facts they state, and which earlier note a new one makes untrue.

A contradiction needs the same kind of fact stated differently, each stated as a fact (not a
quote, an offer, a question or a budget): a price per seat ($42, then $55) or per any other unit
the product is sold by (each unit its own slot: $34, then $36 a driver), a seat count (120, then
150, or "That takes us to 150"), a plan (the annual plan, then monthly billing, or "no longer
wants the annual plan"), a date of the same event (the renewal moved from October 1 to January
15), a person in a role (a new champion, the decision now with the new CFO), or a reversed
decision ("decided not to roll out" after "will decide on rolling out"). Only the newest earlier
note stating that kind of fact is contradicted: it holds the current value, older ones were
retired by it. A fix confirmed for a reported fault retires the report (``retired_fault``):
"fails to save" is no longer true; a fix planned, a workaround or a diagnosis retires nothing.
A quantity (a price, a count, a plan) retires only a note on the same topic (``same_topic``: the
two notes' categories): a note is retired when its main fact is made untrue, and a contract signed
or a meeting held stays true when a price it named changes.
Which of the two notes is newer in time the pipeline decides, not this module; a note said
after the one being analysed is asked the other way round (``made_untrue``): whether it makes the
analysed note's fact untrue.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from amem.llm.offline import dates
from amem.llm.offline.reasons import DECISION
from amem.llm.offline.reasons import decided as decision_taken
from amem.llm.offline.text import CALENDAR, SPELLED, STOP, WORD, readable, sentences, spelled, stem

#: A unit a per-seat price is quoted in: all name the same slot (the price of one licence).
_UNIT = r"(?P<unit>seat|user|licen[cs]e|head|member|agent|editor)s?\b"
#: A period, not a unit: "$19/month" is a fee, not the price of one of something.
_PERIOD = r"(?:month|mo|year|yr|annum|week|wk|day|hour|hr|minute|min|quarter|qtr|term|period|cycle|time)s?\b"
#: Any other unit a product is sold by ("$34/driver", "$450 per depot", "$2 per shipment"), named
#: after "per" or "/": each its own slot, so the price of a driver never meets the price of a depot.
#: A period a plan is billed by ("$19/month"), not a metered unit: usage billed by the minute, the
#: hour or the day ("$0.08 per minute") is the price of one of something.
_BILLING_PERIOD = r"(?:month|mo|year|yr|annum|week|wk|quarter|qtr|term|period|cycle|time)s?\b"
_OTHER_UNIT = rf"(?!{_BILLING_PERIOD})(?P<other>[a-z]{{3,}}?)(?:e?s)?\b(?!-)"
#: The abbreviations of per-unit pricing: per employee / user / member per month (or year).
_PER_ABBREVIATION = {"pepm": "employee", "pepy": "employee", "pupm": "seat", "pupy": "seat", "pmpm": "member"}
_PER = (
    rf"\s*(?P<abbr>{'|'.join(_PER_ABBREVIATION)})\b|"  # "$11.75 PEPM"
    rf"(?:\s*/\s*|\s+(?:per|a|an|each|for each)\s+)(?:(?:named|paid|licensed)\s+)?{_UNIT}|"
    # "$39/u/mo": a user in a deal desk's shorthand
    r"\s*/\s*u(?=\s*/|\b)|"
    # "per researcher seat", "per full user": a seat of some kind is a seat
    r"\s+per\s+(?-i:[a-z]{3,})\s+(?:seat|user|licen[cs]e)s?\b|"
    # "per registered attendee", "per concurrent runner"
    rf"(?:\s*/\s*|\s+per\s+)(?:(?:[a-z]+(?:ed|ive)|concurrent|additional|extra|billable)\s+)?{_OTHER_UNIT}"
)
#: ISO codes a price is written with, before or after the amount ("EUR 189", "2,450 INR").
_CODES = r"USD|EUR|GBP|AUD|CAD|NZD|CHF|SEK|NOK|DKK|PLN|INR|SGD|HKD|JPY|ZAR|AED|BRL|MXN"
#: An amount: a currency sign or code before, or a currency code or word after.
_AMOUNT = (
    r"(?:(?P<cur>[$€£])\s?(?P<num>\d[\d,]*(?:\.\d+)?)(?!\s?[kKmM]\b)|"
    rf"(?P<num2>\d[\d,]*(?:\.\d+)?)\s?(?P<cur2>{_CODES}|dollars|euros|pounds)\b|"
    rf"\b(?P<cur3>(?-i:{_CODES}))\s?(?P<num3>\d[\d,]*(?:\.\d+)?)(?!\s?[kKmM]\b|[\d,.]*\s?(?:lakh|crore|million|bn)\b))"
)
_MONEY = re.compile(rf"{_AMOUNT}(?P<per>{_PER})?", re.IGNORECASE)
#: "the per-seat price ... $55", "seat price of €30": the unit named before the amount.
_PRICE_BEFORE = re.compile(
    r"\b(?:per[- ](?:seat|user|licen[cs]e)|(?:seat|user|licen[cs]e) (?:price|rate|cost|fee))\b"
    r"[^.;$€£]{0,40}$|"
    # "130 seats @ $45" (each at), "seats go to $45" (the seats' price changes)
    r"\b(?:seats?|users?|licen[cs]es?)\s*@\s*$|"
    r"\b(?:seats?|users?|licen[cs]es?)\s+(?:go(?:es)?|went|move[sd]?|drop(?:s|ped)?|rise[sn]?|rose|"
    r"fall(?:s|en)?|fell|change[sd]?)\s+(?:up\s+|down\s+)?to\s*$",
    re.IGNORECASE,
)
_CURRENCY = {"usd": "$", "dollars": "$", "eur": "€", "euros": "€", "gbp": "£", "pounds": "£"}


def _currency(match: re.Match[str]) -> str:
    """One name per currency, however written: "$", "USD" and "dollars" are one."""
    code = match.group("cur") or match.group("cur2") or match.group("cur3")
    return _CURRENCY.get(code.lower(), code.upper())


#: A count of licences: "150 seats", "90 named users", "a seat count of 95", "95-seat licence".
_COUNT = re.compile(
    # "150 seats", "90 named users", "150 Growth seats" (a plan's name between)
    # (not the digits after a point: "SCIM 2.0 user provisioning" is a version, not a count)
    r"(?<![.\d$€£])\b(?P<num>\d[\d,]*)\s+(?:(?:named|paid|licensed|total|more|fewer|extra|additional)\s+|"
    # "30 organiser seats", "150 Growth seats": one word naming the kind, or a plan's name
    r"(?-i:[A-Z][a-z]+|(?!(?:per|each|for|from|of|at|to|in|on|and|or|new|the)\b)[a-z]{3,})\s+)?"
    r"(?P<unit>seat|user|licen[cs]e)s?\b|"
    r"\b(?:seat|user|licen[cs]e) count\b[^.;\d]{0,20}?(?P<num2>\d[\d,]*)\b|"
    # "140u @ $39": users in a deal desk's shorthand
    r"(?<![.\d$€£/])\b(?P<num3>\d[\d,]*)u\b(?=\s*(?:@|at\b|[,)]|->|→|$|\s+(?:total|now|on|for)\b))|"
    # "Licensed seats provisioned: 85": a labelled count
    r"\b(?:seats?|users?|licen[cs]es?)\b[^.;\d$€£:]{0,30}:\s*(?P<num4>\d[\d,]*)\b(?!\s*(?:%|/|per\b))",
    re.IGNORECASE,
)
#: The total a change comes to, said after it: "That takes us to 36.", "That makes 46 drivers
#: total", "which brings the account to 120 seats", "That takes us from 44 leased to 37."
_RESULT_TOTAL = re.compile(
    r"\b(?:takes?|took|taking|brings?|brought|bringing|gets?|getting|puts?|putting)\s+"
    r"(?:us|them|it|the (?:total|count|account|contract|team)|our total|their total)\s+"
    r"(?:from\s+\d[\d,]*\s+(?:[a-z]+\s+)?)?(?:up\s+|down\s+)?to\s+(?P<num>\d[\d,]*)"
    r"(?:\s+(?P<unit>[a-z]{3,}?)(?:e?s)?\b)?(?!\s*(?:%|percent|k\b|[.,]\d))|"
    r"\b(?:that|which|this)\s+(?:makes|brings|takes)\s+(?:it\s+|us\s+)?(?P<num2>\d[\d,]*)\s+"
    r"(?:[a-z]+\s+)?(?P<unit2>[a-z]{3,}?)(?:e?s)?\s+(?:in\s+)?total\b",
    re.IGNORECASE,
)
#: "25 more seats (85 -> 110)", "seats go from 85 to 110": the number the count changes to.
_COUNT_CHANGE = re.compile(
    r"\b(?:seats?|users?|licen[cs]es?)\b[^.;\d]{0,20}?\(?\d[\d,]*\s*(?:->|→|=>|to)\s*(?P<num>\d[\d,]*)\b",
    re.IGNORECASE,
)
#: The count a change comes to, said as a total after a count of seats or licences ("book 25
#: additional licences, so in total 145"); not a total of time or money.
_IN_TOTAL = re.compile(
    r"\b(?:seats?|users?|licen[cs]es?)\b[^.;]{0,40}?\bin total\s+(?P<num>\d[\d,]*)\b"
    r"(?!\s*(?:%|percent|k\b|[.,]\d|[a-z]*(?:minute|hour|day|week|month|year|dollar|euro|eur|usd|gbp)))",
    re.IGNORECASE,
)
#: A sentence that offers, asks or quotes a price (someone's position in a negotiation).
_OFFER = re.compile(
    r"\b(?:offer\w*|propos\w*|quot\w*|re-?quot\w*|counter\w*|wants?|asks?|asked|asking|held at|pitch\w*)\b",
    re.IGNORECASE,
)
#: An offer that replaces the earlier ones: "Revised quote", "Requote", "updated proposal".
_REVISED = re.compile(r"\b(?:revis\w*|re-?quot\w*|updated|new (?:quote|offer|proposal))\b", re.IGNORECASE)
#: After a change in seats, the total it comes to: "+30 seats (150 total)", "a total of 150".
_TOTAL = re.compile(
    # "+30 seats (180 total)", "+30 seats → 180 total", "46 additional seats, 66 in total"
    r"(?:\b(?:seats?|users?|licen[cs]es?)\b[^.;\d]{0,5}?(?:\(|->|→|=>|,)\s*|\btotal(?:\s+of)?\s+)(?P<num>\d[\d,]*)"
    r"(?:\s+(?:in\s+)?total\b|\s+(?:seats?|users?|licen[cs]es?)\b)|"
    r"\(\s*(?P<num2>\d[\d,]*)\s+total\s*\)",
    re.IGNORECASE,
)
#: After a count: people using the product, not the licences bought ("40 users active so far").
_USAGE_AFTER = re.compile(
    r"^\s*(?:are\s+|were\s+)?(?:active|logged|log in|use|using|online|onboarded|invited|trained)\b|"
    # licences said to lie idle are a part of the contract's count, not a new count
    r"^\s*(?:are\s+|were\s+|stay\s+|sit\s+|left\s+)?(?:idle|unused|inactive|out of use|not in use|"
    r"unassigned|unprovisioned)\b",
    re.I,
)
#: Before a count: "40 of 120", "90 weekly active": usage, not the contract.
_USAGE_BEFORE = re.compile(r"\b(?:weekly|daily|monthly)?\s*active\s*$|\bof\s*$", re.I)
#: A sentence that quotes, offers, asks, wishes or budgets rather than states what holds.
_NOT_A_FACT = re.compile(
    r"\?|\b(?:propos\w*|counter\w*|offer\w*|quote[ds]?|quoting|would|could|can|if|unless|whether|budget\w*|"
    r"asked|question|hold the|evaluating|considering|thinking about|might|maybe|perhaps|"
    r"wants?|asks?|asking|demand\w*|pushed back|plans? to|planning|planned|about|around|roughly|"
    r"approximately|expects?|hopes?|hoping|would like|ideally)\b",
    re.IGNORECASE,
)
#: A lead-in naming the question a sentence answers ("Kenji, to your question on the iOS port: ",
#: "Re what you asked about overage - "): what follows it is stated, not asked.
_ANSWER_LEAD = re.compile(
    r"^[^:?]{0,60}\b(?:your|the|their|his|her) question\b[^:?]{0,40}:\s+|"
    r"^[^:?]{0,30}\b(?:you|they|he|she) asked(?: about| re)?\b[^:?]{0,40}:\s+",
    re.IGNORECASE,
)
#: Words that say a value changes or is newly set: a value stated without one (or without a
#: settlement in the note, below) may be another party's, another product's or an old one.
_CHANGE = re.compile(
    r"\b(?:now|new|newly|no longer|any ?more|any longer|instead|rather than|chang\w*|switch\w*|mov\w*|"
    r"becom\w*|became|go(?:es|ing)? (?:to|up|down|from)|went (?:to|up|down)|up from|down from|"
    r"increas\w*|decreas\w*|reduc\w*|rais\w*|lower\w*|cut\w*|drop\w*|add(?:s|ed|ing)?|remov\w*|"
    r"expand\w*|grow\w*|shrink\w*|upgrad\w*|downgrad\w*|updat\w*|revis\w*|re-?quot\w*|re-?pric\w*|"
    r"adjust\w*|amend\w*|renew\w*|extend\w*|more|fewer|extra|additional|as of|effective|from|"
    r"starting|provision\w*|chose|chosen|choos\w*|opt\w*|decid\w*|approv\w*)\b|->|→",
    re.IGNORECASE,
)
#: What settles a quote or an offer into a fact, whatever else the sentence says.
_SETTLED = re.compile(
    # "negotiated down to $49", "after the renegotiation": the value a negotiation ended on
    r"\b(?:accepted|agreed|signed|settled|confirmed|countersigned|closed|(?:re-?)?negotiated(?!\s+(?:on|over)\b)|"
    r"(?:after|following|with|in) (?:the|a|our|their) re-?negotiation)\b",
    re.I,
)
#: Words before a value that make it the old one ("150 instead of 120", "(was 120)", "from $42 to").
_OLD_VALUE_BEFORE = re.compile(
    r"\b(?:instead of|rather than|was|were|from|up from|down from|replacing|not|previously|formerly|"
    r"old\s*:?|(?:previous|prior)\s*:)"  # a change log's "(old: 42,50)", "(old 42,50)"
    r"\s*(?:the\s+)?(?:[$€£]\s?)?$",
    re.I,
)
#: Before a date: the one a move leaves ("moves from July 1 to ...", "from 2027-06-01 ->").
_FROM_BEFORE = re.compile(
    r"\b(?:from|was|previously|formerly|old\s*:?|(?:previous|prior)\s*:)\s*(?:the\s+)?$", re.I
)
#: Before an amount: the catalogue's price ("lists at $45", "list price of $45").
_LIST_PRICE = re.compile(r"\b(?:lists? at|list price(?: of| is)?|at list|listed at)\s*$", re.IGNORECASE)
#: Before an amount, in a statement: the list price named ("the Enterprise list price to be £72").
_LIST_PRICE_NAMED = re.compile(r"\blist pric(?:e|es|ing)\b[^.;:$€£\d]{0,30}?$", re.IGNORECASE)
#: A heading over the catalogue's prices ("As promised, our list pricing:", "Rate card:"): the
#: prices listed in the lines under it are what the vendor asks of anyone, not this customer's
#: price or offer. (Prices walked through in the sentence itself stay offers: "Walked list
#: pricing: Professional $65/seat".)
_CATALOGUE = re.compile(
    r"\b(?:list pric\w*|price list|pricing overview|rate card|standard pricing|public pricing)\b"
    r"[^.;:]{0,30}:\s*$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d+[.)])\s")
#: Before a value: a bound, not the value itself ("under $50", "above 100 seats").
_BOUND_BEFORE = re.compile(
    r"\b(?:under|below|above|over|beyond|more than|less than|fewer than|at most|at least|"
    r"no more than|exceed\w*|cap\w*(?: \w+){0,2} at|max(?:imum)?|min(?:imum)?)\s*(?:[$€£]\s?)?$",
    re.I,
)
#: What makes a sentence a plan's statement rather than a question or an option.
_NOT_A_CHOICE = re.compile(r"\?|\b(?:propos\w*|offer\w*|would|could|if|considering|evaluating)\b", re.I)

#: Billing cadence: "annual plan", "monthly billing", "quarterly invoicing", "yearly subscription".
_CADENCE_WORD = r"(?:annual|annually|yearly|monthly|quarterly)"
_CADENCE_NOUN = (
    r"(?:plan|billing|subscription|payments?|invoic\w*|contract|pricing|terms?|commitment|"
    r"pre-?pa(?:y|id|yment))"
)
_CADENCE = re.compile(
    rf"\b(?P<plan>{_CADENCE_WORD})\s+{_CADENCE_NOUN}\b|\b(?:billed|invoiced|pay(?:s|ing)?)\s+(?P<plan2>"
    r"annually|yearly|monthly|quarterly)\b|"
    # the first of two cadences sharing one noun: "from annual to quarterly billing"
    rf"\b(?P<plan4>{_CADENCE_WORD})(?=\s+(?:to|or|and|->|→)\s+{_CADENCE_WORD}\s+{_CADENCE_NOUN}\b)",
    re.IGNORECASE,
)
_TIER_WORDS = (
    r"starter|basic|pro|professional|business|team|growth|enterprise|premium|standard|plus|essentials|"
    r"advanced|ultimate|scale|platinum|gold|silver|bronze|free|lite|core|elite"
)
#: A named plan or tier: a known tier word, or any capitalised name, before "plan", "tier"...
_TIER = re.compile(
    rf"\b(?P<plan>(?i:{_TIER_WORDS})|[A-Z][a-z]+)\s+(?i:plan|tier|edition|package|bundle)\b|"
    # a price "on" a capitalised tier name: "$47/seat on Enterprise", "$41/seat/month on Professional"
    rf"(?<=[\d/a-z] on )(?P<plan3>(?=[A-Z])(?i:{_TIER_WORDS}))\b(?!\s+(?i:plan|tier|edition))",
)
#: After a plan's name: it belongs to another product ("the Pro plan of their email tool").
_OTHER_PRODUCT_AFTER = re.compile(r"\s+(?:of|on|in|with)\s+(?:their|its|his|her|another|an?)\s+[\w-]+", re.I)
_DROPPED_BEFORE = re.compile(
    r"\b(?:no longer (?:wants?|needs?|uses?)|(?:doesn'?t|does not|don'?t|do not) (?:want|need)|"
    r"drop(?:s|ped|ping)?|cancel(?:s|led|ed|ling)?|leav(?:e|es|ing)|mov\w* (?:away )?from|"
    # (not across a "to": in "from annual to quarterly billing" the second is where it goes)
    r"switch\w* (?:away )?from|from|over|instead of|rather than|not|off)\b"
    r"(?:(?!\b(?:to|into)\b|->|→)[^.;]){0,15}$",
    re.IGNORECASE,
)
#: Of those, the ones that say the plan is given up (the rest only name the old one).
_GIVEN_UP = re.compile(
    r"\b(?:no longer|drop|cancel|leav|doesn'?t|does not|don'?t|do not|mov\w* (?:away )?from|"
    r"switch\w* (?:away )?from|instead of|rather than)",
    re.IGNORECASE,
)
#: A preference or a change, which makes the plan a sentence names the one that now holds.
_CHOSEN = re.compile(
    r"\b(?:switch\w*|mov\w*|chang\w*|go\w*|upgrad\w*|downgrad\w*)\s+(?:\w+\s+){0,2}?to\b|"
    r"\b(?:is|are) (?:now )?on\b|\bpays?\b|\bsigned\b|\bprefers?\b|\bnow\b|\b(?:billed|invoiced)\b|"
    # "We go with quarterly invoicing", "We'll take the monthly billing option"
    r"\b(?:go|goes) with\b|\btak(?:e|es|ing)\s+the\s+(?:[\w-]+\s+){0,3}?option\b",
    re.IGNORECASE,
)
#: Dated events, each named by its slot ("renews", "renewal", "renewal date" are one slot).
_EVENT_SLOTS = (
    # an expiry is the renewal's only when a contract expires, not a certificate or a card
    (
        "renewal",
        r"renew\w*|contract end|end of (?:the )?term|"
        r"(?:contract|subscription|term|licen[cs]es?|agreement|plan)\s+expir\w*|"
        r"expir(?:y|ation|ation date)\s+of\s+(?:the\s+|their\s+|our\s+)?"
        r"(?:contract|subscription|term|licen[cs]e)",
    ),
    # a system's own cutover ("the payroll cutover") is a step of its own within a go-live; a bare
    # "cutover" is the go-live's
    ("cutover", r"(?:payroll|data|system|ledger|erp|crm|hris|billing|database|telephony|email)\s+cut-?over"),
    ("go-live", r"go-?live|go(?:es)? live|launch\w*|cut-?over|roll-?out|rolling out"),
    ("kickoff", r"kick-?off|start date|onboarding start"),
    ("review", r"qbr|business review|quarterly review|steering (?:committee|group)|board meeting"),
    ("signature", r"signature|sign(?:ing)? date|countersign\w*"),
    ("migration", r"migration"),
    ("deadline", r"deadline|due date"),
)
_EVENTS = re.compile("|".join(f"(?P<e{i}>{p})" for i, (_, p) in enumerate(_EVENT_SLOTS)), re.IGNORECASE)
_MOVE = re.compile(
    r"\b(?:mov\w*|push\w*|postpon\w*|reschedul\w*|delay\w*|shift\w*|chang\w*|slip\w*|brought forward|"
    r"bring\w* forward|pull\w* (?:in|forward)|forward|bump\w*|new date|now|instead|updated?|reset|set to)\b",
    re.I,
)

#: Clause boundaries: "..., as 10 users moved to kiosks" moves the users, not the renewal.
_CLAUSE_SPLIT = re.compile(r";|,\s+|\s+(?:as|because|since|after|while|so that|and)\s+", re.IGNORECASE)

_ROLES = {
    "contact": r"champions?|(?:main|primary|key|day-to-day|new|our) contact|point of contact|"
    r"(?:executive )?sponsor|go-to person|account lead",
    # "DM: Dana K." as a record's field names the decision maker
    "decider": r"decision[- ]?makers?|(?-i:DM)(?=\s*[:=(])|"
    r"(?:\w+ )?decisions? (?:now )?(?:sits?|lies|rests?|is) with|"
    r"signs? (?:anything|off|everything|contracts?|the contract)|signer|signatory|sign-off|"
    # "Rajesh Pillai will sign the order form", "approval and signature ... rest with X"
    r"(?:will|'ll|to) sign (?:the |our |any |all )?(?:order form|contract|agreement|amendment|renewal)s?|"
    r"(?:approval|signature)s?\b[^.;]{0,60}\b(?:sits?|lies|rests?|will rest|now sits?) with|"
    # "Satoko signs, not Ellen", "Satoko still signs.": who signs, with nothing after it
    r"(?<=[a-z] )(?:(?:still|now) signs(?=\s*(?:[,.;]|$))|signs(?=,\s*not\b))|"
    r"economic buyer|budget (?:owner|holder)|holds? the budget|final (?:say|call|word)|"
    r"(?:approves|signs off on) (?:anything|spend|purchases|the budget|all)|"
    r"owns? (?:the )?(?:\w+ )?(?:decisions?|budget|renewal|contract)|"
    r"in charge of (?:the )?(?:budget|renewal|purchas\w*|buying)|decides? on (?:the )?(?:renewal|budget)|"
    # "takes over the Tallyline budget": the budget, the renewal or its decision changes hands
    r"(?:takes?|took|taking) over (?:all |the )?(?:[\w-]+ )?(?:budget|renewal|decision|contract)|"
    # "must be approved and signed by our Managing Partner, Ms Eleanor Whitcombe"
    r"(?:must|needs? to|has to|have to) be (?:approved|signed)(?: and (?:approved|signed))? by",
}
_ROLE = {kind: re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE) for kind, pattern in _ROLES.items()}
_ROLE_CHANGE = re.compile(
    r"\b(?:new|now|next|takes? over|took over|taking over|no longer|leaving|left|retir\w*|replac\w*|"
    r"moved on|steps? down|stepping down|stepped down|handed over|hands over|succeed\w*|successor|"
    r"from now on|going forward|joined|has joined|promoted|hired|resigned|departed|instead|officially|"
    r"appointed)\b",
    re.IGNORECASE,
)
#: A capitalised word, letters of any Latin script ("Jürgen", "Åsa", "Renée").
_CAP = r"[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+"
_NAME = re.compile(rf"\b{_CAP}(?:[ -]{_CAP})+\b")
#: A person who leaves or is replaced: no longer holds any role.
_GONE = re.compile(
    rf"\b(?P<a>I|{_CAP}(?:\s+{_CAP})?)\s+(?:(?:am|is|was|has|have|will be)\s+)?(?:leaving|leaves|no longer|"
    r"left|retiring|retires|retired|resigned|departed|marked as departed|stepping down|stepped down|"
    r"moving on|moved on|(?<=is )replaced|(?<=was )replaced|(?<=been )replaced|out of the picture|gone)\b|"
    r"\b(?:replac\w*|succeed\w*|takes? over from|took over from|instead of)\s+"
    rf"(?P<b>{_CAP}(?:\s+{_CAP})?)",
)
_NEGATED = re.compile(
    r"\b(?:no longer\s+(?P<v1>\w+)|decided (?:not to|against)\s+(?P<v2>\w+)|not to\s+(?P<v3>\w+)|"
    r"(?:will not|won't|not going to|(?:does|do|did)(?: not|n't))\s+(?P<v4>\w+)|"
    # "we're not rolling it out after all": a plan in the progressive, negated
    r"(?:are|is|am|'re|'s)\s+not\s+(?P<v5>\w+ing)|cancell?ed|called off|"
    r"backed out of|pulled out of|pulled the plug on|dropped|abandoned|scrapped|shelved|reversed|"
    r"walked away from)\b(?P<obj>[^.;:]*)",
    re.IGNORECASE,
)
#: A decision undone, in the words people use for it: "we've changed our minds on the add-on",
#: "reversing the decision on Medicine", "change of plan", "auto-publish is back ON", "flipped".
_UNDO = re.compile(
    r"\b(?:changed (?:our|their|his|her|my|the) minds?|change of plan|revers(?:e|es|ed|ing)|"
    r"flip(?:s|ped)|u-turn(?:ed)?|overturn\w*|rescind\w*|reinstat\w*|"
    r"(?:is|are|was|were|'s|'re|be|been|goes|went|comes?|came|now)\s+back\s+on\b(?!\s+(?:track|schedule))|"
    r"(?-i:back ON)|(?:turn|switch)(?:ed|ing|s)? (?:it |them )?back on)\b",
    re.IGNORECASE,
)
#: "... after all": undoes a decision when the sentence commits to something ("will come onto the
#: platform this semester after all"); "after all, they are our biggest site" undoes nothing.
_AFTER_ALL = re.compile(r"(?<=\w )after all\b", re.IGNORECASE)


@dataclass(frozen=True)
class Facts:
    """What one note states, kind by kind."""

    prices: frozenset[tuple[str, str, float]]
    counts: frozenset[tuple[str, float]]
    plans: frozenset[tuple[str, str]]  # (dimension, plan) chosen
    dropped: frozenset[tuple[str, str]]  # plans it no longer wants
    events: frozenset[tuple[str, str]]  # (event, MM-DD) dates of events it states
    moved_event: bool  # it moves an event's date
    qualifiers: frozenset[tuple[str, str]]  # (event, the name before it: "the Ghent go-live")
    roles: frozenset[tuple[str, str]]  # (role kind, person)
    role_change: frozenset[str]  # role kinds it changes
    gone: frozenset[str]  # persons it says leave or are no longer involved
    negated: frozenset[str]  # the roots of what it reverses
    pending: frozenset[str]  # the roots of a decision it says is still to be taken
    left: frozenset[str]  # names it moves away from ("moving from Frankfurt to Virginia")
    taken: frozenset[str]  # the roots of the sentences stating a decision taken
    evidence: dict[str, str]  # kind -> the sentence stating it
    signalled: frozenset[str]  # price, count, plan: stated with a change cue, or in a note settling them
    main: Facts | None = None  # the same, read from main clauses only (see ``main_text``)
    offers: frozenset[tuple[str, str, float]] = frozenset()  # per-seat prices offered, asked or quoted
    rejected: frozenset[str] = frozenset()  # roots of the option a decision turns down ("rather than X")
    adopted: frozenset[str] = frozenset()  # roots of the option it switches to ("switching to X")
    revises: bool = False  # an offer that says it revises the ones before it ("Revised quote: ...")
    offered: bool = False  # the note presents itself as an offer: its plans are proposed, not chosen
    #: (event, who or where, MM-DD): an event's date with the name its clause gives it ("Boston
    #: go-live is July 13, Toronto unchanged on July 20"), so dates of two sites are not compared
    placed: frozenset[tuple[str, str, str]] = frozenset()
    #: (event, MM-DD or ISO day): the old date a move names ("moves from July 1 to January 1"):
    #: the note it makes untrue is the one stating that date, not any newer one with another
    moved_from: frozenset[tuple[str, str]] = frozenset()
    #: the roots of what it says is undone ("we've changed our minds on the SMS add-on"): a decision
    #: taken before, whichever way it went, no longer holds
    undoes: frozenset[str] = frozenset()


def root(word: str) -> str:
    """A stem that also meets verb forms ("rolling"/"roll", "renewed"/"renew")."""
    w = stem(word)
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    return w


def roots(text: str, *, calendar: bool = False) -> set[str]:
    """The roots of the meaningful words (calendar words too when ``calendar``: "multi-year")."""
    return {
        root(w)
        for w in WORD.findall(text.replace("-", " "))
        if len(w) > 1 and w.lower() not in STOP and (calendar or w.lower() not in CALENDAR)
    }


#: The words of the undoing itself, not of what is undone.
_UNDO_WORDS = frozenset(
    root(w)
    for w in (
        *("change", "changed", "mind", "minds", "plan", "decision", "reverse", "reversed", "reversing"),
        *("reverses", "flip", "flips", "flipped", "back", "after", "all", "himself", "herself"),
        *("themselves", "turn", "turned", "switch", "switched"),
    )
)


def _undone(found: Sequence[str]) -> tuple[set[str], str | None]:
    """The roots of what a note says is undone, and the sentence saying so: the sentence with the
    cue, and the one before it when the cue's own sentence names too little ("Marcus reversed
    himself." after "auto-publish is back ON")."""
    for i, s in enumerate(found):
        after_all = _AFTER_ALL.search(s) and (_COMMITS.search(s) or decision_taken(s) is not None)
        if not (_UNDO.search(s) or after_all):
            continue
        # what is undone, not why: the clause up to a reason ("..., as they've hired help")
        words = roots(_main_clause(s)) - _UNDO_WORDS
        if len(words) < 3 and i > 0:
            words |= roots(_main_clause(found[i - 1])) - _UNDO_WORDS
        if len(words) >= 2:
            return words, s
    return set(), None


def _common_words(text: str) -> set[str]:
    """The roots of a sentence's lowercase content words: what it is about, without the names."""
    return {root(w) for w in WORD.findall(text) if w[0].islower() and len(w) > 2 and w.lower() not in STOP}


def _amount(num: str) -> float:
    """An amount as written: "1,250" is a thousand and more, "39,00" and "42,5" have a decimal comma."""
    if re.fullmatch(r"\d+,\d{1,2}", num):
        return float(num.replace(",", "."))
    return float(num.replace(",", ""))


def _event_slot(match: re.Match[str]) -> str:
    index = next(i for i, value in enumerate(match.groups()) if value is not None)
    return _EVENT_SLOTS[index][0]


def _prices(s: str, *, offered: bool = False) -> set[tuple[str, str, float]]:
    """Prices per seat (or per other unit) the sentence states as holding (not an old value it names).
    ``offered``: the sentence offers them, where a list price quoted to the customer is an offer;
    stated as a fact, a list price is the catalogue's ("we understand the list price to be £72"),
    never what this customer pays."""
    out = set()
    for m in _MONEY.finditer(s):
        if _OLD_VALUE_BEFORE.search(s[: m.start()]) or _BOUND_BEFORE.search(s[: m.start()]):
            continue
        if m.group("per") is None and not _PRICE_BEFORE.search(s[: m.start()]):
            continue  # a total, a credit or a budget: not the price of a seat
        before = s[max(0, m.start() - 50) : m.start()]
        listed = _LIST_PRICE.search(before[-25:]) or (not offered and _LIST_PRICE_NAMED.search(before))
        if listed or re.match(r"\s*list\b", s[m.end() :]):
            continue  # the catalogue's price, not what this customer pays
        cur = _currency(m)
        other = (m.group("other") or "").lower()
        unit = "seat" if not other or re.fullmatch(_UNIT, other) else other
        if m.group("abbr"):
            unit = _PER_ABBREVIATION[m.group("abbr").lower()]
        out.add((cur, unit, _amount(m.group("num") or m.group("num2") or m.group("num3"))))
    return out


#: After a count: the licences pass from one group to another, the total is unchanged.
_TRANSFER_AFTER = re.compile(r"\s+from\s+(?:the\s+|their\s+|our\s+)?[^\d.;,]{1,40}?\s+to\b", re.I)


#: After an event's name, words that keep it the head of its phrase ("the renewal date moves",
#: "go-live back two weeks"); another content word makes it a modifier ("the renewal quote").
_HEAD_NEXT = frozenset(
    # ... and irregular participles that date it ("the go-live set for Q4", "the kickoff held on")
    {
        "date",
        "dates",
        "day",
        "target",
        "window",
        "back",
        "forward",
        "up",
        "still",
        "now",
        "set",
        "put",
        "held",
        "kept",
    }
)
_MOVES_AFTER = frozenset({"to", "from", "up", "back", "forward", "out", "by", "on", "in", "into", "again"})


def _head_event(s: str) -> re.Match[str] | None:
    """The first named event of the sentence that is the head of its phrase, not a modifier of
    another noun: "the renewal moved" dates the renewal, "the renewal quote was sent" and "the
    launch party moved" date something else."""
    for m in _EVENTS.finditer(s):
        after = re.findall(r"[A-Za-z']+|[^\sA-Za-z']", s[m.end() :])[:2]
        word = after[0] if after else ""
        if not word or not word[0].isalpha() or not word[0].islower():
            return m  # punctuation, a number, a name or the end
        if word in STOP or word in _HEAD_NEXT or word.endswith("ed"):
            return m
        if (
            word.endswith("s")
            and len(after) > 1
            and after[1].lower() in _MOVES_AFTER
            # a label before a colon ("Update: the go-live moves to") governs nothing after it
            and not _MOVE.search(re.split(r"[:;]", s[: m.start()])[-1])
        ):
            return m  # "renewal moves to": a verb (not after one: "moved the kickoff notes to")
    return None


#: After a count: a number per person or per session, not the licences held ("40 users each").
_DISTRIBUTIVE_AFTER = re.compile(r"^\s*(?:each|apiece|per\s+(?!month|year|annum)[a-z]+)\b", re.I)


_DEADLINE_BEFORE = re.compile(r"\b(?:by|before|until|till|no later than|ahead of)\s+(?:the\s+)?$", re.I)
#: A sentence that opens by labelling a new date ("New date: mid-August, cutover that weekend"):
#: it moves the event it names.
_NEW_DATE = re.compile(
    r"^\W*(?:the\s+)?(?:new|revised|updated)\s+(?:[\w-]+\s+)?(?:date|day|target)\s*(?:[:\-–]|is\b|will be\b)",
    re.IGNORECASE,
)
#: Capitalised words before an event's name that say nothing of which event it is.
_NOT_A_QUALIFIER = frozenset(
    {
        "The",
        "Our",
        "Their",
        "Its",
        "This",
        "That",
        "His",
        "Her",
        "My",
        "Your",
        "A",
        "An",
        "New",
        "Final",
        "First",
        "Next",
        "Original",
        "Initial",
        "Planned",
        "Current",
        "Revised",
        "Updated",
        "Actual",
        "Official",
    }
)


def _qualifier(word: str, *, at_start: bool) -> bool:
    """Whether a capitalised word right before an event's name names which event it is ("the
    Ghent go-live", "Pharma go-live moved"): not a determiner or a generic adjective, and at a
    sentence's start not a verb form either."""
    if word in _NOT_A_QUALIFIER or word.lower() in STOP:
        return False
    return not (at_start and re.search(r"(?:ed|ing|ly)$", word))


#: Where the clause of an event's date starts ("Go-live dates: Boston July 6, Toronto July 20").
_PLACE_SPLIT = re.compile(r";|:\s|,\s+|\s+(?:and|but|while)\s+", re.IGNORECASE)


def _place(s: str, event: re.Match[str], named: re.Match[str] | None, at: int) -> str | None:
    """The name that says whose or where an event's date is: in the date's own clause, a name
    opening that clause ("..., Toronto unchanged on July 20"); else the name right before the
    event ("the Ghent go-live on May 4"). None when neither names it."""
    start = max([m.end() for m in _PLACE_SPLIT.finditer(s, 0, at)] or [0])
    if start > event.end():
        lead = re.match(r"\s*([A-Z][a-z]+)\b", s[start:at])
        if lead and _qualifier(lead.group(1), at_start=True) and lead.group(1).lower() not in CALENDAR:
            return lead.group(1)
    if named and _qualifier(named.group(1), at_start=not s[: named.start()].strip()):
        return named.group(1)
    # a name heading the event's noun phrase ("Toronto payroll cutover", "the Lyon site launch")
    phrase = re.search(r"\b([A-Z][a-z]+)\s+((?:[a-z]+\s+){1,2})$", s[: event.start()])
    if (
        phrase
        and all(w not in STOP and not w.endswith("ed") for w in phrase.group(2).split())
        and _qualifier(phrase.group(1), at_start=not s[: phrase.start()].strip())
    ):
        return phrase.group(1)
    return None


#: A count in words ("covers fifty-seven users"), read as its digits.
_SPELLED_COUNT = re.compile(
    rf"{SPELLED.pattern}(?=\s+(?:(?:named|paid|licensed|additional|more|extra)\s+)?(?:seat|user|licen[cs]e)s?\b)",
    re.IGNORECASE,
)
#: A subscription's quantity in another unit than seats: "quantity 24 vessels", "the subscription
#: goes from 24 to 30 vessels" (the unit is the slot, so vessels never meet seats).
_QUANTITY = re.compile(
    r"\b(?:quantity|qty)\s*:?\s*(?P<num>\d[\d,]*)\s+(?P<unit>[a-z]{3,}?)(?:e?s)?\b|"
    r"\b(?:subscription|contract|licen[cs]e|order|agreement)\b[^.;\d]{0,30}?\bfrom\s+\d[\d,]*\s+to\s+"
    r"(?!(?:19|20)\d\d\b)(?P<num2>\d[\d,]*)\s+(?P<unit2>[a-z]{3,}?)(?:e?s)?\b",
    re.IGNORECASE,
)


def _counts(s: str) -> set[tuple[str, float]]:
    """Numbers of licences the sentence states as holding (usage and old values left out)."""
    out = set()
    s = _SPELLED_COUNT.sub(lambda m: str(spelled(m.group(0))), s)
    for m in _QUANTITY.finditer(s):
        noun = (m.group("unit") or m.group("unit2")).lower()
        if re.match(_PERIOD, noun) or noun in {"per", "percent"}:
            continue
        unit = "seat" if re.fullmatch(_UNIT, noun) or noun in {"seat", "user"} else noun
        out.add((unit, _amount(m.group("num") or m.group("num2"))))
    for m in _COUNT.finditer(s):
        num = m.group("num") or m.group("num2") or m.group("num3") or m.group("num4")
        before = s[: m.start()]
        if _OLD_VALUE_BEFORE.search(before) or _USAGE_BEFORE.search(before) or _BOUND_BEFORE.search(before):
            continue
        if _USAGE_AFTER.search(s[m.end() :]):
            continue
        if _DISTRIBUTIVE_AFTER.match(s[m.end() :]):
            continue
        if _TRANSFER_AFTER.match(s[m.end() :]):
            continue  # "moved 20 users from the Berlin team to the Paris team": a transfer, not a total
        between = re.match(r"\s*([A-Z][a-z]+)\s", s[m.start() + len(num) :]) if m.group("num") else None
        if between and not re.fullmatch(_TIER_WORDS, between.group(1).lower()):
            continue  # "7 Osaka users": the seats of one site or team, a part of the account's count
        if re.match(r"\s*(?:more|fewer|extra|additional)\b", s[m.start() + len(num) :], re.I):
            continue  # "20 more seats": a change by, not the number held
        if re.search(r"\b(?:adds?|added|adding)\s*$", before, re.I):
            continue
        if re.search(r"(?:^|\s)[+\-−]$", before):
            continue  # "+30 seats": a change by, not the number held
        out.add(("seat", _amount(num)))
    for m in _TOTAL.finditer(s):
        out.add(("seat", _amount(m.group("num") or m.group("num2"))))
    for m in _COUNT_CHANGE.finditer(s):
        out.add(("seat", _amount(m.group("num"))))
    for m in _IN_TOTAL.finditer(s):  # "25 additional licences, so in total 145"
        out.add(("seat", _amount(m.group("num"))))
    for m in _RESULT_TOTAL.finditer(s):
        noun = (m.group("unit") or m.group("unit2") or "").lower()
        if noun and re.match(_PERIOD, noun):
            continue  # "takes us to 12 months": a term, not a count
        unit = "seat" if not noun or re.fullmatch(_UNIT, noun) else noun
        out.add((unit, _amount(m.group("num") or m.group("num2"))))
    # "40 drivers @ $36/driver/month": the units a price in the sentence is quoted per are counted too
    for _, unit, _ in _prices(s):
        if unit == "seat":
            continue
        counted = (
            rf"(?<![.\d$€£])(?<!(?-i:{_CODES}) )\b(\d[\d,]*)\s+"
            rf"(?:(?!per\b)[a-z]+\s+)?{re.escape(unit)}(?:e?s)?\b"
        )
        for m in re.finditer(counted, s, re.I):
            if not (_OLD_VALUE_BEFORE.search(s[: m.start()]) or _BOUND_BEFORE.search(s[: m.start()])):
                out.add((unit, _amount(m.group(1))))
    return out


#: A first name alone as the subject of a role's verb ("Ellen owns the budget", "Satoko still signs").
_FIRST_NAME_HOLDS = re.compile(
    r"(?:^|[\s(:,\-–—])([A-Z][a-z]{2,})\s+(?:still\s+|now\s+|also\s+)?"
    r"(?:signs|owns|approves|decides|holds|is (?:the |our |their )?(?:champion|decision[- ]maker|signer))\b"
)
#: "<someone> signs, not Ellen": the role contrasted away from a person, who no longer holds it.
_NOT_HOLDER = re.compile(r",\s*not\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b(?!\s+\w)")


#: Capitalised words of a team, a title or a form's field, not of a person ("Fleet Ops", "Consumer
#: Lending", "Economic Buyer", "Contact Roles", "Claims Operations").
_NOT_A_PERSON = frozenset(
    {
        *("ops", "operations", "lending", "buyer", "roles", "role", "group", "procurement", "finance"),
        *("team", "department", "office", "legal", "it", "sales", "support", "services", "dental"),
        *("health", "bank", "university", "council", "committee", "board", "inc", "ltd", "llp"),
        *("director", "manager", "officer", "president", "head", "vp", "cfo", "ceo", "cio", "coo"),
    }
)


def _names(clause: str) -> list[str]:
    """Full names in the clause; a capitalised function word before one ("So Osaka", "Once Bill")
    is the sentence's opening, not part of a name; a team or a title is no person."""
    out = []
    for name in _NAME.findall(clause):
        words = name.split()
        while words and words[0].lower() in STOP:
            words.pop(0)
        if len(words) >= 2 and not any(w.lower() in _NOT_A_PERSON for w in words):
            out.append(" ".join(words))
    return out


def _same_person(a: str, b: str) -> bool:
    """Whether two mentions name one person: the same name, or a first name alone and a full name
    that starts with it ("Gary" and "Gary Lindqvist")."""
    if a == b:
        return True
    short, full = sorted((a, b), key=len)
    return " " not in short and full.split()[0] == short


def _roles(s: str) -> tuple[set[tuple[str, str]], set[str]]:
    """(role kind, person) pairs stated in the sentence, and the role kinds it says changed."""
    roles: set[tuple[str, str]] = set()
    changed: set[str] = set()
    # (a title's full stop ends no clause: "Champion: Dr. Helen Okafor")
    for clause in re.split(r";|(?<!\b(?:Dr|Mr|Ms|St))(?<!\bMrs|\bDrs)(?<!\bProf)\.\s", s):
        for kind, pattern in _ROLE.items():
            if pattern.search(clause) is None:
                continue
            for name in _names(clause):
                roles.add((kind, name))
            # a first name alone as the subject of the role ("Ellen owns the budget", "Satoko signs")
            for m in _FIRST_NAME_HOLDS.finditer(clause):
                if not any(m.group(1) in full for full in _names(clause)):
                    roles.add((kind, m.group(1)))
            if _ROLE_CHANGE.search(clause):
                changed.add(kind)
    return roles, changed


#: A line that opens a message or names it, not a fact: "Hi Lena,", "Dear Maren,", "Subject: ...".
_SALUTATION = re.compile(
    r"^(?:hi|hello|hey|dear|thanks|thank you|best|regards|kind regards|cheers|subject|re|fw|fwd)\b", re.I
)
#: Where a secondary clause starts inside a sentence: a reason, a condition, a time clause, an
#: aside. What follows it qualifies the main fact; it is not the fact.
_SECONDARY = re.compile(
    r",?\s+(?:because|since|as(?! of)|given that|owing to|due to|after|while|which|whereas|so that|"
    r"once|if|unless|pro-rated|prorated)\b|;",
    re.IGNORECASE,
)
#: A sentence opened by a secondary clause ("Because they grew, they move to ..."): it ends at the comma.
_FRONTED = re.compile(
    r"^(?:because|since|as(?! of)|given that|now that|owing to|due to|after|while|once|when|if|unless|"
    r"although)\b"
    r"[^,]*,\s*",
    re.IGNORECASE,
)


def main_text(text: str) -> str:
    """What a raw log states as fact: each sentence (not a salutation or a header) without its
    secondary clauses (a reason, a condition, a relative clause). A value found only in a
    secondary clause ("..., as the group doubles as design partner for the add-on") qualifies the
    fact; it is not a fact a newer note could make untrue."""
    found = [x.text for x in sentences(readable(text)) if not _SALUTATION.match(x.text)]
    return "\n".join(_main_clause(x) for x in found)


def _main_clause(sentence: str) -> str:
    sentence = _FRONTED.sub("", sentence)
    cut = _SECONDARY.search(sentence)
    return sentence[: cut.start()] if cut and cut.start() > 0 else sentence


@lru_cache(maxsize=4096)
def facts(text: str, *, main: bool = True) -> Facts:
    """The facts a raw log states (its readable text), slot by slot, for comparison with another
    note's: per-seat price, seat count, plan, dates of named events, people in roles, reversals.
    With ``main``, also those of its main clauses alone (``Facts.main``)."""
    prices: set[tuple[str, str, float]] = set()
    offers: set[tuple[str, str, float]] = set()
    revises = False
    counts: set[tuple[str, float]] = set()
    plans: set[tuple[str, str]] = set()
    dropped: set[tuple[str, str]] = set()
    events: set[tuple[str, str]] = set()
    roles: set[tuple[str, str]] = set()
    role_change: set[str] = set()
    gone: set[str] = set()
    negated: set[str] = set()
    qualifiers: set[tuple[str, str]] = set()
    placed: set[tuple[str, str, str]] = set()
    moved_from: set[tuple[str, str]] = set()
    left: set[str] = set()
    rejected: set[str] = set()
    adopted: set[str] = set()
    pending: set[str] = set()
    taken: set[str] = set()
    evidence: dict[str, str] = {}
    signalled: set[str] = set()
    moved = False
    base = datetime(2000, 6, 15, tzinfo=UTC)
    found_sentences = sentences(readable(text))
    settles = any(_SETTLED.search(x.text) or decision_taken(x.text) for x in found_sentences)
    offered = dates.offer_note(readable(text))  # a quote or a proposal: every value in it is offered
    listing = False  # in a catalogue's lines (see ``_CATALOGUE``)
    named_before: re.Match[str] | None = None  # the last event a sentence before named
    for sentence in found_sentences:
        s = sentence.text
        heading = _CATALOGUE.search(s)
        listing = bool(heading) or (listing and (bool(_BULLET.match(s)) or bool(_MONEY.search(s))))
        priced = "" if listing and not heading else s  # the part prices count in
        said = _ANSWER_LEAD.sub("", s)  # "To your question on X: it costs $0.08" answers, as a fact
        fact = (not _NOT_A_FACT.search(said) or bool(_SETTLED.search(s))) and not offered
        cue = settles or bool(_CHANGE.search(_main_clause(s)))  # "after the update" dates, it changes nothing
        if fact:
            found_prices, found_counts = _prices(priced), _counts(s)
            prices |= found_prices
            counts |= found_counts
            if found_prices:
                evidence.setdefault("price", s)
                signalled |= {"price"} if cue else set()
            if found_counts:
                evidence.setdefault("count", s)
                # the total a change comes to ("That takes us to 36") says the count changed
                signalled |= {"count"} if cue or _RESULT_TOTAL.search(s) else set()
        elif (offered or _OFFER.search(s)) and not re.search(r"\bbudget\w*", s, re.IGNORECASE):
            # "I offered $58", "Victor wants $56", "Quote Q-12: $48 per seat"
            found_offers = _prices(priced, offered=True)
            offers |= found_offers
            if found_offers:
                evidence.setdefault("offer", s)
            if _REVISED.search(s):
                revises = True
        decided = bool(DECISION.search(s)) or bool(_CHOSEN.search(s))
        for pattern, dimension in ((_CADENCE, "cadence"), (_TIER, "tier")):
            for m in pattern.finditer(s):
                if _OTHER_PRODUCT_AFTER.match(s[m.end() :]):
                    continue  # "the Pro plan of their email tool": another product's plan
                groups = m.groupdict()
                word = (
                    groups.get("plan")
                    or groups.get("plan2")
                    or groups.get("plan3")
                    or groups.get("plan4")
                    or ""
                ).lower()
                named = re.fullmatch(_TIER_WORDS, word)
                if dimension == "tier" and (word in STOP or (m.start() == 0 and not named)):
                    continue  # "The plan", "Rollout plan" opening a sentence: not a plan's name
                plan = (dimension, {"yearly": "annual", "annually": "annual"}.get(word, word))
                if _DROPPED_BEFORE.search(s[: m.start()]):
                    if _GIVEN_UP.search(s[max(0, m.start() - 40) : m.start()]):
                        dropped.add(plan)
                        evidence.setdefault("plan", s)
                        signalled.add("plan")  # giving a plan up is a change
                elif decided and not _NOT_A_CHOICE.search(s):
                    plans.add(plan)
                    evidence.setdefault("plan", s)
                    signalled |= {"plan"} if cue else set()
        event = _head_event(s)
        if event is None and named_before is not None and _NEW_DATE.match(s):
            # "We have to push go-live. [...] New date is Monday, May 4th.": the new date of the
            # event named last
            shown_dates = [
                m for m in dates.mentions(s, base) if m.absolute and not dates.dates_something_else(s, m)
            ]
            for mention in shown_dates:
                shown = mention.when.isoformat() if re.search(r"\d{4}", mention.text) else None
                events.add((_event_slot(named_before), shown or mention.when.strftime("%m-%d")))
            if shown_dates:
                moved = True
                evidence.setdefault("date", s)
        named_before = event or named_before
        if event and not _NOT_A_CHOICE.search(s):
            # a date in an aside or one that dates a message ("(per call notes of 3 Nov)") is not
            # the event's
            mentioned = [m for m in dates.mentions(s, base) if m.absolute]
            olds = [m for m in mentioned if _FROM_BEFORE.search(s[: m.start])]
            found = [
                m
                for m in mentioned
                if not _OLD_VALUE_BEFORE.search(s[: m.start])
                and not dates.dates_something_else(s, m)
                # "commits to the go-live by October 31": a deadline, not the event's date
                and not _DEADLINE_BEFORE.search(s[: m.start])
            ]
            named = re.search(r"\b([A-Z][a-z]+)\s+$", s[: event.start()])
            for mention in found:
                shown = mention.when.isoformat() if re.search(r"\d{4}", mention.text) else None
                events.add((_event_slot(event), shown or mention.when.strftime("%m-%d")))
                place = _place(s, event, named, mention.start)
                if place:
                    placed.add((_event_slot(event), place, shown or mention.when.strftime("%m-%d")))
            if found and olds:
                for mention in olds:
                    shown = mention.when.isoformat() if re.search(r"\d{4}", mention.text) else None
                    moved_from.add((_event_slot(event), shown or mention.when.strftime("%m-%d")))
            if found and named and _qualifier(named.group(1), at_start=not s[: named.start()].strip()):
                qualifiers.add((_event_slot(event), named.group(1)))
            if found and (
                any(_MOVE.search(c) and _head_event(c) for c in _CLAUSE_SPLIT.split(s)) or _NEW_DATE.match(s)
            ):
                moved = True  # the clause that names the event also moves it
                evidence.setdefault("date", s)
        found_roles, changed = _roles(s)
        roles |= found_roles
        role_change |= changed
        if changed:
            evidence.setdefault("role", s)
        for m in _GONE.finditer(s):
            gone.add(m.group("a") or m.group("b"))
            evidence.setdefault("gone", s)
        if found_roles:
            for m in _NOT_HOLDER.finditer(s):
                gone.add(m.group(1))
                evidence.setdefault("gone", s)
        if decision_taken(s) is not None:
            for m in _REJECTED.finditer(s):
                rejected |= roots(m.group("option"))
        for m in _ADOPTED.finditer(s):
            adopted |= roots(m.group("option"))
            evidence.setdefault("adopted", s)
        for m in _MOVED_FROM.finditer(s):
            left.add(m.group("old"))
            evidence.setdefault("left", s)
        for m in _PENDING.finditer(s):
            pending |= roots(m.group("obj"), calendar=True)
        if decision_taken(s) is not None:
            taken |= roots(s, calendar=True)
            evidence.setdefault("taken", s)
        for m in _NEGATED.finditer(s):
            if _STILL_HAPPENS.search(m.group("obj")):
                continue  # "did not roll it out yesterday, they will on Monday": delayed, not reversed
            verb = next((m.group(g) for g in ("v1", "v2", "v3", "v4", "v5") if m.group(g)), "")
            words = roots(f"{verb} {m.group('obj')}")
            if len(words) >= 2:
                negated |= words
                evidence.setdefault("reversal", s)
    undoes, undo_sentence = _undone([x.text for x in found_sentences])
    if undo_sentence is not None:
        evidence.setdefault("undone", undo_sentence)
    return Facts(
        prices=frozenset(prices),
        offers=frozenset(offers - prices),
        revises=revises,
        offered=offered,
        counts=frozenset(counts),
        plans=frozenset(plans),
        dropped=frozenset(dropped),
        events=frozenset(events),
        moved_event=moved,
        qualifiers=frozenset(qualifiers),
        placed=frozenset(placed),
        moved_from=frozenset(moved_from),
        roles=frozenset(roles),
        role_change=frozenset(role_change),
        gone=frozenset(gone),
        negated=frozenset(negated),
        pending=frozenset(pending),
        left=frozenset(left),
        rejected=frozenset(rejected),
        adopted=frozenset(adopted),
        taken=frozenset(taken),
        evidence=evidence,
        signalled=frozenset(signalled),
        main=facts(main_text(text), main=False) if main else None,
        undoes=frozenset(undoes),
    )


@dataclass(frozen=True)
class Contradiction:
    """A kind of fact the new note states otherwise, why, and the span of its raw log saying so.
    ``newer_evidence``: for ``made_untrue``, the span of the later note's text saying otherwise."""

    kind: str
    reason: str
    evidence: str
    newer_evidence: str | None = None


def _money(values: Sequence[tuple[str, str, float]]) -> str:
    return " or ".join(
        f"{cur}{f'{v:,.2f}'.rstrip('0').rstrip('.')}/{unit}" for cur, unit, v in sorted(values)
    )


def kinds(old: Facts) -> set[str]:
    """The kinds of fact a note states (what a newer note could contradict)."""
    out = set()
    if old.prices:
        out.add("price")
    if old.counts:
        out.add("count")
    if old.plans:
        out.add("plan")
    out |= {f"date:{event}" for event, _ in old.events}
    if old.roles:
        out |= {f"role:{kind}" for kind, _ in old.roles}
    if old.pending and not old.taken:
        out.add("resolved")
    return out


#: Kinds checked against every neighbour, newest first, until one matches (the others stop at the
#: newest note stating their slot).
SEARCHED = frozenset({"reversal", "left", "adopted", "undone"})


def holds(new: Facts, old: Facts, old_text: str, kind: str) -> bool:
    """Whether the old note states the fact of ``kind`` the new one is about (so, being the newest
    such note, it holds the current value): the same slot, and for a named event (the Berlin
    go-live) a note naming it. Any note may state what a reversal reverses or a move leaves."""
    if kind in SEARCHED:
        return True
    if kind not in kinds(old):
        return False
    if kind.startswith("date:"):
        event = kind.split(":", 1)[1]
        names = {q for e, q in new.qualifiers if e == event}
        if names and not any(re.search(rf"\b{re.escape(q)}\b", old_text) for q in names):
            return False
        # a move that names the date it leaves ("from July 1, 2027 to ...") is about the note
        # stating that date: a newer note naming another date for the event holds another value
        left = {d for e, d in new.moved_from if e == event}
        return not left or any(_same_day(d, o) for d in left for e, o in old.events if e == event)
    return True


def _same_day(a: str, b: str) -> bool:
    """Whether two event dates (ISO days, or MM-DD where no year was written) are one day."""
    return a == b if len(a) == len(b) == 10 else a[-5:] == b[-5:]


#: Slots compared main clause to main clause: a price, a count, a plan or a commitment named only
#: in a secondary clause of either note is no value that one makes untrue.
MAIN_KINDS = frozenset({"price", "count", "plan", "reversal"})
#: Slots a newer note retires only when it says the value changes or settles it (see ``_CHANGE``):
#: the other kinds carry their own change cue (a date moved, a role handed over, a reversal).
_SIGNALLED_KINDS = frozenset({"price", "count", "plan"})
#: The quantities: a price (an offer too), a count, a plan. Many notes name one beside their main
#: fact (an order form signed "30 seats @ $88", a renewal's price, options put to the customer).
QUANTITY_KINDS = _SIGNALLED_KINDS


def same_topic(new_category: str | None, old_category: str | None) -> bool:
    """Whether a new quantity may retire a note of ``old_category``: a note is retired when its
    main fact is made untrue (LABELS.md), and a category is the topic of a note's main fact, so a
    note on another topic (a price change against a signed contract, a quote against a meeting)
    named the quantity beside its main fact. Unknown categories (a policy holding them back)
    decide nothing."""
    return new_category is None or old_category is None or new_category == old_category


def may_retire(kind: str, new_category: str | None, old_category: str | None) -> bool:
    """Whether a fact of ``kind`` stated otherwise may retire a note of ``old_category``: a
    quantity only a note on its topic (``same_topic``); a moved date never a support issue, whose
    main fact is the fault ("Go-live is June 1 so this is blocking": only a fix retires it)."""
    if kind in QUANTITY_KINDS:
        return same_topic(new_category, old_category)
    if kind.startswith("date") and old_category == "support issue":
        return new_category in (None, "support issue")
    return True


def contradiction(new: Facts, old: Facts, old_text: str, kind: str) -> Contradiction | None:
    """How ``new``'s main fact states the fact of ``kind`` otherwise than ``old``'s, or None."""
    if kind in _SIGNALLED_KINDS and kind not in new.signalled:
        return None  # a value stated without a change or a settlement may be another party's
    if kind in MAIN_KINDS and new.main is not None and old.main is not None:
        found = _contradiction(new.main, old.main, main_text(old_text), kind)
        if found is None:
            return None
        # the evidence is the whole sentence of the raw log that states it
        return Contradiction(found.kind, found.reason, new.evidence.get(kind, found.evidence))
    return _contradiction(new, old, old_text, kind)


#: Kinds whose statement a note's ``Facts.evidence`` keeps, by the key it keeps it under.
_EVIDENCE_KEYS = {"price": "price", "count": "count", "plan": "plan", "date": "date", "role": "role"}


def made_untrue(newer: Facts, older: Facts, older_text: str, kind: str) -> Contradiction | None:
    """How a note said later (``newer``) makes the fact of ``kind`` an older note states untrue,
    judged as ``contradiction`` judges a newer note (the later one's wording decides, "As of today
    Globex pays $55" retires "Globex pays $42"), with the evidence taken from the older note: the
    sentence of its text stating the fact made untrue, and ``newer_evidence`` the later note's
    sentence saying otherwise. For a record said before the note that changed it, but analysed
    after (a late import, a retry after an outage): it is the record that is retired; drafting
    keeps the contradiction only where the record's sentence is in its raw log, and proposes the
    retirement with the later note's words as evidence (in that note's raw log, which the proposal
    cites beside the record's), as a newer input's words are. The reason is worded from the older note's
    side: "here" is the record, the raw log its review item shows, and "that note" the newer one
    ("$42/seat here, $55/seat in that note"), as in order "here" is the newer input. None when
    that sentence cannot be told."""
    found = contradiction(newer, older, older_text, kind)
    if found is None:
        return None
    span = older.evidence.get(_EVIDENCE_KEYS.get(kind.split(":", 1)[0], ""))
    found_in = [x.text for x in sentences(readable(older_text))]
    if span is None:  # a slot it states without a cue (a date): the sentence stating it
        span = next((x for x in found_in if kind in kinds(facts(x, main=False))), None)
    if span is None:  # a decision, a choice: the sentence sharing the most with the later one's
        about = roots(found.evidence)
        scored = [(len(about & roots(x)), -i, x) for i, x in enumerate(found_in)]
        best = max(scored, default=(0, 0, ""))
        span = best[2] if best[0] >= 2 else None
    if not span:
        return None
    return Contradiction(found.kind, _from_the_older_side(found.reason), span, newer_evidence=found.evidence)


#: ``contradiction``'s reasons, worded from the newer note ("here") against the older ("that
#: note"), and the same reasons worded from the older note's side, for ``made_untrue``. The first
#: pattern that matches the whole reason rewords it.
_FROM_THE_OLDER_SIDE: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"a new (?P<role>[^:]+): (?P<mine>.+) here, (?P<theirs>.+) in that note"),
        r"a new \g<role> in that note: \g<mine>, not \g<theirs> as here",
    ),
    (
        re.compile(r"a new (?P<role>[^:]+): (?P<gone>.+) no longer holds it \((?P<mine>.+) here\)"),
        r"a new \g<role> in that note: \g<gone>, named here, no longer holds it (\g<mine> there)",
    ),
    (
        re.compile(r"(?P<what>[^:]+): (?P<mine>.+) here, (?P<theirs>.+) in that note"),
        r"\g<what>: \g<theirs> here, \g<mine> in that note",
    ),
    (
        re.compile(r"no longer the (?P<plan>.+) plan that note states"),
        r"that note says it is no longer the \g<plan> plan stated here",
    ),
    (
        re.compile(r"takes the option that note turned down: (?P<what>.+)"),
        r"that note takes the option turned down here: \g<what>",
    ),
    (
        re.compile(r"moves away from (?P<name>.+), which that note chose"),
        r"that note moves away from \g<name>, chosen here",
    ),
    (
        re.compile(r"decides what that note left open: (?P<what>.+)"),
        r"that note decides what was left open here: \g<what>",
    ),
    (
        re.compile(r"undoes the decision that note states about (?P<what>.+)"),
        r"that note undoes the decision stated here about \g<what>",
    ),
    (
        re.compile(r"reverses what that note says about (?P<what>.+)"),
        r"that note reverses what is said here about \g<what>",
    ),
)


def _from_the_older_side(reason: str) -> str:
    """``reason`` as the older note's review item reads it: "here" is its own raw log, which the
    item shows, and "that note" the newer one that retires it (worded from the newer note, the
    values read the wrong way round: "$55/seat here" under the $42 record)."""
    for pattern, worded in _FROM_THE_OLDER_SIDE:
        match = pattern.fullmatch(reason)
        if match is not None:
            return match.expand(worded)
    return reason


def _contradiction(new: Facts, old: Facts, old_text: str, kind: str) -> Contradiction | None:
    if kind == "price":
        for cur, unit, _ in sorted(new.prices):  # a fixed order: the reason names the first
            mine = {p for p in new.prices if p[:2] == (cur, unit)}
            theirs = {p for p in old.prices if p[:2] == (cur, unit)}
            if theirs and not mine & theirs:
                here, there = _money(list(mine)), _money(list(theirs))
                why = f"different price per {unit}: {here} here, {there} in that note"
                return Contradiction("price", why, new.evidence["price"])
    if kind == "count":
        for unit, _ in sorted(new.counts):
            mine = {v for u, v in new.counts if u == unit}
            theirs = {v for u, v in old.counts if u == unit}
            if theirs and not mine & theirs:
                why = f"different number of {unit}s: {', '.join(f'{v:g}' for v in sorted(mine))} here, " + (
                    f"{', '.join(f'{v:g}' for v in sorted(theirs))} in that note"
                )
                return Contradiction("count", why, new.evidence["count"])
    if kind == "plan":
        if new.offered:
            return None  # a quote or a proposal changes no plan in force until it is accepted
        for dimension, plan in sorted(old.plans):
            if (dimension, plan) in new.dropped:
                return Contradiction(
                    "plan", f"no longer the {plan} plan that note states", new.evidence["plan"]
                )
            changed = {p for d, p in new.plans if d == dimension}
            if changed and plan not in changed:
                why = f"plan changed: {', '.join(sorted(changed))} here, {plan} in that note"
                return Contradiction("plan", why, new.evidence["plan"])
    if kind.startswith("date:") and new.moved_event:
        wanted = kind.split(":", 1)[1]
        for event, day in sorted(new.events):  # in a fixed order: the reason names the first day
            if event != wanted:
                continue
            names = {q for e, q in new.qualifiers if e == event}
            if names and not any(re.search(rf"\b{re.escape(q)}\b", old_text) for q in names):
                continue  # "the Ghent go-live" is not the go-live of a note that never names Ghent
            theirs = {d for e, d in old.events if e == event}
            here = {p for e, p, d in new.placed if e == event and d == day}
            there = {p for e, p, _ in old.placed if e == event}
            if here and there:
                if not here & there:
                    continue  # the date of another site's or person's event
                theirs = {d for e, p, d in old.placed if e == event and p in here}
            if theirs and day[-5:] not in {d[-5:] for d in theirs}:
                why = f"the {event} date moved: {day} here, {', '.join(sorted(theirs))} in that note"
                return Contradiction("date", why, new.evidence["date"])
    if kind.startswith("role:"):
        role = kind.split(":", 1)[1]
        mine = {name for k, name in new.roles if k == role} - new.gone
        theirs = {name for k, name in old.roles if k == role} - old.gone
        leaving = {t for t in theirs if any(_same_person(t, g) for g in new.gone)}
        if leaving:  # the person in that role leaves or is replaced
            here = ", ".join(sorted(mine)) or "someone else"
            why = f"a new {role}: {', '.join(sorted(leaving))} no longer holds it ({here} here)"
            return Contradiction(kind, why, new.evidence.get("role") or new.evidence["gone"])
        if role in new.role_change and theirs - mine and mine - theirs:
            here, there = ", ".join(sorted(mine)), ", ".join(sorted(theirs))
            why = f"a new {role}: {here} here, {there} in that note"
            return Contradiction(kind, why, new.evidence["role"])
    if kind == "adopted" and old.rejected:
        # the option a decision turned down is now taken: "self-host the bridge rather than use
        # the managed connector", then "we're switching to the managed connector after all"
        shared = new.adopted & old.rejected
        if len(shared) >= 2 and 2 * len(shared) >= len(new.adopted):
            why = f"takes the option that note turned down: {', '.join(sorted(shared))}"
            return Contradiction("adopted", why, new.evidence["adopted"])
    if kind == "left":
        for name in sorted(new.left):
            pattern = re.compile(rf"\b{re.escape(name)}\b")
            moving = _common_words(new.evidence["left"])
            chose = [
                x.text
                for x in sentences(readable(old_text))
                if pattern.search(x.text) and decision_taken(x.text)
            ]
            # what moves must be what was chosen: the two sentences share a word besides the names
            # ("moving our tenant from Frankfurt" after "chose Frankfurt for their tenant"; not "their
            # CTO moved from Frankfurt to London")
            if any(moving & _common_words(x) for x in chose):
                why = f"moves away from {name}, which that note chose"
                return Contradiction("left", why, new.evidence["left"])
    if kind == "resolved" and new.taken and old.pending and not old.taken:
        shared = new.taken & old.pending
        if len(shared) >= 2 and 2 * len(shared) >= len(old.pending):
            why = f"decides what that note left open: {', '.join(sorted(shared))}"
            return Contradiction("resolved", why, new.evidence["taken"])
    if kind == "undone" and new.undoes:
        # what is undone is a decision that note took, either way ("decided against the add-on",
        # "stays OFF", "leave Medicine out"): the sentence stating it names much of what is undone
        for sentence in sentences(readable(old_text)):
            taken = decision_taken(sentence.text) is not None or _NEGATED.search(sentence.text)
            shared = new.undoes & roots(sentence.text)
            if taken and len(shared) >= 2 and len(shared) >= 0.4 * len(new.undoes):
                why = f"undoes the decision that note states about {', '.join(sorted(shared))}"
                return Contradiction("undone", why, new.evidence["undone"])
    if kind == "reversal" and new.negated:
        # the old note must commit to the thing (decided, agreed, plans or will do it): a mention in
        # passing ("questions about scanners, parked for later") is nothing to reverse
        for sentence in sentences(readable(old_text)):
            shared = new.negated & roots(sentence.text)
            if len(shared) >= 2 and 2 * len(shared) >= len(new.negated) and _COMMITS.search(sentence.text):
                why = f"reverses what that note says about {', '.join(sorted(shared))}"
                return Contradiction("reversal", why, new.evidence["reversal"])
    return None


#: A move away from a named choice: "moving our tenant from Frankfurt to your US region".
#: After a negation: the sentence goes on to say it will happen after all (a delay).
#: Or that it only narrows it ("not to the office staff, only the warehouse").
_STILL_HAPPENS = re.compile(
    r"\b(?:will|'ll|going to|shall)\b(?!\s+(?:not|never)\b)|\binstead\b|,\s*only\b", re.I
)
_MOVED_FROM = re.compile(
    r"\b(?:mov\w*|switch\w*|migrat\w*|chang\w*|transfer\w*)\b[^.;]{0,40}?\bfrom\s+(?:the\s+)?"
    r"(?P<old>[A-Z][\w-]+(?:\s+[A-Z][\w-]+)?)\s+to\b"
)
#: In a decision, the option it turns down: "self-host it rather than use our managed connector".
_REJECTED = re.compile(
    r"\b(?:rather than|instead of)\s+(?:use|using|go with|going with|keep|keeping|take|taking|buy|buying)?\s*"
    r"(?P<option>[^.;:,!?()-]{3,60})",
    re.IGNORECASE,
)
#: A switch to an option: "we're switching to your managed connector after all".
_ADOPTED = re.compile(
    r"\b(?:switch\w*|mov\w*|go(?:ing)? back|revert\w*|opt\w*|going|go)\s+(?:over\s+)?(?:to|for|with)\s+"
    r"(?P<option>[^.;:,!?()-]{3,60})",
    re.IGNORECASE,
)
#: A decision still to be taken, and what it is about ("will decide on the multi-year deal").
_PENDING = re.compile(
    r"\b(?:decide|decides|deciding|decision)\s+(?:on|about|whether to|whether|if)\s+(?P<obj>[^.;:,?]+)",
    re.IGNORECASE,
)
#: A sentence that commits to something: a decision taken, or a plan or intent to do it.
_COMMITS = re.compile(
    r"\bdecision\s*:|"  # "Decision: Victor is bringing the team onto Coach"
    r"\b(?:will|'ll|going to|plans? to|planning to|intends? to|agreed|decided|approved|signed|chose|"
    r"committed|wants?|would like to|is set to|scheduled|rolling out|moving to|decide on|to decide|"
    r"renew\w*|expand\w*)\b",
    re.IGNORECASE,
)


def superseded_offers(
    new: Facts, newest_first: Sequence[tuple[str, Facts]]
) -> list[tuple[str, Contradiction]]:
    """The note of a negotiation a settled per-seat price ends: the newest one that offered, asked or
    quoted a price of that unit since the last price that held (newest first, until the first note
    stating a price as a fact), when none of its amounts is the price now settled. An offer is a
    value too, for as long as the negotiation runs: once a price is agreed, the open offer no longer
    holds. Only the newest: it held the open position, the offers before it were countered by it
    (as only the newest note stating a fact is contradicted).
    The note that held the last price is the ordinary price contradiction's (``contradiction``)."""
    # a settled price, or a revised offer ("Requote: ..."), which ends the offers before it; each
    # unit apart: a settled price per device ends no offer per seat
    settled = set(new.prices) if "price" in new.signalled else set()
    values = settled | (
        {o for o in new.offers if o[:2] not in {p[:2] for p in settled}} if new.revises else set()
    )
    out: dict[str, Contradiction] = {}
    for cur, unit in sorted({p[:2] for p in values}):
        mine = {p for p in values if p[:2] == (cur, unit)}
        for other_id, other in newest_first:
            if any(p[:2] == (cur, unit) for p in other.prices):
                break  # the last price of this unit that held: older offers were ended by it
            theirs = {p for p in other.offers if p[:2] == (cur, unit)}
            if theirs and not mine & theirs and other_id not in out:
                here, there = _money(list(mine)), _money(list(theirs))
                verb = "settles" if mine & settled else "revises"
                why = f"{verb} the price at {here}; that note offered {there}"
                evidence = new.evidence.get("price") or new.evidence["offer"]
                out[other_id] = Contradiction("price", why, evidence)
            if theirs or other.revises:
                # the newest offer held the negotiation's open position (the older ones were
                # countered by it), and a revised offer ended the offers before it
                break
    return list(out.items())


def stated_kinds(new: Facts) -> list[str]:
    """The kinds of fact a new note states, in the order they are checked."""
    out = []
    if new.prices:
        out.append("price")
    if new.counts:
        out.append("count")
    if new.plans or new.dropped:
        out.append("plan")
    if new.moved_event:
        out += sorted({f"date:{event}" for event, _ in new.events})
    out += [f"role:{kind}" for kind in sorted(set(new.role_change) | (set(_ROLES) if new.gone else set()))]
    if new.adopted:
        out.append("adopted")
    if new.left:
        out.append("left")
    if new.taken:
        out.append("resolved")
    if new.negated:
        out.append("reversal")
    if new.undoes:
        out.append("undone")
    return out


# -- a confirmed fix retires the fault report ------------------------------------------------------

#: A ticket's number: "Ticket #4502", "Re #40977", "INC-20260915-03" (not an invoice's or an order's).
_TICKET = re.compile(
    r"(?<!\w)(?<!invoice )(?<!order )(?<!PO )(?<!quote )#\s?(?P<num>\d{3,})\b|"
    r"\b(?P<key>[A-Z]{2,6}-\d{3,}(?:-\d+)*)\b|"
    # a young project's key in capitals: "FAB-88" (not "top-10")
    r"\b(?P<short>(?-i:[A-Z]{2,6})-\d{2})\b(?!-)",
    re.IGNORECASE,
)
#: A fault stated: something fails, errs, times out, crashes, is slow or missing.
_FAULT = re.compile(
    r"\b(?:fail(?:s|ed|ing|ure)?|errors?|broken|breaks|crash(?:es|ed|ing)?|times? out|timed out|timeouts?|"
    r"reject(?:s|ed|ing)?|drop(?:s|ped|ping)?|blank|empty|slow(?:ly|er)?|loops?|looping|hangs?|freez\w*|"
    r"stuck|never (?:show|shows|showed|arrives?|arrived|lands?|landed|syncs?|synced)(?: up)?|"
    r"(?:not|never|isn't|aren't|doesn't|don't|won't) (?:logging|working|loading|syncing|showing|saving|"
    r"sending|arriving|work|load|sync|save|show|send|arrive)|logs? (?:us|them|me|users|people|everyone) out|"
    r"can'?t|cannot|unable|wrong|bug|outage|stale|exception|missing|corrupt\w*|disappear\w*)\b",
    re.IGNORECASE,
)
#: A fix stated as done and holding: "resolved", "confirmed fixed", "works again", "Hana confirmed
#: signing works", "verified with a 400-day range". A fix shipped or planned, a workaround or a
#: diagnosis is not one: the fault may still be there.
_FIXED = re.compile(
    r"\b(?:resolved|fixed|verified)\b(?!\s+(?:to|fee|fees|price|prices|rate|rates|term|terms|cost|costs|"
    r"amount|date|dates|number|schedule|budget|scope|IPs?|point|window|set|income|pricing)\b)|"
    r"\b(?:works?|working|loads?|syncs?|saves?|completes?|runs?) (?:again|normally|as expected)\b|"
    r"\b(?:now|again) (?:works?|completes?|loads?|syncs?|lands?|runs?|saves?|arrives?)\b|"
    r"\bback to normal\b|"
    # "€ shows correctly on the template now", "the export works fine again" (not "everyone else
    # syncs fine": without "now" or "again" nothing changed)
    r"\b(?:shows?|displays?|renders?|prints?|works?|loads?|syncs?|saves?|posts?|exports?)\s+(?:\S+\s+){0,3}?"
    r"(?:correctly|properly|fine)\b[^.;]{0,40}?\b(?:now|again)\b|"
    r"\bno longer (?:fails?|crash\w*|times? out|drops?|rejects?|loops?|hangs?|errors?)\b|"
    r"\bconfirmed\b(?P<confirmed>[^.;]{0,80}?)\b(?:works?|working|fixed|resolved|again|now|since)\b",
    re.IGNORECASE,
)
#: Just before a fix word: it is not (yet) done ("will be fixed", "not yet resolved", "once fixed"),
#: or a clause of condition or time opens before it ("until this is fixed", "once it's all
#: resolved", "before the sync is fixed"): the fix is awaited, not stated.
_NOT_DONE_BEFORE = re.compile(
    r"\b(?:not|n't|never|yet|will|'ll|to be|should|would|could|expected|planned|"
    r"hope\w*|being|get|gets|needs? to be|a|the)\s+(?:\w+\s+){0,1}$|"
    r"\b(?:once|until|till|when|whenever|if|unless|before|as soon as)\s+(?:[\w']+\s+){0,4}$|"
    r"\b(?:need|needs|needed|want|wants|wanted|expect|expects)\s+(?:\w+\s+){0,2}$",  # "we need this fixed"
    re.IGNORECASE,
)
#: A fix sentence that is rather a question, a plan or a regression.
_NOT_A_FIX = re.compile(
    r"\?|\b(?:is|are) back\b|\bstill\b|\breopen\w*|\brecurr\w*|\bnot (?:yet )?(?:fixed|resolved)\b|"
    r"\bworkaround\b(?![^.;]*\bstop\b)",
    re.IGNORECASE,
)
#: Words every fault and fix share, which say nothing of which fault it is.
_FAULT_GENERIC = frozenset(
    root(w)
    for w in re.findall(
        r"\w+",
        "ticket fix fixed fixes resolved resolve confirmed confirm verified works working work again issue "
        "issues problem problems error errors fail fails failed failing since now release released "
        "closed closing close customer team support update priority high normal severity",
    )
)
#: In a confirmation's words: it confirms the fault, or something not done yet.
_UNCONFIRMED = re.compile(r"\b(?:not|n't|no|will|'ll|plan\w*)\b", re.IGNORECASE)


#: A follow-up that closes its ticket ("Closing.", "Resolving.", "Close it out", "marked resolved"),
#: or states the faulty behaviour as right now ("long names now wrap", "as of today SSO works"),
#: or a confirmation in any words ("Becca confirmed the payouts landed on time"). Read only in a
#: note naming the same ticket number as the report, where ticket vocabulary is the writer's own.
_CLOSES_TICKET = re.compile(
    r"\b(?:closing|closed|resolving|close (?:it|this|the ticket|the case)(?: out)?|"
    r"mark(?:ed|ing)? (?:it |this |the ticket )?(?:as )?(?:resolved|closed|done|solved)|solved)\b",
    re.IGNORECASE,
)
#: A confirmation that the fault's symptom no longer shows: "confirmed no double texts", "verified
#: zero gaps over five days", "confirmed there have been no failures since".
_CONFIRMED_ABSENCE = re.compile(
    r"\b(?:confirm(?:ed|s)|verified|checked)\s+(?:that\s+)?(?:there\s+(?:are|were|have been|has been)\s+)?"
    r"(?:no|zero)\s+(?!(?:change|progress|update|decision|news|reply|response|answer|date|word)s?\b)\w+",
    re.IGNORECASE,
)
_NOW_RIGHT = re.compile(r"\b(?:now|as of today|from today|since then)\b", re.IGNORECASE)
_CONFIRMED_CLAUSE = re.compile(r"\b(?:confirmed|verified|checked)\b(?P<clause>[^.;]{3,160})", re.IGNORECASE)
#: A fix shipped or planned is not the fault gone ("the fix is now deployed").
_SHIPPED = re.compile(r"\b(?:fix|fixes|patch\w*|releas\w*|deploy\w*|ship\w*|hotfix\w*|roll\w* out)\b", re.I)


#: A note that says the ticket was opened ("opened SUP-2231", "raised a P2 with support"): the
#: report of the fault, whatever words the fault is told in; a feature request ("logged FR-1183")
#: reports none.
_OPENS_TICKET = re.compile(
    r"\b(?:opened|raised|logged|filed|submitted)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:ticket|case|incident|"
    r"(?:P|sev\s?)\d\b|(?!FR-)[A-Z]{2,6}-\d{3,}|#\d{3,})",  # a feature request reports no fault
    re.IGNORECASE,
)


def ticket_closed(text: str) -> str | None:
    """The sentence of a ticket's follow-up that says the fault is gone, in a ticket's usual
    words (see ``_CLOSES_TICKET``), or None. A sentence that states a fault, a doubt, a plan or a
    regression closes nothing, nor does a workaround confirmed while the fix is still to come."""
    if _workaround_only(text):
        return None
    for sentence in sentences(readable(text)):
        s = sentence.text
        if _NOT_A_FIX.search(s):
            continue
        if _CONFIRMED_ABSENCE.search(s):
            return s  # "Gwen confirmed no double texts over the weekend": the fault is gone
        if _FAULT.search(s) or _UNCONFIRMED.search(s):
            continue
        closes = _CLOSES_TICKET.search(s)
        # "closed: the fix was deployed on Monday" closes it on the fix's shipping alone
        if closes and not _NOT_DONE_BEFORE.search(s[: closes.start()]) and not _SHIPPED.search(s):
            return s
        if _NOW_RIGHT.search(s) and not _SHIPPED.search(s):
            return s
        if _CONFIRMED_CLAUSE.search(s):
            return s
    return None


def tickets(text: str) -> frozenset[str]:
    """The ticket numbers a raw log names ("#4502", "INC-20260915-03"), upper-cased."""
    return frozenset(
        (f"#{m.group('num')}" if m.group("num") else (m.group("key") or m.group("short"))).upper()
        for m in _TICKET.finditer(readable(text))
    )


_WORKAROUND_ONLY = re.compile(r"\bwork-?arounds?\b", re.IGNORECASE)
#: A fix still to come: "a permanent fix is planned for a later release", "the proper fix ships in 3.2".
_FIX_TO_COME = re.compile(
    r"\b(?:permanent|proper|real|full|final|code)\s+fix\b[^.;]{0,40}?\b(?:is|will be|are)?\s*"
    r"(?:planned|scheduled|coming|targeted|slated|in progress|pending|due|expected|ships?|lands?)\b",
    re.IGNORECASE,
)


def _workaround_only(text: str) -> bool:
    """A note that gives a workaround and says the fix is still to come: what it confirms to work
    is the workaround ("Gus confirmed it imported fully with the script. A permanent fix is planned
    for a later release"), so the fault is not fixed."""
    return bool(_WORKAROUND_ONLY.search(text) and _FIX_TO_COME.search(text))


def fix_confirmed(text: str, *, explicit: bool = False) -> str | None:
    """The sentence saying a fault is fixed and the fix holds, or None. With ``explicit``, only a
    sentence that names the fault fixed itself ("resolved", "fixed", "works again"), not a mere
    confirmation ("Maria confirmed that dashboards work"), which may follow no fault at all. None
    for a note that only confirms a workaround (``_workaround_only``)."""
    if _workaround_only(text):
        return None
    for sentence in sentences(readable(text)):
        s = sentence.text
        if _NOT_A_FIX.search(s):
            continue
        for m in _FIXED.finditer(s):
            if _NOT_DONE_BEFORE.search(s[: m.start()]):
                continue
            confirmed = m.group("confirmed")
            if confirmed is not None and (
                explicit or _FAULT.search(confirmed) or _UNCONFIRMED.search(confirmed)
            ):
                continue  # "confirmed the export failed again": a fault confirmed, not a fix
            return s
    return None


#: A raw log in the form of a ticket ("Ticket #BL-4021 | Subject: ...", "Expected: ... Actual: ..."):
#: it reports a fault by its form, whatever words the fault is told in.
_TICKET_FORM = re.compile(
    r"^\W*(?:re:\s*)?(?:ticket|incident|bug report|support case)\b|^\W*expected\s*:.*\n?.*^\W*actual\s*:",
    re.IGNORECASE | re.MULTILINE | re.DOTALL,
)
#: An input that opens with a ticket's key, as a helpdesk's messages do ("TW-41877: that was it",
#: "TKT-42210 | Slack reminders arrive twice"); not a feature request's "FR-88", nor a record
#: numbered by year ("VRA-2026-041").
TICKET_KEY_OPENING = re.compile(r"^\W*(?:re:\s*)?(?!FR-)[A-Z]{2,6}-\d{3,}(?![-\d])")


def fault_reported(text: str) -> str | None:
    """The sentences of a raw log that report a fault, or None (none, or it says a fault is fixed).
    A ticket's form reports a fault when its words do not say one: then all its sentences."""
    if fix_confirmed(text) is not None:
        return None
    found = [x.text for x in sentences(readable(text)) if _FAULT.search(x.text)]
    if not found and _TICKET_FORM.search(readable(text)):
        found = [x.text for x in sentences(readable(text))]
    return " ".join(found) or None


def _fault_words(text: str) -> set[str]:
    return _common_words(text) - _FAULT_GENERIC


def retired_fault(
    new_text: str, others: Sequence[tuple[str, str, datetime]]
) -> tuple[str, Contradiction] | None:
    """The note whose reported fault ``new_text`` says is fixed, and why; None when unsure.

    ``others`` are the neighbours as (id, raw log, time), nearest first. A note that confirms a fix
    (not one that plans it, diagnoses the fault or gives a workaround) retires the report of that
    fault: the oldest neighbour carrying the same ticket number (the one that opened the ticket),
    if it reports a fault; when the fix names no ticket any neighbour carries, the nearest
    neighbour reporting a fault in the same words (two content words shared), the fix itself
    saying the fault is fixed. A neighbour carrying another ticket's number is another fault."""
    mine = tickets(new_text)
    if mine:
        same = [(at, i, oid, text) for i, (oid, text, at) in enumerate(others) if tickets(text) & mine]
        same = [c for c in same if fix_confirmed(c[3]) is None]
        if same:
            evidence = fix_confirmed(new_text) or ticket_closed(new_text)
            _, _, oid, text = min(same, key=lambda c: (c[0], c[1]))
            # the note that opened the ticket reports its fault, in a fault's words or by opening
            # with the ticket's key ("TKT-42210 | Slack reminders arrive twice")
            opened = (
                fault_reported(text) is not None
                or TICKET_KEY_OPENING.match(readable(text))
                or _OPENS_TICKET.search(readable(text))
            )
            if evidence is None or not opened:
                return None
            ticket = ", ".join(sorted(tickets(text) & mine))
            why = f"fixes the fault that note reports (ticket {ticket})"
            return oid, Contradiction("fixed", why, evidence)
    evidence = fix_confirmed(new_text, explicit=True)
    if evidence is None:
        return None
    words = _fault_words(readable(new_text))
    for oid, text, _ in others:
        if mine and tickets(text):
            continue  # both carry a ticket number, and not the same one: another fault
        fault = fault_reported(text)
        if fault is None:
            continue
        shared = words & _fault_words(fault)
        if len(shared) >= 2:
            why = f"fixes the fault that note reports ({', '.join(sorted(shared))})"
            return oid, Contradiction("fixed", why, evidence)
    return None
