"""The ledger's side of the input queue: claiming raw logs with a lease, renewing, checking a claim.

The queue is ``raw_log_states``: a pending input is queued; a pending input whose lease has not
ended is being processed by the lease's owner; processed and failed inputs have left the queue.
Claims are atomic on both backends: PostgreSQL takes the rows ``FOR UPDATE SKIP LOCKED`` (so
concurrent workers take disjoint inputs without waiting on one another); SQLite runs the claim in
a ``BEGIN IMMEDIATE`` transaction, its single writer (``Ledger.write(lock_head=False)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from amem.domain.hashing import sha256_text
from amem.domain.identity import identity_key
from amem.domain.models import Actor, ActorKind, RawLog, RawLogState, as_utc
from amem.domain.text import numbers_as_stored, storable
from amem.errors import InputKeyTakenError
from amem.ledger.store import LedgerTx
from amem.ledger.tables import api_tokens, input_keys, raw_log_states, raw_logs

#: Ids bound in one statement at most. A statement binding every id of a large import failed on
#: SQLite builds with the default limit of 32,766 variables (python.org's Windows and macOS builds;
#: 999 before SQLite 3.32) and would on PostgreSQL's 65,535 bind parameters. Read at each call.
IDS_PER_STATEMENT = 500

#: States an input can be held in: queued (a worker, add_note, an import) or failed (reprocess).
_HOLDABLE = (RawLogState.PENDING.value, RawLogState.FAILED.value)


def chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    """``ids`` in slices of ``IDS_PER_STATEMENT``, one statement each."""
    size = max(1, IDS_PER_STATEMENT)
    listed = list(ids)
    for start in range(0, len(listed), size):
        yield listed[start : start + size]


def database_now(tx: LedgerTx) -> datetime:
    """The database server's clock (PostgreSQL's ``clock_timestamp()``, the time of the call, not of
    the transaction's start): the one clock every process sharing the ledger reads, whatever the
    clock of the machine it runs on says, so leases taken and checked there agree."""
    return as_utc(tx.conn.execute(sa.select(sa.func.clock_timestamp())).scalar_one())


def given_up_error(max_claims: int | None) -> str:
    """Why an input taken ``max_claims`` times without being finished is failed (``amem status``)."""
    return (
        f"taken {max_claims} times by workers that stopped before finishing it (a crash or a "
        "kill each time); kept, and `amem reprocess` retries it"
    )


@dataclass(frozen=True)
class Claimed:
    """What one claim took: the inputs to analyse, and those given up as poisoned."""

    raw_log_ids: list[str]
    given_up: list[str]
    #: The arrival number (raw_logs.seq, kept as raw_log_states.raw_log_seq) of the last input looked
    #: at, for a walk that goes on after it.
    last_seq: int = 0


def claim(
    tx: LedgerTx,
    *,
    owner: str,
    until: datetime,
    now: datetime,
    limit: int,
    states: Sequence[RawLogState] = (RawLogState.PENDING,),
    max_claims: int | None = None,
    after_seq: int = 0,
) -> Claimed:
    """Take up to ``limit`` inputs in ``states`` that nobody holds (no lease, or an ended one), oldest
    first, for ``owner`` until ``until``. An input already claimed ``max_claims`` times (every worker
    that took it died) is marked failed instead, saying so, and the claim reads on: inputs given up
    do not count against ``limit``, so a worker meeting only given-up inputs does not take the queue
    for empty while others wait behind them."""
    taken: list[str] = []
    given_up: list[str] = []
    last_seq = after_seq
    while len(taken) < limit:
        wanted = limit - len(taken)
        rows = _free_rows(tx, states=states, now=now, after_seq=last_seq, limit=wanted)
        if not rows:
            break
        last_seq = rows[-1].seq
        spent = [r.raw_log_id for r in rows if max_claims is not None and r.claims >= max_claims]
        fresh = [r.raw_log_id for r in rows if max_claims is None or r.claims < max_claims]
        _give_up(tx, spent, max_claims, now)
        _lease(tx, fresh, owner=owner, until=until, now=now)
        given_up += spent
        taken += fresh
        if not spent or len(rows) < wanted:
            break
    return Claimed(raw_log_ids=taken, given_up=given_up, last_seq=last_seq)


def _free_rows(
    tx: LedgerTx, *, states: Sequence[RawLogState], now: datetime, after_seq: int, limit: int
) -> list[Any]:
    """The first ``limit`` inputs in ``states`` after ``after_seq`` that nobody holds, oldest first
    (locked, skipping those another claim locked, on PostgreSQL). One query per state, each read in
    the order of ``ix_raw_log_states_claim`` (state, raw_log_seq), so a claim reads the first free
    rows and never sorts the backlog; several states' rows are merged by arrival here."""
    each = list(dict.fromkeys(states))
    rows = [row for state in each for row in _free_rows_of(tx, state, now, after_seq, limit)]
    if len(each) > 1:
        rows.sort(key=lambda row: row.seq)
    return rows[:limit]


def _free_rows_of(tx: LedgerTx, state: RawLogState, now: datetime, after_seq: int, limit: int) -> list[Any]:
    """``_free_rows`` of one state: a range of the claim index, read in its order."""
    stmt = _FREE_ROWS_FOR_UPDATE if tx.dialect == "postgresql" else _FREE_ROWS
    params = {"state": state.value, "now": now, "after_seq": after_seq, "limit": limit}
    return list(tx.conn.execute(stmt, params).all())


#: A claim's read, built once: one state's free rows after an arrival number, in arrival order. The
#: equality on ``state`` and the order by ``raw_log_seq`` match ``ix_raw_log_states_claim``, so both
#: databases walk that index from ``after_seq`` and stop after ``limit`` free rows; the lease is
#: checked on the rows walked (held ones are few: the batches being analysed).
_FREE_ROWS = (
    sa.select(
        raw_log_states.c.raw_log_id,
        raw_log_states.c.claims,
        raw_log_states.c.raw_log_seq.label("seq"),
    )
    .where(
        raw_log_states.c.state == sa.bindparam("state", type_=sa.String()),
        raw_log_states.c.raw_log_seq > sa.bindparam("after_seq", type_=sa.Integer()),
        sa.or_(
            raw_log_states.c.lease_until.is_(None),
            raw_log_states.c.lease_until <= sa.bindparam("now", type_=raw_log_states.c.lease_until.type),
        ),
    )
    .order_by(raw_log_states.c.raw_log_seq)
    .limit(sa.bindparam("limit", type_=sa.Integer()))
)
_FREE_ROWS_FOR_UPDATE = _FREE_ROWS.with_for_update(skip_locked=True)


def _give_up(tx: LedgerTx, raw_log_ids: Sequence[str], max_claims: int | None, now: datetime) -> None:
    """Mark failed the inputs every worker that took them died on, saying so."""
    for ids in chunks(raw_log_ids):
        tx.conn.execute(
            sa.update(raw_log_states)
            .where(raw_log_states.c.raw_log_id.in_(ids))
            .values(
                state=RawLogState.FAILED.value,
                error=given_up_error(max_claims),
                lease_owner=None,
                lease_until=None,
                updated_at=now,
                attempts=raw_log_states.c.attempts + 1,
            )
        )


def _lease(tx: LedgerTx, raw_log_ids: Sequence[str], *, owner: str, until: datetime, now: datetime) -> None:
    """Hold these inputs (found free in this transaction) for ``owner`` until ``until``."""
    for ids in chunks(raw_log_ids):
        tx.conn.execute(
            sa.update(raw_log_states)
            .where(raw_log_states.c.raw_log_id.in_(ids))
            .values(lease_owner=owner, lease_until=until, claims=raw_log_states.c.claims + 1, updated_at=now)
        )


def claim_these(
    tx: LedgerTx, *, owner: str, until: datetime, now: datetime, raw_log_ids: Sequence[str]
) -> list[str]:
    """Take, for ``owner`` until ``until``, those of these inputs still pending that nobody holds (an
    import run again takes up what an interruption left); the others are left to whoever holds them.
    Returns the ids taken."""
    free = sa.or_(raw_log_states.c.lease_until.is_(None), raw_log_states.c.lease_until <= now)
    taken: list[str] = []
    for ids in chunks(raw_log_ids):
        stmt = sa.select(raw_log_states.c.raw_log_id).where(
            raw_log_states.c.raw_log_id.in_(ids),
            raw_log_states.c.state == RawLogState.PENDING.value,
            free,
        )
        if tx.dialect == "postgresql":
            stmt = stmt.with_for_update(skip_locked=True)
        taken += tx.conn.execute(stmt).scalars()
    _lease(tx, taken, owner=owner, until=until, now=now)
    return taken


#: States no claim stands on: the input's analysis was applied, or the input was erased.
_FINISHED = (RawLogState.PROCESSED.value, RawLogState.ERASED.value)


def holds(tx: LedgerTx, raw_log_id: str, owner: str) -> bool:
    """Whether ``owner``'s claim on the input still stands (nobody took it over, it is not finished).
    Checked inside the write transaction that applies the analysis: on PostgreSQL the row is locked,
    so no claim can slip in between the check and the commit; on SQLite the writer is alone."""
    stmt = sa.select(raw_log_states.c.lease_owner, raw_log_states.c.state).where(
        raw_log_states.c.raw_log_id == raw_log_id
    )
    if tx.dialect == "postgresql":
        stmt = stmt.with_for_update()
    row = tx.conn.execute(stmt).one_or_none()
    return row is not None and row.lease_owner == owner and row.state not in _FINISHED


def held(tx: LedgerTx, raw_log_ids: Sequence[str], owner: str) -> set[str]:
    """Which of these inputs ``owner``'s claim still stands on (``holds`` for a batch, one query)."""
    stmt = _HELD_FOR_UPDATE if tx.dialect == "postgresql" else _HELD
    found: set[str] = set()
    for ids in chunks(raw_log_ids):
        found.update(tx.conn.execute(stmt, {"ids": ids, "owner": owner}).scalars())
    return found


#: ``held`` runs in every note's write: built once.
_HELD = sa.select(raw_log_states.c.raw_log_id).where(
    raw_log_states.c.raw_log_id.in_(sa.bindparam("ids", expanding=True)),
    raw_log_states.c.lease_owner == sa.bindparam("owner"),
    raw_log_states.c.state.not_in(_FINISHED),
)
_HELD_FOR_UPDATE = _HELD.with_for_update()


def renew(tx: LedgerTx, *, owner: str, raw_log_ids: Sequence[str], until: datetime) -> int:
    """Push the end of ``owner``'s leases on these inputs to ``until`` (a worker's heartbeat; a
    failed input ``reprocess`` holds as well as a queued one)."""
    renewed = 0
    for ids in chunks(raw_log_ids):
        result = tx.conn.execute(
            sa.update(raw_log_states).where(*_held_by(owner, ids)).values(lease_until=until)
        )
        renewed += int(result.rowcount or 0)
    return renewed


def release(tx: LedgerTx, *, owner: str, raw_log_ids: Sequence[str]) -> int:
    """Give back inputs ``owner`` claimed but will not finish (Ctrl-C of an import, an analysis shown
    a note erased meanwhile): queued again, or failed as before for those ``reprocess`` held, and
    free to be taken at once. The claim given back no longer counts against ``max_claims``: an input
    is given up only when the workers that took it stopped without a word (a crash, a kill), as its
    error says, not after a few interruptions."""
    released = 0
    not_counted = sa.case((raw_log_states.c.claims > 0, raw_log_states.c.claims - 1), else_=0)
    for ids in chunks(raw_log_ids):
        result = tx.conn.execute(
            sa.update(raw_log_states)
            .where(*_held_by(owner, ids))
            .values(lease_owner=None, lease_until=None, claims=not_counted)
        )
        released += int(result.rowcount or 0)
    return released


def fail(tx: LedgerTx, *, owner: str | None, raw_log_ids: Sequence[str], error: str, now: datetime) -> int:
    """Mark failed, saying why, inputs whose analysis stopped on an error other than the model's
    (an embedder or index down, a ledger error): with ``owner``, those it still holds, queued or
    failed (``reprocess`` holds failed inputs: their error becomes this one, their lease ends); with
    none, those still pending. Another worker's claim, or an input finished meanwhile, is left alone.
    Failed, they leave the workers' queue, so a broken step is not met again claim after claim,
    and ``amem status`` says why; ``amem reprocess`` retries them."""
    failed = 0
    for ids in chunks(raw_log_ids):
        where = (
            _held_by(owner, ids)
            if owner is not None
            else [raw_log_states.c.raw_log_id.in_(ids), raw_log_states.c.state == RawLogState.PENDING.value]
        )
        result = tx.conn.execute(
            sa.update(raw_log_states)
            .where(*where)
            .values(
                state=RawLogState.FAILED.value,
                error=storable(error[:2000]),
                lease_owner=None,
                lease_until=None,
                updated_at=now,
                attempts=raw_log_states.c.attempts + 1,
            )
        )
        failed += int(result.rowcount or 0)
    return failed


def _held_by(owner: str, ids: Sequence[str]) -> list[sa.ColumnElement[bool]]:
    """The rows of ``ids`` ``owner`` holds: queued, or failed under ``reprocess``; not finished."""
    return [
        raw_log_states.c.raw_log_id.in_(list(ids)),
        raw_log_states.c.lease_owner == owner,
        raw_log_states.c.state.in_(_HOLDABLE),
    ]


def depth(tx: LedgerTx, now: datetime) -> dict[str, int]:
    """How many inputs are queued (waiting), processing (held under a lease: a failed input
    ``reprocess`` is analysing again too) and failed."""
    held = sa.and_(raw_log_states.c.lease_until.is_not(None), raw_log_states.c.lease_until > now)
    pending = raw_log_states.c.state == RawLogState.PENDING.value
    row = tx.conn.execute(
        sa.select(
            sa.func.count().filter(sa.and_(pending, sa.not_(held))).label("queued"),
            sa.func.count().filter(held).label("processing"),
            sa.func.count()
            .filter(sa.and_(raw_log_states.c.state == RawLogState.FAILED.value, sa.not_(held)))
            .label("failed"),
        ).where(raw_log_states.c.state.in_(_HOLDABLE))
    ).one()
    return {"queued": int(row.queued), "processing": int(row.processing), "failed": int(row.failed)}


def state_of(tx: LedgerTx, raw_log_id: str) -> dict[str, object] | None:
    row = tx.conn.execute(
        sa.select(raw_log_states).where(raw_log_states.c.raw_log_id == raw_log_id)
    ).one_or_none()
    return dict(row._mapping) if row is not None else None


def _with_state(*columns: sa.ColumnElement[Any]) -> sa.Select[Any]:
    """Raw logs with what became of them (id, scope, sha256; state, note_id, error) and ``columns``."""
    return sa.select(
        raw_logs.c.id,
        raw_logs.c.scope,
        raw_logs.c.sha256,
        raw_log_states.c.state,
        raw_log_states.c.note_id,
        raw_log_states.c.error,
        *columns,
    ).join_from(raw_logs, raw_log_states, raw_log_states.c.raw_log_id == raw_logs.c.id)


@dataclass(frozen=True)
class Recorded:
    """An input recorded before, and what became of it so far."""

    raw_log_id: str
    state: str
    note_id: str | None
    error: str | None


def recorded_before(tx: LedgerTx, raws: Sequence[RawLog]) -> dict[str, Recorded]:
    """Of ``raws`` (not yet written), those recorded before: a raw log of the same scope, time,
    author, text and metadata (the oldest, when several are). Keyed by the new raw log's id; found
    through the text's digest (the index of migration 0013), a few hundred digests a statement, the
    metadata compared in the rows read: two CRM records said at one moment in the same words are two
    inputs. An erased raw log's metadata is gone, so it matches by the rest: an erased input is
    never kept again. The stored metadata is compared with its numbers written as a new input's are
    (``numbers_as_stored``): one recorded before they were (a float such as 1e23, which SQLite gives
    back as that float) is the same input, not another. A person's input is also the one
    ``agent:NAME`` recorded before the person's first raw log (``_before_first_own``): an amem
    before reviewer tokens added as ``person:NAME`` recorded the reviewer's own token's inputs so,
    and their retry across that upgrade was kept a second time."""

    def key(scope: str, sha: str, at: datetime, kind: str, actor: str) -> tuple[str, str, datetime, str, str]:
        return scope, sha, as_utc(at), kind, actor

    wanted: dict[tuple[str, str, datetime, str, str], list[RawLog]] = {}
    as_agent: dict[tuple[str, str, datetime, str, str], list[RawLog]] = {}
    for r in raws:
        wanted.setdefault(key(r.scope, r.sha256, r.occurred_at, r.actor.kind.value, r.actor.id), []).append(r)
        if r.actor.kind == ActorKind.PERSON:
            at = key(r.scope, r.sha256, r.occurred_at, ActorKind.AGENT.value, r.actor.id)
            as_agent.setdefault(at, []).append(r)
    digests = sorted({r.sha256 for r in raws})
    found: dict[str, Recorded] = {}
    first_own: dict[str, datetime | None] = {}
    tokens: dict[str, list[Any]] = {}
    for some in chunks(digests):
        rows = tx.conn.execute(
            _with_state(
                raw_logs.c.occurred_at,
                raw_logs.c.actor_kind,
                raw_logs.c.actor_id,
                raw_logs.c.metadata,
                raw_logs.c.received_at,
            )
            .where(raw_logs.c.sha256.in_(some))
            .order_by(raw_logs.c.seq)
        ).all()
        for row in rows:
            erased = row.state == RawLogState.ERASED.value
            at = key(row.scope, row.sha256, row.occurred_at, row.actor_kind, row.actor_id)
            theirs = wanted.get(at, [])
            if at in as_agent and _before_first_own(tx, row.actor_id, row.received_at, first_own, tokens):
                theirs = [*theirs, *as_agent[at]]
            for new in theirs:
                if new.id not in found and (erased or new.metadata == numbers_as_stored(row.metadata or {})):
                    found[new.id] = Recorded(row.id, row.state, row.note_id, row.error)
    return found


def _before_first_own(
    tx: LedgerTx,
    name: str,
    received_at: datetime,
    first: dict[str, datetime | None],
    tokens: dict[str, list[Any]],
) -> bool:
    """Whether a raw log ``agent:NAME`` recorded at ``received_at`` may be the reviewer NAME's own
    (``first`` and ``tokens`` cache per name): it came before ``person:NAME``'s first raw log, and only the
    reviewer's token of that name could add then (``_reviewer_token_alone``). Read only for a
    person's input that an agent of their name recorded in the same scope, time and words, so
    rarely; no index serves it."""
    if name not in first:
        first[name] = tx.conn.execute(
            sa.select(sa.func.min(raw_logs.c.received_at)).where(
                raw_logs.c.actor_kind == ActorKind.PERSON.value, raw_logs.c.actor_id == name
            )
        ).scalar_one_or_none()
    own = first[name]
    before = own is None or as_utc(received_at) < as_utc(own)
    return before and _reviewer_token_alone(tx, name, received_at, tokens)


def _reviewer_token_alone(
    tx: LedgerTx, name: str, at: datetime, tokens: dict[str, list[Any]] | None = None
) -> bool:
    """Whether, at ``at``, a reviewer token of ``name`` could add and no agent token of that name
    could: an amem before reviewer tokens added as ``person:NAME`` recorded the reviewer's inputs as
    ``agent:NAME``, and only then is such a raw log the reviewer's. An agent token may share a
    reviewer's name; what it added is the agent's, never taken for the reviewer's. ``tokens``
    caches the tokens of each name for one look-up (the table is small: a token a person or an
    agent, read only here, and only for an agent's input a person of its name sends again)."""
    tokens = {} if tokens is None else tokens
    wanted, when = identity_key(name), as_utc(at)
    if wanted not in tokens:
        columns = (api_tokens.c.name, api_tokens.c.role, api_tokens.c.created_at)
        ends = (api_tokens.c.revoked_at, api_tokens.c.expires_at)
        tokens[wanted] = [
            row
            for row in tx.conn.execute(sa.select(*columns, *ends))
            if identity_key(str(row.name)) == wanted
        ]

    def live(row: Any) -> bool:
        ended = [as_utc(t) for t in (row.revoked_at, row.expires_at) if t is not None]
        return as_utc(row.created_at) <= when and all(t > when for t in ended)

    return {row.role for row in tokens[wanted] if live(row)} == {_REVIEWER_ROLE}


#: The role of a reviewer's own token (``TokenRole.REVIEWER`` of amem.services.tokens, above this
#: module).
_REVIEWER_ROLE = "reviewer"


@dataclass(frozen=True)
class KeyedInput:
    """The input an author's idempotency key names in one scope: what it was (its text digest, its
    time, its metadata: a retry is told from another input by them), and what became of it so far.
    ``metadata`` has its numbers written as a new input's are (``numbers_as_stored``), so a retry of
    an input recorded before they were (SQLite gives back its float 1e23, the retry has the
    integer) is not taken for another input."""

    recorded: Recorded
    sha256: str
    occurred_at: datetime
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Keyed:
    """What an author's idempotency key names: one input per scope (migration 0023), so tokens of
    one name limited to different scopes never meet, and none learns of another scope's input."""

    by_scope: dict[str, KeyedInput]
    #: A person's key only: the input ``agent:NAME`` recorded under it in a scope before
    #: ``person:NAME`` recorded any key (an amem before reviewer tokens added as ``person:NAME``
    #: recorded what the reviewer's own token added as ``agent:NAME``). It is the person's only
    #: where it is the very input they send again (the caller compares, as for ``by_scope``), and
    #: only while no agent token of that name could add (``_reviewer_token_alone``); any other
    #: input is an agent's of that name, and its key is not the person's to be refused by.
    as_agent_before: dict[str, KeyedInput] = field(default_factory=dict)


def recorded_by_key(tx: LedgerTx, actor: Actor, keys: Sequence[str]) -> dict[str, Keyed]:
    """Of ``actor``'s idempotency ``keys``, those recorded before: key -> the inputs it names, by
    scope. By the table's primary key (author, key, scope), a few hundred keys a statement; for a
    person, the same statement reads the keys the agent of their name recorded before their first
    (``Keyed.as_agent_before``): a retry across the upgrade that made reviewer tokens add as
    ``person:NAME`` is found, not kept twice."""
    by_digest = {sha256_text(key): key for key in keys}
    wanted = sorted(by_digest)
    found: dict[str, Keyed] = {}
    tokens: dict[str, list[Any]] = {}
    for some in chunks(wanted):
        rows = tx.conn.execute(
            # the raw log's scope is the key's
            _with_state(
                input_keys.c.key_sha256,
                input_keys.c.actor_kind,
                input_keys.c.created_at,
                raw_logs.c.occurred_at,
                raw_logs.c.metadata,
            )
            .join(input_keys, input_keys.c.raw_log_id == raw_logs.c.id)
            .where(_authors(actor), input_keys.c.key_sha256.in_(some))
        ).all()
        for row in rows:
            own = row.actor_kind == actor.kind.value
            if not own and not _reviewer_token_alone(tx, actor.id, row.created_at, tokens):
                continue  # an agent token of the person's name added it: the agent's key, not hers
            named = found.setdefault(by_digest[row.key_sha256], Keyed(by_scope={}))
            kept = named.by_scope if own else named.as_agent_before
            kept[row.scope] = KeyedInput(
                Recorded(row.id, row.state, row.note_id, row.error),
                row.sha256,
                as_utc(row.occurred_at),
                numbers_as_stored(dict(row.metadata or {})),
            )
    return found


def _authors(actor: Actor) -> sa.ColumnElement[bool]:
    """The key rows ``recorded_by_key`` reads: ``actor``'s own; for a person, also those the agent
    of their name recorded before the person's first key (``Keyed.as_agent_before``). Until that
    first key every one of them may be the reviewer's own token's, recorded by an amem before the
    change; after it, an agent's of that name is the agent's alone. One statement either way."""
    own = sa.and_(input_keys.c.actor_kind == actor.kind.value, input_keys.c.actor_id == actor.id)
    if actor.kind != ActorKind.PERSON:
        return own
    persons = input_keys.alias("persons_keys")
    first_own = (
        sa.select(sa.func.min(persons.c.created_at))
        .where(persons.c.actor_kind == ActorKind.PERSON.value, persons.c.actor_id == actor.id)
        .scalar_subquery()
    )
    as_agent = sa.and_(
        input_keys.c.actor_kind == ActorKind.AGENT.value,
        input_keys.c.actor_id == actor.id,
        sa.or_(first_own.is_(None), input_keys.c.created_at < first_own),
    )
    return sa.or_(own, as_agent)


def insert_input_keys(tx: LedgerTx, raws: Sequence[RawLog], keys: dict[str, str]) -> None:
    """Record the idempotency key of each raw log of ``raws`` that has one (``keys``: raw log id
    -> key), as its sha256 (a key can hold what an erasure must remove), in the transaction that
    records the raw logs, in the raw log's scope. A key its author recorded meanwhile in that scope
    (a racing retry) raises InputKeyTakenError: nothing of the transaction is kept."""
    rows = [
        {
            "actor_kind": raw.actor.kind.value,
            "actor_id": raw.actor.id,
            "key_sha256": sha256_text(keys[raw.id]),
            "scope": raw.scope,
            "raw_log_id": raw.id,
            "created_at": raw.received_at,
        }
        for raw in raws
        if raw.id in keys
    ]
    if not rows:
        return
    try:
        tx.conn.execute(sa.insert(input_keys), rows)
    except sa.exc.IntegrityError as exc:
        raise InputKeyTakenError(
            "an idempotency key of these inputs was recorded by another request meanwhile"
        ) from exc
