"""bench/label_agreement.py on the shipped labellings: one labelling against itself agrees fully, and
the two shipped ones are compared on every account of both parts, in the analyst's figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import label_agreement

from amem.samples import load_labels, load_second_labels, second_accounts

REPO = Path(__file__).resolve().parents[1]


def test_a_labelling_agrees_fully_with_itself() -> None:
    first = load_labels()
    accounts = {label.account for label in first.values() if label.part == "heldout"}
    figures = label_agreement.agreement(first, first, "heldout", accounts).figures
    assert all(figures[name] in (1.0, None) for name in label_agreement.FIGURES if "unlabelled" not in name)
    assert figures["valid_at on unlabelled inputs"] == 0.0


def test_the_two_shipped_labellings_are_compared_on_every_account() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "label_agreement.py"), "--json"],
        capture_output=True, text=True, check=True, timeout=120,
    )
    result = json.loads(out.stdout)
    assert sorted(a for part in result.values() for a in part["accounts"]) == second_accounts()
    first, second = load_labels(), load_second_labels()
    for part, figures in result.items():
        ids = [sid for sid, label in second.items() if label.part == part]
        same = sum(first[i].category == second[i].category for i in ids)
        # the category figure is the plain agreement on categories, computed the other way
        assert figures["second against first"]["category accuracy"] == same / len(ids)
        assert figures["plain agreement"]["category"].startswith(f"{same} of {len(ids)}")
