"""bench/review_burden.py with a frozen learned category model in the offline analyst (issue 12).

Frozen on 2026-12-05 before group H (four fresh writers, bench/README.md "Thirty-first session")
was written, to be scored on it beside the rules. Nothing at run time uses it.

The model (``category_frozen.npz``, sha256 5557040b...5fc5d): multinomial logistic regression,
fitted by plain gradient descent (L2 1e-4, 1,500 steps of 2.0) on 1,462 labelled inputs of 33
accounts (the 13 tuned sample accounts and the 20 read probes; never the held-out part or the blind
probes novaterra, quarrymoor, castellan), over
- the MiniLM vector of the raw log's text (the index's offline embedder),
- tanh(score / 2) of each label's cue score and the rules' own answer one-hot, both x 0.5 (in
  training the rules read each raw text alone; here they read it as the analyst does, with its
  lead and reason span, as when the model was measured).
The analyst files the note by it (its category, tags, context and the date rules that read the
category); the contradiction gates keep the rules' category of each note, which they were written
for. Chat stays noise.

Registered bar, written before group H was read: the model ships only if on group H's four
accounts, ingested together, its category accuracy is at least the rules' + 0.05 and its queue
precision is not below the rules'.

    python bench/category_frozen.py --samples DIR --part tuned --json     # any review_burden.py args
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

from amem.index.embedders import MiniLMEmbedder  # noqa: E402
from amem.llm.offline import analyst, categories  # noqa: E402
from amem.llm.offline.text import readable, without_signature  # noqa: E402

_WEIGHTS = np.load(HERE / "category_frozen.npz")
W, B, CLASSES = _WEIGHTS["W"], _WEIGHTS["b"], [str(c) for c in _WEIGHTS["labels"]]
_EMBEDDER = MiniLMEmbedder()
_RULES = categories.category
#: The rules' category of each text the analyst filed, for the contradiction gates.
_TOPIC: dict[str, str | None] = {}


def learned(text: str, lead: str = "", ignore: tuple[int, int] | None = None) -> str | None:
    """The frozen model's category of the text the analyst reads (its signature left out)."""
    topic = _RULES(text, lead, ignore)
    _TOPIC[text] = topic
    if categories.chat(text):
        return None
    scores = np.array(categories.cue_scores(text, lead, ignore), dtype=np.float64)
    answer = np.zeros(len(CLASSES))
    answer[CLASSES.index(str(topic))] = 1.0
    x = np.concatenate([_EMBEDDER.embed([text])[0], np.concatenate([np.tanh(scores / 2), answer]) * 0.5])
    label = CLASSES[int(np.argmax(x @ W + B))]
    return None if label == "None" else label


def _topic(note: Any) -> Any:
    body = without_signature(readable(note.content))
    return note.model_copy(update={"category": _TOPIC.get(body, _RULES(body))})


_contradictions = analyst.OfflineAnalyst._contradictions


def _gated(self: analyst.OfflineAnalyst, note: Any, others: Any) -> Any:
    return _contradictions(self, _topic(note), [_topic(o) for o in others])


class _Categories:
    """``categories`` as the analyst sees it, with ``category`` the frozen model's."""

    def __getattr__(self, name: str) -> Any:
        return learned if name == "category" else getattr(categories, name)


def main() -> None:
    analyst.categories = _Categories()  # type: ignore[assignment]
    analyst.OfflineAnalyst._contradictions = _gated  # type: ignore[method-assign]
    sys.argv = [str(HERE / "review_burden.py"), *sys.argv[1:]]
    runpy.run_path(str(HERE / "review_burden.py"), run_name="__main__")


if __name__ == "__main__":
    main()
