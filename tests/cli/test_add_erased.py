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
from tests.conftest import ScratchDatabase
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
    assert (body["raw_log_id"], body["erasure_id"], body["erased_by"]) == (raw_log_id, erasure.id, "alice")
    assert body["erased_at"] == erasure.erased_at.isoformat()  # the ids apart: no parsing the message

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


@pytest.mark.postgres
def test_a_ledger_lost_while_add_analyses_still_says_the_input_is_kept(
    tmp_path: Path, scripted_llm: Any, capsys: pytest.CaptureFixture[str], scratch_database: ScratchDatabase
) -> None:
    """The check for an erasure reads the ledger; when the ledger is what failed, its own error hid
    the pending one: "ledger unreachable", exit 69, no raw log named, and an agent sent the input
    again. The pending error, naming the kept raw log, reaches the caller (exit 4)."""
    name, url, server = scratch_database.name, scratch_database.url, scratch_database.admin

    def ledger_lost(messages: list[dict[str, Any]]) -> str:
        with server.connect() as conn:  # the ledger's server refuses it from now on
            conn.exec_driver_sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            conn.exec_driver_sql(
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
            )
        return answer(messages)

    assert _amem(tmp_path / "home", url, "init") == 0
    scripted_llm.default = ledger_lost
    code = _amem(tmp_path / "home", url, "add", TEXT, "--scope", "globex", "--json")
    body = json.loads(_one_line(capsys.readouterr().err))
    assert code == 4 and body["exit_code"] == 4 and body["raw_log_id"].startswith("r_"), body
    with server.connect() as conn:
        conn.exec_driver_sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    with Memory(tmp_path / "home", database_url=url) as mem:
        assert mem.input_status(body["raw_log_id"]).status != "erased"  # kept, to be finished
