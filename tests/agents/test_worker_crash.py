"""`amem worker` killed with SIGKILL in the middle of a batch, then started again: every input that
was acknowledged gets its note, exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.ledger.tables import notes
from amem.memory import Memory

REPO = Path(__file__).resolve().parents[2]

#: A worker process whose model answers the first CONSTRUCTS construct prompts, then hangs in the
#: next one (after saying so) until it is killed.
HANGING_WORKER = """
import sys, threading
from amem.cli import main
from tests import scripted_llm
from tests.agents.scripted_answers import answer, text_of

home, url, constructs = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = []

def respond(messages):
    if text_of(messages) is not None:
        seen.append(1)
        if len(seen) > constructs:
            print("analysing", flush=True)
            threading.Event().wait()
    return answer(messages)

scripted_llm.install().default = respond
sys.exit(main(["--home", home, "--database-url", url, "--llm", "scripted/test-model",
               "worker", "--batch-size", "2"]))
"""


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


@pytest.mark.slow
def test_a_worker_killed_mid_batch_and_restarted_leaves_every_acknowledged_input_with_one_note(
    database_url: str, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "AMEM_WORKER_LEASE_SECONDS": "2"}
    home = tmp_path / "home"
    memory = Memory(home, database_url=database_url)
    try:
        acknowledged = [
            memory.add_note(
                f"Call {i}: Acme asked for {i + 3} more seats", actor="agent:x", scope="acme", wait=False
            )
            for i in range(9)
        ]
        child = subprocess.Popen(
            [sys.executable, "-c", HANGING_WORKER, str(home), database_url, "4"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            line = child.stdout.readline()  # two batches applied, the third being analysed
            assert line.strip() == "analysing", line
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.communicate(timeout=60)
        assert child.returncode == -signal.SIGKILL

        statuses = [memory.input_status(i).status for i in acknowledged]
        assert statuses.count("done") == 4 and statuses.count("processing") == 2, statuses

        restarted = subprocess.Popen(
            [sys.executable, "-m", "amem", "--home", str(home), "--database-url", database_url, "worker"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(
                lambda: all(memory.input_status(i).status == "done" for i in acknowledged),
                timeout=120,
                what="the restarted worker to finish every input",
            )
        finally:
            restarted.send_signal(signal.SIGTERM)
            stdout, stderr = restarted.communicate(timeout=60)
        assert restarted.returncode == 0, stderr
        assert "processed 5 inputs" in stdout

        note_ids = [memory.input_status(i).note_id for i in acknowledged]
        with memory.ledger.engine.connect() as conn:
            rows = conn.execute(sa.select(notes.c.id, notes.c.raw_log_ids)).all()
        assert sorted(r.id for r in rows) == sorted(note_ids)  # one note each, none twice
        assert {r.raw_log_ids[0] for r in rows} == set(acknowledged)
        assert memory.verify().ok
    finally:
        memory.close()
