"""How the offline embedder's batching costs: texts a second for the documents amem embeds.

The note documents of the sample's tuned accounts (content, keywords, tags, context, as the index
embeds them; built once with the offline analyst in a temporary store) are embedded by the
offline MiniLM model under each batching, in turn, for ``--rounds`` rounds so drift hits all alike:

- ``32 texts``: the batching before (at most 32 texts a batch, whatever their length);
- ``N tokens``: batches bounded by their padded tokens (the default is 512).

Vectors are checked to be the same under every batching. Run:

    python bench/embed_batch.py                       # 1 and 2 ONNX threads, 3 rounds
    python bench/embed_batch.py --threads 1 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def documents(count: int) -> list[str]:
    """The index documents of the first ``count`` tuned sample inputs, as a store holds them."""
    from amem import Memory
    from amem.index.documents import document_text
    from amem.samples import load_inputs

    with tempfile.TemporaryDirectory(prefix="amem-embed-batch-") as home:
        mem = Memory(home=home)
        try:
            mem.add_notes(load_inputs("tuned")[:count], actor="agent:bench")
            return [document_text(note) for note in mem.notes(limit=count)]
        finally:
            mem.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=400, help="documents to embed a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--budgets", type=int, nargs="+", default=[256, 512, 1024])
    args = parser.parse_args()

    from amem.index.embedders import MiniLMEmbedder, _minilm_tokenizer

    texts = documents(args.count)
    tokens = [len(e.ids) for e in _minilm_tokenizer(256).encode_batch(texts)]
    print(f"{len(texts)} documents, tokens mean {statistics.mean(tokens):.0f}, max {max(tokens)}")
    configs = {"32 texts (before)": {"batch_size": 32, "batch_tokens": 10**9}}
    configs |= {f"{b} tokens": {"batch_tokens": b} for b in args.budgets}
    rows = []
    for threads in args.threads:
        embedders = {name: MiniLMEmbedder(threads=threads, **kw) for name, kw in configs.items()}
        reference = None
        rates: dict[str, list[float]] = {name: [] for name in configs}
        for name, e in embedders.items():  # warm up, and the vectors must not depend on batching
            vectors = e.embed(texts)
            reference = vectors if reference is None else reference
            assert np.allclose(vectors, reference, atol=1e-4), f"{name}: vectors differ"
        for _ in range(args.rounds):
            for name, e in embedders.items():
                started = time.perf_counter()
                e.embed(texts)
                rates[name].append(len(texts) / (time.perf_counter() - started))
        base = statistics.median(rates["32 texts (before)"])
        for name in configs:
            rate = statistics.median(rates[name])
            rows.append((threads, name, rate, rate / base, rates[name]))
    print("\n| ONNX threads | batching | texts/s (median) | vs before | each round |")
    print("|---|---|---|---|---|")
    for threads, name, rate, ratio, each in rows:
        print(f"| {threads} | {name} | {rate:.0f} | {ratio:.2f}x | {', '.join(f'{r:.0f}' for r in each)} |")


if __name__ == "__main__":
    main()
