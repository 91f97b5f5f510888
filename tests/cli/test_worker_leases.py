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
