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
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from amem.domain.models import RawLogState
from amem.errors import AnalysisPendingError
from amem.ledger.tables import raw_logs
from amem.memory import Memory
from tests.scripted_llm import bag_of_words

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


# -- a step other than the model call failing after the claim ------------------------------------


@pytest.fixture
def remote(
    database_url: str, tmp_path: Path, scripted_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Memory]:
    """A Memory whose model and embedder both answer through litellm (tests/scripted_llm.py), so a
    test can take the embedding service down and bring it back."""
    from tests.agents.scripted_answers import answer

    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    scripted_llm.default = answer
    m = Memory(tmp_path / "home", database_url=database_url, llm="scripted/test-model")
    try:
        yield m
    finally:
        m.close()


def embedder_down(scripted_llm: Any, when: str = "", error: BaseException | None = None) -> None:
    """The embedding service refuses every text holding ``when`` (every text: ``""``)."""

    def refuse(texts: list[str]) -> list[list[float]]:
        if any(when in text for text in texts):
            raise error or RuntimeError("embedding service down")
        return bag_of_words(texts)

    scripted_llm.embedder = refuse


def raw_text(memory: Memory, raw_log_id: str) -> str:
    with memory.ledger.read() as tx:
        (raw,) = tx.get_raw_logs([raw_log_id])
    return raw.text


@pytest.mark.parametrize("broken", ["embedder", "index write"])
def test_a_step_after_the_model_call_failing_names_the_kept_input_and_reprocess_completes_it(
    remote: Memory, scripted_llm: Any, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """Before: the input stayed "processing" under the dead add's lease with no error, reprocess
    skipped it, and the caller got an exception without its raw log id (so it sent it again)."""
    remote.add_note("Acme renews in May", actor="agent:a", scope="acme")  # the index is open
    if broken == "embedder":
        embedder_down(scripted_llm)
    else:  # the vectors kept in the note's transaction: the whole write rolls back

        def refuse(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("the vector store refused the write")

        monkeypatch.setattr(remote.search_service, "keep_vectors", refuse)
    text = "Acme wants SSO before the renewal"
    with pytest.raises(AnalysisPendingError) as stopped:
        remote.add_note(text, actor="agent:a", scope="acme")
    raw_id = stopped.value.raw_log_id
    message = str(stopped.value)
    assert raw_id in message and "kept" in message and "amem reprocess" in message
    assert f"amem status {raw_id}" in message
    cause = "embedding service down" if broken == "embedder" else "the vector store refused the write"
    assert cause in message
    status = remote.input_status(raw_id)
    assert status.status == "failed" and status.error is not None and cause in status.error
    assert raw_text(remote, raw_id) == text and remote.count_notes("acme") == 1

    scripted_llm.embedder = bag_of_words
    monkeypatch.undo()
    (note_id,) = remote.reprocess()
    assert remote.input_status(raw_id).note_id == note_id and remote.read(note_id).content == text
    assert remote.reprocess() == [] and remote.count_notes("acme") == 2  # nothing twice
    assert remote.verify().ok


def test_an_interrupted_add_gives_its_input_back_to_the_queue(remote: Memory, scripted_llm: Any) -> None:
    """Ctrl-C while add_note embeds: the raw log stays, queued (not held by the add that stopped),
    so reprocess takes it at once."""
    remote.add_note("Acme renews in May", actor="agent:a", scope="acme")
    embedder_down(scripted_llm, "SSO", KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        remote.add_note("Acme wants SSO before the renewal", actor="agent:a", scope="acme")
    assert remote.queue_depth() == {"queued": 1, "processing": 0, "failed": 0}

    scripted_llm.embedder = bag_of_words
    (note_id,) = remote.reprocess()
    assert remote.read(note_id).content == "Acme wants SSO before the renewal"
    assert remote.unprocessed_count() == 0


def test_add_notes_keeps_the_batches_written_before_one_that_fails(remote: Memory, scripted_llm: Any) -> None:
    """The second batch's embedding fails: the first batch's notes are answered, not lost behind an
    exception; the second batch's inputs come back with their raw log and the cause."""
    embedder_down(scripted_llm, "second batch")
    lines = [
        *({"content": f"Acme first batch, call {i}", "scope": "acme"} for i in range(2)),
        *({"content": f"Acme second batch, call {i}", "scope": "acme"} for i in range(2)),
    ]
    outcomes = remote.add_notes(lines, actor="agent:import", batch_size=2)
    assert [o.note_id is not None for o in outcomes] == [True, True, False, False]
    for o in outcomes[2:]:
        assert o.error is not None and o.raw_log_id in o.error and "amem reprocess" in o.error
        assert "embedding service down" in o.error
        assert remote.input_status(o.raw_log_id).status == "failed"
    assert [remote.read(o.note_id).content for o in outcomes[:2] if o.note_id] == [
        line["content"] for line in lines[:2]
    ]

    scripted_llm.embedder = bag_of_words
    assert len(remote.reprocess()) == 2 and remote.count_notes("acme") == 4


def test_an_interrupted_import_names_how_many_inputs_it_gives_back_not_every_one(
    remote: Memory, scripted_llm: Any
) -> None:
    """Before: the note on the interruption listed every raw log of the import (660,000 characters
    for 33,000 inputs); now the first few and how many, and every one is queued again."""
    remote.add_note("Acme renews in May", actor="agent:a", scope="acme")  # the index is open
    embedder_down(scripted_llm, "call", KeyboardInterrupt())
    lines = [{"content": f"Acme call {i}", "scope": "acme"} for i in range(8)]
    with pytest.raises(KeyboardInterrupt) as stopped:
        remote.add_notes(lines, actor="agent:import", batch_size=4)
    (note,) = stopped.value.__notes__
    assert "and 5 more (8 in all)" in note and "amem reprocess" in note
    assert remote.queue_depth() == {"queued": 8, "processing": 0, "failed": 0}
    with remote.ledger.read() as tx:
        queued = [row["raw_log_id"] for row in tx.raw_log_states([RawLogState.PENDING])]
    assert queued[0] in note and queued[-1] not in note

    scripted_llm.embedder = bag_of_words
    assert len(remote.reprocess()) == 8 and remote.count_notes("acme") == 9
