"""The README's first two commands, as their steps run from a clean clone of the repository.

`make demo` = install (the CI's own environment stands in for it) + `amem demo`; `make test` =
`bash .ci/run`. The clone's code is what runs (its directory comes first on the path), with a small
history of our own instead of the packaged samples, and no console.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def first_screen_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert block and readme.index(block.group(0)) < 1500, "the two commands open the README"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.split("#")[0].strip()]


def test_the_readme_opens_with_exactly_two_commands() -> None:
    assert first_screen_commands() == ["make demo", "make test"]


@pytest.mark.slow
def test_make_demo_and_make_test_steps_work_from_a_clean_clone(tmp_path: Path) -> None:
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: nothing to clone")
    clone = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)

    if shutil.which("make"):
        plan = subprocess.run(
            ["make", "-n", "-C", str(clone), "demo", "test"], capture_output=True, text=True, check=True
        ).stdout
        assert "bash .ci/install console" in plan and ".venv/bin/amem demo" in plan and "bash .ci/run" in plan

    history = tmp_path / "history"
    history.mkdir()
    lines = [
        {"content": "Initech asked for 15 seats at $9 per seat", "scope": "initech", "at": "2026-03-01"},
        {"content": "Initech decided to sign because of the SSO", "scope": "initech", "at": "2026-03-09"},
    ]
    (history / "initech.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("AMEM_") or k == "AMEM_TEST_POSTGRES_URL"
    }
    env.update(PYTHONPATH=str(clone), LITELLM_LOCAL_MODEL_COST_MAP="True")
    done = subprocess.run(
        [sys.executable, "-m", "amem", "demo", "--no-ui", "--samples", str(history)],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "2 notes in 1 accounts from 2 raw logs" in done.stdout and "sign in as: demo" in done.stdout
    assert (clone / ".amem-demo" / "ledger.sqlite3").is_file()
    assert not (clone / ".amem").exists(), "the demo never writes to the user's own store"
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True)
    assert status.stdout == "", "the demo's store is ignored by git"


def test_an_agent_installing_amem_gets_no_console() -> None:
    """`pip install amem` (no extra) must not pull the console's stack; the console extra has it."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    console_stack = {
        "streamlit",
        "streamlit-authenticator",
        "pyjwt",
        "extra-streamlit-components",
        "pandas",
        "altair",
    }

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}

    assert not names(project["dependencies"]) & console_stack
    assert names(project["optional-dependencies"]["console"]) == console_stack
    assert "amem" in names(project["optional-dependencies"]["dev"])  # dev = console + test tools


def test_ci_and_the_demo_install_a_pinned_version_of_every_dependency() -> None:
    """A dependency added to pyproject.toml without `bash .ci/lock` would install unpinned, so a
    release upstream could turn CI red unseen; each one named there must be pinned, at a version
    its own requirement allows."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for rs in project["optional-dependencies"].values() for r in rs]
    pins = {}
    for line in (REPO / ".ci" / "constraints.txt").read_text("utf-8").splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name.strip().lower())] = version.strip()
    for req in wanted:
        name = re.sub(r"[-_.]+", "-", req.name.lower())
        if name == "amem":
            continue
        assert name in pins, f"{req.name} is not pinned in .ci/constraints.txt: run bash .ci/lock"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"{req.name}=={pins[name]} in .ci/constraints.txt does not satisfy {req}: run bash .ci/lock"
        )
    assert "-c .ci/constraints.txt" in (REPO / ".ci" / "install").read_text("utf-8")
