"""bench/llm_desk.py: the litellm analyst's requests answered by hand at a desk, and replayed.

A request waits at the desk until a reader answers it, shown and answered with placeholders for
the run's note ids; a run replayed from recorded answers scores as the run that recorded them,
though every id differs between the two runs."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import threading
from pathlib import Path
from types import ModuleType

import litellm
import pytest

REPO = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


scripted_answers = _load("scripted_answers")


@pytest.fixture(scope="module")
def desk_module() -> ModuleType:
    return _load("llm_desk")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load("review_burden")


@pytest.fixture
def restore_providers():
    before = list(litellm.custom_provider_map)
    yield
    litellm.custom_provider_map = before


def test_a_request_waits_until_a_reader_answers_it_and_comes_back_with_the_runs_ids(
    desk_module: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    desk = desk_module.Desk(tmp_path / "desk")
    real = "n_0123456789abcdef"
    messages = [
        {"role": "system", "content": "You maintain a memory of notes."},
        {"role": "user", "content": json.dumps({"neighbours": [{"id": real, "content": "Acme pays $42"}]})},
    ]
    got: list[str] = []
    asking = threading.Thread(target=lambda: got.append(desk.ask(messages)), daemon=True)
    asking.start()
    assert desk_module.show(desk, wait=60) == 1
    shown = capsys.readouterr().out
    assert "note#1" in shown and real not in shown  # the reader never sees the run's ids
    key = re.search(r"key ([0-9a-f]{24}) \(link_evolve\)", shown)
    assert key is not None
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({key.group(1): {"links": [{"note_id": "note#1", "reason": "price"}]}}))
    desk_module.answer(desk, answers)
    asking.join(timeout=60)
    assert got and json.loads(got[0])["links"][0]["note_id"] == real
    # asked again (another run: another id), the same request is answered at once, with its id
    again = json.loads(json.dumps(messages).replace(real, "n_fedcba9876543210"))
    assert json.loads(desk.ask(again))["links"][0]["note_id"] == "n_fedcba9876543210"


def _pricing_model(messages: list[dict[str, str]]) -> str:
    """A new note stating a price contradicts its nearest priced neighbour."""
    user = messages[-1]["content"]
    if "<neighbours>" not in user:
        return scripted_answers.construct(user)
    new_note = json.loads(user.split("<new_note>", 1)[1].split("</new_note>", 1)[0])
    neighbours = json.loads(user.split("<neighbours>", 1)[1].split("</neighbours>", 1)[0])
    price = re.search(r"\$\d+", new_note["content"])
    priced = [n["id"] for n in neighbours if "$" in n["content"]]
    contradictions = (
        [{"note_id": priced[0], "reason": "another price", "evidence": price.group(0)}]
        if price and priced
        else []
    )
    return json.dumps({"links": [], "updates": [], "contradictions": contradictions, "restates": None})


def test_a_run_replayed_from_recorded_answers_scores_as_the_run_that_recorded_them(
    bench: ModuleType, desk_module: ModuleType, scripted_llm, tmp_path: Path, restore_providers
) -> None:
    rows: list[dict[str, str]] = []

    def recording(messages: list[dict[str, str]]) -> str:
        answer = _pricing_model(messages)
        rows.append(desk_module.recorded(messages, answer))
        return answer

    scripted_llm.default = recording
    _, recorded_run, info, _ = bench.run(
        tmp_path / "first", None, bench.DEFAULT_POLICY, ("tuned",), {"globex"}, "scripted/judge"
    )
    first = recorded_run["tuned"]["globex"]
    assert info["failed"] == 0 and first.pairs_proposed > 0  # the answers named neighbours' ids
    replay = tmp_path / "answers.jsonl"
    replay.write_text("".join(json.dumps(row) + "\n" for row in rows))

    model = desk_module.install(None, replay)
    _, replayed_run, info, _ = bench.run(
        tmp_path / "second", None, bench.DEFAULT_POLICY, ("tuned",), {"globex"}, model
    )
    assert info["failed"] == 0
    assert replayed_run["tuned"]["globex"].figures == first.figures
    assert replayed_run["tuned"]["globex"].pairs_proposed == first.pairs_proposed
