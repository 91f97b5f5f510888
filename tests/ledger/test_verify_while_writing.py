"""Verification reads one consistent state: writers committing meanwhile never look like tampering."""

from __future__ import annotations

import threading

from amem.memory import Memory
from tests.factories import make_note


def test_verify_during_writes_reports_no_tampering(memory: Memory) -> None:
    make_note(memory, "Acme renews in March", tags=["renewal"])
    done = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(15):
                make_note(memory, f"note {i} written while verify reads", tags=["t"], keywords=["k"])
        except BaseException as exc:  # surfaced below
            failures.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    results = []
    while not done.is_set() or not results:
        results.append(memory.verify())
    writer.join()
    assert not failures
    assert all(r.ok for r in results), [r.message for r in results if not r.ok]
    assert memory.verify().ok
