"""What the review queue costs a person, and how much of it the labels back (issue 12).

Ingests the sample account history shipped with amem (``amem/samples``: every account, tuned and
held-out parts interleaved in time order, so facts retire across time) through ``add_notes`` with
the offline analyst (with ``--llm``, the litellm analyst) into a fresh store, then scores every
proposal against the labels with
``amem.samples.scoring``: review items per 100 inputs (an item = the pending proposals one input
caused), queue precision, rationale precision / recall and overlap, valid_at accuracy,
contradiction precision / recall, category accuracy and hostile text in applied values. The tuned
part and the held-out part are printed apart; the targets are the issue's, for the held-out part.

    python bench/review_burden.py                       # SQLite in a temp dir, both tables
    python bench/review_burden.py --part tuned --explain  # only the tuned accounts, and their misses
    python bench/review_burden.py --part tuned --accounts globex,initech  # a leave-one-out fold
    python bench/review_burden.py --score-only waystar,krusty   # a group, ingested with all the rest
    python bench/review_burden.py --json                # one JSON object on stdout
    python bench/review_burden.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/bench
    python bench/review_burden.py --json > out.json; python bench/review_burden.py --baseline out.json
    python bench/review_burden.py --llm openai/gpt-4o-mini   # the litellm analyst on the same labels
    python bench/review_burden.py --samples my-history --explain  # your own labelled accounts
    python bench/review_burden.py --desk /tmp/desk --accounts globex --part tuned  # answered by hand
    python bench/review_burden.py --replay bench/desk_answers/globex.jsonl --accounts globex --part tuned

``--part tuned`` ingests and scores only the tuned accounts (the held-out inputs never go through
the analyst, and no held-out figure is printed): what anyone tuning the analyst runs. ``--part
all`` (the default, for the lead) ingests every account. Each part's table is followed by one with
a column per account, so a rule can be checked leave-one-account-out (develop on two accounts,
check on the third). ``--explain`` lists misses of the tuned part only, and is refused with
``--part heldout``.

The baseline column reads a previous ``--json`` run (default: bench/review_burden_baseline.json,
the figures of the analyst before issue 12's changes).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import amem  # noqa: E402
from amem.ledger.store import ProposalFilter  # noqa: E402
from amem.memory import Memory  # noqa: E402
from amem.samples import load_inputs, load_labels, load_second_labels  # noqa: E402
from amem.samples.scoring import (  # noqa: E402
    PartScore,
    ProposalRecord,
    columns_table,
    explain,
    markdown_table,
    score_part,
)

BASELINE = REPO / "bench" / "review_burden_baseline.json"
DEFAULT_POLICY = Path(amem.__file__).parent / "defaults" / "policies.yaml"
PARTS = ("tuned", "heldout")


def run(
    home: Path,
    database_url: str | None,
    policy: Path,
    parts: tuple[str, ...] = PARTS,
    accounts: set[str] | None = None,
    llm: str = "offline",
    second_labels: bool = False,
    score_only: set[str] | None = None,
    batch_size: int | None = None,
    root: Path | None = None,
) -> tuple[dict[str, PartScore], dict[str, dict[str, PartScore]], dict[str, Any], list[str]]:
    """Ingest the inputs of ``parts`` (of ``accounts``, when given) into a fresh store and score
    each part, as a whole and account by account. ``llm``: the analyst, "offline" or any litellm
    model string (the litellm analyst, scored on the same labels). ``second_labels``: score against
    the second annotator's labels (``amem/samples/labels_b``) where they exist, the first's elsewhere.
    ``score_only``: score only these accounts, of everything ingested (a group of accounts as
    they read beside the others: where the batches fall moves a scope's figures). ``batch_size``:
    add_notes' batch (default: its own). ``root``: a folder laid out as ``amem/samples`` (history/,
    labels/, LABELS.md's conventions) to ingest and score instead of the shipped sample."""
    labels = load_labels(root=root)
    if second_labels:
        labels |= load_second_labels(root)
    chosen = {
        sid
        for sid, label in labels.items()
        if label.part in parts and (accounts is None or label.account in accounts)
    }
    inputs = [line for line in load_inputs(root=root) if line["metadata"]["sample_id"] in chosen]
    with Memory(home, llm=llm, database_url=database_url, policy=policy) as memory:
        started = time.perf_counter()
        batching = {} if batch_size is None else {"batch_size": batch_size}
        outcomes = memory.add_notes(inputs, actor="agent:crm-agent", **batching)
        seconds = time.perf_counter() - started
        with memory.ledger.read() as tx:
            sample_of_log = {r.id: r.metadata.get("sample_id") for r in tx.iter_raw_logs()}
            notes = tx.list_notes(limit=10_000_000, include_deleted=True)
            proposals = tx.list_proposals(ProposalFilter(), limit=10_000_000)
            changes = list(tx.iter_changes())
    sample_of_note = {n.id: sample_of_log.get(n.raw_log_ids[0]) for n in notes if n.raw_log_ids}
    records = [
        ProposalRecord(
            attribute=p.attribute,
            status=p.status.value,
            note_sample=sample_of_note.get(p.note_id) or "?",
            cause_sample=(sample_of_log.get(p.raw_log_ids[0]) if p.raw_log_ids else None) or "?",
            new_value=p.new_value,
        )
        for p in proposals
    ]
    categories = {sample_of_note[n.id]: n.category for n in notes if sample_of_note.get(n.id)}
    applied = [(sample_of_note.get(c.note_id) or "?", c.attribute, c.new_value) for c in changes]
    scored = score_only if score_only is not None else accounts
    scores = {part: score_part(part, labels, records, categories, applied, scored) for part in parts}
    per_account: dict[str, dict[str, PartScore]] = {}
    for part in parts:
        names = sorted(
            {labels[sid].account for sid in chosen if labels[sid].part == part}
            & (score_only if score_only is not None else {labels[sid].account for sid in chosen})
        )
        per_account[part] = {
            name: score_part(part, labels, records, categories, applied, {name}) for name in names
        }
    run_info = {
        "inputs": len(inputs),
        "analyst": llm,
        "failed": sum(o.note_id is None for o in outcomes),
        "seconds": round(seconds, 1),
        "inputs_per_second": round(len(inputs) / seconds, 1) if seconds else None,
    }
    misses = explain("tuned", labels, records, categories, scored) if "tuned" in parts else []
    return scores, per_account, run_info, misses


def _baseline(path: Path | None) -> dict[str, PartScore]:
    if path is None or not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    known = {f.name for f in dataclasses.fields(PartScore)}
    for part in PARTS:
        if part in data:
            # the counts only: the figures are recomputed, the per-account breakdown is not compared
            fields = {k: v for k, v in data[part].items() if k in known}
            out[part] = PartScore(**fields)
            out[part].part = "baseline"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default=None, help="ledger URL (default: SQLite in the temp store)")
    parser.add_argument("--home", type=Path, default=None, help="store directory (default: a fresh temp dir)")
    parser.add_argument("--policy", type=Path, default=DEFAULT_POLICY, help="policy file (default: packaged)")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="an earlier --json run, shown beside")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    parser.add_argument(
        "--explain", action="store_true", help="also list the tuned part's misses (never the held-out part's)"
    )
    parser.add_argument(
        "--part",
        choices=("tuned", "heldout", "all"),
        default="all",
        help="which part to ingest and score (default all; tune with --part tuned only)",
    )
    parser.add_argument(
        "--accounts",
        default=None,
        help="comma-separated accounts of the part: ingest and score only those",
    )
    parser.add_argument(
        "--score-only",
        default=None,
        help="comma-separated accounts to score, of all that are ingested (a group beside the rest)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="add_notes' batch size (default: add_notes' own)"
    )
    parser.add_argument(
        "--llm",
        default="offline",
        help="the analyst: offline (default) or a litellm model string, e.g. openai/gpt-4o-mini "
        "(its key from the environment; AMEM_LLM_CONCURRENCY calls at once)",
    )
    parser.add_argument(
        "--desk",
        type=Path,
        default=None,
        help="the litellm analyst, its requests answered by hand at this folder (bench/llm_desk.py)",
    )
    parser.add_argument(
        "--replay",
        type=Path,
        default=None,
        help="the litellm analyst, answered from answers recorded at a desk (bench/llm_desk.py export)",
    )
    parser.add_argument(
        "--labels",
        choices=("first", "second"),
        default="first",
        help="score against the first annotator's labels (default) or the second's (amem/samples/labels_b, "
        "see bench/label_agreement.py)",
    )
    parser.add_argument(
        "--samples",
        type=Path,
        default=None,
        help="a folder laid out as amem/samples (history/<account>.jsonl, labels/<account>.jsonl, "
        "LABELS.md's conventions): ingest and score its accounts instead of the shipped sample",
    )
    args = parser.parse_args()
    if args.explain and args.part == "heldout":
        parser.error("--explain lists misses of the tuned part only")
    parts = PARTS if args.part == "all" else (args.part,)
    accounts = {a.strip() for a in args.accounts.split(",") if a.strip()} if args.accounts else None
    score_only = {a.strip() for a in args.score_only.split(",") if a.strip()} if args.score_only else None

    if args.desk is not None or args.replay is not None:
        sys.path.insert(0, str(REPO / "bench"))
        import llm_desk

        args.llm = llm_desk.install(args.desk, args.replay)
        # a batch's requests all wait at the desk at once, to be answered together
        os.environ.setdefault("AMEM_LLM_CONCURRENCY", "64")
    home = args.home or Path(tempfile.mkdtemp(prefix="amem-review-burden-"))
    scores, per_account, info, misses = run(
        home,
        args.database_url,
        args.policy,
        parts,
        accounts,
        args.llm,
        args.labels == "second",
        score_only,
        args.batch_size,
        args.samples,
    )
    if args.desk is not None:
        (args.desk / "done").touch()
    if args.json:
        out: dict[str, Any] = dict(info)
        for part in parts:
            out[part] = scores[part].as_json()
            out[part]["accounts"] = {name: s.figures for name, s in per_account[part].items()}
        print(json.dumps(out, indent=1))
        return
    baseline = _baseline(args.baseline)
    print(
        f"{info['inputs']} sample inputs through add_notes (analyst: {args.llm}) in {info['seconds']} s "
        f"({info['inputs_per_second']} inputs/s), {info['failed']} failed; store {home}; "
        f"scored against the {args.labels} annotator's labels"
    )
    for part in parts:
        title = "Tuned part" if part == "tuned" else "Held-out part (never tuned on)"
        print(f"\n## {title}\n")
        if not scores[part].inputs:
            print("no inputs in this part")
            continue
        whole = accounts is None and score_only is None and args.samples is None
        print(markdown_table(scores[part], baseline=baseline.get(part) if whole else None))
        print(f"\n### {title}: account by account\n")
        print(columns_table({part: scores[part], **per_account[part]}))
    if args.explain:
        print("\n## Tuned part: what disagrees with the labels\n")
        print("\n".join(misses) or "nothing")


if __name__ == "__main__":
    main()
