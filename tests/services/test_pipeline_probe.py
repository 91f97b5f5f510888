"""Telling an outage from inputs that break a step (``pipeline._Breaker``): before an outage is
called, the shortest input left is tried (a probe); inputs an outage left untried say so.

Reviewer K, finding 1: two texts the embedder refused at the head of a batch marked every input of
the call failed with their cause, the next batch's never tried, and `reprocess`, which claims in
arrival order, met the same two first every time and made no note at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripted_llm import bag_of_words
from tests.services.test_pipeline import _remote

TOO_LONG = "This model's maximum context length is 8192 tokens"
LONG_ONE = "The customer called about the contract. " * 250
LONG_TWO = "Another long email: the customer called about the contract and pricing. " * 150


def _refusing_long_texts(texts: list[str]) -> list[list[float]]:
    """An embedding model that refuses the long texts (and every batch holding one)."""
    if any("called about the contract" in text for text in texts):
        raise RuntimeError(TOO_LONG)
    return bag_of_words(texts)


def _down(texts: list[str]) -> list[list[float]]:
    raise RuntimeError("embedding service unavailable (503)")


def _inputs(texts: list[str]) -> list[dict[str, str]]:
    return [{"content": text, "scope": "acme"} for text in texts]


def test_two_inputs_the_embedder_refuses_at_the_head_of_a_batch_fail_alone(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the batch and its first two inputs alone failing the same way was an outage, and all
    ten inputs came back failed, those of the next batch never tried."""
    mem = _remote(database_url, tmp_path, scripted_llm, monkeypatch)
    with mem:
        scripted_llm.embedder = _refusing_long_texts
        texts = [LONG_ONE, LONG_TWO] + [f"Acme call {i}: wants {i} seats" for i in range(8)]
        outcomes = mem.add_notes(_inputs(texts), actor="agent:import", batch_size=5)
        assert [o.note_id is not None for o in outcomes] == [False, False] + [True] * 8
        for refused in outcomes[:2]:
            assert TOO_LONG in (refused.error or "")
            status = mem.input_status(refused.raw_log_id)
            assert status.status == "failed" and TOO_LONG in (status.error or "")
        assert mem.count_notes("acme") == 9 and mem.verify().ok


def test_reprocess_gets_past_inputs_that_fail_alone_at_the_head_of_the_queue(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An outage failed all ten; the embedder is back but still refuses the two long texts, which
    arrived first. Before, every `reprocess` met them first, called an outage and made 0 notes."""
    mem = _remote(database_url, tmp_path, scripted_llm, monkeypatch)
    with mem:
        scripted_llm.embedder = _down
        texts = [LONG_ONE, LONG_TWO] + [f"Acme call {i}: wants {i} seats" for i in range(8)]
        outcomes = mem.add_notes(_inputs(texts), actor="agent:import", batch_size=5)
        assert all(o.note_id is None for o in outcomes)

        scripted_llm.embedder = _refusing_long_texts
        assert len(mem.reprocess()) == 8
        assert [mem.input_status(o.raw_log_id).status for o in outcomes] == ["failed"] * 2 + ["done"] * 8
        assert TOO_LONG in (mem.input_status(outcomes[0].raw_log_id).error or "")
        assert mem.reprocess() == []  # the two long texts alone are left, and still refused


def test_batches_of_one_input_failing_in_a_row_are_no_outage_while_a_shorter_input_goes_through(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of one: three long texts in a row were an outage, and the six short inputs after
    them failed untried. The shortest input left is tried first, from a later batch, written once."""
    mem = _remote(database_url, tmp_path, scripted_llm, monkeypatch)
    with mem:
        scripted_llm.embedder = _refusing_long_texts
        texts = [LONG_ONE, LONG_TWO, LONG_ONE + "Again."] + [
            f"Acme call {i}: wants {i} seats" for i in range(6)
        ]
        outcomes = mem.add_notes(_inputs(texts), actor="agent:import", batch_size=1)
        assert [o.note_id is not None for o in outcomes] == [False] * 3 + [True] * 6
        assert all(TOO_LONG in (o.error or "") for o in outcomes[:3])
        assert len({o.note_id for o in outcomes[3:]}) == 6 and mem.count_notes("acme") == 7
        assert mem.verify().ok


def test_a_probe_taken_from_a_later_batch_is_written_once_and_its_batch_goes_on_without_it(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of two long texts: after the first fails alone, the probe is the shortest input of
    the call, in the next batch; that batch is then written without it."""
    mem = _remote(database_url, tmp_path, scripted_llm, monkeypatch)
    with mem:
        scripted_llm.embedder = _refusing_long_texts
        texts = [
            LONG_ONE,
            LONG_TWO,
            "Acme call: wants 40 seats please",
            "Acme: 5 seats",
            "Acme call: SSO now",
        ]
        outcomes = mem.add_notes(_inputs(texts), actor="agent:import", batch_size=2)
        assert [o.note_id is not None for o in outcomes] == [False, False, True, True, True]
        notes = mem.notes(scope="acme")
        assert sorted(n.content for n in notes if n.content != "Acme renews in May") == sorted(texts[2:])
        assert mem.verify().ok


def test_an_outage_stops_quickly_and_the_inputs_it_left_untried_say_so(
    database_url: str, tmp_path: Path, scripted_llm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every input failing the same way is still an outage, told after the batch, one input alone
    and the probe; the inputs never tried are failed saying so (before, as if each had failed)."""
    from tests.agents.scripted_answers import text_of

    mem = _remote(database_url, tmp_path, scripted_llm, monkeypatch)
    with mem:
        scripted_llm.embedder = _down
        texts = [f"Acme call {i}: wants {i} seats" for i in range(70)]
        outcomes = mem.add_notes(_inputs(texts), actor="agent:import", batch_size=32)
        assert all("embedding service unavailable" in (o.error or "") for o in outcomes)
        assert (
            len([text_of(m) for m in scripted_llm.requests]) <= 2 * 32 + 1
        )  # the batch tried, the next prepared meanwhile
        untried = [o for o in outcomes if "not tried" in (o.error or "")]
        assert len(untried) == 68  # the first failed alone, the probe (the second) failed the same way
        assert "outage was suspected" in (mem.input_status(untried[0].raw_log_id).error or "")
        assert "not tried" not in (mem.input_status(outcomes[1].raw_log_id).error or "")

        scripted_llm.embedder = bag_of_words
        assert len(mem.reprocess()) == 70
