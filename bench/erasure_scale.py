"""What one erasure costs as the store grows: 1,000 / 10,000 / 100,000 notes in the erased input's
account, phase by phase.

`amem erase` (``Memory.erase``) redacts the input and all derived from it in one transaction,
scanning the account's raw logs and later values for the words only the erased input held
(``erased_words``), then rebuilds the vector index from the ledger (from the stored vectors, nothing
embedded), compacts Chroma's files and compacts the ledger (SQLite: FTS5 optimize, VACUUM). A data
subject's request must be served within a month, and the store is in use meanwhile, so what counts
is how long each phase holds the store.

Each size is a fresh SQLite store of one account (acme) built through governance (no analyst; every
tenth note retired by a later change, as in `bench/facts_as_of.py`), each note with a stored vector
for its document (random unit vectors under the offline model's identity: the rebuild reads them
and embeds nothing, as in a store add_notes filled), indexed once. Then one raw log in the middle
of the account is erased, and each phase is timed inside the real ``Memory.erase`` call.

    python bench/erasure_scale.py                    # 1,000, 10,000 and 100,000 notes
    python bench/erasure_scale.py --sizes 1000 10000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import sqlalchemy as sa  # noqa: E402

import amem  # noqa: E402
from amem.domain.hashing import sha256_text  # noqa: E402
from amem.domain.models import utcnow  # noqa: E402
from amem.index.documents import document_text  # noqa: E402
from amem.index.embedders import MiniLMEmbedder  # noqa: E402
from amem.ledger.tables import note_vectors  # noqa: E402
from amem.memory import Memory  # noqa: E402
from amem.services import erasure  # noqa: E402
from bench import facts_as_of  # noqa: E402

PHASES = ("redaction", "index rebuild", "index compaction", "ledger compaction")


def with_reviewers(directory: Path) -> None:
    """The bench policy with the packaged reviewers (alice may erase), as the erasure needs."""
    policy = facts_as_of.bench_policy(directory)
    text = policy.read_text(encoding="utf-8") + "\nreviewers_file: reviewers.yaml\n"
    policy.write_text(text, encoding="utf-8")
    shutil.copy(Path(amem.__file__).parent / "defaults" / "reviewers.yaml", directory / "reviewers.yaml")


def store_vectors(mem: Memory, page: int = 5000) -> int:
    """A stored vector for each note's current document (random, unit length, the offline model's
    identity), written in pages: what add_notes keeps beside each note."""
    model, rng, kept, offset = MiniLMEmbedder().identity, np.random.default_rng(7), 0, 0
    while True:
        notes = mem.notes(scope="acme", limit=page, offset=offset, include_deleted=True)
        if not notes:
            return kept
        vectors = rng.standard_normal((len(notes), MiniLMEmbedder.DIMENSIONS)).astype("<f4")
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = [
            {
                "note_id": n.id,
                "model": model,
                "document_sha256": sha256_text(document_text(n)),
                "vector": v.tobytes(),
                "stored_at": utcnow(),
            }
            for n, v in zip(notes, vectors, strict=True)
        ]
        with mem.ledger.engine.begin() as conn:
            conn.execute(sa.insert(note_vectors), rows)
        kept, offset = kept + len(rows), offset + page


def timed_phases(mem: Memory) -> dict[str, float]:
    """Wrap each phase Memory.erase runs so the real call reports where its time goes."""
    spent: dict[str, float] = {}

    def timing(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - started

        return run

    erasure.erase = timing("redaction", erasure.erase)  # type: ignore[assignment]
    mem.reindex = timing("index rebuild", mem.reindex)  # type: ignore[method-assign]
    index = mem.search_service.index
    index.compact = timing("index compaction", index.compact)  # type: ignore[method-assign]
    mem.ledger.compact = timing("ledger compaction", mem.ledger.compact)  # type: ignore[method-assign]
    return spent


def one(directory: Path, size: int) -> dict[str, Any]:
    directory.mkdir(parents=True)
    with_reviewers(directory)
    started = time.perf_counter()
    mem, _ = facts_as_of.build(directory / "store", size, policy=directory / "policies.yaml")
    built = time.perf_counter() - started
    started = time.perf_counter()
    kept = store_vectors(mem)
    indexed = mem.reindex()
    first_index = time.perf_counter() - started
    middle = mem.notes(scope="acme", limit=1, offset=size // 2)[0]
    original = erasure.erase
    try:
        spent = timed_phases(mem)
        alice = mem.authentication.signed_in("alice", method="test")
        started = time.perf_counter()
        report = mem.erase(by=alice, reason="bench", raw_log_id=middle.raw_log_ids[0])
        whole = time.perf_counter() - started
        embedded = mem.index_embedded()
    finally:
        erasure.erase = original  # type: ignore[assignment]
        mem.close()
    return {
        "size": size,
        "built": built,
        "vectors": kept,
        "indexed": indexed,
        "first_index": first_index,
        "whole": whole,
        "spent": spent,
        "notes": report.notes,
        "embedded": embedded,
        "megabytes": (directory / "store" / "ledger.sqlite3").stat().st_size / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="amem-erasure-scale-"))
    rows = []
    try:
        for size in args.sizes:
            rows.append(one(root / str(size), size))
            built, indexed = rows[-1]["built"], rows[-1]["first_index"]
            print(f"{size:,} notes: built in {built:.0f} s, indexed in {indexed:.0f} s", flush=True)
        head = f"{'notes':>9}{'ledger':>9}{'erasure':>10}" + "".join(f"{p:>19}" for p in PHASES)
        print("\n" + head + f"{'embedded':>10}")
        for r in rows:
            phases = "".join(f"{r['spent'].get(p, 0.0):>17.2f} s" for p in PHASES)
            print(f"{r['size']:>9,}{r['megabytes']:>6.0f} MB{r['whole']:>8.2f} s{phases}{r['embedded']:>10}")
        print(
            "\none raw log erased in the middle of a one-account SQLite store (its note redacted and "
            "deleted); the index rebuilt from stored vectors; 2 cores"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
