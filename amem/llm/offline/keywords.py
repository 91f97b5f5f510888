"""Keywords (YAKE, statistical), the tags made from them, and the template context.

These values are applied at once (policy: auto), so they are built from the readable text only
(text.readable): no delimiter or instruction of a hostile input reaches them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from amem.llm.offline.text import CALENDAR, FILLER, STOP, clip, slug, stem, words

MAX_KEYWORDS = 6
MAX_TAGS = 4
#: The longest keyword an answer may carry (``construct_note.Term``): a longer "phrase" is a text
#: YAKE could not cut into words (Chinese or Japanese, written without spaces), not a term.
MAX_KEYWORD_CHARS = 80

#: A capitalised word followed by one of these is a name and a verb ("Globex reported"), not a term.
_VERBISH = words("ran went came got made said says told wants needs thinks called sent")
#: A line that only greets, thanks or signs off ("Hi Tomasz, hi Ines,"): never a note's key point.
_COURTESY = re.compile(
    r"^\W*(?:hi|hello|hey|dear|thanks|thank you|thx|cheers|best|regards|kind regards|many thanks)\b"
    r"[^.!?\n]{0,40}[,.!]?\s*$",
    re.IGNORECASE,
)
#: An email's subject line can be the key point, without "Subject:" and its reply or forward marks,
#: and a chat export's line without its message stamp ("[24/03/26, 12:00] Anjali: ...").
_SUBJECT = re.compile(
    r"^\W*(?:subject\s*:\s*)?(?:(?:re|aw|fwd?)\s*:\s*)*"
    r"(?:[\d/.-]{6,10},?\s+\d{1,2}:\d{2}(?::\d{2})?\s*(?:[ap]m)?\]\s*)?",
    re.IGNORECASE,
)


class Keywords:
    """YAKE's best phrases, without filler, dates, name+verb pairs, or words already covered.
    Build once: the extractor is reused for every note."""

    def __init__(self) -> None:
        import yake

        self._yake = yake.KeywordExtractor(lan="en", n=2, dedup_lim=0.7, top=14)

    def __call__(self, text: str) -> list[str]:
        out: list[str] = []
        covered: set[str] = set()
        if not text.strip():
            return out
        for phrase, _score in self._yake.extract_keywords(text):
            words = [w for w in phrase.split() if w.lower() not in FILLER and w.lower() not in CALENDAR]
            if len(words) == 2 and (words[1].lower() in _VERBISH or words[1].endswith("ed")):
                words = words[:1]
            if not words or all(w.lower() in STOP or re.fullmatch(r"[\d:/.,-]+", w) for w in words):
                continue  # (a time or a date's figures, "14:30", names no subject either)
            if len(words) == 1 and len(words[0]) < 3 and not words[0].isupper():
                continue
            if len(" ".join(words)) > MAX_KEYWORD_CHARS:
                continue
            stems = {stem(w) for w in words}
            if stems <= covered:
                continue
            covered |= stems
            out.append(surface(" ".join(words), text))
            if len(out) == MAX_KEYWORDS:
                break
        return out


def surface(phrase: str, text: str) -> str:
    """The phrase as written, lowercased only where the text also writes it in lowercase."""
    low = phrase.lower()
    if phrase != low and not phrase.isupper() and re.search(rf"\b{re.escape(low)}\b", text):
        return low
    return phrase


def tags(category: str | None, keywords: Sequence[str]) -> list[str]:
    """The category, then the top keywords, as lowercase slugs."""
    out: list[str] = []
    for candidate in ([category] if category else []) + list(keywords):
        tag = slug(candidate)
        if tag and tag not in out and len(tag) <= 40:
            out.append(tag)
        if len(out) == MAX_TAGS:
            break
    return out


def context(category: str | None, keywords: Sequence[str], sentences: Sequence[str]) -> str:
    """A template sentence from the category and the top keywords, plus the key sentence if several."""
    label = (category or "general").capitalize()
    if not keywords:
        return clip(f"{label} note: {sentences[0]}" if sentences else f"{label} note.", 590)
    top = list(keywords[:3])
    about = top[0] if len(top) == 1 else ", ".join(top[:-1]) + " and " + top[-1]
    out = f"{label} note about {about}."
    if len(sentences) > 1:
        out += f" Key point: {clip(key_sentence(sentences, keywords), 200)}"
    return clip(out, 590)


def key_sentence(sentences: Sequence[str], keywords: Sequence[str]) -> str:
    """The sentence that holds the most (and the best-ranked) keywords: never a greeting or a
    sign-off when anything else is there, and a subject line without its "Subject: RE:" (what a
    reviewer reads in the context, so it should say something)."""

    def weight(sentence: str) -> int:
        low = sentence.lower()
        return sum(len(keywords) - i for i, kw in enumerate(keywords) if kw.lower() in low)

    best = max([s for s in sentences if not _COURTESY.match(s)] or sentences, key=weight)
    return best[_SUBJECT.match(best).end() :].strip() or best  # type: ignore[union-attr]
