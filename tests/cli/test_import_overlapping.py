"""The same `amem import` started twice, the second while the first still analyses: the second
said its lines were kept but held, exit 4, and to run `amem reprocess`, for inputs the first was
analysing and finished. It now says another run is processing them and how to follow them. It
still exits 4: the ledger cannot tell that run from one killed holding them, whose inputs wait for
`amem reprocess` after the lease, so a scheduled import keeps saying so until they are done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.agents.scripted_answers import answer
from tests.cli.test_interrupted_inputs import write_lines
from tests.cli.test_note_commands import MODEL, Cli


def test_an_import_started_again_while_the_first_analyses_says_another_run_has_them(
    amem: Cli, scripted_llm: Any, tmp_path: Path
) -> None:
    path = tmp_path / "calls.jsonl"
    texts = write_lines(path, 2)
    second: list[tuple[int, str, str]] = []

    def second_run_while_the_first_analyses_line_2(messages: list[dict[str, Any]]) -> str:
        """The first import's model, asked to link line 2 to line 1 (line 1 written, line 2 held by
        the first run's lease): the same import is started again, once as a person reads it, once
        --json."""
        user = next(m["content"] for m in messages if m["role"] == "user")
        if "<neighbours>" in user and texts[1] in user and not second:
            second.append(amem("import", str(path), "--batch-size", "1", llm=MODEL))
            second.append(amem("import", str(path), "--batch-size", "1", "--json", llm=MODEL))
        return answer(messages)

    scripted_llm.default = second_run_while_the_first_analyses_line_2
    code, out, err = amem("import", str(path), "--batch-size", "1", "--json", llm=MODEL)
    assert code == 0, err
    assert json.loads(out)["added"] == 2

    (code, out, err), (json_code, json_out, json_err) = second
    held = next(o for o in json.loads(json_out)["outcomes"] if o["note_id"] is None)["raw_log_id"]
    said = " ".join(out.split())
    assert code == 4, (out, err)  # not done yet, though nothing is lost
    assert said.startswith("0 notes added 1 input is being processed by another run")
    assert f"`amem status RAW_LOG_ID` says what became of it (raw log {held})" in said
    assert "kept but not analysed" not in said and "held by a worker's lease" not in said
    assert "1 lines recorded before" in said  # line 1, written by the first run: skipped
    result = json.loads(json_out)
    assert json_code == 4, json_err
    assert (result["added"], result["skipped"], result["held"]) == (0, 1, 1)
    assert result["held_raw_log_ids"] == [held]

    assert amem.memory.input_status(held).status == "done"  # the first run finished it
    assert amem.memory.count_raw_logs() == 2 and amem.memory.count_notes("acme") == 2
