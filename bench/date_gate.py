"""Can a learned gate on the offline analyst's dates cut the unbacked valid_at items? (issue 12)

The dominant unbacked review item on the writers the rules were not written from is a valid_at:
on duff and prestige 21 of 33 unbacked items are a valid_at alone. This script asks whether a
classifier over the date the rules chose (its form, tense, offset from the raw log's time, its
sentence's shape, the input's shape and category; optionally the MiniLM embedding of its sentence
with the date masked) can tell a right date from a wrong one on an account it was not trained on.
It reads the tuned accounts only (never a held-out one), runs the analyst's own date step on each
input (``dates.valid_at`` with the decision and reason spans the analyst passes), and scores a
logistic regression leave-one-account-out. A date is "right" when it is the labelled day of an
input that restates nothing (the bench's rule for a backed valid_at).

The bar for shipping it (set after a first prototype of this script, on the same accounts, had
shown AUC about 0.7): on duff and prestige (no rule and no gate ever fitted to them), some
threshold removes at least half of the wrong dates while keeping at least 0.9 of the right ones.
No row does (bench/README.md, "Review burden", tenth session), so the analyst keeps the rules and
no weights ship.

    python bench/date_gate.py                 # hand features, LOAO table
    python bench/date_gate.py --embeddings    # also with the MiniLM sentence embedding
    python bench/date_gate.py --feedback 10   # also learning from the account's own reviewer

Needs scikit-learn (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from amem.domain.models import as_utc  # noqa: E402
from amem.llm.offline import categories, dates, reasons  # noqa: E402
from amem.llm.offline.text import readable, sentences  # noqa: E402
from amem.samples import HELDOUT_ACCOUNTS, history_files, load_account  # noqa: E402

HELDOUT = HELDOUT_ACCOUNTS  # never read here
TUNED = tuple(n for n in (f.name.removesuffix(".jsonl") for f in history_files()) if n not in HELDOUT)
#: Writers no rule was fitted to (round 5's validation pair), and round 5's own pair.
UNSEEN, ROUND5 = ("duff", "prestige"), ("massive", "nakatomi")
_CUES = re.compile(
    r"\b(?:effective|starting|starts?|go-?live|renew\w*|sign\w*|launch\w*|kick-?off|moved?|pushed|"
    r"deadline|due|expires?|ends?|cancel\w*|cutover|deploy\w*|fixed|resolved|ship\w*)\b",
    re.IGNORECASE,
)
_INTENT = re.compile(r"\b(?:will|'ll|going to|plan\w* to|want\w* to|hope\w* to)\b", re.IGNORECASE)


@dataclass
class Candidate:
    account: str
    features: dict[str, float]
    sentence: str  # the date's sentence, the date masked
    right: bool


def _form(span: str) -> str:
    return next((name for name, pattern in dates._FORMS if pattern.match(span)), "other")


def candidate(content: str, at, account: str, label) -> Candidate | None:
    """The analyst's date for one input (as ``construct_data`` finds it) and its features."""
    text = readable(content)
    found = sentences(text)
    why = reasons.reason(found, text)
    decision = next((s for s in found if reasons.decided(s.text)), None)
    lead = decision.text if decision is not None else (found[0].text if found else "")
    category = categories.category(text, lead, (why.start, why.end) if why is not None else None)
    if categories.chat(text):
        return None
    main = (decision.start, decision.end) if decision is not None else None
    m = dates.valid_at(text, at, [(why.start, why.end)] if why is not None else [], main)
    if m is None:
        return None
    offset = (m.when - as_utc(at).date()).days
    sentence = next((s.text for s in found if s.start <= m.start < s.end), "")
    first_break = text.find("\n")
    f: dict[str, float] = {
        f"form={_form(m.text)}": 1,
        f"tense={dates._tense(text, m.start, m.end)}": 1,
        f"category={category}": 1,
        "starts": m.starts,
        "target": m.target,
        "absolute": m.absolute,
        "future": offset > 0,
        "past": offset < 0,
        "same_day": offset == 0,
        "log_offset": math.log1p(abs(offset)) / 6,
        "in_decision": bool(main and main[0] <= m.start and m.end <= main[1]),
        "has_decision": decision is not None,
        "has_reason": why is not None,
        "first_line": first_break == -1 or m.start < first_break,
        "position": m.start / max(1, len(text)),
        "mentions": min(len(dates.mentions(text, at)), 6) / 6,
        "ticket": bool(re.search(r"\A\W*(?:ticket|case|incident)\b|\b(?:priority|severity)\s*:", text, re.I)),
        "email": bool(re.search(r"^\W*subject\s*:", text, re.I | re.M)),
        "chat_lines": len(re.findall(r"^[A-Z][\w .'-]{1,30}:", text, re.M)) >= 2,
        "lines": min(text.count("\n"), 20) / 20,
        "length": math.log(len(text) + 1) / 8,
        "sentence_cue": bool(_CUES.search(sentence)),
        "sentence_intent": bool(_INTENT.search(sentence)),
        "sentence_question": "?" in sentence,
        "sentence_length": min(len(sentence), 400) / 400,
    }
    right = label.valid_at == m.when and label.restates is None
    return Candidate(account, {k: float(v) for k, v in f.items()}, sentence.replace(m.text, "DATE"), right)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embeddings", action="store_true", help="also the MiniLM embedding of the sentence")
    parser.add_argument(
        "--feedback",
        type=float,
        default=0.0,
        metavar="W",
        help="also learn from the reviewer's verdicts on the account's earlier dates, each weighing W "
        "(a reviewer who approves right dates and rejects wrong ones, in time order); slower",
    )
    args = parser.parse_args()
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    cands = [
        c
        for account in TUNED
        for item, label in load_account(account)
        if (c := candidate(item.content, item.at, account, label)) is not None
    ]
    accounts = np.array([c.account for c in cands])
    y = np.array([c.right for c in cands])
    hand = DictVectorizer(sparse=False).fit_transform([c.features for c in cands])
    views = {"hand features": hand}
    if args.embeddings:
        from amem.index.embedders import MiniLMEmbedder

        views["hand + sentence embedding"] = np.hstack(
            [hand, np.asarray(MiniLMEmbedder().embed([c.sentence for c in cands]))]
        )
    print(f"{len(cands)} dates chosen by the rules on {len(TUNED)} tuned accounts, {int(y.sum())} right\n")
    groups = {
        "duff+prestige (unseen)": UNSEEN,
        "massive+nakatomi (round 5)": ROUND5,
        "seven older": tuple(a for a in TUNED if a not in UNSEEN + ROUND5),
    }
    print(
        "| features | C | AUC, unseen pair | threshold | "
        + " | ".join(f"{g}: right kept / wrong removed" for g in groups)
        + " |"
    )
    print("|---|---|---|---|" + "---|" * len(groups))
    for view, x in views.items():
        for c in (0.1, 0.3, 1.0):
            p = np.zeros(len(cands))
            for account in TUNED:
                test = accounts == account
                if not args.feedback:
                    model = LogisticRegression(C=c, max_iter=3000).fit(x[~test], y[~test])
                    p[test] = model.predict_proba(x[test])[:, 1]
                    continue
                # the account's own earlier verdicts join the other accounts' labels, in time order
                mine = np.flatnonzero(test)
                for seen, i in enumerate(mine):
                    rows = np.concatenate([np.flatnonzero(~test), mine[:seen]])
                    weight = np.concatenate([np.ones(int((~test).sum())), np.full(seen, args.feedback)])
                    model = LogisticRegression(C=c, max_iter=3000).fit(x[rows], y[rows], sample_weight=weight)
                    p[i] = model.predict_proba(x[i : i + 1])[0, 1]
            unseen = np.isin(accounts, UNSEEN)
            auc = roc_auc_score(y[unseen], p[unseen])
            for threshold in (0.4, 0.5, 0.6, 0.7):
                keep = p >= threshold
                cells = []
                for members in groups.values():
                    g = np.isin(accounts, members)
                    cells.append(
                        f"{int((y & keep & g).sum())}/{int((y & g).sum())} / "
                        f"{int((~y & ~keep & g).sum())}/{int((~y & g).sum())}"
                    )
                print(f"| {view} | {c} | {auc:.3f} | {threshold} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
