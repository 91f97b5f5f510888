"""Another commit's ``amem`` beside this tree, for a benchmark that compares against a baseline.

``git archive`` of the commit's package and migrations, laid out as the installed package maps
them (``amem/migrations``); a child process run with ``PYTHONPATH`` on the returned directory
imports that commit's code.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def extract(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "amem", "migrations"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    (into / "migrations").rename(into / "amem" / "migrations")
    return into


def trees(ref: str, into: Path) -> dict[str, Path]:
    """The code to run, by name: ``baseline REF`` (extracted into ``into``) then ``current``; only
    ``current`` when ``ref`` is ``none``."""
    if ref == "none":
        return {"current": REPO}
    return {f"baseline {ref}": extract(ref, into), "current": REPO}
