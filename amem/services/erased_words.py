"""The words that identify an erased text, and whether a later value quotes one.

A later model call that saw an erased note as a neighbour can write what it read into another
note's values in its own words, without naming the erased note: "Mrs Quibblestone wants Okta" as a
kept note's new context. Such a value can only have come from the erased input when it holds a word
that identifies it (a name, an address, a long number) and that no kept raw log of the same account
holds. Those words are the erasure's ``marks``; a value, a stored answer, a proposal's reason or
evidence, or a reviewer's comment made after the erased input that holds one is erased too.

Which words identify: a capitalised word inside a sentence (a name, a product, a place; a word
that starts a sentence is capitalised for that reason alone; titles, months and days identify no
one), a word with five digits or more (an account or order number), an e-mail address; and a
number of five digits or more however its groups are written (``numbers``: "+1 415 555 0199",
"(415) 555-0199" and "4155550199" are one phone number), compared by its digits. Years and a
year's quarters ("2026-2027", "Q2-2027") identify no one, and short numbers are never joined into
one ("Q2 2027", "40 seats in 2027"); a whole date is a number (it may be a date of birth). Then
every word a kept raw log of the same scopes holds, in any case or form (a number with or without
its country code), is dropped: a value holding only such words may have come from those inputs.
Among the values, what a link step wrote (the one task that shows a model other notes) and what a
person or an agent wrote by hand are looked at; a note's construction reads its own raw log alone,
so any word of it in a mark is the model's own (a category, say).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: A word: letters or digits, with the joiners of names, numbers and addresses inside it.
_WORD = re.compile(r"\w(?:[\w@.+'’\-]*\w)?")
#: What joins the parts of a compound word: each part is a word too (``words``).
_JOINERS = re.compile(r"[-'’]")
#: What ends a sentence or a clause a capital may begin, or opens a quotation or a bracket.
_OPENS = frozenset('.!?:;"“([')
#: A list's bullet before the word.
_BULLET = re.compile(r"(?:^|\s)[-–—•*]$")
#: How far back to look for what opens a sentence.
_BACK = 40
#: A title's full stop ends no sentence: "Mrs. Quibblestone".
_TITLE = re.compile(r"\b(?:Mr|Mrs|Ms|Mx|Dr|Prof|Sr|Jr|St)\.\s*$")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)
#: A number as written: digit groups joined by one space, dot, hyphen or slash, a group in brackets
#: (an area code), a leading + (a country code); never a group inside a word ("Q2", "3pm").
_GROUP = r"(?:\(\d+\)|\d+(?!\w))"
_NUMBER = re.compile(rf"(?<![\w+])(?:\+[ \u00a0]?)?{_GROUP}(?:[ \u00a0./\-\u2013]?{_GROUP})*")
_DIGITS = re.compile(r"\d+")
#: The fewest digits of a number that identifies; of one spelt over several words (a phone
#: number written with spaces, not two numbers side by side: "2027 40"), with no + or brackets.
_LONG, _LONG_SPACED = 5, 7
#: Capitalised words that identify no one: titles, months, days.
_COMMON = frozenset(
    {
        *("mr", "mrs", "ms", "mx", "dr", "prof", "sr", "jr", "st"),
        *("january", "february", "march", "april", "may", "june", "july", "august", "september"),
        *("october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep"),
        *("sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday"),
        *("saturday", "sunday", "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"),
    }
)


def _norm(word: str) -> str:
    return _POSSESSIVE.sub("", word).lower()


def held_by(marks: set[str], text: str) -> set[str]:
    """The marks ``text`` holds: the word itself, or one of its forms ("review" and "reviewed"; a
    number with and without its country code: ``_forms``)."""
    found = marks & (held := words(text))
    for mark in marks - found:
        if any(_forms(mark, word) for word in held):
            found.add(mark)
    return found


def _forms(mark: str, word: str) -> bool:
    """Whether ``mark`` and ``word`` are forms of one word: one a prefix of the other, the shorter
    of four letters or more, at most three letters apart; of two numbers (their digits), one with
    and one without a country code of up to three digits ("14155550199", "4155550199"). Two
    numbers are never forms of one another otherwise: 12345 is not 123456."""
    short, long_ = sorted((mark, word), key=len)
    if len(long_) - len(short) > 3:
        return False
    if short.isdigit() and long_.isdigit():
        return len(short) >= _LONG_SPACED and long_.endswith(short)
    return len(short) >= 4 and any(c.isalpha() for c in short) and long_.startswith(short)


def words(text: str) -> set[str]:
    """Every word of ``text``, lower case, a possessive's 's taken off; and each part of a word
    joined by a hyphen or an apostrophe: a name quoted inside a compound ("the Quibblestone-led
    push", "Quibblestone's-side") is that name. An address is one word: its parts are not names.
    And each long number as its digits (``numbers``), however its groups are written."""
    out: set[str] = numbers(text)
    for m in _WORD.finditer(text):
        word = m.group()
        out.add(_norm(word))
        if "@" not in word:
            out |= {_norm(part) for part in _JOINERS.split(word) if part}
    return out


def numbers(text: str) -> set[str]:
    """Each number of ``text`` with five digits or more, as its digits, leading zeros dropped (a
    trunk prefix: "020 7946 0958"), and, after a + and its country code, also without it: the
    forms a value copying it can take ("+1 415 555 0199", "415-555-0199", "(415) 555 0199").
    Years and a year's quarters are no numbers (``_period``); groups joined by spaces make one only
    as a phone number is written (``_one_number``)."""
    out: set[str] = set()
    for m in _NUMBER.finditer(text):
        run = m.group()
        groups = _DIGITS.findall(run)
        if not _one_number(run, groups):
            continue
        out.add("".join(groups).lstrip("0"))
        if run.startswith("+") and len(groups) > 1:
            out.add("".join(groups[1:]).lstrip("0"))
    return {n for n in out if len(n) >= _LONG}


def _one_number(run: str, groups: list[str]) -> bool:
    """Whether digit groups as written are one number of five digits or more, not years and not
    short numbers side by side: over spaces with no + or brackets, seven digits or more, in groups
    of two or more after the first, the first no year ("555 0199", not "2027 400 seats")."""
    if sum(len(g) for g in groups) < _LONG or _period(groups):
        return False
    if not any(c.isspace() for c in run) or run.startswith("+") or "(" in run:
        return True
    return (
        sum(len(g) for g in groups) >= _LONG_SPACED
        and all(len(g) >= 2 for g in groups[1:])
        and not _year(groups[0])
    )


def _year(group: str) -> bool:
    return len(group) == 4 and 1900 <= int(group) <= 2099


def _period(groups: list[str]) -> bool:
    """Whether digit groups name years ("2026-2027", "2026/27") or a year's quarter, month or week
    ("Q2-2027", "2027-03", "W52-2027"): what an account's notes all say, and no one's identity. A
    whole date stays a number: it may be a date of birth."""
    if not groups:
        return False
    years = [_year(g) for g in groups]
    if all(years):
        return True
    return len(groups) == 2 and any(
        years[i] and len(groups[1 - i]) <= 2 and 1 <= int(groups[1 - i]) <= 53 for i in (0, 1)
    )


def marks_of(text: str) -> set[str]:
    """What of ``text`` may identify its subject: its identifying words and its long numbers."""
    return identifying(text) | numbers(text)


def identifying(text: str) -> set[str]:
    """The words of ``text`` that may identify its subject (see the module's docstring); its
    numbers written over several words are ``numbers``."""
    out: set[str] = set()
    for m in _WORD.finditer(text):
        word, norm = m.group(), _norm(m.group())
        if "@" in word:
            out.add(norm)
            continue
        groups = _DIGITS.findall(word)
        if _period(groups) and sum(c.isalpha() for c in word) <= 2:
            continue  # years or a quarter ("Q2-2027", "FY2026"), capitalised or not: no name
        number = sum(len(g) for g in groups) >= _LONG
        name = word[0].isupper() and len(norm) >= 3 and norm not in _COMMON
        if number or (name and not _starts_sentence(text, m.start())):
            out.add(norm)
    return out


def _starts_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence, a line, a quotation or a list item."""
    before = text[max(0, start - _BACK) : start]
    if _TITLE.search(before):
        return False
    kept = before.rstrip()
    if not kept or "\n" in before[len(kept) :]:
        return True
    return kept[-1] in _OPENS or bool(_BULLET.search(kept))


def strings(value: Any) -> Iterable[str]:
    """Every string inside a stored value or a parsed answer (lists, objects, link reasons)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)


def quotes(value: Any, marks: set[str]) -> bool:
    """Whether any string in ``value`` holds one of ``marks``."""
    return bool(marks) and any(not marks.isdisjoint(words(s)) for s in strings(value))
