"""`amem policy history / export` (the policy as it was, for an auditor) and `amem reviewers
set-password` on a policy that names a reviewer in policies.yaml itself."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from unittest.mock import patch

import pytest

from amem.cli import main
from amem.memory import Memory
from amem.policy import Mode, fingerprint, load_policy, parse_policy
from amem.services.accounts import check_password, hash_password
from tests.factories import signed_in


def run(
    memory: Memory, capsys: pytest.CaptureFixture[str], *args: str, stdin: str = ""
) -> tuple[int, str, str]:
    with patch("sys.stdin", io.StringIO(stdin)):
        code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_auditor_reads_every_installed_version_of_the_policy(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    first = memory.policy_in_force.installed
    assert first is not None
    held = {**memory.policy.attributes, "tags": memory.policy.attributes["decision_rationale"]}
    second = memory.policy.model_copy(update={"attributes": held})  # tags held for review from now on
    version, _ = memory.install_policy(second, by=signed_in(memory, "alice"))

    code, out, err = run(memory, capsys, "policy", "history", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["version"], r["sha256"], r["installed_by"]) for r in rows] == [
        (1, first.sha256, "system:bootstrap"),
        (2, fingerprint(second), "alice"),
    ]
    assert rows[0]["installed_at"].startswith(first.installed_at.isoformat()[:19])
    code, out, _ = run(memory, capsys, "policy", "history")
    assert code == 0 and first.sha256[:12] in out and version.sha256[:12] in out and "alice" in out

    def exported(*args: str) -> str:
        code, out, err = run(memory, capsys, "policy", "export", *args)
        assert code == 0, err
        return out

    assert parse_policy(exported()).route("tags", [], "llm").mode == Mode.REVIEW  # the newest
    assert exported("--version", "1") == first.text
    assert parse_policy(exported("--version", "1")).route("tags", [], "llm").mode == Mode.AUTO
    assert exported("--as-of", first.installed_at.isoformat()) == first.text
    assert exported("--as-of", (version.installed_at + timedelta(days=1)).isoformat()) == version.text

    code, _, err = run(memory, capsys, "policy", "export", "--version", "9")
    assert code != 0 and "no policy version 9" in err
    before = (first.installed_at - timedelta(days=1)).isoformat()
    code, _, err = run(memory, capsys, "policy", "export", "--as-of", before)
    assert code != 0 and "no policy was installed by" in err and "version 1" in err
    code, _, err = run(memory, capsys, "policy", "export", "--version", "1", "--as-of", before)
    assert code != 0 and "not both" in err


def _policy_naming_carol(folder: Path, carol: str) -> Path:
    folder.mkdir()
    (folder / "reviewers.yaml").write_text("reviewers:\n  alice: {roles: [lead]}\n", "utf-8")
    path = folder / "policies.yaml"
    path.write_text(
        "roles:\n  lead: {approves: ['*']}\n"
        f"reviewers:\n  carol: {carol}\nreviewers_file: reviewers.yaml\n",
        "utf-8",
    )
    return path


def test_setting_a_password_keeps_the_roles_and_scopes_policies_yaml_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """carol is named in policies.yaml (a lead of acme only); her password goes to the reviewers
    file, and she keeps her role and her limit (before, she lost both: every account, no role)."""
    path = _policy_naming_carol(tmp_path / "p", "{name: Carol, roles: [lead], scopes: [acme]}")
    args = ["--policy", str(path), "--home", str(tmp_path / "h"), "reviewers", "set-password", "carol"]
    with patch("sys.stdin", io.StringIO("carol-password\n")):
        assert main([*args, "--password-stdin"]) == 0, capsys.readouterr().err
    carol = load_policy(path).reviewer("carol")
    assert carol is not None and (carol.roles, carol.scopes) == (["lead"], ["acme"])
    assert check_password("carol-password", carol.password_hash)

    # her hash kept in policies.yaml itself: replaced there, never shadowed by a second one
    digest = hash_password("carol-password", rounds=4)
    path = _policy_naming_carol(tmp_path / "q", f"{{roles: [lead], password_hash: '{digest}'}}")
    listed = (path.parent / "reviewers.yaml").read_text("utf-8")
    args[1] = str(path)
    with patch("sys.stdin", io.StringIO("another-password\n")):
        assert main([*args, "--password-stdin"]) == 2
    assert "password_hash is in" in capsys.readouterr().err
    assert (path.parent / "reviewers.yaml").read_text("utf-8") == listed
