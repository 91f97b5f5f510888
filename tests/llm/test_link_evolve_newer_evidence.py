"""An older record analysed late (a late import, a retry): both analysts give, beside the record's
own sentence, the span of the later note that says otherwise (``newer_evidence``), which drafting
proposes the record's retirement with. An input analysed in its time is asked and answered as
before: its prompt and its recorded answer do not change."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from amem.domain.models import Note
from amem.llm.link_evolve import Contradiction, LinkEvolveAnswer
from amem.llm.litellm_analyst import LiteLLMAnalyst
from amem.llm.offline import OfflineAnalyst
from amem.policy import Policy
from tests.llm.builders import note, raw_log
from tests.llm.test_litellm_analyst import MODEL, _new_note, _user_prompt

MARCH = datetime(2026, 3, 10, 10, tzinfo=UTC)
JUNE = datetime(2026, 6, 8, 10, tzinfo=UTC)
MARCH_PRICE = "Pricing call: Globex pays $42 per seat per month."
JUNE_PRICE = "Pricing update. As of today Globex pays $55 per seat per month."


@pytest.fixture(scope="module")
def analyst() -> OfflineAnalyst:
    return OfflineAnalyst()


def _note(analyst: OfflineAnalyst, policy: Policy, text: str, note_id: str) -> Note:
    answer = analyst.construct(raw_log(text, scope="globex"), policy.declared_attributes()).answer
    values = {"keywords": answer.keywords, "tags": answer.tags, "context": answer.context}
    return note(text, note_id=note_id, category=answer.category, scope="globex", **values)


def test_the_offline_analyst_gives_the_later_note_s_words_for_a_late_record(analyst, policy) -> None:
    june = _note(analyst, policy, JUNE_PRICE, "n_june")
    march = _note(analyst, policy, MARCH_PRICE, "n_march")

    result = analyst.link_and_evolve(
        march, raw_log(MARCH_PRICE, occurred_at=MARCH, scope="globex"), [june], {"n_june": JUNE}
    )

    (found,) = result.answer.contradictions
    assert (found.note_id, found.evidence) == ("n_june", MARCH_PRICE)  # the record's fact made untrue
    assert found.newer_evidence == "As of today Globex pays $55 per seat per month."
    assert found.newer_evidence in june.content and found.newer_evidence != june.content  # a span of it
    assert (
        json.loads(result.call.response_text or "")["contradictions"][0]["newer_evidence"]
        == found.newer_evidence
    )


def test_in_order_the_offline_answer_is_recorded_as_before(analyst, policy) -> None:
    march = _note(analyst, policy, MARCH_PRICE, "n_march")
    june = _note(analyst, policy, JUNE_PRICE, "n_june")

    result = analyst.link_and_evolve(
        june, raw_log(JUNE_PRICE, occurred_at=JUNE, scope="globex"), [march], {"n_march": MARCH}
    )

    (found,) = result.answer.contradictions
    assert found.note_id == "n_march" and found.newer_evidence is None
    recorded = json.loads(result.call.response_text or "")["contradictions"][0]
    assert set(recorded) == {"note_id", "reason", "evidence"}  # no new key in the recorded answer


def test_a_contradiction_is_written_without_newer_evidence_unless_given() -> None:
    plain = Contradiction(note_id="n_1", reason="later price", evidence="$42")
    given = Contradiction(note_id="n_1", reason="later price", evidence="$42", newer_evidence="$55")

    assert json.loads(plain.model_dump_json()) == {
        "note_id": "n_1",
        "reason": "later price",
        "evidence": "$42",
    }
    assert json.loads(given.model_dump_json())["newer_evidence"] == "$55"
    assert LinkEvolveAnswer.model_validate_json(
        LinkEvolveAnswer(contradictions=[given]).model_dump_json()
    ) == (LinkEvolveAnswer(contradictions=[given]))


def test_a_model_is_asked_for_the_later_note_s_span_only_for_a_late_record(scripted_llm) -> None:
    later = note("Acme moved to $70/seat.", note_id="n_later", keywords=["Acme", "price"])
    answer = {
        "contradictions": [
            {
                "note_id": "n_later",
                "reason": "a later price",
                "evidence": "$60/seat",
                "newer_evidence": "Acme moved to $70/seat.",
            }
        ]
    }
    scripted_llm.push(json.dumps(answer), json.dumps({}))
    raw = raw_log("Acme: the price is now $60/seat.", occurred_at=MARCH)

    result = LiteLLMAnalyst(MODEL).link_and_evolve(_new_note(), raw, [later], {"n_later": JUNE})
    LiteLLMAnalyst(MODEL).link_and_evolve(
        _new_note(), raw, [later], {"n_later": datetime(2026, 1, 5, tzinfo=UTC)}
    )

    late, in_time = (_user_prompt(request) for request in scripted_llm.requests)
    assert "newer_evidence the exact span of that neighbour's content" in late
    assert "newer_evidence" not in in_time and "newer_evidence" not in scripted_llm.requests[1][0]["content"]
    assert result.answer.contradictions[0].newer_evidence == "Acme moved to $70/seat."
