"""Whether a new note only restates an earlier one (a recap, a CRM entry logging a known fact).

A restatement says it logs or recaps ("Recap for the team:", "Email logged:", "updated to", "marked
Closed Won"; an email's "RE:" does not: a reply answers) and either shares most of its words with
the earlier note, or is a CRM entry whose values (amounts, counts, dates, plans) are all values the
earlier note states, two of them or with its words; it states no number the earlier note does not (a
date that dates its source, "per call notes of 3 Nov", or a number in a name, "FY27", is none). A
value is compared as a value, however it is written: "1yr" is "12 months", "forty two" is 42,
"$31.00" is $31, "4/1/27" either way round; a reference is compared whole ("FR-88"), a phone number
not at all, and a day with its year must not be that day of another year ("renewal 2027-03-01" after
"start 1 March 2026"); a purchase order's number is a new document. The earlier note knows the
day it was said and the days it names by their day of the month alone ("ready on the 23rd"); a
total its values come to ("85 seats x $41 = $41,820/yr") and a week's number ("wk 13") are no new
values. A move ("moving the walkthrough to 2pm") is news unless the earlier note moved something
too. A record of fields ("Seats: 600 | Term: 36 months") is a CRM entry like one that says it logs.
A deal logged "Closed Won" restates a note that states the decision, not a quote; a buying role
given to someone ("Gil = Economic Buyer") restates only a note that gives someone deciding power.
The pipeline then links it to the earlier note instead of proposing its held values again.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache

from amem.llm.offline import dates
from amem.llm.offline.contradictions import roots
from amem.llm.offline.reasons import decided
from amem.llm.offline.text import SPELLED, readable, spelled

#: A CRM stage that logs a deal won: news, unless the earlier note states the decision.
_WON = re.compile(r"\bclosed[- ]won\b", re.IGNORECASE)
_RECAP = re.compile(
    r"\b(?:recap\w*|logged|updated|as discussed|as agreed|to confirm|confirming|as promised|marked|"
    r"for the record|for your (?:files|records)|summary for|logging (?:it|this|that)\b|"
    r"fyi|reminder|noted|per our call|following up on|confirmed in writing|changed (?:to|from)|changed:|"
    r"switched to|flagged|closed won|per (?:the |our )?(?:call|meeting) notes?|"
    # the entry names the input it was taken from: "per N. Ferreira's email", "Source: call notes"
    r"per (?:[\w.'’-]+\s+){0,3}?(?:e-?mail|call|message|chat|notes|ticket)\b|source\s*:|"
    # a chat line relaying what was just sent ("Just emailed you: yes to $35.50 x 150 seats")
    r"(?:just\s+)?(?:e-?mailed|sent)\s+(?:you|it|this)\b\s*:|"
    # a CRM entry's heading: "Contact update, Acme: ...", "Status update:"
    r"^\W*(?:[\w-]+\s+){0,2}update\b\s*[:,–—-])",
    re.IGNORECASE,
)
#: A record of fields, as a CRM or a signing tool logs one: "Seats: 600 | Price: £33.00/seat/month |
#: Term: 36 months", "status=completed | seats=150 | term=12mo".
_FIELDS = re.compile(r"(?:[|•]\s*[A-Za-z][\w ]{0,20}?\s*[:=]\s*[^|•\n]+){2}")
_NEGATION = re.compile(r"\b(?:no longer|not|never|cancel\w*|called off|reversed|anymore)\b|n't\b", re.I)
#: A recap cue that names the input it logs ("Recap for the team:", "Email logged:", "per N.
#: Ferreira's email", "Source: call notes"): one value in common is enough to say which note it logs.
_LOGS = re.compile(
    r"\b(?:recap\w*|logged|for the record|source\s*:|"
    r"per (?:[\w.'’-]+\s+){0,3}?(?:e-?mail|call|message|chat|notes|ticket)\b)",
    re.IGNORECASE,
)
#: An amount or a count (not glued to a letter: "FY27", "Q1" and "v3" name things, not values; nor
#: the thousands of "2,000", which is no count of two or three digits).
_NUMBER = re.compile(r"(?<![\w.])(?<!\d,)\d{2,3}(?:[.,]\d+)?(?![\d])")

#: A change of status: a reply that says it (the fix shipped, the deal signed) adds a fact.
_STATUS = re.compile(
    r"\b(?:resolved|fixed|closed(?! won)|closing|shipped|deployed|released|completed|approved|signed|"
    r"countersigned|cancell?ed|declined|accepted|rejected|went live|is live)\b",
    re.IGNORECASE,
)

#: A move of something already set ("moving the walkthrough to 2pm"): news unless the earlier
#: note moves something too (a recap then names the move it repeats).
_MOVE = re.compile(r"\b(?:reschedul\w*|postpon\w*|moving)\b", re.IGNORECASE)
_MOVED = re.compile(r"\b(?:reschedul\w*|postpon\w*|mov(?:e|es|ed|ing)|push\w*|slipp?\w*|delay\w*)\b", re.I)

#: A buying role given to a person ("Gil = Decision Maker / Economic Buyer"): who decides is a
#: fact of its own, news unless the earlier note gives that role too.
_ROLE = re.compile(
    r"\b(?:decision[- ]maker|economic buyer|budget owner|champion|(?:executive|exec) sponsor|signer|"
    r"signatory|influencer|technical evaluator|day-to-day contact|main contact|point of contact)s?\b",
    re.IGNORECASE,
)

#: Words that give someone the deciding power a buying role names ("now owns the renewal
#: decision", "signs anything over $25k", "signing authority").
_DECIDING_POWER = re.compile(
    r"\b(?:owns?|signs?|signed|signing|sign-?off|signs? off|decides?|deciding|decision|approves?|approval|"
    r"budget)\b",
    re.IGNORECASE,
)

#: Share of the new note's words found in the earlier note: with a recap cue, and without one.
WITH_CUE, WITHOUT_CUE = 0.3, 0.75


_PLAN = re.compile(
    r"\b(annual|yearly|monthly|quarterly|starter|basic|pro|business|team|growth|enterprise|premium)\b"
    r"(?=\s+(?:plan|tier|billing|invoicing|edition)|\s*[),])|(?<=switched to )(annual|monthly|quarterly)",
    re.IGNORECASE,
)
_BASE = datetime(2000, 6, 15, tzinfo=UTC)
#: After a value: an arrow to the value it changes into ("2026-06-15 -> 2026-07-06", "46 → 42"),
#: as a CRM's change log writes it; the value before the arrow is the old one.
_CHANGED_INTO = re.compile(r"\s*(?:->|→|=>|⇒)\s*\S")


#: A reference or a phone number: its digits name a document or a line, not a value
#: ("Quote BW-Q-0142", "SC/PO/2026/0412", "OF-0418", "(617) 555-0142").
_REFERENCE = re.compile(
    r"\b[A-Z]{1,12}(?:[-/][A-Z0-9]+)*[-/]\d[\w/-]*|\b(?:PO|PR|SO)\s*(?:#|No\.?)?\s*\d[\d-]{3,}|"
    r"\(?\b\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b"
)
_COUNT = rf"(?:\d{{1,3}}|{SPELLED.pattern})"
#: A term or a period: "12-month", "12 mo", "1yr", "two years", "36 months". Read as months, so
#: that "1yr" and "12 months" are one value.
_DURATION = re.compile(
    rf"(?<![\w.$£€])(?P<n>{_COUNT})\s*-?\s*(?P<unit>months?|mos?\b|mths?\b|years?|yrs?\b)(?![a-z])",
    re.IGNORECASE,
)
#: A day written out in full, wherever it stands ("start=2026-03-01"): the day, whatever the
#: date reader makes of the text around it.
_ISO_DAY = re.compile(r"(?<!\d)\d{4}-(\d{2})-(\d{2})(?!\d)")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
#: The CRM record a reference names: the record's own id says nothing the note did not.
_RECORD = re.compile(r"\b(?:opportunity|opp|account|deal|record|lead|contact)\W*$", re.IGNORECASE)
#: The value a record says a field had before ("(was 2026-05-04)"): the old value, not one it states.
_WAS = re.compile(r"\(\s*(?:was|previously|formerly|old|previous|prior)\s*:?\s*$", re.IGNORECASE)


def _months(match: re.Match[str]) -> str:
    count = match.group("n")
    n = int(count) if count.isdigit() else spelled(count)
    return f"{n * 12 if match.group('unit').lower().startswith('y') else n}mo"


@lru_cache(maxsize=4096)
def values(text: str, *, old_values: bool = False, at: datetime | None = None) -> frozenset[str]:
    """The values a note states: amounts and counts (in digits or in words), terms (in months),
    days (MM-DD) and plans. A value something
    moves from ("changed from X to Y", "X -> Y", "(was X)") is the old value, not one it states; a
    date that dates a message or sits in an aside ("(per call notes of 3 Nov)") is no value either,
    and neither are the digits of a reference or a phone number. ``at``: when the
    note was said; its relative days ("effective today", "on the 23rd") then count too, resolved
    against it (a CRM entry writes them out: "Effective 2026-06-16")."""
    found = dates.mentions(text, at or _BASE)

    def moved_from(start: int, end: int) -> bool:
        return bool(
            (re.search(r"\bfrom\s*$", text[max(0, start - 10) : start]) and re.match(r"\s+to\b", text[end:]))
            or _CHANGED_INTO.match(text[end:])
            or _WAS.search(text[max(0, start - 16) : start])
        )

    # with ``old_values``, the old value of a move ("from July 1 to August 3") counts as one the
    # note names: a recap naming it ("(was July 1)") repeats the note that moved it
    stated = [
        m
        for m in found
        if (m.absolute or at is not None)
        and (old_values or not moved_from(m.start, m.end))
        and not dates.dates_something_else(text, m)
    ]
    out = {m.when.strftime("%m-%d") for m in stated}
    # a day written with its year also counts with it: "renewal 2027-03-01" is not the start
    # "1 March 2026", though both are March 1 (the side that is repeated, read against its own
    # time, knows each day's year)
    out |= {m.when.isoformat() for m in stated if _YEAR.search(m.text) or (old_values and at is not None)}
    rest = text
    for m in sorted(found, key=lambda m: -m.start):
        rest = rest[: m.start] + " " * (m.end - m.start) + rest[m.end :]
    for day in _ISO_DAY.finditer(rest):
        if old_values or not moved_from(day.start(), day.end()):
            out |= {f"{day.group(1)}-{day.group(2)}", day.group()}
    rest = _ISO_DAY.sub(lambda m: " " * len(m.group()), rest)
    # a document's reference is a value ("FR-88", "Quote BW-Q-0142"); the CRM record's own id is not
    out |= {
        m.group().upper()
        for m in _REFERENCE.finditer(rest)
        if re.match(r"[A-Za-z]", m.group()) and not _RECORD.search(rest[max(0, m.start() - 14) : m.start()])
    }
    rest = _REFERENCE.sub(lambda m: " " * len(m.group()), rest)
    out |= {_months(m) for m in _DURATION.finditer(rest)}
    rest = _DURATION.sub(lambda m: " " * len(m.group()), rest)
    # the day "valid thru 3/31" names, which the date reader leaves alone: a day a later recap may
    # write out ("valid through 2026-03-31"); only on the side that is repeated, where more is safe
    # "ready on the 23rd": the day of the month the note was said in, or of the next month
    for day in _ORDINAL_DAY.finditer(rest) if old_values and at is not None else ():
        mday = int(day.group(1))
        for month in (at.month, at.month % 12 + 1):
            out.add(f"{month:02d}-{mday:02d}")
    for day in _MONTH_DAY.finditer(rest) if old_values else ():
        first, second = int(day.group(1)), int(day.group(2))
        month, mday = (first, second) if first <= 12 else (second, first)
        if 1 <= month <= 12 and 1 <= mday <= 31:
            out.add(f"{month:02d}-{mday:02d}")
    if not old_values:  # "seats 30 -> 36": 30 is the value the change leaves behind
        rest = re.sub(r"(?<![\w.])\d[\d.,]*(?=\s*(?:->|→|=>|⇒)\s*\S)", " ", rest)
    rest = _WEEK_NUMBER.sub(lambda m: " " * len(m.group()), rest)
    out |= numbers(rest)
    out |= {str(n) for m in SPELLED.finditer(rest) if 10 <= (n := spelled(m.group())) < 1000}
    out |= {(m.group(1) or m.group(2)).lower() for m in _PLAN.finditer(text)}
    return frozenset(out)


def numbers(text: str) -> set[str]:
    """Amounts and days of two or three digits (years and ids left out); "31.00" is 31."""
    return {re.sub(r"[.,]0+$", "", n).replace(",", "") for n in _NUMBER.findall(text)}


#: A short CRM field line: "Renewal date: 1 January 2027."
_FIELD = re.compile(r"^\W*(?P<field>[A-Za-z][\w ]{1,30}?)\s*:\s*\S")


def _field_line(new: str, old: str) -> bool:
    """Whether the new note is a short field line ("Renewal date: 1 January 2027") whose field the
    old note also names (a word of it): a record of a known value, when the value is the old note's too."""
    match = _FIELD.match(new)
    if match is None or len(new.split()) > 10 or re.search(r"\w{3,}ed\b", match.group("field")):
        return False  # "Seats provisioned for X: 40" reports an event, not a field's value
    field = roots(match.group("field"))
    return bool(field & roots(old))


#: A week's number ("Forecast call wk 16", "KW 34"): it dates the entry, it states no value.
_WEEK_NUMBER = re.compile(r"\b(?:wk|week|kw|cw)\s*\d{1,2}\b", re.IGNORECASE)
#: A day of the month alone ("on the 23rd"), which the date reader leaves alone.
_ORDINAL_DAY = re.compile(
    r"\bthe\s+([12]?\d|3[01])(?:st|nd|rd|th)\b(?!\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))",
    re.IGNORECASE,
)
#: A day written as month/day with no year ("moved to 6/15"): the day, not two numbers.
_MONTH_DAY = re.compile(r"(?<![\w/.$])(\d{1,2})/(\d{1,2})(?![\w/])")
_DAY_OF_YEAR = re.compile(r"\d{4}-\d\d-\d\d")
#: A day written in numbers, which a reader may take either way round ("4/1/27", "01/07/2026").
_NUMERIC_DAY = re.compile(r"(?<![\w/.])\d{1,2}[/.]\d{1,2}[/.](?:\d{4}|\d{2})(?![\w/])")


def news(new: str, old: str, known: frozenset[str]) -> frozenset[str]:
    """The values the new note states that the old one does not (``known``: the old note's). A
    plan named in another form is the same plan ("Agency Pro," after "Agency Pro ramp", "annual"
    after "billed annually"), and a month/day is the day the old note names ("6/15" after "June 15")."""
    extra = values(new) - known
    # a day with its year is news only where the old note names that day in another year
    years_of = {k[5:] for k in known if _DAY_OF_YEAR.fullmatch(k)}
    excused: set[str] = {v for v in extra if _DAY_OF_YEAR.fullmatch(v) and v[5:] not in years_of}
    for value in extra:  # "4/1/27" read either way round: the day the old note names
        day = re.fullmatch(r"(\d\d)-(\d\d)", value)
        swapped = day and int(day.group(2)) <= 12 and f"{day.group(2)}-{day.group(1)}" in known
        if swapped and _NUMERIC_DAY.search(new):
            excused.add(value)
    for match in _MONTH_DAY.finditer(new):
        month, day = int(match.group(1)), int(match.group(2))
        if 1 <= month <= 12 and 1 <= day <= 31 and f"{month:02d}-{day:02d}" in known:
            excused |= {match.group(1), match.group(2)}
    excused |= {v for v in extra if _derived_total(v, known)}
    return frozenset(
        v
        for v in extra
        if v not in excused and not (v.isalpha() and re.search(rf"\b{re.escape(v)}", old, re.IGNORECASE))
    )


def _derived_total(value: str, known: frozenset[str]) -> bool:
    """Whether ``value`` is a total the known values come to: a count times a price, by the month,
    the year or the known term ("85 seats x $41/seat/mo = $41,820/yr" after "$41 for 85 seats"), as
    a CRM's amount field derives it."""
    try:
        total = float(value)
    except ValueError:
        return False
    amounts = [float(k) for k in known if re.fullmatch(r"\d+(?:\.\d+)?", k)]
    periods = {1.0, 12.0} | {float(k[:-2]) for k in known if re.fullmatch(r"\d+mo", k)}
    return total >= 100 and any(
        abs(a * b * n - total) < 0.5 for i, a in enumerate(amounts) for b in amounts[i + 1 :] for n in periods
    )


def _negated(text: str) -> bool:
    """Whether the text negates something it states: a negation outside a relative clause ("for
    the steering group, who aren't on the channel: ..." negates nothing the note states)."""
    for match in _NEGATION.finditer(text):
        clause = re.split(r"[.;:!?\n]|,\s", text[: match.start()])[-1]
        if not re.search(r"\b(?:who|whom|which)\b", clause, re.IGNORECASE):
            return True
    return False


def restatement_score(
    new_text: str,
    old_text: str,
    background: set[str] | frozenset[str] = frozenset(),
    *,
    old_at: datetime | None = None,
) -> float:
    """How much of the new note the old one already says (0 when it adds a number). Words in
    ``background`` (the account's own name) say nothing about the fact and are not counted.
    ``old_at``: when the old note was said, to read its relative days."""
    new, old = readable(new_text), readable(old_text)
    known = values(old, old_values=True, at=old_at)
    if old_at is not None:  # a note knows the day it was said ("verbal commit on 4/28" after that call)
        known |= {old_at.strftime("%m-%d"), old_at.date().isoformat()}
    if news(new, old, known):
        return 0.0
    if _negated(new) and not _NEGATION.search(old):
        return 0.0  # "no longer rolling out X" after "will roll out X" reverses it
    if _STATUS.search(new) and not _STATUS.search(old):
        return 0.0  # "Re: the bug - fix shipped today" after the bug report: news, not a recap
    if _MOVE.search(new) and not _MOVED.search(old):
        return 0.0  # "moving the walkthrough to 2pm instead of 10" after the meeting was set: news
    if _ROLE.search(new) and not (_ROLE.search(old) or _DECIDING_POWER.search(old)):
        return 0.0  # "Contact roles updated: Gil = Economic Buyer" after the call that met Gil: news
    if _WON.search(new) and not (_STATUS.search(old) or _WON.search(old) or decided(old)):
        return 0.0  # "stage Closed Won" after a quote: the deal won is news; after "we're going ahead", a log
    cue = bool(_RECAP.search(new) or _FIELDS.search(new))
    stated = values(new)
    mine = roots(new) - set(background)
    coverage = len(mine & roots(old)) / len(mine) if mine else 0.0
    # a CRM entry logging values the earlier note stated: a field line by itself; with a recap
    # cue, when it names two of them, shares the earlier note's words or names what it logs (one
    # number alone, "10", "13", is too common to say which note a chat line or an update repeats)
    logged = len(stated) >= 2 or coverage >= WITH_CUE or _LOGS.search(new) is not None
    if stated and (_field_line(new, old) or (cue and logged)):
        return 1.0
    if len(mine) < 3:
        return 0.0
    threshold = WITH_CUE if cue else (0.65 if len(stated) >= 2 else WITHOUT_CUE)
    return coverage if coverage >= threshold else 0.0
