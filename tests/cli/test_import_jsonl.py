"""`amem import` of JSON Lines: every wrong line named with what is wrong and where, a file in
another encoding refused as a whole, and a run that says what became of each input and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amem.cli import main
from tests.cli.test_note_commands import MODEL, Cli, outage


def one_line(err: str) -> str:
    return " ".join(err.split())


def test_a_line_that_is_not_json_is_named_with_its_column_and_what_to_write(
    amem: Cli, tmp_path: Path
) -> None:
    """Before: "not JSON (Invalid control character at)", the place cut off, and no column for any
    JSON error: the user searched a long line for a tab they could not see."""
    path = tmp_path / "calls.jsonl"
    path.write_text(
        '{"content": "Acme renewed", "scope": "acme"}\n'
        '{"content": "tab\there", "scope": "acme"}\n'
        '{"content": "b", "scope": "acme",}\n',
        "utf-8",
    )
    code, _, err = amem("import", str(path))
    assert code == 2
    assert one_line(err) == (
        f"error: {path}: 2 lines are wrong: line 2: not JSON (a tab inside a string at column 17: "
        "write it as \\t); line 3: not JSON (Expecting property name enclosed in double quotes at "
        "column 34); nothing was recorded"
    )
    assert amem.memory.count_raw_logs() == 0


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_utf16_file_is_refused_as_a_whole_saying_to_save_it_as_utf8(
    amem: Cli, tmp_path: Path, fmt: str
) -> None:
    """Windows PowerShell's `>` writes UTF-16. Before: JSON Lines named each line "not JSON", and one
    line more than the file has, with no word of the encoding."""
    path = tmp_path / f"calls.{fmt}"
    text = (
        '{"content": "a", "scope": "s"}\n{"content": "b", "scope": "s"}\n'
        if fmt == "jsonl"
        else "content,scope\na,s\nb,s\n"
    )
    path.write_bytes(text.encode("utf-16"))
    code, _, err = amem("import", str(path))
    save_as = "UTF-8" if fmt == "jsonl" else "CSV UTF-8"
    assert code == 2
    assert one_line(err) == (
        f"error: {path}, line 1: the file is UTF-16 (it starts with the byte order mark ff fe), not "
        f"UTF-8: save it as {save_as}; nothing was recorded"
    )


def test_a_time_given_as_a_number_is_refused_not_read_as_1970(amem: Cli, tmp_path: Path) -> None:
    """Before: `"at": 20260301` was read as seconds since 1970, the input dated 23 August 1970."""
    path = tmp_path / "calls.jsonl"
    path.write_text('{"content": "Acme renewed", "scope": "acme", "at": 20260301}\n', "utf-8")
    code, _, err = amem("import", str(path))
    assert code == 2
    assert one_line(err) == (
        f"error: {path}, line 1: at: 20260301 is a number; write the time as ISO 8601 text, in quotes "
        '(e.g. "2026-03-01" or "2026-03-01T09:30:00Z"); nothing was recorded'
    )
    assert amem.memory.count_raw_logs() == 0


def test_a_null_or_empty_scope_takes_the_scope_given_as_a_csv_empty_cell_does(
    amem: Cli, tmp_path: Path
) -> None:
    """Before: `"scope": null` or `""` was refused ("scope: ...") even with --scope."""
    path = tmp_path / "calls.jsonl"
    path.write_text(
        '{"content": "Acme renewed", "scope": null}\n{"content": "Acme wants SSO", "scope": " "}\n'
        '{"content": "Globex signed", "scope": "globex"}\n',
        "utf-8",
    )
    code, out, err = amem("import", str(path), "--scope", "acme", "--json", llm=MODEL)
    assert code == 0, err
    assert json.loads(out)["added"] == 3
    scopes = {row["text"]: row["scope"] for row in amem.memory.export("raw_logs")}
    assert scopes == {"Acme renewed": "acme", "Acme wants SSO": "acme", "Globex signed": "globex"}


def test_a_batch_size_below_one_is_refused_before_anything_is_made(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: --check said the file was ready, and the import made the store, then failed."""
    path = tmp_path / "calls.jsonl"
    path.write_text('{"content": "Acme renewed", "scope": "acme"}\n', "utf-8")
    home = tmp_path / "new-store"
    for check in (["--check"], []):
        code = main(["--home", str(home), "import", str(path), "--batch-size", "0", *check])
        assert code == 2 and "--batch-size" in capsys.readouterr().err
    assert not home.exists()


def test_an_import_whose_analysis_failed_says_why(
    amem: Cli, scripted_llm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "0 notes added; 2 raw logs kept but not analysed", where `amem add` names the cause:
    the caller could not tell a model down from a setting to fix."""
    monkeypatch.setenv("AMEM_LLM_TRANSIENT_RETRIES", "0")
    path = tmp_path / "calls.jsonl"
    lines = [
        {"content": "Acme wants 40 seats", "scope": "acme"},
        {"content": "Acme wants SSO", "scope": "acme"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")

    def model_down(messages: list[dict[str, Any]]) -> str:
        raise outage()

    scripted_llm.default = model_down
    code, out, err = amem("import", str(path), llm=MODEL)
    assert code == 4, err
    said = out.splitlines()
    assert said[0] == "0 notes added; 2 raw logs kept but not analysed (run `amem reprocess`)"
    assert said[1].startswith(f"  why (2 raw logs): construct_note: {MODEL} failed")
    assert said[1].endswith("litellm.APIConnectionError: connection refused")


def test_a_line_repeated_in_the_file_is_one_input_counted_once(
    amem: Cli, scripted_llm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same line twice in a file is kept once, and counted once: before, as two notes added,
    or, its analysis failing, as two raw logs not analysed where one was kept."""
    line = '{"content": "Acme wants 40 seats", "scope": "acme", "at": "2026-03-01T10:00:00Z"}\n'
    path = tmp_path / "calls.jsonl"
    path.write_text(line + line + '{"content": "Globex renews in May", "scope": "globex"}\n', "utf-8")
    code, out, err = amem("import", str(path), "--json", llm=MODEL)
    assert code == 0, err
    result = json.loads(out)
    assert (result["added"], result["pending"], result["skipped"]) == (2, 0, 1)
    assert amem.memory.count_raw_logs() == 2

    monkeypatch.setenv("AMEM_LLM_TRANSIENT_RETRIES", "0")

    def model_down(messages: list[dict[str, Any]]) -> str:
        raise outage()

    scripted_llm.default = model_down
    again = line.replace("40 seats", "45 seats")
    path.write_text(again + again, "utf-8")
    code, out, err = amem("import", str(path), llm=MODEL)
    assert code == 4, err
    said = out.splitlines()
    assert said[0] == "0 notes added; 1 raw logs kept but not analysed (run `amem reprocess`)"
    assert said[1].startswith("  why: construct_note: ")
    assert said[2].startswith("1 lines recorded before")
    assert amem.memory.count_raw_logs() == 3
