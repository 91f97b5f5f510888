"""What one embedding call a batch would save over add_notes' two (issue 16, "every embedding of a
batch in one call").

add_notes embeds a batch's new notes in one call (their neighbour search needs the vectors), then,
after the link step, the documents its evolution changed in a second call. The offline embedder
cuts every call into length-sorted batches of at most 512 padded tokens, so a second call costs
only what splitting the texts in two loses: batches of more mixed lengths, and one more partial
batch. This embeds the sample's texts as add_notes would for a batch of 50 new notes and the 100
neighbours they evolve (two neighbours a note): as two calls (50, then 100) and as one call of all
150, each first in half of ``--rounds`` rounds so drift hits both alike, and prints the medians.

    python bench/embed_calls.py                   # batches of 50 new notes, 9 rounds
    python bench/embed_calls.py --batch 100 --rounds 15
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from amem.index.embedders import MiniLMEmbedder  # noqa: E402
from amem.samples import load_inputs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=50, help="new notes a batch (neighbours: twice)")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    texts = [line["content"] for line in load_inputs()]
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:8])  # load the model before timing
    two_calls, one_call = [], []
    for r in range(args.rounds):
        start = (r * 3 * args.batch) % (len(texts) - 3 * args.batch)
        new = texts[start : start + args.batch]
        evolved = texts[start + args.batch : start + 3 * args.batch]
        vectors = {}
        for way in ("two", "one") if r % 2 == 0 else ("one", "two"):  # each goes first half the time
            began = time.perf_counter()
            if way == "two":
                vectors[way] = np.vstack([embedder.embed(new), embedder.embed(evolved)])
            else:
                vectors[way] = embedder.embed(new + evolved)
            (two_calls if way == "two" else one_call).append(time.perf_counter() - began)
        assert np.allclose(vectors["two"], vectors["one"], atol=1e-5)  # the same vectors either way
    two, one = statistics.median(two_calls), statistics.median(one_call)
    notes = args.batch
    print(f"\n{'embedding':<32}{'a batch':>10}{'a new note':>12}")
    print(f"{'two calls (new, then evolved)':<32}{two * 1000:>7.0f} ms{two / notes * 1000:>9.2f} ms")
    print(f"{'one call (all together)':<32}{one * 1000:>7.0f} ms{one / notes * 1000:>9.2f} ms")
    print(f"{'difference':<32}{(two - one) * 1000:>7.0f} ms{(two - one) / notes * 1000:>9.2f} ms")
    print(
        f"\nmedian of {args.rounds} rounds; {notes} new notes and {2 * notes} evolved documents a batch "
        f"(the sample's texts), MiniLM int8 ONNX, 2 cores"
    )


if __name__ == "__main__":
    main()
