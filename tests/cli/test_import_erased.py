"""`amem import` of lines whose inputs were erased on a data subject's request: a keyed line whose
input was erased was counted among the lines "recorded before ... skipped", not a word of the
erasure, and one erased while the import analysed it as "kept but not analysed (run `amem
reprocess`)", exit 4, where reprocess has nothing to do. The import now says how many lines were
erased inputs, which lines and by which erasures (every one under --json), records nothing of them
again, and exits 0 as for the lines it skips: running it again changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.agents.scripted_answers import answer, text_of
from tests.cli.test_note_commands import MODEL, Cli
from tests.factories import signed_in

LINES = [
    {
        "content": "Paul Smith (paul@globex.example) wants one invoice",
        "scope": "globex",
        "idempotency_key": "crm-1",
    },
    {"content": "Globex renews in May", "scope": "globex", "idempotency_key": "crm-2"},
    {"content": "Acme wants 40 seats", "scope": "acme", "at": "2026-03-01T10:00:00Z"},
]


def _file(tmp_path: Path, lines: list[dict[str, Any]], *, blank_first: bool = False) -> Path:
    path = tmp_path / "crm.jsonl"
    text = "".join(json.dumps(line) + "\n" for line in lines)
    path.write_text(("\n" if blank_first else "") + text, "utf-8")
    return path


def test_an_import_run_again_says_which_lines_were_erased_and_records_them_not(
    amem: Cli, tmp_path: Path
) -> None:
    path = _file(tmp_path, LINES, blank_first=True)  # lines are named as the file numbers them
    code, _, err = amem("import", str(path), llm=MODEL)
    assert code == 0, err
    mem = amem.memory
    (paul,) = [n for n in mem.notes(scope="globex") if "Paul" in n.content]
    (raw_log_id,) = paul.raw_log_ids
    mem.erase(by=signed_in(mem, "alice"), reason="GDPR art. 17", raw_log_id=raw_log_id, wait_s=0)
    (erasure,) = mem.erasures()
    kept = mem.count_raw_logs()

    code, out, err = amem("import", str(path), llm=MODEL)

    assert code == 0, err
    said = out.splitlines()
    assert said[0] == "0 notes added"
    assert (
        "2 lines recorded before (the same idempotency key, or the same scope, at, actor and text): "
        "skipped, not recorded again"
    ) in said
    assert (
        "1 line is an input erased on a data subject's request (see `amem erasures`): not recorded "
        f"again, and nothing of it analysed; line 2 (erasure {erasure.id})"
    ) in said
    assert "reprocess" not in out

    code, out, err = amem("import", str(path), "--json", llm=MODEL)
    assert code == 0, err
    result = json.loads(out)
    assert (result["added"], result["pending"], result["skipped"], result["erased"]) == (0, 0, 2, 1)
    assert result["erased_lines"] == [{"line": 2, "raw_log_id": raw_log_id, "erasure_id": erasure.id}]
    assert mem.count_raw_logs() == kept  # nothing of it kept again
    assert mem.input_status(raw_log_id).status == "erased"
    assert [n.id for n in mem.notes(scope="globex") if n.id == paul.id] == []


def test_a_line_erased_while_the_import_analyses_it_is_said_erased_not_pending(
    amem: Cli, scripted_llm: Any, tmp_path: Path
) -> None:
    personal = LINES[0]["content"]
    mem = amem.memory

    def erase_while_analysed(messages: list[dict[str, Any]]) -> str:
        if text_of(messages) == personal and not mem.erasures():
            mem.erase(by=signed_in(mem, "alice"), reason="request", scope="globex", wait_s=0)
        return answer(messages)

    scripted_llm.default = erase_while_analysed
    path = _file(tmp_path, [LINES[0], LINES[2]])
    code, out, err = amem("import", str(path), "--json", llm=MODEL)

    assert code == 0, err
    result = json.loads(out)
    (erasure,) = mem.erasures()
    (line,) = result["erased_lines"]
    assert (line["line"], line["erasure_id"]) == (1, erasure.id)
    assert mem.input_status(line["raw_log_id"]).status == "erased"
    assert (result["added"], result["pending"], result["erased"]) == (1, 0, 1)
