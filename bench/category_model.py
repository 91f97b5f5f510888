"""A small learned classifier for the category of a raw log: multinomial logistic regression.

Issue 12 asked whether a model learned from the labelled sample carries to new writers better than
the hand-written cue rules of ``categories``. ``bench/train_category.py`` trains it (tuned accounts
only) and measures it leave-one-account-out and on two accounts written after the choice was
frozen (bench/README.md, "A learned category model"): it gained 0.03 over the rules there, under
the 0.05 set beforehand, so the analyst does not use it; it is kept so the measurement can be
rerun as the sample grows (``--write`` writes ``bench/category_model.json``). It lives in bench/,
not in the package, because nothing at run time uses it.

Features: hashed words and word pairs of the text (crc32: stable across processes) and the rule
cues' scores; inference is numpy only. It takes what the rules take (the text, its lead sentence,
the reason span to ignore), so the analyst could call either alike.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from amem.llm.offline import reasons
from amem.llm.offline.categories import LABELS, category, chat, cue_scores
from amem.llm.offline.text import readable, sentences

#: The classes: the nine labels, then noise (no category).
CLASSES: tuple[str | None, ...] = (*LABELS, None)
#: Hashed feature space (only the hashes seen in training carry a weight).
DIMENSION = 1 << 20
#: Which feature blocks a model uses (``FeatureSpec.blocks``).
BLOCKS = ("words", "cues")

_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+(?:[.,]\d+)*|[$€£#%?]")


@dataclass(frozen=True)
class View:
    """The text as the analyst reads it for its topic: lead sentence and reason span."""

    text: str
    lead: str
    ignore: tuple[int, int] | None


def view(content: str) -> View:
    """What the analyst passes to ``category``: the readable text, its lead (the sentence stating
    a decision, if any, else the first), and the reason span (why, not what)."""
    text = readable(content)
    found = sentences(text)
    why = reasons.reason(found)
    decided = next((s.text for s in found if reasons.decided(s.text)), None)
    lead = decided or (found[0].text if found else "")
    return View(text, lead, (why.start, why.end) if why is not None else None)


def tokens(text: str) -> list[str]:
    """Lower-case words, numbers as their digit count (``n3``), and $ € £ # % ? as they are."""
    out = []
    for token in _TOKEN.findall(text.lower()):
        if token[0].isdigit():
            out.append(f"n{min(len(re.sub(r'[.,]', '', token)), 6)}")
        else:
            out.append(token)
    return out


@dataclass(frozen=True)
class FeatureSpec:
    """How texts become features: which blocks, and the weight of the cue block."""

    blocks: tuple[str, ...] = BLOCKS
    bigrams: bool = True
    cue_scale: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"blocks": list(self.blocks), "bigrams": self.bigrams, "cue_scale": self.cue_scale}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSpec:
        return cls(tuple(data["blocks"]), bool(data["bigrams"]), float(data["cue_scale"]))


def _hash(feature: str) -> int:
    return zlib.crc32(feature.encode("utf-8")) % DIMENSION


def word_features(v: View, bigrams: bool = True) -> dict[int, float]:
    """Hashed words and word pairs of the text (the reason span left out), and the lead's words
    again under their own names; binary, scaled to unit length."""
    text = v.text
    if v.ignore is not None:
        text = text[: v.ignore[0]] + " " + text[v.ignore[1] :]
    words = tokens(text)
    names = {f"w:{w}" for w in words}
    if bigrams:
        names |= {f"b:{a} {b}" for a, b in zip(["^", *words], [*words, "$"], strict=True)}
    names |= {f"l:{w}" for w in tokens(v.lead)}
    hashed: dict[int, float] = {}
    for name in names:
        index = _hash(name)
        hashed[index] = 1.0
    norm = float(np.sqrt(len(hashed))) or 1.0
    return {index: value / norm for index, value in hashed.items()}


def cue_features(v: View) -> NDArray[np.float64]:
    """The rule cues' scores per label (log-scaled), whether the rules call it chat or a short
    text, and the rules' own answer (one-hot over the classes)."""
    scores = np.log1p(np.array(cue_scores(v.text, v.lead, v.ignore), dtype=np.float64))
    is_chat = chat(v.text)
    short = len(v.text.split()) < 5
    answer = np.zeros(len(CLASSES))
    answer[CLASSES.index(category(v.text, v.lead, v.ignore))] = 1.0
    return np.concatenate([scores, [float(is_chat), float(short)], answer])


CUE_WIDTH = len(LABELS) + 2 + len(CLASSES)


class CategoryModel:
    """Weights over hashed words and cue features; ``predict`` gives a label or None (noise)."""

    def __init__(
        self,
        spec: FeatureSpec,
        word_index: NDArray[np.int64],
        word_weights: NDArray[np.float64],
        cue_weights: NDArray[np.float64] | None,
        bias: NDArray[np.float64],
    ) -> None:
        self.spec = spec
        self._rows = {int(h): i for i, h in enumerate(word_index)}
        self.word_index = word_index
        self.word_weights = word_weights  # (len(word_index), classes)
        self.cue_weights = cue_weights  # (CUE_WIDTH, classes) or None
        self.bias = bias

    def logits(self, v: View) -> NDArray[np.float64]:
        out = self.bias.copy()
        if "words" in self.spec.blocks:
            for index, value in word_features(v, self.spec.bigrams).items():
                row = self._rows.get(index)
                if row is not None:
                    out += value * self.word_weights[row]
        if "cues" in self.spec.blocks and self.cue_weights is not None:
            out += (self.spec.cue_scale * cue_features(v)) @ self.cue_weights
        return out

    def predict_view(self, v: View) -> str | None:
        return CLASSES[int(np.argmax(self.logits(v)))]

    def predict(self, text: str, lead: str = "", ignore: tuple[int, int] | None = None) -> str | None:
        return self.predict_view(View(text, lead, ignore))

    # -- storage -------------------------------------------------------------------------------

    def to_json(self, trained_on: Sequence[str]) -> str:
        """Deterministic text: same weights, same bytes (weights rounded to 5 decimals)."""

        def rounded(values: NDArray[np.float64]) -> list[Any]:
            return np.round(values, 5).tolist()

        data = {
            "format": 1,
            "classes": [c if c is not None else "" for c in CLASSES],
            "dimension": DIMENSION,
            "spec": self.spec.as_dict(),
            "trained_on": sorted(trained_on),
            "bias": rounded(self.bias),
            "cue_weights": rounded(self.cue_weights) if self.cue_weights is not None else None,
            "words": {
                str(int(h)): rounded(w) for h, w in zip(self.word_index, self.word_weights, strict=True)
            },
        }
        return json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CategoryModel:
        data = json.loads(text)
        classes = tuple(c or None for c in data["classes"])
        if data["format"] != 1 or classes != CLASSES or data["dimension"] != DIMENSION:
            raise ValueError("the category model was trained for other classes or features")
        words = sorted((int(h), w) for h, w in data["words"].items())
        width = len(CLASSES)
        index = np.array([h for h, _ in words], dtype=np.int64)
        weights = np.array([w for _, w in words], dtype=np.float64).reshape(len(words), width)
        cues = data["cue_weights"]
        return cls(
            FeatureSpec.from_dict(data["spec"]),
            index,
            weights,
            np.array(cues, dtype=np.float64) if cues is not None else None,
            np.array(data["bias"], dtype=np.float64),
        )


def model_path() -> Path:
    """Where ``--write`` puts the weights: beside this script (nothing in the package reads them)."""
    return Path(__file__).resolve().parent / "category_model.json"
