"""Schemathesis runs the API's own OpenAPI spec against a live server on loopback: every documented
operation, with generated valid and invalid requests, must answer as its spec says and never 5xx."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from amem.api.app import create_app
from amem.memory import Memory
from tests.factories import signed_in


@pytest.fixture
def live_api(memory: Memory) -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(memory, workers=1, decisions=True), log_level="warning")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    started = threading.Event()
    while not server.started and thread.is_alive():  # uvicorn says when it listens
        started.wait(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.mark.slow
def test_the_api_conforms_to_its_own_openapi_spec(live_api: str, memory: Memory, tmp_path: Path) -> None:
    # reviewer, decisions on: every operation reachable
    token, _ = memory.tokens.create("alice", "reviewer", by=signed_in(memory, "alice"))
    memory.add_note("Acme asked about SSO pricing", actor="agent:seed", scope="acme")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemathesis.cli",
            "run",
            f"{live_api}/openapi.json",
            "--header",
            f"Authorization: Bearer {token}",
            "--checks",
            "all",
            # A NUL character anywhere in the text or in nested metadata is refused with a 422 (no
            # ledger can store it), which JSON Schema cannot say of nested values; that one check
            # would report those refusals.
            "--exclude-checks",
            "positive_data_acceptance",
            # A status request with `wait` answers when its input is analysed, by design up to 30 s
            # later.
            "--max-response-time",
            "40",
            "--max-examples",
            "12",
            "--seed",
            "1",
            "--request-timeout",
            "40",
            "--generation-database",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
