"""What a process open on the store (a server, a worker) keeps of the index builds other processes
replace: its memory and the removed index files it holds open, rebuild after rebuild.

Every `amem reindex` and every erasure writes a new build of the vector index beside the one in use
and removes the old one's files (docs/architecture.md, "Builds side by side"). Chroma keeps every
collection a process loaded, vectors in memory and files open, until the process ends. This builds
one SQLite store of N notes in one account (stored vectors, as `bench/erasure_followers.py`), starts
two followers that search it, one running the code of ``--baseline-ref`` and one this tree's, and
rebuilds the index R times from this process (this tree's code), each follower searching after each
rebuild. It prints each follower's resident memory and the removed index files it still holds.

    python bench/follower_memory.py                        # 4,000 notes, 8 rebuilds, baseline df24825
    python bench/follower_memory.py --size 20000 --rebuilds 5 --baseline-ref main
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUERY = "price per seat"


def held(directory: Path) -> tuple[int, int]:
    """How many removed files under ``directory`` this process holds open, and their bytes."""
    count = size = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
            if target.startswith(str(directory)) and target.endswith(" (deleted)"):
                count, size = count + 1, size + os.stat(fd).st_size
        except OSError:
            continue
    return count, size


def resident_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def follower(store: Path) -> None:
    """A second process: search on each line of stdin, then print its memory and held files."""
    from amem.memory import Memory
    from bench.erasure_followers import open_store

    with open_store(store, Memory) as mem:
        for _ in iter(sys.stdin.readline, ""):
            mem.search(QUERY, k=10, scope="acme")
            count, size = held(store)
            print(json.dumps({"rss_kb": resident_kb(), "held": count, "held_bytes": size}), flush=True)


class Follower:
    def __init__(self, store: Path, code: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(code / "bench" / "follower_memory.py"), "--follower", str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=code,
            env={**os.environ, "PYTHONPATH": str(code)},
        )

    def look(self) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("search\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=4000)
    parser.add_argument("--rebuilds", type=int, default=8)
    parser.add_argument("--baseline-ref", default="df24825")
    parser.add_argument("--follower", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.follower:
        follower(args.follower)
        return

    from bench import erasure_scale, facts_as_of

    root = Path(tempfile.mkdtemp(prefix="amem-follower-memory-"))
    try:
        baseline = root / "baseline"
        baseline.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.baseline_ref], cwd=REPO, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
        if not (baseline / "bench" / "follower_memory.py").exists():  # a ref from before this script
            shutil.copy(__file__, baseline / "bench" / "follower_memory.py")
        erasure_scale.with_reviewers(root)
        mem, _ = facts_as_of.build(root / "store", args.size, policy=root / "policies.yaml")
        erasure_scale.store_vectors(mem)
        mem.reindex()
        followers = {
            "baseline": Follower(root / "store", baseline),
            "this tree": Follower(root / "store", REPO),
        }
        rows = [{name: f.look() for name, f in followers.items()}]
        for _ in range(args.rebuilds):
            mem.reindex()
            rows.append({name: f.look() for name, f in followers.items()})
        for f in followers.values():
            f.close()
        mem.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"{args.size:,} notes, {args.rebuilds} rebuilds; baseline {args.baseline_ref}")
    print(
        "| after rebuild | baseline: RSS MB | held files (bytes) | this tree: RSS MB | held files (bytes) |"
    )
    print("|---|---|---|---|---|")
    for i, row in enumerate(rows):
        b, t = row["baseline"], row["this tree"]
        print(
            f"| {i} | {b['rss_kb'] / 1024:.0f} | {b['held']} ({b['held_bytes']:,}) "
            f"| {t['rss_kb'] / 1024:.0f} | {t['held']} ({t['held_bytes']:,}) |"
        )
    for name in ("baseline", "this tree"):
        first, last = rows[0][name]["rss_kb"], rows[-1][name]["rss_kb"]
        print(f"{name}: {(last - first) / 1024:+.0f} MB over {args.rebuilds} rebuilds")


if __name__ == "__main__":
    main()
