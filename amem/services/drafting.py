"""The drafting step of add_note: the analyst's typed answers become drafts, with no I/O.

One pure function, ``draft``, turns (the raw log, a snapshot of the neighbours as the write
transaction reads them, the two answers, the policy) into the drafts governance routes and
applies. Everything it needs from the ledger is in the ``Snapshot``; every routing question is
asked of the ``Policy``. So it is tested without a database (tests/services/test_drafting.py), and
the pipeline's transaction only reads the snapshot, calls it, and hands the drafts to governance.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from amem.domain.models import ActorKind, Note, Proposer, RawLog, as_utc
from amem.domain.values import current_value, normalize, parse_datetime
from amem.errors import InvalidInputError
from amem.llm.construct_note import ConstructedNote
from amem.llm.link_evolve import Contradiction, LinkEvolveAnswer, unseen
from amem.policy import Policy
from amem.services.answer_checks import check_answer, check_rationale, without_injection
from amem.services.governance import Draft

log = logging.getLogger(__name__)

#: Construct-step attributes proposed for the new note, in this order.
CONSTRUCTED = ("keywords", "tags", "context", "category", "decision_rationale", "valid_at")
#: Attributes the evolution step may propose for neighbours.
EVOLVABLE = ("context", "tags", "keywords", "decision_rationale")
#: Attributes the new note carries from the construct step, besides its tags.
_NOTE_VALUES = ("keywords", "context", "category", "decision_rationale", "valid_at")
#: Labels of the whole text, not facts it states in one place: held for review, they are read
#: against the raw log shown whole, so they need no evidence span (a policy that leaves keywords
#: or category to ``default_mode: review`` would otherwise lose every one).
LABELS = frozenset({"keywords", "tags", "category"})


@dataclass(frozen=True)
class Snapshot:
    """What the drafting step knows of the ledger, read in the write transaction.

    ``neighbours``: the neighbours shown to the analyst that its answer names (links, updates,
    contradictions), as they stand now (deleted ones, and a batch's notes whose analysis failed,
    absent); drafting looks at no other. ``restated``: the note the link step says this raw
    log only restates, if it exists; ``restated_pending``: the attributes it has proposals pending
    for. ``said_at``: when each neighbour's first raw log was said (for contradictions).
    ``shown``: the neighbours as the analyst was shown them (all of them, or at least those it
    evolves), when that may differ from now (another input's analysis, made at the same time,
    changed one since). Every neighbour here and in ``neighbours`` is text the link step read:
    an injection stored in one is checked for like the raw log's own."""

    neighbours: Mapping[str, Note] = field(default_factory=dict)
    restated: Note | None = None
    restated_pending: frozenset[str] = frozenset()
    said_at: Mapping[str, datetime] = field(default_factory=dict)
    shown: Mapping[str, Note] = field(default_factory=dict)


@dataclass(frozen=True)
class Answers:
    """The analyst's two answers about one raw log and who gave each (the model call)."""

    construct: ConstructedNote
    link: LinkEvolveAnswer
    construct_by: Proposer
    link_by: Proposer
    #: Read the rationales and dates again with the offline skills (answer_checks): a remote
    #: model's answers are; the offline analyst's, which are those skills' reading, are not.
    checked: bool = True


def evidence_in(span: str | None, raw_text: str) -> bool:
    """Whether an evidence span is real: non-blank and found, exactly, in the raw log's text."""
    return span is not None and bool(span.strip()) and span.strip() in raw_text


def safe_time(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        return parse_datetime(value)
    except InvalidInputError:
        return None


def fact_time(raw: RawLog, valid_at: datetime | None) -> datetime:
    """When the new note's fact holds from: the valid_at drafting kept (not the model's own, which
    a check may have dropped for lacking evidence), else when it was said."""
    return as_utc(valid_at or raw.occurred_at)


def draft_note(note_id: str, raw: RawLog, construct: ConstructedNote) -> Note:
    """The new note as the analyst sees it for the link step (not written anywhere)."""
    return Note(
        id=note_id,
        scope=raw.scope,
        content=raw.text,
        keywords=list(construct.keywords),
        tags=list(construct.tags),
        context=construct.context,
        category=construct.category,
        decision_rationale=construct.decision_rationale,
        valid_at=safe_time(construct.valid_at),
        raw_log_ids=[raw.id],
        created_at=raw.received_at,
        updated_at=raw.received_at,
    )


def as_applied(note: Note, policy: Policy) -> Note:
    """The draft note as governance will apply it: values the policy holds for review (or freezes)
    are left out, so no other note's analysis, nor the index, sees a value nobody approved."""
    tags = note.tags if policy.applies("tags", note.tags, ActorKind.LLM) else []
    kept: dict[str, Any] = {"tags": tags}
    for attribute in _NOTE_VALUES:
        if not policy.applies(attribute, tags, ActorKind.LLM):
            kept[attribute] = [] if attribute == "keywords" else None
    return note.model_copy(update=kept)


def draft(note_id: str, raw: RawLog, answers: Answers, snapshot: Snapshot, policy: Policy) -> list[Draft]:
    """Every draft one analysed raw log gives: the new note's values, its links, the neighbours'
    evolution and the contradictions the times decide. Values dropped on the way are logged.
    The model's rationale and valid_at are first read again from what it cited (answer_checks):
    what is proposed, and when the new fact holds from, are the checked values."""
    notes: dict[str, str] = {}
    if answers.checked:
        dated = [name for name, attr in policy.declared_attributes().items() if attr.type == "datetime"]
        construct, notes = check_answer(answers.construct, raw, dated)
        answers = replace(answers, construct=construct)
    constructed, valid_at = _construct_drafts(note_id, raw, answers, snapshot, policy, notes)
    return [*constructed, *_link_drafts(note_id, raw, answers, snapshot, policy, valid_at)]


_FILLS = "a restatement gives a value the note it restates lacks"
#: What a restatement says of the fact itself (not of the conversation that repeated it, such as
#: its next step): proposed on the note that states the fact.
_OF_THE_FACT = frozenset({"valid_at", "decision_rationale"})


def _construct_drafts(
    note_id: str, raw: RawLog, answers: Answers, snapshot: Snapshot, policy: Policy, notes: Mapping[str, str]
) -> tuple[list[Draft], datetime | None]:
    """A value the policy holds for a person needs its evidence span in the raw log (else it is
    dropped), a label (``LABELS``) excepted; a restatement does not propose again the held values
    the note it restates carries or has pending, and proposes when the fact took effect and why on
    that note: the fact is that note's, and a reviewer then sees one note for it, not two.
    ``notes``: what the answer check changed, by attribute, said in the proposal's reason.

    Also returns the valid_at these checks kept (None when there was none, or it was dropped):
    the only date the contradictions may take as the new fact's, so a date thrown out here, for
    lacking evidence say, never dates a neighbour's retirement."""
    answer = answers.construct
    tags = list(answer.tags) if policy.applies("tags", answer.tags, ActorKind.LLM) else []
    known = _carried(snapshot.restated, snapshot.restated_pending) if snapshot.restated else set()
    values: list[tuple[str, Any]] = [(a, getattr(answer, a)) for a in CONSTRUCTED]
    declared = policy.declared_attributes()
    for attribute, value in answer.extra.items():
        if attribute not in declared:
            log.warning("raw log %s: dropped undeclared attribute %r", raw.id, attribute)
            continue
        try:  # asked for under a version installed before this one, which typed it otherwise
            normalize(attribute, policy.type_of(attribute), value)
        except (InvalidInputError, KeyError):
            log.warning("raw log %s: dropped %r: not of the type the policy declares", raw.id, attribute)
            continue
        values.append((attribute, value))
    drafts: list[Draft] = []
    kept_valid_at: datetime | None = None
    why = "note construction from the raw log"
    for attribute, value in values:
        if value in (None, "", []):
            continue
        if attribute == "valid_at" and safe_time(value) is None:
            log.warning("raw log %s: dropped unparseable valid_at %r", raw.id, value)
            continue
        if answers.checked and policy.applies(attribute, tags, ActorKind.LLM):
            cleaned = without_injection(value, raw.text, said_at=raw.occurred_at)
            if cleaned != value:
                log.warning("raw log %s: %s: left out what an injection wrote", raw.id, attribute)
                if cleaned is None:
                    continue
                value = cleaned
        span = answer.evidence.get(attribute)
        valid = span if evidence_in(span, raw.text) else None
        held = policy.holds(attribute, tags, ActorKind.LLM)
        if held and valid is None and attribute not in LABELS:
            log.info(
                "raw log %s: dropped %s held for review without evidence in the raw log (%r)",
                raw.id,
                attribute,
                span,
            )
            continue
        if attribute == "valid_at":
            kept_valid_at = safe_time(value)
        if held:
            if snapshot.restated is not None and attribute in known:
                log.info("raw log %s: %s already stated by %s", raw.id, attribute, snapshot.restated.id)
                continue
            if snapshot.restated is not None and attribute in _OF_THE_FACT:
                # the fact is the restated note's: when it took effect and why are proposed there
                restated = snapshot.restated.id
                fills = f"{_FILLS}; {notes[attribute]}" if attribute in notes else _FILLS
                drafts.append(
                    Draft(restated, attribute, value, fills, answers.construct_by, [raw.id], evidence=valid)
                )
                continue
        said = f"{why}; {notes[attribute]}" if attribute in notes else why
        drafts.append(Draft(note_id, attribute, value, said, answers.construct_by, [raw.id], evidence=valid))
    return drafts, kept_valid_at


def _link_drafts(
    note_id: str,
    raw: RawLog,
    answers: Answers,
    snapshot: Snapshot,
    policy: Policy,
    valid_at: datetime | None,
) -> list[Draft]:
    """Links, the neighbours' evolution and the contradictions. ``valid_at``: the new fact's date
    as the construct drafts kept it (else the fact holds from when it was said)."""
    answer, proposer, current = answers.link, answers.link_by, snapshot.neighbours
    read = _read_beside(snapshot)
    drafts: list[Draft] = []
    links = []
    for link in answer.links:
        if link.note_id not in current:
            log.warning("raw log %s: dropped link to unknown note %r", raw.id, link.note_id)
            continue
        if answers.checked and without_injection(link.reason, raw.text, read) is None:
            log.warning("raw log %s: dropped link to %s: injected text in its reason", raw.id, link.note_id)
            continue
        links.append({"note_id": link.note_id, "reason": link.reason})
    if links:
        drafts.append(Draft(note_id, "links", links, "link generation", proposer, [raw.id]))

    # Evolution: neighbours' context / tags / keywords / rationale.
    for update in answer.updates:
        neighbour = current.get(update.note_id)
        if neighbour is None:
            log.warning("raw log %s: dropped update of unknown note %r", raw.id, update.note_id)
            continue
        valid = update.evidence if evidence_in(update.evidence, raw.text) else None
        for attribute in EVOLVABLE:
            value = getattr(update, attribute)
            if value in (None, "", []):
                continue
            cut = check_rationale(value) if attribute == "decision_rationale" and answers.checked else None
            value = cut.value if cut is not None else value
            if answers.checked and policy.applies(
                attribute, neighbour.tags, ActorKind.LLM, category=neighbour.category
            ):
                value = without_injection(value, raw.text, read)
                if value is None:
                    log.warning("raw log %s: dropped %s of %s, injected", raw.id, attribute, neighbour.id)
                    continue
            seen = snapshot.shown.get(neighbour.id)
            if attribute in _TERMS:
                value = with_unseen(value, seen or neighbour, attribute)
            attr_type = policy.type_of(attribute)
            now = current_value(neighbour, attribute, attr_type)
            if normalize(attribute, attr_type, value) == now:
                continue
            if seen is not None and current_value(seen, attribute, attr_type) != now:
                # rewritten from a value that is no longer there: applied, it would drop what the
                # change since added (two inputs analysed at once evolving the same neighbour)
                log.info(
                    "raw log %s: dropped %s of %s: it changed after the analyst read it",
                    raw.id,
                    attribute,
                    neighbour.id,
                )
                continue
            if (
                valid is None
                and attribute not in LABELS
                and policy.holds(attribute, neighbour.tags, ActorKind.LLM, category=neighbour.category)
            ):
                log.info("raw log %s: dropped %s of %s without evidence", raw.id, attribute, neighbour.id)
                continue
            reason = f"memory evolution after {note_id}: {update.reason}"
            if cut is not None and cut.note is not None:
                reason = f"{reason}; {cut.note}"
            drafts.append(Draft(neighbour.id, attribute, value, reason, proposer, [raw.id], evidence=valid))

    # Contradiction: only a newer statement retires an older one; the times decide, not the model.
    # Which statement is newer is when each was said: a fact's own date (valid_at) says when it
    # takes effect, and a later statement may well move a date earlier ("the renewal moves from
    # October 1 to September 15"), so comparing fact dates would make the newer statement retire
    # itself. The input retires its own note only when it was said before the note it
    # contradicts (a late import of an older record, a retry after an outage); that note made it
    # untrue when it was said, even if a note said later has retired that one since. Said at the
    # same time, nobody can tell.
    new_time = fact_time(raw, valid_at)
    new_said = as_utc(raw.occurred_at)
    own: Draft | None = None  # the new note's own retirement: by the first note said after it
    for c in answer.contradictions:
        old = current.get(c.note_id)
        if old is None or c.note_id == note_id:
            continue
        if not evidence_in(c.evidence, raw.text):
            log.info(
                "raw log %s: dropped contradiction of %s without evidence (%r)", raw.id, c.note_id, c.evidence
            )
            continue
        said = snapshot.said_at.get(old.raw_log_ids[0]) if old.raw_log_ids else None
        old_time = as_utc(old.valid_at) if old.valid_at else said
        if old_time is None:
            continue
        old_said = as_utc(said) if said is not None else old_time
        if new_said > old_said:
            if old.invalid_at is not None:
                continue  # retired already
            # the older fact holds until the newer one takes effect, or, when that is no later
            # than the older fact's own date, from when the change was said
            until = new_time if new_time > old_time else new_said
            reason = f"contradicted by newer note {note_id}: {c.reason}"
            drafts.append(Draft(old.id, "invalid_at", until, reason, proposer, [raw.id], evidence=c.evidence))
        elif new_said < old_said:
            until = max(old_time, old_said)
            if own is None or until < own.new_value:
                own = _retired_by_newer(note_id, raw, old, c, until, proposer)
    return [*drafts, own] if own is not None else drafts


def _retired_by_newer(
    note_id: str, raw: RawLog, newer: Note, c: Contradiction, until: datetime, proposer: Proposer
) -> Draft:
    """The input's own note retired by ``newer``, a note said after it (a late import, a retry).
    Its sources are the input's raw log (first: the review item is the record's) and the newer
    note's, so the note that retires it is named in data; its evidence is the newer note's words
    saying otherwise (``newer_evidence``, kept only where found in that note's text, which is its
    raw log's), as a newer input's own words are a contradiction's evidence. An answer that gives
    none (recorded before it was asked for, or a model that left it out) keeps the input's own
    sentence, as amem did before. The reason still names the note, for the history's reader."""
    sources = [raw.id, *(r for r in newer.raw_log_ids[:1] if r != raw.id)]
    evidence = c.newer_evidence if evidence_in(c.newer_evidence, newer.content) else c.evidence
    reason = f"contradicted by newer note {newer.id}: {c.reason}"
    return Draft(note_id, "invalid_at", until, reason, proposer, sources, evidence=evidence)


#: The evolvable lists the link step may show only in part (``link_evolve.SHOWN_TERMS``).
_TERMS = frozenset({"keywords", "tags"})


def with_unseen(given: list[str], shown: Note, attribute: str) -> list[str]:
    """An update's keywords or tags, then those of the note the link step did not show it (in their
    order, unless given): a list replaces the whole value, and a value the model never saw is not
    one it chose to drop. One it was shown and left out is dropped."""
    named = {value.casefold() for value in given}
    return [*given, *(value for value in unseen(shown, attribute) if value.casefold() not in named)]


def _read_beside(snapshot: Snapshot) -> list[str]:
    """The neighbours' texts the link step read beside the raw log (as shown, and as they stand)."""
    notes = [*snapshot.shown.values(), *snapshot.neighbours.values()]
    return list(dict.fromkeys(note.content for note in notes))


def _carried(note: Note, pending: frozenset[str]) -> set[str]:
    """Attributes ``note`` carries a value for, or has a pending proposal for."""
    out = {a for a in ("decision_rationale", "valid_at", "context") if getattr(note, a, None)}
    out |= {name for name, value in note.extra.items() if value not in (None, "", [])}
    return out | set(pending)


def preview(notes: Mapping[str, Note], drafts: Sequence[Draft], policy: Policy) -> dict[str, Note]:
    """The notes ``drafts`` touch as governance will leave them: each draft the policy applies by
    itself, in order, on the note as the drafts before it left it (routing reads the note's tags
    then, as governance does). For the index: which documents a batch changes, embedded before the
    write. A note absent from ``notes`` is skipped."""
    from amem.domain.values import with_value

    out: dict[str, Note] = {}
    for d in drafts:
        note = out.get(d.note_id) or notes.get(d.note_id)
        if note is None or not policy.knows(d.attribute):
            continue
        attr_type = policy.type_of(d.attribute)
        try:
            new = normalize(d.attribute, attr_type, d.new_value)
        except InvalidInputError:
            continue
        if not policy.applies(d.attribute, note.tags, d.proposer.kind, new, category=note.category):
            continue
        if new != current_value(note, d.attribute, attr_type):
            out[d.note_id] = with_value(note, d.attribute, attr_type, new)
    return out
