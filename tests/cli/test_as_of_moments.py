"""Every --as-of of the CLI names the end of the period typed: the second `amem history` prints,
the day an auditor asks about (values.parse_as_of, as the HTTP API, MCP and console read theirs)."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC
from unittest.mock import patch

import pytest

from amem.cli import main
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, said


def run(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with patch("sys.stdin", io.StringIO("")):
        code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def flat(text: str) -> str:
    return " ".join(text.split())


def test_show_as_of_a_second_history_prints_has_the_change_made_in_that_second(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """`amem history` prints each change to the second; `amem show --as-of` that second read it as
    the second's start, before the change (made some microseconds into it): the note without it,
    or "did not exist" when the note was made in the same second."""
    note = make_note(memory, "Acme wants SSO")
    memory.propose(note.id, "tags", ["sso"], reason="the call", proposer=llm_proposer(memory))
    code, out, _ = run(memory, capsys, "history", note.id)
    printed = re.search(r"^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) UTC\s+applied\s+tags", out, re.MULTILINE)
    assert code == 0 and printed is not None, out

    moment = f"{printed[1]}T{printed[2]}Z"
    code, out, _ = run(memory, capsys, "show", note.id, "--as-of", moment, "--json")
    assert code == 0 and json.loads(out)["tags"] == ["sso"]
    # the time exactly as history printed it, " UTC" and all, as README says one may copy it
    copied = printed[0].split("applied")[0].strip()
    code, out, err = run(memory, capsys, "show", note.id, "--as-of", copied, "--json")
    assert code == 0 and json.loads(out)["tags"] == ["sso"], err
    code, out, err = run(memory, capsys, "facts", "--scope", "acme", "--as-of", f"{printed[1]} UTC")
    assert code == 0, err


def test_facts_show_and_policy_as_of_a_date_are_what_the_ledger_held_that_day(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """`amem facts --as-of 2026-12-07` ("what it said that day") read the date as its first
    instant, 00:00 UTC: nothing said that day was in it, while the console's page for the same
    day listed it."""
    note = said(memory, "Acme pays $42 per seat")
    made = next(c for c in memory.changes() if c.note_id == note.id)
    day = made.applied_at.astimezone(UTC).date().isoformat()

    code, out, _ = run(memory, capsys, "facts", "--scope", "acme", "--as-of", day)
    assert code == 0 and "$42 per seat" in out
    assert f"facts of acme as the ledger held them at {day} 23:59:59 UTC: 1" in flat(out)
    code, out, _ = run(memory, capsys, "show", note.id, "--as-of", day, "--json")
    assert code == 0 and json.loads(out)["content"] == "Acme pays $42 per seat"

    (first,) = memory.policy_versions()
    installed = first.installed_at.astimezone(UTC).date().isoformat()
    code, out, err = run(memory, capsys, "policy", "export", "--as-of", installed)
    assert code == 0 and out == first.text, err


def test_a_program_asking_the_library_as_of_a_day_gets_what_a_person_gets(memory: Memory) -> None:
    """`Memory.facts(as_of="2026-12-07")`, `search` and `as_of` read the text as the day's first
    instant while the CLI, the APIs and the console read it as its end: a program asking about
    today got nothing said today. Text is read as every interface reads it; a datetime stays exact."""
    note = said(memory, "Acme pays $42 per seat")
    made = next(c for c in memory.changes() if c.note_id == note.id)
    day = made.applied_at.astimezone(UTC).date().isoformat()
    assert [f.note.id for f in memory.facts("acme", as_of=day).facts] == [note.id]
    assert [h.note_id for h in memory.search("price per seat", 5, scope="acme", as_of=day)] == [note.id]
    assert memory.as_of(note.id, day) is not None
    assert (
        memory.as_of(note.id, made.applied_at.replace(microsecond=0)) is None
        or made.applied_at.microsecond == 0
    )
