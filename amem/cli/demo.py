"""``amem demo``: a store loaded with the sample account history, and the console on it.

Everything goes through the real pipeline (raw logs, the offline analyst, the policy, the review
queue), into a store of its own (``.amem-demo``), never the user's: the demo's policy and its
reviewers file live in that store, with a demo reviewer whose fresh password is printed.
"""

from __future__ import annotations

import secrets
import shutil
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer

from amem.cli.app import app, err, out, print_policy_warnings, state

DEMO_STORE = ".amem-demo"
#: Written into a demo store: ``--reset`` deletes only a directory that carries it.
MARKER = "amem-demo-store"
DEMO_REVIEWER = "demo"
DEMO_ACTOR = "agent:sales-agent"
EARLIEST = datetime.min.replace(tzinfo=UTC)


def sample_dir() -> Path:
    """The packaged sample history: ``amem/samples/history/*.jsonl``."""
    return Path(str(resources.files("amem"))) / "samples" / "history"


def read_history(directory: Path) -> list[dict[str, Any]]:
    """Every line of every ``*.jsonl`` in ``directory``, merged in time order (``at``)."""
    from amem.cli.import_files import read_jsonl
    from amem.cli.notes import _wrong_lines
    from amem.domain.values import parse_datetime
    from amem.errors import InvalidInputError

    files = sorted(directory.glob("*.jsonl"))
    if not files:
        raise InvalidInputError(f"no sample history (*.jsonl) in {directory}")
    items: list[tuple[datetime, int, dict[str, Any]]] = []
    for path in files:
        read = read_jsonl(path.read_bytes())
        if read.unread:
            raise _wrong_lines(str(path), read.unread)
        for number, item in zip(read.numbers, read.items, strict=True):
            try:
                at = parse_datetime(item["at"], what="at") if item.get("at") else EARLIEST
            except InvalidInputError as exc:
                raise InvalidInputError(f"{path}, line {number}: {exc}") from None
            items.append((at, len(items), item))
    return [item for _, _, item in sorted(items, key=lambda t: (t[0], t[1]))]


def write_demo_policy(store: Path) -> tuple[Path, str]:
    """The packaged policy and reviewers, plus a demo reviewer (cs_lead) with a new password."""
    import yaml

    from amem.policy import DEFAULT_POLICY_PATH
    from amem.services.accounts import hash_password

    policy_path = store / "policies.yaml"
    shutil.copyfile(DEFAULT_POLICY_PATH, policy_path)
    reviewers = yaml.safe_load((DEFAULT_POLICY_PATH.parent / "reviewers.yaml").read_text("utf-8"))
    password = secrets.token_urlsafe(9)
    reviewers["reviewers"][DEMO_REVIEWER] = {
        "name": "Demo Reviewer",
        "roles": ["cs_lead"],
        "password_hash": hash_password(password),
    }
    header = "# The demo's reviewers (written by `amem demo`; the password is printed, never stored).\n"
    (store / "reviewers.yaml").write_text(header + yaml.safe_dump(reviewers, sort_keys=False), "utf-8")
    return policy_path, password


@app.command()
def demo(
    store_dir: Annotated[
        Path, typer.Option("--store", help="The demo's own store (never your own).", file_okay=False)
    ] = Path(DEMO_STORE),
    samples: Annotated[
        Path | None,
        typer.Option("--samples", help="A directory of *.jsonl histories (default: the packaged samples)."),
    ] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Start the demo store over.")] = False,
    no_ui: Annotated[bool, typer.Option("--no-ui", help="Load only; do not start the console.")] = False,
    port: Annotated[int, typer.Option("--port", help="Console port.")] = 8501,
) -> None:
    """Load the sample account history, then open the console with a demo reviewer.

    The history goes through the real pipeline; the demo reviewer's sign-in is printed here."""
    from amem.cli.progress import reporter
    from amem.cli.ui import require_console, ui
    from amem.config import sqlite_url
    from amem.errors import InvalidInputError
    from amem.memory import Memory

    if not no_ui:
        require_console()
    store = store_dir.resolve()
    if store.exists() and not (store / MARKER).is_file() and any(store.iterdir()):
        raise InvalidInputError(
            f"{store} is not a demo store (no {MARKER} file): the demo keeps a store of its own and "
            "never writes into, or deletes, one it did not make; give --store a new directory"
        )
    history = read_history(samples or sample_dir())  # a wrong sample directory creates nothing
    if reset and store.exists():
        shutil.rmtree(store)
    ledger_file = store / "ledger.sqlite3"
    policy_path = store / "policies.yaml"
    password: str | None = None
    if not ledger_file.exists():  # a new demo store: its reviewers, and the password shown once
        store.mkdir(parents=True, exist_ok=True)
        (store / MARKER).write_text("made by `amem demo`; `amem demo --reset` deletes this directory\n")
        policy_path, password = write_demo_policy(store)
    ledger = sqlite_url(ledger_file)
    # A store made before keeps its reviewers file: the policy installed in its ledger carries the
    # demo reviewer's password hash, so a new password would leave no one able to decide.
    sign_in = password or (
        f"the one printed when {store} was made (a new one: `amem demo --store {store} --reset`, "
        "which loads the demo again)"
    )

    with Memory(store, database_url=ledger, policy=policy_path) as mem:
        print_policy_warnings(mem)  # the store's own policy, as any command opening a store says it
        try:
            kept, left = mem.count_raw_logs(), mem.queue_depth()["queued"]
            if kept and not left:
                err.print(f"demo store {store} is already loaded (--reset to load it again)", markup=False)
            else:  # new, or a load that was interrupted: what it left is analysed now
                doing = (
                    f"finishing {store}: analysing the {left} sample conversations an interrupted load left"
                    if kept
                    else f"loading {len(history)} sample conversations into {store}"
                )
                err.print(doing, markup=False)
                with reporter(False) as progress:
                    mem.add_notes(history, actor=DEMO_ACTOR, progress=progress, skip_recorded=bool(kept))
        except KeyboardInterrupt:
            if password:  # not printed yet: without it, no one could sign in to this store
                err.print(f"sign in as: {DEMO_REVIEWER}   password: {password}", markup=False)
            err.print(f"`amem demo --store {store}` again finishes loading the demo", markup=False)
            raise
        scopes, note_count, raw_count = len(mem.scopes()), mem.count_notes(), mem.count_raw_logs()
        pending, items = mem.count_pending(), mem.count_review_items().items
    # a reviewer decides review items (all of one input's held changes), as `amem import` counts them
    out.print(
        f"demo store {store}: {note_count} notes in {scopes} accounts from {raw_count} raw logs; "
        f"{items} review items ({pending} changes) wait for review; see them with "
        f"`amem --home {store} pending`",
        markup=False,
    )
    out.print(f"sign in as: {DEMO_REVIEWER}   password: {sign_in}", markup=False)
    if no_ui:
        out.print(f"console: amem --home {store} ui", markup=False)
        return
    out.print(f"console: http://127.0.0.1:{port}  (Ctrl-C stops it)", markup=False)
    state.home, state.database_url, state.policy = str(store), ledger, str(policy_path)
    ui(port=port, headless=True, address="127.0.0.1")
