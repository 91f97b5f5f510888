"""An import stopped part-way (Ctrl-C, SIGTERM) says how to finish it, and following that advice
records no line twice: a line without a time or a key is recorded again by any run of the import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.agents.scripted_answers import answer, text_of
from tests.cli.test_note_commands import MODEL, Cli


def test_an_interrupted_import_of_lines_without_a_time_says_to_reprocess_not_to_import_again(
    amem: Cli, scripted_llm: Any, tmp_path: Path
) -> None:
    """Before: "run the same `amem import` again to finish: it skips the lines it recorded"; lines
    without `at` or a key are recorded by every run, so following it doubled each line (600 lines,
    1,200 raw logs) and left the first copies stranded in the queue."""
    path = tmp_path / "calls.jsonl"
    texts = [f"Acme call {i}: they want {i} more seats" for i in range(1, 4)]
    path.write_text("".join(json.dumps({"content": t, "scope": "acme"}) + "\n" for t in texts), "utf-8")

    def interrupted_at_the_third(messages: list[dict[str, Any]]) -> str:
        if text_of(messages) == texts[2]:
            raise KeyboardInterrupt
        return answer(messages)

    scripted_llm.default = interrupted_at_the_third
    code, _, err = amem("import", str(path), "--batch-size", "1", llm=MODEL)
    assert code == 130
    said = " ".join(err.split())
    assert "run the same `amem import` again" not in said
    assert said.startswith("interrupted: every line of the file is kept as a raw log")
    assert (
        "run `amem reprocess` to finish (`amem status RAW_LOG_ID` says what became of one), not the "
        "same `amem import`: 3 of its lines give no time (`at`) and no key, and would be recorded a "
        "second time" in said
    )

    scripted_llm.default = answer  # the advice followed: every line analysed, none kept twice
    code, _, err = amem("reprocess", llm=MODEL)
    assert code == 0, err
    assert amem.memory.count_raw_logs() == 3 and amem.memory.unprocessed_count() == 0
    assert sorted(n.content for n in amem.memory.notes(scope="acme")) == sorted(texts)
