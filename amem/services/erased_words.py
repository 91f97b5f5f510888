"""The words that identify an erased text, and whether a later value quotes one.

A later model call that saw an erased note as a neighbour can write what it read into another
note's values in its own words, without naming the erased note: "Mrs Quibblestone wants Okta" as a
kept note's new context. Such a value can only have come from the erased input when it holds a word
that identifies it (a name, an address, a long number) and that no kept raw log of the same account
holds. Those words are the erasure's ``marks``; a value, a stored answer, a proposal's reason or
evidence, or a reviewer's comment made after the erased input that holds one is erased too.

Which words identify: a capitalised word inside a sentence (a name, a product, a place; a word
that starts a sentence is capitalised for that reason alone; titles, months and days identify no
one), a word with five digits or more (a phone number, an account or order number), an e-mail
address. Then every word a kept raw log of the same scopes holds, in any case or form, is dropped:
a value holding only such words may have come from those inputs. Among the values, what a link
step wrote (the one task that shows a model other notes) and what a person or an agent wrote by
hand are looked at; a note's construction reads its own raw log alone, so any word of it in a mark
is the model's own (a category, say).
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
    """The marks ``text`` holds: the word itself, or one of its forms ("review" and "reviewed": one
    a prefix of the other, the shorter of four letters or more, at most three letters apart)."""
    found = marks & (held := words(text))
    for mark in marks - found:
        for word in held:
            short, long_ = sorted((mark, word), key=len)
            if len(short) >= 4 and len(long_) - len(short) <= 3 and long_.startswith(short):
                found.add(mark)
                break
    return found


def words(text: str) -> set[str]:
    """Every word of ``text``, lower case, a possessive's 's taken off; and each part of a word
    joined by a hyphen or an apostrophe: a name quoted inside a compound ("the Quibblestone-led
    push", "Quibblestone's-side") is that name. An address is one word: its parts are not names."""
    out: set[str] = set()
    for m in _WORD.finditer(text):
        word = m.group()
        out.add(_norm(word))
        if "@" not in word:
            out |= {_norm(part) for part in _JOINERS.split(word) if part}
    return out


def identifying(text: str) -> set[str]:
    """The words of ``text`` that may identify its subject (see the module's docstring)."""
    out: set[str] = set()
    for m in _WORD.finditer(text):
        word, norm = m.group(), _norm(m.group())
        address_or_number = "@" in word or sum(c.isdigit() for c in word) >= 5
        name = word[0].isupper() and len(norm) >= 3 and norm not in _COMMON
        if address_or_number or (name and not _starts_sentence(text, m.start())):
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
