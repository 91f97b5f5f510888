"""`amem worker --once`: a signal stops it after the batch it holds, and its exit status says
whether every input it took was analysed."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import litellm
import pytest

from amem.cli import main
from amem.memory import Memory
from tests.agents.scripted_answers import answer
from tests.conftest import REPO

MODEL = "scripted/test-model"

#: ``amem`` whose scripted model, at the first input it analyses, says so on a pipe, then answers
#: only once a signal handler of the command ran (each handler amem installs is wrapped to say so):
#: the test's signal arrives while a batch is being analysed, and is handled before it is finished.
CHILD = """
import os, signal, sys, threading
from tests import scripted_llm
from tests.agents.scripted_answers import answer, text_of

handled = threading.Event()
install = signal.signal

def installing(sig, handler):
    if not callable(handler):
        return install(sig, handler)
    def told(signum, frame, handler=handler):
        try:
            return handler(signum, frame)
        finally:
            handled.set()
    return install(sig, told)

signal.signal = installing
first = []

def waiting_for_the_signal(messages):
    if text_of(messages) is not None and not first:
        first.append(1)
        os.write(int(os.environ["READY_FD"]), b"analysing\\n")
        handled.wait(60)
    return answer(messages)

scripted_llm.install().default = waiting_for_the_signal
from amem.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("database_url", "stop"),
    [("sqlite", signal.SIGINT), pytest.param("postgres", signal.SIGTERM, marks=pytest.mark.postgres)],
    ids=["sqlite-Ctrl-C", "postgres-SIGTERM"],
    indirect=["database_url"],
)
def test_a_signal_to_worker_once_finishes_the_batch_it_holds_and_leaves_the_rest_queued(
    database_url: str, tmp_path: Path, stop: signal.Signals
) -> None:
    """Before: the signal was raised in the main thread waiting for the workers, the store was
    closed under them and the process exited at once, the batch still leased to it (taken again
    only when the lease ended, two minutes later), sometimes aborting ("terminate called ...")."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "AMEM_EMBEDDING_MODEL": "scripted/embed-v1"}
    with Memory(tmp_path / "home", database_url=database_url) as memory:
        calls = [{"content": f"Acme call {i}: they want {i} more seats", "scope": "acme"} for i in range(6)]
        memory.add_notes(calls, actor="agent:crm", wait=False)
        ready_read, ready_write = os.pipe()
        options = ["--database-url", database_url, "--home", str(memory.home), "--llm", MODEL]
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, *options, "worker", "--once", "--batch-size", "2", "--json"],
            env={**env, "READY_FD": str(ready_write)},
            pass_fds=(ready_write,),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(ready_write)
        try:
            readable, _, _ = select.select([ready_read], [], [], 120)
            assert readable and os.read(ready_read, 100) == b"analysing\n", child.communicate(timeout=60)
            child.send_signal(stop)
            out, err = child.communicate(timeout=120)
        finally:
            os.close(ready_read)
            if child.poll() is None:
                child.kill()
                child.wait()

        # the batch it held, then nothing more: no input left held by a process that is gone
        assert memory.queue_depth() == {"queued": 4, "processing": 0, "failed": 0}, err
        assert memory.count_notes("acme") == 2
        assert child.returncode == 128 + stop, err
        assert "Traceback" not in err and "terminate called" not in err
        how = "terminated (SIGTERM)" if stop == signal.SIGTERM else "interrupted"
        assert f"{how}: each worker finished the batch it held" in err
        assert json.loads(out)["processed"] == 2


def test_worker_once_exits_4_when_an_input_failed(
    database_url: str, tmp_path: Path, scripted_llm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: exit 0 whatever became of the inputs, so a script running it never learnt of a
    failure (`amem import` exits 4 for the same outcome)."""
    with Memory(tmp_path / "home", database_url=database_url) as memory:
        memory.add_note("Acme asked for SAML", actor="agent:crm", scope="acme", wait=False)
        memory.add_note("Acme asked for SCIM", actor="agent:crm", scope="acme", wait=False)
    scripted_llm.push(litellm.AuthenticationError(message="bad key", llm_provider="scripted", model="m"))
    scripted_llm.default = answer
    options = ["--home", str(tmp_path / "home"), "--database-url", database_url, "--llm", MODEL]

    code = main([*options, "worker", "--once", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 4 and (result["processed"], result["failed"]) == (1, 1)

    assert main([*options, "worker", "--once", "--json"]) == 0  # nothing left: nothing failed
    assert json.loads(capsys.readouterr().out)["processed"] == 0
