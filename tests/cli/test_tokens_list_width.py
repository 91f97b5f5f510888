"""`amem tokens list` at 80 columns: an admin picks the token to revoke by its name, role and
expiry, so each must be shown whole, never cut to ``sale…``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from amem.domain.models import utcnow
from amem.memory import Memory
from amem.policy import load_policy
from tests.cli.test_note_commands import Cli
from tests.factories import signed_in


def test_tokens_list_at_80_columns_shows_names_roles_and_dates_whole(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    amem = Cli(memory, capsys)
    for args in (
        ("sales-agent", "--scope", "acme", "--expires-in-days", "30"),
        ("billing-sync", "--expires-in-days", "0"),
        ("crm-import",),
    ):
        assert amem("tokens", "create", *args)[0] == 0
    assert amem("tokens", "revoke", "crm-import")[0] == 0
    tokens = {t.name: t for t in memory.tokens.list()}
    today = f"{utcnow():%Y-%m-%d}"

    code, out, err = amem("tokens", "list")

    assert code == 0, err
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80
    rows = {
        name: next(line for line in out.splitlines() if line.startswith(f" {t.id} "))
        for name, t in tokens.items()
    }
    assert all(f" {name} " in rows[name] and " agent " in rows[name] for name in tokens)
    assert " acme " in rows["sales-agent"]
    text = " ".join(out.split())
    assert f"expires {tokens['sales-agent'].expires_at:%Y-%m-%d}" in text
    assert "never expires" in text and f"revoked {today}" in text


def test_tokens_history_at_80_columns_cuts_nothing(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history an auditor reads: who made and revoked which token, whole at 80 columns."""
    monkeypatch.setenv("COLUMNS", "80")
    amem = Cli(memory, capsys)
    assert amem("tokens", "create", "sales-agent", "--scope", "acme", "--expires-in-days", "30")[0] == 0
    assert amem("tokens", "revoke", "sales-agent")[0] == 0
    (token,) = memory.tokens.list()

    code, out, err = amem("tokens", "history")

    assert code == 0, err
    assert "…" not in out
    made, revoked = (" ".join(line.split()) for line in out.splitlines()[1:])
    assert f" created {token.id} sales-agent (agent, reads acme) by os:" in made, out
    assert f" revoked {token.id} sales-agent (agent, reads acme) by os:" in revoked, out
    assert made.endswith(f"expires {token.expires_at:%Y-%m-%d}"), out


def test_a_reviewers_token_is_listed_with_what_it_reads_and_where_its_reviewer_decides(
    reviewer_passwords: dict[str, str],
    memory: Memory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # the passwords first: the store opens under their policy
    """bob decides only in acme; his reviewer token reads every scope (what a reviewer reads is not
    limited). Before, `amem tokens list` and `history` showed it under "scopes" as "all", which
    read as a grant of every account."""
    reviewers = Path(os.environ["AMEM_POLICY"]).parent / "reviewers.yaml"
    data = yaml.safe_load(reviewers.read_text("utf-8"))
    data["reviewers"]["bob"]["scopes"] = ["acme"]
    reviewers.write_text(yaml.safe_dump(data), "utf-8")
    memory.install_policy(load_policy(os.environ["AMEM_POLICY"]), by=signed_in(memory, "alice"))
    memory.tokens.create("bob", "reviewer", by=signed_in(memory, "bob"))
    memory.tokens.create("sales-agent", "agent", scopes=["initech"])
    monkeypatch.setenv("COLUMNS", "80")
    amem = Cli(memory, capsys)

    code, out, err = amem("tokens", "list")

    assert code == 0, err
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80, out
    assert " reads " in out.splitlines()[1] and "scopes" not in out
    lines = out.splitlines()
    bob = next(i for i, line in enumerate(lines) if " bob " in line)
    start, end = lines[1].index(" reads ") + 1, lines[1].index(" last used ")  # wrapped at its spaces
    cell = " ".join(" ".join(line[start:end] for line in lines[bob : bob + 3]).split())
    assert cell == "all (decides in acme)", out
    assert " initech " in next(line for line in lines if " sales-agent " in line)

    code, out, err = amem("tokens", "history")

    assert code == 0, err
    text = " ".join(out.split())
    assert "bob (reviewer, reads all (decides in acme)) by bob" in text, out
    assert "sales-agent (agent, reads initech)" in text, out
