"""What an erasure of each input would take from the notes that stay, for quoting the erased words.

Builds one store from amem/samples' account history (``Memory.add_notes``, SQLite, offline analyst
or ``--llm scripted-cross``: the scripted model of bench/erasure.py whose link step writes each
neighbour a context citing the other neighbour shown, as a remote model may), then, for every input
in turn and without erasing anything, computes what ``erase`` would: the input's marks (words that
identify it and that no other input of its account holds, ``amem.services.erased_words``) and the
later link-step values on other notes that hold one. With the offline analyst no later value can
hold the erased input's words (its link step cites a neighbour's words only in a link's reason, and
only words both notes hold), so what it counts is collateral: values erased that did not come from
the input. With ``scripted-cross`` the values cite the erased input by construction.

    python bench/erasure_marks.py                  # offline analyst
    python bench/erasure_marks.py --llm scripted-cross
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llm", choices=["offline", "scripted-cross"], default="offline")
    parser.add_argument("--examples", type=int, default=5, help="values to print with their marks")
    args = parser.parse_args()
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    sys.path[:0] = [str(REPO), str(REPO / "bench")]
    from amem.domain.models import CORE_TYPES
    from amem.ledger import erasure_queries as q
    from amem.llm import link_evolve
    from amem.memory import Memory
    from amem.samples import load_samples
    from amem.services import erased_words
    from amem.services.erasure import _TEXTUAL, _marks

    llm = None
    if args.llm == "scripted-cross":
        import erasure as bench_erasure  # bench/, beside this script

        from tests import scripted_llm

        scripted_llm.install().default = lambda messages: bench_erasure._scripted_answer(messages, True)
        llm = "scripted/bench"
    with tempfile.TemporaryDirectory(prefix="amem-marks-") as home:
        mem = Memory(home, database_url=f"sqlite:///{home}/ledger.db", llm=llm)
        items = [{"content": s.content, "scope": s.scope, "at": s.at.isoformat()} for s, _ in load_samples()]
        outcomes = mem.add_notes(items, actor="agent:bench")
        type_of = {**CORE_TYPES, **{n: a.type for n, a in mem.policy.attributes.items() if a.type}}
        taken: list[int] = []
        with_marks = 0
        examples: list[str] = []
        scanned = {"raw logs": 0, "values": 0}
        spent = {"raw logs": 0.0, "values": 0.0}
        with mem.ledger.read() as tx:
            for outcome in outcomes:
                raw = q.rows(tx, "raw_logs", "id", [outcome.raw_log_id])
                scopes = [raw[0]["scope"]]
                started = time.perf_counter()
                marks = _marks(tx, raw, scopes)
                spent["raw logs"] += time.perf_counter() - started
                scanned["raw logs"] += sum(1 for _ in q.scope_texts(tx, scopes))
                with_marks += bool(marks)
                erased_notes = set(q.notes_of_raw_logs(tx, [outcome.raw_log_id], scopes))
                count = 0
                started = time.perf_counter()
                values = list(q.values_since(tx, scopes, raw[0]["received_at"], link_evolve.TASK))
                scanned["values"] += len(values)
                for p in values:
                    erased_words.quotes(p["new_value"], marks or {"-"})
                spent["values"] += time.perf_counter() - started
                for p in values if marks else ():
                    textual = type_of.get(p["attribute"], "text") in _TEXTUAL
                    if p["note_id"] in erased_notes or not textual:
                        continue
                    if erased_words.quotes(p["new_value"], marks):
                        count += 1
                        held = sorted(
                            m
                            for s in erased_words.strings(p["new_value"])
                            for m in marks & erased_words.words(s)
                        )
                        examples.append(f"{held} in {p['attribute']}: {str(p['new_value'])[:100]!r}")
                taken.append(count)
        mem.close()
    print(f"\n{len(outcomes)} inputs of the sample history, {args.llm} analyst, SQLite\n")
    print("| figure | value |\n|---|---|")
    print(f"| inputs with marks (words only they hold in their account) | {with_marks} |")
    print(f"| inputs whose erasure would take a later value of another note | {sum(1 for n in taken if n)} |")
    print(f"| later values taken per erasure: mean / max | {statistics.mean(taken):.2f} / {max(taken)} |")
    print(f"| later values taken, all erasures | {sum(taken)} |")
    for what in ("raw logs", "values"):
        per = spent[what] / max(1, scanned[what]) * 1e6
        print(
            f"| erasure's scan of the account's {what}: rows read, µs a row | {scanned[what]:,}, {per:.1f} |"
        )
    for line in examples[: args.examples]:
        print(f"- {line}")


if __name__ == "__main__":
    main()
