"""What the answer checks do to a model's rationales and dates, against the labels (issue 12).

A remote model's held values are read again from what it cited (amem/services/answer_checks.py)
before they are drafted. No remote model runs here, so this bench feeds the checks the answers a
model gives, built from the labels:

- **rationales**, for each labelled reason (restatements left out): the reason exactly (a model
  that did as asked: the check must keep it), the sentences of the raw log holding it (the
  mistake issue 12 names: "the proposed rationale is the whole sentence"), and the whole raw log.
  Each is scored by token F1 against the labelled reason before and after the check.
- **dates**, for each labelled valid_at (restatements left out) that the date skill reads somewhere
  in the raw log: the right day cited by the sentence stating it, then by the whole raw log (the
  check must keep it); the same day a year early and a year late (a tense read wrong: "renew in
  March" said in November put in the March before); a week early and late (a weekday or "in two
  weeks" counted wrong). Labelled days no mention of the skill names are counted apart, with the
  right day cited by the whole raw log (the check must keep it there too).
- **cadences**: inputs labelled undated whose text names a cadence ("every Monday", "weekly"),
  dated by the model to the next day with the cadence's sentence as its evidence: the check should
  drop the date.
- **injections**: a model that obeys an injection and copies each labelled hostile span into a
  value applied by itself (a context): left out? And a model that quotes a sentence of a clean
  input there: kept? (every sentence of every input not labelled hostile)

Each part is reported apart: the tuned sample, the held-out sample, the read probes and the blind
ones (bench/probes/README.md). The rules of the check were written before this bench existed, from
the failure forms issue 12 names; nothing here was tuned on any part.

    python bench/answer_checks.py [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from amem.domain.models import Actor, RawLog  # noqa: E402
from amem.llm.offline import dates  # noqa: E402
from amem.llm.offline.text import sentence_around, sentences  # noqa: E402
from amem.samples import HELDOUT_ACCOUNTS, SampleInput, SampleLabel, history_files, load_account  # noqa: E402
from amem.samples.scoring import token_f1  # noqa: E402
from amem.services.answer_checks import check_rationale, check_valid_at, without_injection  # noqa: E402

PROBES = HERE / "probes"
#: Probe accounts no session has read (bench/probes/README.md): scored only.
BLIND_PROBES = frozenset(
    {"novaterra", "quarrymoor", "castellan", "ashgrove", "sablewood", "fenwick", "kittering"}
    | {"tidewell", "corvane", "brackenridge", "pellham"}
)


def load_part(name: str) -> list[tuple[SampleInput, SampleLabel]]:
    """One part's (input, label) pairs; reads only that part's files."""
    sample = [f.name.removesuffix(".jsonl") for f in history_files()]
    probes = sorted(p.stem for p in (PROBES / "history").glob("*.jsonl"))

    def load(accounts: Iterable[str], root: Path | None = None) -> list[tuple[SampleInput, SampleLabel]]:
        return [pair for a in accounts for pair in load_account(a, root=root)]

    if name == "tuned":
        return load(a for a in sample if a not in HELDOUT_ACCOUNTS)
    if name == "held-out":
        return load(a for a in sample if a in HELDOUT_ACCOUNTS)
    if name == "probes read":
        return load((a for a in probes if a not in BLIND_PROBES), PROBES)
    if name == "probes blind":
        return load((a for a in probes if a in BLIND_PROBES), PROBES)
    raise SystemExit(f"--parts: no part {name!r} (tuned, held-out, probes read, probes blind)")


def raw_log(inp: SampleInput) -> RawLog:
    at = inp.at.astimezone(UTC)
    return RawLog(
        id=inp.sample_id, scope=inp.scope, text=inp.content, actor=Actor.parse("agent:bench"),
        occurred_at=at, received_at=at, sha256=hashlib.sha256(inp.content.encode()).hexdigest(),
    )  # fmt: skip


def _iso(day: Any) -> str:
    return f"{day.isoformat()}T00:00:00+00:00"


def _day(value: str | None) -> Any:
    return None if value is None else datetime.fromisoformat(value).date()


def rationales(pairs: list[tuple[SampleInput, SampleLabel]]) -> dict[str, Any]:
    out: dict[str, Any] = {"labelled": 0}
    for inp, label in pairs:
        if not label.reason or label.restates:
            continue
        out["labelled"] += 1
        text = inp.content
        at = text.find(label.reason)
        holding = [s for s in sentences(text) if s.start <= at + len(label.reason) and s.end >= at]
        given = {
            "exact": label.reason,
            "sentence": text[holding[0].start : holding[-1].end] if holding else label.reason,
            "raw log": text,
        }
        for form, rationale in given.items():
            after = check_rationale(rationale).value
            for when, value in (("before", rationale), ("after", after)):
                f1 = token_f1(value, label.reason)
                key = f"{form} {when}"
                out[f"{key} F1 sum"] = out.get(f"{key} F1 sum", 0.0) + f1
                out[f"{key} F1>=0.8"] = out.get(f"{key} F1>=0.8", 0) + (f1 >= 0.8)
                out[f"{key} F1>=0.5"] = out.get(f"{key} F1>=0.5", 0) + (f1 >= 0.5)
            out[f"{form} changed"] = out.get(f"{form} changed", 0) + (after != rationale)
    return out


def injections(pairs: list[tuple[SampleInput, SampleLabel]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for inp, label in pairs:
        if label.hostile:
            for span in label.hostile_spans:
                out[
                    "hostile span, left out"
                    if without_injection(span, inp.content) is None
                    else "hostile span, applied"
                ] += 1
            continue
        for sentence in sentences(inp.content):
            kept = without_injection(sentence.text, inp.content) is not None
            out["clean sentence, kept" if kept else "clean sentence, left out"] += 1
    return out


def _outcome(checked: str | None, right: Any, given: Any) -> str:
    day = _day(checked)
    if day == right:
        return "right"
    if day is None:
        return "dropped"
    return "kept wrong" if day == given else "changed wrong"


def date_checks(pairs: list[tuple[SampleInput, SampleLabel]]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}

    def count(case: str, outcome: str) -> None:
        out.setdefault(case, Counter())[outcome] += 1

    for inp, label in pairs:
        if label.restates:
            continue
        raw = raw_log(inp)
        if label.valid_at is None:
            cadence = dates.cadence(inp.content)
            if cadence is None:
                continue
            evidence = sentence_around(inp.content, cadence.start(), cadence.end())
            if any(evidence in inp.content[m.start : m.end] or inp.content[m.start : m.end] in evidence
                   for m in dates.mentions(evidence, raw.occurred_at)):  # fmt: skip
                count("cadence, its sentence states a date too", "skipped")
                continue
            given = raw.occurred_at.date() + timedelta(days=1)
            checked = check_valid_at(_iso(given), evidence, raw).value
            count("cadence, undated", "dropped" if checked is None else "kept")
            continue
        right = label.valid_at
        stating = [m for m in dates.mentions(inp.content, raw.occurred_at) if m.when == right]
        if not stating:
            checked = check_valid_at(_iso(right), inp.content, raw).value
            count("right day, no mention names it; cited: raw log", _outcome(checked, right, right))
            continue
        mention = stating[0]
        sentence = sentence_around(inp.content, mention.start, mention.end)
        for cited, evidence in (("its sentence", sentence), ("raw log", inp.content)):
            checked = check_valid_at(_iso(right), evidence, raw).value
            count(f"right day; cited: {cited}", _outcome(checked, right, right))
        wrong = {
            "a year early": _shift_year(right, -1),
            "a year late": _shift_year(right, 1),
            "a week early": right - timedelta(days=7),
            "a week late": right + timedelta(days=7),
        }
        for mistake, given in wrong.items():
            if given is None:
                continue
            relative = "" if mention.absolute else " (relative mention)"
            checked = check_valid_at(_iso(given), sentence, raw).value
            count(f"{mistake}{relative}; cited: its sentence", _outcome(checked, right, given))
    return out


def _shift_year(day: Any, years: int) -> Any:
    try:
        return day.replace(year=day.year + years)
    except ValueError:  # 29 February
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    parser.add_argument(
        "--parts",
        default="tuned,probes read,held-out,probes blind",
        help="comma-separated parts to score (default all; work on 'tuned,probes read' only)",
    )
    args = parser.parse_args()
    wanted = [p.strip() for p in args.parts.split(",")]
    results = {}
    for name in wanted:
        pairs = load_part(name)
        results[name] = (rationales(pairs), date_checks(pairs), len(pairs), injections(pairs))
    if args.json:
        print(
            json.dumps(
                {
                    n: {"inputs": k, "rationales": r, "dates": d, "injections": i}
                    for n, (r, d, k, i) in results.items()
                }
            )
        )
        return
    names = list(results)
    print("## Rationales: token F1 with the labelled reason, before -> after the check\n")
    print("| model's rationale | " + " | ".join(f"{n} ({results[n][0]['labelled']})" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for form in ("exact", "sentence", "raw log"):
        for figure in ("F1>=0.8", "F1>=0.5"):
            cells = [
                f"{results[n][0][f'{form} before {figure}']} -> {results[n][0][f'{form} after {figure}']}"
                for n in names
            ]
            print(f"| {form}, {figure} | " + " | ".join(cells) + " |")
        cells = [
            f"{results[n][0][f'{form} before F1 sum'] / max(1, results[n][0]['labelled']):.3f} -> "
            f"{results[n][0][f'{form} after F1 sum'] / max(1, results[n][0]['labelled']):.3f}"
            for n in names
        ]
        print(f"| {form}, mean F1 | " + " | ".join(cells) + " |")
        changed = [str(results[n][0][f"{form} changed"]) for n in names]
        print(f"| {form}, changed | " + " | ".join(changed) + " |")
    print("\n## Dates: what the check proposes for a model's valid_at\n")
    cases = sorted({c for n in names for c in results[n][1]})
    print("| model's valid_at | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for case in cases:
        cells = []
        for n in names:
            counts = results[n][1].get(case, Counter())
            cells.append(", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-")
        print(f"| {case} | " + " | ".join(cells) + " |")
    print("\n## Injections: a value applied by itself, as the model gave it\n")
    print("| model's context | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for case in (
        "hostile span, left out",
        "hostile span, applied",
        "clean sentence, kept",
        "clean sentence, left out",
    ):
        print(f"| {case} | " + " | ".join(str(results[n][3].get(case, 0)) for n in names) + " |")


if __name__ == "__main__":
    main()
