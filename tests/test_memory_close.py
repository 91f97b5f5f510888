"""Closing a Memory: the workers it started stop first (an input queued just before is never failed
by a worker left running on closed parts), and a closed Memory refuses every call before it
records anything (a raw log was committed, then marked failed by the closed index)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from amem.memory import Memory, MemoryClosedError


def _worker_threads() -> set[threading.Thread]:
    """The threads of start_workers' pools (each named after its worker's claim owner)."""
    return {t for t in threading.enumerate() if t.name.startswith("worker")}


def test_closing_stops_the_workers_it_started_and_loses_no_input(database_url: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    running_before = _worker_threads()
    with Memory(home, database_url=database_url) as mem:
        pool = mem.start_workers(1)
        started = _worker_threads() - running_before
        assert started
        raw_log_id = mem.add_note(
            "Cyberdyne wants a pilot in Q3", actor="agent:a", scope="cyberdyne", wait=False
        )
    assert not [t for t in started if t.is_alive()]  # stopped and joined by close
    pool.stop()  # stopping again does nothing more
    with Memory(home, database_url=database_url, create=False) as again:
        status = again.input_status(raw_log_id)
        assert status.status in ("queued", "done"), status  # finished by the worker, or left queued
        if status.status == "queued":
            again.worker().drain()
        assert again.input_status(raw_log_id).status == "done"


def test_a_closed_memory_refuses_before_recording_anything(database_url: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    mem = Memory(home, database_url=database_url)
    note_id = mem.add_note("Acme renews in March with SSO", actor="agent:sales", scope="acme")
    mem.close()
    mem.close()  # twice: nothing more
    calls = {
        "add_note": lambda: mem.add_note("after close", actor="agent:x", scope="acme"),
        "add_note wait=False": lambda: mem.add_note("after close", actor="agent:x", scope="acme", wait=False),
        "add_notes": lambda: mem.add_notes([{"content": "after close", "scope": "acme"}], actor="agent:x"),
        "search": lambda: mem.search("SSO", scope="acme"),
        "read": lambda: mem.read(note_id),
        "update": lambda: mem.update(note_id, actor="agent:x", tags=["late"]),
        "count_notes": mem.count_notes,
        "input_status": lambda: mem.input_status("r_x"),
        "start_workers": mem.start_workers,
        "verify": mem.verify,
    }
    for name, call in calls.items():
        with pytest.raises(MemoryClosedError, match=r"^this Memory is closed"):
            call()
            pytest.fail(f"{name} answered after close")
    with Memory(home, database_url=database_url, create=False) as again:
        assert again.count_raw_logs() == 1
        assert again.count_notes() == 1
        assert "late" not in again.read(note_id).tags
