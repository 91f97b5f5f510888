"""``amem demo``: the sample history through the real pipeline, in a store of its own, and a
reviewer who can sign in with the password printed on the terminal."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from unittest.mock import patch

import pytest
import yaml

from amem.cli import main
from amem.memory import Memory
from amem.services.accounts import check_password

HISTORY = {
    "acme.jsonl": [
        {"content": "Acme asked for 40 seats at $12 per seat", "scope": "acme", "at": "2026-01-05T10:00:00Z"},
        {
            "content": "Acme decided to renew in March only with SSO, because their auditor asked for it",
            "scope": "acme",
            "at": "2026-02-01T10:00:00Z",
            "metadata": {"channel": "call"},
        },
    ],
    "globex.jsonl": [
        {"content": "Globex wants a pilot; next step: we will send the pilot plan", "scope": "globex",
         "at": "2026-01-20T10:00:00Z"},
    ],
}  # fmt: skip


def write_history(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, lines in HISTORY.items():
        (directory / name).write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    return directory


def test_demo_loads_every_account_in_time_order_with_a_reviewer_who_can_sign_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AMEM_POLICY")  # as on a new user's machine
    store = tmp_path / "demo"
    code = main(["demo", "--no-ui", "--samples", str(write_history(tmp_path / "h")), "--store", str(store)])
    assert code == 0
    out = capsys.readouterr().out
    password = re.search(r"sign in as: demo\s+password: (\S+)", out)
    assert password, out
    assert f"demo store {store}: 3 notes in 2 accounts from 3 raw logs" in out

    reviewers = yaml.safe_load((store / "reviewers.yaml").read_text("utf-8"))["reviewers"]
    assert reviewers["demo"]["roles"] == ["cs_lead"]
    assert check_password(password.group(1), reviewers["demo"]["password_hash"])
    assert password.group(1) not in (store / "reviewers.yaml").read_text("utf-8")

    with Memory(store, database_url=f"sqlite:///{store / 'ledger.sqlite3'}") as mem:
        assert mem.policy.source == str(store / "policies.yaml")  # the store's own policy
        installed = mem.policy_in_force.installed  # ... installed when the demo made the store
        assert installed and (installed.version, installed.installed_by) == (1, "system:bootstrap")
        assert mem.policy.may_approve("demo", "decision_rationale")
        raw = list(mem.export("raw_logs"))
        days = [r["occurred_at"].date().isoformat() for r in raw]
        assert days == ["2026-01-05", "2026-01-20", "2026-02-01"]
        assert raw[2]["metadata"] == {"channel": "call"} and raw[0]["actor"] == "agent:sales-agent"
        assert mem.pending(limit=100), "the demo shows a queue of held changes"
        items, changes = mem.count_review_items().items, mem.count_pending()
    # it says what waits in the reviewer's unit, one item per input, and where to see it
    assert f"{items} review items ({changes} changes) wait for review" in out and items < changes
    assert f"amem --home {store} pending" in out

    # Run again: nothing is loaded twice (the demo reviewer's password stays: see below).
    assert main(["demo", "--no-ui", "--samples", str(tmp_path / "h"), "--store", str(store)]) == 0
    captured = capsys.readouterr()
    assert "already loaded" in captured.err and "3 notes in 2 accounts from 3 raw logs" in captured.out


def approve_first_item(store: Path, password: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The demo reviewer approves the first review item of ``store``, signing in with ``password``."""
    assert main(["--home", str(store), "pending", "--json"]) == 0
    item = json.loads(capsys.readouterr().out)["items"][0]["key"]
    with patch("sys.stdin", io.StringIO(password + "\n")):
        code = main(["--home", str(store), "approve", item, "--reviewer", "demo", "--password-stdin"])
    return code, capsys.readouterr().err


def test_the_demo_run_again_keeps_its_reviewer_so_the_password_printed_still_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the second run printed a new password and rewrote reviewers.yaml, so the store's
    policy file no longer matched the version installed in its ledger, and every approval, with
    either password, failed (exit 2, "this process reads but decides nothing")."""
    monkeypatch.delenv("AMEM_POLICY")
    store, samples = tmp_path / "demo", write_history(tmp_path / "h")
    assert main(["demo", "--no-ui", "--samples", str(samples), "--store", str(store)]) == 0
    first = re.search(r"sign in as: demo\s+password: (\S+)", capsys.readouterr().out)
    assert first
    reviewers = (store / "reviewers.yaml").read_bytes()

    assert main(["demo", "--no-ui", "--samples", str(samples), "--store", str(store)]) == 0
    again = capsys.readouterr().out
    assert f"sign in as: demo   password: the one printed when {store} was made" in again
    assert f"amem demo --store {store} --reset" in again  # how to get a new one
    assert (store / "reviewers.yaml").read_bytes() == reviewers

    code, err = approve_first_item(store, first.group(1), capsys)
    assert code == 0, err


def test_the_demo_never_writes_into_a_store_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `amem demo --store .amem` marked the user's own store a demo store and put the demo's
    policy and reviewers in it (the demo's policy then governed it); `--reset` then deleted it."""
    store = tmp_path / ".amem"
    signed = "Acme signed the order form for 250 seats"
    assert main(["--home", str(store), "add", signed, "--scope", "acme"]) == 0
    before = sorted(p.name for p in store.iterdir())
    samples = str(write_history(tmp_path / "h"))
    for reset in ([], ["--reset"], []):
        code = main(["demo", "--no-ui", *reset, "--samples", samples, "--store", str(store)])
        assert code == 2
        err = capsys.readouterr().err
        assert f"{store} is not a demo store" in err and "give --store a new directory" in err
    assert sorted(p.name for p in store.iterdir()) == before  # no marker, policy or reviewers file
    with Memory(store, database_url=f"sqlite:///{store / 'ledger.sqlite3'}") as mem:
        assert [r["text"] for r in mem.export("raw_logs")] == [signed]


def test_demo_never_deletes_a_store_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "precious.txt").write_text("keep", "utf-8")
    code = main(["demo", "--no-ui", "--reset", "--samples", str(tmp_path), "--store", str(mine)])
    assert code == 2 and "is not a demo store" in capsys.readouterr().err
    assert (mine / "precious.txt").read_text("utf-8") == "keep"


def test_demo_without_samples_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "none"
    empty.mkdir()
    code = main(["demo", "--no-ui", "--samples", str(empty), "--store", str(tmp_path / "d")])
    assert code == 2 and f"no sample history (*.jsonl) in {empty}" in capsys.readouterr().err


def test_the_console_without_its_extra_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "streamlit", None)  # as if `pip install amem` without [console]
    assert main(["--home", str(tmp_path), "ui"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the console needs streamlit: install it with pip install 'amem[console]'")
    assert main(["demo", "--store", str(tmp_path / "d")]) == 2
    assert "amem[console]" in capsys.readouterr().err
