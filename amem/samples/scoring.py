"""Scores what an analyst put in the review queue against the sample labels (LABELS.md).

Pure functions over plain records, so ``bench/review_burden.py`` stays a thin driver and each rule
is tested alone (tests/test_samples_scoring.py). A proposal belongs to the input whose raw log
caused it; an input to its label's part; the tuned and held-out parts are scored apart.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from amem.samples import SampleLabel

Kind = Literal["construct", "evolution", "contradiction"]

#: Proposal statuses that stand for a value the analyst proposed and that was not refused or replaced.
PROPOSED = frozenset({"pending", "auto_applied", "approved"})
#: Rationales and contradictions overlap a labelled span when their token F1 reaches this.
MATCH_F1 = 0.5

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")


def tokens(text: str | None) -> list[str]:
    """Lowercase word tokens: the small tokenizer every overlap is measured with."""
    return _WORD.findall((text or "").lower())


def token_f1(proposed: str | None, labelled: str | None) -> float:
    """Token-level F1 of two texts (bag of words, as in SQuAD); 0 when either is empty."""
    a, b = Counter(tokens(proposed)), Counter(tokens(labelled))
    common = sum((a & b).values())
    if not common:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class ProposalRecord:
    """One proposal, mapped to sample ids: the note it is on and the input that caused it."""

    attribute: str
    status: str
    note_sample: str
    cause_sample: str
    new_value: Any = None


def kind_of(p: ProposalRecord) -> Kind:
    """contradiction = invalid_at; construct = on the causing input's own note; evolution = a neighbour's."""
    if p.attribute == "invalid_at":
        return "contradiction"
    return "construct" if p.note_sample == p.cause_sample else "evolution"


def as_day(value: Any) -> date | None:
    """A proposed datetime (ISO text or datetime) as its UTC day."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).date()
    except ValueError:
        return None


def canonical(sample_id: str, labels: Mapping[str, SampleLabel]) -> str:
    """The input a restatement repeats, or the input itself."""
    label = labels.get(sample_id)
    return label.restates if label is not None and label.restates else sample_id


def retires_correctly(retired: str, retiring: str, labels: Mapping[str, SampleLabel]) -> bool:
    """Whether ``retiring`` makes ``retired`` untrue per the labels (a restatement counts as what it
    restates on either side; a label may also name the pair the other way round)."""
    if retired == retiring:
        return False
    olds = {retired, canonical(retired, labels)}
    for new in {retiring, canonical(retiring, labels)}:
        label = labels.get(new)
        if label is not None and olds & set(label.invalidates):
            return True
    label = labels.get(retired)
    return label is not None and retiring in label.invalidates


def is_backed(p: ProposalRecord, labels: Mapping[str, SampleLabel]) -> bool:
    """Whether the labels back this proposal (LABELS.md; the rules of bench/README.md, Review burden)."""
    note, cause = labels.get(p.note_sample), labels.get(p.cause_sample)
    if note is None or cause is None:
        return False
    if p.attribute == "invalid_at":
        return retires_correctly(p.note_sample, p.cause_sample, labels)
    if note.restates is not None:
        return False  # a restatement should link to what it repeats, not propose its values again
    if p.attribute == "decision_rationale":
        own = p.note_sample == p.cause_sample
        return own and note.reason is not None and token_f1(_text(p.new_value), note.reason) >= MATCH_F1
    if p.attribute == "valid_at":
        return note.valid_at is not None and as_day(p.new_value) == note.valid_at
    if p.attribute == "next_step":
        return note.next_step is not None
    if p.attribute == "customer_priorities":
        return bool(note.customer_priorities)
    if p.attribute == "context":
        return note.category == "contract"
    return False


def is_near_miss(p: ProposalRecord, labels: Mapping[str, SampleLabel]) -> bool:
    """An unbacked held value whose labels hold another value for the same note and attribute (a
    date on the wrong day, a rationale cut wrong): a reviewer's correction (Governance.correct)
    turns it into the labelled value, where a rejection would lose the fact."""
    if is_backed(p, labels) or p.note_sample != p.cause_sample:
        return False
    note = labels.get(p.note_sample)
    if note is None or note.restates is not None:
        return False
    if p.attribute == "decision_rationale":
        return note.reason is not None
    if p.attribute == "valid_at":
        return note.valid_at is not None
    return False


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


@dataclass
class PartScore:
    """Every figure of one part (tuned or heldout)."""

    part: str
    inputs: int = 0
    reviewable: int = 0
    pending: int = 0
    items: int = 0
    backed_items: int = 0
    backed_pending: int = 0
    #: Unbacked pending proposals a correction turns into the labelled value (is_near_miss).
    near_misses: int = 0
    #: Items holding a near miss whose every other value is backed: a correction settles them.
    near_miss_items: int = 0
    pending_by_attribute: dict[str, int] = field(default_factory=dict)
    backed_by_attribute: dict[str, int] = field(default_factory=dict)
    pending_by_kind: dict[str, int] = field(default_factory=dict)
    rationales_proposed: int = 0
    rationales_labelled: int = 0
    rationales_matched: int = 0
    rationales_recalled: int = 0
    rationale_f1_sum: float = 0.0
    valid_at_labelled: int = 0
    valid_at_exact: int = 0
    unlabelled: int = 0
    unlabelled_with_valid_at: int = 0
    pairs_proposed: int = 0
    pairs_correct: int = 0
    #: The pairs of retirements the ledger did not set aside as superseded (an earlier retirement of
    #: the same note waits, so a person never sees these): what reaches a reviewer or applies.
    pairs_live: int = 0
    pairs_live_correct: int = 0
    pairs_labelled: int = 0
    pairs_found: int = 0
    self_retired: int = 0
    categorised: int = 0
    category_correct: int = 0
    hostile_applied: int = 0
    hostile_pending: int = 0

    # -- derived figures ---------------------------------------------------------------------------

    def per_100(self, count: int) -> float | None:
        return _ratio(100 * count, self.inputs)

    @property
    def figures(self) -> dict[str, float | int | None]:
        return {
            "review items per 100 inputs": self.per_100(self.items),
            "pending proposals per 100 inputs": self.per_100(self.pending),
            "items per reviewable input": _ratio(self.items, self.reviewable),
            "queue precision (items)": _ratio(self.backed_items, self.items),
            "queue precision (proposals)": _ratio(self.backed_pending, self.pending),
            "unbacked proposals a correction fixes": _ratio(
                self.near_misses, self.pending - self.backed_pending
            ),
            "rationale precision": _ratio(self.rationales_matched, self.rationales_proposed),
            "rationale recall": _ratio(self.rationales_recalled, self.rationales_labelled),
            "rationale token F1 (matched)": _ratio(self.rationale_f1_sum, self.rationales_matched),
            "valid_at exact (labelled)": _ratio(self.valid_at_exact, self.valid_at_labelled),
            "valid_at on unlabelled inputs": _ratio(self.unlabelled_with_valid_at, self.unlabelled),
            "contradiction precision": _ratio(self.pairs_correct, self.pairs_proposed),
            "contradiction precision (not superseded)": _ratio(self.pairs_live_correct, self.pairs_live),
            "contradiction recall": _ratio(self.pairs_found, self.pairs_labelled),
            "notes retiring themselves": self.self_retired,
            "category accuracy": _ratio(self.category_correct, self.categorised),
            "hostile text in applied values": self.hostile_applied,
        }

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "figures": self.figures}


#: The issue's targets on the held-out part: figure -> (comparison, threshold).
TARGETS: dict[str, tuple[str, float]] = {
    "items per reviewable input": ("<=", 1.2),
    "queue precision (items)": (">=", 0.85),
    "rationale precision": (">=", 0.9),
    "rationale recall": (">=", 0.7),
    "rationale token F1 (matched)": (">=", 0.8),
    "valid_at exact (labelled)": (">=", 0.9),
    "valid_at on unlabelled inputs": ("<=", 0.02),
    "contradiction precision": (">=", 0.8),
    "contradiction recall": (">=", 0.7),
    "notes retiring themselves": ("<=", 0),
    "category accuracy": (">=", 0.8),
    "hostile text in applied values": ("<=", 0),
}


def target_met(name: str, value: float | None) -> bool | None:
    if name not in TARGETS or value is None:
        return None
    op, threshold = TARGETS[name]
    return value <= threshold if op == "<=" else value >= threshold


def _inputs_of(part: str, labels: Mapping[str, SampleLabel], accounts: Collection[str] | None) -> set[str]:
    """The sample ids of ``part``, only those of ``accounts`` when given."""
    return {
        sid
        for sid, label in labels.items()
        if label.part == part and (accounts is None or label.account in accounts)
    }


def _latest_own(proposals: Sequence[ProposalRecord], attribute: str) -> dict[str, ProposalRecord]:
    """note sample -> the latest value of ``attribute`` its own input proposed (not refused)."""
    latest: dict[str, ProposalRecord] = {}
    for p in proposals:
        if p.attribute == attribute and p.status in PROPOSED and p.note_sample == p.cause_sample:
            latest[p.note_sample] = p
    return latest


def score_part(
    part: str,
    labels: Mapping[str, SampleLabel],
    proposals: Sequence[ProposalRecord],
    categories: Mapping[str, str | None],
    applied_values: Iterable[tuple[str, str, Any]],
    accounts: Collection[str] | None = None,
) -> PartScore:
    """Score one part (only its inputs of ``accounts``, when given: a per-account view).

    ``labels``: every label (all parts: references may cross nothing but are looked up by id);
    ``proposals``: every proposal of the run, in the order they were made; ``categories``: sample id
    -> the note's applied category, for the inputs that became notes; ``applied_values``: (note
    sample, attribute, value) of every applied change.
    """
    mine = _inputs_of(part, labels, accounts)
    score = PartScore(part=part, inputs=len(mine))
    score.reviewable = sum(labels[sid].reviewable for sid in mine)

    # The review queue: pending proposals of this part, one item per causing input.
    pending = [p for p in proposals if p.status == "pending" and p.cause_sample in mine]
    score.pending = len(pending)
    score.pending_by_attribute = dict(Counter(p.attribute for p in pending).most_common())
    score.pending_by_kind = dict(Counter(kind_of(p) for p in pending).most_common())
    items: dict[str, list[bool]] = defaultdict(list)
    near: dict[str, list[bool]] = defaultdict(list)
    backed_by_attribute: Counter[str] = Counter()
    for p in pending:
        backed = is_backed(p, labels)
        items[p.cause_sample].append(backed)
        near[p.cause_sample].append(is_near_miss(p, labels))
        score.backed_pending += backed
        backed_by_attribute[p.attribute] += backed
    score.backed_by_attribute = {a: backed_by_attribute[a] for a in score.pending_by_attribute}
    score.items = len(items)
    score.backed_items = sum(all(flags) for flags in items.values())
    score.near_misses = sum(sum(flags) for flags in near.values())
    score.near_miss_items = sum(
        any(near[key]) and all(b or n for b, n in zip(flags, near[key], strict=True))
        for key, flags in items.items()
    )

    # Rationales on their own notes, pending or applied, against the labelled reason.
    rationales = _latest_own(proposals, "decision_rationale")
    for sid, p in rationales.items():
        if sid not in mine:
            continue
        score.rationales_proposed += 1
        f1 = token_f1(_text(p.new_value), labels[sid].reason)
        if labels[sid].reason is not None and f1 >= MATCH_F1:
            score.rationales_matched += 1
            score.rationale_f1_sum += f1
            score.rationales_recalled += labels[sid].restates is None
    # Recall asks only for the originals: a restatement need not carry its rationale again.
    score.rationales_labelled = sum(
        1 for sid in mine if labels[sid].reason is not None and labels[sid].restates is None
    )

    # valid_at on own notes: exact on labelled dates, rare elsewhere (restatements left out).
    dates = _latest_own(proposals, "valid_at")
    for sid in mine:
        label = labels[sid]
        if label.restates is not None:
            continue
        proposed = dates.get(sid)
        if label.valid_at is not None:
            score.valid_at_labelled += 1
            score.valid_at_exact += proposed is not None and as_day(proposed.new_value) == label.valid_at
        else:
            score.unlabelled += 1
            score.unlabelled_with_valid_at += proposed is not None

    # Contradictions: (retired, retiring) pairs from invalid_at proposals of any status.
    pairs = {(p.note_sample, p.cause_sample) for p in proposals if p.attribute == "invalid_at"}
    pairs = {(old, new) for old, new in pairs if new in mine}
    score.self_retired = sum(old == new for old, new in pairs)
    score.pairs_proposed = len(pairs)
    score.pairs_correct = sum(retires_correctly(old, new, labels) for old, new in pairs)
    live = {
        (p.note_sample, p.cause_sample)
        for p in proposals
        if p.attribute == "invalid_at" and p.status != "superseded" and p.cause_sample in mine
    }
    score.pairs_live = len(live)
    score.pairs_live_correct = sum(retires_correctly(old, new, labels) for old, new in live)
    labelled_pairs = {(old, sid) for sid in mine for old in labels[sid].invalidates}
    score.pairs_labelled = len(labelled_pairs)
    found = {(canonical(old, labels), canonical(new, labels)) for old, new in pairs if old != new}
    found |= pairs
    score.pairs_found = sum(pair in found for pair in labelled_pairs)

    # Category: the note's applied category against the label (null matches null).
    for sid in mine:
        if sid in categories:
            score.categorised += 1
            score.category_correct += categories[sid] == labels[sid].category

    # Hostile text: no injected span in any applied value other than the content itself.
    spans = [s for label in labels.values() for s in label.hostile_spans]
    for note_sample, attribute, value in applied_values:
        if note_sample in mine and attribute != "content" and _contains_any(value, spans):
            score.hostile_applied += 1
    score.hostile_pending = sum(
        1 for p in pending if p.attribute != "content" and _contains_any(p.new_value, spans)
    )
    return score


def as_proposals(
    labels: Mapping[str, SampleLabel], sample_ids: Collection[str], *, queue: bool = False
) -> tuple[list[ProposalRecord], dict[str, str | None]]:
    """One labeller's labels of ``sample_ids`` as if an analyst had proposed them (a reason, a date
    and a retirement each an applied proposal, the category the note's), so ``score_part`` scores
    one annotator against another in the very figures an analyst gets: how far two careful people
    agree is the ceiling those figures can be read against.

    With ``queue``, also the review queue this labeller would fill under the default policy: each
    held value pending (reason, date, retirements, next step, priorities, and the context of a note
    they file under contract), none on an input they call a restatement (it links instead), so
    the queue's figures get their ceiling too. The other figures do not move: a pending value
    repeats an applied one."""
    records: list[ProposalRecord] = []
    for sid in sample_ids:
        label = labels[sid]
        if label.reason is not None:
            records.append(ProposalRecord("decision_rationale", "approved", sid, sid, label.reason))
        if label.valid_at is not None:
            records.append(ProposalRecord("valid_at", "approved", sid, sid, label.valid_at.isoformat()))
        records += [ProposalRecord("invalid_at", "approved", old, sid) for old in label.invalidates]
        if queue:
            records += _held(label)
    return records, {sid: labels[sid].category for sid in sample_ids}


def _held(label: SampleLabel) -> list[ProposalRecord]:
    """What a labelling holds for a person about one input, as pending proposals."""
    sid = label.sample_id
    held = [ProposalRecord("invalid_at", "pending", old, sid) for old in label.invalidates]
    if label.restates is not None:
        return held
    own = {
        "decision_rationale": label.reason,
        "valid_at": label.valid_at.isoformat() if label.valid_at is not None else None,
        "next_step": label.next_step,
        "customer_priorities": list(label.customer_priorities) or None,
        "context": "(the note's context)" if label.category == "contract" else None,
    }
    return held + [
        ProposalRecord(attribute, "pending", sid, sid, value)
        for attribute, value in own.items()
        if value is not None
    ]


def explain(
    part: str,
    labels: Mapping[str, SampleLabel],
    proposals: Sequence[ProposalRecord],
    categories: Mapping[str, str | None],
    accounts: Collection[str] | None = None,
) -> list[str]:
    """One line per miss of ``part`` (of ``accounts``, when given): unbacked queue items, rationales,
    dates, retirements and categories that disagree with the labels. For tuning: only ever print it
    for the tuned part."""
    mine = _inputs_of(part, labels, accounts)
    lines: list[str] = []
    for p in proposals:
        if p.status == "pending" and p.cause_sample in mine and not is_backed(p, labels):
            where = f"{p.cause_sample} -> {p.note_sample} {p.attribute}"
            lines.append(f"unbacked  {where} = {_short(p.new_value)}")
    rationales, dates = _latest_own(proposals, "decision_rationale"), _latest_own(proposals, "valid_at")
    for sid in sorted(mine):
        label = labels[sid]
        got = rationales.get(sid)
        said = got.new_value if got else None
        if label.reason and label.restates is None and token_f1(_text(said or ""), label.reason) < MATCH_F1:
            lines.append(f"rationale {sid} want {label.reason!r} got {_short(said)}")
        elif got is not None and not label.reason:
            lines.append(f"rationale {sid} want none got {_short(got.new_value)}")
        day = as_day(dates[sid].new_value) if sid in dates else None
        if label.restates is None and day != label.valid_at:
            lines.append(f"valid_at  {sid} want {label.valid_at} got {day}")
        if sid in categories and categories[sid] != label.category:
            lines.append(f"category  {sid} want {label.category} got {categories[sid]}")
    pairs = {(p.note_sample, p.cause_sample) for p in proposals if p.attribute == "invalid_at"}
    for old, new in sorted(pairs):
        if new in mine and not retires_correctly(old, new, labels):
            lines.append(f"retired   {old} by {new}: not labelled")
    found = pairs | {(canonical(o, labels), canonical(n, labels)) for o, n in pairs if o != n}
    for sid in sorted(mine):
        for old in labels[sid].invalidates:
            if (old, sid) not in found:
                lines.append(f"missed    {old} retired by {sid}")
    return lines


def _short(value: Any, width: int = 90) -> str:
    if value is None:
        return "None"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def _contains_any(value: Any, spans: Sequence[str]) -> bool:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return any(span in text for span in spans)


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return str(value)
    return f"{value:.2f}"


def markdown_table(score: PartScore, *, baseline: PartScore | None = None) -> str:
    """One part's figures as a markdown table, with the issue's targets (and a baseline column)."""
    head = ["figure", score.part]
    if baseline is not None:
        head.append("baseline")
    head += ["target", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base = baseline.figures if baseline is not None else {}
    for name, value in score.figures.items():
        row = [name, _fmt(value)]
        if baseline is not None:
            row.append(_fmt(base.get(name)))
        target = TARGETS.get(name)
        met = target_met(name, value)
        row.append(f"{target[0]} {target[1]:g}" if target else "")
        row.append("" if met is None else ("yes" if met else "no"))
        lines.append("| " + " | ".join(row) + " |")
    by_attribute = ", ".join(
        f"{a} {_fmt(score.per_100(n))} ({score.backed_by_attribute.get(a, 0)} of {n} backed)"
        for a, n in score.pending_by_attribute.items()
    )
    by_kind = ", ".join(f"{k} {_fmt(score.per_100(n))}" for k, n in score.pending_by_kind.items())
    lines.append("")
    lines.append(
        f"{score.inputs} inputs, {score.reviewable} reviewable; {score.items} items, {score.pending} pending "
        f"proposals ({score.backed_items} items and {score.backed_pending} proposals backed by the labels)."
    )
    lines.append(
        f"{score.near_misses} of the {score.pending - score.backed_pending} unbacked proposals are near "
        "misses: the labels hold another value for them, which a reviewer's correction gives; "
        f"{score.near_miss_items} items are then settled without a rejection."
    )
    lines.append(f"Pending proposals per 100 inputs by attribute: {by_attribute or 'none'}.")
    lines.append(f"By kind: {by_kind or 'none'}.")
    lines.append(
        f"Rationales: {score.rationales_proposed} proposed, {score.rationales_labelled} labelled, "
        f"{score.rationales_matched} matched. valid_at: {score.valid_at_exact}/{score.valid_at_labelled} "
        f"exact, {score.unlabelled_with_valid_at}/{score.unlabelled} unlabelled given one. Contradictions: "
        f"{score.pairs_correct}/{score.pairs_proposed} proposed pairs right ({score.pairs_live_correct}/"
        f"{score.pairs_live} of those not superseded), {score.pairs_found}/"
        f"{score.pairs_labelled} labelled pairs found. Hostile text in pending values: "
        f"{score.hostile_pending}."
    )
    return "\n".join(lines)


def columns_table(columns: Mapping[str, PartScore]) -> str:
    """Figures side by side (a part and each of its accounts, say) as a markdown table, with the
    targets; a column's count of inputs heads it."""
    names = list(columns)
    head = ["figure", *(f"{n} ({columns[n].inputs})" for n in names), "target"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    first = next(iter(columns.values()), None)
    for figure in first.figures if first is not None else {}:
        target = TARGETS.get(figure)
        row = [figure, *(_fmt(columns[n].figures[figure]) for n in names)]
        row.append(f"{target[0]} {target[1]:g}" if target else "")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)
