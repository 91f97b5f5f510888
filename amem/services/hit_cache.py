"""The rows of a search's hits, kept by the process while the ledger stays as it was read.

A search on PostgreSQL pays a round trip, after embedding its query, for its hits' notes; A-MEM,
the reference, keeps its notes in memory. This keeps the rows those reads returned, keyed by the
``LedgerCheck`` the search made before it (the index build, the last change, the erasures, the
last event): while that check reads the same, no note changed and no proposal was made or decided,
so a row read under it is still the note, with the retirement waiting for review beside it. Any other
check empties it. It holds rows, not notes: each search builds its notes anew, so no caller can
change what another search returns. Under a steady stream of writes it is emptied at every write
and costs nothing but the lookup; its gain is for stores read more than written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from amem.ledger.index_queries import LedgerCheck

#: Rows kept at most (least recently used first out): a note's row is a few kB ...
HIT_ROWS_LIMIT = 4096
#: ... and at most this many characters of note text (content and context) in all, so a store of
#: long notes keeps fewer of them.
HIT_TEXT_LIMIT = 8_000_000


def cache_key(check: LedgerCheck) -> tuple[str, str, int, int, int] | None:
    """What must stay put for a kept row to be the note (and its pending retirement, which a
    proposal or a decision moves without a change): None (keep nothing) before a build."""
    if check.position is None:
        return None
    return (check.position.instance, check.position.ledger_id, check.head, check.erasures, check.events)


class HitRows:
    """Rows by note id, for one ledger state at a time; safe to share between a server's threads."""

    def __init__(self, limit: int = HIT_ROWS_LIMIT, text_limit: int = HIT_TEXT_LIMIT) -> None:
        self.limit = limit
        self.text_limit = text_limit
        self._key: tuple[str, str, int, int, int] | None = None
        self._rows: OrderedDict[str, Any] = OrderedDict()
        self._text = 0  # characters of note text held
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        """Drop every row now (an erasure in this process: its texts are not kept until the next search)."""
        with self._lock:
            self._rows.clear()
            self._text = 0
            self._key = None

    def get(self, check: LedgerCheck, note_ids: Sequence[str]) -> dict[str, Any]:
        """The rows kept for ``note_ids`` under the state ``check`` read; none when it differs from
        the state they were kept under (then they are dropped)."""
        key = cache_key(check)
        with self._lock:
            if key is None or key != self._key:
                self._rows.clear()
                self._text = 0
                self._key = key
                return {}
            out = {}
            for note_id in note_ids:
                row = self._rows.get(note_id)
                if row is not None:
                    self._rows.move_to_end(note_id)
                    out[note_id] = row
            return out

    def put(self, check: LedgerCheck, rows: dict[str, Any]) -> None:
        """Keep ``rows``, read after ``check`` in the same search; ignored when another state is
        kept by now (a newer search's), whose rows these may not be."""
        key = cache_key(check)
        with self._lock:
            if key is None or key != self._key:
                return
            for note_id, row in rows.items():
                old = self._rows.pop(note_id, None)
                if old is not None:
                    self._text -= _text(old)
                self._rows[note_id] = row
                self._text += _text(row)
            while self._rows and (len(self._rows) > self.limit or self._text > self.text_limit):
                _, dropped = self._rows.popitem(last=False)
                self._text -= _text(dropped)


def _text(row: Any) -> int:
    return len(row.content or "") + len(row.context or "")
