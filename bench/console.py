"""How quick the approval console stays as the review queue grows.

Builds ledgers (SQLite) with N pending proposals through the governance service, then renders
console pages with Streamlit's AppTest, signed in as a reviewer, and prints a table. The smallest
ledger is the baseline the others are compared with; timings are medians of several renders
after one warm-up (the first render also pays for imports and opening the store).

    python bench/console.py                  # 100 and 10,000 pending proposals
    python bench/console.py --sizes 100 1000 10000 --repeat 7
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streamlit.testing.v1 import AppTest  # noqa: E402

from amem.domain.hashing import sha256_text  # noqa: E402
from amem.domain.models import Actor, RawLog, new_id, utcnow  # noqa: E402
from amem.memory import Memory  # noqa: E402
from amem.services.governance import Draft  # noqa: E402
from approval_ui.state import ACCOUNT_KEY  # noqa: E402
from tests.factories import llm_proposer  # noqa: E402

APP = REPO / "approval_ui" / "app.py"
AGENT = Actor(kind="agent", id="sales-agent")
#: Attributes that wait for review under the default policy; one pending proposal per note and
#: attribute at a time (a newer one supersedes the older).
REVIEWED = ("decision_rationale", "next_step", "customer_priorities", "valid_at", "deleted")
SCOPES = ("acme", "globex", "initech", "umbrella")


def _value(attribute: str, i: int) -> object:
    if attribute == "customer_priorities":
        return [f"priority {i}", "uptime", "price"]
    if attribute == "valid_at":
        return f"2026-{1 + i % 12:02d}-01T00:00:00Z"
    if attribute == "deleted":
        return True
    return f"{attribute.replace('_', ' ')} number {i}: the customer said so in the call, with details."


def build(directory: Path, pending: int) -> dict[str, str]:
    """A ledger with ``pending`` proposals waiting for review, made through governance."""
    directory.mkdir(parents=True, exist_ok=True)
    env = {
        "AMEM_HOME": str(directory / "home"),
        "AMEM_DATABASE_URL": f"sqlite:///{directory / 'ledger.sqlite3'}",
        "AMEM_POLICY": str(REPO / "policies.yaml"),
    }
    notes_needed = -(-pending // len(REVIEWED))
    with Memory(env["AMEM_HOME"], database_url=env["AMEM_DATABASE_URL"], policy=env["AMEM_POLICY"]) as mem:
        drafts: list[Draft] = []
        model = llm_proposer(mem, prompt_version="bench/1")  # a model's proposals name its call
        batch = 500
        for start in range(0, notes_needed, batch):
            with mem.ledger.write() as tx:
                now = utcnow()
                for i in range(start, min(start + batch, notes_needed)):
                    text = f"Call {i} with {SCOPES[i % len(SCOPES)]}: renewal, SSO and pricing discussed."
                    raw = RawLog(
                        id=new_id("r"),
                        text=text,
                        occurred_at=now,
                        actor=AGENT,
                        scope=SCOPES[i % len(SCOPES)],
                        received_at=now,
                        sha256=sha256_text(text),
                    )
                    tx.insert_raw_logs([raw], now)
                    note = mem.governance.create_note(
                        tx, scope=raw.scope, content=text, raw_logs=[raw], actor=AGENT
                    )
                    for attribute in REVIEWED:
                        if len(drafts) < pending:
                            drafts.append(
                                Draft(
                                    note.id,
                                    attribute,
                                    _value(attribute, i),
                                    "stated in the call",
                                    model,
                                    [raw.id],
                                )
                            )
        for start in range(0, len(drafts[:pending]), 2000):
            with mem.ledger.write() as tx:
                mem.governance.propose_in(tx, drafts[start : min(start + 2000, pending)])
        assert mem.count_proposals(_pending()) == pending
    return env


def _pending():
    from amem.ledger.store import ProposalFilter

    return ProposalFilter(status=["pending"])


def render(env: dict[str, str], page: str | None, setup: Callable[[AppTest], None] | None = None) -> float:
    """Seconds for one full run of the app on ``page`` (a fresh session each time)."""
    os.environ.update(env)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state[ACCOUNT_KEY] = "alice"
    if page is not None:
        at.run()
        at.switch_page(page)
    if setup is not None:
        setup(at)
    started = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - started
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return elapsed


def _last_page(at: AppTest) -> None:
    at.run()
    pages = int(at.number_input(key="queue_page").max)
    at.number_input(key="queue_page").set_value(pages)


CASES: dict[str, tuple[str | None, Callable[[AppTest], None] | None]] = {
    "review queue, first page (25)": (None, None),
    "review queue, last page": (None, _last_page),
    "audit log (verify + charts + trail)": ("views/audit_log.py", None),
    "note explorer (list)": ("views/note_explorer.py", None),
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="amem-console-bench-"))
    try:
        envs = {}
        for size in args.sizes:
            started = time.perf_counter()
            envs[size] = build(root / str(size), size)
            print(f"built a ledger with {size:,} pending proposals in {time.perf_counter() - started:.1f} s")
        results: dict[tuple[str, int], float] = {}
        for size, env in envs.items():
            render(env, None)  # warm-up: imports, the store opened once
            for case, (page, setup) in CASES.items():
                results[case, size] = statistics.median(render(env, page, setup) for _ in range(args.repeat))
        base = args.sizes[0]
        header = f"{'page':<38}" + "".join(f"{f'{s:,} pending':>16}" for s in args.sizes)
        header += f"{f'x vs {base:,}':>12}" if len(args.sizes) > 1 else ""
        print()
        print(header)
        print("-" * len(header))
        for case in CASES:
            row = f"{case:<38}" + "".join(f"{results[case, s] * 1000:>13.0f} ms" for s in args.sizes)
            if len(args.sizes) > 1:
                row += f"{results[case, args.sizes[-1]] / results[case, base]:>11.2f}x"
            print(row)
        print(f"\nmedian of {args.repeat} renders each, AppTest (server-side script time), SQLite")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
