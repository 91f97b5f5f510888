"""Reading a model's JSON answer (amem/llm/json_answer.py): what the model is told is wrong."""

from __future__ import annotations

import pytest

from amem.llm.json_answer import InvalidAnswer, extract_json


def test_a_control_character_in_a_string_is_named_with_its_place_once() -> None:
    with pytest.raises(InvalidAnswer) as caught:
        extract_json('{"context": "two\nlines"}')
    message = str(caught.value)
    assert "Invalid control character at line 1 column 17" in message and "at at" not in message
