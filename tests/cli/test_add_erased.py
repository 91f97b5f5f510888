"""`amem add` of an input erased on a data subject's request: it printed "pending: raw log ... was
erased" and exited 4, the status that means "kept, not analysed yet; run `amem reprocess`", which
has nothing to do for it. It now says the input was erased, when, by whom and by which erasure,
that nothing was recorded again, and exits 2 (an error, as the library's InputErasedError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amem.cli import main
from amem.memory import Memory
from tests.agents.scripted_answers import answer, text_of
from tests.factories import signed_in

MODEL = "scripted/test-model"
TEXT = "Globex chose the annual plan because Paul Smith from finance wants one invoice."


def _amem(home: Path, database_url: str, *args: str) -> int:
    return main(["--home", str(home), "--database-url", database_url, "--llm", MODEL, *args])


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_retry_of_an_erased_input_says_it_was_erased_and_records_nothing(
    database_url: str, tmp_path: Path, scripted_llm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    scripted_llm.default = answer
    add = ["add", TEXT, "--scope", "globex", "--actor", "agent:crm-sync", "--idempotency-key", "msg-42"]
    assert _amem(home, database_url, *add) == 0
    capsys.readouterr()
    with Memory(home, database_url=database_url, llm=MODEL) as mem:
        (note,) = mem.notes(scope="globex")
        (raw_log_id,) = note.raw_log_ids
        mem.erase(by=signed_in(mem, "alice"), reason="GDPR art. 17", raw_log_id=raw_log_id, wait_s=0)
        (erasure,) = mem.erasures()
        kept = mem.count_raw_logs()

    code = _amem(home, database_url, *add)

    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    said = _one_line(captured.err)
    assert said.startswith(f"error: input {raw_log_id}, which this idempotency key names, was erased")
    assert f"on {erasure.erased_at:%Y-%m-%d %H:%M} UTC by {erasure.erased_by} (erasure {erasure.id}" in said
    assert "nothing was recorded again" in said
    assert "pending" not in said and "reprocess" not in said

    # a script reads the same under --json, on stderr
    assert _amem(home, database_url, *add, "--json") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    body = json.loads(_one_line(captured.err))
    assert body["exit_code"] == 2 and body["error"] == said.removeprefix("error: ")

    with Memory(home, database_url=database_url, llm=MODEL) as mem:
        assert mem.count_raw_logs() == kept  # nothing kept again
        assert mem.input_status(raw_log_id).status == "erased"
        assert [n.id for n in mem.notes(scope="globex")] == []


def test_an_input_erased_while_add_analyses_it_says_so_and_is_not_pending(
    database_url: str, tmp_path: Path, scripted_llm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    scripted_llm.default = answer
    personal = "Jane Doe (jane@example.com) asked us to call her back"
    with Memory(home, database_url=database_url, llm=MODEL) as eraser:

        def erase_while_analysed(messages: list[dict[str, Any]]) -> str:
            if text_of(messages) == personal and not eraser.erasures():
                eraser.erase(by=signed_in(eraser, "alice"), reason="request", actor="agent:jane", wait_s=0)
            return answer(messages)

        scripted_llm.default = erase_while_analysed
        code = _amem(home, database_url, "add", personal, "--scope", "acme", "--actor", "agent:jane")
        (erasure,) = eraser.erasures()

    said = _one_line(capsys.readouterr().err)
    assert code == 2
    assert said.startswith("error: input r_") and "was erased on a data subject's request" in said
    assert f"by {erasure.erased_by} (erasure {erasure.id}" in said and "while it was analysed" in said
    assert "pending" not in said and "reprocess" not in said
