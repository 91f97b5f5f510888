"""bench/review_burden.py --llm: the litellm analyst is scored on the same labels as the offline one,
through the real litellm path (the scripted provider stands in for a model)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from amem.samples import load_labels

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("review_burden", REPO / "bench" / "review_burden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["review_burden"] = module
    spec.loader.exec_module(module)
    return module


def _every_input_is_pricing(messages: list[dict[str, str]]) -> str:
    if "<neighbours>" in messages[-1]["content"]:
        return json.dumps({"links": [], "updates": [], "contradictions": []})
    return json.dumps(
        {
            "keywords": ["account"],
            "tags": ["account"],
            "context": "A customer conversation.",
            "category": "pricing",
            "decision_rationale": None,
            "valid_at": None,
            "extra": {},
        }
    )


def test_a_litellm_model_is_scored_on_the_same_labels(
    bench: ModuleType, scripted_llm, tmp_path: Path
) -> None:
    scripted_llm.default = _every_input_is_pricing
    _, per_account, info, _ = bench.run(
        tmp_path / "store", None, bench.DEFAULT_POLICY, ("tuned",), {"globex"}, "scripted/judge"
    )
    globex = [label for label in load_labels("tuned").values() if label.account == "globex"]
    assert info["analyst"] == "scripted/judge" and info["inputs"] == len(globex) and info["failed"] == 0
    assert len(scripted_llm.requests) == 2 * len(globex)  # construct and link, for every input
    # The model said "pricing" for everything: category accuracy is the share of pricing labels.
    share = sum(label.category == "pricing" for label in globex) / len(globex)
    assert per_account["tuned"]["globex"].figures["category accuracy"] == pytest.approx(share, abs=0.01)
    assert 0 < share < 1


def test_a_json_run_reads_back_as_the_baseline_of_the_next(bench: ModuleType, tmp_path: Path) -> None:
    """``--json > out.json`` then ``--baseline out.json``: the per-account breakdown the JSON also
    holds is not a count of the part, and must not keep the baseline from loading."""
    saved = {
        "tuned": {
            "part": "tuned",
            "inputs": 10,
            "items": 4,
            "backed_items": 3,
            "figures": {"queue precision (items)": 0.75},
            "accounts": {"globex": {"inputs": 10}},
        }
    }
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(saved), encoding="utf-8")
    baseline = bench._baseline(path)
    assert baseline["tuned"].items == 4 and baseline["tuned"].backed_items == 3
    assert baseline["tuned"].figures["queue precision (items)"] == pytest.approx(0.75)


def test_a_group_is_scored_as_it_reads_beside_the_accounts_ingested_with_it(
    bench: ModuleType, tmp_path: Path
) -> None:
    """``--score-only``: every account named by ``--accounts`` is ingested, only the group is
    scored; its figures are the ones its accounts' columns add up to in that same run."""
    scores, per_account, info, _ = bench.run(
        tmp_path / "store",
        None,
        bench.DEFAULT_POLICY,
        ("tuned",),
        {"globex", "initech", "soylent"},
        score_only={"globex", "soylent"},
    )
    labels = load_labels("tuned")
    ingested = {"globex", "initech", "soylent"}
    assert info["inputs"] == sum(label.account in ingested for label in labels.values())
    assert set(per_account["tuned"]) == {"globex", "soylent"}
    group = scores["tuned"]
    assert group.inputs == sum(label.account in {"globex", "soylent"} for label in labels.values())
    assert group.items == sum(s.items for s in per_account["tuned"].values())
    assert group.backed_items == sum(s.backed_items for s in per_account["tuned"].values())


def test_a_team_scores_its_own_labelled_accounts_instead_of_the_sample(
    bench: ModuleType, tmp_path: Path
) -> None:
    """``--samples DIR``: a folder in the sample's layout is ingested and scored, and nothing of the
    shipped sample is."""
    inputs = [
        ("Acme signed the order form for 50 seats today.", "2026-03-02T10:00:00Z", "contract", None),
        ("Thanks, got it!", "2026-03-03T10:00:00Z", None, None),
        (
            "Acme renewed for two years because the EU region removed their data-residency blocker.",
            "2026-04-01T10:00:00Z",
            "renewal",
            "the EU region removed their data-residency blocker",
        ),
    ]
    (tmp_path / "mine" / "history").mkdir(parents=True)
    (tmp_path / "mine" / "labels").mkdir()
    history, labels = [], []
    for n, (content, at, category, reason) in enumerate(inputs, start=1):
        sid = f"acme-{n:03d}"
        history.append(
            {
                "content": content,
                "scope": "acme",
                "at": at,
                "metadata": {"sample_id": sid, "source": "crm-agent", "author": "a test"},
            }
        )
        labels.append(
            {
                "sample_id": sid,
                "part": "tuned",
                "category": category,
                "decision": reason is not None,
                "reason": reason,
                "valid_at": at[:10] if n == 1 else None,
            }
        )
    for folder, rows in (("history", history), ("labels", labels)):
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (tmp_path / "mine" / folder / "acme.jsonl").write_text(text, encoding="utf-8")

    scores, per_account, info, _ = bench.run(
        tmp_path / "store", None, bench.DEFAULT_POLICY, ("tuned",), root=tmp_path / "mine"
    )
    assert info["inputs"] == 3 and info["failed"] == 0
    assert set(per_account["tuned"]) == {"acme"}
    assert scores["tuned"].inputs == 3 and scores["tuned"].rationales_labelled == 1
    assert scores["tuned"].valid_at_labelled == 1 and scores["tuned"].categorised == 3
