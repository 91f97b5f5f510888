"""`amem ui` and `amem reviewers`: the console's command line."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from amem.cli import main
from amem.memory import Memory
from amem.services.accounts import check_password


def test_ui_runs_streamlit_on_the_app_with_the_store_in_the_environment(
    mem: Memory, console_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mem``: the store exists (`amem ui` serves an existing store only)."""
    for key in console_env:
        monkeypatch.delenv(key)
    started: dict[str, Any] = {}

    def fake_exec(path: str, argv: list[str], env: dict[str, str]) -> None:
        started.update(path=path, argv=argv, env=env)
        raise SystemExit(0)

    monkeypatch.setattr("amem.cli.ui.os.execve", fake_exec)
    with pytest.raises(SystemExit):
        main(
            [
                "--home",
                "relative-home",
                "--database-url",
                console_env["AMEM_DATABASE_URL"],
                "--policy",
                console_env["AMEM_POLICY"],
                "ui",
                "--port",
                "9123",
                "--no-headless",
            ]
        )
    argv, env = started["argv"], started["env"]
    assert argv[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert Path(argv[4]).name == "app.py" and Path(argv[4]).parent.name == "approval_ui"
    options = dict(zip(argv[5::2], argv[6::2], strict=True))
    assert options["--server.port"] == "9123" and options["--server.address"] == "127.0.0.1"
    assert options["--server.headless"] == "false" and options["--browser.gatherUsageStats"] == "false"
    assert env["AMEM_HOME"] == str(tmp_path / "relative-home")  # absolute: the server's cwd may differ
    assert env["AMEM_DATABASE_URL"] == console_env["AMEM_DATABASE_URL"]
    assert env["AMEM_POLICY"] == console_env["AMEM_POLICY"]


def test_hash_password_prints_a_bcrypt_hash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a long passphrase\n"))
    assert main(["reviewers", "hash-password", "--password-stdin", "--rounds", "4"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("$2b$04$") and "passphrase" not in out
    assert check_password("a long passphrase", out)


def test_hash_password_refuses_a_short_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("short\n"))
    assert main(["reviewers", "hash-password", "--stdin", "--rounds", "4"]) == 2
    captured = capsys.readouterr()
    assert "at least 8 characters" in captured.err and "short" not in captured.out


def test_reviewers_list_says_who_can_sign_in(
    console_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reviewers", "list", "--json"]) == 0
    rows = {r["reviewer"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["alice"]["password"] and not rows["carol"]["password"]
    assert rows["audrey"]["read_only"] and not rows["bob"]["read_only"]
    assert (rows["carol"]["scopes"], rows["alice"]["scopes"]) == (["acme"], None)  # carol owns acme only
    assert all("hash" not in json.dumps(r) for r in rows.values())


def test_reviewers_list_shows_the_installed_policy_not_the_file(
    mem: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once a policy is installed in the ledger, its reviewers are the ones who count."""
    installed = mem.policy.model_copy(
        update={"reviewers": {k: v for k, v in mem.policy.reviewers.items() if k != "bob"}}
    )
    # alice signs in under the ledger's version 1 (installed when the store was made), an admin of it
    by = mem.authentication.signed_in("alice", method="test")
    assert mem.install_policy(installed, by=by)[0].version == 2
    assert main(["reviewers", "list", "--json"]) == 0
    listed = {r["reviewer"] for r in json.loads(capsys.readouterr().out)}
    assert "alice" in listed and "bob" not in listed  # the file still names bob


def test_ui_refuses_a_trusted_proxies_setting_it_cannot_read_before_serving(
    console_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[str] = []
    monkeypatch.setattr("amem.cli.ui.os.execve", lambda path, *_: started.append(path))
    monkeypatch.setenv("AMEM_UI_TRUSTED_PROXIES", "10.0.0.0/8, proxy.local")
    assert main(["ui"]) == 2
    assert "'proxy.local' is no address or network" in capsys.readouterr().err and started == []
