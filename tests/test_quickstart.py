"""The README's quick start, as a new user runs it: the installed command, a fresh data directory,
no API key, no configuration and no network.

Each command runs in its own process with an environment built from nothing (no AMEM_* at all, so
the packaged default policy and the offline analyst and embedder are used). A guard loaded through
``sitecustomize`` refuses and records every attempt to reach the network, and proxies point at a
closed port, so a library that tried to download anything would fail fast and be named here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

NETWORK_GUARD = """
import os, socket

_log = os.environ["QUICKSTART_NETWORK_LOG"]


def _refuse(what):
    with open(_log, "a", encoding="utf-8") as f:
        f.write(f"{what}\\n")
    raise OSError(f"network disabled by the quick start test: {what}")


_connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _refuse(f"connect {address!r}")
    return _connect(self, address)


def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _refuse(f"connect_ex {address!r}")
    return _connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    _refuse(f"getaddrinfo {host!r}")


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
"""


class FreshMachine:
    """``python -m amem`` with nothing configured but a data directory of its own."""

    def __init__(self, root: Path) -> None:
        guard = root / "guard"
        guard.mkdir()
        (guard / "sitecustomize.py").write_text(NETWORK_GUARD, encoding="utf-8")
        self.network_log = root / "network.log"
        self.cwd = root / "work"
        self.cwd.mkdir()
        dead_proxy = "http://127.0.0.1:9"  # nothing listens there: any HTTP attempt fails at once
        self.env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(root / "user"),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(guard),
            "QUICKSTART_NETWORK_LOG": str(self.network_log),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False",
            "HTTP_PROXY": dead_proxy,
            "HTTPS_PROXY": dead_proxy,
            "http_proxy": dead_proxy,
            "https_proxy": dead_proxy,
            "NO_PROXY": "",
            "COLUMNS": "100",
        }

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "amem", *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            input=stdin,
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        done = self.run(*args, stdin=stdin)
        assert done.returncode == 0, f"amem {' '.join(args)}: exit {done.returncode}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))

    def network_attempts(self) -> list[str]:
        return self.network_log.read_text().splitlines() if self.network_log.exists() else []


def quick_start_inputs() -> tuple[str, str, str, str]:
    """The sentence, scope and actor ``amem add`` gets in the README, and the search query."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1]
    add = re.search(r'amem add "([^"]+)"\s*\\?\s*--scope (\S+) --actor (\S+)', quick)
    search = re.search(r'amem search "([^"]+)" --scope (\S+)', quick)
    assert add and search, "the README's quick start no longer shows `amem add` and `amem search`"
    assert search.group(2) == add.group(2)
    return add.group(1), add.group(2), add.group(3), search.group(1)


def test_the_readme_quick_start_works_offline_on_a_fresh_machine(tmp_path: Path) -> None:
    text, scope, actor, query = quick_start_inputs()
    amem = FreshMachine(tmp_path)

    # the README first sets alice's password (the default policy is copied here), then makes the
    # store: the command that creates it installs the policy it runs with as the ledger's version 1
    assert "password set for alice" in amem.ok(
        "reviewers", "set-password", "alice", "--password-stdin", stdin="s3cret-pw\n"
    )
    assert "ready" in amem.ok("init")  # the store in ./.amem, which every later command finds
    added = amem.json("add", text, "--scope", scope, "--actor", actor)
    installed = amem.json("policy")["installed"]
    assert (installed["version"], installed["installed_by"]) == (1, "system:bootstrap")
    note_id = added["note_id"]
    note = added["note"]
    assert note["content"] == text and note["scope"] == scope
    assert note["keywords"] and note["tags"]  # the offline analyst built the note
    assert added["pending_proposals"], "the quick start's sentence leaves nothing for `amem approve`"

    found = amem.json("search", query, "--scope", scope)
    assert found and found[0]["note_id"] == note_id

    items = amem.json("pending")["items"]  # one review item: the one input, all its held values
    assert [i["key"] for i in items] == note["raw_log_ids"]
    pending = [f["proposal"] for f in items[0]["fields"]]
    assert sorted(p["id"] for p in pending) == sorted(added["pending_proposals"])
    # the README approves the decision rationale the model proposed ("matches the call")
    chosen = next(p for p in pending if p["attribute"] == "decision_rationale")
    assert chosen["note_id"] == note_id and chosen["proposer"]["kind"] == "llm"
    assert chosen["proposer"]["model"] == "offline"

    # ... and approves as alice, whose password it set first
    approve = ["approve", chosen["id"], "--reviewer", "alice", "--comment", "matches the call"]
    assert amem.run(*approve, "--password-stdin", stdin="wrong-pw\n").returncode == 2
    approved = amem.ok(*approve, "--password-stdin", stdin="s3cret-pw\n")
    assert "approved by alice" in approved

    events = amem.json("history", note_id)
    created = events[0]
    assert created["event"] == "created" and created["actor"] == actor
    assert created["raw_log_ids"] == note["raw_log_ids"]
    decision = [e for e in events if e["proposal_id"] == chosen["id"]]
    assert [e["event"] for e in decision] == ["proposed", "approved", "applied"]
    assert decision[1]["actor"] == "person:alice" and decision[1]["comment"] == "matches the call"

    attribute = chosen["attribute"]
    before_approval = datetime.fromisoformat(decision[1]["at"]) - timedelta(microseconds=1)
    then = amem.json("show", note_id, "--as-of", before_approval.isoformat())
    now = amem.json("show", note_id)
    assert then[attribute] in (None, [], {}) and now[attribute] == chosen["new_value"]
    assert now["version"] == then["version"] + 1
    before_creation = datetime.fromisoformat(created["at"]) - timedelta(seconds=1)
    assert "did not exist" in amem.ok("show", note_id, "--as-of", before_creation.isoformat())

    verified = amem.json("verify")
    applied = sum(e["event"] == "applied" for e in events)
    assert verified["ok"] is True and verified["changes_checked"] == applied
    assert verified["raw_logs_checked"] == 1
    assert "signing key" in amem.ok("keys", "init")
    assert "appended to" in amem.ok("checkpoint")
    proved = amem.json("verify", "--checkpoints", ".amem/checkpoints.jsonl")  # the README's path
    assert proved["ok"] is True

    assert amem.network_attempts() == []
    probe = subprocess.run(
        [sys.executable, "-c", "import urllib.request as u; u.urlopen('http://example.com', timeout=5)"],
        env=amem.env,
        cwd=amem.cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert probe.returncode != 0 and amem.network_attempts(), "the network guard is not in force"
