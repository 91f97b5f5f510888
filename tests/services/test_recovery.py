"""add_note when things break: a process dies mid-analysis, the index fails, two processes write at once.

The invariants under test: a raw log is never lost; the ledger, not the index, is the truth; an
unfinished raw log becomes exactly one note when reprocessed.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from amem.domain.models import RawLogState
from amem.ledger.tables import raw_logs
from amem.memory import Memory

REPO = Path(__file__).resolve().parents[2]

#: A child process that commits a raw log, then hangs in the model call until it is killed.
CRASHING_WRITER = """
import json, sys, threading
from amem.memory import Memory
from tests import scripted_llm

def hang(messages):
    print("analysing", flush=True)
    threading.Event().wait()

scripted_llm.install().push(hang)
home, url, text = sys.argv[1:4]
memory = Memory(home, database_url=url, llm="scripted/test-model")
memory.add_note(text, actor="agent:sales-agent", scope="acme")
print("finished", flush=True)
"""


def raw_log_count(memory: Memory) -> int:
    with memory.ledger.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one())


def test_a_process_killed_mid_analysis_leaves_a_raw_log_that_reprocess_completes_once(
    memory: Memory, tmp_path: Path
) -> None:
    text = "Initech's CFO signed off on the pilot budget"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", CRASHING_WRITER, str(memory.home), memory.settings.database_url, text],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()  # the raw log is committed and the model has been asked
        assert line.strip() == "analysing", child.stderr.read() if child.stderr else line
    finally:
        child.kill()
        child.communicate(timeout=60)
    assert child.returncode != 0

    assert raw_log_count(memory) == 1 and memory.notes() == []
    assert memory.unprocessed_count() == 1
    with memory.ledger.read() as tx:
        (state,) = tx.raw_log_states([RawLogState.PENDING])
        (raw,) = tx.get_raw_logs([state["raw_log_id"]])
    assert raw.text == text and raw.actor.id == "sales-agent"

    # The dead process's lease still stands: nobody can tell it from a slow one, so reprocess leaves
    # the input alone until the lease ends, then takes it.
    assert memory.input_status(raw.id).status == "processing"
    assert memory.reprocess() == []
    lease_end = memory.input_status(raw.id).lease_until
    assert lease_end is not None
    memory.queue.clock = lambda: lease_end + timedelta(seconds=1)
    assert memory.input_status(raw.id).status == "queued"
    (note_id,) = memory.reprocess()  # the offline analyst, this time
    assert memory.input_status(raw.id).status == "done"
    assert memory.input_status(raw.id).note_id == note_id
    note = memory.read(note_id)
    assert note.content == text and note.raw_log_ids == [raw.id] and note.keywords
    with memory.ledger.read() as tx:
        done = tx.raw_log_state(raw.id)
    assert done is not None and done["state"] == RawLogState.PROCESSED.value and done["note_id"] == note_id

    assert memory.reprocess() == []  # nothing twice
    assert [n.id for n in memory.notes()] == [note_id] and raw_log_count(memory) == 1
    assert memory.verify().ok


@pytest.mark.parametrize("broken", ["catch_up", "vector store"])
def test_a_failing_index_never_fails_add_note_and_the_next_search_heals_it(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, broken: str
) -> None:
    service = memory.search_service

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the vector index is unavailable")

    if broken == "catch_up":  # the catch-up after add_note's write
        monkeypatch.setattr(service, "catch_up_after_write", refuse)
    else:  # deeper: the store refuses writes, so the index must not believe it is up to date
        monkeypatch.setattr(service.index, "upsert", refuse)

    with caplog.at_level(logging.WARNING):
        note_id = memory.add_note(
            "Umbrella's security team requires SAML single sign-on", actor="agent:x", scope="umbrella"
        )
    assert "could not catch up" in caplog.text
    note = memory.read(note_id)  # the ledger has it
    assert note.scope == "umbrella" and note.keywords
    assert service.index.count() == 0  # the index does not

    monkeypatch.undo()  # the index is back
    hits = memory.search("SAML single sign-on", scope="umbrella")
    assert [h.note_id for h in hits] == [note_id]
    assert "vector" in hits[0].matched_by  # found through the caught-up index, not only the words
    assert service.index.count() == 1


#: One agent process: build the stack, say "ready", wait for "go" on stdin, add notes, print the ids.
#: Plain subprocesses, not multiprocessing: a spawned child re-imports the parent's __main__, which
#: in a full test run can be a Streamlit script left there by AppTest.
ADDING_WORKER = """
import json, sys
from amem.memory import Memory
url, home, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with Memory(home, database_url=url) as memory:
    memory.pipeline  # build the stack before the race starts
    print("ready", flush=True)
    sys.stdin.readline()
    ids = [
        memory.add_note(
            f"Agent {worker} call {i}: Hooli wants {10 * (i + 1)} more seats before the renewal",
            actor=f"agent:worker-{worker}",
            scope="hooli",
        )
        for i in range(count)
    ]
print(json.dumps({"worker": worker, "ids": ids}), flush=True)
"""


def _start_together(url: str, home: Path, workers: int, count: int) -> list[dict[str, Any]]:
    """Start ``workers`` adding processes, release them at the same moment, collect their reports."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ADDING_WORKER, url, str(home), str(w), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(1, workers + 1)
    ]
    try:
        for p in procs:  # the barrier: every worker has built its stack
            line = p.stdout.readline() if p.stdout else ""
            assert line.strip() == "ready", (
                f"worker failed to start: {line!r} {p.stderr.read() if p.stderr else ''}"
            )
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        reports = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0, err
            reports.append(json.loads(out.strip().splitlines()[-1]))
        return reports
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def test_two_processes_adding_notes_to_one_sqlite_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    home = tmp_path / "home"
    Memory(home, database_url=url).close()  # the ledger exists before the race
    reports = _start_together(url, home, workers=2, count=10)
    assert [r.get("error") for r in reports] == [None, None], reports
    ids = [i for r in reports for i in r["ids"]]
    assert len(ids) == 20 and len(set(ids)) == 20

    with Memory(home, database_url=url) as memory:
        assert raw_log_count(memory) == 20 and memory.unprocessed_count() == 0
        notes = memory.notes(limit=100)
        assert sorted(n.id for n in notes) == sorted(ids)
        assert len({n.raw_log_ids[0] for n in notes}) == 20  # one raw log, one note
        assert {n.content.split(" call ")[0] for n in notes} == {"Agent 1", "Agent 2"}
        verified = memory.verify()
        assert verified.ok, verified.message
        assert verified.raw_logs_checked == 20
        hits = memory.search("Hooli seats renewal", k=50, scope="hooli")
        assert sorted(h.note_id for h in hits) == sorted(ids)
