"""Team attributes from cue phrases: the next step agreed, what the customer says matters most.

Each value is the shortest span of the raw log that says it ("Next step: Leo drafts the ROI
summary" gives "Leo drafts the ROI summary"), so it is its own evidence. A declared attribute we
have no vocabulary for is found by its own name ("budget owner: ..."). A bool is never inferred
from a cue: a cue is no evidence of true or false.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from amem.llm.offline import dates
from amem.llm.offline.text import Sentence
from amem.policy import AttributePolicy

_ACTIONS = (
    r"send|share|schedule|set up|book|email|call|prepare|draft|loop in|get back|circle back|review|"
    r"deliver|provide|reach out|follow up|follow|arrange|confirm|update|check|ship|sign|enable|"
    r"walk \w+ through|demo|invite|introduce"
)
#: A label that introduces the step itself: what follows it is the value.
_STEP_LABEL = re.compile(
    r"\b(?:next steps?|action items?|to-?do|follow[- ]?ups?|task created(?: for [^:]{1,60})?|"
    r"owner actions?)\s*[:\-–]\s*|"
    # a line opened by a bare "Next:" or the note-taker's "f/u:" shorthand
    r"^[ \t\-*•]*(?:next|f/u)\s*:\s*",
    re.IGNORECASE | re.MULTILINE,
)
#: What may follow an errand's verb without making it concrete ("I'll update here", "will follow
#: up soon"): no object, no one, nothing to check it was done.
_VAGUE_REST = frozenset({"here", "there", "soon", "later", "asap", "shortly", "again", "back", "up", "you",
                         "then", "on", "it", "this", "that", "accordingly", "as", "needed"})
#: A capitalised word before "to <action>" that is no one's name ("Happy to send", "Need to book").
_NOT_A_NAME = (
    r"Happy|Glad|Pleased|Ready|Keen|Need|Needs|Want|Wants|Plan|Plans|Hard|Easy|Able|Unable|Nice|Time|"
    r"Going|Due|Free|Remember|Reminder|Reply|Welcome|How|What|When|Where|Who|Why|Whether|Hoping|Trying|"
    r"Yes|No|Remind|Asked|Agreed|Decided|Forgot|Forgotten|Failed|Used|Supposed|Here|"
    # a month or a day is when, not who: "the board meets in December to sign off the budget"
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Today|Tomorrow|Tonight"
)
#: "<Someone> will send ...", "I'll send ...", "Maren to send ...": from the person to the end of
#: the clause.
_STEP_CLAUSE = re.compile(
    rf"(?:\b(?:[A-Z][a-z]+|I|we|We)\s+(?:will|'ll|is going to|are going to)\s+|\b(?:I|[Ww]e)'ll\s+|"
    rf"\b(?!(?:{_NOT_A_NAME})\b)[A-Z][a-z]+\s+to\s+|"
    rf"\b(?:we|they) agreed to\s+|\bplan is to\s+)(?:{_ACTIONS})\b",
)
_PRIORITY_CUES = (
    r"top priorit(?:y|ies)(?: [\w ]{0,20}?)?|priorit(?:y|ies)|most important(?: thing)?|"
    r"what matters(?: most)?(?: to \w+)?|matters? most|cares? (?:most |a lot |deeply )?about|"
    r"key requirements?|must[- ]haves?|top concerns?|biggest concerns?|non-negotiable|blockers?|"
    r"(?:is|are) the (?:one|only|main|most important) thing"
)
_TRAIL_CUE = re.compile(
    r"\s+(?:is|are|was|were)\s+(?:the (?:one|only|main|key|most important) (?:thing|requirement|"
    r"priority)|what matters most|non-negotiable|a must)\b",
    re.IGNORECASE,
)
#: Right before a priority cue: a copula and a possessive ("... are your two priorities"), so the
#: priorities are the sentence's subject, before the copula.
_PREDICATE_BEFORE = re.compile(
    r"\s+(?:is|are|was|were|remain|remains)\s+(?:(?:your|their|our|his|her|the)\s+)?"
    r"(?:(?:two|three|four|main|top|biggest|key|real)\s+)?$",
    re.IGNORECASE,
)
#: What may stand between a cue and its value: never the end of the clause (";", ".").
_LEAD_IN = re.compile(
    r"[^\w;.]*(?:(?:to|for)\s+(?:[\w'-]+\s+){1,3}?(?=(?:is|are|was|were)\b))?(?:is|are|was|were|include|"
    r"includes|remains?|being)?\s*[:\-–]?\s*",
    re.IGNORECASE,
)
_ITEM_SPLIT = re.compile(r"\s*(?:,|;|\band\b|&|\bplus\b)\s*", re.IGNORECASE)
_CLAUSE_END = re.compile(r"\s*(?:;|,\s+(?:so|but|and we|which)\b|\.\s|\.$|!|\?|$)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class Found:
    """A team attribute's value and the span of the raw log it comes from."""

    value: Any
    evidence: str


@lru_cache(maxsize=256)
def cue_pattern(name: str, description: str) -> re.Pattern[str]:
    """Cues for a declared attribute: its own name, plus a known vocabulary when it is one we know."""
    about = f"{name} {description}".lower()
    cues = [r"\s+".join(map(re.escape, re.split(r"[_\W]+", name.lower()))) + r"s?\s*[:\-–]?"]
    if re.search(r"priorit|matters|important|care", about):
        cues.append(_PRIORITY_CUES)
    return re.compile(r"\b(?:" + "|".join(cues) + r")\b", re.IGNORECASE)


def _is_next_step(name: str, description: str) -> bool:
    return bool(re.search(r"next|action|follow", f"{name} {description}".lower()))


def extras(
    sentences: Sequence[Sentence], offered: Mapping[str, AttributePolicy], base: datetime
) -> dict[str, Found]:
    """A value, with its evidence, for each offered attribute the text states."""
    out: dict[str, Found] = {}
    for name, attr in offered.items():
        description = attr.description or ""
        for sentence in sentences:
            found = None
            if str(attr.type) == "text" and _is_next_step(name, description):
                found = next_step(sentence)
            if found is None:
                match = cue_pattern(name, description).search(sentence.text)
                if match is not None:
                    found = _value(str(attr.type), sentence.text, match, base)
            if found is not None and _empty(found.value):
                found = None  # "Next step: none for now": no step
            if found is not None and found.value not in (None, "", []):
                out[name] = found
                break
    return out


#: Right before a "<who> will <action>" clause: a word that makes it a subordinate clause (a free
#: relative, a condition, an indirect question), which names an action without agreeing to it.
_SUBORDINATE = re.compile(r"\b(?:what|whatever|whether|if|unless|when|whenever|until|before)\s+$", re.I)


def next_step(sentence: Sentence) -> Found | None:
    """The action after a "Next step:" label, or the clause "<who> will <action> ..."."""
    text = sentence.text
    label = _STEP_LABEL.search(text)
    if label is not None:
        return _until_clause_end(text, label.end())
    clause = _STEP_CLAUSE.search(text)
    if clause is not None and _SUBORDINATE.search(text[: clause.start()]):
        clause = None  # "above what Ellen will sign", "whether we'll send it": no action agreed
    if clause is not None:
        start = clause.start()
        if text[start:].lower().startswith(("we agreed to ", "they agreed to ", "plan is to ")):
            start = text.index(" to ", start) + 4
        found = _until_clause_end(text, start)
        rest = re.findall(r"[a-z']+", text[clause.end() : clause.start() + 200].split(".")[0].lower())
        if found is not None and all(w in _VAGUE_REST for w in rest[: len(found.value.split())]):
            return None  # "I'll update here": a promise with no object, no concrete action
        return found
    return None


def _until_clause_end(text: str, start: int) -> Found | None:
    end_match = _CLAUSE_END.search(text, start)
    end = end_match.start() if end_match else len(text)
    span = text[start:end].strip(" .,;:")
    if len(span) < 3:
        return None
    return Found(span, span)


#: A value that says there is none: "none for now", "nothing yet", "TBD", "n/a".
_NONE_VALUE = re.compile(r"^(?:none|nothing|n/?a|tbd|tbc|no (?:next )?steps?|not yet)\b", re.IGNORECASE)
#: Before a priority cue: a rating ("low priority", "P2 priority"), not what the customer wants most.
_RATED = re.compile(r"\b(?:low|lower|lowest|medium|normal|high|higher|p[0-4])\s*[- ]?$", re.IGNORECASE)
#: Right after a priority cue: it was one, it no longer is ("Their blocker was the SSO bug").
_PAST_LEAD = re.compile(r"^\s*(?:was|were|had been|used to be)\b", re.IGNORECASE)


def _empty(value: Any) -> bool:
    return isinstance(value, str) and bool(_NONE_VALUE.match(value.strip()))


def _value(attr_type: str, sentence: str, match: re.Match[str], base: datetime) -> Found | None:
    if attr_type == "list[str]" and (
        _RATED.search(sentence[: match.start()]) or _PAST_LEAD.match(sentence[match.end() :])
    ):
        return None  # a rating, or a priority of the past: not what matters to them now
    if attr_type == "text":
        lead = _LEAD_IN.match(sentence, match.end())
        return _until_clause_end(sentence, lead.end() if lead else match.end())
    if attr_type == "list[str]":
        return _list_items(sentence, match)
    if attr_type == "number":
        numbers = _NUMBER.findall(sentence[match.end() :]) or _NUMBER.findall(sentence)
        return Found(float(numbers[0].replace(",", "")), numbers[0]) if numbers else None
    if attr_type == "datetime":
        mention = next(iter(dates.mentions(sentence, base)), None)
        if mention is None:
            return None
        return Found(f"{mention.when.isoformat()}T00:00:00+00:00", mention.text)
    return None


#: A ticket's own priority field ("Priority: High", "P1"): a severity, not what the customer wants.
_SEVERITY = re.compile(r"(?:high|medium|low|normal|urgent|critical|blocker|p[0-4]|sev(?:erity)?\s*\d)", re.I)


def _list_items(sentence: str, match: re.Match[str]) -> Found | None:
    """The items after the cue ("top priority is X and Y"), or before it ("X is the one thing")."""
    if re.match(r"(?:is|are)\b", match.group(0), re.IGNORECASE):
        edges = [sentence.rfind(sep, 0, match.start()) for sep in (": ", ", ")]
        lead = max([e + 2 for e in edges if e >= 0] or [0])
        span = sentence[lead : match.start()].strip(" .!?\"'")
        return Found([span], span) if len(span) > 2 else None
    predicate = _PREDICATE_BEFORE.search(sentence[: match.start()])
    if predicate is not None:
        # "X and Y are your two priorities": the items are the subject, before the copula
        edges = [sentence.rfind(sep, 0, predicate.start()) for sep in (": ", "; ")]
        lead = max([e + 2 for e in edges if e >= 0] or [0])
        span = sentence[lead : predicate.start()].strip(" .!?\"'")
        items = [item.strip(" .!?\"'") for item in _ITEM_SPLIT.split(span)]
        items = [item for item in items if len(item) > 1 and item in sentence][:5]
        return Found(items, span) if items else None
    after_start = match.end()
    if re.match(rf"\s*[:=\-–]\s*{_SEVERITY.pattern}\b", sentence[after_start:], re.IGNORECASE):
        return None  # "Priority: Normal | Requester: ...": a record's severity field and the next field
    lead = _LEAD_IN.match(sentence, after_start)
    start = lead.end() if lead else after_start
    colon = sentence.find(": ", start)
    end_match = _CLAUSE_END.search(sentence, start)
    end = end_match.start() if end_match else len(sentence)
    if 0 <= colon < end and colon - start < 40:
        start = colon + 2
    span = sentence[start:end].strip(" .!?\"'")
    if len(span) < 3:
        trail = _TRAIL_CUE.search(sentence)
        if trail is None:
            return None
        span = sentence[: trail.start()].strip(" .!?\"'")
    items = [item.strip(" .!?\"'") for item in _ITEM_SPLIT.split(span)]
    items = [item for item in items if len(item) > 1 and item in sentence]
    if any(_SEVERITY.fullmatch(item.strip("()[] ")) for item in items):
        return None  # "Priority: High": the cue was a ticket's field, not what the customer wants
    items = items[:5]
    if not items:
        return None
    return Found(items, span)
