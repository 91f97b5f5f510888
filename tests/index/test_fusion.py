"""Hybrid fusion: scaled vector and keyword scores, mixed."""

from __future__ import annotations

import pytest

from amem.index.base import VectorHit
from amem.index.fusion import fuse
from amem.ledger.search_queries import KeywordHit


def test_a_note_both_sides_find_beats_notes_only_one_side_finds() -> None:
    vector = [VectorHit("a", 0.9), VectorHit("both", 0.8), VectorHit("c", 0.1)]
    keyword = [KeywordHit("k", 12.0), KeywordHit("both", 10.0), KeywordHit("z", 1.0)]
    fused = fuse(vector, keyword, vector_weight=0.5)
    assert fused[0].note_id == "both"
    assert fused[0].matched_by == ("vector", "keyword")
    assert {f.note_id for f in fused} == {"a", "both", "c", "k", "z"}
    assert [f.matched_by for f in fused if f.note_id in ("a", "k")] == [("vector",), ("keyword",)]


@pytest.mark.parametrize(("weight", "first"), [(1.0, "a"), (0.0, "k")])
def test_the_weight_decides_between_the_sides(weight: float, first: str) -> None:
    fused = fuse(
        [VectorHit("a", 0.9), VectorHit("b", 0.2)],
        [KeywordHit("k", 3.0), KeywordHit("b", 1.0)],
        vector_weight=weight,
    )
    assert fused[0].note_id == first


def test_scores_are_scaled_within_each_list_so_their_units_do_not_matter() -> None:
    small = fuse(
        [VectorHit("a", 0.31), VectorHit("b", 0.30)],
        [KeywordHit("b", 900.0), KeywordHit("a", 100.0)],
        vector_weight=0.5,
    )
    # a is best on the vector side, b on the keyword side: equal weights make them tie, order kept.
    assert [f.note_id for f in small] == ["a", "b"]
    assert small[0].score == pytest.approx(small[1].score)


def test_one_sided_and_empty_inputs() -> None:
    assert fuse([], []) == []
    only = fuse([], [KeywordHit("x", -3.0)], vector_weight=0.4)
    assert [(f.note_id, f.score) for f in only] == [("x", pytest.approx(0.6))]


def test_a_note_the_keyword_side_could_not_search_is_ranked_as_if_it_had_been_searched() -> None:
    vector = [VectorHit("pending", 0.9), VectorHit("stored", 0.7), VectorHit("far", 0.1)]
    keyword = [KeywordHit("stored", 8.0), KeywordHit("far", 2.0)]
    # without knowing it was never searched, the pending note loses its keyword part
    assert fuse(vector, keyword, vector_weight=0.4)[0].note_id == "stored"
    fused = fuse(vector, keyword, vector_weight=0.4, unsearched={"pending"})
    assert [f.note_id for f in fused] == ["pending", "stored", "far"]
    assert fused[0].score == pytest.approx(1.0) and fused[0].matched_by == ("vector",)
    # when the keyword side did not answer (off, or nothing matched), no side is guessed
    alone = fuse(vector, [], vector_weight=0.4, unsearched={"pending"})
    assert (alone[0].note_id, alone[0].score) == ("pending", pytest.approx(0.4))
