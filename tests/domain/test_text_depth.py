"""JSON nested deeper than ``MAX_JSON_DEPTH`` (metadata, a value) is refused as bad input, saying
so, before anything is recorded: Python's own limit answered with RecursionError, after the input
had passed every check, and what reads JSON back recursively would have failed on it later."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.domain.text import MAX_JSON_DEPTH, check_json, json_problem
from amem.errors import InvalidInputError
from amem.memory import Memory


def nested(levels: int, *, inner: Any = 1, as_list: bool = False) -> Any:
    """JSON ``levels`` objects (or arrays) deep, ``inner`` at its heart."""
    value = inner
    for _ in range(levels):
        value = [value] if as_list else {"a": value}
    return value


@pytest.mark.parametrize("as_list", [False, True])
def test_json_at_the_limit_is_taken_and_one_level_more_is_refused(as_list: bool) -> None:
    at_limit = nested(MAX_JSON_DEPTH, as_list=as_list)
    assert check_json(at_limit, "metadata") is at_limit
    with pytest.raises(InvalidInputError, match=f"nested too deep .*more than {MAX_JSON_DEPTH} levels"):
        check_json(nested(MAX_JSON_DEPTH + 1, as_list=as_list), "metadata")


def test_json_far_deeper_than_python_recurses_is_refused_not_a_recursion_error() -> None:
    problem = json_problem(nested(5000), "the answer")
    assert problem is not None and "nested too deep" in problem
    assert problem.startswith("the answer.a.a") and len(problem) < 300  # the path is shortened


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 600])
def test_metadata_nested_too_deep_is_refused_and_nothing_is_recorded(memory: Memory, levels: int) -> None:
    """The reviewer's case: metadata 600 levels deep raised RecursionError from add_note."""
    with pytest.raises(InvalidInputError, match=r"^metadata\.a\.a.*: nested too deep"):
        memory.add_note(
            "Tyrell asked for a deep export", actor="agent:crm", scope="tyrell", metadata=nested(levels)
        )
    assert memory.count_raw_logs() == 0


def test_metadata_at_the_limit_is_kept_exported_and_verified(memory: Memory) -> None:
    deep = nested(MAX_JSON_DEPTH - 1, inner="renewal")  # the metadata object itself is a level
    note_id = memory.add_note(
        "Tyrell asked for a deep export", actor="agent:crm", scope="tyrell", metadata={"deep": deep}
    )
    raw = memory.raw_logs(memory.read(note_id).raw_log_ids)[0]
    assert json.dumps(raw.metadata, sort_keys=True) == json.dumps({"deep": deep}, sort_keys=True)
    [exported] = list(memory.export("raw_logs"))
    assert json.dumps(exported["metadata"], sort_keys=True) == json.dumps({"deep": deep}, sort_keys=True)
    assert memory.verify().ok


def test_the_http_api_refuses_metadata_nested_too_deep_as_a_bad_body(memory: Memory) -> None:
    """Before: a body its JSON parser read (600 levels) failed inside add_note with RecursionError,
    an answer of 500; one too deep to parse at all was already a 400 "nested too deep"."""
    token, _ = memory.tokens.create("crm", "agent")
    body = {"content": "Tyrell asked for a deep export", "scope": "tyrell", "metadata": nested(600)}
    with TestClient(create_app(memory)) as api:
        answer = api.post(
            "/v1/inputs",
            content=json.dumps(body),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
    assert 400 <= answer.status_code < 500, answer.text
    assert "nested too deep" in answer.text, answer.text
    assert memory.count_raw_logs() == 0
