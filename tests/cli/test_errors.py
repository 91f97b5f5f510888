"""Each mistake a new user met says what was wrong in one line, exit 2, and JSON under --json."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from amem.cli import main
from amem.domain.models import utcnow
from amem.ledger import schema
from amem.memory import Memory
from amem.policy import load_policy, parse_policy
from tests.factories import make_note


def run(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_downgrade_to_an_unknown_revision_is_a_one_line_mistake(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    known = schema.known_revisions()
    code, out, err = run(memory, capsys, "db", "downgrade", "9999")
    assert code == 2
    line = one_line_error(err)
    assert "9999" in line and ", ".join(known) in line and "-1" in line
    code, out, _ = run(memory, capsys, "db", "current", "--json")
    assert json.loads(out)["current"] == known[-1]  # nothing moved


def test_downgrade_by_relative_steps_as_its_help_says(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    memory.close()
    head, previous = schema.known_revisions()[-1], schema.known_revisions()[-2]
    code, out, err = run(memory, capsys, "db", "downgrade", "-1", "--json")
    assert code == 0, err
    assert json.loads(out) == {"before": head, "after": previous}
    code, out, err = run(memory, capsys, "db", "upgrade", "+1", "--json")
    assert code == 0, err
    assert json.loads(out)["after"] == head
    too_far = f"-{len(schema.known_revisions()) + 1}"  # below the first revision
    code, out, err = run(memory, capsys, "db", "downgrade", too_far)
    assert code == 2 and too_far in one_line_error(err)


def test_errors_under_json_are_one_json_object_on_stderr(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(memory, capsys, "show", "n_nosuchnote", "--json")
    assert code == 2 and out == ""
    body = json.loads(one_line_error(err))
    assert body["exit_code"] == 2 and body["error"].startswith("note n_nosuchnote does not exist in ")
    code, out, err = run(memory, capsys, "pending", "--limit", "many", "--json")
    assert code == 2 and out == "" and "--limit" in json.loads(one_line_error(err))["error"]
    code, out, err = run(memory, capsys, "db", "downgrade", "0009", "--json")
    assert code == 2 and "0009" in json.loads(one_line_error(err))["error"]


def test_policy_names_nobody_for_a_frozen_attribute(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(memory, capsys, "policy", "--json")
    assert code == 0
    rows = {r["attribute"]: r for r in json.loads(out)["attributes"]}
    assert rows["content"]["mode"] == "frozen" and rows["content"]["approver_roles"] == []
    assert rows["decision_rationale"]["approver_roles"] == ["sales_lead", "cs_lead"]
    code, out, _ = run(memory, capsys, "policy")
    content_row = next(line for line in out.splitlines() if "│ content" in line)
    assert "nobody" in content_row and "cs_lead" not in content_row


def test_who_may_approve_follows_rules_that_unfreeze_an_attribute() -> None:
    policy = parse_policy(
        """
attributes:
  content: {mode: frozen}
  context:
    mode: frozen
    rules: [{when: {tags_any: [draft]}, mode: review}]
roles:
  lead: {approves: ["*"]}
"""
    )
    assert policy.who_may_approve("content") == []
    assert policy.who_may_approve("context") == ["lead"]  # reviewable when the note is a draft
    assert load_policy().who_may_approve("content") == []


def test_searching_a_scope_without_notes_lists_the_known_ones(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    make_note(memory, "Acme asked for a discount on the renewal")
    make_note(memory, "Globex asked for SSO", scope="globex")
    code, _, err = run(memory, capsys, "search", "discount", "--scope", "acmee")
    assert code == 2
    line = one_line_error(err)
    assert "'acmee' has no notes" in line and "did you mean acme" in line and "acme, globex" in line
    code, out, err = run(memory, capsys, "facts", "--scope", "acmee")  # not "no current facts", exit 0
    assert code == 2 and out == ""
    assert "did you mean acme" in one_line_error(err)


def test_a_non_utf8_import_names_the_line(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_bytes(
        b'{"content": "Acme renewed", "scope": "acme"}\n{"content": "Caf\xe9 Co. churned", "scope": "cafe"}\n'
    )
    code, _, err = run(memory, capsys, "import", str(path))
    assert code == 2
    line = one_line_error(err)
    assert f"{path}, line 2: not UTF-8 (byte 0xe9 at column 17); nothing was recorded" in line
    assert memory.unprocessed_count() == 0 and memory.notes() == []


def test_an_import_names_every_wrong_line_at_once(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A CRM export with several bad lines: one run names them all (not the first, then the next
    after each fix), on one line, and records nothing."""
    path = tmp_path / "export.jsonl"
    path.write_bytes(
        b'{"content": "Acme renewed", "scope": "acme"}\n'
        b"not json\n"
        b'{"content": "Caf\xe9 Co. churned", "scope": "cafe"}\n'
        b'{"content": "no scope"}\n'
        b"[1, 2]\n"
        b'{"content": "  ", "scope": "acme"}\n'
        b'{"content": "also no scope"}\n'
    )
    code, _, err = run(memory, capsys, "import", str(path))
    assert code == 2
    assert one_line_error(err) == (
        f"error: {path}: 6 lines are wrong: line 2: not JSON (Expecting value at column 1); line 3: "
        "not UTF-8 (byte 0xe9 at column 17); lines 4 and 7: scope: Field required; line 5: expected a "
        "JSON object; line 6: content is empty: add_note needs the text to remember; nothing was recorded"
    )
    assert memory.unprocessed_count() == 0 and memory.notes() == []


def test_search_and_as_of_take_a_time_as_text_like_add_note(memory: Memory) -> None:
    note = make_note(memory, "Acme asked for a discount on the renewal")
    tomorrow = (utcnow() + timedelta(days=1)).date().isoformat()
    hits = memory.search("discount", scope="acme", as_of=tomorrow)
    assert [h.note_id for h in hits] == [note.id]
    assert memory.search("discount", scope="acme", as_of="2020-01-01") == []
    assert memory.as_of(note.id, "2020-01-01") is None
    with pytest.raises(Exception, match="as_of: 'next week' is not an ISO 8601"):
        memory.search("discount", scope="acme", as_of="next week")


@pytest.mark.parametrize(
    ("variable", "value", "wanted"),
    [
        ("AMEM_MAX_CONTENT_CHARS", "20k", "a positive whole number"),
        ("AMEM_MAX_CONTENT_CHARS", "-5", "a positive whole number"),
        ("AMEM_MAX_CONTENT_CHARS", "0", "a positive whole number"),
        ("AMEM_LINK_K", "five", "a whole number, 0 or more"),
        ("AMEM_LLM_CONCURRENCY", "lots", "a positive whole number"),
        ("AMEM_LLM_CONCURRENCY", "0", "a positive whole number"),
        ("AMEM_LLM_TRANSIENT_RETRIES", "2.5", "a whole number, 0 or more"),
        ("AMEM_LLM_RETRY_WAIT", "nan", "a non-negative number"),
        ("AMEM_WORKER_LEASE_SECONDS", "inf", "a positive number"),
    ],
)
def test_a_wrong_number_in_a_setting_names_the_variable_and_what_it_takes(
    variable: str,
    value: str,
    wanted: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: "internal error (ValueError): invalid literal for int() ...; this is a bug in amem",
    exit 70, the variable unnamed; and AMEM_MAX_CONTENT_CHARS=-5 was taken (every input refused)."""
    monkeypatch.setenv(variable, value)
    assert main(["where"]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert line.startswith(f"error: {variable}={value!r}: give {wanted}") and "bug" not in line


def test_a_setting_given_as_a_whole_number_is_used(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AMEM_MAX_CONTENT_CHARS", " 12 ")
    code, _, err = run(memory, capsys, "add", "Acme renewed for 40 seats", "--scope", "acme")
    assert code == 2 and "12 (AMEM_MAX_CONTENT_CHARS)" in one_line_error(err)
