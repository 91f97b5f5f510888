"""SQL of erasure: finding what an erasure reaches and writing its redactions.

The raw_logs and changes triggers let an UPDATE through only for rows erased_rows lists (migration
0008), so the entries are inserted before the rows are redacted, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import suppress
from typing import Any

import sqlalchemy as sa

from amem.domain.identity import canonical_identity, split_kind
from amem.domain.models import ActorKind, ProposalStatus, RawLogState, same_scope
from amem.errors import InvalidInputError
from amem.ledger.store import LedgerTx
from amem.ledger.tables import (
    changes,
    erased_rows,
    erasures,
    llm_calls,
    note_vectors,
    notes,
    proposals,
    raw_log_states,
    raw_logs,
)

CHUNK = 500
#: Who edits a note's values by hand (their proposals carry no model call).
_EDITORS = (ActorKind.PERSON.value, ActorKind.AGENT.value)


def raw_log_ids(tx: LedgerTx, *, raw_log_id: str | None, scope: str | None, actor: str | None) -> list[str]:
    stmt = sa.select(raw_logs.c.id).order_by(raw_logs.c.seq)
    if raw_log_id is not None:
        stmt = stmt.where(raw_logs.c.id == raw_log_id)
    if scope is not None:
        stmt = stmt.where(raw_logs.c.scope.in_(scopes_named(tx, scope)))
    if actor is not None:
        kind, names = _actor_selector(actor)
        if kind is not None:
            stmt = stmt.where(raw_logs.c.actor_kind == kind)
        stmt = stmt.where(raw_logs.c.actor_id.in_(names))
    return list(tx.conn.execute(stmt).scalars())


def _actor_selector(actor: str) -> tuple[str | None, list[str]]:
    """The kind (None: any) and the names an ``--actor`` selector matches. Stored actors are
    canonical (``Actor.parse``: NFKC, case-folded), so the typed name is put in that form too:
    "Jane Doe" and "Agent:jane doe" find ``agent:jane doe``. The name as typed is kept beside it,
    for an actor stored before identities were canonical."""
    kind, ident = split_kind(actor)
    names = [ident]
    # no canonical form (an invisible character): only a name stored as typed matches
    with suppress(InvalidInputError):
        names.append(canonical_identity(ident, what="actor"))
    return kind, sorted(set(names))


def kept_scopes(tx: LedgerTx) -> list[str]:
    """Every scope raw logs were kept under, each spelling once, in order: read as a loose index scan
    (the next scope after each, from raw_logs' scope index), so its cost grows with the scopes, not
    with the raw logs: cheap enough for each `amem add`."""
    first = sa.select(sa.func.min(raw_logs.c.scope).label("scope")).cte("kept", recursive=True)
    after = sa.select(sa.func.min(raw_logs.c.scope)).where(raw_logs.c.scope > first.c.scope)
    kept = first.union_all(sa.select(after.scalar_subquery()).where(first.c.scope.is_not(None)))
    return list(tx.conn.execute(sa.select(kept.c.scope).where(kept.c.scope.is_not(None))).scalars())


def scopes_named(tx: LedgerTx, scope: str) -> list[str]:
    """The scopes of raw logs that ``scope`` names ignoring case: what erasing it reaches."""
    return same_scope(scope, kept_scopes(tx))


def scopes_of(tx: LedgerTx, ids: Sequence[str]) -> list[str]:
    """The scopes of the raw logs ``ids``, each spelling once, sorted."""
    found: set[str] = set()
    for part in _chunks(list(ids)):
        stmt = sa.select(raw_logs.c.scope).where(raw_logs.c.id.in_(part)).distinct()
        found.update(tx.conn.execute(stmt).scalars())
    return sorted(found)


def _chunks(ids: Sequence[str]) -> list[list[str]]:
    return [list(ids[i : i + CHUNK]) for i in range(0, len(ids), CHUNK)]


def rows(tx: LedgerTx, table_name: str, column: str, values: Sequence[Any]) -> list[dict[str, Any]]:
    """Rows of a table whose ``column`` is one of ``values``, as stored."""
    table = {t.name: t for t in (raw_logs, llm_calls, notes, proposals, changes)}[table_name]
    out: list[dict[str, Any]] = []
    for part in _chunks(list(values)):
        out += [dict(r._mapping) for r in tx.conn.execute(sa.select(table).where(table.c[column].in_(part)))]
    return out


def answered_calls(tx: LedgerTx, scopes: Sequence[str], since: Any) -> Iterator[dict[str, Any]]:
    """Model calls with an answer, made at or after ``since`` for raw logs of ``scopes``: the link
    steps that could have answered about a note of those scopes as a neighbour (neighbours are
    drawn from the new note's own scope, among notes made before it). Streamed: a scope's calls
    can be many, and few of them name an erased note."""
    stmt = (
        sa.select(llm_calls)
        .join(raw_logs, raw_logs.c.id == llm_calls.c.raw_log_id)
        .where(
            raw_logs.c.scope.in_(sorted(set(scopes))),
            llm_calls.c.created_at >= since,
            llm_calls.c.response_text.is_not(None),
        )
    )
    for r in tx.conn.execute(stmt.execution_options(yield_per=CHUNK)):
        yield dict(r._mapping)


def scope_texts(tx: LedgerTx, scopes: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(id, text) of every raw log of ``scopes``, streamed: what the erasure compares the erased
    texts' identifying words with (a word a kept input holds identifies nothing erased)."""
    stmt = sa.select(raw_logs.c.id, raw_logs.c.text).where(raw_logs.c.scope.in_(sorted(set(scopes))))
    result = tx.conn.execute(stmt.execution_options(yield_per=CHUNK))
    try:  # a caller may stop early: the cursor is closed then, not left open in the transaction
        for r in result:
            yield r.id, r.text
    finally:
        result.close()


def values_since(tx: LedgerTx, scopes: Sequence[str], since: Any, task: str) -> Iterator[dict[str, Any]]:
    """Proposals of ``scopes`` made at or after ``since`` by a model call of ``task``, or by a person
    or an agent (an edit), with their note, attribute, proposed value, reason and evidence: what a
    later link step, or someone who had read an erased input, could have written from it. Streamed."""
    stmt = (
        sa.select(
            proposals.c.id,
            proposals.c.note_id,
            proposals.c.attribute,
            proposals.c.new_value,
            proposals.c.reason,
            proposals.c.evidence,
        )
        .outerjoin(llm_calls, llm_calls.c.id == proposals.c.llm_call_id)
        .where(
            proposals.c.scope.in_(sorted(set(scopes))),
            proposals.c.created_at >= since,
            sa.or_(llm_calls.c.task == task, proposals.c.proposer_kind.in_(_EDITORS)),
        )
    )
    for r in tx.conn.execute(stmt.execution_options(yield_per=CHUNK)):
        yield dict(r._mapping)


def comments_since(tx: LedgerTx, scopes: Sequence[str], since: Any) -> Iterator[dict[str, Any]]:
    """Reviewers' comments on proposals of ``scopes`` decided at or after ``since`` (when the comment
    was written, whenever the proposal was made). Streamed."""
    stmt = sa.select(
        proposals.c.id, proposals.c.note_id, proposals.c.attribute, proposals.c.review_comment
    ).where(
        proposals.c.scope.in_(sorted(set(scopes))),
        proposals.c.reviewed_at >= since,
        proposals.c.reviewer.is_not(None),
        proposals.c.review_comment.is_not(None),
    )
    for r in tx.conn.execute(stmt.execution_options(yield_per=CHUNK)):
        yield dict(r._mapping)


def notes_of_raw_logs(tx: LedgerTx, ids: Sequence[str], scopes: Sequence[str]) -> list[str]:
    """Notes made from any of ``ids`` (a note lives in its raw logs' scope, so only those are read)."""
    wanted = set(ids)
    stmt = sa.select(notes.c.id, notes.c.raw_log_ids).where(notes.c.scope.in_(sorted(set(scopes))))
    return sorted(n for n, raw in tx.conn.execute(stmt) if wanted & set(raw or []))


def notes_by_raw_log(tx: LedgerTx, ids: Sequence[str], scopes: Sequence[str]) -> dict[str, list[str]]:
    """The notes made from each of ``ids``, read in one pass over ``scopes``' notes."""
    wanted = set(ids)
    out: dict[str, list[str]] = {}
    stmt = sa.select(notes.c.id, notes.c.raw_log_ids).where(notes.c.scope.in_(sorted(set(scopes))))
    for note_id, raw in tx.conn.execute(stmt.order_by(notes.c.id)):
        for raw_log_id in wanted & set(raw or []):
            out.setdefault(raw_log_id, []).append(note_id)
    return out


def proposals_reached(
    tx: LedgerTx,
    note_ids: Sequence[str],
    call_ids: Sequence[str],
    raw_log_ids: Sequence[str],
    scopes: Sequence[str],
    since: Any,
) -> list[dict[str, Any]]:
    """Proposals of the erased notes, those on other notes made by the erased raw logs' model calls,
    and those made from the erased raw logs by no model call: a reviewer's correction carries the
    corrected proposal's raw logs and evidence (a span of the input), not its model call."""
    by_id = {p["id"]: p for p in rows(tx, "proposals", "note_id", note_ids)}
    by_id |= {p["id"]: p for p in rows(tx, "proposals", "llm_call_id", call_ids)}
    wanted = set(raw_log_ids)
    # made after the earliest erased input was received, in its scopes (a proposal cites raw logs
    # of its own scope): only their ids and sources are read, the rows of those that cite one
    stmt = sa.select(proposals.c.id, proposals.c.raw_log_ids).where(
        proposals.c.scope.in_(sorted(set(scopes))), proposals.c.created_at >= since
    )
    citing = [pid for pid, raw in tx.conn.execute(stmt) if pid not in by_id and wanted & set(raw or [])]
    by_id |= {p["id"]: p for p in rows(tx, "proposals", "id", citing)}
    return sorted(by_id.values(), key=lambda p: p["seq"])


def pair_rows(tx: LedgerTx, table_name: str, pairs: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """Rows of proposals or changes on any (note, attribute) of ``pairs``."""
    note_ids = sorted({n for n, _ in pairs})
    return [r for r in rows(tx, table_name, "note_id", note_ids) if (r["note_id"], r["attribute"]) in pairs]


def earlier_entries(tx: LedgerTx, table_name: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The first erased_rows entry of each of ``keys`` (a row erased before keeps its original digests)."""
    out: dict[str, dict[str, Any]] = {}
    for part in _chunks(list(keys)):
        stmt = (
            sa.select(erased_rows, erasures.c.erased_at)
            .join(erasures)
            .where(erased_rows.c.table_name == table_name, erased_rows.c.row_key.in_(part))
            .order_by(erasures.c.erased_at)
        )
        for r in tx.conn.execute(stmt):
            out.setdefault(r.row_key, dict(r._mapping))
    return out


def erased_before(tx: LedgerTx, raw_log_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The raw logs of ``raw_log_ids`` an erasure already erased, each with the one that did (its
    ``erasure_id``, ``erased_by``, ``erased_at``): what a second request for them finds done."""
    out: dict[str, dict[str, Any]] = {}
    for part in _chunks(list(raw_log_ids)):
        stmt = (
            sa.select(erased_rows.c.row_key, erasures.c.id, erasures.c.erased_by, erasures.c.erased_at)
            .join(erasures)
            .where(erased_rows.c.table_name == "raw_logs", erased_rows.c.row_key.in_(part))
            .order_by(erasures.c.erased_at)
        )
        for r in tx.conn.execute(stmt):
            out.setdefault(
                r.row_key, {"erasure_id": r.id, "erased_by": r.erased_by, "erased_at": r.erased_at}
            )
    return out


def record(tx: LedgerTx, erasure: dict[str, Any], entries: Sequence[dict[str, Any]]) -> None:
    tx.conn.execute(sa.insert(erasures), [erasure])
    for start in range(0, len(entries), CHUNK):
        tx.conn.execute(sa.insert(erased_rows), list(entries[start : start + CHUNK]))


def redact(tx: LedgerTx, table_name: str, key: str, updates: Sequence[dict[str, Any]]) -> None:
    """Write each update (``key`` and the redacted columns) to its row."""
    table = {t.name: t for t in (raw_logs, llm_calls, proposals, changes)}[table_name]
    for u in updates:
        values = {k: v for k, v in u.items() if k != key}
        tx.conn.execute(sa.update(table).where(table.c[key] == u[key]).values(**values))


def mark_erased(tx: LedgerTx, ids: Sequence[str], now: Any) -> None:
    """Take the erased inputs out of the queue: a worker holding one loses its claim, so an analysis
    of the text as it was before the erasure is never applied, and none is started."""
    for part in _chunks(list(ids)):
        tx.conn.execute(
            sa.update(raw_log_states)
            .where(raw_log_states.c.raw_log_id.in_(part))
            .values(
                state=RawLogState.ERASED.value, lease_owner=None, lease_until=None, error=None, updated_at=now
            )
        )


def withdraw(tx: LedgerTx, proposal_ids: Sequence[str], comment: str, now: Any) -> None:
    """Close pending proposals as superseded, each with its decision event, as a newer suggestion
    closes an older one (``LedgerTx.supersede_pending``)."""
    for part in _chunks(list(proposal_ids)):
        tx.conn.execute(
            sa.update(proposals)
            .where(proposals.c.id.in_(part), proposals.c.status == ProposalStatus.PENDING.value)
            .values(status=ProposalStatus.SUPERSEDED.value, reviewed_at=now, review_comment=comment)
        )
    for pid in proposal_ids:
        decision = {
            "id": pid,
            "status": ProposalStatus.SUPERSEDED.value,
            "reviewer": None,
            "review_comment": comment,
            "reviewed_at": now,
        }
        tx.append_event("decision", pid, decision, now)


def drop_vectors(tx: LedgerTx, note_ids: Sequence[str]) -> None:
    """Delete the stored vectors of the erased notes: derived from their text, and never needed
    again (a deleted note is not indexed)."""
    for part in _chunks(list(note_ids)):
        tx.conn.execute(sa.delete(note_vectors).where(note_vectors.c.note_id.in_(part)))


def compact_fulltext(tx: LedgerTx) -> None:
    """SQLite: merge the FTS5 index so no segment keeps the erased words (PostgreSQL: VACUUM FULL does)."""
    if tx.dialect == "sqlite":
        tx.conn.exec_driver_sql("INSERT INTO notes_fts(notes_fts) VALUES ('optimize')")


def all_entries(tx: LedgerTx) -> list[dict[str, Any]]:
    """Every erased_rows entry with its erasure's time, oldest erasure first."""
    stmt = (
        sa.select(erased_rows, erasures.c.erased_at)
        .join(erasures)
        .order_by(
            erasures.c.erased_at, erased_rows.c.erasure_id, erased_rows.c.table_name, erased_rows.c.row_key
        )
    )
    return [dict(r._mapping) for r in tx.conn.execute(stmt)]
