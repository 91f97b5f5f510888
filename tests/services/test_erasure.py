"""Erasure on a data subject's request: the erased bytes leave every file, the chain still verifies.

Notes are made through add_note (offline analyst, real embedder, real Chroma), erased through the
CLI, and then the SQLite files / PostgreSQL relation files and the Chroma directory are searched
for the erased text's bytes after the compaction `amem erase` runs.
"""

from __future__ import annotations

import io
import random
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
import sqlalchemy as sa

from amem.cli import main
from amem.domain.hashing import REDACTED
from amem.ledger.compaction import Compaction
from amem.memory import Memory
from tests.conftest import REVIEWER_PASSWORDS
from tests.factories import llm_proposer, signed_in
from tests.ledger import tamper_cases as tc

TABLES = ("raw_logs", "llm_calls", "notes", "proposals", "changes", "note_vectors", "input_keys")


def _cli(memory: Memory, *args: str) -> list[str]:
    return ["--database-url", memory.settings.database_url, "--home", str(memory.home), *args]


@pytest.fixture(autouse=True)
def _passwords(reviewer_passwords: dict[str, str]) -> None:
    """Every reviewer has a password; `amem erase` gets the eraser's on standard input."""


def run(memory: Memory, *args: str) -> int:
    """The CLI; an erase gets its reviewer's password on stdin (as a script would pass it)."""
    argv = list(args)
    stdin = ""
    if argv[0] == "erase" and "--reviewer" in argv:
        argv.append("--password-stdin")
        stdin = REVIEWER_PASSWORDS[argv[argv.index("--reviewer") + 1]] + "\n"
    with patch("sys.stdin", io.StringIO(stdin)):
        return main(_cli(memory, *argv))


def _database_files(memory: Memory) -> list[Path]:
    """The files that hold the ledger's rows: SQLite's file and WAL, or PostgreSQL's relation files."""
    url = memory.ledger.engine.url
    if memory.ledger.dialect == "sqlite":
        base = Path(str(url.database))
        return [p for p in (base, Path(f"{base}-wal"), Path(f"{base}-shm")) if p.exists()]
    with memory.ledger.engine.connect() as conn:
        root = Path(conn.execute(sa.text("SHOW data_directory")).scalar_one())
        oids = conn.execute(
            sa.text(
                "SELECT c.oid FROM pg_class c WHERE c.oid IN ("
                " SELECT t.oid FROM pg_class t WHERE t.relname = ANY(:t)"
                "  AND t.relnamespace = to_regnamespace(current_schema())"
                " UNION SELECT t.reltoastrelid FROM pg_class t WHERE t.relname = ANY(:t)"
                "  AND t.relnamespace = to_regnamespace(current_schema()) AND t.reltoastrelid <> 0"
                " UNION SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
                "  WHERE t.relname = ANY(:t) AND t.relnamespace = to_regnamespace(current_schema()))"
            ),
            {"t": list(TABLES)},
        ).scalars()
        paths = [
            conn.execute(sa.text("SELECT pg_relation_filepath(:o)"), {"o": o}).scalar_one() for o in oids
        ]
        conn.execute(sa.text("CHECKPOINT"))  # shared buffers reach the files
    files = [f for p in paths if p for f in root.glob(p + "*")]
    if not files or not all(f.is_file() for f in files):
        pytest.skip("the PostgreSQL data directory is not readable from the tests")
    return files


def _hits(paths: list[Path], needle: bytes) -> list[str]:
    found = []
    for path in paths:
        for f in [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]:
            if needle in f.read_bytes():
                found.append(str(f))
    return found


def _why_kept(memory: Memory, hits: list[str], needle: bytes) -> str:
    """What a failed "no erased bytes in the files" check should say: each file's relation, the
    live rows still holding the needle, and the database's other sessions with their snapshots
    (a compaction under load in CI once kept the bytes once, and could not be reproduced alone)."""
    if not hits or memory.ledger.dialect != "postgresql":
        return str(hits)
    text = needle.decode("utf-8", "replace")
    lines = [f"kept in {hits}"]
    with memory.ledger.engine.connect() as conn:
        for hit in hits:
            node = Path(hit).name.split(".")[0].split("_")[0]
            rel = conn.execute(
                sa.text("SELECT relname, relkind FROM pg_class WHERE relfilenode = :n"), {"n": int(node)}
            ).all()
            lines.append(f"{hit}: {rel}")
        for table in TABLES:
            live = conn.execute(
                sa.text(f"SELECT count(*) FROM {table} t WHERE CAST(t AS text) LIKE :s"), {"s": f"%{text}%"}
            ).scalar_one()
            if live:
                lines.append(f"live rows of {table} holding it: {live}")
        sessions = conn.execute(
            sa.text(
                "SELECT pid, backend_type, state, backend_xmin, backend_xid, left(query, 60)"
                " FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).all()
        lines.extend(f"session {row}" for row in sessions)
    return "\n".join(lines)


def _as_hnsw_keeps(vector: bytes) -> bytes:
    """The vector as Chroma's HNSW index writes it (cosine space: normalised again in float32, which
    leaves about two thirds of MiniLM's already normalised vectors a few bits different)."""
    v = np.frombuffer(vector, dtype=np.float32)
    norm = np.float32(1.0) / (np.sqrt(np.float32((v * v).sum(dtype=np.float32))) + np.float32(1e-30))
    return (v * norm).astype(np.float32).tobytes()


def test_erased_bytes_leave_the_database_and_the_index(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    phone = f"06{uuid.uuid4().int % 10**8:08d}"
    text = f"Mrs {secret} of Acme asked us to call her on {phone} before the renewal"
    note_id = memory.add_note(text, actor="agent:sales-agent", scope="acme")
    other = memory.add_note(
        "Acme renewal in March with SSO, said the buyer", actor="agent:sales-agent", scope="acme"
    )
    memory.checkpoint(key=_key(memory), log=memory.home / "cp.jsonl")
    raw = memory.read(note_id).raw_log_ids[0]
    with memory.ledger.engine.connect() as conn:  # the erased note's vector: derived from the text too
        vector = conn.execute(
            sa.text("SELECT vector FROM note_vectors WHERE note_id = :i"), {"i": note_id}
        ).scalar_one()
    memory.ledger.compact()  # first: on PostgreSQL it moves every table to new files
    files = _database_files(memory)
    assert _hits(files, secret.encode()), "the test must see the bytes before the erasure"
    assert not _hits([memory.settings.chroma_path], secret.encode())  # the index holds no text
    assert _hits(_database_files(memory), vector) and _hits([memory.settings.chroma_path], vector)

    assert run(memory, "erase", "--raw-log", raw, "--reviewer", "alice", "--reason", "GDPR art. 17") == 0
    assert "1 raw logs" in capsys.readouterr().out
    assert run(memory, "erasures") == 0  # the auditor's list: who erased what, when, why
    listed = " ".join(capsys.readouterr().out.split())
    assert f"by alice: raw log {raw}; why: GDPR art. 17; redacted 1 raw log, " in listed

    # Chroma leaves a deleted collection's vector segment (HNSW) on disk: only the live collections'
    # segments may remain
    chroma_db = sqlite3.connect(str(memory.settings.chroma_path / "chroma.sqlite3"))
    live = {row[0] for row in chroma_db.execute("SELECT id FROM segments")}
    chroma_db.close()
    directories = {p.name for p in memory.settings.chroma_path.iterdir() if p.is_dir()}
    needles = {
        "text": secret.encode(),
        "phone": phone.encode(),
        "vector": bytes(vector)[:64],  # its first 16 floats: no other vector shares them
        "vector as HNSW keeps it": _as_hnsw_keeps(bytes(vector))[:64],
    }
    for name, needle in needles.items():
        hits = _hits(_database_files(memory), needle)
        assert hits == [], f"{name}: {_why_kept(memory, hits, needle)}"
        left = _hits([memory.settings.chroma_path], needle)
        assert left == [], (name, left, f"live segments {sorted(live)}", f"directories {sorted(directories)}")
    assert directories <= live
    assert memory.read(note_id).content == "[erased]"
    assert memory.read(other).content.startswith("Acme renewal")
    with memory.ledger.read() as tx:
        (log,) = tx.get_raw_logs([raw])
    assert log.text == "[erased]" and log.metadata == {}
    result = memory.verify(checkpoints=memory.home / "cp.jsonl", public_key=_key(memory))
    assert result.ok, result.problems
    assert result.checkpoints[0].proven  # the checkpoint before the erasure still holds
    assert all(secret not in h.note.content for h in memory.search(secret, scope="acme"))


def test_stale_memory_chroma_writes_into_its_index_files_is_cleared(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma writes a segment's arrays at their full capacity from memory it never zeroed, which in
    the erasing process can hold the erased input: an erased phone number was once found in a
    rebuilt segment's length.bin. Here that memory is made to hold it; the compaction clears it,
    and the rows in use are kept."""
    from amem.index import hnsw_files

    phone = f"06{uuid.uuid4().int % 10**8:08d}".encode()
    note_id = memory.add_note(
        f"Mrs Quibblestone asked us to call her on {phone.decode()}", actor="agent:sales-agent", scope="acme"
    )
    other = memory.add_note("Acme renewal in March with SSO", actor="agent:sales-agent", scope="acme")
    raw = memory.read(note_id).raw_log_ids[0]
    chroma = memory.settings.chroma_path
    planted: list[str] = []

    def rebuild_as_chroma_may(self: Memory, **kwargs: object) -> int:
        indexed = rebuild(self, **kwargs)
        for segment in (p for p in chroma.iterdir() if hnsw_files.is_segment(p)):
            layout = hnsw_files.read_layout(segment)
            assert layout is not None, "the installed Chroma writes a layout the clearing does not know"
            for name, width in layout.arrays():
                with open(segment / name, "r+b") as file:
                    file.seek(layout.elements * width)
                    file.write(phone)
            planted.append(segment.name)
        return indexed

    rebuild = Memory.reindex
    monkeypatch.setattr(Memory, "reindex", rebuild_as_chroma_may)
    report = memory.erase(by=signed_in(memory, "alice"), reason="GDPR art. 17", raw_log_id=raw)

    assert planted, "the rebuild wrote segments"
    assert _hits([chroma], phone) == []
    assert report.index_segments_unchecked == 0
    hits = memory.search("renewal in March", scope="acme")
    assert hits and hits[0].note.id == other


def test_index_files_in_a_layout_it_does_not_know_are_reported(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Chroma release that writes its segments otherwise: nothing is cleared blindly, and the
    eraser is told which files could still hold stale bytes."""
    from amem.index import hnsw_files

    note_id = memory.add_note("Mrs Quibblestone called from Acme", actor="agent:sales-agent", scope="acme")
    memory.add_note("Acme renewal in March", actor="agent:sales-agent", scope="acme")  # the scope's segment
    raw = memory.read(note_id).raw_log_ids[0]
    monkeypatch.setattr(hnsw_files, "read_layout", lambda directory: None)

    assert run(memory, "erase", "--raw-log", raw, "--reviewer", "alice", "--reason", "request") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1 index segments are in a file layout this version does not know" in out
    assert memory.read(note_id).content == "[erased]"


def _chroma_fulltext_blocks(memory: Memory) -> bytes:
    """The segments of Chroma's full-text index (FTS5, trigram tokens), as stored."""
    db = sqlite3.connect(str(memory.settings.chroma_path / "chroma.sqlite3"))
    try:
        return b"".join(r[0] for r in db.execute("SELECT block FROM embedding_fulltext_search_data"))
    finally:
        db.close()


def test_the_erased_text_leaves_chromas_full_text_index(memory: Memory) -> None:
    """amem's index entries carry no text now, but an index an older amem wrote holds each note's
    document, and Chroma indexes its trigrams with their positions; a deleted document's stay in
    the index's segments until they are merged, enough to spell the text again."""
    draw = random.Random(uuid.uuid4().int)
    name = "".join(draw.choice("qxzjvkw") for _ in range(12))  # trigrams no other text here has
    trigrams = {name[i : i + 3].encode() for i in range(len(name) - 2)}
    text = f"Mrs {name.title()} asked for a call back"
    note_id = memory.add_note(text, actor="agent:x", scope="acme")
    memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    memory.search_service.catch_up()  # the staged notes written into the index
    collection = memory.search_service.index._collection("acme", create=False)
    held = collection.get(ids=[note_id], include=["embeddings", "metadatas"])
    collection.upsert(
        ids=[note_id], embeddings=held["embeddings"], metadatas=held["metadatas"], documents=[text]
    )
    assert [t for t in trigrams if t in _chroma_fulltext_blocks(memory)], "the test must see them before"

    raw = memory.read(note_id).raw_log_ids[0]
    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw)

    assert [t for t in trigrams if t in _chroma_fulltext_blocks(memory)] == []
    assert memory.search("renewal in March", scope="acme")


def _rows_holding(memory: Memory, needle: str) -> list[str]:
    """Tables with a row whose any column holds ``needle``."""
    found = []
    with memory.ledger.engine.connect() as conn:
        for table in ("raw_logs", "raw_log_states", "llm_calls", "notes", "proposals", "changes"):
            for row in conn.execute(sa.text(f"SELECT * FROM {table}")).mappings():
                if any(needle in str(v) for v in row.values() if v is not None):
                    found.append(table)
    return found


def test_an_erased_input_still_queued_leaves_the_queue(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """An input acknowledged and waiting for a worker, then erased: no worker analyses it (a note of
    "[erased]" linked to the account's notes, evolving them, would be noise), and its caller learns
    it was erased."""
    raw = memory.add_note("Mrs Quibblestone asked us to call", actor="agent:x", scope="acme", wait=False)
    assert memory.input_status(raw).status == "queued"

    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw)

    assert memory.input_status(raw).status == "erased"
    assert memory.queue_depth()["queued"] == 0 and memory.unprocessed_count() == 0
    assert memory.reprocess() == []
    assert memory.notes(scope="acme") == []
    assert main(_cli(memory, "status", raw)) == 0
    assert "erased on a data subject's request" in " ".join(capsys.readouterr().out.split())


def test_a_worker_holding_an_input_when_it_is_erased_applies_nothing(memory: Memory) -> None:
    """A worker read the input before the erasure and analyses the text as it was: its write finds
    the claim gone, so the erased text never comes back as a note."""
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    raw = memory.add_note(f"Mrs {secret} asked us to call", actor="agent:x", scope="acme", wait=False)
    (held,) = memory.queue.claim("worker-1", 1)
    assert secret in held.text

    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw)
    (outcome,) = memory.pipeline.process_many([held], owner="worker-1")

    assert outcome.note_id is None and "erased" in (outcome.error or "")
    assert memory.input_status(raw).status == "erased"
    assert memory.notes(scope="acme") == []
    assert _rows_holding(memory, secret) == []


def test_importing_an_erased_input_again_does_not_bring_it_back(memory: Memory) -> None:
    """A re-run import (``skip_recorded``) finds the line's raw log by its digest, which the erasure
    keeps: it is not recorded again, and the outcome says it was erased."""
    line = {"content": "Mrs Quibblestone asked us to call", "scope": "acme", "at": "2026-03-02T10:00:00Z"}
    (first,) = memory.add_notes([line], actor="agent:import")
    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=first.raw_log_id)

    (again,) = memory.add_notes([line], actor="agent:import", skip_recorded=True)

    assert again.recorded_before and again.raw_log_id == first.raw_log_id
    assert "erased" in (again.error or "")
    assert memory.count_raw_logs() == 1
    assert all(n.content == "[erased]" for n in memory.notes(scope="acme"))


def test_a_senders_key_is_never_kept_readable_and_its_retry_after_the_erasure_is_not_kept_again(
    memory: Memory,
) -> None:
    """A message id names its sender's mailbox; the ledger keeps the key's digest only, which still
    tells the retry of an erased input from a new one."""
    secret = f"quibblestone.{uuid.uuid4().hex[:8]}"
    line = {
        "content": "Mrs Quibblestone asked us to call",
        "scope": "acme",
        "idempotency_key": f"<{secret}@mail>",
    }
    (first,) = memory.add_notes([line], actor="agent:mail", wait=False)
    memory.ledger.compact()
    assert _hits(_database_files(memory), secret.encode()) == []

    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=first.raw_log_id)
    (again,) = memory.add_notes([line], actor="agent:mail", wait=False)

    assert again.recorded_before and again.raw_log_id == first.raw_log_id and "erased" in (again.error or "")
    assert memory.count_raw_logs() == 1 and memory.queue_depth()["queued"] == 0


def test_an_erased_note_leaves_search_and_the_facts_as_a_recorded_deletion(memory: Memory) -> None:
    """An erased note has nothing left to say: it is marked deleted by the eraser (a change in its
    history), so agents' searches, the link step's neighbours and the account's facts skip it."""
    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    kept = memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    raw = memory.read(gone).raw_log_ids[0]

    report = memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw)

    assert report.notes_deleted == 1
    note = memory.read(gone)
    assert note.deleted and note.content == "[erased]"
    for query in ("renewal price", "erased", "Quibblestone"):
        assert [h.note.id for h in memory.search(query, scope="acme")] == [kept]
    assert [f.note_id for f in memory.facts(scope="acme").facts] == [kept]
    last = memory.history(gone)[-1]
    assert (last.attribute, last.new_value, last.actor) == ("deleted", True, "person:alice")
    decided = memory.proposal(last.proposal_id or "")
    assert report.erasure_id in decided.reason and decided.reviewer == "alice"
    result = memory.verify()
    assert result.ok, result.problems


def _what_users_see(memory: Memory, note_id: str, proposal_ids: list[str]) -> dict[str, str]:
    """Each place a person or an agent reads a kept note's proposals, as text."""
    from amem.ledger.audit_queries import AuditQuery

    return {
        "history": repr(memory.history(note_id)),
        "proposals": repr([memory.proposal(p) for p in proposal_ids]),
        "facts": repr(memory.facts(scope="acme")),
        "search": repr(memory.search("price per seat", scope="acme")),
        "review items": repr(memory.review_items()),
        "audit events": repr(memory.audit_events(AuditQuery())),
        "export": memory.export_audit_jsonl(AuditQuery()).decode(),
    }


def test_a_reason_on_a_kept_note_quoting_the_erased_input_is_erased_and_its_proposal_withdrawn(
    memory: Memory,
) -> None:
    """Someone who had read the erased input edited a kept note and gave its name as the reason, or
    as the evidence for a retirement still waiting: the values stay (they do not quote it), the
    reasons and evidence go wherever they are shown, and the retirement, its grounds gone, is
    withdrawn. A reason that quotes no such word stays."""
    from tests.factories import said

    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    gone = said(memory, f"Acme's champion is Mrs {secret}, she approves the budget")
    kept = said(memory, "Acme pays $42 per seat on the Pro plan")
    alice = signed_in(memory, "alice")
    (edit,) = memory.update(
        kept.id, actor="person:bob", reason=f"{secret} confirmed it on the call", decision_rationale="budget"
    )
    memory.approve(edit.id, reviewer=alice)
    (plain,) = memory.update(kept.id, actor="person:bob", reason="said on the call", next_step="renew")
    retire = memory.propose(
        kept.id,
        "invalid_at",
        "2027-03-01T00:00:00Z",
        reason=f"{secret} said the price changes",
        evidence=f"{secret}: we will pay more from March",
        proposer="person:bob",
    )
    ids = [edit.id, plain.id, retire.id]
    assert retire.status.value == "pending"
    before = _what_users_see(memory, kept.id, ids)
    assert [place for place, text in before.items() if secret not in text] == [], "the test must see it"

    report = memory.erase(by=alice, reason="GDPR art. 17", raw_log_id=gone.raw_log_ids[0])

    after = _what_users_see(memory, kept.id, ids)
    assert [place for place, text in after.items() if secret in text] == []
    assert (memory.proposal(edit.id).reason, memory.proposal(retire.id).evidence) == (REDACTED, REDACTED)
    assert (memory.proposal(plain.id).reason, memory.proposal(plain.id).status) == (
        "said on the call",
        plain.status,
    )
    assert memory.proposal(retire.id).status.value == "superseded"
    assert [f.retirement_waiting for f in memory.facts(scope="acme").facts] == [None]
    assert memory.read(kept.id).decision_rationale == "budget"
    assert report.reasons_quoting == 2 and report.proposals_withdrawn == 1
    with memory.ledger.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT * FROM proposals")).all()
    assert not [r for r in rows if secret in str(tuple(r))]
    result = memory.verify()
    assert result.ok, result.problems


def test_an_erased_note_cannot_be_restored_or_changed(memory: Memory) -> None:
    """Reverting the erasure's deletion would put the erased note back in search as "[erased]", and
    an edit would give it values again: both are refused, for a person, an agent and a model (whose
    value could only come from what it read of the erased input). A note deleted by a person, not
    erased, can still be restored."""
    from amem.errors import InvalidInputError

    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    other = memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    alice = signed_in(memory, "alice")
    memory.erase(by=alice, reason="request", raw_log_id=memory.read(gone).raw_log_ids[0])
    tombstone = memory.history(gone)[-1].change_seq
    assert tombstone is not None
    proposals_before = len(memory.pending())

    with pytest.raises(InvalidInputError, match="erased on a data subject's request"):
        memory.revert(tombstone, reviewer=alice, reason="by mistake")
    for actor in ("person:alice", "agent:x"):
        with pytest.raises(InvalidInputError, match="erased on a data subject's request"):
            memory.update(gone, actor=actor, context="Quibblestone again")
    with pytest.raises(InvalidInputError, match="erased on a data subject's request"):
        memory.propose(gone, "tags", ["quibblestone"], reason="evolved", proposer=llm_proposer(memory))

    assert memory.read(gone).deleted and len(memory.pending()) == proposals_before
    assert [h.note.id for h in memory.search("renewal", scope="acme")] == [other]
    deleted = memory.delete(other, actor="person:bob", reason="duplicate")
    if deleted.status.value == "pending":
        memory.approve(deleted.id, reviewer=alice)
    restored = memory.revert(memory.history(other)[-1].change_seq or 0, reviewer=alice, reason="not one")
    assert restored.attribute == "deleted" and restored.new_value is False


def test_the_erasing_process_keeps_no_erased_text_in_its_caches(memory: Memory) -> None:
    """The offline analyst's readings, the answer checks' and the rows searches keep hold texts in
    this process's memory: an erasure empties them (each cache named must exist, so a rename cannot
    silently leave one out)."""
    import importlib

    from amem.services.text_caches import TEXT_CACHES

    caches = [getattr(importlib.import_module(m), f) for m, f in TEXT_CACHES]
    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    memory.search("renewal", scope="acme")
    assert sum(c.cache_info().currsize for c in caches) > 0 and len(memory.search_service.hit_rows) > 0

    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=memory.read(gone).raw_log_ids[0])

    assert [c.cache_info().currsize for c in caches] == [0] * len(caches)
    assert len(memory.search_service.hit_rows) == 0


def test_erasing_a_scope_counts_then_asks(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole account cannot be erased by a slip: the count first, then a question that defaults to
    no; a script says --yes."""
    tc.build(memory)
    asked: list[str] = []

    def answer(reply: bool) -> Callable[..., bool]:
        def confirm(text: str, default: bool = False) -> bool:
            asked.append(text)
            return reply

        return confirm

    monkeypatch.setattr("amem.cli.trust.typer.confirm", answer(False))
    assert run(memory, "erase", "--scope", "acme", "--reviewer", "alice", "--reason", "left") == 0
    assert "nothing erased" in capsys.readouterr().out
    assert "3 raw logs of scope acme" in asked[0] and "cannot be undone" in asked[0]
    assert memory.count_erasable(scope="acme") == 3 and not memory.erasures()

    assert run(memory, "erase", "--scope", "acme", "--reviewer", "alice", "--reason", "left", "--json") == 2
    assert "needs --yes" in capsys.readouterr().err

    monkeypatch.setattr("amem.cli.trust.typer.confirm", answer(True))
    assert run(memory, "erase", "--scope", "acme", "--reviewer", "alice", "--reason", "left") == 0
    assert "3 raw logs" in capsys.readouterr().out and len(memory.erasures()) == 1


_RAW_TEXT = sa.text("SELECT text FROM raw_logs WHERE id = :i")


def test_compaction_waits_for_sessions_that_can_still_see_the_erased_rows(memory: Memory) -> None:
    """PostgreSQL keeps an overwritten row version while an older snapshot may read it: the
    compaction reports such a session, and once it ends the bytes leave the files."""
    if memory.ledger.dialect != "postgresql":
        pytest.skip("SQLite has no other sessions' snapshots")
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    note_id = memory.add_note(f"Mrs {secret} of Acme called", actor="agent:sales-agent", scope="acme")
    raw = memory.read(note_id).raw_log_ids[0]
    reader = memory.ledger.engine.connect().execution_options(isolation_level="REPEATABLE READ")
    try:
        reader.begin()
        reader.execute(sa.text("SELECT 1"))  # its snapshot, taken now, still sees the raw log's text
        report = memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw, wait_s=0.2)
        # The count is the database's: the reader, and any other session (the suite's other
        # worker, in its own schema of the same database) with a snapshot from before the erasure.
        assert report.older_sessions_open >= 1
        assert _hits(_database_files(memory), secret.encode()), "the older snapshot keeps the row version"
        assert secret in reader.execute(_RAW_TEXT, {"i": raw}).scalar_one()  # and still reads it
    finally:
        reader.close()
    assert memory.ledger.compact() == Compaction()
    hits = _hits(_database_files(memory), secret.encode())
    assert hits == [], _why_kept(memory, hits, secret.encode())


def test_compaction_waits_for_a_writing_transaction_in_another_database_of_the_server(
    memory: Memory,
) -> None:
    """VACUUM FULL keeps row versions overwritten after a transaction holding an id began in any
    database of the server, not only the ledger's: the erasure counted only its own database's
    sessions, so on a shared team server it said the erased bytes were gone while they were kept."""
    if memory.ledger.dialect != "postgresql":
        pytest.skip("SQLite has no other sessions")
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    note_id = memory.add_note(f"Mrs {secret} of Acme called", actor="agent:sales-agent", scope="acme")
    raw = memory.read(note_id).raw_log_ids[0]
    elsewhere = sa.create_engine(memory.ledger.engine.url.set(database="postgres"))
    try:
        with elsewhere.connect() as other:
            other.execute(sa.text("SELECT txid_current()"))  # an id, its transaction left open
            report = memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=raw, wait_s=0.2)
            assert report.older_sessions_open >= 1
            other.rollback()
    finally:
        elsewhere.dispose()
    assert memory.ledger.compact() == Compaction()
    hits = _hits(_database_files(memory), secret.encode())
    assert hits == [], _why_kept(memory, hits, secret.encode())


def _key(memory: Memory) -> Path:
    from amem.services import checkpoints

    key = memory.home / "key.pem"
    if not key.exists():
        checkpoints.init_key(key)
    return key


def test_erasure_keeps_append_only_for_everything_else(memory: Memory) -> None:
    scene = tc.build(memory)
    report = memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=scene.raw_logs[0])
    assert report.raw_logs == 1 and report.notes >= 1
    assert memory.verify().ok
    for statement in (
        f"UPDATE raw_logs SET text = 'rewritten' WHERE id = '{scene.raw_logs[0]}'",  # an erased row
        f"UPDATE raw_logs SET text = '[erased]' WHERE id = '{scene.raw_logs[1]}'",  # no erasure recorded
        f"UPDATE raw_logs SET scope = 'x', text = '[erased]' WHERE id = '{scene.raw_logs[0]}'",
        "UPDATE changes SET hash = 'x'",
        "DELETE FROM erased_rows",
        "UPDATE erasures SET reason = 'x'",
    ):
        with pytest.raises(sa.exc.DatabaseError, match="append-only"), memory.ledger.engine.begin() as conn:
            conn.execute(sa.text(statement))
    # a redacted row edited afterwards is still caught
    with memory.ledger.engine.begin() as conn:
        conn.execute(sa.text("UPDATE proposals SET reason = 'forged' WHERE reason = '[erased]'"))
    result = memory.verify()
    assert not result.ok and result.bad_row and result.bad_row.startswith("proposals ")


def test_an_erasure_recorded_before_it_kept_the_values_it_left_still_verifies(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Erasures made before verify held an erased change to the values left recorded only the digests
    its hash covers: those changes are checked by their hash alone, and the ledger is intact."""
    from amem.domain.hashing import ORIGINAL_VALUE_DIGESTS
    from amem.services import erasure

    def as_before(original: dict[str, str], old_value: object, new_value: object) -> dict[str, str]:
        return {name: original[name] for name in ORIGINAL_VALUE_DIGESTS}

    monkeypatch.setattr(erasure, "erased_change_detail", as_before)
    scene = tc.build(memory, recent=False, erased=True)
    changes = [c for c in memory.history(scene.erased_note) if c.attribute == "content"]
    assert changes and changes[0].new_value == "[erased]"
    result = memory.verify()
    assert result.ok and result.message.startswith("intact"), result.problems


def test_scope_erasure_and_who_may_erase(memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    tc.build(memory)
    args = ("erase", "--scope", "acme", "--reason", "the account left", "--yes")
    assert run(memory, *args, "--reviewer", "bob") == 2  # sales_lead: not an eraser
    assert "may not erase" in capsys.readouterr().err
    # without --yes, bob is told before he is asked to confirm anything (the confirmation would be
    # the line after his password; none is given)
    assert run(memory, "erase", "--scope", "acme", "--reason", "dsr", "--reviewer", "bob") == 2
    told = capsys.readouterr()
    assert "may not erase" in told.err and "Erase them?" not in told.out
    assert run(memory, "erase", "--scope", "acme", "--reviewer", "alice", "--reason", " ", "--yes") == 2
    assert "needs a reason" in capsys.readouterr().err
    assert run(memory, "erase", "--reviewer", "alice", "--reason", "x") == 2
    assert "exactly one" in capsys.readouterr().err
    assert run(memory, "erase", "--scope", "nobody", "--reviewer", "alice", "--reason", "x", "--yes") == 2
    assert run(memory, *args, "--reviewer", "alice") == 0
    assert "3 raw logs" in capsys.readouterr().out
    assert all(n.content == "[erased]" for n in memory.notes(scope="acme"))
    assert memory.verify().ok


def test_an_erasure_reports_how_the_rebuild_of_the_index_goes(memory: Memory) -> None:
    """Most of a large store's erasure is the index's rebuild (84 of 88 s at 100,000 notes): the
    operator is told how it goes (`amem erase` draws it), every kept note counted once."""
    from amem.index.sync import INDEXING
    from tests.factories import said

    kept = [said(memory, f"Acme call {n} about the renewal", scope="acme") for n in range(3)]
    gone = said(memory, "Mrs Quibblestone asked about the price", scope="acme")
    said(memory, "Globex wants a pilot", scope="globex")
    told: list[tuple[str, int, int | None]] = []

    memory.erase(
        by=signed_in(memory, "alice"),
        reason="request",
        raw_log_id=gone.raw_log_ids[0],
        progress=lambda task, done, total: told.append((task, done, total)),
    )

    indexing = [(done, total) for task, done, total in told if task == INDEXING]
    assert indexing[0] == (0, indexing[0][1]) and indexing[-1][0] == indexing[-1][1]
    assert indexing[-1][1] >= len(kept) + 1  # every account's kept notes, not the erased one


#: A server open on the store through the erasure: it searched the erased note before, adds a note
#: after (a write into the build it adopts), then closes (Chroma persists what it holds).
SERVER = """
import sys
from amem.memory import Memory

home, url = sys.argv[1:3]
with Memory(home, database_url=url) as memory:
    print(len(memory.search("call her before the renewal", k=5, scope="acme")), flush=True)
    sys.stdin.readline()  # the erasure is done
    found = memory.search("call her before the renewal", k=5, scope="acme")
    memory.add_note("Acme's buyer wants the SSO add-on quoted", actor="agent:crm", scope="acme")
    print(len(found), memory.search_service.index.build, flush=True)
"""


def test_a_server_open_through_the_erasure_leaves_no_erased_vector_in_the_index_files(
    memory: Memory,
) -> None:
    """The server had the erased note's vector loaded in the build it was using: that build is
    dropped under it, it adopts the rebuilt one, and nothing it writes or keeps on closing brings
    the vector back into the files."""
    import os
    import subprocess
    import sys

    text = f"Mrs Quibblestone-{uuid.uuid4().hex[:8]} asked us to call her before the renewal"
    note_id = memory.add_note(text, actor="agent:sales-agent", scope="acme")
    memory.add_note("Acme renewal in March with SSO, said the buyer", actor="agent:sales-agent", scope="acme")
    memory.search("renewal", k=1, scope="acme")
    with memory.ledger.engine.connect() as conn:
        vector = bytes(
            conn.execute(
                sa.text("SELECT vector FROM note_vectors WHERE note_id = :i"), {"i": note_id}
            ).scalar_one()
        )
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(memory.home), memory.settings.database_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    try:
        assert int(server.stdout.readline()) == 2, server.stderr.read()[-2000:]
        raw = memory.read(note_id).raw_log_ids[0]
        assert run(memory, "erase", "--raw-log", raw, "--reviewer", "alice", "--reason", "GDPR") == 0
        server.stdin.write("erased\n")
        server.stdin.flush()
        found, build = server.stdout.readline().split()
        server.stdin.close()
        err = server.stderr.read()
        assert server.wait(timeout=120) == 0, err[-2000:]
    finally:
        if server.poll() is None:
            server.kill()
    assert len(memory.search("SSO add-on quote", k=5, scope="acme")) >= 1  # this process adopts it too
    assert int(found) == 1 and build == memory.search_service.index.build
    for needle in (vector[:64], _as_hnsw_keeps(vector)[:64]):
        assert _hits([memory.settings.chroma_path], needle) == []


def test_a_reviewers_correction_made_from_an_erased_input_loses_its_evidence_and_leaves_the_queue(
    memory: Memory,
) -> None:
    """A reviewer's correction of a retirement carries the retirement's raw logs and evidence (a
    sentence of the newer input) but no model call: erasing that input redacts its evidence and
    reason as the retirement's, and withdraws it from the queue."""
    from tests.factories import contradict, said

    old = said(memory, "Acme pays $40 per seat per month for the Pro plan")
    new = said(memory, "Acme now pays $45 per seat per month for the Pro plan from March 2025")
    retire = contradict(memory, old, new, "2025-03-01T00:00:00Z")
    done = memory.correct(
        retire.id, "2025-04-01T00:00:00Z", reviewer=signed_in(memory, "bob"), comment="April, per contract"
    )
    fix = done.correction
    assert fix.status.value == "pending" and fix.evidence == new.content
    assert fix.id in {p.id for p in memory.pending()}

    report = memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=new.raw_log_ids[0])

    after = memory.proposal(fix.id)
    assert (after.status.value, after.evidence, after.reason) == ("superseded", REDACTED, REDACTED)
    assert fix.id not in {p.id for p in memory.pending()}
    assert report.proposals_withdrawn >= 1
    with memory.ledger.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT * FROM proposals")).all()
    assert not [r for r in rows if "$45 per seat" in str(tuple(r)) or "per contract" in str(tuple(r))]
    result = memory.verify()
    assert result.ok, result.problems


def test_erasing_by_actor_finds_the_name_as_it_is_written(memory: Memory) -> None:
    """Actors are stored canonical (case-folded, NFKC): a data subject's name typed as it is
    written, with or without its kind, finds their inputs; another kind does not."""
    (jane,) = memory.add_notes(
        [{"content": "I want my account closed; call me on 0612345678.", "scope": "acme"}], actor="Jane Doe"
    )
    memory.add_note("Acme renewal in March", actor="agent:sales-agent", scope="acme")
    for typed in ("Jane Doe", "agent:Jane Doe", "Agent:jane doe", "ＪＡＮＥ ＤＯＥ"):
        assert memory.count_erasable(actor=typed) == 1, typed
    assert memory.count_erasable(actor="person:Jane Doe") == 0

    report = memory.erase(by=signed_in(memory, "alice"), reason="GDPR request", actor="Agent:Jane Doe")

    assert report.raw_logs == 1
    assert memory.raw_logs([jane.raw_log_id])[0].text == REDACTED
    assert [n.content for n in memory.notes(scope="acme") if not n.deleted] == ["Acme renewal in March"]


def test_a_kept_notes_list_loses_only_the_items_quoting_the_erased_input(memory: Memory) -> None:
    """A tag naming the erased input's subject goes; the note's other tags stay, "contract" among
    them, and with it the review the policy gives a contract note's context."""
    from tests.factories import said

    kept = said(memory, "Acme signed the order form for 40 seats of the Pro plan")
    gone = said(memory, "Call with Mrs Quibblestone of Acme: she is the new buyer, reach her on 0612345678")
    memory.update(kept.id, actor="agent:sales-agent", tags=["acme", "contract", "quibblestone"])
    assert memory.read(kept.id).tags == ["acme", "contract", "quibblestone"]

    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=gone.raw_log_ids[0])

    assert memory.read(kept.id).tags == ["acme", "contract", REDACTED]
    (edit,) = memory.update(kept.id, actor="agent:sales-agent", context="Acme asked for a 30% discount")
    assert edit.status.value == "pending" and "contract" in edit.rule
    result = memory.verify()
    assert result.ok, result.problems


def test_the_ledger_is_compacted_even_when_the_index_cannot_be_opened(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The erasure commits, the index's rebuild fails (its server is down): the ledger's files are
    compacted all the same, so no free page or old row version keeps the erased text."""
    from amem.index.chroma import IndexUnavailableError
    from amem.ledger import compaction
    from tests.factories import said

    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    gone = said(memory, f"Call with Mrs {secret} of Acme: reach her on 0612345678")
    said(memory, "Acme wants SSO before the renewal")
    monkeypatch.setenv("AMEM_CHROMA_URL", "http://127.0.0.1:9")  # nothing listens there
    # Twice under -n 2 in CI (never alone) the files kept the erased rows' old versions with no
    # other session seen then: what every session of the server held as the compaction began.
    seen: list[object] = []
    waited = compaction.wait_for_older_snapshots

    def wait_and_record(cur: Any, wait_s: float, progress: Any) -> compaction.Compaction:
        older = waited(cur, wait_s, progress)
        cur.execute(
            "SELECT txid_current_if_assigned(), pid, datname, backend_type, state, backend_xmin,"
            " backend_xid, xact_start, left(query, 60) FROM pg_stat_activity"
            " WHERE backend_xmin IS NOT NULL OR backend_xid IS NOT NULL"
        )
        seen.extend([f"older={older}", *cur.fetchall()])
        return older

    monkeypatch.setattr(compaction, "wait_for_older_snapshots", wait_and_record)
    with Memory(memory.home, database_url=memory.settings.database_url) as eraser:
        with pytest.raises(IndexUnavailableError):
            eraser.erase(by=signed_in(eraser, "alice"), reason="request", raw_log_id=gone.raw_log_ids[0])
        assert eraser.raw_logs(gone.raw_log_ids)[0].text == REDACTED
        hits = _hits(_database_files(eraser), secret.encode())
        assert hits == [], f"{_why_kept(eraser, hits, secret.encode())}\nas the compaction began: {seen}"


def test_a_kept_note_redacted_in_place_loses_its_stored_vector_with_the_erasure(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its vector was embedded from the erased words: it leaves the ledger in the erasure's own
    transaction, not only when the index's rebuild (which can fail or be cut short) replaces it."""
    import sqlalchemy as sa

    from amem.index.chroma import IndexUnavailableError
    from amem.ledger.tables import note_vectors
    from tests.factories import said

    kept = said(memory, "Acme signed the order form for 40 seats of the Pro plan")
    gone = said(memory, "Call with Mrs Quibblestone of Acme: she is the new buyer, reach her on 0612345678")
    memory.update(kept.id, actor="agent:sales-agent", tags=["acme", "contract", "quibblestone"])
    memory.search("order form", scope="acme")  # the index catches up: the tags' vector is stored

    def stored() -> list[str]:
        with memory.ledger.engine.connect() as conn:
            where = note_vectors.c.note_id == kept.id
            return list(conn.execute(sa.select(note_vectors.c.document_sha256).where(where)).scalars())

    assert stored()
    monkeypatch.setenv("AMEM_CHROMA_URL", "http://127.0.0.1:9")  # the rebuild cannot run
    with (
        Memory(memory.home, database_url=memory.settings.database_url) as eraser,
        pytest.raises(IndexUnavailableError),
    ):
        eraser.erase(by=signed_in(eraser, "alice"), reason="request", raw_log_id=gone.raw_log_ids[0])
    assert stored() == []


#: The process-wide caches that hold no input's text, and what each is keyed by. Every other cache
#: in the packages that read inputs must be in text_caches.TEXT_CACHES, which an erasure empties.
KEYED_BY_NO_INPUT = {
    ("amem.index.embedders", "_file_digest"): "the embedding model's file path",
    ("amem.index.embedders", "_minilm_session"): "a thread count",
    ("amem.index.embedders", "_minilm_tokenizer"): "a token limit",
    ("amem.llm.construct_note", "_extra_model"): "the policy's extra attributes: names and types",
    ("amem.llm.offline.cues", "cue_pattern"): "a policy attribute's name and description",
}


def test_every_cache_of_the_packages_that_read_inputs_is_emptied_by_an_erasure_or_holds_none() -> None:
    """A cache keyed by an input's text keeps that text in memory after its erasure unless
    ``forget_texts`` empties it: each functools cache of the services, the model adapters and the
    index is listed in TEXT_CACHES or said above to hold no input, so a new one must be placed."""
    import importlib
    import pkgutil

    import amem.index
    import amem.llm
    import amem.services
    from amem.services.text_caches import TEXT_CACHES

    found = set()
    for package in (amem.services, amem.llm, amem.index):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                cache = callable(getattr(value, "cache_clear", None)) and callable(
                    getattr(value, "cache_info", None)
                )
                if cache and getattr(value, "__module__", None) == module.__name__:
                    found.add((module.__name__, name))
    assert found - set(TEXT_CACHES) - set(KEYED_BY_NO_INPUT) == set(), "a new cache: can it hold input text?"
    assert set(TEXT_CACHES) <= found and set(KEYED_BY_NO_INPUT) <= found  # nothing listed is stale
