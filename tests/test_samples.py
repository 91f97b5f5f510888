"""The sample account history shipped with amem: it loads, its labels fit their inputs, and each
account exercises what the review-burden bench measures (LABELS.md)."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from amem import samples
from amem.domain.models import NoteInput
from amem.samples import SampleError, SampleLabel, history_files, load_inputs, load_labels, load_samples

TUNED = {
    "globex",
    "initech",
    "soylent",
    "wonka",
    "tyrell",
    "umbrella",
    "oscorp",
    "nakatomi",
    "massive",
    "prestige",
    "duff",
    "sterling",
    "bluth",
}
HELDOUT = {"hooli", "vandelay", "cyberdyne", "waystar", "krusty"}
RECURRING = re.compile(
    r"\b(every|each)\s+(day|week|month|quarter|year|morning|night|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)\b|\bon\s+(mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b|"
    r"\b(weekly|daily|monthly|quarterly)\b",
    re.IGNORECASE,
)
SHIPPED = Path(samples.__file__).parent


def _by_account() -> dict[str, list[tuple[samples.SampleInput, SampleLabel]]]:
    accounts: dict[str, list[tuple[samples.SampleInput, SampleLabel]]] = defaultdict(list)
    for item, label in load_samples():
        accounts[item.scope].append((item, label))
    return accounts


def test_the_shipped_accounts_load_with_one_label_per_input() -> None:
    accounts = {f.name.removesuffix(".jsonl") for f in history_files()}
    assert accounts >= TUNED
    inputs, labels = load_inputs(), load_labels()
    assert len(inputs) == len(labels) >= 150
    assert [i["metadata"]["sample_id"] for i in inputs] == list(labels)
    for line in inputs:  # exactly what add_notes / amem import take
        NoteInput.model_validate(line)
    times = [i["at"] for i in inputs]
    assert times == sorted(times)


def test_every_account_is_in_its_declared_part() -> None:
    assert samples.HELDOUT_ACCOUNTS == HELDOUT  # what tools that must not read them skip
    for account, pairs in _by_account().items():
        parts = {label.part for _, label in pairs}
        assert len(parts) == 1, account
        if account in TUNED:
            assert parts == {"tuned"}
        if account in HELDOUT:
            assert parts == {"heldout"}
        assert 50 <= len(pairs) <= 60, account
        assert all(item.at.year == 2026 and 3 <= item.at.month <= 11 for item, _ in pairs), account
    assert set(load_labels("tuned")) == {
        label.sample_id for pairs in _by_account().values() for _, label in pairs if label.part == "tuned"
    }


def test_every_span_is_an_exact_substring_and_every_reference_an_earlier_input() -> None:
    for account, pairs in _by_account().items():
        earlier: set[str] = set()
        for item, label in pairs:
            spans = [label.reason, label.next_step, *label.customer_priorities, *label.hostile_spans]
            for span in filter(None, spans):
                assert span in item.content, (label.sample_id, span)
            for ref in [*label.invalidates, *filter(None, [label.restates])]:
                assert ref in earlier, (label.sample_id, ref)
                assert ref.startswith(f"{account}-")
            assert label.sample_id not in label.invalidates
            earlier.add(label.sample_id)


def test_each_account_exercises_what_the_bench_measures() -> None:
    undated_recurring: dict[str, int] = defaultdict(int)  # per part: a blind writer may date them all
    for account, pairs in _by_account().items():
        labels = [label for _, label in pairs]
        assert sum(bool(label.decision and label.reason) for label in labels) >= 5, account
        assert any(label.decision and not label.reason for label in labels), account
        assert sum(bool(label.invalidates) for label in labels) >= 4, account
        assert sum(label.restates is not None for label in labels) >= 2, account
        assert sum(label.valid_at is not None for label in labels) >= 8, account
        assert any(label.valid_at and label.valid_at > item.at.date() for item, label in pairs), account
        assert any(label.valid_at and label.valid_at < item.at.date() for item, label in pairs), account
        recurring = [label for item, label in pairs if RECURRING.search(item.content)]
        undated_recurring[labels[0].part] += sum(label.valid_at is None for label in recurring)
        assert 2 <= sum(label.hostile for label in labels) <= 4, account
        assert any(label.category is None for label in labels), account  # noise
        assert any(label.customer_priorities for label in labels), account
        assert any(label.next_step for label in labels), account
        sources = {item.metadata.source for item, _ in pairs}
        assert {"call-notes", "email", "ticket", "crm-agent"} <= sources, account
    assert undated_recurring["tuned"] >= 10 and undated_recurring["heldout"] >= 3, undated_recurring


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "samples"
    (root / "history").mkdir(parents=True)
    (root / "labels").mkdir()
    for name in ("history", "labels"):
        shutil.copy(SHIPPED / name / "globex.jsonl", root / name / "globex.jsonl")
    return root


def _edit_label(root: Path, line: int, **changes: object) -> None:
    path = root / "labels" / "globex.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    rows[line - 1].update(changes)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_a_copy_of_the_shipped_files_loads_from_another_root(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    assert load_labels(root=root) == {k: v for k, v in load_labels().items() if k.startswith("globex-")}


def test_a_folder_given_as_a_string_loads_as_its_path(tmp_path: Path) -> None:
    """A team validating its own accounts from a shell passes the folder as it types it."""
    root = _copy(tmp_path)
    assert load_labels(root=str(root)) == load_labels(root=root)


@pytest.mark.parametrize(
    ("line", "changes", "message"),
    [
        (9, {"reason": "because the discount is large"}, "'because the discount is large' is not an exact"),
        (3, {"invalidates": ["globex-004"]}, "globex-004 is not an earlier input of globex"),
        (3, {"restates": "globex-099"}, "globex-099 is not an earlier input of globex"),
        (3, {"sample_id": "globex-077"}, "the input on that line is globex-003"),
        (3, {"category": "billing"}, "category"),
        (3, {"valid_at": "next March"}, "valid_at"),
        (3, {"hostile": True}, "hostile and hostile_spans disagree"),
        (3, {"part": "heldout"}, "part 'heldout', but globex is a tuned account"),
    ],
)
def test_a_label_that_does_not_fit_its_input_is_refused_with_its_line(
    tmp_path: Path, line: int, changes: dict[str, object], message: str
) -> None:
    root = _copy(tmp_path)
    _edit_label(root, line, **changes)
    with pytest.raises(SampleError, match=re.escape(f"labels/globex.jsonl, line {line}")) as caught:
        load_labels(root=root)
    assert message in str(caught.value)


def test_a_missing_labels_file_is_named(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "labels" / "globex.jsonl").unlink()
    with pytest.raises(SampleError, match=re.escape("no labels file labels/globex.jsonl")):
        load_inputs(root=root)


def test_reviewable_follows_the_conventions() -> None:
    base = {
        "sample_id": "x-001",
        "part": "tuned",
        "category": None,
        "decision": False,
        "reason": None,
        "valid_at": None,
    }
    assert not SampleLabel.model_validate(base).reviewable
    assert not SampleLabel.model_validate({**base, "decision": True}).reviewable  # no reason
    assert SampleLabel.model_validate({**base, "decision": True, "reason": "why"}).reviewable
    assert SampleLabel.model_validate({**base, "valid_at": "2026-03-01"}).reviewable
    assert SampleLabel.model_validate({**base, "category": "contract"}).reviewable
    assert SampleLabel.model_validate({**base, "next_step": "call back"}).reviewable
    assert not SampleLabel.model_validate({**base, "valid_at": "2026-03-01", "restates": "x-000"}).reviewable


def _second(
    root: Path,
    edit: dict[int, dict[str, object]] | None = None,
    drop: int | None = None,
    fields: tuple[str, ...] = samples.SECOND_FIELDS,
) -> None:
    """A second labelling of globex: the first's ``fields`` (default SECOND_FIELDS), with ``edit`` by line."""
    first = (root / "labels" / "globex.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(x) for x in first.splitlines()]
    rows = [{k: r[k] for k in ("sample_id", *fields)} for r in rows]
    for line, changes in (edit or {}).items():
        rows[line - 1].update(changes)
    if drop is not None:
        del rows[drop - 1]
    (root / "labels_b").mkdir(exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (root / "labels_b" / "globex.jsonl").write_text(text, encoding="utf-8")


def test_a_second_labelling_takes_its_fields_over_the_first(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    assert samples.load_second_labels(root=root) == {}
    # a labelling of the fields of the eighteenth session: next steps and priorities are the first's
    older = tuple(f for f in samples.SECOND_FIELDS if f not in ("next_step", "customer_priorities"))
    _second(root, {3: {"category": "meeting", "valid_at": "2026-04-01"}}, fields=older)
    first, second = load_labels(root=root), samples.load_second_labels(root=root)
    assert samples.second_accounts(root=root) == ["globex"]
    assert set(second) == set(first)
    changed = [sid for sid in first if first[sid] != second[sid]]
    assert changed == ["globex-003"]
    assert second["globex-003"].category == "meeting" and str(second["globex-003"].valid_at) == "2026-04-01"
    assert second["globex-003"].next_step == first["globex-003"].next_step  # left out: the first's

    content = json.loads((root / "history" / "globex.jsonl").read_text("utf-8").splitlines()[3])["content"]
    _second(root, {4: {"next_step": None, "customer_priorities": [content[:12]]}})
    again = samples.load_second_labels(root=root)
    assert [sid for sid in first if first[sid] != again[sid]] == ["globex-004"]
    assert again["globex-004"].next_step is None and again["globex-004"].customer_priorities == [content[:12]]


@pytest.mark.parametrize(
    ("edit", "drop", "message"),
    [
        ({9: {"reason": "because it is cheap"}}, None, "labels_b/globex.jsonl, line 9"),
        ({3: {"invalidates": ["globex-004"]}}, None, "globex-004 is not an earlier input of globex"),
        ({3: {"hostile": True}}, None, "labels_b/globex.jsonl, line 3: unknown fields ['hostile']"),
        ({3: {"next_step": "call them back"}}, None, "labels_b/globex.jsonl, line 3"),
        ({3: {"category": "billing"}}, None, "labels_b/globex.jsonl, line 3: category"),
        (None, 5, "labels_b/globex.jsonl has 59 lines but the account has 60 inputs"),
    ],
)
def test_a_second_labelling_that_does_not_fit_is_refused_with_its_line(
    tmp_path: Path, edit: dict[int, dict[str, object]] | None, drop: int | None, message: str
) -> None:
    root = _copy(tmp_path)
    _second(root, edit, drop)
    with pytest.raises(SampleError) as caught:
        samples.load_second_labels(root=root)
    assert message in str(caught.value)


def test_the_probe_accounts_in_bench_load_as_the_sample_does() -> None:
    """bench/probes (fresh writers' accounts, LABELS.md's conventions) stays loadable by
    ``review_burden.py --samples``: spans inside the content, references to earlier inputs."""
    root = Path(__file__).resolve().parents[1] / "bench" / "probes"
    labels = load_labels(root=root)
    inputs = load_inputs(root=root)
    assert len(labels) == len(inputs) >= 1085
    assert {label.part for label in labels.values()} == {"tuned"}
    assert not {label.account for label in labels.values()} & samples.HELDOUT_ACCOUNTS
