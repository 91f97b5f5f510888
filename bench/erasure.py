"""What an erasure leaves behind, and what it costs, beside a baseline commit.

Each run builds a fresh store from amem/samples' account history through ``Memory.add_notes``
(offline analyst and embedder, SQLite ledger, persistent Chroma) in a child process, with one input
carrying a canary: a made-up surname of rare letters that no other input has. It then erases that
input's raw log (``Memory.erase``, as `amem erase` does) and looks for the canary everywhere the
store keeps bytes:

- the ledger's files (SQLite file, WAL) and the index directory, byte for byte;
- Chroma's full-text index (FTS5, trigram tokens): the canary's trigrams in its stored segments,
  which spell the text again with their positions;
- the stored model answers (``llm_calls.response_text``) that still quote it;
- and the review queue: proposals still pending that the erased input made, or that propose
  ``[erased]``.

``--llm scripted`` runs the same through litellm with a scripted zero-latency model (tests'
custom provider) that does what A-MEM's evolution asks of a model: it links each new note to its
two nearest neighbours and writes each a new context in words taken from the neighbour, so later
answers quote the erased input as a remote model's would. The offline analyst's link reasons do
not quote a neighbour's words. ``--llm scripted-cross``: each neighbour's new context also cites
the other neighbour shown, so a kept note's value can quote the erased input in its own words
without naming the erased note (what ``amem.services.erased_words`` is for).

"kept notes changed" counts the notes that stay (not erased) whose values the erasure changed: the
collateral of an erasure (link reasons to an erased note, values its model call wrote, values
quoting it).

The baseline is the same script run against another commit's ``amem`` (``git archive``), the
rounds interleaved:

    python bench/erasure.py                        # baseline: the commit before this work
    python bench/erasure.py --baseline-ref HEAD~1 --rounds 2

The input chosen is the first of the account with the most inputs, so most of that account's
notes are made after it and can link to it, and evolve it, as neighbours.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import baseline  # bench/, beside this script

REPO = Path(__file__).resolve().parents[1]
#: The last commit before the erasure changes of the thirty-third session.
DEFAULT_BASELINE = "c792047"


def _canary(seed: int) -> str:
    draw = random.Random(seed)
    return "".join(draw.choice("qxzjvkw") for _ in range(10)).title()


def _inputs(canary: str) -> tuple[list[dict[str, Any]], int]:
    """The sample history as add_notes items, in time order, and the index of the canary's input."""
    sys.path.insert(0, str(REPO))
    from amem.samples import load_samples

    pairs = load_samples()
    counts: dict[str, int] = {}
    for sample, _ in pairs:
        counts[sample.scope] = counts.get(sample.scope, 0) + 1
    busiest = max(counts, key=lambda s: counts[s])
    items = [{"content": s.content, "scope": s.scope, "at": s.at.isoformat()} for s, _ in pairs]
    chosen = next(i for i, (s, _) in enumerate(pairs) if s.scope == busiest)
    items[chosen]["content"] = f"Mrs {canary} (contact): {items[chosen]['content']}"
    return items, chosen


# -- the child: build, erase, look -----------------------------------------------------------------


def _files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]


def _scripted_answer(messages: list[dict[str, str]], cross: bool = False) -> str:
    """Construction: keywords from the capitalised words. Link step: the two nearest neighbours
    linked, each given a context that restates it (``cross``: and cites the other one)."""
    user = messages[-1]["content"]
    if "<neighbours>" in user:
        block = user.split("<neighbours>", 1)[1].split("</neighbours>", 1)[0]
        shown = json.loads(block)[:2]

        def context(n: dict[str, Any]) -> str:
            others = [o["content"][:80] for o in shown if o["id"] != n["id"]] if cross else []
            return "Follow-up on: " + n["content"][:120] + "".join(f"; beside: {o}" for o in others)

        return json.dumps(
            {
                "links": [{"note_id": n["id"], "reason": "same account thread"} for n in shown],
                "updates": [
                    {"note_id": n["id"], "context": context(n), "reason": "newer call"} for n in shown
                ],
                "contradictions": [],
            }
        )
    from scripted_answers import construct  # bench/, beside this script

    return construct(user)


def child(args: argparse.Namespace) -> None:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from amem.memory import Memory

    llm = None
    if args.llm.startswith("scripted"):
        sys.path.append(str(REPO))  # tests' scripted provider; amem itself comes from --code's tree
        from tests import scripted_llm

        cross = args.llm == "scripted-cross"
        scripted_llm.install().default = lambda messages: _scripted_answer(messages, cross)
        llm = "scripted/bench"

    data = json.loads(args.inputs_file.read_text())
    canary: str = data["canary"]
    items, chosen = data["items"], data["chosen"]
    home = args.home
    mem = Memory(home, database_url=f"sqlite:///{home}/ledger.db", llm=llm)
    started = time.perf_counter()
    outcomes = mem.add_notes(items, actor="agent:bench")
    built = time.perf_counter() - started
    raw = outcomes[chosen].raw_log_id
    person = mem.authentication.signed_in("alice", method="test")
    scopes = sorted({item["scope"] for item in items})
    before = {n.id: n for s in scopes for n in mem.notes(scope=s, limit=100_000)}
    started = time.perf_counter()
    report = mem.erase(by=person, reason="bench", raw_log_id=raw)
    erase_s = time.perf_counter() - started
    after = {n.id: n for s in scopes for n in mem.notes(scope=s, limit=100_000)}
    mem.close()
    fields = ("keywords", "tags", "context", "decision_rationale", "links", "extra")
    changed = [
        i for i, n in after.items() if any(getattr(n, f) != getattr(before[i], f, None) for f in fields)
    ]

    needle = canary.encode()
    lowered = canary.lower()
    trigrams = {lowered[i : i + 3].encode() for i in range(len(lowered) - 2)}
    ledger_files = [p for p in home.iterdir() if p.name.startswith("ledger.db")]
    index_dir = home / "index"
    db = sqlite3.connect(str(index_dir / "chroma.sqlite3"))
    blocks = b"".join(r[0] for r in db.execute("SELECT block FROM embedding_fulltext_search_data"))
    db.close()
    ledger = sqlite3.connect(str(home / "ledger.db"))
    answers = ledger.execute(
        "SELECT count(*) FROM llm_calls WHERE response_text LIKE ?", (f"%{canary}%",)
    ).fetchone()[0]
    models = sorted(r[0] for r in ledger.execute("SELECT DISTINCT model FROM llm_calls"))
    waiting = ledger.execute(
        "SELECT count(*) FROM proposals WHERE status = 'pending'"
        " AND (raw_log_ids LIKE ? OR new_value LIKE ?)",
        (f"%{raw}%", "%[erased]%"),
    ).fetchone()[0]
    ledger.close()
    result = {
        "notes": len(outcomes),
        "build_s": built,
        "erase_s": erase_s,
        "answers_redacted": report.llm_calls,
        "ledger_files_with_canary": sum(needle in f.read_bytes() for f in ledger_files),
        "index_files_with_canary": sum(needle in f.read_bytes() for f in _files(index_dir)),
        "fts_trigrams_left": sum(t in blocks for t in trigrams),
        "fts_trigrams": len(trigrams),
        "answers_quoting_canary": answers,
        "pending_from_erased": waiting,
        "kept_notes_changed": len(changed),
        "values_quoting": getattr(report, "values_quoting", float("nan")),
        "models": models,
    }
    print(json.dumps(result))


# -- the parent: interleaved rounds, a table -----------------------------------------------------


def _run(code: Path, canary: str, items: list[dict[str, Any]], chosen: int, llm: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="amem-erasure-") as tmp:
        inputs_file = Path(tmp) / "inputs.json"
        inputs_file.write_text(json.dumps({"canary": canary, "items": items, "chosen": chosen}))
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            "--home",
            str(Path(tmp) / "store"),
            "--inputs-file",
            str(inputs_file),
            "--llm",
            llm,
        ]
        env = {**os.environ, "PYTHONPATH": str(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=str(code))
        if done.returncode != 0:
            raise SystemExit(done.stderr[-4000:])
        return json.loads(done.stdout.strip().splitlines()[-1])


ROWS = [
    ("notes in the store", "notes", "{:.0f}"),
    ("erase (s), rebuild and compaction included", "erase_s", "{:.2f}"),
    ("model answers redacted", "answers_redacted", "{:.0f}"),
    ("ledger files holding the canary", "ledger_files_with_canary", "{:.0f}"),
    ("index files holding the canary", "index_files_with_canary", "{:.0f}"),
    ("canary trigrams left in Chroma's full-text index", "fts_trigrams_left", "{:.0f}"),
    ("stored model answers quoting the canary", "answers_quoting_canary", "{:.0f}"),
    (
        "proposals still pending from the erased input (or proposing [erased])",
        "pending_from_erased",
        "{:.0f}",
    ),
    ("kept notes changed by the erasure", "kept_notes_changed", "{:.0f}"),
    ("later values erased for quoting the erased input's words", "values_quoting", "{:.0f}"),
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--llm", choices=["offline", "scripted", "scripted-cross"], default="offline")
    parser.add_argument("--baseline-ref", default=DEFAULT_BASELINE, help="git ref; 'none' to skip")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--inputs-file", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="amem-baseline-") as tmp:
        trees = baseline.trees(args.baseline_ref, Path(tmp))
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for n in range(args.rounds):
            canary = _canary(n)
            items, chosen = _inputs(canary)
            for name, code in trees.items():
                runs[name].append(_run(code, canary, items, chosen, args.llm))
                print(f"  {name}: {json.dumps(runs[name][-1])}", file=sys.stderr)
    load = os.getloadavg()
    first = runs["current"][0]
    print(
        f"\nErasure of one raw log of {first['notes']} (the sample history; its account's first input, "
        f"with a canary), {args.llm} analyst, SQLite; {args.rounds} rounds interleaved; "
        f"load average now {load[0]:.1f} on {os.cpu_count()} CPUs. Median of the rounds "
        f"(residue: the worst round); {first['fts_trigrams']} trigrams in the canary.\n"
    )
    names = list(runs)
    print("| figure | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for label, key, fmt in ROWS:
        cells = []
        for name in names:
            values = [r[key] for r in runs[name]]
            value = statistics.median(values) if key in ("erase_s", "notes") else max(values)
            cells.append(fmt.format(value))
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
