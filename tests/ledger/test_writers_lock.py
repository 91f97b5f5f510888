"""Writers, the chain head and acknowledgements (amem/ledger/store.py, ``Ledger.write``).

On PostgreSQL a note transaction serialises with other writers on the writers' lock and takes the
chain head only at commit, for its events; an acknowledgement (raw logs only) takes the head alone.
So an input is acknowledged while a note transaction is still between its reads and its chained
writes, two writers still never interleave, and both chains stay linear and gapless. On SQLite
BEGIN IMMEDIATE serialises them all; the chains are checked there too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from amem.ledger.tables import chain_head, changes, events, proposals, raw_logs
from amem.memory import Memory
from amem.services.governance import Draft
from tests.conftest import ScratchDatabase, _postgres_schema_url
from tests.factories import llm_proposer, make_note, raw_log

#: A generous bound on waits that succeed at once when the code is right (never slept through).
BOUND_S = 30.0


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from _postgres_schema_url()


def _in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, threading.Event, list[Any]]:
    """Run ``target`` in a thread; the event is set when it returned or raised (kept in the list)."""
    done, out = threading.Event(), []

    def run() -> None:
        try:
            out.append(target())
        except BaseException as exc:  # handed to the test
            out.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, done, out


Paused = tuple[threading.Thread, threading.Event, threading.Event, threading.Event, list[Any]]


def _paused_writer(mem: Memory, drafts: list[Draft]) -> Paused:
    """A note transaction that proposes ``drafts`` (its reads and non-chained writes) and then
    waits, still open, until released: the moment before its chained writes and commit."""
    inside, go = threading.Event(), threading.Event()

    def body() -> list[str]:
        with mem.ledger.write() as tx:
            made = mem.governance.propose_in(tx, drafts)
            inside.set()
            assert go.wait(BOUND_S), "never released"
        return [p.id for p in made]

    thread, done, out = _in_thread(body)
    return thread, inside, go, done, out


def _advisory_waiters(url: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    sa.text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
                ).scalar_one()
            )
    finally:
        engine.dispose()


def _seqs(mem: Memory, column: sa.Column[Any]) -> list[int]:
    with mem.ledger.engine.connect() as conn:
        return [int(x) for x in conn.execute(sa.select(column).order_by(column)).scalars()]


@pytest.mark.postgres
def test_an_input_is_acknowledged_while_a_note_transaction_is_open(pg_url: str, tmp_path: Path) -> None:
    with Memory(tmp_path / "home", database_url=pg_url) as mem:
        note = make_note(mem, "Acme renews for 40 seats")
        draft = Draft(note.id, "tags", ["renewal"], "seen in the call", llm_proposer(mem))
        writer, inside, go, written, out = _paused_writer(mem, [draft])
        assert inside.wait(BOUND_S)
        raw = raw_log("Acme asked for a quote for 45 seats")
        _acker, acked, ack_out = _in_thread(lambda: mem.queue.enqueue([raw]))
        # The acknowledgement commits while the note transaction, which began first, is still open:
        # it does not wait for the chain head that transaction will take only at its commit.
        assert acked.wait(BOUND_S) and ack_out == [None], ack_out
        assert not written.is_set()
        go.set()
        writer.join(BOUND_S)
        assert written.is_set() and not isinstance(out[0], BaseException), out
        (proposal_id,) = out[0]
        with mem.ledger.read() as tx:
            order = [(e.kind, e.subject) for e in tx.iter_events()]
        # committed first, chained first: the raw log's event precedes the proposal's
        assert order.index(("raw_log", raw.id)) < order.index(("proposal", proposal_id))
        assert mem.read(note.id).tags == ["renewal"]
        assert mem.verify().ok


@pytest.mark.postgres
def test_note_writers_still_wait_for_each_other(pg_url: str, tmp_path: Path) -> None:
    """Two writers on one note: the second reads the note only after the first committed, so it
    neither overwrites the first's value nor records a stale old value (verify replays the note)."""
    with (
        Memory(tmp_path / "home", database_url=pg_url) as mem,
        Memory(tmp_path / "home", database_url=pg_url) as other,
    ):
        note = make_note(mem, "Acme renews for 40 seats", tags=["first"])
        first = Draft(note.id, "tags", ["second"], "the first writer", llm_proposer(mem))
        by = llm_proposer(mem, name="offline-2")  # its call recorded before the first writer holds the lock
        writer, inside, go, _written, out = _paused_writer(mem, [first])
        assert inside.wait(BOUND_S)
        _second, second_done, second_out = _in_thread(
            lambda: other.propose(note.id, "tags", ["third"], reason="the second writer", proposer=by)
        )
        polled = threading.Event()
        for _ in range(int(BOUND_S / 0.01)):  # until the second writer is queued on the writers' lock
            if _advisory_waiters(pg_url):
                break
            assert not second_done.is_set(), second_out
            polled.wait(0.01)
        else:
            pytest.fail("the second writer never waited on the writers' lock")
        assert not second_done.is_set()
        go.set()
        writer.join(BOUND_S)
        assert second_done.wait(BOUND_S)
        assert not isinstance(out[0], BaseException) and not isinstance(second_out[0], BaseException)
        second = second_out[0]
        assert second.old_value == ["second"] and second.base_version == note.version + 1
        assert mem.read(note.id).tags == ["third"]
        applied = [c for c in mem.changes() if c.attribute == "tags"]
        steps = [(c.old_value, c.new_value) for c in applied][-2:]
        assert steps == [(["first"], ["second"]), (["second"], ["third"])]
        assert mem.verify().ok


@pytest.mark.postgres
def test_a_head_moved_outside_the_writers_lock_rolls_the_writer_back(pg_url: str, tmp_path: Path) -> None:
    """A writer numbers its proposals and changes from the head it read under the writers' lock;
    if anything moved them meanwhile (a process writing without that lock), its commit refuses."""
    with Memory(tmp_path / "home", database_url=pg_url) as mem:
        note = make_note(mem, "Acme renews for 40 seats")
        before = _seqs(mem, proposals.c.seq)
        bump = sa.update(chain_head).where(chain_head.c.id == 1)
        by = llm_proposer(mem)
        with pytest.raises(RuntimeError, match="writers' lock"), mem.ledger.write() as tx:
            mem.governance.propose_in(tx, [Draft(note.id, "tags", ["x"], "r", by)])
            with mem.ledger.engine.begin() as intruder:  # commits at once, head not locked
                intruder.execute(sa.text("SET LOCAL lock_timeout = '10s'"))
                intruder.execute(bump.values(proposal_seq=chain_head.c.proposal_seq + 1))
        with mem.ledger.engine.begin() as conn:
            conn.execute(bump.values(proposal_seq=chain_head.c.proposal_seq - 1))
        assert _seqs(mem, proposals.c.seq) == before  # nothing of the refused writer is left
        assert mem.read(note.id).tags == []
        assert mem.verify().ok


def test_concurrent_writers_and_acknowledgements_keep_the_chains_gapless(
    database_url: str, tmp_path: Path
) -> None:
    """Writers on the same notes (each its own store handle) and acknowledgements, released
    together: every sequence is 1..n without a gap, and verify recomputes both chains."""
    home = tmp_path / "home"
    with Memory(home, database_url=database_url) as mem:
        notes = [make_note(mem, f"Acme note {i}") for i in range(2)]
    handles = [Memory(home, database_url=database_url) for _ in range(4)]
    start = threading.Barrier(len(handles))
    rounds = 6

    def write(i: int) -> None:
        m = handles[i]
        start.wait()
        for r in range(rounds):
            if i < 2:
                m.propose(
                    notes[r % 2].id, "tags", [f"w{i}-{r}"], reason="concurrent", proposer=llm_proposer(m)
                )
                m.propose(
                    notes[r % 2].id,
                    "decision_rationale",
                    f"w{i}-{r}",
                    reason="held",
                    proposer=llm_proposer(m),
                )
            else:
                m.queue.enqueue([raw_log(f"input {i}-{r}")])

    threads = [_in_thread(lambda i=i: write(i)) for i in range(len(handles))]
    for thread, _done, _out in threads:
        thread.join(120)
    for _thread, done, out in threads:
        assert done.is_set() and out == [None], out
    for m in handles:
        m.close()
    with Memory(home, database_url=database_url) as mem:
        for column in (raw_logs.c.seq, proposals.c.seq, changes.c.seq, events.c.seq):
            seqs = _seqs(mem, column)
            assert seqs == list(range(1, len(seqs) + 1)), column
        assert len(_seqs(mem, raw_logs.c.seq)) == 2 + 2 * rounds
        result = mem.verify()
        assert result.ok, result


def test_one_propose_writes_its_proposals_and_changes_in_one_statement_each(
    database_url: str, tmp_path: Path
) -> None:
    """The drafts of one propose_in (auto-applied and held alike) are inserted in one multi-row
    INSERT per table, numbered, hashed and chained as if written one by one."""
    with Memory(tmp_path / "home", database_url=database_url) as mem:
        note = make_note(mem, "Acme renews for 40 seats")
        by = llm_proposer(mem)
        drafts = [
            Draft(note.id, "tags", ["renewal"], "seen", by),
            Draft(note.id, "keywords", ["seats"], "seen", by),
            Draft(note.id, "decision_rationale", "support", "held", by),
            Draft(note.id, "decision_rationale", "price", "held again", by),  # supersedes the first
        ]
        inserts: list[str] = []

        def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            if statement.lstrip().upper().startswith("INSERT INTO"):
                inserts.append(statement.split()[2].strip('"'))

        sa.event.listen(mem.ledger.engine, "before_cursor_execute", count)
        try:
            with mem.ledger.write() as tx:
                made = mem.governance.propose_in(tx, drafts)
        finally:
            sa.event.remove(mem.ledger.engine, "before_cursor_execute", count)
        # the held rows are written before the UPDATE that supersedes the first pending one
        assert inserts.count("proposals") == 1 and inserts.count("changes") == 1, inserts
        assert inserts.count("events") == 1
        statuses = [mem.proposal(p.id).status.value for p in made]
        assert statuses == ["auto_applied", "auto_applied", "superseded", "pending"]
        note_now = mem.read(note.id)
        assert (note_now.tags, note_now.keywords) == (["renewal"], ["seats"])
        assert _seqs(mem, proposals.c.seq) == list(range(1, 5 + 1))
        assert mem.verify().ok


@pytest.mark.postgres
def test_writers_keep_one_lock_when_a_schema_named_after_the_role_appears(
    tmp_path: Path, scratch_database: ScratchDatabase
) -> None:
    """The writers' lock was keyed on current_schema(): a ledger in `public` under the default
    search_path ("$user", public) got another key once a schema named after the role was created
    (PostgreSQL's secure-schema pattern), so a writer opened after it no longer waited for one
    opened before. The key is the schema that holds the ledger's tables."""
    url = scratch_database.url
    with Memory(tmp_path / "home", database_url=url) as mem:
        note = make_note(mem, "Acme renews for 40 seats", tags=["first"])
        by = llm_proposer(mem, name="offline-2")  # recorded before the first writer holds the lock
        writer, inside, go, _written, out = _paused_writer(
            mem, [Draft(note.id, "tags", ["second"], "the first writer", llm_proposer(mem))]
        )
        assert inside.wait(BOUND_S)
        role = sa.make_url(url).username or "postgres"  # made by its owner, the writer still open
        fresh = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        with fresh.connect() as db:
            db.execute(sa.text(f'CREATE SCHEMA "{role}"'))
        fresh.dispose()
        with Memory(tmp_path / "home", database_url=url) as other:
            _second, second_done, second_out = _in_thread(
                lambda: other.propose(note.id, "tags", ["third"], reason="the second", proposer=by)
            )
            polled = threading.Event()
            for _ in range(int(BOUND_S / 0.01)):  # until the second writer queues on the lock
                if _advisory_waiters(url):
                    break
                assert not second_done.is_set(), second_out
                polled.wait(0.01)
            else:
                go.set()
                pytest.fail("the second writer did not wait on the first one's writers' lock")
            go.set()
            writer.join(BOUND_S)
            assert second_done.wait(BOUND_S) and not isinstance(second_out[0], BaseException)
            assert not isinstance(out[0], BaseException), out
            assert mem.read(note.id).tags == ["third"] and mem.verify().ok
