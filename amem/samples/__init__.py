"""The sample account history shipped with amem, and its labels (see LABELS.md).

Fictional B2B accounts of a SaaS vendor, one input a line in the ``amem import`` format under
``history/``, one label a line under ``labels/``. ``bench/review_burden.py`` scores an analyst's
proposals against them; the ``heldout`` part is never tuned on and is reported apart.

Loading checks the files, so a label that does not fit its input is found at once: every span is
an exact substring of the input's content, every referenced id is an earlier input of the same
account, history and labels line up one to one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from amem.errors import AmemError

Part = Literal["tuned", "heldout"]
#: The held-out accounts: never read while tuning an analyst, reported apart. Named here (and
#: checked against each label's ``part`` on loading) so that a tool which must never read them
#: can skip them before opening a file.
HELDOUT_ACCOUNTS = frozenset({"hooli", "vandelay", "cyberdyne", "waystar", "krusty"})
Category = Literal[
    "pricing",
    "contract",
    "renewal",
    "support issue",
    "meeting",
    "onboarding",
    "feature request",
    "decision",
    "personal",
]
Source = Literal["call-notes", "crm-agent", "email", "ticket", "negotiation", "chat"]


class SampleError(AmemError):
    """A sample file that does not follow LABELS.md; the message names the file and line."""


class SampleMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_id: str = Field(min_length=1)
    source: Source
    author: str = Field(min_length=1)


class SampleInput(BaseModel):
    """One line of ``history/<account>.jsonl``: exactly an ``amem import`` line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = Field(min_length=1)
    scope: str = Field(min_length=1)
    at: datetime
    metadata: SampleMetadata

    @property
    def sample_id(self) -> str:
        return self.metadata.sample_id

    def as_import_line(self) -> dict[str, Any]:
        """The input as ``add_notes`` / ``amem import`` take it."""
        return {
            "content": self.content,
            "scope": self.scope,
            "at": self.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "metadata": self.metadata.model_dump(),
        }


class SampleLabel(BaseModel):
    """What a person reading the input would record (LABELS.md says how each field is chosen)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_id: str = Field(min_length=1)
    part: Part
    category: Category | None
    decision: bool
    reason: str | None
    valid_at: date | None
    invalidates: list[str] = Field(default_factory=list)
    restates: str | None = None
    next_step: str | None = None
    customer_priorities: list[str] = Field(default_factory=list)
    hostile: bool = False
    hostile_spans: list[str] = Field(default_factory=list)

    @property
    def account(self) -> str:
        return self.sample_id.rsplit("-", 1)[0]

    @property
    def reviewable(self) -> bool:
        """Carries a fact a person should look at, and is not a pure restatement."""
        if self.restates is not None:
            return False
        return bool(
            (self.decision and self.reason)
            or self.valid_at
            or self.invalidates
            or self.next_step
            or self.customer_priorities
            or self.category == "contract"
        )


Root = Traversable | Path | str


def _root(root: Root | None) -> Traversable:
    """The folder to read: the shipped sample, or a team's own (a path, or a path's string)."""
    if root is None:
        return resources.files(__name__)
    return Path(root) if isinstance(root, str) else root


def history_files(root: Root | None = None) -> list[Traversable]:
    """The ``history/<account>.jsonl`` files, by account name (the shipped ones unless ``root``)."""
    folder = _root(root).joinpath("history")
    return sorted((f for f in folder.iterdir() if f.name.endswith(".jsonl")), key=lambda f: f.name)


def _lines(file: Traversable, where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise SampleError(f"{where}, line {number}: not JSON ({exc.msg})") from None


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'line'}: {e['msg']}" for e in exc.errors())


def _load_account(root: Traversable, account: str) -> list[tuple[SampleInput, SampleLabel]]:
    """One account's inputs and labels, paired and checked against each other."""
    history_name, labels_name = f"history/{account}.jsonl", f"labels/{account}.jsonl"
    inputs: list[SampleInput] = []
    for number, raw in _lines(root.joinpath("history", f"{account}.jsonl"), history_name):
        try:
            inputs.append(SampleInput.model_validate(raw))
        except ValidationError as exc:
            raise SampleError(f"{history_name}, line {number}: {_problems(exc)}") from None
    labels_file = root.joinpath("labels", f"{account}.jsonl")
    if not labels_file.is_file():
        raise SampleError(f"{history_name} has no labels file {labels_name}")
    labels: list[SampleLabel] = []
    for number, raw in _lines(labels_file, labels_name):
        try:
            labels.append(SampleLabel.model_validate(raw))
        except ValidationError as exc:
            raise SampleError(f"{labels_name}, line {number}: {_problems(exc)}") from None
    if len(inputs) != len(labels):
        raise SampleError(
            f"{history_name} has {len(inputs)} inputs but {labels_name} has {len(labels)} labels"
        )

    _check(history_name, labels_name, account, inputs, labels)
    return list(zip(inputs, labels, strict=True))


def _check(
    history_name: str,
    labels_name: str,
    account: str,
    inputs: list[SampleInput],
    labels: list[SampleLabel],
) -> None:
    """Each label fits its input: same id and order, spans inside the content, references to earlier
    inputs of the account."""
    seen: set[str] = set()
    previous: datetime | None = None
    for number, (item, label) in enumerate(zip(inputs, labels, strict=True), start=1):
        where = f"{labels_name}, line {number} ({label.sample_id})"
        if item.scope != account:
            raise SampleError(f"{history_name}, line {number}: scope {item.scope!r} is not {account!r}")
        if label.sample_id != item.sample_id:
            raise SampleError(f"{where}: the input on that line is {item.sample_id}")
        if label.account != account:
            raise SampleError(f"{where}: the id does not start with {account}-")
        declared = "heldout" if account in HELDOUT_ACCOUNTS else "tuned"
        if label.part != declared:
            raise SampleError(f"{where}: part {label.part!r}, but {account} is a {declared} account")
        if label.sample_id in seen:
            raise SampleError(f"{where}: the id is used twice")
        if previous is not None and item.at < previous:
            raise SampleError(f"{history_name}, line {number}: earlier than the line before (time order)")
        previous = item.at
        spans = [
            ("reason", label.reason),
            ("next_step", label.next_step),
            *(("customer_priorities", s) for s in label.customer_priorities),
            *(("hostile_spans", s) for s in label.hostile_spans),
        ]
        for field, span in spans:
            if span is not None and span not in item.content:
                raise SampleError(f"{where}: {field} {span!r} is not an exact substring of the content")
        if label.reason and not label.decision:
            raise SampleError(f"{where}: a reason without a decision")
        if bool(label.hostile_spans) != label.hostile:
            raise SampleError(f"{where}: hostile and hostile_spans disagree")
        for ref in [*label.invalidates, *([label.restates] if label.restates else [])]:
            if ref not in seen:
                raise SampleError(f"{where}: {ref} is not an earlier input of {account}")
        seen.add(label.sample_id)


def load_account(account: str, *, root: Root | None = None) -> list[tuple[SampleInput, SampleLabel]]:
    """One account's (input, label) pairs, in time order; reads only that account's two files."""
    return _load_account(_root(root), account)


def load_samples(
    part: Part | None = None, *, root: Root | None = None
) -> list[tuple[SampleInput, SampleLabel]]:
    """Every account's (input, label) pairs, merged in time order; only ``part`` when given."""
    accounts = [f.name.removesuffix(".jsonl") for f in history_files(root)]
    pairs = [pair for account in accounts for pair in _load_account(_root(root), account)]
    if part is not None:
        pairs = [pair for pair in pairs if pair[1].part == part]
    return sorted(pairs, key=lambda pair: (pair[0].at, pair[0].sample_id))


def load_inputs(part: Part | None = None, *, root: Root | None = None) -> list[dict[str, Any]]:
    """The inputs as ``amem import`` lines (dicts ``add_notes`` takes), all accounts in time order."""
    return [item.as_import_line() for item, _ in load_samples(part, root=root)]


def load_labels(part: Part | None = None, *, root: Root | None = None) -> dict[str, SampleLabel]:
    """sample_id -> label, for every account (or only ``part``)."""
    return {label.sample_id: label for _, label in load_samples(part, root=root)}


#: The fields a second annotator labelled again (``labels_b/``), independently of the first: the
#: ones the bench's hardest figures (dates, retirements, reasons, categories) are scored on.
SECOND_FIELDS = (
    "category",
    "decision",
    "reason",
    "valid_at",
    "invalidates",
    "restates",
    "next_step",
    "customer_priorities",
)


def second_accounts(root: Root | None = None) -> list[str]:
    """The accounts a second annotator labelled (a file under ``labels_b/``)."""
    folder = _root(root).joinpath("labels_b")
    if not folder.is_dir():
        return []
    return sorted(f.name.removesuffix(".jsonl") for f in folder.iterdir() if f.name.endswith(".jsonl"))


def load_second_labels(root: Root | None = None) -> dict[str, SampleLabel]:
    """sample_id -> the second annotator's label, for the accounts they labelled: their
    ``SECOND_FIELDS`` over the first annotator's other fields (hostile spans, part; a field a
    line leaves out is the first annotator's), checked as the first labels are. Used to measure
    how far two careful people agree (``bench/label_agreement.py``), and to score an analyst
    against either."""
    base = _root(root)
    out: dict[str, SampleLabel] = {}
    for account in second_accounts(root):
        pairs = _load_account(base, account)
        name = f"labels_b/{account}.jsonl"
        rows = list(_lines(base.joinpath("labels_b", f"{account}.jsonl"), name))
        if len(rows) != len(pairs):
            raise SampleError(f"{name} has {len(rows)} lines but the account has {len(pairs)} inputs")
        merged: list[SampleLabel] = []
        for (number, row), (_, first) in zip(rows, pairs, strict=True):
            if row.get("sample_id") != first.sample_id:
                raise SampleError(f"{name}, line {number}: {row.get('sample_id')!r} is not {first.sample_id}")
            unknown = set(row) - {"sample_id", *SECOND_FIELDS}
            if unknown:
                raise SampleError(f"{name}, line {number}: unknown fields {sorted(unknown)}")
            try:
                merged.append(SampleLabel.model_validate({**first.model_dump(), **row}))
            except ValidationError as exc:
                raise SampleError(f"{name}, line {number}: {_problems(exc)}") from None
        _check(f"history/{account}.jsonl", name, account, [item for item, _ in pairs], merged)
        out |= {label.sample_id: label for label in merged}
    return out
