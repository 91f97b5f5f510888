"""`amem reprocess` says when the inputs a worker holds are free: by their leases' own end, as the
leases are read (on PostgreSQL by the server's clock). Reviewer K, finding 6: it said this machine's
clock plus the lease this process is configured with, off by the clocks' skew (30 minutes in the
review) or by a worker's longer lease."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from amem.cli import main
from amem.memory import Memory
from amem.services.queue import InputQueue

MODEL = "scripted/test-model"


def test_reprocess_says_a_held_input_is_free_when_its_lease_ends(
    database_url: str, tmp_path: Path, scripted_llm: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    with Memory(home, database_url=database_url, llm=MODEL) as mem:
        raw_log_id = mem.add_note("Acme wants 40 seats", actor="agent:a", scope="acme", wait=False)
        # a worker elsewhere, whose lease is an hour (AMEM_WORKER_LEASE_SECONDS there)
        InputQueue(mem.ledger, lease_seconds=3600).claim_batch("worker-elsewhere", 1)
        until = mem.input_status(raw_log_id).lease_until
    assert until is not None

    code = main(["--home", str(home), "--database-url", database_url, "--llm", MODEL, "reprocess"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1 and "1 of them held by a worker's lease" in out
    assert f"free by {until:%Y-%m-%d %H:%M:%S} UTC" in out


def test_worker_once_says_which_inputs_a_stopped_worker_still_holds_and_when_they_are_free(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, `amem worker --once` said only "processed 1 inputs (0 failed); queued now: 0" while the
    inputs a worker killed mid-batch held waited under its lease: the queue read as done."""
    home = tmp_path / "home"
    with Memory(home, database_url=database_url) as mem:
        ids = [
            mem.add_note(f"Acme wants {n} seats", actor="agent:a", scope="acme", wait=False) for n in range(3)
        ]
        # a worker elsewhere took two and died holding them (its lease an hour)
        InputQueue(mem.ledger, lease_seconds=3600).claim_batch("worker-killed", 2)
        until = max(u for i in ids if (u := mem.input_status(i).lease_until) is not None)

    code = main(["--home", str(home), "--database-url", database_url, "worker", "--once"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0 and "processed 1 inputs (0 failed); queued now: 0" in out
    assert "2 inputs still held by a worker's lease" in out
    assert f"free by {until:%Y-%m-%d %H:%M:%S} UTC: run `amem worker --once` then" in out
