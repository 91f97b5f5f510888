"""Word from PostgreSQL that an input settled (processed, failed or erased), for the status
requests that wait on it.

Migration 0018's trigger sends ``NOTIFY amem_settled`` with the raw log's id when its transaction
commits, from whichever process did the work. One thread per process listens on its own connection
and wakes the waiters of that id. A waiter still reads the status itself (the notification only
says when): a missed notification (the listener reconnecting) costs it up to 5 s, never a
wrong answer.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable

import sqlalchemy as sa

log = logging.getLogger(__name__)

CHANNEL = "amem_settled"  # migration 0018's


class SettledListener:
    """Listens on ``CHANNEL`` in a daemon thread; ``watch(id, wake)`` calls ``wake`` (from that
    thread) when ``id`` settles, until the returned function is called."""

    def __init__(self, url: sa.URL) -> None:
        self._conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._watchers: dict[str, set[Callable[[], None]]] = defaultdict(set)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listening = threading.Event()
        self.notified = 0  # how many notifications arrived (tests, benchmarks)
        self._thread = threading.Thread(target=self._run, name="amem-settled", daemon=True)
        self._thread.start()

    def listening(self, timeout: float) -> bool:
        """True once LISTEN is in force (a waiter that starts later misses nothing)."""
        return self._listening.wait(timeout)

    def watch(self, raw_log_id: str, wake: Callable[[], None]) -> Callable[[], None]:
        with self._lock:
            self._watchers[raw_log_id].add(wake)

        def unwatch() -> None:
            with self._lock:
                found = self._watchers.get(raw_log_id)
                if found is not None:
                    found.discard(wake)
                    if not found:
                        del self._watchers[raw_log_id]

        return unwatch

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._listening.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=1.0):
                            self.notified += 1
                            with self._lock:
                                wakes = list(self._watchers.get(note.payload, ()))
                            for wake in wakes:
                                wake()
            except Exception:  # the server restarted, the network dropped: listen again
                self._listening.clear()
                log.warning("listening for settled inputs failed; trying again in 1 s", exc_info=True)
                self._stop.wait(1.0)
