"""Tampering with a ledger the way someone with write access to the database would.

Each case edits the database directly (triggers dropped or disabled first, as an attacker with the
database's own tools would), never through amem's code. Used by tests/ledger/test_tamper.py and
bench/tamper.py. The attacker knows the hash algorithm (the code is public) and, in the ``full_*``
cases, recomputes every hash of both chains and the chain head, so only a signed checkpoint kept
outside the database can tell.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from amem.domain.hashing import (
    GENESIS_HASH,
    REDACTED,
    change_hash,
    erased_row_detail,
    erased_rows_digest,
    event_hash,
    payload_digest,
    sha256_text,
    value_digest,
)
from amem.domain.models import LlmCall, new_id, utcnow
from amem.ledger.tables import (
    api_tokens,
    chain_head,
    changes,
    erased_rows,
    erasures,
    events,
    llm_calls,
    notes,
    proposals,
    raw_log_states,
    raw_logs,
    token_events,
)
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, signed_in


@dataclass
class Scene:
    """What the standard ledger holds, by id, for the cases to aim at."""

    notes: list[str] = field(default_factory=list)
    raw_logs: list[str] = field(default_factory=list)
    pending: str = ""
    approved: str = ""
    rejected: str = ""
    llm_call: str = ""
    #: The event head before the last note was made (a consistent point to truncate back to).
    cut_event_seq: int = 0
    #: The chained record of alice's reviewer token being made, and the token; an agent token, revoked.
    token_created: str = ""
    reviewer_token: str = ""
    revoked_token: str = ""
    #: An agent token limited to acme's memory.
    scoped_token: str = ""
    #: A reviewer's correction of a model's valid_at (it names the proposal it replaced).
    correction: str = ""
    #: A fourth note, erased on its data subject's request (``build(erased=True)``).
    erased_note: str = ""


def build(mem: Memory, *, recent: bool = True, erased: bool = False) -> Scene:
    """Three notes with applied, approved, rejected and pending proposals and a model call; with
    ``recent``, what later schemas record and refuse to downgrade past: alice's reviewer token, an
    agent's (revoked), one limited to acme (0016, 0019), and a reviewer's correction (0021); with
    ``erased``, a fourth note made and erased (the cases of ``NEEDS_ERASURE``)."""
    scene = Scene()
    first = make_note(mem, "We agreed on 50 seats at 40 EUR each", tags=["pricing"], keywords=["seats"])
    second = make_note(mem, "Globex renewal is due in March", tags=["renewal"], keywords=["globex"])
    call = LlmCall(
        id=new_id("c"),
        task="construct",
        model="offline",
        prompt_version="test/1",
        raw_log_id=first.raw_log_ids[0],
        prompt_sha256=sha256_text("prompt"),
        response_text='{"keywords": ["seats"]}',
        created_at=utcnow(),
    )
    with mem.ledger.write() as tx:
        tx.insert_llm_call(call)
    scene.llm_call = call.id
    scene.pending = mem.propose(
        first.id, "decision_rationale", "price matched", reason="r", proposer=llm_proposer(mem)
    ).id
    approved = mem.propose(
        second.id, "decision_rationale", "auditor asked", reason="r", proposer=llm_proposer(mem)
    )
    scene.approved = mem.approve(approved.id, reviewer=signed_in(mem, "alice"), comment="ok").id
    rejected = mem.propose(second.id, "next_step", "send the quote", reason="r", proposer=llm_proposer(mem))
    scene.rejected = mem.reject(rejected.id, reviewer=signed_in(mem, "bob"), comment="not agreed").id
    with mem.ledger.read() as tx:
        scene.cut_event_seq = tx.event_head()[0]
    third = make_note(mem, "Initech wants SSO first", tags=["sso"], keywords=["initech"])
    if recent:
        guessed = mem.propose(third.id, "valid_at", "2026-03-01", reason="r", proposer=llm_proposer(mem))
        fix = mem.correct(guessed.id, "2027-03-01", reviewer=signed_in(mem, "alice"))
        scene.correction = fix.correction.id
        scene.reviewer_token = mem.tokens.create("alice", "reviewer", by=signed_in(mem, "alice"))[1].id
        scene.revoked_token = mem.tokens.create("crm-sync", "agent")[1].id
        mem.tokens.revoke("crm-sync")
        scene.scoped_token = mem.tokens.create("acme-bot", "agent", scopes=["acme"])[1].id
        scene.token_created = next(e.id for e in mem.tokens.history() if e.name == "alice")
    if erased:
        gone = make_note(mem, "Jane Doe at jane@example.com asked for a refund", tags=["refund"])
        mem.erase(by=signed_in(mem, "alice"), reason="GDPR art. 17", raw_log_id=gone.raw_log_ids[0])
        scene.erased_note = gone.id
    scene.notes = [first.id, second.id, third.id]
    scene.raw_logs = [first.raw_log_ids[0], second.raw_log_ids[0], third.raw_log_ids[0]]
    return scene


# -- what an attacker does first -----------------------------------------------------------------


def unlock(conn: sa.Connection, *tables: str) -> None:
    """Drop (SQLite) or disable (PostgreSQL) the append-only triggers of ``tables``."""
    for table in tables:
        if conn.dialect.name == "sqlite":
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {table}_no_update"))
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {table}_no_delete"))
        else:
            conn.execute(sa.text(f"ALTER TABLE {table} DISABLE TRIGGER USER"))


def _changes(conn: sa.Connection) -> list[Any]:
    return list(conn.execute(sa.select(changes).order_by(changes.c.seq)))


def _events(conn: sa.Connection) -> list[Any]:
    return list(conn.execute(sa.select(events).order_by(events.c.seq)))


def _rehash_changes(conn: sa.Connection, start_seq: int) -> None:
    """Recompute every change hash from ``start_seq`` on, and the chain head's, as the code does."""
    rows = _changes(conn)
    prev = GENESIS_HASH
    for c in rows:
        if c.seq >= start_seq:
            new = change_hash(
                prev_hash=prev,
                seq=c.seq,
                note_id=c.note_id,
                proposal_id=c.proposal_id,
                attribute=c.attribute,
                old_value=c.old_value,
                new_value=c.new_value,
                note_version=c.note_version,
                actor_kind=c.actor_kind,
                actor_id=c.actor_id,
                kind=c.kind,
                applied_at=c.applied_at,
            )
            conn.execute(sa.update(changes).where(changes.c.seq == c.seq).values(prev_hash=prev, hash=new))
            prev = new
        else:
            prev = c.hash
    conn.execute(sa.update(chain_head).values(last_seq=len(rows), last_hash=prev))


def _rehash_events(conn: sa.Connection) -> None:
    """Recompute every event's payload digest from the rows as they are now, and the whole chain."""
    sources = {
        "raw_log": (raw_logs, raw_logs.c.id),
        "llm_call": (llm_calls, llm_calls.c.id),
        "proposal": (proposals, proposals.c.id),
        "change": (changes, changes.c.seq),
    }
    prev = GENESIS_HASH
    for e in _events(conn):
        digest = e.payload_digest
        if e.kind in sources:
            table, key = sources[e.kind]
            subject: Any = int(e.subject) if e.kind == "change" else e.subject
            row = conn.execute(sa.select(table).where(key == subject)).one()._mapping
            digest = payload_digest(e.kind, row)
        new = event_hash(
            prev_hash=prev, seq=e.seq, kind=e.kind, subject=e.subject, payload_digest=digest, at=e.at
        )
        conn.execute(
            sa.update(events)
            .where(events.c.seq == e.seq)
            .values(payload_digest=digest, prev_hash=prev, hash=new)
        )
        prev = new
    conn.execute(sa.update(chain_head).values(event_seq=len(_events(conn)), event_hash=prev))


# -- the cases (each returns the row verify should name) -----------------------------------------


def edited_change_row(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "changes")
    seq = len(_changes(conn)) // 2
    conn.execute(sa.update(changes).where(changes.c.seq == seq).values(new_value=["forged"]))
    return f"changes {seq}"


def deleted_middle_change(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "changes")
    seq = len(_changes(conn)) // 2
    conn.execute(sa.delete(changes).where(changes.c.seq == seq))
    return f"changes {seq + 1}"  # the chain breaks at the row after the gap


def swapped_seqs(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "changes")
    seq = len(_changes(conn)) // 2
    conn.execute(sa.update(changes).where(changes.c.seq == seq).values(seq=-1))
    conn.execute(sa.update(changes).where(changes.c.seq == seq + 1).values(seq=seq))
    conn.execute(sa.update(changes).where(changes.c.seq == -1).values(seq=seq + 1))
    return f"changes {seq}"


def raw_text_edited(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "raw_logs")
    conn.execute(
        sa.update(raw_logs).where(raw_logs.c.id == s.raw_logs[0]).values(text="We agreed on 500 seats")
    )
    return f"raw_logs {s.raw_logs[0]}"


def raw_text_and_sha256_edited(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "raw_logs")
    forged = "We agreed on 500 seats"
    conn.execute(
        sa.update(raw_logs)
        .where(raw_logs.c.id == s.raw_logs[0])
        .values(text=forged, sha256=sha256_text(forged))
    )
    return f"raw_logs {s.raw_logs[0]}"


def raw_scope_actor_time_edited(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "raw_logs")
    row = conn.execute(sa.select(raw_logs).where(raw_logs.c.id == s.raw_logs[1])).one()
    conn.execute(
        sa.update(raw_logs)
        .where(raw_logs.c.id == s.raw_logs[1])
        .values(scope="initech", actor_id="someone-else", occurred_at=row.occurred_at - timedelta(days=30))
    )
    return f"raw_logs {s.raw_logs[1]}"


def _edit_raw_log(conn: sa.Connection, raw_log_id: str, **values: Any) -> str:
    unlock(conn, "raw_logs")
    conn.execute(sa.update(raw_logs).where(raw_logs.c.id == raw_log_id).values(**values))
    return f"raw_logs {raw_log_id}"


def raw_scope_edited(conn: sa.Connection, s: Scene) -> str:
    return _edit_raw_log(conn, s.raw_logs[1], scope="initech")


def raw_actor_edited(conn: sa.Connection, s: Scene) -> str:
    return _edit_raw_log(conn, s.raw_logs[1], actor_id="someone-else")


def raw_time_edited(conn: sa.Connection, s: Scene) -> str:
    row = conn.execute(sa.select(raw_logs.c.occurred_at).where(raw_logs.c.id == s.raw_logs[1])).one()
    return _edit_raw_log(conn, s.raw_logs[1], occurred_at=row.occurred_at - timedelta(days=30))


def raw_log_deleted(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "raw_logs")
    conn.execute(sa.delete(raw_log_states).where(raw_log_states.c.raw_log_id == s.raw_logs[1]))
    conn.execute(sa.delete(raw_logs).where(raw_logs.c.id == s.raw_logs[1]))
    return f"raw_logs {s.raw_logs[1]}"


def tail_changes_deleted_head_rolled_back(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "changes")
    rows = _changes(conn)
    keep = rows[:-2]
    conn.execute(sa.delete(changes).where(changes.c.seq > keep[-1].seq))
    conn.execute(sa.update(chain_head).values(last_seq=keep[-1].seq, last_hash=keep[-1].hash))
    return f"changes {rows[-2].seq}"


def forged_change_appended(conn: sa.Connection, s: Scene) -> str:
    rows = _changes(conn)
    last = rows[-1]
    note = conn.execute(sa.select(notes).where(notes.c.id == s.notes[0])).one()
    prop = conn.execute(
        sa.select(proposals.c.id).where(proposals.c.note_id == s.notes[0], proposals.c.attribute == "tags")
    ).scalar_one()
    fields: dict[str, Any] = dict(
        seq=last.seq + 1,
        note_id=s.notes[0],
        proposal_id=prop,
        attribute="tags",
        old_value=note.tags,
        new_value=["vip"],
        note_version=note.version + 1,
        actor_kind="llm",
        actor_id="offline",
        kind="apply",
        applied_at=utcnow(),
    )
    digest = change_hash(prev_hash=last.hash, **fields)
    conn.execute(sa.insert(changes).values(**fields, prev_hash=last.hash, hash=digest))
    conn.execute(sa.update(chain_head).values(last_seq=last.seq + 1, last_hash=digest))
    conn.execute(
        sa.update(notes).where(notes.c.id == s.notes[0]).values(tags=["vip"], version=note.version + 1)
    )
    return f"changes {last.seq + 1}"


def change_rewritten_later_hashes_recomputed(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "changes")
    seq = len(_changes(conn)) // 2
    conn.execute(sa.update(changes).where(changes.c.seq == seq).values(new_value=["forged"]))
    _rehash_changes(conn, seq)
    return f"changes {seq}"


def note_content_updated(conn: sa.Connection, s: Scene) -> str:
    conn.execute(
        sa.text("UPDATE notes SET content = 'We agreed on 500 seats' WHERE id = :i"), {"i": s.notes[0]}
    )
    return f"notes {s.notes[0]}"


def note_moved_to_another_scope(conn: sa.Connection, s: Scene) -> str:
    """Move a note to another customer's account: no value changes, so no change replays it."""
    conn.execute(sa.text("UPDATE notes SET scope = 'initech' WHERE id = :i"), {"i": s.notes[0]})
    return f"notes {s.notes[0]}"


def note_sources_edited(conn: sa.Connection, s: Scene) -> str:
    """Point a note at another raw log as its source (provenance forged)."""
    conn.execute(sa.update(notes).where(notes.c.id == s.notes[0]).values(raw_log_ids=[s.raw_logs[1]]))
    return f"notes {s.notes[0]}"


def note_backdated(conn: sa.Connection, s: Scene) -> str:
    row = conn.execute(sa.select(notes.c.created_at).where(notes.c.id == s.notes[1])).one()
    earlier = row.created_at - timedelta(days=90)
    conn.execute(sa.update(notes).where(notes.c.id == s.notes[1]).values(created_at=earlier))
    return f"notes {s.notes[1]}"


def proposal_status_forged(conn: sa.Connection, s: Scene) -> str:
    conn.execute(
        sa.text("UPDATE proposals SET status = 'approved', reviewer = 'alice' WHERE id = :i"),
        {"i": s.pending},
    )
    return f"proposals {s.pending}"


def decision_flipped(conn: sa.Connection, s: Scene) -> str:
    conn.execute(
        sa.text("UPDATE proposals SET status = 'approved', review_comment = 'ok' WHERE id = :i"),
        {"i": s.rejected},
    )
    return f"proposals {s.rejected}"


def llm_answer_edited(conn: sa.Connection, s: Scene) -> str:
    conn.execute(
        sa.update(llm_calls).where(llm_calls.c.id == s.llm_call).values(response_text='{"keywords": []}')
    )
    return f"llm_calls {s.llm_call}"


def token_maker_rewritten(conn: sa.Connection, s: Scene) -> str:
    unlock(conn, "token_events")
    conn.execute(sa.update(token_events).where(token_events.c.id == s.token_created).values(by="bob"))
    return f"token_events {s.token_created}"


def token_creation_forged(conn: sa.Connection, s: Scene) -> str:
    """A reviewer token for mallory, recorded as if amem had made it (api_tokens has no trigger)."""
    row = {
        "id": "tev_forged",
        "token_id": "tok_forged",
        "action": "created",
        "name": "mallory",
        "role": "reviewer",
        "by": "mallory",
        "at": utcnow(),
        "expires_at": None,
    }
    conn.execute(sa.insert(token_events), [row])
    return "token_events tev_forged"


def reviewer_token_planted(conn: sa.Connection, s: Scene) -> str:
    """A token of the attacker's own for alice, straight into api_tokens (which has no trigger):
    it would sign requests as alice."""
    conn.execute(
        sa.insert(api_tokens),
        [
            {
                "id": "tok_planted",
                "name": "alice",
                "role": "reviewer",
                "token_sha256": sha256_text("amem_the-attackers-own"),
                "created_at": utcnow(),
                "created_by": "alice",
            }
        ],
    )
    return "api_tokens tok_planted"


def revoked_token_restored(conn: sa.Connection, s: Scene) -> str:
    conn.execute(sa.update(api_tokens).where(api_tokens.c.id == s.revoked_token).values(revoked_at=None))
    return f"api_tokens {s.revoked_token}"


def token_scope_limit_lifted(conn: sa.Connection, s: Scene) -> str:
    """An agent token limited to acme made a token for every account (api_tokens has no trigger)."""
    conn.execute(sa.update(api_tokens).where(api_tokens.c.id == s.scoped_token).values(scopes=None))
    return f"api_tokens {s.scoped_token}"


def reviewer_token_digest_swapped(conn: sa.Connection, s: Scene) -> str:
    """alice's reviewer token row given the digest of a token the attacker knows (api_tokens has no
    trigger): that token then signs in as alice."""
    conn.execute(
        sa.update(api_tokens)
        .where(api_tokens.c.id == s.reviewer_token)
        .values(token_sha256=sha256_text("amem_the-attackers-own"))
    )
    return f"api_tokens {s.reviewer_token}"


def erased_change_rewritten(conn: sa.Connection, s: Scene) -> str:
    """After an erasure, the redacted content of the erased note's creation rewritten (the note too,
    so its replay agrees): its hash is verified from the digests of the values before the erasure."""
    unlock(conn, "changes")
    seq = conn.execute(
        sa.select(changes.c.seq)
        .where(changes.c.note_id == s.erased_note, changes.c.attribute == "content")
        .order_by(changes.c.seq)
    ).first()
    assert seq is not None
    forged = "Jane Doe admitted to fraud (see raw log)"
    conn.execute(sa.update(changes).where(changes.c.seq == seq[0]).values(new_value=forged))
    conn.execute(sa.update(notes).where(notes.c.id == s.erased_note).values(content=forged))
    return f"changes {seq[0]}"


def note_row_deleted(conn: sa.Connection, s: Scene) -> str:
    """A note's row deleted, and nothing else, with foreign keys not enforced: sqlite3's default
    (another connection, as the sqlite3 shell), a PostgreSQL superuser's replica role."""
    if conn.dialect.name == "sqlite":
        with closing(sqlite3.connect(str(conn.engine.url.database), isolation_level=None)) as raw:
            raw.execute("DELETE FROM notes WHERE id = ?", (s.notes[1],))
    else:
        conn.execute(sa.text("SET LOCAL session_replication_role = replica"))
        conn.execute(sa.delete(notes).where(notes.c.id == s.notes[1]))
    return f"notes {s.notes[1]}"


def chain_head_hash_edited(conn: sa.Connection, s: Scene) -> str:
    """The change chain head's hash edited, its seq left: the next change amem writes links to it."""
    conn.execute(sa.update(chain_head).values(last_hash="ab" * 32))
    return "chain_head"


def correction_unlinked(conn: sa.Connection, s: Scene) -> str:
    """A reviewer's correction passed off as their own idea: the link to the model's value it
    replaced removed (proposals has no trigger: its status moves)."""
    conn.execute(sa.update(proposals).where(proposals.c.id == s.correction).values(corrects=None))
    return f"proposals {s.correction}"


def forged_erasure_of_a_raw_log(conn: sa.Connection, s: Scene) -> str:
    """Hide a raw log's text behind a made-up erasure: the triggers let the redaction through once
    erased_rows lists the row, but the erasure itself is not in the event chain."""
    row = dict(conn.execute(sa.select(raw_logs).where(raw_logs.c.id == s.raw_logs[0])).one()._mapping)
    entry = {
        "erasure_id": "e_forged",
        "table_name": "raw_logs",
        "row_key": row["id"],
        "digest_before": payload_digest("raw_log", row),
        "digest_after": payload_digest("raw_log", {**row, "text": REDACTED, "metadata": {}}),
        "detail": None,
    }
    conn.execute(
        sa.insert(erasures).values(
            id="e_forged",
            reason="routine",
            erased_by="alice",
            erased_at=utcnow(),
            selector={"raw_log": row["id"], "scope": None, "actor": None},
            rows_sha256=erased_rows_digest([entry]),
        )
    )
    conn.execute(sa.insert(erased_rows).values(**entry))
    conn.execute(sa.update(raw_logs).where(raw_logs.c.id == row["id"]).values(text=REDACTED, metadata={}))
    return "erasures e_forged"


def _append_event(conn: sa.Connection, kind: str, subject: str, row: dict[str, Any]) -> None:
    """An event appended to the chain as amem appends one, the head moved to it: an extension, which
    a checkpoint taken before cannot tell from a legitimate write."""
    head = conn.execute(sa.select(chain_head)).one()
    at, seq = utcnow(), head.event_seq + 1
    digest = payload_digest(kind, row)
    new = event_hash(
        prev_hash=head.event_hash, seq=seq, kind=kind, subject=subject, payload_digest=digest, at=at
    )
    conn.execute(
        sa.insert(events).values(
            seq=seq,
            kind=kind,
            subject=subject,
            payload_digest=digest,
            at=at,
            prev_hash=head.event_hash,
            hash=new,
        )
    )
    conn.execute(sa.update(chain_head).values(event_seq=seq, event_hash=new))


def _forged_erasure(conn: sa.Connection, entries: list[dict[str, Any]]) -> None:
    """An erasure no one made, recorded as amem records one (row, entries, event)."""
    erasure = {
        "id": "e_forged",
        "reason": "data subject request",
        "erased_by": "alice",
        "erased_at": utcnow(),
        "selector": {"raw_log": "r_x", "scope": None, "actor": None},
        "rows_sha256": erased_rows_digest(entries),
    }
    conn.execute(sa.insert(erasures).values(**erasure))
    conn.execute(sa.insert(erased_rows), [{"erasure_id": "e_forged", **e} for e in entries])
    _append_event(conn, "erasure", "e_forged", erasure)


def change_rewritten_by_a_forged_erasure(conn: sa.Connection, s: Scene) -> str:
    """The approved decision_rationale change rewritten to a value of the attacker's, under cover of
    an erasure appended to the chain that records the forged value as what it left."""
    unlock(conn, "changes")
    target = conn.execute(
        sa.select(changes).where(changes.c.proposal_id == s.approved).order_by(changes.c.seq)
    ).first()
    assert target is not None
    forged = "auditor asked; escalate to legal"
    detail = {
        "old_value_sha256": value_digest(target.old_value),
        "new_value_sha256": value_digest(target.new_value),
        "redacted_old_value_sha256": value_digest(target.old_value),
        "redacted_new_value_sha256": value_digest(forged),
    }
    entry = {"table_name": "changes", "row_key": str(target.seq), "digest_before": None, "digest_after": None}
    _forged_erasure(conn, [{**entry, "detail": detail}])
    conn.execute(sa.update(changes).where(changes.c.seq == target.seq).values(new_value=forged))
    conn.execute(sa.update(notes).where(notes.c.id == target.note_id).values(decision_rationale=forged))
    return f"changes {target.seq}"


def decision_rewritten_by_a_forged_erasure(conn: sa.Connection, s: Scene) -> str:
    """bob's rejection turned into alice's approval, under cover of an erasure of its comment."""
    row = dict(conn.execute(sa.select(proposals).where(proposals.c.id == s.rejected)).one()._mapping)
    forged = {**row, "status": "approved", "reviewer": "alice", "review_comment": "agreed on the call"}
    entry = {
        "table_name": "decisions",
        "row_key": s.rejected,
        "digest_before": payload_digest("decision", row),
        "digest_after": payload_digest("decision", forged),
        "detail": None,
    }
    _forged_erasure(conn, [entry])
    conn.execute(
        sa.update(proposals)
        .where(proposals.c.id == s.rejected)
        .values(status="approved", reviewer="alice", review_comment="agreed on the call")
    )
    return f"proposals {s.rejected}"


def _forged_field_erasure(
    conn: sa.Connection, table: str, kind: str, key: str, row: dict[str, Any], forged: dict[str, Any]
) -> None:
    """A forged erasure of one row recorded as amem records one now, field digests included (the
    fields as they were, honestly, and as forged)."""
    entry = {
        "table_name": table,
        "row_key": key,
        "digest_before": payload_digest(kind, row),
        "digest_after": payload_digest(kind, forged),
        "detail": erased_row_detail(kind, row, forged),
    }
    _forged_erasure(conn, [entry])


def decision_status_changed_by_a_forged_erasure(conn: sa.Connection, s: Scene) -> str:
    """bob's rejection turned into an approval, its comment set to the marker as an erasure would,
    under cover of an erasure recorded with field digests: its whole-row digests all agree."""
    row = dict(conn.execute(sa.select(proposals).where(proposals.c.id == s.rejected)).one()._mapping)
    forged = {**row, "status": "approved", "review_comment": REDACTED}
    _forged_field_erasure(conn, "decisions", "decision", s.rejected, row, forged)
    conn.execute(
        sa.update(proposals)
        .where(proposals.c.id == s.rejected)
        .values(status="approved", review_comment=REDACTED)
    )
    return f"proposals {s.rejected}"


def proposal_attribute_changed_by_a_forged_erasure(conn: sa.Connection, s: Scene) -> str:
    """The pending proposal moved to another attribute (next_step), its reason set to the marker,
    under cover of an erasure recorded with field digests."""
    row = dict(conn.execute(sa.select(proposals).where(proposals.c.id == s.pending)).one()._mapping)
    forged = {**row, "attribute": "next_step", "reason": REDACTED}
    _forged_field_erasure(conn, "proposals", "proposal", s.pending, row, forged)
    conn.execute(
        sa.update(proposals).where(proposals.c.id == s.pending).values(attribute="next_step", reason=REDACTED)
    )
    return f"proposals {s.pending}"


def llm_call_changed_by_a_forged_erasure(conn: sa.Connection, s: Scene) -> str:
    """A model call's model and usage rewritten, its answer set to the marker, under cover of an
    erasure recorded with field digests."""
    row = dict(conn.execute(sa.select(llm_calls).where(llm_calls.c.id == s.llm_call)).one()._mapping)
    values = {"model": "gpt-4o", "prompt_tokens": 12000, "response_text": REDACTED}
    _forged_field_erasure(conn, "llm_calls", "llm_call", s.llm_call, row, {**row, **values})
    conn.execute(sa.update(llm_calls).where(llm_calls.c.id == s.llm_call).values(**values))
    return f"llm_calls {s.llm_call}"


def llm_answer_rewritten_by_a_forged_erasure(conn: sa.Connection, s: Scene) -> str:
    """A model call's answer made to say another keyword, under cover of an erasure recorded as
    amem records the rewrite of an answer (field digests, the answer's shape and kept strings)."""
    row = dict(conn.execute(sa.select(llm_calls).where(llm_calls.c.id == s.llm_call)).one()._mapping)
    answer = {"keywords": ["vip"]}
    forged = {**row, "response_text": json.dumps(answer)}
    entry = {
        "table_name": "llm_calls",
        "row_key": s.llm_call,
        "digest_before": payload_digest("llm_call", row),
        "digest_after": payload_digest("llm_call", forged),
        "detail": erased_row_detail("llm_call", row, forged, (json.loads(row["response_text"]), answer)),
    }
    _forged_erasure(conn, [entry])
    conn.execute(
        sa.update(llm_calls).where(llm_calls.c.id == s.llm_call).values(response_text=forged["response_text"])
    )
    return f"llm_calls {s.llm_call}"


def decision_flipped_by_a_bare_erasure(conn: sa.Connection, s: Scene) -> str:
    """bob's rejection turned into an approval under an erasure recorded as erasures were before
    field digests (whole-row digests only), in a ledger where amem has erased since: passed off as
    an older erasure."""
    row = dict(conn.execute(sa.select(proposals).where(proposals.c.id == s.rejected)).one()._mapping)
    forged = {**row, "status": "approved", "review_comment": REDACTED}
    entry = {
        "table_name": "decisions",
        "row_key": s.rejected,
        "digest_before": payload_digest("decision", row),
        "digest_after": payload_digest("decision", forged),
        "detail": None,
    }
    _forged_erasure(conn, [entry])
    conn.execute(
        sa.update(proposals)
        .where(proposals.c.id == s.rejected)
        .values(status="approved", review_comment=REDACTED)
    )
    return "erasures e_forged"


def decision_overturned_by_a_second_decision(conn: sa.Connection, s: Scene) -> str:
    """bob's rejection overturned by a second decision event appended to the chain (alice approves)."""
    at = utcnow()
    decision = {
        "id": s.rejected,
        "status": "approved",
        "reviewer": "alice",
        "review_comment": "ok",
        "reviewed_at": at,
    }
    _append_event(conn, "decision", s.rejected, decision)
    conn.execute(
        sa.update(proposals)
        .where(proposals.c.id == s.rejected)
        .values(status="approved", reviewer="alice", review_comment="ok", reviewed_at=at)
    )
    return f"proposals {s.rejected}"


def token_recreated_without_its_scope_limit(conn: sa.Connection, s: Scene) -> str:
    """The acme-only agent token given every account, behind a second 'created' record of it."""
    token = dict(conn.execute(sa.select(api_tokens).where(api_tokens.c.id == s.scoped_token)).one()._mapping)
    row = {
        "id": "tev_forged",
        "token_id": token["id"],
        "action": "created",
        "name": token["name"],
        "role": token["role"],
        "by": token["created_by"],
        "at": utcnow(),
        "expires_at": token["expires_at"],
        "scopes": None,
        "token_sha256": token["token_sha256"],
    }
    conn.execute(sa.insert(token_events), [row])
    _append_event(conn, "token", "tev_forged", row)
    conn.execute(sa.update(api_tokens).where(api_tokens.c.id == s.scoped_token).values(scopes=None))
    return f"api_tokens {s.scoped_token}"


def token_maker_rewritten_in_api_tokens(conn: sa.Connection, s: Scene) -> str:
    """Who made alice's reviewer token rewritten where `amem tokens list` reads it (no trigger)."""
    conn.execute(sa.update(api_tokens).where(api_tokens.c.id == s.reviewer_token).values(created_by="bob"))
    return f"api_tokens {s.reviewer_token}"


def token_revocation_backdated(conn: sa.Connection, s: Scene) -> str:
    """A revoked agent token's revocation moved back a year (api_tokens has no trigger)."""
    revoked = conn.execute(
        sa.select(api_tokens.c.revoked_at).where(api_tokens.c.id == s.revoked_token)
    ).scalar()
    conn.execute(
        sa.update(api_tokens)
        .where(api_tokens.c.id == s.revoked_token)
        .values(revoked_at=revoked - timedelta(days=365))
    )
    return f"api_tokens {s.revoked_token}"


def full_truncate_every_chain(conn: sa.Connection, s: Scene) -> str:
    """Remove the last note and everything after the cut, and roll both chains' heads back to match."""
    unlock(conn, "changes", "raw_logs", "events", "token_events")
    gone = [e for e in _events(conn) if e.seq > s.cut_event_seq]
    subjects: dict[str, list[str]] = {}
    for e in gone:
        subjects.setdefault(e.kind, []).append(e.subject)
    conn.execute(sa.delete(changes).where(changes.c.seq.in_([int(x) for x in subjects.get("change", [])])))
    conn.execute(sa.delete(proposals).where(proposals.c.id.in_(subjects.get("proposal", []))))
    # the model calls behind the removed proposals (those name them, so they go first)
    conn.execute(sa.delete(llm_calls).where(llm_calls.c.id.in_(subjects.get("llm_call", []))))
    conn.execute(sa.delete(notes).where(notes.c.id == s.notes[2]))
    conn.execute(
        sa.delete(raw_log_states).where(raw_log_states.c.raw_log_id.in_(subjects.get("raw_log", [])))
    )
    conn.execute(sa.delete(raw_logs).where(raw_logs.c.id.in_(subjects.get("raw_log", []))))
    dropped = sa.select(token_events.c.token_id).where(token_events.c.id.in_(subjects.get("token", [])))
    conn.execute(sa.delete(api_tokens).where(api_tokens.c.id.in_(dropped)))
    conn.execute(sa.delete(token_events).where(token_events.c.id.in_(subjects.get("token", []))))
    conn.execute(sa.delete(events).where(events.c.seq > s.cut_event_seq))
    last_change = _changes(conn)[-1]
    last_event = _events(conn)[-1]
    conn.execute(
        sa.update(chain_head).values(
            last_seq=last_change.seq,
            last_hash=last_change.hash,
            event_seq=last_event.seq,
            event_hash=last_event.hash,
        )
    )
    return "checkpoint line 1"


def full_rewrite_every_hash(conn: sa.Connection, s: Scene) -> str:
    """Change the last note's tags in its change and its row, then recompute both chains entirely."""
    unlock(conn, "changes", "events")
    target = conn.execute(
        sa.select(changes)
        .where(changes.c.note_id == s.notes[2], changes.c.attribute == "tags")
        .order_by(changes.c.seq.desc())
    ).first()
    assert target is not None
    conn.execute(sa.update(changes).where(changes.c.seq == target.seq).values(new_value=["forged"]))
    conn.execute(sa.update(notes).where(notes.c.id == s.notes[2]).values(tags=["forged"]))
    _rehash_changes(conn, target.seq)
    _rehash_events(conn)
    return "checkpoint line 1"


def full_forged_append(conn: sa.Connection, s: Scene) -> str | None:
    """A complete, consistent append after the checkpoint: proposal, decision, change, events, note.

    Indistinguishable from a legitimate write by anyone without a secret the writer holds: a
    checkpoint proves the past, not what comes after it. Returns None: not detected, by design."""
    now = utcnow()
    note = conn.execute(sa.select(notes).where(notes.c.id == s.notes[0])).one()
    head = conn.execute(sa.select(chain_head)).one()
    pid = new_id("p")
    prow: dict[str, Any] = dict(
        id=pid,
        seq=head.proposal_seq + 1,
        note_id=note.id,
        scope=note.scope,
        attribute="tags",
        old_value=note.tags,
        new_value=["vip"],
        base_version=note.version,
        reason="forged",
        evidence=None,
        proposer_kind="llm",
        proposer_id="offline",
        model=None,
        prompt_version=None,
        usage=None,
        llm_call_id=None,
        raw_log_ids=[],
        rule="attribute tags -> auto",
        policy_sha256=None,
        status="auto_applied",
        reviewer=None,
        review_comment=None,
        reviewed_at=None,
        created_at=now,
        revert_of=None,
    )
    conn.execute(sa.insert(proposals).values(**prow))
    cfields: dict[str, Any] = dict(
        seq=head.last_seq + 1,
        note_id=note.id,
        proposal_id=pid,
        attribute="tags",
        old_value=note.tags,
        new_value=["vip"],
        note_version=note.version + 1,
        actor_kind="llm",
        actor_id="offline",
        kind="apply",
        applied_at=now,
    )
    chash = change_hash(prev_hash=head.last_hash, **cfields)
    conn.execute(sa.insert(changes).values(**cfields, prev_hash=head.last_hash, hash=chash))
    conn.execute(
        sa.update(notes)
        .where(notes.c.id == note.id)
        .values(tags=["vip"], version=note.version + 1, updated_at=now)
    )
    seq, prev = head.event_seq, head.event_hash
    for kind, subject, row in (
        ("proposal", pid, prow),
        ("decision", pid, prow),
        ("change", str(cfields["seq"]), {"seq": cfields["seq"], "hash": chash}),
    ):
        seq += 1
        digest = payload_digest(kind, row)
        new = event_hash(prev_hash=prev, seq=seq, kind=kind, subject=subject, payload_digest=digest, at=now)
        conn.execute(
            sa.insert(events).values(
                seq=seq, kind=kind, subject=subject, payload_digest=digest, at=now, prev_hash=prev, hash=new
            )
        )
        prev = new
    conn.execute(
        sa.update(chain_head).values(
            last_seq=cfields["seq"],
            last_hash=chash,
            proposal_seq=head.proposal_seq + 1,
            event_seq=seq,
            event_hash=prev,
        )
    )
    return None


Case = Callable[[sa.Connection, Scene], "str | None"]

#: The cases of issue 13, in its order, then the ones added here.
ISSUE_CASES: dict[str, Case] = {
    "edited change row": edited_change_row,
    "deleted middle change": deleted_middle_change,
    "swapped sequence numbers": swapped_seqs,
    "raw log text edited, sha256 left": raw_text_edited,
    "raw log text and sha256 edited": raw_text_and_sha256_edited,
    "raw log scope/actor/time edited": raw_scope_actor_time_edited,
    "raw log scope alone edited": raw_scope_edited,
    "raw log actor alone edited": raw_actor_edited,
    "raw log time alone edited": raw_time_edited,
    "raw log deleted": raw_log_deleted,
    "last changes deleted, chain_head rolled back": tail_changes_deleted_head_rolled_back,
    "forged change appended, hash recomputed": forged_change_appended,
    "change rewritten, later hashes recomputed": change_rewritten_later_hashes_recomputed,
    "UPDATE notes SET content": note_content_updated,
    "UPDATE proposals SET status=approved, reviewer": proposal_status_forged,
}
ADDED_CASES: dict[str, Case] = {
    "rejection flipped to approved": decision_flipped,
    "model answer edited": llm_answer_edited,
    "note moved to another scope": note_moved_to_another_scope,
    "note's source raw logs edited": note_sources_edited,
    "note backdated (created_at)": note_backdated,
    "raw log hidden behind a forged erasure": forged_erasure_of_a_raw_log,
    "who made a reviewer token rewritten": token_maker_rewritten,
    "a token's creation forged": token_creation_forged,
    "a reviewer token planted in api_tokens": reviewer_token_planted,
    "a revoked token restored": revoked_token_restored,
    "an agent token's scope limit lifted": token_scope_limit_lifted,
    "a correction's link to the value it replaced removed": correction_unlinked,
    "a reviewer token's digest swapped for the attacker's": reviewer_token_digest_swapped,
    "an erased change's value rewritten": erased_change_rewritten,
    "a note's row deleted": note_row_deleted,
    "the change chain head's hash edited": chain_head_hash_edited,
    "tail truncated, both chains and heads rolled back": full_truncate_every_chain,
    "change rewritten, both chains rehashed": full_rewrite_every_hash,
    "a change rewritten under cover of a forged erasure": change_rewritten_by_a_forged_erasure,
    "a decision rewritten under cover of a forged erasure": decision_rewritten_by_a_forged_erasure,
    "a decision overturned by a second decision event": decision_overturned_by_a_second_decision,
    "a token's scope limit lifted by a second creation record": token_recreated_without_its_scope_limit,
    "who made a token rewritten in api_tokens": token_maker_rewritten_in_api_tokens,
    "a decision's status changed under a forged erasure": decision_status_changed_by_a_forged_erasure,
    "a proposal's attribute changed under a forged erasure": proposal_attribute_changed_by_a_forged_erasure,
    "a model call's model and usage changed under a forged erasure": llm_call_changed_by_a_forged_erasure,
    "a decision flipped under an erasure without field digests": decision_flipped_by_a_bare_erasure,
    "a model answer rewritten under a forged erasure": llm_answer_rewritten_by_a_forged_erasure,
    "a token's revocation backdated in api_tokens": token_revocation_backdated,
}
#: Cases no verification can catch (documented limits), run by bench/tamper.py.
UNDETECTABLE_CASES: dict[str, Case] = {
    "complete forged append after the checkpoint": full_forged_append,
}
#: Cases whose ledger holds an erasure (``build(erased=True)``).
NEEDS_ERASURE = {
    "an erased change's value rewritten",
    "a decision flipped under an erasure without field digests",
}
#: What each forged-erasure case's report must name besides the row: the field it changed.
NAMED_FIELD = {
    "a decision's status changed under a forged erasure": "'s status was changed by erasure e_forged",
    "a proposal's attribute changed under a forged erasure": "'s attribute was changed by erasure e_forged",
    "a model call's model and usage changed under a forged erasure": "'s model was changed by erasure",
    "a decision flipped under an erasure without field digests": "records no field digests of decisions",
    "a model answer rewritten under a forged erasure": "'s response text is not a redaction",
}
#: Cases only a checkpoint can catch: the attacker recomputed every hash.
NEEDS_CHECKPOINT = {
    "tail truncated, both chains and heads rolled back",
    "change rewritten, both chains rehashed",
}
ALL_CASES: dict[str, Case] = {**ISSUE_CASES, **ADDED_CASES, **UNDETECTABLE_CASES}


def tamper(mem: Memory, case: Case, scene: Scene) -> str | None:
    """Run ``case`` on ``mem``'s database in one transaction, outside amem; returns the row to name."""
    with mem.ledger.engine.begin() as conn:
        return case(conn, scene)
