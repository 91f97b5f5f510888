"""`amem worker --once` counts what became of each input it took: an input erased on a data subject's
request while it was analysed, or given back to the queue, did not fail (reviewer K, finding 5:
both were counted failed and the command exited 4, "kept, not analysed; run `amem reprocess`")."""

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


def _options(home: Path, database_url: str) -> list[str]:
    return ["--home", str(home), "--database-url", database_url, "--llm", MODEL]


def test_an_input_erased_while_the_worker_analyses_it_is_counted_erased_and_exit_is_0(
    database_url: str, tmp_path: Path, scripted_llm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    scripted_llm.default = answer
    with Memory(home, database_url=database_url, llm=MODEL) as eraser:
        eraser.add_note("Acme renews in May", actor="agent:a", scope="acme")
        personal = "Jane Doe (jane@example.com) asked us to call her back"
        raw_log_id = eraser.add_note(personal, actor="agent:a", scope="acme", wait=False)

        def erase_while_analysed(messages: list[dict[str, Any]]) -> str:
            if text_of(messages) == personal and eraser.input_status(raw_log_id).status != "erased":
                eraser.erase(by=signed_in(eraser, "alice"), reason="request", raw_log_id=raw_log_id, wait_s=0)
            return answer(messages)

        scripted_llm.default = erase_while_analysed
        code = main([*_options(home, database_url), "worker", "--once", "--json"])
        result = json.loads(capsys.readouterr().out)
        assert eraser.input_status(raw_log_id).status == "erased"
    assert code == 0
    assert (result["processed"], result["failed"], result["erased"], result["given_back"]) == (0, 0, 1, 0)


def test_an_input_given_back_to_the_queue_is_not_counted_failed_and_is_analysed_again(
    database_url: str, tmp_path: Path, scripted_llm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its link step was shown a note erased meanwhile, twice (``WritePipeline._given_back``): its
    answer is not used, it is queued again, and the worker's next claim analyses it."""
    home = tmp_path / "home"
    scripted_llm.default = answer
    with Memory(home, database_url=database_url, llm=MODEL) as eraser:
        shown = [
            eraser.add_note(text, actor="agent:a", scope="acme")
            for text in ("Acme renews in May, Mrs Quibblestone said", "Acme renews with SSO, Mr Plum said")
        ]
        to_erase = [eraser.read(note_id).raw_log_ids[0] for note_id in shown]
        raw_log_id = eraser.add_note("Acme renews in May with SSO", actor="agent:a", scope="acme", wait=False)

        def erase_a_neighbour_at_each_link_step(messages: list[dict[str, Any]]) -> str:
            user = next(m["content"] for m in messages if m["role"] == "user")
            if "<neighbours>" in user and to_erase:
                eraser.erase(
                    by=signed_in(eraser, "alice"), reason="request", raw_log_id=to_erase.pop(0), wait_s=0
                )
            return answer(messages)

        scripted_llm.default = erase_a_neighbour_at_each_link_step
        code = main([*_options(home, database_url), "worker", "--once", "--json"])
        result = json.loads(capsys.readouterr().out)
        assert eraser.input_status(raw_log_id).status == "done"
    assert code == 0
    assert (result["processed"], result["failed"], result["given_back"]) == (1, 0, 1)
