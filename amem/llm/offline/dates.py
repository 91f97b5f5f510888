"""Dates a raw log states, resolved against its time with the tense of their clause.

The future stays in the future ("renew in March" said on 2026-11-30 is 2027-03-01), the past in
the past ("on Saturday" in "was migrated on Saturday" is the Saturday before). A month alone is
its 1st, "mid-<month>" the 15th, "end of / late <month>" its last day, "Qn" the quarter's first
day; "the end of next month / quarter / year" the last day of that period. Recurring phrases
("every Monday", "on Thursdays", "the Monday export", "weekly") and durations ("a two-year
term") are not dates. A clause without a tense takes the nearer of the two
candidates. Only these forms count, so words such as "may", "now" or "this year" are never dates.
A numeric day without its year counts after its weekday ("deployed Monday 10/5"), read as
month/day or day/month, whichever falls on that weekday. Dates joined by "or" are options offered,
not a fact's date.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from itertools import pairwise
from typing import Literal

from amem.domain.models import as_utc
from amem.llm.offline.text import sentence_around

Tense = Literal["future", "past"] | None

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_MONTH_FULL = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
#: A weekday named in full or short ("to Mon Aug 3", "→ Thu. 9/17").
_A_WEEKDAY = rf"(?:{_WEEKDAY}|(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)\b\.?)"
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                 "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}  # fmt: skip
_COUNT = r"(?:\d{1,3}|a couple of|a few|an|a|one|two|three|four|five|six|seven|eight|nine|ten)"
_UNIT = r"(?:days?|weeks?|months?)"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th|\.(?=\s))?"  # "22. September": a day written the German way
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
             "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
             "eighteenth", "nineteenth", "twentieth")  # fmt: skip
_ORDINAL_WORDS = {word: n for n, word in enumerate(_ORDINALS, start=1)}
_ORDINAL_WORDS |= {f"twenty-{w}": 20 + n for w, n in _ORDINAL_WORDS.items() if n < 10}
_ORDINAL_WORDS |= {"thirtieth": 30, "thirty-first": 31}
#: A day of the month in words ("the fifteenth", "the thirty-first"), longest first.
_DAY_WORD = "(?P<dayword>" + "|".join(sorted(_ORDINAL_WORDS, key=len, reverse=True)) + ")"
_PART = (
    r"(?P<part>early|mid-?|late|end of|the end of|beginning of|the beginning of|start of|the start of)?\s*"
)

#: Each form, in the order tried; the names of the groups say how to resolve it.
_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("iso", r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
        # "3/27/2026" or "27/03/2026": month/day or day/month (``_numeric_day``)
        (
            "slash",
            r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4}|\d{2})\b(?![/\d])(?!\s*(?:days?|weeks?|months?)\b)",
        ),
        ("month_day", rf"\b(?P<month>{_MONTH})\s+{_DAY}\b(?:,?\s+(?P<year>\d{{4}}))?"),
        # a numeric day without its year after the weekday it falls on ("deployed Monday 10/5",
        # "Thu 3/5 2:00pm"): month/day or day/month, whichever falls on that weekday
        (
            "weekday_numeric",
            rf"\b(?P<wd>mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|{_WEEKDAY})\.?,?\s+"
            r"(?P<a>\d{1,2})/(?P<b>\d{1,2})\b(?![/\d])",
        ),
        # a day and a month between dots, the year after them or not ("01.04.2028", "from 17.08."):
        # the day first, as everywhere dots are written (not a version: "4.12.3", "3.18")
        (
            "dotted",
            # (without its year, the sentence goes on after it: "3.10." ending one is a version)
            r"(?<![\d.vV])(?<!version )(?<!release )(?P<d>\d{1,2})\.(?P<m>\d{1,2})\."
            r"(?:(?P<y>\d{4}|\d{2})(?!\d|\.\d)|(?=\s*[,;)]|\s+(?-i:[a-z])))",
        ),
        # a numeric day without its year after a preposition or a label that dates a fact ("deployed
        # on 30/04", "moved to 6/15", "go-live target: 6/1"); ratios and scores have none ("17/17")
        (
            "cued_numeric",
            r"\b(?:on|by|from|until|till|to|effective|eff\.|starting|since|target:|date:)\s+(?:the\s+)?"
            r"(?P<at>(?P<a>\d{1,2})/(?P<b>\d{1,2}))\b(?![/\d%])",
        ),
        # a day in words, in formal writing: "the fifteenth of June", "the thirty-first of March 2027"
        (
            "day_word_month",
            rf"\b(?:the\s+)?{_DAY_WORD}\s+of\s+(?P<month>{_MONTH_FULL})(?:,?\s+(?P<year>\d{{4}}))?\b",
        ),
        ("day_month", rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?(?P<month>{_MONTH})(?:,?\s+(?P<year>\d{{4}}))?\b"),
        ("month_year", rf"\b{_PART}(?P<month>{_MONTH})\s+(?P<year>\d{{4}})\b"),
        (
            "month",
            rf"(?:\b(?P<cue>in|since|until|till|from|by|to|for|last|next|this|after|before|on|during|"
            rf"starting|beginning|effective)\s+)?"
            rf"{_PART}(?P<month>{_MONTH_FULL})\b",
        ),
        ("quarter", rf"\b{_PART}(?P<q>q[1-4])(?:\s+(?P<year>\d{{4}}))?\b"),
        # before "next month" is read alone: "the end of next month" is its last day, not its 1st
        (
            "end_of_rel",
            r"\b(?:the\s+)?end of (?:the\s+)?(?P<rel>next|last|previous|following|coming)\s+"
            r"(?P<unit>month|quarter|year)\b",
        ),
        (
            "next_last",
            rf"\b(?P<rel>last|next|this coming|coming|this past|past)\s+(?P<unit>{_WEEKDAY}|month)\b",
        ),
        (
            "weekday",
            rf"\b(?:(?P<rel>this|on|last|next|by|until|till|before|from|starting|since)\s+)?(?P<weekday>{_WEEKDAY})\b(?!s)",
        ),
        (
            "named_day",
            r"\b(?P<named>the day before yesterday|the day after tomorrow|yesterday|last night|tomorrow|"
            r"today|"
            r"this morning|this afternoon|tonight|"
            # a change that takes effect as it is said ("takes over ... with immediate effect")
            r"with immediate effect|effective immediately|immediately effective)\b",
        ),
        ("ago", rf"\b(?P<n>{_COUNT})\s+(?P<unit>{_UNIT})\s+ago\b"),
        ("in_n", rf"\bin\s+(?P<n>{_COUNT})\s+(?P<unit>{_UNIT})\b"),
        ("from_now", rf"\b(?P<n>{_COUNT})\s+(?P<unit>{_UNIT})\s+from\s+(?:now|today)\b"),
        ("end_of", r"\b(?:the\s+)?end of (?:the |this )?(?P<unit>month|quarter|year)\b"),
    )
)

#: Words before a date that make it recurring or an attribute, not a date ("every Monday",
#: "the Monday export").
_NOT_A_DATE_BEFORE = re.compile(
    r"\b(?:every|each|per|the|a|any|most|some|all|weekly|monthly)\s+$", re.IGNORECASE
)
_NOT_A_DATE_AFTER = re.compile(
    r"^\s*(?:morning|afternoon|evening|night)?\s*(?:export|job|run|sync|call|meeting|report|release|digest|standup|stand-up)s?\b",
    re.IGNORECASE,
)
_RECURRING_AFTER = re.compile(
    r"^\W*(?:and (?:every|each) \w+|each week|every week|weekly)\b|"
    r"^\s*(?:mornings|afternoons|evenings|nights)\b",
    re.IGNORECASE,
)
#: A cadence word shortly before a weekday: "weekly on Thursday", "every other week on Friday".
_CADENCE_BEFORE = re.compile(
    r"\b(?:every|each|weekly|biweekly|bi-weekly|fortnightly|daily|monthly|standing)\b(?:\s+[\w-]+){0,3}\s*$",
    re.IGNORECASE,
)

_FUTURE = re.compile(
    r"\b(?:will|won't|shall|going to|plan(?:s|ned)? to|schedul\w*|booked|expect\w*|due|upcoming|"
    r"next|tomorrow|intends? to|aims? to|would like to|wants? to|want to|hope to|is set (?:for|to)|"
    r"set to|to be|let's|coming|goes|go live|starts?|begins?|takes? effect|effective|"
    r"postpon\w*|push\w*|mov\w* to|slip(?:s|ped|ping)?|delay\w*|hold)\b|'ll\b",
    re.IGNORECASE,
)
#: Irregular past forms: a past verb as surely as one in -ed ("kickoff held today"). Reporting
#: verbs (said, told, wrote) are left out: what is reported keeps its own tense ("Globex renews in
#: March, they said").
_IRREGULAR_PAST = (
    r"held|made|done|gave|began|kept|left|paid|brought|chose|won|lost|sold|bought|found|saw|"
    r"fell|rose|grew|felt|spent|caught|taught|understood|undertook|shut"
)
_PAST = re.compile(
    r"\b(?:was|were|did|had|has been|have been|ago|yesterday|closed|went|came|met|took|sent|"
    r"got|ran|since|"
    + _IRREGULAR_PAST
    + r")\b|\blast\s+(?:week|month|year|quarter|night|time|"
    + _WEEKDAY[3:-1]
    + r")\b|"
    # (not an adjective in -ed: "anything cutover related", "US-based", "limited")
    r"\b(?!(?:related|based|interested|dedicated|limited|detailed|automated|integrated|advanced|excited|"
    r"concerned|worried|tired|experienced|qualified|unlimited|complicated|sophisticated|shared)\b)\w{3,}ed\b",
    re.IGNORECASE,
)
#: A participle after a present copula is a state now, not the past ("is closed", "are booked").
_PRESENT_STATE = re.compile(r"\b(?:is|are|am|'s|'re)\s+(?:\w+ly\s+)?\w{3,}ed\b", re.IGNORECASE)
_FUTURE_ED = re.compile(
    r"\b(?:scheduled|planned|booked|expected|postponed|pushed|moved|delayed|pencil+ed in|slated|targeted|"
    r"earmarked|penciled in|tentatively)\b",
    re.I,
)
#: "from", "starting", "effective", "as of" before a date: when the fact takes effect.
_STARTS_BEFORE = re.compile(
    r"\b(?:from|starting(?: on)?|effective(?: from| on)?|as of|beginning|(?:begins|starts|start|goes live)"
    r"(?: on| from)?|takes effect(?: on)?|live)\s*$",
    re.IGNORECASE,
)
#: The month form's own cue when it says the fact takes effect then ("starting August").
_CUE_STARTS = re.compile(r"(?:starting|beginning|effective)\s", re.IGNORECASE)
#: Just before or after a date: it is part of a URL, a query, a code sample or an example.
_IN_DATA = re.compile(
    r"(?:[=/&?_]|\be\.g\.,?\s*['\"]?|\bfor example,?\s*['\"]?|\bsuch as\s*['\"]?|(?<!\w)['\"])$", re.I
)
_DATA_AFTER = re.compile(r"[&_/]")
_CLAUSE_EDGE = re.compile(
    # a parenthesis is a clause of its own ("last day end of May (joining a rival, sounded happy)")
    r"[.!?](?=\s|$)|[;\n()]|:\s|,\s+(?:and|but|so|which|while)\b|\b(?:because|since|as|although)\b|"
    # "and" / "but" joining two clauses, each with its own subject ("my last day is June 26 and
    # he joined in May"): the tense of one is not the other's
    r"\s(?:and|but)\s+(?=(?:he|she|they|we|I|you|it|[A-Z][a-z]+)\s+(?!and\b|or\b)[a-z']+)|"
    # the same with a possessive subject ("I've accepted an offer and my last day is June 26")
    r"\s(?:and|but)\s+(?=(?:my|our|his|her|their|its|your)\s+(?:[\w-]+\s+){0,6}?"
    r"(?:is|are|was|were|will|has|had|have)\b)"
)


@dataclass(frozen=True)
class DateMention:
    """One date the text states, and what the words around it say about it."""

    start: int
    end: int
    text: str
    when: date
    starts: bool  # "from / effective / as of ..." precedes it
    target: bool  # "from X to <it>": the date something moves to
    absolute: bool  # written with a month, a quarter or a year, not relative to the raw log's time
    month_only: bool = False  # a month without its day ("in October"): its 1st, or its part's day


#: Forms written with a month, a quarter or a year.
_ABSOLUTE = frozenset(
    {
        "iso",
        "slash",
        "month_day",
        "weekday_numeric",
        "cued_numeric",
        "dotted",
        "day_word_month",
        "day_month",
        "month_year",
        "month",
        "quarter",
    }
)


def mentions(text: str, base: datetime) -> list[DateMention]:
    """Dates the text states, resolved against ``base`` (the raw log's time), in text order."""
    today = as_utc(base).date()
    taken: list[tuple[int, int]] = []
    out: list[DateMention] = []
    # a date in a question is asked about, not stated ("Can we start on 1 April?")
    # (a question mark after a space is a character the text shows: "the export shows ??????")
    questions = [m.span() for m in re.finditer(r"[^.!?\n]*(?<=\S)\?", text)]
    for name, pattern in _FORMS:
        for match in pattern.finditer(text):
            start, end = match.span("at") if "at" in pattern.groupindex else match.span()
            span = text[start:end]
            if span.strip() and span.lstrip() != span:
                start += len(span) - len(span.lstrip())
            if any(s < end and start < e for s, e in taken):
                continue
            if not _is_date(name, match, text, start, end):
                continue
            if any(s <= start < e for s, e in questions):
                continue
            cue = re.match(r"since\s+", text[start:end], re.IGNORECASE)  # the month form holds its cue
            if _BASELINE.search(text[max(0, start - 60) : start] + (cue.group(0) if cue else "")):
                continue  # "DSO is down 4 days since August": the start of what is measured, not a change
            if _since(text, start, cue) and _COUNTED.search(_around(text, start, end)):
                continue  # "41 events live since June", "Since June 1: 19 events": a tally's start
            if name == "weekday" and not match.group("rel") and text[end : end + 2] in {"'s", "’s"}:
                continue  # "Following Monday's check-in": it names a past meeting, not when a fact holds
            if _FISCAL_YEAR.search(text[max(0, start - 40) : start]):
                continue  # "our fiscal year starts 1 April": a yearly boundary, not a date a fact holds
            if _IN_DATA.search(text[max(0, start - 12) : start]) or _DATA_AFTER.match(text[end : end + 1]):
                continue  # "?from=2025-09-01&to=...", "(e.g. '2026-11-16 14:02')": data, not a date said
            starts = bool(_STARTS_BEFORE.search(text[max(0, start - 40) : start]))
            starts = starts or (name == "named_day" and _IMMEDIATE.fullmatch(text[start:end]) is not None)
            # the month form holds its cue: "starting August" opens when the fact takes effect
            starts = starts or _CUE_STARTS.match(text[start:end]) is not None
            starts = starts or _opens_a_term(text, start, end)
            tense = _tense(text, start, end)
            if starts and tense == "past":
                tense = None  # "accepted ..., starting July 1": the start is the nearer July 1
            if (not starts and _in_relative_clause(text, start)) or _NON_RESTRICTIVE.search(
                text[max(0, start - 80) : start]
            ):
                continue  # "the report we asked for in June", "their fiscal year, which starts on
                # March 1": it dates a noun, not the fact
            if name == "weekday" and not match.group("rel") and tense != "past" and not starts:
                continue  # "I'm out Thursday": a bare weekday dates only a past event
            if (
                name == "named_day"
                and _is_today(match)
                and (text[end : end + 2] == "'s" or (not starts and tense != "past"))
            ):
                continue  # "today" dates an event that happened today, or "as of today"
            when = _resolve(name, match, today, tense)
            if when is None:
                continue
            if starts and tense == "future" and name in _ABSOLUTE:
                # "the rate is $0.07 from 1 July", said on 2 July: a start a few days back (a
                # change dated when it took effect), not the same day a year on
                near = _resolve(name, match, today, None)
                if near is not None and 0 < (today - near).days <= BACKGROUND_DAYS:
                    when = near
            taken.append((start, end))
            out.append(
                DateMention(
                    start=start,
                    end=end,
                    text=text[start:end],
                    when=when,
                    starts=starts,
                    target=_moved_to(text, start),
                    absolute=name in _ABSOLUTE,
                    month_only=name in {"month", "month_year"} and not match.group("part"),
                )
            )
    return sorted(out, key=lambda m: m.start)


#: Before a date: the boundary of a fiscal year, which recurs every year.
_FISCAL_YEAR = re.compile(
    r"\b(?:fiscal|financial|budget)\s+years?\s+(?:starts?|begins?|ends?|runs?|closes?)\s+(?:on\s+|in\s+)?$|"
    r"\bFY\s+(?:starts?|begins?|ends?)\s+(?:on\s+|in\s+)?$",
    re.IGNORECASE,
)
#: A count of things ("19 events", "31k checklists", "5 seats"): with "since", a tally.
_COUNTED = re.compile(r"(?<![\w$€£.,])\d[\d,.]*k?\s+(?:[a-z-]+\s+)?[a-z]{3,}s\b")


_SINCE_BEFORE = re.compile(r"\bsince\s+(?:the\s+)?$", re.IGNORECASE)


def _since(text: str, start: int, cue: re.Match[str] | None) -> bool:
    """Whether "since" opens the date (inside its match or right before it)."""
    return cue is not None or _SINCE_BEFORE.search(text[max(0, start - 12) : start]) is not None


def _around(text: str, start: int, end: int) -> str:
    """The date's clause up to it, and after a colon right after it, what follows ("Since June 1:
    19 events"): where the tally a date starts is stated."""
    opened = max(text.rfind(c, 0, start) for c in ".;,!?\n") + 1
    after = ""
    colon = re.match(r"(?:\s*\d{1,2})?\s*:", text[end : end + 6])
    if colon is not None:
        end += colon.end()
        closed = [i for i in (text.find(c, end) for c in ".;!?\n") if i >= 0]
        after = text[end : min([*closed, end + 40])]
    return text[opened:start] + " " + after


#: Before a date: "since" after a comparison or a measure in the same clause ("down 4 days since
#: August", "twice as many since March"): the date is the baseline of a measure.
_BASELINE = re.compile(
    r"\b(?:down|up|better|worse|more|fewer|less|higher|lower|faster|slower|improved|grown|fallen|"
    r"dropped|risen|increased|decreased|doubled|halved|twice|times|as many|as much)\b"
    r"[^.;:!?\n]{0,40}\bsince\s+(?:the\s+)?$",
    re.IGNORECASE,
)


#: After a date: an arrow, a dash or "to" and another date ("2026-10-01 → 2028-09-30").
_RANGE_AFTER = re.compile(r"^\s*(?:→|->|=>|–|—|-|to|through|thru|until)\s*(?:\d|[A-Z][a-z]{2})")
#: Before a date that opens a range: the term, period or subscription the range spans.
_TERM_BEFORE = re.compile(
    r"\b(?:term|period|contract|subscription|licen[cs]e|agreement|commitment|extension)\b[^.;\n]{0,12}$|"
    # a span the agreement covers ("signed the extension yesterday, covering 1 June to 31 August")
    r"\b(?:covering|spanning)\s+(?:the\s+period\s+)?(?:from\s+)?$",
    re.I,
)


#: Right before a date: a term said to start on it ("Subscription starts May 1", "the new term
#: begins on 2027-01-01", "billing start date: June 1").
_TERM_STARTS = re.compile(
    # ("term starting March 1", "Contract start shall be 01.04.2026", "contract start 01.04.2026")
    r"\b(?:(?:term|subscription|contract|licen[cs]e|agreement|billing)\s+(?:starts?|starting|begins|"
    r"beginning|start date|commenc(?:es|ing))|commencement date)\s*"
    r"(?:on\s+|from\s+|is\s+|will be\s+|shall be\s+|:\s*)?$",
    re.IGNORECASE,
)


#: Right before a date: the renewal date a record states ("renewal date 2027-03-01", "Renewal
#: date: 31.03.2027", "renewal date set to 2027-06-01").
_RENEWAL_DATE_BEFORE = re.compile(r"\brenewal date\s*(?::\s*|is\s+|set to\s+|now\s+)?$", re.IGNORECASE)


def _opens_a_term(text: str, start: int, end: int) -> bool:
    """Whether the date opens a term ("24-month term 2026-10-01 → 2028-09-30", "Subscription
    starts May 1"): the day the term takes effect, whenever it was signed."""
    before = text[max(0, start - 40) : start]
    if _TERM_STARTS.search(before):
        return True
    return bool(_RANGE_AFTER.match(text[end : end + 20]) and _TERM_BEFORE.search(before))


def _moved_to(text: str, start: int) -> bool:
    """Whether the date is where something moves to ("from X to <it>", "moved ... to <it>", "New
    date: <it>", "the new go-live is <it>")."""
    before = text[max(0, start - 80) : start]
    if re.search(
        r"\bnew\s+(?:[\w-]+\s+){0,2}?(?:date|day|deadline|target|go-?live|start|timeline)\s*"
        r"(?:[:\-–]|is|will be)\s*(?:now\s+)?(?:on\s+)?$",
        before,
        re.IGNORECASE,
    ):
        return True
    if re.search(r"\d\s*(?:→|->|=>)\s*$", before):
        return True  # "renewal date 2027-02-28 → 2027-03-31": the date an arrow leads to from another
    if re.search(rf"(?:→|->|=>)\s*(?:{_A_WEEKDAY},?\s+)?$", before, re.IGNORECASE):
        moving = r"\b(?:from|mov\w*|push\w*|postpon\w*|delay\w*|shift\w*|chang\w*)\b"
        return bool(re.search(moving, before, re.IGNORECASE))
    # "moves from 01.06. to the Monday of KW 27, that is 29.06.2026": the target said again exactly
    restated = re.search(r"\bto\s+[^.;\n]{1,40},\s*(?:that is|i\.e\.|which is)\s*$", before, re.IGNORECASE)
    if not re.search(rf"\bto\s+(?:{_A_WEEKDAY},?\s+)?$", before, re.IGNORECASE) and not restated:
        return False
    return bool(re.search(r"\b(?:from|mov\w*|push\w*|postpon\w*|delay\w*|shift\w*|chang\w*)\b", before, re.I))


#: Before a date: when something ends or must be done by, not when the fact takes effect.
_ENDS_BEFORE = re.compile(
    r"\b(?:until|till|through|thru|before|ahead of)\s+(?:(?:the|their|our|his|her|its|your|my)\s+)?"
    r"(?:[\w-]+\s+){0,4}?(?:(?:in|on)\s+)?$|"
    # a term's own end: "(ends 2028-04-30)", "running to 2028-04-30" (an expiry stays a fact's day:
    # "the certificate expires on 9 October")
    r"\b(?:ends|ending|(?:runs|running|run)\s+(?:to|through|until))\s+(?:on\s+)?$|"
    # seats co-termed to the contract's end: "6 more seats, co-termed to May 31, 2027"
    r"\bco-?term(?:ed|s|ing)?\s+(?:to|with|until|through)\s+(?:on\s+)?$|"
    # a task's due day: "Due: 2026-03-13", "due by Friday" ("the renewal is due March 27" is the
    # renewal's day)
    r"\bdue(?:\s+date)?\s*:\s*$|\bdue\s+by\s+$",
    re.IGNORECASE,
)
#: A sentence that says what it states is not settled: its date is no fact's date.
_UNDECIDED = re.compile(
    r"\b(?:not committed|nothing (?:is |was )?decided|not (?:yet )?decided|undecided|no decision yet|"
    r"to be confirmed|tbc|tbd)\b",
    re.IGNORECASE,
)
_ENDS_CUE = re.compile(r"^(?:until|till|before)\b", re.IGNORECASE)
#: Between "until / through" and a date, a weekday naming it ("through Friday, March 27").
_WEEKDAY_NAMING = re.compile(
    r"\b(?:until|till|through|thru)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"\s*,?\s*(?:the\s+)?$",
    re.IGNORECASE,
)


def _ends(text: str, mention: DateMention) -> bool:
    """Whether the date ends a state or sets a deadline ("until early April", "before the 6 July
    go-live"): the fact it belongs to holds before it, so it is not the fact's date."""
    before = text[max(0, mention.start - 40) : mention.start]
    sentence = re.split(r"[.!?\n]", text[mention.start :], maxsplit=1)[0]
    start = max(text.rfind(c, 0, mention.start) for c in ".!?\n") + 1
    undecided = _UNDECIDED.search(text[start : mention.start] + sentence)
    through = _WEEKDAY_NAMING.search(before)
    return bool(_ENDS_CUE.match(mention.text) or _ENDS_BEFORE.search(before) or through or undecided)


#: Errands agreed as a next step: the date they carry is when the errand is due, not when a fact holds.
ERRANDS = _ERRANDS = (
    r"send|share|forward|schedule|book|email|call|ring|prepare|draft|loop in|get back|circle back|review|"
    r"provide|reach out|follow up|arrange|confirm|check|install|invite|introduce|walk \w+ through|"
    r"set up a call|look into|sign|countersign|return|come back"
)
#: A step label ("Next step:", "Action:", "To-do -") that introduces what someone will do.
_STEP_LABEL = re.compile(
    r"(?:\b(?:next steps?|actions?(?: items?)?|to-?dos?|follow[- ]?ups?|owner actions?)\s*[:\-–]|"
    # a line opened by a bare "Next:" or the note-taker's "f/u:" / "NS:" shorthand
    r"^[ \t\-*•]*(?:next|f/?u|ns)\s*:)",
    re.I | re.M,
)
#: "<who> to send ...", "<who> will / 'll send ...", "<who> sends ... tomorrow": an errand assigned.
_ERRAND_CLAUSE = re.compile(
    rf"(?:\b(?:[A-Z][a-z]+|I|we|We|they|They|(?:[Hh]is|[Hh]er|[Tt]heir|[Oo]ur|[Mm]y|[Tt]he) [a-z]+)\s+"
    rf"(?:to|will|is going to|are going to|is to|are to|am to)\s+|'ll\s+|'m to\s+)(?:{_ERRANDS})\b"
)
#: A sentence that opens with an errand in the simple present of a plan ("Raj sends the redlines by
#: Friday", "I send the deck tomorrow"): a named person or the note-taker, then the errand's verb.
_PRESENT_ERRAND = re.compile(
    # (after a label of what was agreed: "Agreed: Hollis sends the deck by Friday")
    rf"^[\s\-*•]*(?:(?i:agreed|action|owner|todo|to-do)\s*:\s*|(?i:(?:we|they) agreed(?: that)?)\s+)?"
    rf"(?:[A-Z][a-z]+\s+(?:(?:{_ERRANDS})(?:s|es)|(?:gets|comes|circles|reaches|follows|walks|"
    rf"sets|looks) \w+)|I\s+(?:{_ERRANDS}))\b(?!\s+(?:on|in|at)\b)"
    # (not a statement made by the verb: "I confirm that the review takes place on Thursday")
    r"(?!\s+that\b)"
)


#: A sentence with no verb that sends something to someone by a day ("Clean copy to Ravi by Monday",
#: "Revised SOW to the CFO Friday"): a delivery owed, an errand.
_DELIVERY = re.compile(
    r"^[\s\-*•]*(?:[\w+&/.'-]+\s+){1,5}?to\s+(?:the\s+)?[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?\s+"
    r"(?:by\s+|before\s+)?$"
)


#: An errand asked for ("Please send the quote by Friday", "Kindly confirm by the 15th").
_REQUESTED_ERRAND = re.compile(rf"\b(?:please|pls|plz|kindly)\s+(?:{_ERRANDS})\b", re.IGNORECASE)


def _in_errand(text: str, mention: DateMention) -> bool:
    """Whether the date sits in a next step: a sentence introduced by a step label, or a clause
    that assigns someone an errand (send, schedule, confirm ...). Such a date says when the errand
    is due; the input's main fact is elsewhere, so it is not that fact's date."""
    start = max(text.rfind(c, 0, mention.start) for c in ".!?\n") + 1
    before = text[start : mention.start]
    # a move, or a change of plan or system ("upgraded to Enterprise yesterday"), not a delivery
    moved = re.search(
        r"\b(?:mov|push|postpon|delay|shift|chang|upgrad|downgrad|switch|migrat|convert)\w*",
        before,
        re.IGNORECASE,
    )
    if _DELIVERY.match(before) and not moved:
        return True
    return bool(
        _STEP_LABEL.search(before)
        or _ERRAND_CLAUSE.search(before)
        or _PRESENT_ERRAND.match(before)
        or _REQUESTED_ERRAND.search(before)
        or _MEETING_TO_COME.search(before)
    )


#: Before a date, in its sentence: the next meeting, or one being set up ("Next QBR early July",
#: "Intro call with him is next Tuesday", "Set up a call w/ Sharon Thu 2/19"): a next step's date.
_MEETING_TO_COME = re.compile(
    r"(?:\b(?:next|upcoming)\s+(?:QBR|call|meeting|sync|check-?in|catch-?up|session|workshop|review)|"
    r"\b(?:intro|introductory|kick-?off)\s+(?:call|meeting)(?:\s+with(?:\s+[\w'-]+){1,3}?)?\s+(?:is|on)|"
    r"\bset up a (?:call|meeting)\b)[^.;!?\n]{0,25}$",
    re.IGNORECASE,
)


#: After a date opening a line: the time of a message or a log entry ("[09/02/26, 11:40] Rohan:").
_STAMP_TIME = re.compile(r"[,\s]*\d{1,2}:\d{2}(?::\d{2})?\s*(?:[ap]\.?m\.?)?\s*[\])\-–|]", re.IGNORECASE)
#: A line of a message's header or a quoted reply's: the date it dates is the message's.
_HEADER_LINE = re.compile(
    r"^[ \t>]*(?:(?:sent|date|from|to|cc|subject|received)\s*:|on\s.{0,80}\bwrote\s*:)[^\n]*$", re.I | re.M
)
#: A section heading of a call summary or a status report: a short line of its own, no full stop
#: ("Key moments", "Decisions", "Next steps:", "Action items").
_SECTION_HEADING = re.compile(r"^[ \t]*[A-Za-z][A-Za-z /&-]{2,30}:?[ \t]*$", re.M)
#: The headings of what is still to do.
_ERRANDS_HEADING = re.compile(
    r"^[ \t]*(?:next steps?|action items?|actions|follow[- ]?ups?|to-?dos?|open items)[ \t]*:?[ \t]*$", re.I
)
#: A record's title line: "Transcript excerpt - Commercial review, 29 Jan", "Call notes 3/4",
#: "Meeting minutes, 12 May 2026" (a title, not a sentence: no full stop at its end).
_RECORD_TITLE = re.compile(
    r"^[^\n.!?]{0,60}\b(?:transcript|excerpt|summary|recap|minutes|notes)\b[^\n]{0,60}(?<![.!?])\s*$", re.I
)
#: Before a date: it dates a message, a conversation or a point raised in one ("the email from
#: 12 May", "our call of Monday", "one more thing from yesterday"), not a fact.
_DATES_A_MESSAGE = re.compile(
    r"\b(?:e-?mails?|mails?|messages?|calls?|meetings?|notes?|minutes|conversations?|chats?|threads?|"
    r"letters?|recaps?|discussions?|thing|point|items?|offers?|quotes?|proposals?)\s+(?:from|of|dated)\s+"
    r"(?:the\s+)?$|"
    # "the order form as discussed Monday": the day of the conversation referred to
    r"\bas (?:discussed|mentioned|promised)(?: (?:on|in))?\s+(?:the\s+)?$|"
    # "As we approach the end of Q3, I confirm ...": the time of writing
    r"\bas we (?:approach|near|head into|enter|close out)\s+(?:the\s+)?$",
    re.I,
)
#: Before a date, in its clause: a conversation referred to by its verb ("great speaking with you
#: yesterday", "good to talk to Ana on Monday"): the date is the conversation's, not a fact's.
_CONVERSED = re.compile(
    r"\b(?:speaking|talking|chatting|catching up|connecting|to (?:speak|talk|chat|catch up|connect))"
    r"(?:\s+(?:with|to)\s+(?:[\w'-]+\s+){0,5}?)?\s*$",
    re.I,
)
#: Before a date, in its sentence: an indirect question ("asked whether we could start on 1 July").
_ASKED = re.compile(r"\b(?:ask\w*|wonder\w*|question\w*|unsure|not sure)\s+(?:\w+\s+)?(?:whether|if)\b", re.I)
#: A quotation of three words or more: the date inside is the quoted speaker's, not the input's fact.
_NOT_QUOTE = "[^\"“”'’\\n]*?"
_QUOTED = re.compile(
    rf"(?:^|(?<=[\s(:]))[\"“'‘](?=\S){_NOT_QUOTE}\s{_NOT_QUOTE}\s{_NOT_QUOTE}[\"”'’](?=[\s.,;:!?)]|$)"
)


#: Before a date, in its clause: a day only proposed or forecast ("Proposed subscription start is
#: June 1", "Target close: mid-May", "Expected close 2026-05-22"): it takes effect once agreed.
_PROPOSED = re.compile(
    r"\b(?:proposed|suggested|(?:target|expected|estimated|est\.?|forecast)\s+close(?:\s+date)?)\b"
    r"[^.;!?\n]{0,30}$",
    re.IGNORECASE,
)


def _not_the_fact(text: str, mention: DateMention) -> bool:
    """Whether the date dates something other than the input's main fact: a header line, a quoted
    message, a conversation referred to, a question asked indirectly, or a day only proposed."""
    line_start = text.rfind("\n", 0, mention.start) + 1
    line_end = text.find("\n", mention.end)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    if _HEADER_LINE.match(line):
        return True
    if not text[:line_start].strip() and _RECORD_TITLE.match(line):
        return True  # "Transcript excerpt - Discovery call, 12 Jan": the day of the record itself
    headings = list(_SECTION_HEADING.finditer(text, 0, line_start))
    if headings and _ERRANDS_HEADING.match(headings[-1].group(0)):
        return True  # under "Next steps": an errand's due day, not the fact's
    opens_line = re.fullmatch(r"\s*[\[(]?\s*", text[line_start : mention.start]) is not None
    if opens_line and _STAMP_TIME.match(text, mention.end):
        return True  # "[09/02/26, 11:40] Rohan: ...": a chat export's message stamp
    if any(q.start() <= mention.start and mention.end <= q.end() for q in _QUOTED.finditer(text)):
        return True
    if _DATES_A_MESSAGE.search(text[max(0, mention.start - 40) : mention.start]):
        return True
    if _CONVERSED.search(text[max(0, mention.start - 60) : mention.start]):
        return True
    start = max(text.rfind(c, 0, mention.start) for c in ".!?\n") + 1
    before = text[start : mention.start]
    return bool(
        _ASKED.search(before)
        or _PROPOSED.search(before)
        or _PROPOSING.search(before)
        or _THANKS_FOR.match(before)
    )


#: A sentence that thanks for, or is glad of, a conversation ("Thank you for yesterday's meeting",
#: "Thanks for the time on Thursday", "Great to meet you on Monday"): the date is the conversation's,
#: which the input refers to; its news comes after.
_THANKS_FOR = re.compile(
    r"^\W*(?:(?:hi|hello|hey|dear)\s+)?(?:[A-Z][a-z]+,\s*)?(?:many |again, )?(?:thanks|thank you|thx|"
    r"(?:it was )?(?:great|good|nice|lovely|a pleasure)\s+(?:to|speaking|meeting|seeing|chatting|talking))\b",
    re.IGNORECASE,
)
#: A proposal in its own sentence ("I should like to propose that we run the workshops ... beginning
#: next Tuesday"): a day offered, not yet a fact.
_PROPOSING = re.compile(
    r"\b(?:propose|proposing|suggest|suggesting)\s+(?:that|to|we)\b[^.;!?\n]{0,140}$", re.IGNORECASE
)


#: A plan in the past perfect ("the start we'd planned for mid-June", "had been scheduled for"):
#: the plan that was, which the input goes on to change; its date is not the fact's.
_FORMER_PLAN = re.compile(
    r"(?:'d|\bhad)\s+(?:been\s+)?(?:planned|scheduled|booked|expected|intended|pencil+ed(?: in)?|"
    r"targeted|hoped|agreed)\b[^.;:!?\n]{0,25}$",
    re.IGNORECASE,
)


#: A deadline someone wants met ("Gil wants all 3 sites live by June 1", "our auditor wants every
#: tool behind SSO by end of Q3"): the wish and the "by" before the date make it a deadline asked
#: for, not the day a fact takes effect ("she wants a QBR in mid-December" is a day wanted, kept).
_WISH = re.compile(
    r"\b(?:wants?|wanted|wanting|would (?:like|love)|'d (?:like|love)|wish(?:es|ed)?|hop(?:e|es|ed|ing)|"
    r"insists?|insisted|expects?|expected|needs?|needed|requires?|required|asks?|asked|asking)\b",
    re.IGNORECASE,
)
_BY = re.compile(r"\bby\s+(?:the\s+)?(?:(?:end|middle|start|beginning)\s+of\s+)?$", re.IGNORECASE)


def _wished_deadline(text: str, mention: DateMention) -> bool:
    """Whether the date is a deadline someone wants met: "by" before it, a wish earlier in its sentence."""
    start = max(text.rfind(c, 0, mention.start) for c in ".!?\n") + 1
    before = text[start : mention.start]
    by = _BY.search(before) is not None or mention.text.lower().startswith("by ")
    return by and _WISH.search(before) is not None


#: In a parenthesis: a subject and its verb, a clause of its own ("FY starts Jan 1", "it ends May 3").
_ASIDE_CLAUSE = re.compile(
    r"\b[A-Za-z]{2,}\s+(?:starts|begins|ends|runs|closes|opens|is|are|was|were|falls|lands)\b", re.IGNORECASE
)


def _aside(text: str, mention: DateMention) -> bool:
    """Whether the date sits in a parenthesis: an aside about something else, not the main fact."""
    line_start = text.rfind("\n", 0, mention.start) + 1
    before = text[line_start : mention.start]
    line_end = text.find("\n", mention.end)
    after = text[mention.end : line_end if line_end >= 0 else len(text)]
    if before.count("(") <= before.count(")") or ")" not in after:
        return False
    inside = before[before.rfind("(") + 1 :] + " " + after[: after.find(")")]
    # "(1 April)", "(effective 1 July)", "(kickoff on 3 March)" name the date of what they
    # follow; "(12 reps join in Q4)", "(FY starts Jan 1)" are clauses of their own
    return len(re.findall(r"[A-Za-z]{2,}", inside)) >= 3 or bool(_ASIDE_CLAUSE.search(inside))


def dates_something_else(text: str, mention: DateMention) -> bool:
    """Whether the date dates a message, a quote, a question asked or an aside, not a fact."""
    return _not_the_fact(text, mention) or _aside(text, mention)


#: A raw log that presents itself as an offer: a subject line naming a proposal, a quote or an
#: offer, or a validity period ("The proposal is valid through November 30"). What it states is
#: offered, not in effect: its dates and values are the offer's.
_OFFER_NOTE = re.compile(
    r"\b(?:proposal|quote|offer|pricing|approval)\s+(?:expires|lapses)\b|"
    r"\b(?:proposal|quote|offer|pricing)\s+(?:is\s+|stays\s+|remains\s+)?(?:valid|good|open|held)\s+"
    r"(?:through|until|till|for)\b|\bvalid (?:through|until|till) \d|"
    r"^\W*subject\s*:[^\n]*\b(?:proposal|quote|offer)\b|"
    # a document sent out to be signed is offered until it is: "Order form OF-12 sent for signature"
    r"\b(?:sent|out|routed)\s+(?:[\w-]+\s+){0,3}?for\s+(?:e-?)?signatures?\b",
    re.IGNORECASE | re.MULTILINE,
)
#: A note whose heading (its first line) reports an offer sent ("Annual proposal - sent to Ana",
#: "Options sent to the CFO:", "Quote sent", "Dev, Kenji — proposal attached"): what follows is
#: what was offered.
_OFFER_SENT = re.compile(
    r"\A\W*(?:[\w-]+,?\s+(?:[-–—]\s+)?){0,3}?(?:proposal|quote|options|offer)\b[^\n]{0,6}?\b(?:sent|attached|enclosed)\b|"
    # a note that opens as the quote itself ("Quote for the six carriers joining ...: EUR 189 ...")
    r"\A\W*(?:quote|proposal|offer)\s+(?:for|to)\b",
    re.IGNORECASE,
)


def offer_note(text: str) -> bool:
    """Whether the raw log presents itself as an offer (its values are offered, not in effect)."""
    return _OFFER_NOTE.search(text) is not None or _OFFER_SENT.search(text) is not None


#: In a fault report, the words of the fault's own course: when it started or came back, when it
#: was fixed, shipped, rolled back or confirmed. A date in a sentence without one dates what the
#: report describes ("the night shift on Oct 31", "the ETA shows Aug 9", "the summit is Sept 17").
_FAULT_EVENT = re.compile(
    r"\b(?:since|start\w*|began|begun|again|back|fail\w*|broke\w*|stopped|stuck|down|outage|"
    r"error\w*|crash\w*|fix\w*|resolv\w*|closed|clos(?:e|ing)|deploy\w*|redeploy\w*|releas\w*|ship\w*|"
    r"went out|go(?:es)? out|rolled (?:out|back)|patch\w*|hotfix\w*|confirm\w*|complet\w*|"
    r"re-?enabled|restored|rotat\w*|renew\w*|expir\w*|whitelist\w*|refund\w*|migrat\w*|"
    r"works|(?:is|are) working|working again)\b",
    re.IGNORECASE,
)


def _in_fault_course(text: str, mention: DateMention) -> bool:
    """Whether the date's sentence tells the fault's own course ("fixed in 26.8.4 on Aug 18")."""
    return _FAULT_EVENT.search(sentence_around(text, mention.start, mention.end)) is not None


def valid_at(
    text: str,
    base: datetime,
    outside: Sequence[tuple[int, int]] = (),
    main: tuple[int, int] | None = None,
    *,
    fault_report: bool = False,
    renewal_note: bool = False,
) -> DateMention | None:
    """The date the main fact takes or took effect: a date something moves to, else one it starts
    from, else the first date stated that does not end a state, set a deadline or date a next step.
    A date inside one of the ``outside`` spans (the reason given for a decision: a reason dates
    its own fact, not the decision's), in a parenthesis or in a plan the input says it had is
    none. When ``main`` (the sentence stating the input's decision) holds a date, that date
    wins. In a ``fault_report`` (a support issue) only a date of the fault's own course counts. In a
    ``renewal_note`` (a note about the renewal) the renewal date it states is the fact's day, before
    the start of the term it renews ("renewal date 2027-03-01, 12-month term from 2026-03-01")."""
    if offer_note(text):
        return None  # an offer takes effect only once accepted, in another note
    found = [
        m
        for m in mentions(text, base)
        if not _ends(text, m)
        and not _in_errand(text, m)
        and not _not_the_fact(text, m)
        and not any(start <= m.start and m.end <= end for start, end in outside)
        and not _aside(text, m)
        and not _FORMER_PLAN.search(text[max(0, m.start - 60) : m.start])
        and not _wished_deadline(text, m)
        and (not fault_report or _in_fault_course(text, m))
    ]
    options = _alternatives(text, mentions(text, base))
    found = [m for m in found if (m.start, m.end) not in options and not _background(text, m, base)]
    renewal = next(
        (
            m
            for m in found
            if _RENEWAL_DATE_BEFORE.search(text[max(0, m.start - 30) : m.start])
            and not re.match(r"\s*(?:->|→|=>|⇒)", text[m.end :])  # a change log's old value
        ),
        None,
    )
    if renewal_note and renewal is not None:
        return renewal
    term = next((m for m in found if _opens_a_term(text, m.start, m.end)), None)
    if term is not None:
        return term  # a contract signed one day that starts on another: the day its term starts
    every = found
    if main is not None:
        # the decision is the main fact: a date its own sentence states wins over dates elsewhere
        # (a condition's, a side remark's)
        inside = [m for m in found if main[0] <= m.start and m.end <= main[1]]
        found = inside or found
    successor = [m for m in found if _SUCCEEDS.search(_clause_before(text, m))]
    # a go-live's date is the day an onboarding takes effect ("NY go-live target: 6/1"), before a
    # step on the way there ("Okta SSO setup mid-May")
    go_live = [
        m
        for m in found
        if _GO_LIVE_BEFORE.search(text[max(0, m.start - 50) : m.start]) and not _BY.search(text[: m.start])
    ]
    starting = [m for m in found if m.starts]
    for mention in [*(m for m in found if m.target), *go_live, *successor, *starting, *found]:
        return _day_of(mention, every)
    return None


def _day_of(mention: DateMention, found: Sequence[DateMention]) -> DateMention:
    """A month alone, when the text goes on to name a day of that month ("postponed to October ...
    St Aldhelm's now starts on Monday 5 October"): that day, which says the same more exactly."""
    if not mention.month_only:
        return mention
    same = [
        m
        for m in found
        if m.start > mention.start
        and not m.month_only
        and m.absolute
        and m.when.replace(day=1) == mention.when.replace(day=1)
    ]
    return same[0] if same else mention


#: Before a date, in its clause: the go-live it dates ("go-live target: 6/1", "goes live on May 4").
_GO_LIVE_BEFORE = re.compile(r"\bgo(?:es)?[- ]?live\b[^.;!?\n]{0,30}$", re.IGNORECASE)


#: How far before the raw log a date may lie and still be when its main fact took effect. An input
#: reports what is new: "signed last week", "live since Monday". A date months back dates the
#: background ("SOC 2 report for the period ending Dec 2025", "their March 2025 numbers").
#: Of the tuned part's labelled dates, by either reader, one lies more than a week back.
BACKGROUND_DAYS = 14
_SINCE = re.compile(r"\bsince\s+(?:the\s+)?$", re.IGNORECASE)


def _background(text: str, mention: DateMention, base: datetime) -> bool:
    """Whether the date lies so far before the raw log that it dates the background, not the main
    fact: more than ``BACKGROUND_DAYS`` back, unless a state is said to hold from it ("since
    January", "effective March 1")."""
    if (as_utc(base).date() - mention.when).days <= BACKGROUND_DAYS or mention.starts:
        return False
    since = _SINCE.search(text[max(0, mention.start - 12) : mention.start])
    return not (since or mention.text.lower().startswith("since"))


#: Between two dates: "or" joins them as options ("Tue 3/10 at 10am PT or Wed 3/11 at 2pm PT").
_OR_BETWEEN = re.compile(r"^[^.;:!?\n]{0,30}?\bor\b\s*(?:on\s+|the\s+)?$", re.IGNORECASE)


def _alternatives(text: str, found: Sequence[DateMention]) -> set[tuple[int, int]]:
    """The dates offered as options, each joined to the next by "or": neither is the fact's date
    (the option taken is stated in another note)."""
    out: set[tuple[int, int]] = set()
    for one, other in pairwise(found):
        if _OR_BETWEEN.match(text[one.end : other.start]):
            out |= {(one.start, one.end), (other.start, other.end)}
    return out


#: Before a date, in its clause: a successor taking over ("Olivia joins as CHRO on September 14",
#: "Raj takes over on 1 March"). A handover's main fact is who holds the role now, so the day the
#: successor starts wins over the day the predecessor leaves ("my last day is August 28").
_SUCCEEDS = re.compile(
    r"\b(?:joins|is joining|will join|takes over|will take over|steps in|comes on board|starts as)\b"
    r"(?:\s+[\w&.'-]+){0,6}?\s*(?:on|from|in)?\s*$",
    re.IGNORECASE,
)


def _clause_before(text: str, mention: DateMention) -> str:
    start = max(text.rfind(c, 0, mention.start) for c in ".;!?\n") + 1
    return text[max(start, mention.start - 80) : mention.start]


#: A day that comes back: "every Monday", "on Thursdays", "each morning", "weekly on Friday". (Not
#: "monthly" or "each quarter" alone: a plan or a billing term, no day.)
_CADENCE = re.compile(
    rf"\b(?:every|each)\s+(?:other\s+|second\s+)?(?:{_WEEKDAY}|day|morning|evening|night|weekday|"
    rf"business day)\b|\b{_WEEKDAY[:-1]})s\b|"
    rf"\b(?:daily|nightly|weekly|bi-?weekly|fortnightly)\s+(?:on\s+)?{_WEEKDAY}",
    re.IGNORECASE,
)


def cadence(text: str) -> re.Match[str] | None:
    """The first day that comes back ``text`` names ("times out every Monday", "on Thursdays",
    "weekly on Friday"), if any: such a day is no date a fact takes effect on."""
    return _CADENCE.search(text)


def recurring(text: str) -> bool:
    """Whether ``text`` names a day that comes back (see :func:`cadence`)."""
    return cadence(text) is not None


# -- which matches are dates -----------------------------------------------------------------------


def _is_date(name: str, match: re.Match[str], text: str, start: int, end: int) -> bool:
    before, after = text[max(0, start - 20) : start], text[end : end + 30]
    if name in {"weekday", "month", "named_day", "next_last", "quarter"}:
        if _NOT_A_DATE_BEFORE.search(before) and not (
            match.groupdict().get("rel") or match.groupdict().get("cue")
        ):
            return False
        if name != "named_day" and _NOT_A_DATE_AFTER.search(after):
            return False
        if _RECURRING_AFTER.search(after):
            return False
        if name in {"weekday", "next_last"} and _CADENCE_BEFORE.search(before):
            return False
    if name == "month":
        month = match.group("month")
        if month.lower() in {"may", "march"} and month.islower():
            return False  # the verbs
        # A month alone is a date only with a preposition or a part ("in March", "mid-May").
        return bool(match.group("cue") or match.group("part"))
    if name == "weekday" and match.group("weekday")[0].islower() and not match.group("rel"):
        return False
    if name == "weekday" and re.match(rf",?\s*(?:the\s+)?(?:\d|{_MONTH}\b|{_DAY_WORD}\s+of\b)", after, re.I):
        return False  # "Wednesday, May 13": the date that follows says it
    if name == "quarter":
        cue = re.search(
            r"\b(?:in|by|to|from|until|for|during|before|after|of|until|starting|beginning|effective)\s+"
            r"(?:(?:with|in|from)\s+)?(?:the\s+)?$",
            before,
            re.I,
        )
        return bool(match.group("year") or match.group("part") or cue)
    # lowercase "may" / "march" before a number are the verbs ("may 2 users")
    return not (name == "month_day" and match.group("month") in {"may", "march"})


def _is_today(match: re.Match[str]) -> bool:
    return match.group("named").lower() in {"today", "this morning", "this afternoon", "tonight"}


_IMMEDIATE = re.compile(r"with immediate effect|effective immediately|immediately effective", re.IGNORECASE)


def _in_relative_clause(text: str, start: int) -> bool:
    """Whether the date sits in a relative clause ("... that we asked for in June")."""
    edges = list(_CLAUSE_EDGE.finditer(text[:start]))
    clause = text[edges[-1].end() if edges else 0 : start]
    return bool(re.search(r"\b(?:that|which|who)\s+(?:we|they|he|she|you|I|it|you)\b", clause))


#: Before a date, in its sentence: a non-restrictive relative clause (", which starts on"), which
#: describes the noun before it.
_NON_RESTRICTIVE = re.compile(r",\s+(?:which|who)\s+[^.;:!?,\n]*$", re.IGNORECASE)


#: A verb of deciding or approving followed by the action decided, as a gerund or an infinitive
#: ("approved adding", "agreed to extend", "decided on moving"): the action lies after the decision.
_DECIDED_ACTION = re.compile(
    r"\b(?:approved|agreed|decided|chose|opted|signed off|committed|green-?lit)\s+(?:on\s+|to\s+)?"
    r"(?:\w+ing|(?<=to )\w+)\b",
    re.IGNORECASE,
)


_MOVED_ELSEWHERE = re.compile(
    # (also a release pushed to devices, to production: delivered, not postponed)
    rf"\b(?:mov(?:ed|es)|push(?:ed|es))\s+to\s+(?!(?:the\s+)?(?:\d|next\b|following\b|{_MONTH_FULL[3:-1]}|"
    rf"{_WEEKDAY[3:-1]}|(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b|q[1-4]\b|mid|late|early|end\b|$))",
    re.IGNORECASE,
)


def _relocation(match: re.Match[str]) -> str:
    """A move to somewhere, in its own tense: "moved to" is past, "moves to" says no tense."""
    return "relocated into " if match.group(0).lower().startswith(("moved", "pushed")) else "relocates into "


#: Right before a date: what was arranged for it ("confirmed for", "set for", "locked in for").
_ARRANGED_FOR = re.compile(
    r"\b(?:confirmed|set|fixed|agreed|locked(?: in)?|arranged|lined up|slotted(?: in)?|penciled(?: in)?|"
    r"pencilled(?: in)?|reserved)\s+for\s+(?:the\s+)?$",
    re.IGNORECASE,
)


def _tense(text: str, start: int, end: int) -> Tense:
    """Future or past, from the words of the date's own clause (None when it says neither)."""
    left = text[:start]
    edges = list(_CLAUSE_EDGE.finditer(left))
    clause_start = edges[-1].end() if edges else 0
    right = _CLAUSE_EDGE.search(text, end)
    clause_end = right.start() if right else len(text)
    # "moved to <a place, a vendor, a team>", "pushed to our devices" is a move made; only a move
    # to a date looks ahead
    clause = " ".join(
        _MOVED_ELSEWHERE.sub(_relocation, part) for part in (text[clause_start:start], text[end:clause_end])
    )
    here = text[start:end].lower()
    if re.search(r"\b(?:next|coming|tomorrow)\b", here):
        return "future"
    if re.search(r"\b(?:by|until|till|from|before)\s+(?:the\s+)?$", text[max(0, start - 12) : start], re.I):
        return "future"  # "by March 3": a deadline ahead (only right before the date, not anywhere)
    if re.search(r"\b(?:last|past|yesterday|ago)\b", here):
        return "past"
    if re.search(r"\b(?:is|are)\s+(?:now\s+|still\s+)?$", text[max(0, start - 20) : start], re.I):
        return None  # "the go-live is July 13": a date the plan has now, the nearest such day
    if re.search(r"\bnow\s+[a-z]{3,}s\s+(?:(?:for|on|as)\s+)?$", text[max(0, start - 30) : start], re.I):
        return None  # "refreshed, the board now shows Aug 12": what it says now, the nearest such day
    if _ARRANGED_FOR.search(text[max(0, start - 40) : start]):
        return "future"  # "renewal confirmed for January 1": an arrangement names a day ahead
    if _DECIDED_ACTION.search(text[clause_start:start]):
        return "future"  # "approved adding the module in Q1": the action decided lies ahead
    # the verb before the date is the one it dates, when what follows a comma after it is another
    # clause ("fixed, shipped in 3.18 on Tuesday, Kayla confirmed every push since")
    before, after = text[clause_start:start], text[end:clause_end]
    own_after = after.split(",", 1)[0]
    if (
        "," in after
        and _PAST.search(_PRESENT_STATE.sub(" ", before))
        and not any(f.search(part) for f in (_FUTURE, _FUTURE_ED) for part in (before, own_after))
    ):
        return "past"
    if _FUTURE.search(clause) or _FUTURE_ED.search(clause):
        return "future"
    if _PAST.search(_PRESENT_STATE.sub(" ", clause)):
        return "past"
    return None


# -- resolution ----------------------------------------------------------------------------------


def _month_number(word: str) -> int:
    low = word.lower().rstrip(".")[:3]
    return next(i for i, m in enumerate(MONTHS, start=1) if m.startswith(low))


def _count(word: str) -> int:
    low = word.lower()
    return int(low) if low.isdigit() else _NUMBER_WORDS.get(low, 1)


def _last_day(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _in_part(year: int, month: int, part: str | None) -> date:
    part = (part or "").lower().strip()
    if part.startswith("mid"):
        return date(year, month, 15)
    if part in {"late", "end of", "the end of"}:
        return _last_day(year, month)
    return date(year, month, 1)


def _pick_year(make: callable, today: date, tense: Tense) -> date | None:  # type: ignore[valid-type]
    """The same month/day in this year or a neighbouring one, as the tense says (else the nearer)."""
    candidates = []
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            candidates.append(make(year))
        except ValueError:
            continue
    if not candidates:
        return None
    if tense == "future":
        later = [d for d in candidates if d >= today]
        return min(later) if later else None
    if tense == "past":
        earlier = [d for d in candidates if d <= today]
        return max(earlier) if earlier else None
    return min(candidates, key=lambda d: (abs((d - today).days), d < today))


def _valid_day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    year = day.year + month // 12
    month = month % 12 + 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _resolve(name: str, m: re.Match[str], today: date, tense: Tense) -> date | None:
    g = m.groupdict()
    try:
        if name == "iso":
            return date(int(g["y"]), int(g["m"]), int(g["d"]))
        if name == "slash":
            year = int(g["y"]) + (2000 if len(g["y"]) == 2 else 0)
            return _numeric_day(
                int(g["a"]), int(g["b"]), m.string, today, lambda month, day: _valid_day(year, month, day)
            )
        if name == "dotted":
            day, month = int(g["d"]), int(g["m"])
            if g.get("y"):
                return date(int(g["y"]) + (2000 if len(g["y"]) == 2 else 0), month, day)
            return _pick_year(lambda y: date(y, month, day), today, tense)
        if name == "cued_numeric":
            return _numeric_day(
                int(g["a"]),
                int(g["b"]),
                m.string,
                today,
                lambda month, day: _pick_year(lambda y: date(y, month, day), today, tense),
            )
        if name in {"month_day", "day_month", "day_word_month"}:
            month = _month_number(g["month"])
            day = _ORDINAL_WORDS[g["dayword"].lower()] if g.get("dayword") else int(g["day"])
            if g.get("year"):
                return date(int(g["year"]), month, day)
            lead = m.string[max(0, m.start() - 14) : m.start()]
            named = re.search(rf"\b({_WEEKDAY})\s*,?\s*(?:the\s+)?$", lead, re.I)
            if named is not None:
                # "Friday, March 27": the year in which that day is that weekday, if a near one is
                wanted = WEEKDAYS.index(named.group(1).lower())
                fits = [
                    d
                    for y in (today.year, today.year + 1, today.year - 1)
                    if (d := _valid_day(y, month, day)) is not None and d.weekday() == wanted
                ]
                if len(fits) == 1:
                    return fits[0]
            return _pick_year(lambda y: date(y, month, day), today, tense)
        if name == "weekday_numeric":
            wanted = next(i for i, w in enumerate(WEEKDAYS) if w.startswith(g["wd"].lower()[:3]))
            a, b = int(g["a"]), int(g["b"])
            fits = sorted(
                {d for y in (today.year, today.year + 1, today.year - 1) for month, day in ((a, b), (b, a))
                 if (d := _valid_day(y, month, day)) is not None and d.weekday() == wanted},
                key=lambda d: abs((d - today).days),
            )  # fmt: skip
            return fits[0] if fits and abs((fits[0] - today).days) <= 183 else None
        if name == "month_year":
            return _in_part(int(g["year"]), _month_number(g["month"]), g.get("part"))
        if name == "month":
            month = _month_number(g["month"])
            cue = (g.get("cue") or "").lower()
            if cue in {"last", "since"}:
                tense = "past"
            elif cue in {"next", "until", "by"}:
                tense = "future"
            return _pick_year(lambda y: _in_part(y, month, g.get("part")), today, tense)
        if name == "quarter":
            q = int(g["q"][1])
            part = (g.get("part") or "").lower()

            def quarter(y: int) -> date:
                if part in {"late", "end of", "the end of"}:
                    return _last_day(y, q * 3)
                return date(y, q * 3 - 2, 1)

            if g.get("year"):
                return quarter(int(g["year"]))
            return _pick_year(quarter, today, tense or "future")
        if name == "next_last":
            rel, unit = g["rel"].lower(), g["unit"].lower()
            forward = rel in {"next", "coming", "this coming"}
            if unit == "month":
                first = today.replace(day=1)
                return _add_months(first, 1 if forward else -1)
            return _weekday(today, WEEKDAYS.index(unit), "future" if forward else "past")
        if name == "weekday":
            rel = (g.get("rel") or "").lower()
            wanted = WEEKDAYS.index(g["weekday"].lower())
            if rel in {"next", "by", "until", "till", "before", "from", "starting"}:
                return _weekday(today, wanted, "future")
            if rel in {"last", "since"}:
                return _weekday(today, wanted, "past")
            if rel == "this":  # the one of this week (Monday to Sunday)
                return today + timedelta(days=wanted - today.weekday())
            return _weekday(today, wanted, tense or "past")
        if name == "named_day":
            offsets = {
                "the day before yesterday": -2,
                "yesterday": -1,
                "last night": -1,
                "tomorrow": 1,
                "the day after tomorrow": 2,
            }
            offset = offsets.get(g["named"].lower(), 0)
            return today + timedelta(days=offset)
        if name in {"ago", "in_n", "from_now"}:
            n, unit = _count(g["n"]), g["unit"].lower().rstrip("s")
            sign = -1 if name == "ago" else 1
            if unit == "month":
                return _add_months(today, sign * n)
            return today + timedelta(days=sign * n * (7 if unit == "week" else 1))
        if name == "end_of_rel":
            step = -1 if g["rel"].lower() in {"last", "previous"} else 1
            unit = g["unit"].lower()
            if unit == "month":
                month = _add_months(today.replace(day=1), step)
                return _last_day(month.year, month.month)
            if unit == "quarter":
                first = _add_months(date(today.year, (today.month - 1) // 3 * 3 + 1, 1), 3 * step)
                return _last_day(first.year, first.month + 2)
            return date(today.year + step, 12, 31)
        if name == "end_of":
            unit = g["unit"].lower()
            if unit == "month":
                return _last_day(today.year, today.month)
            if unit == "quarter":
                return _last_day(today.year, ((today.month - 1) // 3 + 1) * 3)
            return date(today.year, 12, 31)
    except (ValueError, OverflowError, StopIteration):  # past the calendar's edges: no date
        return None
    return None


#: A numeric date whose first number cannot be a month ("27/03/2026", "13/3"): the writer puts the
#: day first.
_DAY_FIRST = re.compile(r"(?<![\w/.$€£])(?:1[3-9]|2\d|3[01])/(?:0?[1-9]|1[0-2])(?![\w.]*%)\b")
#: A numeric date whose second number cannot be a month ("10/14", "6/30/2026"): month first.
_MONTH_FIRST = re.compile(r"(?<![\w/.$€£])(?:0?[1-9]|1[0-2])/(?:1[3-9]|2\d|3[01])(?![\w.]*%)\b")


def _numeric_day(
    a: int, b: int, text: str, today: date, make: Callable[[int, int], date | None]
) -> date | None:
    """The date "a/b" names (``make`` gives the date of a month and a day): month/day or day/month.
    One reading that is no date decides; else the text's own numeric dates do (one whose first
    number exceeds 12 writes the day first, one whose second does writes the month first); else
    the reading nearer the raw log's time."""
    readings = []
    for month, day in ((a, b), (b, a)):
        found = make(month, day) if 1 <= month <= 12 and 1 <= day <= 31 else None
        if found is not None and found not in readings:
            readings.append(found)
    if len(readings) < 2:
        return readings[0] if readings else None
    day_first, month_first = bool(_DAY_FIRST.search(text)), bool(_MONTH_FIRST.search(text))
    if day_first != month_first:
        return readings[1] if day_first else readings[0]
    return min(readings, key=lambda d: abs((d - today).days))


def _weekday(today: date, wanted: int, tense: Tense) -> date:
    if tense == "future":
        ahead = (wanted - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead)
    back = (today.weekday() - wanted) % 7 or 7
    return today - timedelta(days=back)
