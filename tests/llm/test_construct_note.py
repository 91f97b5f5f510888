"""The construct answer's own rules (amem/llm/construct_note.py): the category filed as a tag."""

from __future__ import annotations

import json
from typing import Any

import pytest

from amem.llm.construct_note import parse_answer
from amem.policy import Policy


def _answer(**changes: Any) -> str:
    answer = {"keywords": ["Acme"], "tags": ["acme"], "context": "Acme's renewal.", "category": "renewal"}
    return json.dumps({**answer, **changes})


def test_the_category_s_tag_is_added_without_losing_any_of_the_model_s_tags(policy: Policy) -> None:
    """The default policy holds the context of a note tagged contract: a twelfth tag "contract"
    must survive the category's tag being put first, or the context is applied unreviewed."""
    tags = [f"t{i}" for i in range(11)] + ["contract"]
    answer = parse_answer(_answer(tags=tags, category="pricing"), policy.declared_attributes())
    assert answer.tags == ["pricing", *tags]


@pytest.mark.parametrize("written", ["null", "None", "NULL"])
def test_a_category_of_null_written_as_text_is_no_category(policy: Policy, written: str) -> None:
    answer = parse_answer(_answer(category=written), policy.declared_attributes())
    assert answer.category is None and answer.tags == ["acme"]
