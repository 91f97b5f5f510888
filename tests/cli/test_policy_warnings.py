"""`amem restore` and `amem demo` open a store of their own, not through ``open_memory``: they said
nothing of a policy with problems, which every other command warns about. They now print the same
`warning:` lines as any command on that store, each once."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from unittest.mock import patch

import pytest

from amem.cli import main
from amem.memory import Memory
from amem.policy import DEFAULT_POLICY_PATH
from tests.cli.test_demo import write_history
from tests.factories import make_note

#: A rule whose condition is an empty list matches nothing: a flaw `amem policy install` refuses, so
#: a policy file holding it is warned about by every command that opens a store with it.
FLAWED_RULE = "  category:\n    mode: auto\n    rules:\n      - when: {tags_any: []}\n        mode: review\n"


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with patch("sys.stdout", out), patch("sys.stderr", err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


def _flawed(policy: Path) -> Path:
    """``policy`` (a copy of the packaged policy) given a rule that never applies."""
    text = policy.read_text("utf-8")
    assert "  category: {mode: auto}\n" in text
    policy.write_text(text.replace("  category: {mode: auto}\n", FLAWED_RULE), "utf-8")
    return policy


def _flawed_copy(directory: Path) -> Path:
    directory.mkdir()
    shutil.copyfile(DEFAULT_POLICY_PATH.parent / "reviewers.yaml", directory / "reviewers.yaml")
    return _flawed(Path(shutil.copyfile(DEFAULT_POLICY_PATH, directory / "policies.yaml")))


def test_restore_warns_of_the_policy_as_other_commands_do_once(tmp_path: Path) -> None:
    with Memory(tmp_path / "home") as mem:
        make_note(mem, "Initech renewed for two years", scope="initech")
        backup = mem.backup(tmp_path / "b.sqlite3").path
    policy = _flawed_copy(tmp_path / "policy")
    where = ["--home", str(tmp_path / "new"), "--policy", str(policy)]

    code, out, err = _cli(*where, "restore", str(backup))

    assert code == 0, err
    assert "restored" in out and "index rebuilt: 1 notes" in out
    said = _warnings(err)
    assert any("`amem policy install` refuses it" in w and "tags_any" in w for w in said), err
    assert any("is not the one installed in the ledger" in w for w in said), err
    # what any command on the restored store says, each line once
    code, _, other = _cli(*where, "notes")
    assert code == 0 and said == _warnings(other) and len(set(said)) == len(said)


def test_demo_warns_of_its_stores_policy_as_other_commands_do_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMEM_POLICY")  # as on a new user's machine
    store = tmp_path / "demo"
    demo = ["demo", "--no-ui", "--samples", str(write_history(tmp_path / "h")), "--store", str(store)]
    code, _, err = _cli(*demo)
    assert code == 0 and _warnings(err) == [], err  # the packaged policy, installed: nothing to say
    _flawed(store / "policies.yaml")  # the demo store's own policy, edited since

    code, out, err = _cli(*demo)

    assert code == 0 and "3 notes in 2 accounts" in out, err
    said = _warnings(err)
    assert any("`amem policy install` refuses it" in w and "tags_any" in w for w in said), err
    assert any("is not the one installed in the ledger" in w for w in said), err
    ledger = f"sqlite:///{store / 'ledger.sqlite3'}"
    policy = str(store / "policies.yaml")
    code, _, other = _cli("--home", str(store), "--database-url", ledger, "--policy", policy, "notes")
    assert code == 0 and said == _warnings(other) and len(set(said)) == len(said)
