"""Hybrid ranking: vector similarity and keyword relevance, each scaled to [0, 1], then mixed.

Min-max scaling within each candidate list makes cosine similarities and BM25 scores comparable;
a weighted sum then rewards notes both sides find. On LoCoMo this beats reciprocal-rank fusion,
which throws the score gaps away (see bench/README.md).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from amem.index.base import VectorHit
from amem.ledger.search_queries import KeywordHit

#: Share of the vector side in the mixed score (the keyword side gets the rest). Tuned on LoCoMo
#: conversations 1-3 over 0.3-0.6 (see bench/README.md); 0.4 and 0.5 are within 0.01 of each other.
VECTOR_WEIGHT = 0.4


@dataclass(frozen=True)
class Fused:
    note_id: str
    score: float
    matched_by: tuple[str, ...]


def _scaled(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high <= low:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def fuse(
    vector: Sequence[VectorHit],
    keyword: Sequence[KeywordHit],
    *,
    vector_weight: float = VECTOR_WEIGHT,
    unsearched: Collection[str] = (),
) -> list[Fused]:
    """Every candidate of either list, best first. Ties keep the order the candidates came in.

    ``unsearched``: notes the keyword side could not search (a batch's earlier notes, not yet in
    the ledger's full-text index). Missing from the keyword list says nothing about them, so when
    the keyword side answered, their keyword part is taken to be their vector part; otherwise the
    newest notes of a batch would rank below every stored note both sides find, and a note being
    added would lose sight of the input just before it (the one it restates or changes)."""
    score: dict[str, float] = {}
    found_by: dict[str, list[str]] = {}
    imputed = frozenset(unsearched) if keyword else frozenset()
    for hit, scaled in zip(vector, _scaled([h.similarity for h in vector]), strict=True):
        weight = 1.0 if hit.note_id in imputed else vector_weight
        score[hit.note_id] = score.get(hit.note_id, 0.0) + weight * scaled
        found_by.setdefault(hit.note_id, []).append("vector")
    for hit, scaled in zip(keyword, _scaled([h.score for h in keyword]), strict=True):
        score[hit.note_id] = score.get(hit.note_id, 0.0) + (1.0 - vector_weight) * scaled
        found_by.setdefault(hit.note_id, []).append("keyword")
    order = {note_id: i for i, note_id in enumerate(score)}
    ranked = sorted(score, key=lambda note_id: (-score[note_id], order[note_id]))
    return [Fused(note_id, score[note_id], tuple(found_by[note_id])) for note_id in ranked]
