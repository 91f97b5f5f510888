"""`amem erase --scope` by an eraser limited to some accounts, and `amem erasures`, where a scope has
several spellings: a data subject's request takes "acme", "Acme" and "ACME" alike (one account
whatever its case), so an eraser limited to "acme" is refused before any question, and the list of
erasures names the spellings an erasure reached."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from unittest.mock import patch

import pytest
import yaml

from amem.cli import main
from amem.domain.hashing import REDACTED
from amem.memory import Memory
from amem.policy import load_policy
from tests.conftest import REVIEWER_PASSWORDS
from tests.factories import signed_in


def run(
    memory: Memory, capsys: pytest.CaptureFixture[str], *args: str, stdin: str = ""
) -> tuple[int, str, str]:
    home = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    with patch("sys.stdin", io.StringIO(stdin)):
        code = main([*home, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _spellings(memory: Memory) -> dict[str, str]:
    """Raw logs of "acme", "Acme" and "ACME": raw log id by scope."""
    ids = {}
    for scope, text in (
        ("acme", "Acme wants SSO before the renewal"),
        ("Acme", "Call with Acme: Jane Roe-Qzx asked to cancel"),
        ("ACME", "Acme asked for a quote for 40 seats"),
    ):
        ids[scope] = memory.read(memory.add_note(text, actor="agent:sales-agent", scope=scope)).raw_log_ids[0]
    return ids


def test_an_eraser_limited_to_acme_is_refused_before_the_prompt_when_acme_has_other_spellings(
    reviewer_passwords: dict[str, str],
    memory: Memory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # the passwords first: the store opens under their policy
    """Before, carol (decides in "acme" only) was asked "3 raw logs of scopes ACME, Acme, acme ...
    Erase them?" and refused only once she answered yes. Standard input holds her password and no
    answer: a prompt would be recorded here (and find nothing to read)."""
    ids = _spellings(memory)
    reviewers = Path(os.environ["AMEM_POLICY"]).parent / "reviewers.yaml"
    data = yaml.safe_load(reviewers.read_text("utf-8"))
    hashed = data["reviewers"]["alice"]["password_hash"]
    data["reviewers"]["carol"] = {"roles": ["cs_lead"], "scopes": ["acme"], "password_hash": hashed}
    reviewers.write_text(yaml.safe_dump(data), "utf-8")
    memory.install_policy(load_policy(os.environ["AMEM_POLICY"]), by=signed_in(memory, "alice"))
    asked: list[str] = []

    def confirm(text: str, default: bool = False) -> bool:
        asked.append(text)
        return True

    monkeypatch.setattr("amem.cli.trust.typer.confirm", confirm)

    erase = ("erase", "--scope", "acme", "--reviewer", "carol", "--reason", "dsr", "--password-stdin")
    code, _, err = run(memory, capsys, *erase, stdin=reviewer_passwords["alice"] + "\n")

    assert asked == [] and code == 2, (asked, err)
    said = " ".join(err.split())
    assert said.startswith("error: carol decides in acme only: 'acme' reaches raw logs of ACME, Acme")
    assert "nothing was erased; ask alice (who may erase in all of them) to erase it" in said
    texts = {r.id: r.text for r in memory.raw_logs(list(ids.values()))}
    assert REDACTED not in texts.values() and not memory.erasures()


def test_the_list_of_erasures_names_the_spellings_a_scope_erasure_reached(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, `amem erasures` said "scope acme" only: an auditor could not tell the erasure took
    "Acme" and "ACME" too without `amem export erasures`."""
    _spellings(memory)
    memory.add_note("Globex signed the renewal", actor="agent:sales-agent", scope="globex")
    erase = ("erase", "--reviewer", "alice", "--reason", "dsr", "--yes", "--password-stdin")
    password = REVIEWER_PASSWORDS["alice"] + "\n"
    assert run(memory, capsys, *erase, "--scope", "acme", stdin=password)[0] == 0
    assert run(memory, capsys, *erase, "--scope", "globex", stdin=password)[0] == 0

    code, out, _ = run(memory, capsys, "erasures")

    assert code == 0
    globex, acme = out.strip().splitlines()  # newest first
    assert "by alice: scope acme (also ACME, Acme); why: dsr; redacted 3 raw logs" in acme
    assert "by alice: scope globex; why: dsr;" in globex  # one spelling: nothing more said
    code, out, _ = run(memory, capsys, "erasures", "--json")
    listed = {e["scope"]: e["scopes"] for e in json.loads(out)}
    assert listed == {"acme": ["ACME", "Acme", "acme"], "globex": ["globex"]}
