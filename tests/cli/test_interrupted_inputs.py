"""`amem add` and `amem import` when analysis stops part-way (a step after the model call fails, or
Ctrl-C): the caller is told which raw logs are kept and how to finish them, and running the import
again finishes what the interruption left, never reporting it done while it is not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.agents.scripted_answers import answer, text_of
from tests.cli.test_note_commands import MODEL, Cli, outage
from tests.scripted_llm import bag_of_words


def write_lines(path: Path, count: int) -> list[str]:
    texts = [f"Acme call {i}: they want {i} more seats" for i in range(1, count + 1)]
    lines = [{"content": t, "scope": "acme", "at": f"2026-03-0{i}T10:00:00Z"} for i, t in enumerate(texts, 1)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return texts


def test_add_with_the_embedder_down_names_the_kept_raw_log_and_how_to_finish_it(
    amem: Cli, scripted_llm: Any
) -> None:
    """Before: "internal error ... this is a bug in amem" (exit 70) without the raw log's id, so the
    caller sent the input again; and the input stayed held, so `amem reprocess` skipped it."""
    assert amem("add", "Acme renews in May", "--scope", "acme", llm=MODEL)[0] == 0

    def down(texts: list[str]) -> list[list[float]]:  # for the new note (the store opens first)
        if any("SSO" in text for text in texts):
            raise RuntimeError("embedding service down")
        return bag_of_words(texts)

    scripted_llm.embedder = down
    code, out, err = amem("add", "Acme wants SSO", "--scope", "acme", "--json", llm=MODEL)
    assert code == 4, err
    said = json.loads(err)
    raw_id = said["raw_log_id"]
    assert raw_id in said["pending"] and "embedding service down" in said["pending"]
    assert "amem reprocess" in said["pending"] and f"amem status {raw_id}" in said["pending"]

    code, out, _ = amem("status", raw_id, "--json")
    assert code == 0 and json.loads(out)["status"] == "failed"
    code, out, _ = amem("status", raw_id)  # the words say what retries it: nothing does on its own
    assert code == 0 and "failed" in out and "`amem reprocess` retries it" in " ".join(out.split()), out
    scripted_llm.embedder = bag_of_words
    code, out, err = amem("reprocess", "--json", llm=MODEL)
    assert code == 0, err
    assert len(json.loads(out)["processed"]) == 1 and amem.memory.count_notes("acme") == 2


def test_an_import_interrupted_and_run_again_analyses_what_was_left(
    amem: Cli, scripted_llm: Any, tmp_path: Path
) -> None:
    """Before: the second run said "3 lines recorded before: skipped" and exit 0, "pending": 0, and
    analysed nothing; the inputs stayed held by the run that was interrupted."""
    path = tmp_path / "calls.jsonl"
    texts = write_lines(path, 3)

    def interrupted_at_the_third(messages: list[dict[str, Any]]) -> str:
        if text_of(messages) == texts[2]:
            raise KeyboardInterrupt
        return answer(messages)

    scripted_llm.default = interrupted_at_the_third
    code, _, err = amem("import", str(path), "--batch-size", "1", llm=MODEL)
    assert code == 130  # Ctrl-C, and the caller is told what became of the inputs (before: nothing)
    assert "interrupted: the lines recorded so far are kept as raw logs" in err
    assert "run the same `amem import` again to finish" in err
    assert amem.memory.count_notes("acme") == 1  # the first batch was written
    assert amem.memory.queue_depth() == {"queued": 2, "processing": 0, "failed": 0}

    scripted_llm.default = answer
    code, out, err = amem("import", str(path), "--batch-size", "1", "--json", llm=MODEL)
    assert code == 0, err
    result = json.loads(out)
    assert (result["added"], result["pending"], result["skipped"]) == (2, 0, 1)
    notes = amem.memory.notes(scope="acme")
    assert sorted(n.content for n in notes) == sorted(texts) and amem.memory.count_raw_logs() == 3
    assert amem.memory.unprocessed_count() == 0

    code, out, _ = amem("import", str(path), "--json", llm=MODEL)  # and once more: nothing to do
    assert code == 0 and json.loads(out)["skipped"] == 3 and amem.memory.count_notes("acme") == 3


def test_an_import_run_again_reports_a_line_whose_analysis_failed_as_pending(
    amem: Cli, scripted_llm: Any, tmp_path: Path
) -> None:
    """A line recorded before whose analysis failed is not "skipped": it is pending, for
    `amem reprocess`, and the run says so (exit 4), as when it failed the first time."""
    path = tmp_path / "calls.jsonl"
    texts = write_lines(path, 2)

    def model_down_for_the_second(messages: list[dict[str, Any]]) -> str:
        if text_of(messages) == texts[1]:
            raise outage()
        return answer(messages)

    scripted_llm.default = model_down_for_the_second
    code, _, err = amem("import", str(path), llm=MODEL)
    assert code == 4, err

    scripted_llm.default = answer
    code, out, err = amem("import", str(path), llm=MODEL)
    assert code == 4, err
    assert "1 raw logs kept but not analysed (run `amem reprocess`)" in out
    assert "1 lines recorded before" in out
    assert amem.memory.count_raw_logs() == 2 and amem.memory.unprocessed_count() == 1


#: The child process: ``amem`` whose scripted model, at the third input, says so on a pipe and
#: waits, so the test sends SIGTERM while that input is being analysed.
CHILD = """
import faulthandler, os, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test's stack dump if the child hangs
from tests import scripted_llm
from tests.agents.scripted_answers import answer, text_of
handler = scripted_llm.install()
def waiting_at_the_second(messages):
    if text_of(messages) == os.environ["BLOCK_AT"]:
        os.write(int(os.environ["READY_FD"]), b"analysing\\n")
        time.sleep(300)  # SIGTERM ends this
    return answer(messages)
handler.default = waiting_at_the_second
from amem.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_during_an_import_gives_the_inputs_back_as_ctrl_c_does(
    amem: Cli, tmp_path: Path, database_url: str
) -> None:
    """Before: SIGTERM (systemd, docker stop, a CI timeout) killed the import holding its claims, so
    running it again said to run `amem reprocess`, which processed nothing until the lease ended."""
    import os
    import select
    import signal
    import subprocess
    import sys

    from tests.conftest import REPO

    path = tmp_path / "calls.jsonl"
    texts = write_lines(path, 3)
    ready_read, ready_write = os.pipe()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "AMEM_EMBEDDING_MODEL": "scripted/embed-v1",
        "READY_FD": str(ready_write),
        "BLOCK_AT": texts[2],
    }
    options = ["--database-url", database_url, "--home", str(amem.memory.home), "--llm", MODEL]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, *options, "import", str(path), "--batch-size", "1"],
        env=env,
        pass_fds=(ready_write,),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(ready_write)
    try:
        readable, _, _ = select.select([ready_read], [], [], 120)
        assert readable and os.read(ready_read, 100) == b"analysing\n", _stacks_of(child)
        child.send_signal(signal.SIGTERM)
        try:
            _, err = child.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"no exit 120 s after SIGTERM; its threads:\n{_stacks_of(child)}") from None
    finally:
        os.close(ready_read)
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 143, err
    assert "terminated (SIGTERM): the lines recorded so far are kept as raw logs" in err
    assert "Traceback" not in err
    assert amem.memory.count_notes("acme") == 1  # the first batch was written
    assert amem.memory.queue_depth() == {"queued": 2, "processing": 0, "failed": 0}  # given back

    code, out, err = amem("import", str(path), "--batch-size", "1", "--json", llm=MODEL)
    assert code == 0, err
    result = json.loads(out)
    assert (result["added"], result["pending"], result["skipped"]) == (2, 0, 1)
    assert sorted(n.content for n in amem.memory.notes(scope="acme")) == sorted(texts)
    assert amem.memory.unprocessed_count() == 0 and amem.memory.count_raw_logs() == 3


def _stacks_of(child: Any) -> str:
    """A child that hangs: every thread's stack (faulthandler, on SIGUSR1) and what it wrote, so a
    failure says where it waited instead of only that it did."""
    import signal
    import subprocess

    if child.poll() is None:
        child.send_signal(signal.SIGUSR1)
        try:
            return child.communicate(timeout=10)[1]
        except subprocess.TimeoutExpired:
            child.kill()
    return child.communicate()[1]
