"""A model answered by hand: the litellm analyst's prompts queued on disk, answered by whoever reads them.

No model can be called from the machines this project runs on, so the litellm analyst's own
prompts could never be scored (``bench/review_burden.py --llm`` needs a provider). The desk is a
litellm custom provider (``desk/<name>``, the same hook tests script the model through): each
completion request is written to ``DESK/pending/<key>.json`` and waits until ``DESK/answers/<key>.json``
holds the answer. A reader (a person, or an LLM agent acting as the model) lists what waits with
``show`` and hands answers in with ``answer``; the analyst then validates and uses them exactly as
it would a provider's (a bad answer is sent back with what was wrong, as to any model).

Answers are kept by a key that does not depend on the run's random ids: note ids in the messages
(``n_`` + 16 hex digits) are replaced by their order of first appearance before hashing, and kept
in that form. So the same prompts in another run (the ingest is deterministic given the answers)
find the same answers, and ``--replay`` reproduces a scored run without anyone at the desk.

    python bench/review_burden.py --desk /tmp/desk/globex --accounts globex --part tuned   # waits
    python bench/llm_desk.py show /tmp/desk/globex          # the prompts waiting, once complete
    python bench/llm_desk.py answer /tmp/desk/globex answers.json   # {key: answer object or text}
    python bench/llm_desk.py export /tmp/desk/globex bench/desk_answers/globex.jsonl
    python bench/llm_desk.py seed /tmp/desk2/globex bench/desk_answers/globex.jsonl --task construct_note
    python bench/review_burden.py --replay bench/desk_answers/globex.jsonl --accounts globex --part tuned
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

NOTE_ID = re.compile(r"\bn_[0-9a-f]{16}\b")
PLACEHOLDER = re.compile(r"note#\d+")
PROVIDER = "desk"
#: How often a waiting request looks for its answer, and how long ``show`` waits for the requests
#: of one round to stop arriving (the analyst sends a batch's requests from several threads).
POLL_SECONDS = 0.5
SETTLE_SECONDS = 3.0


def canonical(messages: list[dict[str, Any]]) -> tuple[str, dict[str, str]]:
    """The messages as JSON with every note id replaced by ``note#<k>`` (k: order of first
    appearance), and the map from the placeholders back to this run's ids. The reader sees and
    answers with the placeholders; the answer is read back with this run's ids."""
    text = json.dumps([{"role": m.get("role"), "content": m.get("content")} for m in messages])
    ids: dict[str, str] = {}

    def placeholder(match: re.Match[str]) -> str:
        return ids.setdefault(match.group(0), f"note#{len(ids) + 1}")

    return NOTE_ID.sub(placeholder, text), {v: k for k, v in ids.items()}


def key_of(canonical_text: str) -> str:
    return hashlib.sha256(canonical_text.encode("utf-8")).hexdigest()[:24]


def from_placeholders(answer: str, back: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: back.get(m.group(0), m.group(0)), answer)


def recorded(messages: list[dict[str, Any]], answer: str) -> dict[str, str]:
    """A replay file's row for ``answer`` given to ``messages`` in this run (by any model): its
    key, and the answer with this run's note ids as placeholders."""
    text, back = canonical(messages)
    forward = {real: ph for ph, real in back.items()}
    kept = NOTE_ID.sub(lambda m: forward.get(m.group(0), m.group(0)), answer)
    return {"key": key_of(text), "task": _task(messages), "answer": kept}


def _task(messages: list[dict[str, Any]]) -> str:
    system = str(messages[0].get("content", "")) if messages else ""
    return "construct_note" if system.startswith("You build one memory note") else "link_evolve"


class Desk:
    """The files of one desk: ``pending/`` (requests waiting), ``answers/`` (by key), ``done``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pending = root / "pending"
        self.answers = root / "answers"
        for folder in (self.pending, self.answers):
            folder.mkdir(parents=True, exist_ok=True)

    def answer_of(self, key: str) -> str | None:
        path = self.answers / f"{key}.json"
        if not path.is_file():
            return None
        return str(json.loads(path.read_text(encoding="utf-8"))["answer"])

    def put_answer(self, key: str, answer: str, task: str = "") -> None:
        tmp = self.answers / f".{key}.tmp"
        tmp.write_text(json.dumps({"key": key, "task": task, "answer": answer}), encoding="utf-8")
        tmp.replace(self.answers / f"{key}.json")

    def ask(self, messages: list[dict[str, Any]]) -> str:
        """The answer to ``messages``: given at the desk already, or waited for there."""
        text, back = canonical(messages)
        key = key_of(text)
        recorded = self.answer_of(key)
        if recorded is None:
            request = {"key": key, "task": _task(messages), "messages": json.loads(text)}
            tmp = self.pending / f".{key}.tmp"
            tmp.write_text(json.dumps(request), encoding="utf-8")
            tmp.replace(self.pending / f"{key}.json")
            while (recorded := self.answer_of(key)) is None:
                time.sleep(POLL_SECONDS)
            (self.pending / f"{key}.json").unlink(missing_ok=True)
        return from_placeholders(recorded, back)


def install(root: Path | None, replay_file: Path | None = None) -> str:
    """Register the desk provider with litellm; returns the model string to give the analyst.
    The provider is the tests' scripted one (tests/scripted_llm.py: an answer as a provider sends
    it, its usage counted), answered by the desk or the replay file."""
    import litellm

    from tests.scripted_llm import ScriptedLLM

    desk = Desk(root) if root is not None else None
    replay = load_replay(replay_file) if replay_file is not None else None

    def answer(messages: list[dict[str, Any]]) -> str:
        if replay is not None:
            return _replayed(messages, replay)
        if desk is not None:
            return desk.ask(messages)
        raise RuntimeError("the desk provider has neither a desk nor a replay file")

    handler = ScriptedLLM()
    handler.default = answer
    litellm.custom_provider_map = [
        *[p for p in litellm.custom_provider_map if p.get("provider") != PROVIDER],
        {"provider": PROVIDER, "custom_handler": handler},
    ]
    return f"{PROVIDER}/{'replay' if replay is not None else 'answered'}"


def _replayed(messages: list[dict[str, Any]], replay: dict[str, str]) -> str:
    text, back = canonical(messages)
    key = key_of(text)
    if key not in replay:
        raise RuntimeError(f"desk replay: no recorded answer for request {key} ({_task(messages)})")
    return from_placeholders(replay[key], back)


def load_replay(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["key"]] = row["answer"]
    return out


# -- the reader's side --------------------------------------------------------------------------


def _waiting(desk: Desk) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(desk.pending.glob("*.json")):
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue  # answered and removed meanwhile
        if desk.answer_of(row["key"]) is None:
            rows.append(row)
    return rows


def show(desk: Desk, wait: float) -> int:
    """Print the requests waiting, once no new one has arrived for SETTLE_SECONDS (up to ``wait``
    seconds for the first). Each task's system prompt is printed once; then each request's key and
    its other messages. Prints DONE when the run has finished and nothing waits."""
    deadline = time.monotonic() + wait
    seen: set[str] = set()
    settled_at = time.monotonic()
    while True:
        rows = _waiting(desk)
        keys = {r["key"] for r in rows}
        if keys != seen:
            seen, settled_at = keys, time.monotonic()
        if rows and time.monotonic() - settled_at >= SETTLE_SECONDS:
            break
        if not rows and (desk.root / "done").exists():
            print("DONE: the run has finished; nothing waits.")
            return 0
        if not rows and time.monotonic() > deadline:
            print("NOTHING WAITS yet (the run is writing or indexing): run show again.")
            return 0
        time.sleep(POLL_SECONDS)
    systems: dict[str, str] = {}
    for row in rows:
        systems.setdefault(row["task"], row["messages"][0]["content"])
    for task, system in systems.items():
        print(f"===== SYSTEM PROMPT of every {task} request =====\n{system}\n")
    print(f"===== {len(rows)} REQUESTS WAITING =====")
    for row in rows:
        print(f"\n----- key {row['key']} ({row['task']}) -----")
        for message in row["messages"][1:]:
            print(f"[{message['role']}]\n{message['content']}")
    return len(rows)


def answer(desk: Desk, path: Path) -> None:
    """Hand in answers: a JSON object {key: answer}, each answer a JSON object or a string."""
    given = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(given, dict):
        raise SystemExit(f"{path}: expected a JSON object mapping each request key to its answer")
    waiting = {r["key"]: r for r in _waiting(desk)}
    for key, value in given.items():
        if key not in waiting:
            print(f"skipped {key}: no such request waits (answered already, or a typo)")
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        desk.put_answer(key, text, waiting[key]["task"])
        print(f"answered {key}")
    print(f"{len(_waiting(desk))} requests still wait")


def export(desk: Desk, out: Path) -> None:
    rows = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(desk.answers.glob("*.json"))]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} answers written to {out}")


def seed(desk: Desk, path: Path, tasks: set[str] | None) -> None:
    """Give the desk answers recorded before (an export), of ``tasks`` only when given: a prompt
    changed for one task is answered again while the other task's requests find theirs."""
    rows = [
        row for row in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    ]
    kept = [row for row in rows if tasks is None or row.get("task") in tasks]
    for row in kept:
        desk.put_answer(row["key"], row["answer"], row.get("task", ""))
    print(f"{len(kept)} of {len(rows)} recorded answers given to the desk")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_show = sub.add_parser("show", help="print the requests waiting")
    p_show.add_argument("desk", type=Path)
    p_show.add_argument("--wait", type=float, default=120, help="seconds to wait for a request (default 120)")
    p_answer = sub.add_parser("answer", help="hand in answers from a JSON file {key: answer}")
    p_answer.add_argument("desk", type=Path)
    p_answer.add_argument("file", type=Path)
    p_export = sub.add_parser("export", help="write every answer given at the desk as JSONL (for --replay)")
    p_export.add_argument("desk", type=Path)
    p_export.add_argument("out", type=Path)
    p_seed = sub.add_parser("seed", help="give the desk answers recorded before (an export's JSONL)")
    p_seed.add_argument("desk", type=Path)
    p_seed.add_argument("file", type=Path)
    p_seed.add_argument("--task", action="append", default=None, help="only this task's answers (repeatable)")
    args = parser.parse_args()
    desk = Desk(args.desk)
    if args.command == "show":
        show(desk, args.wait)
    elif args.command == "answer":
        answer(desk, args.file)
    elif args.command == "seed":
        seed(desk, args.file, set(args.task) if args.task else None)
    else:
        export(desk, args.out)


if __name__ == "__main__":
    sys.exit(main())
