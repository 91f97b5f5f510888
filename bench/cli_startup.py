"""How quickly the ``amem`` command answers: ``--help`` and the read commands on a small store.

Each command runs as a fresh process (what a user waits for), several times; the table shows the
median wall time. The baseline is an older amem (``--baseline``, a git revision: its ``amem`` and
``migrations`` are exported to a temporary directory and put first on the path) timed in the same
run, on the same store, interleaved with the current code so that machine load hits both alike.

    python bench/cli_startup.py                    # against the commit before the lazy imports
    python bench/cli_startup.py --baseline HEAD~3 --repeat 9
    python bench/cli_startup.py --baseline none    # the current code only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The last commit before `amem --help` stopped importing the ledger stack (issue 15, part 3).
DEFAULT_BASELINE = "e0181bf"
TARGETS = {"--help": 0.5, "pending": 1.0, "show": 1.0, "history": 1.0, "verify": 1.0}


def export(revision: str, into: Path) -> Path:
    """``amem`` and ``migrations`` of ``revision``, unpacked under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", revision, "amem", "migrations"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One ``python -m amem ARGS`` in the store's directory (never the checkout: its amem would win).
    Returns (wall seconds, CPU seconds): CPU time suffers less from other jobs on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "amem", *args], env=env, check=True, capture_output=True, cwd=env["AMEM_HOME"]
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _small_store(env: dict[str, str]) -> str:
    """Three notes added through the CLI in ``env``'s store; returns the first note's id."""
    Path(env["AMEM_HOME"]).mkdir()
    for text in (
        "Acme decided to renew in March only with SSO, because their auditor asked for it",
        "Acme's next step: we will send the SSO pricing sheet by Friday",
        "Acme asked for 40 seats at $12 per seat",
    ):
        run(["add", text, "--scope", "acme"], env)
    notes = json.loads(
        subprocess.run(
            [sys.executable, "-m", "amem", "notes", "--json"],
            env=env,
            check=True,
            capture_output=True,
            cwd=env["AMEM_HOME"],
        ).stdout
    )
    return str(notes[0]["id"])


def _commands(note: str) -> dict[str, list[str]]:
    return {
        "--help": ["--help"],
        "pending": ["pending"],
        "show": ["show", note],
        "history": ["history", note],
        "verify": ["verify"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command (median shown)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision, or 'none'")
    opts = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="amem-cli-bench-") as tmp:
        base_env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
        base_env.pop("AMEM_DATABASE_URL", None)
        envs = {"current": dict(base_env, AMEM_HOME=str(Path(tmp) / "store"))}
        if opts.baseline != "none":
            code = export(opts.baseline, Path(tmp) / "baseline")
            envs[f"baseline {opts.baseline}"] = dict(
                base_env, AMEM_HOME=str(Path(tmp) / "store-baseline"), PYTHONPATH=str(code)
            )
        # each variant reads a store its own code wrote (a newer schema is refused by older code)
        commands_of = {variant: _commands(_small_store(env)) for variant, env in envs.items()}
        commands = list(commands_of["current"])
        variants = envs
        times: dict[str, dict[str, list[tuple[float, float]]]] = {
            v: {c: [] for c in commands} for v in variants
        }
        for _ in range(opts.repeat):
            for name in commands:
                for variant, venv in variants.items():
                    times[variant][name].append(run(commands_of[variant][name], venv))

    print(f"amem CLI, median of {opts.repeat} runs: wall / CPU seconds, store of 3 notes, SQLite\n")
    header = ["command", "target (wall)", *variants]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in commands:
        row = [f"`amem {name}`", f"< {TARGETS[name]}"]
        for v in variants:
            wall = statistics.median(t[0] for t in times[v][name])
            cpu = statistics.median(t[1] for t in times[v][name])
            row.append(f"{wall:.2f} / {cpu:.2f}")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
