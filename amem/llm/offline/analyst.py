"""The offline analyst: the two tasks of add_note with local rules and statistics, no model.

It is the default when no model is configured, so amem works on a fresh machine. Each skill is a
module of this package (dates, reasons, categories, cues, keywords, contradictions,
restatements), testable alone; this module puts their answers into the task answers and records
them as LlmCall rows (model "offline"), so they go through the same validation as a model's.
It reads the raw log through ``text.readable`` (delimiters and instructions blanked) and names
the evidence span of every value a person will review. It is deterministic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from amem.domain.models import LlmCall, Note, RawLog, Usage, as_utc, new_id, utcnow
from amem.llm import construct_note, link_evolve
from amem.llm.base import AnalystError, TaskResult
from amem.llm.construct_note import ConstructedNote, offered_attributes
from amem.llm.json_answer import InvalidAnswer, prompt_sha256, validate
from amem.llm.link_evolve import LinkEvolveAnswer
from amem.llm.offline import categories, contradictions, cues, dates, reasons, restatements
from amem.llm.offline.keywords import Keywords, context, key_sentence, tags
from amem.llm.offline.text import clip, readable, sentences, slug, terms, without_signature
from amem.policy import AttributePolicy

A = TypeVar("A", bound=BaseModel)

MODEL = "offline"
PROMPT_VERSION = "offline/2"
#: What the recorded inputs of a link_evolve call keep of each neighbour (with when it was said).
_NEIGHBOUR_FIELDS = {"id", "content", "keywords", "tags", "context", "links"}


class OfflineAnalyst:
    """Deterministic local analyst. Build once: the YAKE extractor is reused for every note."""

    #: CPU-bound Python: threads would only take turns.
    concurrent = False
    checked = False  # its answers are the offline skills' own reading

    #: Link when at least this many terms are shared (or one, for the nearest neighbour).
    link_min_shared = 2
    #: Evolve a neighbour (carry tags, fill an empty context) when this many terms are shared.
    strong_min_shared = 3
    #: Neighbours it reads: links and evolution come from the ``link_k`` nearest only, but the note
    #: holding a fact's current value (the one a new value retires) is looked for among these many.
    neighbour_pool = 20

    def __init__(self, link_k: int = 5) -> None:
        self.keywords = Keywords()
        self.link_k = link_k

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
        text = readable(raw_log.text)
        found = sentences(text)
        lines = [s.text for s in found]
        body = without_signature(text)  # what the note is about, without who signed it
        keywords = self.keywords(body)
        why = reasons.reason(found, text)
        # the topic is named where the note says what it is about: the decision it states, if any
        # (a decision is filed under what was decided), else its first sentence
        decision = next((s for s in found if reasons.decided(s.text)), None)
        decided = decision.text if decision is not None else None
        category = categories.category(
            body, decided or (lines[0] if lines else ""), (why.start, why.end) if why is not None else None
        )
        evidence: dict[str, str] = {}
        if why is not None:
            evidence["decision_rationale"] = why.text
        # noise (no category) states no fact, so nothing it says takes effect on a date
        # a date inside the reason dates the reason's own fact, not the decision's
        outside = [(why.start, why.end)] if why is not None else []
        main = (decision.start, decision.end) if decision is not None else None
        when = (
            dates.valid_at(
                text,
                raw_log.occurred_at,
                outside,
                main,
                fault_report=category == "support issue",
                renewal_note=category == "renewal",
            )
            if not categories.chat(text)
            else None
        )
        if when is not None:
            evidence["valid_at"] = when.text
        the_context = context(category, keywords, lines)
        if lines:
            evidence["context"] = key_sentence(lines, keywords) if keywords else lines[0]
        extra: dict[str, Any] = {}
        for name, value in cues.extras(found, offered_attributes(declared), raw_log.occurred_at).items():
            extra[name] = value.value
            evidence[name] = value.evidence
        return {
            "keywords": keywords,
            "tags": tags(category, keywords),
            "context": the_context if lines else f"{(category or 'general').capitalize()} note.",
            "category": category,
            "decision_rationale": _span(why.text) if why is not None else None,
            "valid_at": f"{when.when.isoformat()}T00:00:00+00:00" if when is not None else None,
            "extra": {name: _within_limits(value) for name, value in extra.items()},
            "evidence": {name: _span(span) for name, span in evidence.items()},
        }

    # -- link and evolve ---------------------------------------------------------------------------

    def link_and_evolve(
        self,
        note: Note,
        raw_log: RawLog,
        neighbours: Sequence[Note],
        said: Mapping[str, datetime] | None = None,
    ) -> TaskResult[LinkEvolveAnswer]:
        said = dict(said or {})

        def work() -> LinkEvolveAnswer:
            data = self.link_data(note, neighbours, said=said, new_said=raw_log.occurred_at)
            answer = validate(LinkEvolveAnswer, data)
            source = f"offline link_evolve for raw log {raw_log.id}"
            return link_evolve.keep_known(answer, (n.id for n in neighbours), source)

        inputs = {
            "note": {
                **note.model_dump(mode="json", include={"content", "keywords", "tags", "context"}),
                "occurred_at": as_utc(raw_log.occurred_at).isoformat(),
            },
            "neighbours": [
                {
                    **n.model_dump(mode="json", include=_NEIGHBOUR_FIELDS),
                    **({"occurred_at": as_utc(said[n.id]).isoformat()} if n.id in said else {}),
                }
                for n in neighbours
            ],
        }
        return self._recorded(link_evolve.TASK, raw_log.id, inputs, work)

    def link_data(
        self,
        note: Note,
        neighbours: Sequence[Note],
        *,
        said: Mapping[str, datetime] | None = None,
        new_said: datetime | None = None,
    ) -> dict[str, Any]:
        """Links, evolution, restatement and contradictions from shared terms, rank and facts.
        ``said``: when each neighbour was said, by note id (a neighbour's relative days are read
        against it when a restatement's values are compared, and the contradictions go by it);
        ``new_said``: when the new input was said (a neighbour said after it may make it untrue).

        A term most neighbours share (k >= 3) is background, like the two speakers' names in a
        dialogue or the account's name in its own scope: it is named in reasons, but it never makes
        a link on its own.
        """
        pool = [other for other in neighbours if other.id != note.id]
        nearest = pool[: self.link_k]
        mine = self._note_terms(note)
        others = [(rank, other, self._note_terms(other)) for rank, other in enumerate(nearest)]
        others = [(rank, other, theirs) for rank, other, theirs in others if other.id != note.id]
        background = _background([theirs for _, _, theirs in others]) | terms([note.scope])
        links, updates = [], []
        for rank, other, theirs in others:
            shared = sorted(mine & theirs)
            specific = [t for t in shared if t not in background]
            if specific and (len(shared) >= self.link_min_shared or rank == 0):
                links.append({"note_id": other.id, "reason": f"shares {_listing(shared)}"})
            if len(specific) >= 2 and len(shared) >= self.strong_min_shared:
                update = self._evolution(note, other, specific)
                if update:
                    updates.append(update)
        restated = self._restated(note, pool, background, said or {})
        if restated is not None:
            reason = "restates that note: nothing new"
            links = [link for link in links if link["note_id"] != restated] + [
                {"note_id": restated, "reason": reason}
            ]
            return {"links": links, "updates": updates, "contradictions": [], "restates": restated}
        found = self._contradictions(note, pool, said or {}, new_said)
        return {
            "links": links,
            "updates": updates,
            # a fact stated in one very long sentence: its evidence is the sentence's start
            "contradictions": [{**c, **_fitted(c)} for c in found],
            "restates": None,
        }

    def _restated(
        self, note: Note, others: Sequence[Note], background: set[str], said: Mapping[str, datetime]
    ) -> str | None:
        scored = [
            (
                restatements.restatement_score(
                    note.content, other.content, background, old_at=said.get(other.id)
                ),
                -rank,
                other.id,
            )
            for rank, other in enumerate(others)
        ]
        best = max(scored, default=(0.0, 0, ""))
        return best[2] if best[0] > 0 else None

    def _contradictions(
        self,
        note: Note,
        others: Sequence[Note],
        said: Mapping[str, datetime],
        new_said: datetime | None,
    ) -> list[dict[str, Any]]:
        """For each kind of fact the note states, the newest neighbour said before it stating that
        kind, if it states it otherwise; and the neighbour said after it that makes its fact untrue,
        if any (``_retired_by_later``). A neighbour that only restates another is not a fact of its
        own, unless the note it restates is not among those shown: then it speaks for that fact.
        Newer and older go by when each was said (``said``, ``new_said``), not by when each note
        was written: an input analysed late (a retry after an outage, a slower model call, an
        import of older history) is judged as if it had come in its time."""
        new = contradictions.facts(note.content)
        wanted = contradictions.stated_kinds(new)
        shown = {o.id for o in others}
        facts_of = [o for o in others if not (_restated_ids(o) & shown)]
        when = {o.id: as_utc(said[o.id]) if o.id in said else as_utc(o.created_at) for o in facts_of}
        mine = as_utc(new_said) if new_said is not None else None
        later = {o.id for o in facts_of if mine is not None and o.id in said and when[o.id] > mine}
        before = [o for o in facts_of if o.id not in later]
        newest_first = sorted(before, key=lambda o: (when[o.id], as_utc(o.created_at)), reverse=True)
        out: dict[str, dict[str, Any]] = {}
        # a confirmed fix retires the note that reported the fault (by ticket number, else by its words)
        pool = [(o.id, o.content, when[o.id]) for o in before]
        fixed = contradictions.retired_fault(note.content, pool)
        if fixed is not None:
            other_id, found = fixed
            out[other_id] = {"note_id": other_id, "reason": found.reason, "evidence": found.evidence}
        # a settled price also ends the offers made since the last price that held
        offers = [(o.id, contradictions.facts(o.content)) for o in newest_first]
        topic = {o.id: o.category for o in newest_first}
        for other_id, found in contradictions.superseded_offers(new, offers):
            if contradictions.same_topic(note.category, topic[other_id]):
                out.setdefault(
                    other_id, {"note_id": other_id, "reason": found.reason, "evidence": found.evidence}
                )
        for kind in wanted:
            for other in newest_first:
                old = contradictions.facts(other.content)
                if not contradictions.holds(new, old, other.content, kind):
                    continue
                found = contradictions.contradiction(new, old, other.content, kind)
                if not contradictions.may_retire(kind, note.category, other.category):
                    found = None  # still the newest holder: an older note's value is no longer current
                if found is not None and other.id not in out:
                    out[other.id] = {"note_id": other.id, "reason": found.reason, "evidence": found.evidence}
                if kind not in contradictions.SEARCHED or found is not None:
                    break  # the newest note of this kind holds the current value
        # a fact made untrue is untrue wherever it is restated: its restatements retire with it
        for other in others:
            for restated in _restated_ids(other) & shown:
                if restated in out and other.id not in out:
                    out[other.id] = {**out[restated], "note_id": other.id}
        retired = self._retired_by_later(note, new, [o for o in facts_of if o.id in later], when)
        if retired is not None and retired["note_id"] not in out:
            out[retired["note_id"]] = retired
        return list(out.values())

    def _retired_by_later(
        self,
        note: Note,
        new: contradictions.Facts,
        later: Sequence[Note],
        when: Mapping[str, datetime],
    ) -> dict[str, Any] | None:
        """The neighbour said after the new note that makes its fact untrue: the earliest one that,
        had the new note been there in its time, would have retired it, that is which finds it the
        newest holder of a kind it states otherwise (no note said between the two holds that kind).
        Its fact held until then; a later change of that kind retires the note said in between.
        The evidence is the new note's own sentence stating the fact (``made_untrue``), and the
        newer evidence that neighbour's sentence saying otherwise (what drafting proposes with)."""
        earliest_first = sorted(later, key=lambda o: (when[o.id], as_utc(o.created_at)))
        read = {o.id: contradictions.facts(o.content) for o in earliest_first}
        for i, other in enumerate(earliest_first):
            theirs = read[other.id]
            between = [b for b in earliest_first[:i] if when[b.id] < when[other.id]][::-1]
            for kind in contradictions.stated_kinds(theirs):
                if not contradictions.holds(theirs, new, note.content, kind):
                    continue
                if not contradictions.may_retire(kind, other.category, note.category):
                    continue
                if any(_holder(theirs, read[b.id], b.content, kind) for b in between):
                    continue  # the note said in between held that value when ``other`` changed it
                found = contradictions.made_untrue(theirs, new, note.content, kind)
                if found is not None:
                    return {
                        "note_id": other.id,
                        "reason": found.reason,
                        "evidence": found.evidence,
                        "newer_evidence": found.newer_evidence,
                    }
            # a settled price ends the offer the new note made, when no price held in between
            offers = [*((b.id, read[b.id]) for b in between), (note.id, new)]
            for ended, found in contradictions.superseded_offers(theirs, offers):
                span = new.evidence.get("offer") or new.evidence.get("price")
                if ended == note.id and span and contradictions.same_topic(other.category, note.category):
                    said = found.evidence  # the settled price's sentence, in ``other``'s text
                    return {
                        "note_id": other.id,
                        "reason": found.reason,
                        "evidence": span,
                        "newer_evidence": said,
                    }
        return None

    def _note_terms(self, note: Note) -> set[str]:
        """The stems of a note's keywords and tags, without its category tag (too broad to link by)."""
        keywords = note.keywords or self.keywords(readable(note.content))
        category = slug(note.category or "")
        return terms([*keywords, *(t for t in note.tags if slug(t) != category)])

    def _evolution(self, note: Note, other: Note, specific: Sequence[str]) -> dict[str, Any] | None:
        """Give a strongly linked neighbour the new note's tags for what they share; fill an empty context."""
        update: dict[str, Any] = {"note_id": other.id}
        have = {slug(t) for t in other.tags}
        subject = set(specific)
        carried = [t for t in note.tags if slug(t) not in have and terms([t]) and terms([t]) <= subject]
        if carried and len(other.tags) < 8:
            update["tags"] = [*other.tags, *carried[: 8 - len(other.tags)]]
        if not (other.context or "").strip():
            text = readable(other.content)
            lines = [s.text for s in sentences(text)] or [text.strip() or "(empty)"]
            keywords = other.keywords or self.keywords(text)
            update["context"] = context(other.category or categories.category(text), keywords, lines)
        if len(update) == 1:
            return None
        changed = " and ".join(k for k in ("tags", "context") if k in update)
        update["reason"] = f"{changed} from a strongly related new note (shares {_listing(list(specific))})"
        return update

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


#: The limits of an answer (``construct_note``, ``link_evolve``): a longer span is cut to fit.
_SPAN_CHARS = 2000
_ITEM_CHARS = 300
_ITEMS = 20
_REASON_CHARS = 500


def _span(text: str, limit: int = _SPAN_CHARS) -> str:
    """``text``, a span of the raw log, cut to its start within ``limit`` characters, at a word
    where there is one: still a span of the raw log (a value held for review keeps its
    evidence), where a sentence longer than an answer may hold would fail the input for good."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rstrip().rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:")


def _fitted(contradiction: Mapping[str, Any]) -> dict[str, Any]:
    """A contradiction's reason and evidence (and a later note's, where given) within what an
    answer may hold."""
    reason, evidence = contradiction["reason"], contradiction.get("evidence")
    fitted = {
        "reason": reason if len(reason) <= _REASON_CHARS else clip(reason, _REASON_CHARS),
        "evidence": _span(evidence) if isinstance(evidence, str) else evidence,
    }
    newer = contradiction.get("newer_evidence")
    return fitted | ({"newer_evidence": _span(newer)} if isinstance(newer, str) else {})


def _within_limits(value: Any) -> Any:
    """A team attribute's value within what an answer may hold: text to 2,000 characters, a list
    to 20 items of 300 (each cut as ``_span`` cuts, so an item stays words of the raw log)."""
    if isinstance(value, str):
        return _span(value)
    if isinstance(value, list):
        return [_span(item, _ITEM_CHARS) if isinstance(item, str) else item for item in value[:_ITEMS]]
    return value


def _input_digest(inputs: dict[str, Any]) -> str:
    return prompt_sha256([{"role": "input", "content": json.dumps(inputs, sort_keys=True, default=str)}])


def _holder(newer: contradictions.Facts, older: contradictions.Facts, older_text: str, kind: str) -> bool:
    """Whether ``older`` is the note a newer one stating ``kind`` stops at (see ``_contradictions``):
    for a slot, any note stating it; for a searched kind, one it contradicts."""
    if not contradictions.holds(newer, older, older_text, kind):
        return False
    if kind not in contradictions.SEARCHED:
        return True
    return contradictions.contradiction(newer, older, older_text, kind) is not None


def _restated_ids(note: Note) -> set[str]:
    """The notes this one only restates."""
    return {link.note_id for link in note.links if link.reason.startswith("restates")}


def _background(term_sets: Sequence[set[str]]) -> set[str]:
    """Terms found in more than half of the neighbours (only meaningful with three or more)."""
    if len(term_sets) < 3:
        return set()
    counts: dict[str, int] = {}
    for found in term_sets:
        for term in found:
            counts[term] = counts.get(term, 0) + 1
    return {term for term, count in counts.items() if count * 2 > len(term_sets)}


def _listing(items: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
