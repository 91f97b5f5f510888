"""`amem pending` says an edit's note was deleted since, before the reviewer approves it; `amem
approve` refuses it (the one proposal, or skips it in an item or --all, counted); `amem reject` still
decides it. `amem pending --reviewer NAME` counts the items waiting outside NAME's accounts, in
words and under --json (``waiting_elsewhere``)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from unittest.mock import patch

import pytest
import yaml

from amem.cli import main
from amem.domain.models import Note, ProposalStatus
from amem.memory import Memory
from amem.policy import load_policy
from tests.conftest import REVIEWER_PASSWORDS
from tests.factories import held_by_model, said, signed_in


@pytest.fixture(autouse=True)
def _passwords(reviewer_passwords: dict[str, str]) -> None:
    """Every reviewer has a password; decisions below give theirs on standard input."""


def run(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command as typed; a decision gets its reviewer's password on stdin."""
    argv, stdin = list(args), ""
    if argv[0] in ("approve", "reject") and "--reviewer" in argv:
        argv.append("--password-stdin")
        stdin = REVIEWER_PASSWORDS[argv[argv.index("--reviewer") + 1]] + "\n"
    with patch("sys.stdin", io.StringIO(stdin)):
        code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *argv])
    captured = capsys.readouterr()
    return code, " ".join(captured.out.split()), " ".join(captured.err.split())


def _held_next_step(memory: Memory, note: Note, value: str) -> str:
    p = held_by_model(memory, note, "next_step", value)
    assert p.status == ProposalStatus.PENDING
    return p.id


def test_pending_says_the_note_was_deleted_and_approve_refuses_what_reject_decides(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    note = said(memory, "Acme call: next step is to send the quote")
    edit = _held_next_step(memory, note, "send the quote")
    asked = memory.delete(note.id, actor="agent:sales-agent", reason="a duplicate")
    memory.approve(asked.id, reviewer=signed_in(memory, "alice"))
    seq = max(e.change_seq for e in memory.history(note.id) if e.change_seq is not None)

    code, out, err = run(memory, capsys, "pending")
    assert code == 0, err
    assert f"deleted note {note.id} was deleted on " in out, out
    assert f"by person:alice (change {seq}): approving is refused; reject it, or restore" in out
    assert f"`amem revert {seq}`" in out
    [field] = json.loads(_json(memory, capsys, "pending"))["items"][0]["fields"]
    assert field["note_deleted"]["change_seq"] == seq

    code, out, err = run(memory, capsys, "approve", edit, "--reviewer", "alice")
    assert code != 0 and f"note {note.id} was deleted on " in err and "this edit no longer applies" in err
    assert memory.proposal(edit).status == ProposalStatus.PENDING
    code, out, err = run(memory, capsys, "approve", note.raw_log_ids[0], "--reviewer", "alice")
    assert code == 2 and "1 skipped (1 on a note deleted since)" in out, out
    code, out, err = run(memory, capsys, "approve", "--all", "--yes", "--reviewer", "alice")
    assert code == 2 and "1 skipped (1 on a note deleted since)" in out, out
    assert memory.proposal(edit).status == ProposalStatus.PENDING

    code, out, err = run(memory, capsys, "reject", edit, "--reviewer", "alice", "--comment", "note gone")
    assert code == 0, err
    assert memory.proposal(edit).status == ProposalStatus.REJECTED


def _json(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with patch("sys.stdin", io.StringIO("")):
        code = main(
            ["--database-url", memory.settings.database_url, "--home", str(memory.home), *args, "--json"]
        )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_pending_for_a_reviewer_counts_one_item_elsewhere_in_words_and_in_json(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    globex = said(memory, "globex call", scope="globex")
    _held_next_step(memory, globex, "call back")
    reviewers = Path(os.environ["AMEM_POLICY"]).parent / "reviewers.yaml"
    data = yaml.safe_load(reviewers.read_text("utf-8"))
    data["reviewers"]["bob"]["scopes"] = ["acme"]
    reviewers.write_text(yaml.safe_dump(data), "utf-8")
    memory.install_policy(load_policy(os.environ["AMEM_POLICY"]), by=signed_in(memory, "alice"))

    code, out, err = run(memory, capsys, "pending", "--reviewer", "bob")
    assert code == 0, err
    assert out.endswith("; 1 review item waits in others"), out
    code, out, err = run(memory, capsys, "pending", "--reviewer", "bob", "--attribute", "next_step")
    assert out.endswith("; 1 review item matches in others"), out
    page = json.loads(_json(memory, capsys, "pending", "--reviewer", "bob"))
    assert page["total"] == 0 and page["waiting_elsewhere"] == 1
    # with an item in bob's own account too: his queue shows it, and the other one is still counted
    acme = said(memory, "acme call")
    _held_next_step(memory, acme, "send the quote")
    page = json.loads(_json(memory, capsys, "pending", "--reviewer", "bob"))
    assert page["total"] == 1 and page["waiting_elsewhere"] == 1
    assert "waiting_elsewhere" not in json.loads(_json(memory, capsys, "pending"))  # no reviewer named
