"""Quantities and the facts they state, and which earlier note a new one makes untrue.

A contradiction needs the same kind of fact stated differently, each stated as a fact (not a
quote, an offer, a question or a budget): a price per seat ($42, then $55), a seat count (120,
then 150), a plan (the annual plan, then monthly billing, or "no longer wants the annual plan"),
a date of the same event (the renewal moved from October 1 to January 15), a person in a role
(a new champion, the decision now with the new CFO), or a reversed decision ("decided not to
roll out" after "will decide on rolling out"). Only the newest earlier note stating that kind
of fact is contradicted: it holds the current value, older ones were retired by it. Which of
the two notes is newer in time the pipeline decides, not this module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from amem.llm.offline import dates
from amem.llm.offline.reasons import DECISION
from amem.llm.offline.text import CALENDAR, STOP, WORD, readable, sentences, stem

_PER = r"(?:\s*/\s*|\s+(?:per|a|an|each)\s+)(?P<unit>seat|user|licen[cs]e|head)s?\b"
_MONEY = re.compile(rf"(?P<cur>[$€£])\s?(?P<num>\d[\d,]*(?:\.\d+)?)(?:{_PER})")
_COUNT = re.compile(r"\b(?P<num>\d[\d,]*)\s+(?P<unit>seat|user|licen[cs]e)s?\b", re.IGNORECASE)
#: A sentence that quotes, offers, asks or budgets rather than states what holds.
_NOT_A_FACT = re.compile(
    r"\?|\b(?:propos\w*|counter\w*|offer\w*|quote[ds]?|quoting|would|could|if|budget\w*|asked|"
    r"question|hold the|evaluating|considering|might|maybe|"
    r"active|wants?|asks?|asking|demand\w*|pushed back|plans? to|planning|planned|about|around|roughly|"
    r"approximately|expects?)\b",
    re.IGNORECASE,
)
#: Words before a value that make it the old one ("150 instead of 120", "(was 120)").
_OLD_VALUE_BEFORE = re.compile(r"\b(?:instead of|was|were|from|up from|down from|replacing|not)\s*$", re.I)
#: What makes a sentence a plan's statement rather than a question or an option.
_NOT_A_CHOICE = re.compile(r"\?|\b(?:propos\w*|offer\w*|would|could|if|considering|evaluating)\b", re.I)

_CADENCE = re.compile(
    r"\b(?P<plan>annual|yearly|monthly|quarterly)\s+(?:plan|billing|subscription|payments?|invoicing)\b",
    re.IGNORECASE,
)
_TIER = re.compile(
    r"\b(?P<plan>starter|basic|pro|professional|business|team|growth|enterprise|premium|standard|plus)"
    r"\s+(?:plan|tier|edition|package)\b",
    re.IGNORECASE,
)
_DROPPED_BEFORE = re.compile(
    r"\b(?:no longer (?:wants?|needs?|uses?)|(?:doesn'?t|does not|don'?t|do not) want|drop(?:s|ped)?|"
    r"cancel(?:s|led|ed)?|leav(?:e|es|ing)|"
    r"over|instead of|rather than|not|off)\b[^.;]{0,12}$",
    re.IGNORECASE,
)
_EVENTS = re.compile(
    r"\b(renew\w*|go-?live|launch\w*|kick-?off|deadline|qbr|business review|cutover|migration|"
    r"board meeting|signature|sign(?:ing)?)\b",
    re.IGNORECASE,
)
_MOVE = re.compile(
    r"\b(?:mov\w*|push\w*|postpon\w*|reschedul\w*|delay\w*|shift\w*|chang\w*|set to|now)\b", re.I
)

_ROLES = {
    "contact": r"champion|main contact|primary contact|point of contact|sponsor|day-to-day contact",
    "decider": r"decision[- ]maker|decision (?:now )?sits with|signs (?:anything|off|everything)|signer|"
    r"sign-off|economic buyer|budget owner|final say|final call|approves (?:anything|spend)|"
    r"owns? (?:the )?(?:\w+ )?(?:decisions?|budget)",
}
_ROLE = {kind: re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE) for kind, pattern in _ROLES.items()}
_ROLE_CHANGE = re.compile(
    r"\b(?:new|now|next|takes? over|took over|no longer|leaving|left|retir\w*|replac\w*|moved on|steps? down|"
    r"stepping down|handed over)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b")
_NEGATED = re.compile(
    r"\b(?:no longer\s+(?P<v1>\w+)|decided (?:not to|against)\s+(?P<v2>\w+)|not to\s+(?P<v3>\w+)|"
    r"(?:will not|won't|not going to)\s+(?P<v4>\w+)|cancell?ed|called off|backed out of|pulled out of|"
    r"pulled the plug on|"
    r"reversed)\b(?P<obj>[^.;:]*)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Facts:
    """What one note states, kind by kind."""

    prices: frozenset[tuple[str, str, float]]
    counts: frozenset[tuple[str, float]]
    plans: frozenset[tuple[str, str]]  # (dimension, plan) chosen
    dropped: frozenset[tuple[str, str]]  # plans it no longer wants
    events: frozenset[tuple[str, str]]  # (event, MM-DD) dates of events it states
    moved_event: bool  # it moves an event's date
    roles: frozenset[tuple[str, str]]  # (role kind, person)
    role_change: frozenset[str]  # role kinds it changes
    gone: frozenset[str]  # persons it says leave or are no longer involved
    negated: frozenset[str]  # the roots of what it reverses
    evidence: dict[str, str]  # kind -> the sentence stating it


def root(word: str) -> str:
    """A stem that also meets verb forms ("rolling"/"roll", "renewed"/"renew")."""
    w = stem(word)
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    return w


def roots(text: str) -> set[str]:
    return {
        root(w)
        for w in WORD.findall(text.replace("-", " "))
        if len(w) > 1 and w.lower() not in STOP and w.lower() not in CALENDAR
    }


def _amount(num: str) -> float:
    return float(num.replace(",", ""))


@lru_cache(maxsize=4096)
def facts(text: str) -> Facts:
    """The facts a raw log states (its readable text), for comparison with another note's."""
    prices: set[tuple[str, str, float]] = set()
    counts: set[tuple[str, float]] = set()
    plans: set[tuple[str, str]] = set()
    dropped: set[tuple[str, str]] = set()
    events: set[tuple[str, str]] = set()
    roles: set[tuple[str, str]] = set()
    role_change: set[str] = set()
    gone: set[str] = set()
    negated: set[str] = set()
    evidence: dict[str, str] = {}
    moved = False
    base = datetime(2000, 6, 15, tzinfo=UTC)
    for sentence in sentences(readable(text)):
        s = sentence.text
        fact = not _NOT_A_FACT.search(s) or bool(
            re.search(r"\b(?:accepted|agreed|signed|settled)\b", s, re.I)
        )
        if fact:
            for m in _MONEY.finditer(s):
                if not _OLD_VALUE_BEFORE.search(s[: m.start()]):
                    prices.add((m.group("cur"), stem(m.group("unit").lower()), _amount(m.group("num"))))
                    evidence.setdefault("price", s)
            for m in _COUNT.finditer(s):
                if _OLD_VALUE_BEFORE.search(s[: m.start()]):
                    continue
                counts.add((stem(m.group("unit").lower()), _amount(m.group("num"))))
                evidence.setdefault("count", s)
        decided = bool(DECISION.search(s)) or bool(
            re.search(r"\b(?:is|are) on\b|\bpays?\b|\bsigned\b", s, re.I)
        )
        for pattern, dimension in ((_CADENCE, "cadence"), (_TIER, "tier")):
            for m in pattern.finditer(s):
                plan = (dimension, m.group("plan").lower().replace("yearly", "annual"))
                if _DROPPED_BEFORE.search(s[: m.start()]):
                    if re.search(
                        r"\b(?:no longer|drop|cancel|leav|doesn'?t|does not|don'?t|do not)",
                        s[: m.start()],
                        re.I,
                    ):
                        dropped.add(plan)
                        evidence.setdefault("plan", s)
                elif (decided and not _NOT_A_CHOICE.search(s)) or re.search(
                    r"\b(?:switch\w*|mov\w*|chang\w*) to\b", s, re.I
                ):
                    plans.add(plan)
                    evidence.setdefault("plan", s)
        event = _EVENTS.search(s)
        if event:
            found = [
                m
                for m in dates.mentions(s, base)
                if m.absolute and not re.search(r"\bfrom\s*$", s[: m.start])
            ]
            for mention in found:
                shown = mention.when.isoformat() if re.search(r"\d{4}", mention.text) else None
                events.add((root(event.group(1).lower()), shown or mention.when.strftime("%m-%d")))
            if found and _MOVE.search(s):
                moved = True
                evidence.setdefault("date", s)
        for kind, pattern in _ROLE.items():
            m = pattern.search(s)
            if m is None:
                continue
            for name in _NAME.findall(s):
                roles.add((kind, name))
            if _ROLE_CHANGE.search(s):
                role_change.add(kind)
                evidence.setdefault("role", s)
        for m in re.finditer(
            r"\b(I|[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s+(?:(?:am|is|was|has)\s+)?(?:leaving|no longer|left|"
            r"retiring|retired|resigned|departed|marked as departed)\b",
            s,
        ):
            gone.add(m.group(1))
        for m in _NEGATED.finditer(s):
            verb = next((m.group(g) for g in ("v1", "v2", "v3", "v4") if m.group(g)), "")
            words = roots(f"{verb} {m.group('obj')}")
            if len(words) >= 2:
                negated |= words
                evidence.setdefault("reversal", s)
    return Facts(
        prices=frozenset(prices),
        counts=frozenset(counts),
        plans=frozenset(plans),
        dropped=frozenset(dropped),
        events=frozenset(events),
        moved_event=moved,
        roles=frozenset(roles),
        role_change=frozenset(role_change),
        gone=frozenset(gone),
        negated=frozenset(negated),
        evidence=evidence,
    )


@dataclass(frozen=True)
class Contradiction:
    """A kind of fact the new note states otherwise, why, and the span of its raw log saying so."""

    kind: str
    reason: str
    evidence: str


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
    if old.events:
        out.add("date")
    if old.roles:
        out |= {f"role:{kind}" for kind, _ in old.roles}
    return out


def contradiction(new: Facts, old: Facts, old_text: str, kind: str) -> Contradiction | None:
    """How ``new`` states the fact of ``kind`` otherwise than ``old``, or None."""
    if kind == "price":
        for cur, unit, _ in new.prices:
            mine = {p for p in new.prices if p[:2] == (cur, unit)}
            theirs = {p for p in old.prices if p[:2] == (cur, unit)}
            if theirs and not mine & theirs:
                here, there = _money(list(mine)), _money(list(theirs))
                why = f"different price per {unit}: {here} here, {there} in that note"
                return Contradiction("price", why, new.evidence["price"])
    if kind == "count":
        for unit, _ in new.counts:
            mine = {v for u, v in new.counts if u == unit}
            theirs = {v for u, v in old.counts if u == unit}
            if theirs and not mine & theirs:
                why = f"different number of {unit}s: {', '.join(f'{v:g}' for v in sorted(mine))} here, " + (
                    f"{', '.join(f'{v:g}' for v in sorted(theirs))} in that note"
                )
                return Contradiction("count", why, new.evidence["count"])
    if kind == "plan":
        for dimension, plan in old.plans:
            if (dimension, plan) in new.dropped:
                return Contradiction(
                    "plan", f"no longer the {plan} plan that note states", new.evidence["plan"]
                )
            changed = {p for d, p in new.plans if d == dimension}
            if changed and plan not in changed:
                why = f"plan changed: {', '.join(sorted(changed))} here, {plan} in that note"
                return Contradiction("plan", why, new.evidence["plan"])
    if kind == "date" and new.moved_event:
        for event, day in new.events:
            theirs = {d for e, d in old.events if e == event}
            if theirs and day[-5:] not in {d[-5:] for d in theirs}:
                why = f"the {event} date moved: {day} here, {', '.join(sorted(theirs))} in that note"
                return Contradiction("date", why, new.evidence["date"])
    if kind.startswith("role:"):
        role = kind.split(":", 1)[1]
        if role in new.role_change:
            mine = {name for k, name in new.roles if k == role} - new.gone
            theirs = {name for k, name in old.roles if k == role} - old.gone
            if theirs - mine and (theirs & new.gone or mine - theirs):
                here, there = ", ".join(sorted(mine)) or "someone else", ", ".join(sorted(theirs))
                why = f"a new {role}: {here} here, {there} in that note"
                return Contradiction(kind, why, new.evidence["role"])
    if kind == "reversal" and new.negated:
        theirs = roots(readable(old_text))
        shared = new.negated & theirs
        if len(shared) >= 2 and 2 * len(shared) >= len(new.negated):
            why = f"reverses what that note says about {', '.join(sorted(shared))}"
            return Contradiction("reversal", why, new.evidence["reversal"])
    return None


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
        out.append("date")
    out += [f"role:{kind}" for kind in sorted(new.role_change)]
    if new.negated:
        out.append("reversal")
    return out
