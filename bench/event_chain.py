"""What the event chain costs add_note's writes: the same write transactions with and without it.

Runs add_note's two write transactions (the raw log; then two model calls, the note's creation and
six proposals, four of them applied) on a fresh ledger, in interleaved blocks with the event chain
on and, as the baseline, off (LedgerTx.append_event made a no-op in the same process), and prints
the median per add_note of each, on SQLite and, with --postgres, PostgreSQL. Also prints how many
event rows one add_note appends. Nothing here calls a model or the index (they cost the same
either way).

    python bench/event_chain.py --notes 300 [--postgres postgresql+psycopg://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import sqlalchemy as sa  # noqa: E402

from amem.domain.hashing import sha256_text  # noqa: E402
from amem.domain.models import LlmCall, new_id, utcnow  # noqa: E402
from amem.ledger.store import LedgerTx  # noqa: E402
from amem.memory import Memory  # noqa: E402
from amem.services.governance import Draft  # noqa: E402
from tests.factories import AGENT, LLM, raw_log  # noqa: E402

DRAFTS = [
    ("keywords", ["renewal", "sso", "march"]),
    ("tags", ["renewal", "contract"]),
    ("context", "Renewal note about Acme and SSO"),
    ("category", "renewal"),
    ("decision_rationale", "their auditor asked for SSO"),
    ("next_step", "send the SSO addendum"),
]


def one_add(mem: Memory, i: int) -> None:
    text = f"Acme decided to renew in March only with SSO, because their auditor asked ({i})"
    raw = raw_log(text)
    with mem.ledger.write() as tx:
        tx.insert_raw_logs([raw], raw.received_at)
    with mem.ledger.write() as tx:
        calls = {task: new_id("c") for task in ("construct", "link")}
        for task, call_id in calls.items():
            tx.insert_llm_call(
                LlmCall(
                    id=call_id,
                    task=task,
                    model="offline",
                    prompt_version="bench/1",
                    raw_log_id=raw.id,
                    prompt_sha256=sha256_text(task + text),
                    response_text='{"keywords": ["renewal", "sso"], "tags": ["renewal"]}',
                    created_at=utcnow(),
                )
            )
        note = mem.governance.create_note(tx, scope="acme", content=text, raw_logs=[raw], actor=AGENT)
        by = LLM.model_copy(update={"llm_call_id": calls["construct"]})  # the call its values came from
        mem.governance.propose_in(tx, [Draft(note.id, a, v, "bench", by, [raw.id]) for a, v in DRAFTS])


def run(url: str, notes: int, block: int) -> tuple[float, float, float]:
    real = LedgerTx.append_event
    times: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "h", database_url=url) as mem:
        for i in range(20):  # warm up
            one_add(mem, i)
        with mem.ledger.read() as tx:
            before = tx.event_head()[0]
        one_add(mem, -1)
        with mem.ledger.read() as tx:
            per_add = tx.event_head()[0] - before
        for b in range(notes // block):
            on = b % 2 == 0
            LedgerTx.append_event = real if on else (lambda *a, **k: None)  # type: ignore[method-assign]
            try:
                for i in range(block):
                    started = time.perf_counter()
                    one_add(mem, b * block + i)
                    times[on].append((time.perf_counter() - started) * 1000)
            finally:
                LedgerTx.append_event = real  # type: ignore[method-assign]
    return statistics.median(times[False]), statistics.median(times[True]), per_add


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--block", type=int, default=25)
    parser.add_argument("--postgres", default=None)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(("sqlite", *run(f"sqlite:///{tmp}/ledger.sqlite3", args.notes, args.block)))
    if args.postgres:
        schema = f"amem_bench_{uuid.uuid4().hex[:8]}"
        admin = sa.create_engine(args.postgres)
        with admin.begin() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        sep = "&" if "?" in args.postgres else "?"
        try:
            url = f"{args.postgres}{sep}options={quote(f'-csearch_path={schema}')}"
            rows.append(("postgresql", *run(url, args.notes, args.block)))
        finally:
            with admin.begin() as conn:
                conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    print(f"{args.notes} add_note writes each, median ms per add_note (both write transactions)")
    print("| backend | without event chain | with event chain | cost | events per add_note |")
    print("|---|---|---|---|---|")
    for backend, off, on, per_add in rows:
        cost = f"{on - off:+.2f} ms ({(on - off) / off:+.0%})"
        print(f"| {backend} | {off:.2f} | {on:.2f} | {cost} | {per_add:.0f} |")


if __name__ == "__main__":
    main()
