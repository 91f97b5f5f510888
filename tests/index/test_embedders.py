"""The embedders: offline MiniLM (no torch, no download) and any litellm model."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from amem.config import Settings
from amem.index.embedders import LiteLLMEmbedder, MiniLMEmbedder, make_embedder, token_batches, tokenizer_path

REPO = Path(__file__).resolve().parents[2]


def test_offline_vectors_are_unit_length_and_put_a_paraphrase_nearest() -> None:
    vectors = MiniLMEmbedder().embed(
        [
            "The customer wants a cheaper price at renewal",
            "At renewal time the client asked for a discount",
            "The login page shows an error after the SSO upgrade",
        ]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2] + 0.2


def test_a_vector_does_not_depend_on_its_batch_or_padding() -> None:
    embedder = MiniLMEmbedder(batch_size=4)
    text = "Dana escalated the invoice dispute"
    alone = embedder.embed([text])[0]
    long = "a much longer sentence about renewal pricing, seats, onboarding and a security review " * 5
    batched = embedder.embed([long, text, "short", long + " again"])[1]
    assert np.allclose(alone, batched, atol=1e-4)


def test_batches_are_bounded_by_their_padded_tokens_and_cover_every_text_in_order() -> None:
    lengths = [3, 5, 5, 8, 20, 20, 21, 90, 300]
    batches = token_batches(lengths, batch_tokens=40, batch_size=4)
    assert [i for batch in batches for i in batch] == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= 4
        assert len(batch) == 1 or len(batch) * lengths[batch[-1]] <= 40
    assert [list(b) for b in batches][-2:] == [[7], [8]]  # longer than the budget: alone


def test_the_token_budget_changes_no_vector() -> None:
    texts = ["short", "Dana escalated the invoice dispute", "renewal pricing and seats " * 30, "ok then"]
    by_tokens = MiniLMEmbedder(batch_tokens=16).embed(texts)
    by_count = MiniLMEmbedder(batch_size=32, batch_tokens=10**9).embed(texts)
    assert np.allclose(by_tokens, by_count, atol=1e-4)
    assert np.allclose(by_tokens[1], MiniLMEmbedder().embed([texts[1]])[0], atol=1e-4)


def test_the_tokenizer_ships_inside_the_package() -> None:
    assert tokenizer_path().is_file()
    assert tokenizer_path().parent == REPO / "amem" / "index" / "assets"
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(pattern.startswith("index/assets/") for pattern in package_data["amem"])
    assert (tokenizer_path().parent / "NOTICE").is_file()


def test_the_default_is_offline_and_a_model_name_goes_through_litellm() -> None:
    assert isinstance(make_embedder(Settings()), MiniLMEmbedder)
    chosen = make_embedder(Settings(embedding_model="openai/text-embedding-3-small"))
    assert isinstance(chosen, LiteLLMEmbedder)
    assert chosen.model_id == "litellm:openai/text-embedding-3-small"


def test_litellm_embeddings_come_back_in_order_and_normalised(scripted_llm: object) -> None:
    texts = [f"note number {i} about topic {i % 7}" for i in range(70)]
    vectors = LiteLLMEmbedder("scripted/embed", batch_size=64).embed(texts)
    assert vectors.shape == (70, 64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sent = scripted_llm.embedding_inputs  # type: ignore[attr-defined]
    assert [len(batch) for batch in sent] == [64, 6]
    assert [t for batch in sent for t in batch] == texts
    again = LiteLLMEmbedder("scripted/embed").embed([texts[42]])[0]
    assert np.allclose(vectors[42], again, atol=1e-6)


def test_a_configured_litellm_model_builds_the_index_and_a_change_of_model_needs_reindex(
    scripted_llm: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amem.index.sync import IndexModelChangedError
    from amem.memory import Memory
    from tests.factories import make_note

    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    with Memory(tmp_path / "home") as memory:
        note = make_note(memory, "Vandelay imports latex in bulk")
        make_note(memory, "Kramer wants a coffee table book")
        found = memory.search("latex imports", k=1, scope="acme")
        assert [r.note_id for r in found] == [note.id]
        assert memory.search_service.sync.stored_position().built_by.startswith(
            "litellm:scripted/embed-v1@64d/"
        )
    sent = [t for batch in scripted_llm.embedding_inputs for t in batch]  # type: ignore[attr-defined]
    assert "latex imports" in sent and sum(t.startswith("Vandelay imports latex") for t in sent) == 1

    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v2")
    scripted_llm.embedding_inputs.clear()  # type: ignore[attr-defined]
    refused = pytest.raises(IndexModelChangedError, match="scripted/embed-v1")
    with Memory(tmp_path / "home") as memory, refused:
        memory.search("latex imports", k=1, scope="acme")
    with Memory(tmp_path / "home") as memory:
        assert memory.reindex() == 2
        assert memory.search("latex imports", k=1, scope="acme")[0].note_id == note.id
        assert memory.search_service.sync.stored_position().built_by.startswith(
            "litellm:scripted/embed-v2@64d/"
        )
    rebuilt = [t for batch in scripted_llm.embedding_inputs for t in batch]  # type: ignore[attr-defined]
    assert sum(t.startswith(("Vandelay", "Kramer")) for t in rebuilt) == 2  # every note embedded again
