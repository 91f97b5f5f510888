"""When a token was last used: recorded as requests come, but never at the cost of a request (every
request checks its token, and a read-only one must not wait on the writers)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa

from amem.ledger import store
from amem.ledger.tables import api_tokens
from amem.memory import Memory
from amem.services.tokens import TokenInfo


def _last_used(memory: Memory, token_id: str) -> object:
    """What `amem tokens list` shows as the token's last use."""
    return {t.id: t.last_used_at for t in memory.tokens.list()}[token_id]


def test_a_request_never_waits_on_a_writer_to_note_when_its_token_was_used(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token last used over a minute ago was touched in a write transaction: behind a long write
    (an import, a reindex) a read-only request waited for SQLite's write lock, 60 s, then failed with
    a bare 500. Now the touch is skipped while a writer holds the lock, and made by a later request."""
    token, info = memory.tokens.create("crm-sync", "agent")
    # the old path gave up after SQLITE_WRITE_WAIT_S: 2 s, so the test fails, not stalls, without the fix
    monkeypatch.setattr(store, "SQLITE_WRITE_WAIT_S", 2.0)
    answers: list[TokenInfo | BaseException] = []

    def authenticate() -> None:
        try:
            answers.append(memory.tokens.authenticate(token))
        except BaseException as exc:  # told to the test, never lost in the thread
            answers.append(exc)

    with memory.ledger.write() as tx:  # a long write: SQLite's write lock; on PostgreSQL the row too
        tx.conn.execute(sa.select(api_tokens.c.id).where(api_tokens.c.id == info.id).with_for_update())
        request = threading.Thread(target=authenticate)
        request.start()
        request.join(timeout=30)  # a bound, not a pause: the request answers at once
        answered_while_held = not request.is_alive()
    request.join()
    assert answered_while_held, "the token's check waited for the writer"
    (answer,) = answers
    assert isinstance(answer, TokenInfo) and answer.identity == "agent:crm-sync", answer
    assert _last_used(memory, info.id) is None  # skipped while the writer held the lock

    memory.tokens.authenticate(token)  # the writers are gone: recorded now
    first = _last_used(memory, info.id)
    assert first is not None
    memory.tokens.authenticate(token)  # within a minute: not written again
    assert _last_used(memory, info.id) == first
    with memory.ledger.engine.begin() as conn:  # a minute later, the next use is recorded
        earlier = first - timedelta(minutes=2)  # type: ignore[operator]
        conn.execute(sa.update(api_tokens).where(api_tokens.c.id == info.id).values(last_used_at=earlier))
    memory.tokens.authenticate(token)
    assert _last_used(memory, info.id) > earlier  # type: ignore[operator]
