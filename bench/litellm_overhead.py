"""What one litellm completion costs amem when the model itself costs nothing, and which of
litellm's public settings or arguments change that.

Every row sends amem's real prompts (construct_note's and link_evolve's, built from a raw log and
five neighbour notes with the default policy's attributes) to the scripted zero-latency model of
tests/scripted_llm.py through litellm's custom-provider hook, one call at a time, after a warm-up.
The first row is amem's own call (``LiteLLMAnalyst._complete``: the completion plus the prompt
digest and the LlmCall it records); the others call ``litellm.completion`` with the arguments
``_complete`` passes (model, messages, temperature, timeout, drop_params, response_format where
litellm says the provider takes it), changed as the row says. Rows run interleaved (each round
runs every row once, in a rotated order), so drift and load hit all alike.

Columns: wall ms per call (p50, mean); the main thread's CPU ms per call; the process's CPU ms per
call, which adds the success logging litellm hands to its own threads after each call (it shares
the GIL with the caller, so it is time the caller loses too).

    python bench/litellm_overhead.py                      # 3 rounds x 500 calls a row
    python bench/litellm_overhead.py --rounds 5 --calls 1000
    python bench/litellm_overhead.py --profile current    # cProfile of one row, top functions
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.metadata
import logging
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import litellm  # noqa: E402
from scale import answer  # noqa: E402

from amem.llm import construct_note, link_evolve  # noqa: E402
from amem.llm.litellm_analyst import LiteLLMAnalyst  # noqa: E402
from amem.policy import load_policy  # noqa: E402
from tests import scripted_llm  # noqa: E402
from tests.llm.builders import THURSDAY, note, raw_log  # noqa: E402

Messages = list[dict[str, str]]
Call = Callable[[Messages], Any]

MODEL = "scripted/bench"
#: The same scripted model under a name litellm's cost map prices (at zero): what a priced model costs.
PRICED = "scripted/bench-priced"
#: The same answers from a provider that reports fixed token counts: the scripted model's own share.
FIXED_USAGE = "scripted-fixed-usage"
#: litellm's own mock of a priced hosted model (no HTTP client, no network): a reference only.
MOCKED = "openai/gpt-4o-mini"

TEXTS = [
    "Dana Ortiz (VP Finance) confirmed the renewal of Acme's 40 seats in March, only with SSO, "
    "because their auditor asked for it after the Q3 review; Priya will send the SOC 2 report.",
    "Acme's security team asked whether SCIM provisioning is on the roadmap; Tom promised an answer "
    "by Friday and flagged that the Okta integration is a blocker for the EU rollout.",
    "Call with Acme procurement: they want a 12% discount for a three-year term and net-60 payment; "
    "we offered 8% and net-45, decision expected next Tuesday.",
    "Acme reported two P1 incidents on the export API last week; the CSM agreed a credit of one "
    "month and a weekly status call until the fix ships.",
]


class FixedUsage(scripted_llm.ScriptedLLM):
    """The scripted model answering with fixed token counts (no tokenizer): its own cost apart."""

    provider = FIXED_USAGE

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
        from litellm.types.utils import ModelResponse

        text = self._answer(messages)
        return ModelResponse(
            model=model,
            choices=[
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
            ],
            usage=litellm.Usage(prompt_tokens=900, completion_tokens=60, total_tokens=960),
        )


def prompts() -> list[Messages]:
    declared = load_policy().declared_attributes()
    neighbours = [
        note(
            text,
            keywords=["Acme", "renewal"],
            tags=["acme"],
            context="A customer conversation.",
            category="meeting",
        )
        for text in TEXTS
    ] + [note(TEXTS[0].replace("March", "April"), keywords=["Acme"], tags=["acme"])]
    said = {n.id: THURSDAY - timedelta(days=i + 1) for i, n in enumerate(neighbours)}
    out: list[Messages] = []
    for i, text in enumerate(TEXTS):
        log = raw_log(text, occurred_at=THURSDAY + timedelta(hours=i))
        out.append(construct_note.build_messages(log, declared))
        new = note(text, keywords=["Acme"], tags=["acme"], context="A customer conversation.")
        others = [n for n in neighbours if n.content != text][:5]
        out.append(link_evolve.build_messages(new, log, others, said))
    return out


def amem_kwargs(analyst: LiteLLMAnalyst) -> dict[str, Any]:
    """The arguments ``LiteLLMAnalyst._complete`` passes besides model and messages."""
    kwargs: dict[str, Any] = {
        "temperature": analyst.temperature,
        "timeout": analyst.timeout,
        "drop_params": True,
    }
    if analyst._supports_json_mode(litellm):
        kwargs["response_format"] = {"type": "json_object"}
    return kwargs


def rows() -> dict[str, tuple[str, Call, Callable[[bool], None] | None]]:
    """name -> (description, one call, a switch run with True before the row's calls, False after)."""
    analyst = LiteLLMAnalyst(MODEL)
    base = amem_kwargs(analyst)

    def completion(model: str = MODEL, **changes: Any) -> Call:
        kwargs = {k: v for k, v in {**base, **changes}.items() if v is not None}
        return lambda messages: litellm.completion(model=model, messages=messages, **kwargs)

    def message_logging_off(on: bool) -> None:
        litellm.turn_off_message_logging = on

    mock_json = '{"links": [], "updates": [], "contradictions": []}'
    return {
        "current": (
            "amem: LiteLLMAnalyst._complete, as it is",
            lambda messages: analyst._complete("bench", "v", messages, None),
            None,
        ),
        "completion": ("litellm.completion, amem's arguments", completion(), None),
        "no-drop-params": ("  without drop_params=True", completion(drop_params=None), None),
        "custom-llm-provider": (
            "  custom_llm_provider= given, bare model name",
            completion(model=MODEL.split("/", 1)[1], custom_llm_provider="scripted"),
            None,
        ),
        "message-logging-off": (
            "  litellm.turn_off_message_logging = True",
            completion(),
            message_logging_off,
        ),
        "no-log": (
            '  "no-log": True (callbacks skipped for the call)',
            completion(**{"no-log": True}),
            None,
        ),
        "zero-custom-pricing": (
            "  input/output_cost_per_token=0 (custom pricing)",
            completion(input_cost_per_token=0.0, output_cost_per_token=0.0),
            None,
        ),
        "priced-model": ("  the model in litellm's cost map (register_model, $0)", completion(PRICED), None),
        "fixed-usage": (
            "  the scripted model without its tokenizer (its own share)",
            completion(f"{FIXED_USAGE}/bench"),
            None,
        ),
        "openai-mock": (
            f"reference: {MOCKED}, litellm's mock_response (no HTTP client)",
            completion(MOCKED, response_format={"type": "json_object"}, mock_response=mock_json),
            None,
        ),
    }


def run_row(
    call: Call, switch: Callable[[bool], None] | None, messages: list[Messages], n: int
) -> tuple[list[float], float, float]:
    if switch:
        switch(True)
    times: list[float] = []
    cpu_main = time.thread_time()
    cpu_all = time.process_time()
    try:
        for i in range(n):
            started = time.perf_counter()
            call(messages[i % len(messages)])
            times.append((time.perf_counter() - started) * 1000)
        cpu_main = time.thread_time() - cpu_main
        time.sleep(0.3)  # litellm's logging threads finish this row's success handlers
        cpu_all = time.process_time() - cpu_all
    finally:
        if switch:
            switch(False)
    return times, cpu_main * 1000 / n, cpu_all * 1000 / n


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=500, help="calls a row in each round")
    parser.add_argument("--warmup", type=int, default=200, help="calls a row before the first round")
    parser.add_argument("--rows", nargs="+", help="only these rows (names as printed)")
    parser.add_argument("--profile", metavar="ROW", help="cProfile --calls calls of one row instead")
    args = parser.parse_args()

    litellm.suppress_debug_info = True
    # The mocked reference row prices a mock at $0 and litellm warns of it on every call.
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    handler = scripted_llm.install()
    handler.default = answer
    fixed = FixedUsage()
    fixed.default = answer
    litellm.custom_provider_map = [
        *litellm.custom_provider_map,
        {"provider": FIXED_USAGE, "custom_handler": fixed},
    ]
    litellm.register_model(
        {
            PRICED: {
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "litellm_provider": "scripted",
                "mode": "chat",
            }
        }
    )
    messages = prompts()
    table = rows()
    names = args.rows or list(table)
    if args.profile:
        _, call, switch = table[args.profile]
        run_row(call, switch, messages, args.warmup)
        profile = cProfile.Profile()
        profile.enable()
        run_row(call, switch, messages, args.calls)
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
        return 0

    sizes = [sum(len(m["content"]) for m in ms) for ms in messages]
    print(
        f"litellm {importlib.metadata.version('litellm')}; {len(messages)} prompts of "
        f"{min(sizes)}-{max(sizes)} characters, in turn; {args.rounds} rounds x {args.calls} calls a row"
    )
    for name in names:
        run_row(table[name][1], table[name][2], messages, args.warmup)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            times, main_cpu, all_cpu = run_row(table[name][1], table[name][2], messages, args.calls)
            walls[name] += times
            cpu[name].append((main_cpu, all_cpu))
    first = statistics.median(walls[names[0]])
    print(
        f"| {'row':<72} | {'p50 ms':>6} | {'mean ms':>7} | {'vs first':>8} "
        f"| {'main CPU':>8} | {'all CPU':>7} |"
    )
    print(f"|{'-' * 74}|{'-' * 8}|{'-' * 9}|{'-' * 10}|{'-' * 10}|{'-' * 9}|")
    for name in names:
        p50 = statistics.median(walls[name])
        mean = statistics.mean(walls[name])
        main_cpu = statistics.mean(c[0] for c in cpu[name])
        all_cpu = statistics.mean(c[1] for c in cpu[name])
        label = f"{table[name][0]} [{name}]"
        print(
            f"| {label:<72} | {p50:>6.3f} | {mean:>7.3f} | {p50 / first:>7.2f}x "
            f"| {main_cpu:>8.3f} | {all_cpu:>7.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
