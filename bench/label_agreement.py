"""How far two careful annotators of the sample agree, in the review-burden bench's own figures.

``amem/samples/labels/`` is the first annotator's labelling of the sample account history;
``amem/samples/labels_b/`` a second annotator's, made independently (they read LABELS.md and the
history only, never the first labels, the analyst or its figures) for the fields the hardest
figures are scored on: category, decision, reason, valid_at, invalidates, restates, and (since
the forty-fifth session) next_step and customer_priorities. Each annotator's labels are scored
against the other's exactly as the analyst's proposals are (``amem.samples.scoring.as_proposals``
+ ``score_part``), the queue's figures included (the queue each labelling would fill), so the
agreement of two people is the ceiling the analyst's figures can be read against: a target above
it asks the analyst to agree with one annotator more than a second one does.

    python bench/label_agreement.py            # tables: each part, then account by account
    python bench/label_agreement.py --json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from amem.samples import SampleLabel, load_labels, load_second_labels  # noqa: E402
from amem.samples.scoring import PartScore, as_proposals, score_part, target_met  # noqa: E402

#: The figures a labelling decides (the queue's figures depend on the analyst's proposals).
FIGURES = (
    "rationale precision",
    "rationale recall",
    "rationale token F1 (matched)",
    "valid_at exact (labelled)",
    "valid_at on unlabelled inputs",
    "contradiction precision",
    "contradiction recall",
    "category accuracy",
    "items per reviewable input",
    "queue precision (items)",
    "queue precision (proposals)",
)
PARTS = ("tuned", "heldout")


def agreement(
    reference: dict[str, SampleLabel], other: dict[str, SampleLabel], part: str, accounts: set[str]
) -> PartScore:
    """``other``'s labels of ``accounts`` (in ``part``) scored against ``reference``'s."""
    ids = [sid for sid, label in other.items() if label.part == part and label.account in accounts]
    records, categories = as_proposals(other, ids, queue=True)
    return score_part(part, reference, records, categories, [], accounts)


def counts(first: dict[str, SampleLabel], second: dict[str, SampleLabel], ids: list[str]) -> dict[str, str]:
    """Plain agreement on the fields no figure above covers."""
    n = len(ids)
    same = {
        "decision": sum(first[i].decision == second[i].decision for i in ids),
        "restates (same input, or both none)": sum(first[i].restates == second[i].restates for i in ids),
        "category": sum(first[i].category == second[i].category for i in ids),
        "valid_at (same day, or both none)": sum(first[i].valid_at == second[i].valid_at for i in ids),
        "invalidates (same set)": sum(set(first[i].invalidates) == set(second[i].invalidates) for i in ids),
        "next_step (both one, or both none)": sum(
            (first[i].next_step is None) == (second[i].next_step is None) for i in ids
        ),
        "customer_priorities (both some, or both none)": sum(
            bool(first[i].customer_priorities) == bool(second[i].customer_priorities) for i in ids
        ),
    }
    return {name: f"{k} of {n} ({k / n:.2f})" for name, k in same.items()}


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of the tables")
    args = parser.parse_args()
    first, second = load_labels(), load_second_labels()
    if not second:
        parser.exit(1, "no second labelling under amem/samples/labels_b/\n")
    out: dict[str, dict[str, object]] = {}
    for part in PARTS:
        accounts = {label.account for label in second.values() if label.part == part}
        if not accounts:
            continue
        ids = [sid for sid, label in second.items() if label.part == part]
        out[part] = {
            "accounts": sorted(accounts),
            "inputs": len(ids),
            "second against first": agreement(first, second, part, accounts).figures,
            "first against second": agreement(second, first, part, accounts).figures,
            "plain agreement": counts(first, second, ids),
            "by account (second against first)": {
                a: agreement(first, second, part, {a}).figures for a in sorted(accounts)
            },
        }
    if args.json:
        print(json.dumps(out, indent=1))
        return
    for part, result in out.items():
        title = "Tuned part" if part == "tuned" else "Held-out part"
        print(f"\n## {title}: {result['inputs']} inputs of {', '.join(result['accounts'])}\n")  # type: ignore[arg-type]
        b_a, a_b = result["second against first"], result["first against second"]
        print("| figure | second annotator against the first | first against the second | target (analyst) |")
        print("|---|---|---|---|")
        for name in FIGURES:
            met = target_met(name, b_a[name])  # type: ignore[index]
            mark = "" if met is None else (" (meets it)" if met else " (below it)")
            print(f"| {name} | {_fmt(b_a[name])}{mark} | {_fmt(a_b[name])} | {_target(name)} |")  # type: ignore[index]
        print("\nPlain agreement: " + "; ".join(f"{k} {v}" for k, v in result["plain agreement"].items()))  # type: ignore[union-attr]
        per = result["by account (second against first)"]
        names = list(per)  # type: ignore[arg-type]
        print(f"\n### {title}: the second annotator against the first, account by account\n")
        print("| figure | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for name in FIGURES:
            print(f"| {name} | " + " | ".join(_fmt(per[a][name]) for a in names) + " |")  # type: ignore[index]


def _target(name: str) -> str:
    from amem.samples.scoring import TARGETS

    if name not in TARGETS:
        return ""
    op, threshold = TARGETS[name]
    return f"{op} {threshold:g}"


if __name__ == "__main__":
    main()
