"""The offline analyst: the same two tasks with local rules and statistics, no model, no network.

It is the default when no model is configured, so amem works on a fresh machine. Keywords come
from YAKE (statistical, no download), dates from dateparser behind a strict temporal pattern,
category, rationale, next steps and priorities from small lexical rules for sales and customer
success, and links from shared keywords with the neighbours' similarity rank. Its answers go
through the same validation as a model's and are recorded as LlmCall rows (model "offline").
It is deterministic: the same raw log and neighbours give the same answer.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel

from amem.domain.models import LlmCall, Note, RawLog, Usage, as_utc, new_id, utcnow
from amem.llm import construct_note, link_evolve
from amem.llm.base import AnalystError, TaskResult
from amem.llm.construct_note import ConstructedNote, offered_attributes
from amem.llm.json_answer import InvalidAnswer, prompt_sha256, validate
from amem.llm.link_evolve import LinkEvolveAnswer
from amem.policy import AttributePolicy

A = TypeVar("A", bound=BaseModel)

MODEL = "offline"
PROMPT_VERSION = "offline/1"

MAX_KEYWORDS = 6
MAX_TAGS = 4

# -- words ---------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _words(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves also really still yet get got
    gonna lot lots thing things way well"""
)
#: Words YAKE likes in chat that say nothing about the subject.
_FILLER = _words(
    """hey hi hello thanks thank yeah yes wow good great okay ok lol oh hmm awesome nice cool sure
    glad sorry cheers bye amazing totally update agreed decided mentioned said says told reported
    asked"""
)
#: Words that are dates rather than subjects: the date goes to valid_at, not to the keywords.
_CALENDAR = _words(
    """monday tuesday wednesday thursday friday saturday sunday weekend today yesterday tomorrow
    january february march april may june july august september october november december week
    month year"""
)
#: A capitalised word followed by one of these is a name and a verb ("Globex reported"), not a term.
_VERBISH = _words("ran went came got made said says told wants needs thinks called sent")

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'&+-]*")


def _stem(word: str) -> str:
    """A light, rule-based stem so 'seats'/'seat' and 'renewal'/'renewals' meet."""
    w = word.lower().strip("'-")
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("'s", ""), ("s", "")):
        if len(w) > 4 and w.endswith(suffix) and not w.endswith("ss"):
            return w[: -len(suffix)] + keep
    return w


def _terms(phrases: Sequence[str]) -> set[str]:
    out = set()
    for phrase in phrases:
        for word in _WORD.findall(phrase.replace("-", " ")):
            low = word.lower()
            if len(low) > 1 and low not in _STOP and low not in _FILLER:
                out.add(_stem(low))
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip(" ,;:") + "…"


# -- category ------------------------------------------------------------------------------------

#: Label -> cue pattern, in priority order (a tie goes to the earlier label).
_CATEGORY_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (label, re.compile(pattern, re.IGNORECASE))
    for label, pattern in (
        (
            "support issue",
            r"\b(bugs?|errors?|outages?|tickets?|incidents?|broken|crash(?:es|ed)?|fail(?:s|ed|ing|ure)?|"
            r"not working|down ?time|escalat\w*|latency|slow(?:ness)?|workaround|regression)\b",
        ),
        ("renewal", r"\b(renew\w*|churn\w*|expir\w*|extension|extend(?:ed|ing)?|auto-renew)\b"),
        (
            "contract",
            r"\b(contracts?|agreements?|msa|sla|dpa|terms|signatures?|signed|sign(?:ing)?|legal|"
            r"clauses?|procurement|redlines?)\b",
        ),
        (
            "pricing",
            r"(\$|€|£|\b(price[ds]?|pricing|discounts?|quotes?|quoted|cost[s]?|budget|invoices?|"
            r"per seat|/seat|fees?|billing|payments?|tiers?|list price)\b)",
        ),
        (
            "onboarding",
            r"\b(onboard\w*|kick-?off|training|rollout|roll out|go-live|set ?up|implementation)\b",
        ),
        ("feature request", r"\b(feature requests?|roadmap|would like (?:to see|a)|wish(?:es)?|asked for)\b"),
        (
            "meeting",
            r"\b(meetings?|calls?|demo(?:s|ed)?|sync|agenda|workshop|onsite|qbr|check-in|met with|"
            r"spoke with|talked to)\b",
        ),
        ("decision", r"\b(decided|decision|chose|opted|agreed|going with|went with)\b"),
        (
            "personal",
            r"\b(family|kids?|children|son|daughter|wife|husband|partner|mom|dad|mother|father|"
            r"vacation|holiday|birthday|wedding|hobby|hobbies|weekend|friends?|pets?|dog|cat|"
            r"painting|music|hiking|camping|school|love[ds]?|feel(?:ing|s)?)\b",
        ),
    )
)


def _category(text: str) -> str | None:
    best, best_score = None, 0
    for label, pattern in _CATEGORY_CUES:
        score = sum(1 for _ in pattern.finditer(text))
        if score > best_score:
            best, best_score = label, score
    return best


# -- decision and rationale ----------------------------------------------------------------------

_REASON = re.compile(
    r"\b(because|so that|in order to|due to|the reason (?:is|was|being)|given that|as a result of|"
    r"since (?=(?:we|they|he|she|it|i|you|there|nobody|no one)\b))",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided|decide|decision|chose|choose|chosen|opted|opt for|agreed|agree to|going with|"
    r"go with|went with|switch(?:ed|ing)? to|moving to|moved to|picked|selected|approved|signed|"
    r"cancel(?:l?ed|ling)?|postpone[ds]?|delay(?:ed)?|paused?|dropp(?:ed|ing)|drop|waive[ds]?|"
    r"extend(?:ed)?|upgraded to|downgraded to|accepted|rejected|declined|won't|will not|"
    r"no longer|stick with|keep(?:ing)?)\b",
    re.IGNORECASE,
)


def _decision_rationale(sentences: Sequence[str]) -> str | None:
    """The sentence giving the reason for a decision, when the text states both."""
    for i, sentence in enumerate(sentences):
        if not _REASON.search(sentence):
            continue
        if _DECISION.search(sentence):
            return _clip(sentence, 400)
        if i > 0 and _DECISION.search(sentences[i - 1]):
            return _clip(f"{sentences[i - 1]} {sentence}", 400)
    return None


# -- dates ---------------------------------------------------------------------------------------

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_MONTH_FULL = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_COUNT = r"(?:\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|few|several)"
_UNIT = r"(?:days?|weeks?|months?|years?)"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"

#: Only these count as dates: each is unmistakably temporal ("may", "now", "today" alone are not).
_TEMPORAL = re.compile(
    "|".join(
        [
            r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
            r"\b\d{1,2}/\d{1,2}/\d{2,4}\b",
            rf"\b{_MONTH}\s+{_DAY}(?:,?\s+\d{{4}})?\b",
            rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?\b",
            rf"\b{_MONTH}\s+\d{{4}}\b",
            rf"(?:\b(?:in|since|until|from|by|early|mid|late|end of|beginning of|last|this past)\s+|\bmid-)"
            rf"{_MONTH_FULL}\b",
            rf"\b(?:last|next|this past|this coming|past|coming)\s+(?:{_WEEKDAY}|week(?:end)?|month|year)\b",
            rf"\b(?:this|on|last|next)?\s*{_WEEKDAY}\b",
            r"\b(?:the day before yesterday|the day after tomorrow|yesterday|tomorrow)\b",
            rf"\b{_COUNT}\s+{_UNIT}\s+ago\b",
            rf"\bin\s+{_COUNT}\s+{_UNIT}\b",
        ]
    ),
    re.IGNORECASE,
)
_FUTURE_SPAN = re.compile(r"\b(next|tomorrow|coming|in\s+\S+\s+\w+|by|until|day after)\b", re.IGNORECASE)
_FUTURE_BEFORE = re.compile(
    r"(\b(will|going to|by|until|before|due|let's|let us|shall|plan(?:s|ned)? to|schedul\w+)\b|'ll\b)"
    r"[^.]{0,40}$",
    re.IGNORECASE,
)
_STARTS_BEFORE = re.compile(
    r"\b(from|starting|effective|as of|beginning|begins|starts|takes effect)\W*\s*$", re.IGNORECASE
)
_HAS_TIME = re.compile(r"\d{1,2}:\d{2}")
_NUMBER_WORDS = {"a couple of": "2", "a few": "3", "few": "3", "several": "3", "an": "1", "a": "1"}
_DATE_SETTINGS_BASE = {"PREFER_DAY_OF_MONTH": "first", "RETURN_AS_TIMEZONE_AWARE": False}


@dataclass(frozen=True)
class _DateMention:
    start: int
    text: str
    when: datetime
    future: bool
    starts: bool  # "from/starting/effective ..." precedes it

    @property
    def absolute(self) -> bool:
        return bool(re.search(rf"\d{{4}}|\d{{1,2}}/\d{{1,2}}|\b{_MONTH}(?![a-z])", self.text, re.IGNORECASE))


def _normalise_span(span: str) -> str:
    """Rewrite the few forms dateparser does not read ("a few days ago", "early March", "since May")."""
    out = span.strip()
    low = out.lower()
    for words, number in _NUMBER_WORDS.items():
        if low.startswith(words + " ") or low.startswith("in " + words + " "):
            out = re.sub(rf"\b{words}\b", number, out, count=1, flags=re.IGNORECASE)
            break
    out = re.sub(r"(?i)\bthis past\b", "last", out)
    out = re.sub(r"(?i)\blast weekend\b", "last saturday", out)
    out = re.sub(r"(?i)^(?:early|beginning of)\s+", "1 ", out)
    out = re.sub(r"(?i)^mid-?\s*", "15 ", out)
    out = re.sub(r"(?i)^(?:late|end of)\s+", "28 ", out)
    out = re.sub(rf"(?i)^last\s+(?={_MONTH_FULL}\b)", "", out)
    return re.sub(
        rf"(?i)^(?:in|since|until|from|by|on|this coming|this|coming)\s+(?=(?:{_MONTH_FULL}|{_WEEKDAY})\b)",
        "",
        out,
    )


def _date_mentions(text: str, base: datetime) -> list[_DateMention]:
    """Dates the text states, resolved against ``base`` (the raw log's occurred_at, UTC)."""
    import dateparser

    base_naive = as_utc(base).replace(tzinfo=None)
    mentions = []
    for match in _TEMPORAL.finditer(text):
        span = match.group(0).strip()
        if not span:
            continue
        month_word = re.search(r"\b(may|march)\b", span)  # lowercase: the verb, not the month
        if month_word and not re.search(r"\d", span):
            continue
        before = text[max(0, match.start() - 60) : match.start()]
        starts = bool(_STARTS_BEFORE.search(before))
        future = bool(starts or _FUTURE_SPAN.search(span) or _FUTURE_BEFORE.search(before))
        settings = {
            **_DATE_SETTINGS_BASE,
            "RELATIVE_BASE": base_naive,
            "PREFER_DATES_FROM": "future" if future else "past",
        }
        parsed = dateparser.parse(_normalise_span(span), languages=["en"], settings=settings)  # type: ignore[arg-type]
        if parsed is None:
            continue
        if not _HAS_TIME.search(span):
            parsed = parsed.replace(hour=0, minute=0, second=0, microsecond=0)
        when = as_utc(parsed)
        mentions.append(
            _DateMention(
                start=match.start(),
                text=span,
                when=when,
                future=when.date() > as_utc(base).date(),
                starts=starts,
            )
        )
    return mentions


def _valid_at(mentions: Sequence[_DateMention]) -> str | None:
    """When the stated fact became true: a date it 'starts from', else the first past date."""
    for mention in [*(m for m in mentions if m.starts), *(m for m in mentions if not m.future)]:
        return mention.when.isoformat()
    return None


# -- team attributes -----------------------------------------------------------------------------

_NEXT_STEP_CUES = (
    r"next steps?|action items?|follow[- ]?up|to-?do|plan is to|we agreed to|agreed to "
    r"(?:send|meet|schedule|share|review)|(?:will|'ll|is going to|are going to)\s+"
    r"(?:send|share|schedule|set up|book|email|call|prepare|draft|loop in|get back|circle back|"
    r"review|deliver|provide|reach out|follow|arrange|confirm|update|check|ship|sign)"
)
_PRIORITY_CUES = (
    r"top priorit(?:y|ies)|priorit(?:y|ies)|most important|what matters(?: most)?|matters? most|"
    r"cares? (?:most |a lot |deeply )?about|key requirements?|must[- ]haves?|top concerns?|"
    r"biggest concerns?|non-negotiable"
)
_LEAD_IN = re.compile(
    r"^\W*(?:(?:to|for) (?:them|us|him|her|the customer)\W*)?(?:is|are|was|were|include|includes|"
    r"remains?|being)?\s*[:\-–]?\s*",
    re.IGNORECASE,
)
_TRAIL = re.compile(r"\s*\b(?:is|are|was|were)\s+(?:what|the (?:thing|one))?\s*$", re.IGNORECASE)
_ITEM_SPLIT = re.compile(r"\s*(?:,|;|\band\b|&|\bplus\b)\s*", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@lru_cache(maxsize=256)
def _cue_pattern(name: str, description: str) -> re.Pattern[str]:
    """Cues for a declared attribute: its own name, plus a known vocabulary when it is one we know."""
    about = f"{name} {description}".lower()
    cues = [r"\s+".join(map(re.escape, re.split(r"[_\W]+", name.lower()))) + r"s?"]
    if re.search(r"next|action|follow", about):
        cues.append(_NEXT_STEP_CUES)
    if re.search(r"priorit|matters|important|care", about):
        cues.append(_PRIORITY_CUES)
    return re.compile(r"\b(?:" + "|".join(cues) + r")\b", re.IGNORECASE)


def _list_items(sentence: str, match: re.Match[str]) -> list[str]:
    after = _LEAD_IN.sub("", sentence[match.end() :]).strip(" .!?")
    if not after:
        after = _TRAIL.sub("", sentence[: match.start()]).strip(" .!?")
    items = [_clip(item.strip(" .!?\"'"), 120) for item in _ITEM_SPLIT.split(after)]
    return [item for item in items if len(item) > 1][:5]


def _extra_value(attr_type: str, sentence: str, match: re.Match[str], base: datetime) -> Any:
    if attr_type == "text":
        return _clip(sentence, 300)
    if attr_type == "list[str]":
        return _list_items(sentence, match) or None
    if attr_type == "number":
        numbers = _NUMBER.findall(sentence[match.end() :]) or _NUMBER.findall(sentence)
        return float(numbers[0].replace(",", "")) if numbers else None
    if attr_type == "datetime":
        mentions = _date_mentions(sentence, base)
        return mentions[0].when.isoformat() if mentions else None
    return None  # bool: a cue is no evidence of true or false


# -- quantities (for contradictions) -------------------------------------------------------------

_PER = r"(?:\s*/\s*|\s+(?:per|a|an|each)\s+)(?P<unit>[a-z]+)"
_MONEY = re.compile(rf"(?P<cur>[$€£])\s?(?P<num>\d[\d,]*(?:\.\d+)?)\s?(?P<mult>[kKmM])?\b(?:{_PER})?")
_MONEY_WORDS = re.compile(
    rf"\b(?P<num>\d[\d,]*(?:\.\d+)?)\s?(?P<mult>k|m)?\s*(?P<cur>dollars|usd|eur|euros|gbp|pounds)\b(?:{_PER})?",
    re.IGNORECASE,
)
_CURRENCY = {"dollars": "$", "usd": "$", "eur": "€", "euros": "€", "gbp": "£", "pounds": "£"}
_HEADCOUNT = re.compile(
    r"\b(?P<num>\d[\d,]*)\s+(?P<unit>seats?|users?|licen[cs]es?|people|employees|agents|reps|"
    r"engineers|hosts|accounts|locations|sites|workspaces)\b",
    re.IGNORECASE,
)
_PERCENT = re.compile(
    r"\b(?P<num>\d+(?:\.\d+)?)\s?(?:%|percent)\s*(?P<unit>discount|off|uplift|increase)?", re.IGNORECASE
)

#: (kind, unit, currency) -> the values stated; kind is price, count or percent.
Quantities = dict[tuple[str, str, str], frozenset[float]]


#: Cues that a note replaces or reverses an earlier statement.
_REPLACEMENT = re.compile(
    r"\b(no longer|not \w+ anymore|instead of|changed (?:to|from)|switched (?:to|from)|replaced|"
    r"cancel(?:l)?ed|correction|was wrong|reversed|withdr[ae]wn|revoked|backed out|pulled out|"
    r"postponed to|pushed (?:back )?to|moved (?:the \w+ )?to)\b",
    re.IGNORECASE,
)


def _amount(num: str, mult: str | None) -> float:
    value = float(num.replace(",", ""))
    return value * {"k": 1e3, "m": 1e6}.get((mult or "").lower(), 1)


@lru_cache(maxsize=4096)
def _quantities(text: str) -> Quantities:
    """Stated quantities by (kind, unit, currency): prices, headcounts, percentages."""
    found: dict[tuple[str, str, str], set[float]] = {}
    for pattern in (_MONEY, _MONEY_WORDS):
        for m in pattern.finditer(text):
            unit = _stem(m.group("unit") or "")
            if unit in _STOP:
                unit = ""
            cur = _CURRENCY.get(m.group("cur").lower(), m.group("cur"))
            found.setdefault(("price", unit, cur), set()).add(_amount(m.group("num"), m.group("mult")))
    for m in _HEADCOUNT.finditer(text):
        found.setdefault(("count", _stem(m.group("unit")), ""), set()).add(_amount(m.group("num"), None))
    for m in _PERCENT.finditer(text):
        found.setdefault(("percent", (m.group("unit") or "").lower(), ""), set()).add(float(m.group("num")))
    return {key: frozenset(values) for key, values in found.items()}


def _show(key: tuple[str, str, str], values: frozenset[float]) -> str:
    kind, unit, cur = key

    def one(v: float) -> str:
        number = f"{v:,.2f}".rstrip("0").rstrip(".")
        if kind == "price":
            return f"{cur}{number}/{unit}" if unit else f"{cur}{number}"
        if kind == "percent":
            return f"{number}%"
        return f"{number} {unit}"

    return " or ".join(one(v) for v in sorted(values))


# -- the analyst ---------------------------------------------------------------------------------


class OfflineAnalyst:
    """Deterministic local analyst. Build once: the YAKE extractor is reused for every note."""

    #: CPU-bound Python: threads would only take turns.
    concurrent = False

    #: Link when at least this many terms are shared (or one, for the nearest neighbour).
    link_min_shared = 2
    #: Evolve a neighbour (carry tags, fill an empty context) when this many terms are shared.
    strong_min_shared = 3

    def __init__(self) -> None:
        import yake

        self._yake = yake.KeywordExtractor(lan="en", n=2, dedup_lim=0.7, top=14)
        _date_mentions("last Tuesday", utcnow())  # dateparser loads its language data on first use

    @property
    def model(self) -> str:
        return MODEL

    # -- construct -------------------------------------------------------------------------------

    def construct(
        self, raw_log: RawLog, declared: Mapping[str, AttributePolicy]
    ) -> TaskResult[ConstructedNote]:
        def work() -> ConstructedNote:
            return validate(
                ConstructedNote, self.construct_data(raw_log, declared), context={"declared": dict(declared)}
            )

        inputs = {
            "text": raw_log.text,
            "occurred_at": as_utc(raw_log.occurred_at).isoformat(),
            "declared": sorted(offered_attributes(declared)),
        }
        return self._recorded(construct_note.TASK, raw_log.id, inputs, work)

    def construct_data(self, raw_log: RawLog, declared: Mapping[str, AttributePolicy]) -> dict[str, Any]:
        text = raw_log.text
        sentences = _sentences(text) or [text.strip()]
        keywords = self.keywords(text)
        category = _category(text)
        return {
            "keywords": keywords,
            "tags": _tags(category, keywords),
            "context": _context(category, keywords, sentences),
            "category": category,
            "decision_rationale": _decision_rationale(sentences),
            "valid_at": _valid_at(_date_mentions(text, raw_log.occurred_at)),
            "extra": _extras(sentences, offered_attributes(declared), raw_log.occurred_at),
        }

    def keywords(self, text: str) -> list[str]:
        """YAKE's best phrases, without filler, dates, name+verb pairs, or words already covered."""
        out: list[str] = []
        covered: set[str] = set()
        for phrase, _score in self._yake.extract_keywords(text):
            words = [w for w in phrase.split() if w.lower() not in _FILLER and w.lower() not in _CALENDAR]
            if len(words) == 2 and (words[1].lower() in _VERBISH or words[1].endswith("ed")):
                words = words[:1]
            if not words or all(w.lower() in _STOP for w in words):
                continue
            if len(words) == 1 and len(words[0]) < 3 and not words[0].isupper():
                continue
            stems = {_stem(w) for w in words}
            if stems <= covered:
                continue
            covered |= stems
            out.append(_surface(" ".join(words), text))
            if len(out) == MAX_KEYWORDS:
                break
        return out

    # -- link and evolve ---------------------------------------------------------------------------

    def link_and_evolve(
        self, note: Note, raw_log: RawLog, neighbours: Sequence[Note]
    ) -> TaskResult[LinkEvolveAnswer]:
        def work() -> LinkEvolveAnswer:
            data = self.link_data(note, neighbours)
            answer = validate(LinkEvolveAnswer, data)
            source = f"offline link_evolve for raw log {raw_log.id}"
            return link_evolve.keep_known(answer, (n.id for n in neighbours), source)

        inputs = {
            "note": note.model_dump(mode="json", include={"content", "keywords", "tags", "context"}),
            "neighbours": [
                n.model_dump(mode="json", include={"id", "content", "keywords", "tags", "context"})
                for n in neighbours
            ],
        }
        return self._recorded(link_evolve.TASK, raw_log.id, inputs, work)

    def link_data(self, note: Note, neighbours: Sequence[Note]) -> dict[str, Any]:
        """Links, evolution and contradictions from shared terms, rank, quantities and cues.

        A term most neighbours share (k >= 3) is background, like the two speakers' names in a
        dialogue or the account's name in its own scope: it is named in reasons, but it never makes
        a link on its own.
        """
        mine = self._note_terms(note)
        others = [(rank, other, self._note_terms(other)) for rank, other in enumerate(neighbours)]
        others = [(rank, other, terms) for rank, other, terms in others if other.id != note.id]
        background = _background([terms for _, _, terms in others])
        my_quantities = _quantities(note.content)
        replaces = _REPLACEMENT.search(note.content)
        links, updates, contradictions = [], [], []
        for rank, other, theirs in others:
            shared = sorted(mine & theirs)
            specific = [t for t in shared if t not in background]
            if specific and (len(shared) >= self.link_min_shared or rank == 0):
                links.append({"note_id": other.id, "reason": f"shares {_listing(shared)}"})
            if len(specific) >= 2 and len(shared) >= self.strong_min_shared:
                update = _evolution(note, other, specific, self)
                if update:
                    updates.append(update)
            reason = _contradiction(note, other, shared, specific, my_quantities, replaces)
            if reason:
                contradictions.append({"note_id": other.id, "reason": reason})
        return {"links": links, "updates": updates, "contradictions": contradictions}

    def _note_terms(self, note: Note) -> set[str]:
        """The stems of a note's keywords and tags, without its category tag (too broad to link by)."""
        keywords = note.keywords or self.keywords(note.content)
        category = _slug(note.category or "")
        return _terms([*keywords, *(t for t in note.tags if _slug(t) != category)])

    # -- provenance --------------------------------------------------------------------------------

    def _recorded(
        self, task: str, raw_log_id: str, inputs: dict[str, Any], work: Callable[[], A]
    ) -> TaskResult[A]:
        """Run ``work`` and record it as an LlmCall, so provenance looks the same as with a model."""
        started = time.perf_counter()
        record = {
            "id": new_id("llm"),
            "task": task,
            "model": MODEL,
            "prompt_version": PROMPT_VERSION,
            "raw_log_id": raw_log_id,
            "prompt_sha256": _input_digest(inputs),
            "created_at": utcnow(),
        }
        try:
            answer = work()
        except InvalidAnswer as exc:  # a rule produced something invalid: fail like a model would
            latency = (time.perf_counter() - started) * 1000
            call = LlmCall(**record, latency_ms=latency, error=f"invalid answer: {exc}")
            message = f"{task}: the offline analyst produced an invalid answer: {exc}"
            raise AnalystError(message, [call]) from exc
        latency = (time.perf_counter() - started) * 1000
        call = LlmCall(**record, response_text=answer.model_dump_json(), latency_ms=latency)
        return TaskResult(
            answer=answer,
            call=call,
            usage=Usage(latency_ms=round(latency, 3)),
            model=MODEL,
            prompt_version=PROMPT_VERSION,
            attempts=[call],
        )


def _input_digest(inputs: dict[str, Any]) -> str:
    return prompt_sha256([{"role": "input", "content": json.dumps(inputs, sort_keys=True, default=str)}])


# -- helpers of construct ------------------------------------------------------------------------


def _surface(phrase: str, text: str) -> str:
    """The phrase as written, lowercased only where the text also writes it in lowercase."""
    low = phrase.lower()
    if phrase != low and not phrase.isupper() and re.search(rf"\b{re.escape(low)}\b", text):
        return low
    return phrase


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _tags(category: str | None, keywords: Sequence[str]) -> list[str]:
    tags: list[str] = []
    candidates = ([category] if category else []) + list(keywords)
    for candidate in candidates:
        tag = _slug(candidate)
        if tag and tag not in tags and len(tag) <= 40:
            tags.append(tag)
        if len(tags) == MAX_TAGS:
            break
    return tags


def _context(category: str | None, keywords: Sequence[str], sentences: Sequence[str]) -> str:
    """A template sentence from the category and the top keywords, plus the key sentence if several."""
    label = (category or "general").capitalize()
    if not keywords:
        return _clip(f"{label} note: {sentences[0]}", 590)
    top = list(keywords[:3])
    about = top[0] if len(top) == 1 else ", ".join(top[:-1]) + " and " + top[-1]
    context = f"{label} note about {about}."
    if len(sentences) > 1:
        context += f" Key point: {_clip(_key_sentence(sentences, keywords), 200)}"
    return _clip(context, 590)


def _key_sentence(sentences: Sequence[str], keywords: Sequence[str]) -> str:
    """The sentence that holds the most (and the best-ranked) keywords."""

    def weight(sentence: str) -> int:
        low = sentence.lower()
        return sum(len(keywords) - i for i, kw in enumerate(keywords) if kw.lower() in low)

    return max(sentences, key=weight)


def _extras(
    sentences: Sequence[str], offered: Mapping[str, AttributePolicy], base: datetime
) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    for name, attr in offered.items():
        pattern = _cue_pattern(name, attr.description or "")
        for sentence in sentences:
            match = pattern.search(sentence)
            if match is None:
                continue
            value = _extra_value(str(attr.type), sentence, match, base)
            if value not in (None, "", []):
                extra[name] = value
                break
    return extra


# -- helpers of link and evolve ------------------------------------------------------------------


def _background(term_sets: Sequence[set[str]]) -> set[str]:
    """Terms found in more than half of the neighbours (only meaningful with three or more)."""
    if len(term_sets) < 3:
        return set()
    counts: dict[str, int] = {}
    for terms in term_sets:
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
    return {term for term, count in counts.items() if count * 2 > len(term_sets)}


def _listing(terms: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(terms[:limit])
    return shown + (f" and {len(terms) - limit} more" if len(terms) > limit else "")


def _evolution(
    note: Note, other: Note, specific: Sequence[str], analyst: OfflineAnalyst
) -> dict[str, Any] | None:
    """Give a strongly linked neighbour the new note's tags for what they share; fill an empty context."""
    update: dict[str, Any] = {"note_id": other.id}
    have = {_slug(t) for t in other.tags}
    subject = set(specific)
    carried = [t for t in note.tags if _slug(t) not in have and _terms([t]) and _terms([t]) <= subject]
    if carried and len(other.tags) < 8:
        update["tags"] = [*other.tags, *carried[: 8 - len(other.tags)]]
    if not (other.context or "").strip():
        sentences = _sentences(other.content) or [other.content]
        keywords = other.keywords or analyst.keywords(other.content)
        update["context"] = _context(other.category or _category(other.content), keywords, sentences)
    if len(update) == 1:
        return None
    changed = " and ".join(k for k in ("tags", "context") if k in update)
    update["reason"] = f"{changed} from a strongly related new note (shares {_listing(list(specific))})"
    return update


def _contradiction(
    note: Note,
    other: Note,
    shared: Sequence[str],
    subject: Sequence[str],
    my_quantities: Quantities,
    replaces: re.Match[str] | None,
) -> str | None:
    """A reason when ``other`` states a different value for the same quantity, or is replaced.

    ``subject`` is the shared terms less the background; a quantity with a unit ("per seat",
    "seats") is specific enough to need only one shared term of any kind.
    """
    if my_quantities:
        theirs = _quantities(other.content)
        for key, values in my_quantities.items():
            kind, unit, _cur = key
            old = theirs.get(key)
            if not old or old & values:
                continue
            if (len(shared) >= 1) if unit else (len(subject) >= 2):
                what = f"{kind} per {unit}" if unit and kind == "price" else kind
                return (
                    f"different {what} about {_listing(list(shared))}: "
                    f"{_show(key, values)} here, {_show(key, old)} in that note"
                )
    dates = _absolute_dates(note.content)
    if dates and len(subject) >= 2:
        old_dates = _absolute_dates(other.content)
        if old_dates and not dates & old_dates:
            return (
                f"different date about {_listing(list(subject))}: "
                f"{', '.join(sorted(dates))} here, {', '.join(sorted(old_dates))} in that note"
            )
    if replaces is not None and len(subject) >= 2:
        return f"says '{replaces.group(0)}' about {_listing(list(subject))}, which that note states otherwise"
    return None


_ABSOLUTE_BASE = datetime(2000, 1, 1, tzinfo=UTC)


@lru_cache(maxsize=4096)
def _absolute_dates(text: str) -> frozenset[str]:
    """Explicit calendar dates (not relative ones), as YYYY-MM-DD or MM-DD when no year is given."""
    out = set()
    for mention in _date_mentions(text, _ABSOLUTE_BASE):
        if mention.absolute and not re.search(r"\b(ago|last|next|yesterday|tomorrow)\b", mention.text, re.I):
            has_year = bool(re.search(r"\d{4}|\d{1,2}/\d{1,2}/\d{2}", mention.text))
            out.add(mention.when.date().isoformat() if has_year else mention.when.strftime("%m-%d"))
    return frozenset(out)
