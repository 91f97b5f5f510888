"""`amem demo` without --no-ui: the console starts on the demo's store, and the reviewer whose
sign-in the terminal shows signs in there and sees the queue of held changes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from approval_ui.state import ACCOUNT_KEY
from tests.approval_ui.conftest import APP, plain, texts
from tests.cli.test_demo import write_history


def test_the_demo_opens_the_console_where_the_printed_sign_in_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from amem.cli import main

    monkeypatch.delenv("AMEM_POLICY")  # as on a new user's machine
    started: dict[str, Any] = {}

    def fake_exec(path: str, argv: list[str], env: dict[str, str]) -> None:  # instead of streamlit
        started.update(argv=argv, env=env)
        raise SystemExit(0)

    monkeypatch.setattr("amem.cli.ui.os.execve", fake_exec)
    store = tmp_path / "demo"
    history = write_history(tmp_path / "h")
    with pytest.raises(SystemExit):
        main(["demo", "--samples", str(history), "--store", str(store), "--port", "8612"])
    shown = capsys.readouterr().out
    password = re.search(r"sign in as: (\S+)\s+password: (\S+)", shown)
    assert password, shown
    assert "console: http://127.0.0.1:8612" in shown

    argv, env = started["argv"], started["env"]
    assert argv[argv.index("--server.port") + 1] == "8612"
    assert env["AMEM_HOME"] == str(store)
    assert env["AMEM_DATABASE_URL"] == f"sqlite:///{store / 'ledger.sqlite3'}"
    assert env["AMEM_POLICY"] == str(store / "policies.yaml")

    for key in ("AMEM_HOME", "AMEM_DATABASE_URL", "AMEM_POLICY"):  # what the console process gets
        monkeypatch.setenv(key, env[key])
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    fields = {t.label: t for t in at.text_input}
    fields["Reviewer"].input(password.group(1))
    fields["Password"].input(password.group(2))
    next(b for b in at.button if b.label == "Sign in").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[ACCOUNT_KEY] == "demo"
    assert "Review queue" in [t.value for t in at.title]
    assert "Demo Reviewer" in plain(texts(at))
    assert "we will send the pilot plan" in plain(texts(at)), "the held next step is in the queue"
