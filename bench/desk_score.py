"""The litellm analyst scored from a model's recorded answers, beside the offline analyst (issue 12).

``bench/llm_desk.py`` records a model's answers to the litellm analyst's own prompts, account by
account (each account ingested alone, in add_notes' default batches, as it was answered). This
replays every recorded account through the real litellm path (the ``desk`` provider answering from
the file), and ingests the same accounts, each alone, with the offline analyst, in the same run.
It prints the tuned and held-out parts apart, summed over their accounts, then account by account.

    python bench/desk_score.py                        # every file in bench/desk_answers/
    python bench/desk_score.py --answers DIR --json   # another recording; one JSON object
    python bench/desk_score.py --labels second        # read against the second annotator's labels

The answers in bench/desk_answers/ (and a second reading of the same prompts in
bench/desk_answers/second_reading/) were given on 2026-12-06 by LLM agents (Claude, one agent an
account, each seeing only the prompts, never the labels or the code) acting as the model at a
desk: see bench/README.md, "Review burden", forty-fourth session.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("AMEM_LLM_CONCURRENCY", "64")  # as recorded: a batch's requests at once
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import llm_desk  # noqa: E402
import review_burden  # noqa: E402

from amem.samples import load_labels  # noqa: E402
from amem.samples.scoring import PartScore, columns_table, markdown_table  # noqa: E402

ANSWERS = HERE / "desk_answers"


def summed(part: str, scores: list[PartScore]) -> PartScore:
    """One part's counts added over its accounts (the figures are ratios of the sums)."""
    total = PartScore(part=part)
    for score in scores:
        for f in dataclasses.fields(PartScore):
            if f.name == "part":
                continue
            mine, theirs = getattr(total, f.name), getattr(score, f.name)
            if isinstance(mine, dict):
                setattr(total, f.name, {k: mine.get(k, 0) + theirs.get(k, 0) for k in {**mine, **theirs}})
            else:
                setattr(total, f.name, mine + theirs)
    return total


def score_account(account: str, part: str, llm: str, root: Path, second_labels: bool = False) -> PartScore:
    home = Path(tempfile.mkdtemp(prefix=f"amem-desk-{account}-", dir=root))
    _, per_account, info, _ = review_burden.run(
        home, None, review_burden.DEFAULT_POLICY, (part,), {account}, llm, second_labels
    )
    if info["failed"]:
        raise SystemExit(
            f"{account}: {info['failed']} inputs failed with {llm}: the recording does not cover them"
        )
    return per_account[part][account]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--answers", type=Path, default=ANSWERS, help="a folder of <account>.jsonl recordings"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    parser.add_argument(
        "--labels",
        choices=("first", "second"),
        default="first",
        help="score against the first annotator's labels (default) or the second's (amem/samples/labels_b)",
    )
    args = parser.parse_args()
    parts = {label.account: label.part for label in load_labels().values()}
    files = sorted(args.answers.glob("*.jsonl"))
    unknown = [f.stem for f in files if f.stem not in parts]
    if unknown:
        raise SystemExit(f"{args.answers}: no sample account named {', '.join(unknown)}")
    second = args.labels == "second"
    model: dict[str, dict[str, PartScore]] = {"tuned": {}, "heldout": {}}
    offline: dict[str, dict[str, PartScore]] = {"tuned": {}, "heldout": {}}
    with tempfile.TemporaryDirectory(prefix="amem-desk-score-") as root:
        for file in files:
            account, part = file.stem, parts[file.stem]
            model[part][account] = score_account(
                account, part, llm_desk.install(None, file), Path(root), second
            )
            offline[part][account] = score_account(account, part, "offline", Path(root), second)
    if args.json:
        out: dict[str, Any] = {}
        for part in ("tuned", "heldout"):
            if model[part]:
                out[part] = {
                    "accounts": sorted(model[part]),
                    "model": summed(part, list(model[part].values())).as_json(),
                    "offline": summed(part, list(offline[part].values())).as_json(),
                }
        print(json.dumps(out, indent=1))
        return
    for part in ("tuned", "heldout"):
        if not model[part]:
            continue
        title = "Tuned part" if part == "tuned" else "Held-out part (never tuned on)"
        names = ", ".join(sorted(model[part]))
        print(f"\n## {title}: {names}\n")
        print("The litellm analyst (recorded answers) beside the offline analyst (baseline column):\n")
        print(
            markdown_table(
                summed(f"{part}, model", list(model[part].values())),
                baseline=summed(part, list(offline[part].values())),
            )
        )
        print(f"\n### {title}: account by account, the model's answers\n")
        print(columns_table(model[part]))


if __name__ == "__main__":
    main()
