"""Erasures an older amem recorded, finished where the store still showed them: each erased input's
queue state ``erased``, each note made from an erased input marked deleted (by the first erasure in
time that erased one of its inputs). Not done, as an erasure does now: a kept input that restated
the erased note gets no proposal of its values again, and values redacted in place on kept notes
get no change of their own in the change feed (the redaction itself stands, recorded then).

Before 2026-12-05 (b08cc18, 7c99558) an erasure redacted its inputs' notes but left them live:
"[erased]" stayed in the notes listed, in search (as of any moment too), among the link step's
neighbours and in the account's facts, and the inputs kept their queue state (a retry of one read
as recorded, not erased; one still queued or failed could be analysed again, from the marker).
Each such note gets the tombstone an erasure makes today (``Governance.tombstone_in``): an approved
proposal (rule ``erasure -> applied``, by the person who erased, reason ``erasure <id>``) and its
change, chained at the end of both chains now, so nothing recorded before changes and `amem verify`
still proves the chains; its stored vector goes, as an erasure's does. A downgrade keeps them:
history is never rewritten.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-07
"""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from amem.domain.hashing import change_hash, event_hash, payload_digest
from amem.domain.models import ERASURE_RULE, new_id, utcnow
from amem.ledger.tables import ExactJSON, UTCDateTime

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CHUNK = 500

# The columns this migration reads or writes, as they stand at 0026 (not the tables of a later amem).
_NOTES = sa.table(
    "notes",
    sa.column("id"),
    sa.column("scope"),
    sa.column("raw_log_ids", ExactJSON()),
    sa.column("deleted", sa.Boolean),
    sa.column("version", sa.Integer),
    sa.column("created_at", UTCDateTime),
    sa.column("updated_at", UTCDateTime),
)
_STATES = sa.table(
    "raw_log_states",
    sa.column("raw_log_id"),
    sa.column("state"),
    sa.column("lease_owner"),
    sa.column("lease_until", UTCDateTime),
    sa.column("error"),
    sa.column("updated_at", UTCDateTime),
)
_PROPOSALS = sa.table(
    "proposals",
    *(sa.column(c) for c in ("id", "note_id", "scope", "attribute", "reason", "evidence", "proposer_kind")),
    *(sa.column(c) for c in ("proposer_id", "model", "prompt_version", "llm_call_id", "rule", "status")),
    *(sa.column(c) for c in ("reviewer", "review_comment", "policy_sha256")),
    *(sa.column(c, sa.Integer) for c in ("seq", "base_version", "revert_of")),
    *(sa.column(c, ExactJSON()) for c in ("old_value", "new_value", "usage", "raw_log_ids")),
    *(sa.column(c, UTCDateTime) for c in ("reviewed_at", "created_at")),
)
_CHANGES = sa.table(
    "changes",
    *(sa.column(c) for c in ("note_id", "proposal_id", "attribute", "actor_kind", "actor_id", "kind")),
    *(sa.column(c) for c in ("prev_hash", "hash")),
    *(sa.column(c, sa.Integer) for c in ("seq", "note_version")),
    *(sa.column(c, ExactJSON()) for c in ("old_value", "new_value")),
    sa.column("applied_at", UTCDateTime),
)
_EVENTS = sa.table(
    "events",
    *(sa.column(c) for c in ("seq", "kind", "subject", "payload_digest", "prev_hash", "hash")),
    sa.column("at", UTCDateTime),
)


def upgrade() -> None:
    conn = op.get_bind()
    # each erased raw log and the first erasure that erased it (whose eraser decides its notes' end)
    erased: dict[str, tuple[int, str, str]] = {}  # raw log -> (the erasure's rank by time, id, by)
    for rank, (raw_log_id, erasure_id, erased_by) in enumerate(
        conn.execute(
            sa.text(
                "SELECT r.row_key, e.id, e.erased_by FROM erased_rows r"
                " JOIN erasures e ON e.id = r.erasure_id"
                " WHERE r.table_name = 'raw_logs' ORDER BY e.erased_at, e.id"
            )
        )
    ):
        erased.setdefault(str(raw_log_id), (rank, str(erasure_id), str(erased_by)))
    if not erased:
        return
    now = utcnow()
    ids = sorted(erased)
    scopes: set[str] = set()
    for part in _chunks(ids):
        conn.execute(
            sa.update(_STATES)
            .where(_STATES.c.raw_log_id.in_(part), _STATES.c.state != "erased")
            .values(state="erased", lease_owner=None, lease_until=None, error=None, updated_at=now)
        )
        found = sa.text("SELECT DISTINCT scope FROM raw_logs WHERE id IN :ids")
        scopes |= set(
            conn.execute(found.bindparams(sa.bindparam("ids", expanding=True)), {"ids": part}).scalars()
        )
    live = conn.execute(
        sa.select(_NOTES.c.id, _NOTES.c.scope, _NOTES.c.raw_log_ids, _NOTES.c.version)
        .where(_NOTES.c.scope.in_(sorted(scopes)), _NOTES.c.deleted.is_(False))
        .order_by(_NOTES.c.created_at, _NOTES.c.id)
    ).all()
    doomed = []
    for note in live:
        erasures = sorted({erased[r] for r in note.raw_log_ids or [] if r in erased})
        if erasures:  # the first erasure in time that erased one of its raw logs
            _, erasure_id, by = erasures[0]
            doomed.append((note, (erasure_id, by)))
    if doomed:
        _tombstones(conn, doomed, now)


def downgrade() -> None:
    # History is never rewritten: the tombstones and the queue states stay, as an erasure's do.
    pass


def _tombstones(conn: sa.Connection, doomed: list[tuple[Any, tuple[str, str]]], now: datetime) -> None:
    """Each note deleted as its eraser: a proposal, its decision and its change, chained now."""
    lock = " FOR UPDATE" if conn.dialect.name == "postgresql" else ""
    head = dict(
        conn.execute(
            sa.text(
                "SELECT last_seq, last_hash, proposal_seq, event_seq, event_hash FROM chain_head WHERE id = 1"
                + lock
            )
        )
        .mappings()
        .one()
    )
    policy = conn.execute(
        sa.text("SELECT sha256 FROM policy_versions ORDER BY version DESC LIMIT 1")
    ).scalar_one_or_none()
    proposal_rows: list[dict[str, Any]] = []
    change_rows: list[dict[str, Any]] = []
    chained: list[dict[str, Any]] = []

    def chain(kind: str, subject: str, row: dict[str, Any]) -> None:
        seq = head["event_seq"] + 1
        digest = payload_digest(kind, row)
        new = event_hash(
            prev_hash=head["event_hash"], seq=seq, kind=kind, subject=subject, payload_digest=digest, at=now
        )
        chained.append(
            {"seq": seq, "kind": kind, "subject": subject, "payload_digest": digest, "at": now,
             "prev_hash": head["event_hash"], "hash": new}
        )  # fmt: skip
        head["event_seq"], head["event_hash"] = seq, new

    versions: dict[str, int] = {}
    for note, (erasure_id, by) in doomed:
        head["proposal_seq"] += 1
        why = f"erasure {erasure_id}"
        proposal = {
            "id": new_id("p"),
            "seq": head["proposal_seq"],
            "note_id": note.id,
            "scope": note.scope,
            "attribute": "deleted",
            "old_value": False,
            "new_value": True,
            "base_version": note.version,
            "reason": why,
            "evidence": None,
            "proposer_kind": "person",
            "proposer_id": by,
            "model": None,
            "prompt_version": None,
            "usage": None,
            "llm_call_id": None,
            "raw_log_ids": [],
            "rule": ERASURE_RULE,
            "status": "approved",
            "reviewer": by,
            "review_comment": f"{why} (its note marked deleted on upgrade, migration 0027)",
            "reviewed_at": now,
            "created_at": now,
            "revert_of": None,
            "policy_sha256": policy,
        }
        proposal_rows.append(proposal)
        chain("proposal", proposal["id"], proposal)
        chain("decision", proposal["id"], proposal)
        fields = {
            "seq": head["last_seq"] + 1,
            "note_id": note.id,
            "proposal_id": proposal["id"],
            "attribute": "deleted",
            "old_value": False,
            "new_value": True,
            "note_version": note.version + 1,
            "kind": "apply",
            "applied_at": now,
        }
        digest = change_hash(prev_hash=head["last_hash"], actor_kind="person", actor_id=by, **fields)
        change = {
            **fields,
            "actor_kind": "person",
            "actor_id": by,
            "prev_hash": head["last_hash"],
            "hash": digest,
        }
        change_rows.append(change)
        chain("change", str(change["seq"]), change)
        head["last_seq"], head["last_hash"] = change["seq"], digest
        versions[note.id] = note.version + 1
    conn.execute(sa.insert(_PROPOSALS), proposal_rows)
    conn.execute(sa.insert(_CHANGES), change_rows)
    conn.execute(sa.insert(_EVENTS), chained)
    for note_id, version in versions.items():
        conn.execute(
            sa.update(_NOTES)
            .where(_NOTES.c.id == note_id)
            .values(deleted=True, version=version, updated_at=now)
        )
    for part in _chunks(sorted(versions)):  # derived from the erased text: never needed again
        delete = sa.text("DELETE FROM note_vectors WHERE note_id IN :ids")
        conn.execute(delete.bindparams(sa.bindparam("ids", expanding=True)), {"ids": part})
    conn.execute(
        sa.text(
            "UPDATE chain_head SET last_seq = :last_seq, last_hash = :last_hash, "
            "proposal_seq = :proposal_seq, event_seq = :event_seq, event_hash = :event_hash WHERE id = 1"
        ),
        head,
    )


def _chunks(items: list[str]) -> list[list[str]]:
    return [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)]
