"""Verification: is the ledger still what amem wrote, and does it still extend every signed checkpoint?

Three layers, each catching what the one before cannot:

1. The change chain and the event chain are recomputed from the first row (amem.domain.hashing),
   and each chain's head must hold its last row's sequence number and hash.
2. Every row is compared with the digest its event recorded (raw logs, LLM calls, proposals and
   their decisions, changes, tokens), every event must still have its row, each raw log's text must
   match its sha256, an erased row must be what its erasure recorded leaving, and each note must
   equal the replay of its changes (and every note a change names must have its row). A mismatch
   names the row.
3. Signed checkpoints (amem.services.checkpoints), kept outside the database, prove that the chain
   still extends what was signed: a writer who rewrites or truncates the chain and recomputes every
   hash passes 1 and 2, not 3.

On PostgreSQL each append-only table must still have its triggers (a restore interrupted before its
post-data section leaves every row in place and none of them): a ledger without them takes an
UPDATE of a raw log as readily as an INSERT.
"""

from __future__ import annotations

import heapq
import json
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Any, cast

import sqlalchemy as sa
from pydantic import BaseModel

from amem.domain.hashing import (
    ERASED_FIELDS,
    GENESIS_HASH,
    PAYLOAD_FIELDS,
    REDACTED,
    REDACTED_VALUE_DIGESTS,
    change_hash_of_digests,
    erased_rows_digest,
    event_hash,
    json_shape_digest,
    payload_digest,
    sha256_text,
    string_leaves,
    value_digest,
)
from amem.domain.models import CORE_ATTRIBUTES, Note, as_utc
from amem.domain.progress import Progress, no_progress
from amem.domain.replay import replay
from amem.ledger import audit_queries, erasure_queries
from amem.ledger.store import Ledger, LedgerTx
from amem.ledger.tables import APPEND_ONLY_TABLES

#: Progress tasks of verify (amem.domain.progress).
VERIFY_CHANGES = "verifying the change chain"
VERIFY_RAW_LOGS = "verifying raw logs"
VERIFY_EVENTS = "verifying the event chain"
#: The tables whose scans report progress, and the step each is.
VERIFY_ROWS = {
    "raw_logs": VERIFY_RAW_LOGS,
    "llm_calls": "checking model calls",
    "proposals": "checking proposals",
    "changes": "checking changes against events",
    "notes": "replaying notes",
}
#: A step reports at its start, every this many rows, and at its end.
REPORT_EVERY = 1000
#: At most this many problems are listed; the first is the message.
MAX_PROBLEMS = 50
#: Fields of a note that replaying its changes rebuilds (scope and raw logs come from its creation
#: proposal, checked separately).
REPLAYED_FIELDS = (*CORE_ATTRIBUTES, "extra", "version", "created_at", "updated_at")
#: The tables an erasure redacts rows of, and the kind of event that recorded each row.
_ERASED_KIND = {
    "raw_logs": "raw_log",
    "llm_calls": "llm_call",
    "proposals": "proposal",
    "decisions": "decision",
}
#: The fields of each kind of row an erasure changes (amem.services.erasure), each only to a
#: redaction: a raw log's metadata (emptied; its text, which its event covers by its sha256, becomes
#: the marker), a model call's answer and error, a proposal's values, reason and evidence, a
#: decision's comment. Every other field an erasure leaves as it was.
_ERASABLE: dict[str, tuple[str, ...]] = {
    "raw_log": ("metadata",),
    "llm_call": ("response_text", "error"),
    "proposal": ("old_value", "new_value", "reason", "evidence"),
    "decision": ("review_comment",),
}
#: A proposal's decision: what its event covers, each named when it alone differs.
_DECISION_FIELDS = ("status", "reviewer", "review_comment", "reviewed_at")


class CheckpointProof(BaseModel):
    """What one signed checkpoint proves about the ledger now."""

    line: int
    seq: int | None = None
    at: datetime | None = None
    proven: bool
    message: str
    #: Only when a backup is verified to be restored: the statement signed events the backup does
    #: not hold (signed after it was taken, or the backup was cut short). Not proven, and not counted
    #: as tampering: the restore says which events it loses. `amem verify` never sets it.
    newer_than_ledger: bool = False


class VerifyResult(BaseModel):
    ok: bool
    changes_checked: int
    raw_logs_checked: int
    events_checked: int = 0
    proposals_checked: int = 0
    notes_checked: int = 0
    first_bad_change: int | None = None
    first_bad_raw_log: str | None = None
    first_bad_event: int | None = None
    #: The first row that fails, as "table key" (e.g. "proposals p_12ab", "events 17").
    bad_row: str | None = None
    message: str
    problems: list[str] = []
    checkpoints: list[CheckpointProof] = []
    #: What an auditor should know that is not tampering: an erasure recorded after a checkpoint
    #: redacted rows that checkpoint signed (what they held then is gone, by request); proposals
    #: that say a model made them and name no model call (``untraced_model_proposals``).
    notices: list[str] = []
    #: Proposals by the model (proposer kind llm) that name no model call (``llm_call_id``): their
    #: values cannot be traced to the call that made them. amem refuses such a proposal now; older
    #: versions recorded them from library callers, so they are a notice, not tampering.
    untraced_model_proposals: int = 0


class _Findings:
    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []  # (row, message)
        self.first_bad_change: int | None = None
        self.first_bad_raw_log: str | None = None
        self.first_bad_event: int | None = None

    def add(self, row: str, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append((row, message))


def verify_ledger(
    ledger: Ledger,
    checkpoints: Sequence[tuple[int, dict[str, Any]]] = (),
    public_key: Any = None,
    *,
    progress: Progress = no_progress,
    of_a_backup: bool = False,
) -> VerifyResult:
    """Recompute both chains, compare every row with its event, replay every note, prove checkpoints.

    ``checkpoints``: (line number, statement) pairs read from a checkpoint log; ``public_key``: the
    Ed25519 public key they must be signed with. ``of_a_backup``: the ledger is a backup about to be
    restored, and the log was kept since it was taken: a statement signing more events than it holds
    is reported as newer than it (``CheckpointProof.newer_than_ledger``, and a notice naming the
    events it lacks), not as a truncation. A live ledger (`amem verify`) never passes it."""
    from amem.services.checkpoints import check_key

    check_key(checkpoints, public_key)  # a wrong key is the caller's mistake, said before any work
    f = _Findings()
    with ledger.read(snapshot=True) as read:
        tx = cast(LedgerTx, _Reporting(read, progress))  # each long scan says how far it is
        erased = _erased(tx)
        changed_notes: set[str] = set()  # every note a change names, read on the chain's one pass
        # the notes the changes applying an erased proposal name (an erasure may not move one)
        erased_proposals = set(erased.get("proposals", {}))
        notes_of_erased: dict[str, set[str]] = defaultdict(set)
        changes_ok, change_hashes = _change_chain(
            tx, f, erased.get("changes", {}), changed_notes, erased_proposals, notes_of_erased
        )
        wanted = {(_ERASED_KIND[t], k) for t, rows in erased.items() if t in _ERASED_KIND for k in rows}
        events_ok, event_hashes, recorded, seq_of = _event_chain(tx, f, wanted)
        raw_checked = _raw_logs(tx, f, recorded, erased)
        _check_rows(tx, f, recorded, erased, kind="llm_call", table="llm_calls", key="id", noun="LLM call")
        creations: dict[str, tuple[str, list[str]]] = {}
        untraced = _Untraced()
        proposals_checked = _proposals(tx, f, recorded, erased, creations, notes_of_erased, untraced)
        _check_rows(tx, f, recorded, erased, kind="change", table="changes", key="seq", noun="change")
        _check_rows(
            tx,
            f,
            recorded,
            erased,
            kind="policy",
            table="policy_versions",
            key="version",
            noun="policy version",
            also=lambda row: _policy_text_matches(f, row),
        )
        _check_rows(tx, f, recorded, erased, kind="token", table="token_events", key="id", noun="token event")
        _tokens(tx, f, seq_of)
        erasure_rows = _erasures(tx, f, recorded, seq_of)
        notes_checked = _notes(tx, f, creations, changed_notes)
        _append_only_guards(tx, f)
        proofs = [
            _prove(
                line,
                st,
                public_key,
                event_hashes,
                events_ok,
                change_hashes,
                changes_ok,
                of_a_backup=of_a_backup,
            )
            for line, st in checkpoints
        ]
        notices = _erased_after_signing(proofs, checkpoints, erased, erasure_rows, seq_of)
    for p in proofs:
        if not p.proven and not p.newer_than_ledger:
            f.add(f"checkpoint line {p.line}", p.message)
    newer = [p for p in proofs if p.newer_than_ledger]
    if newer:
        notices.insert(0, _not_held(newer, len(event_hashes)))
    if untraced.count:
        notices.append(untraced.notice())
    ok = not f.problems
    if ok:
        message = (
            f"intact: {len(change_hashes)} changes, {len(event_hashes)} events, {raw_checked} raw logs, "
            f"{proposals_checked} proposals and {notes_checked} notes verified"
        )
        reached = [p for p in proofs if p.proven]
        if reached:
            latest = max(reached, key=lambda p: p.seq or 0)
            extends = f"all {len(reached)}" if not newer else f"{len(reached)} of the {len(proofs)}"
            message += (
                f"; the ledger extends {extends} checkpoints, the latest proving events "
                f"1..{latest.seq} as signed at {latest.at.isoformat() if latest.at else '?'}"
            )
            if latest.seq is not None and latest.seq < len(event_hashes):
                message += f" (events {latest.seq + 1}..{len(event_hashes)} are covered by no checkpoint yet)"
        if newer:
            message += (
                f"; {len(newer)} checkpoint(s) signed events it does not hold "
                f"({len(event_hashes) + 1}..{max(p.seq or 0 for p in newer)}): see the note"
            )
    else:
        message = f.problems[0][1]
    return VerifyResult(
        ok=ok,
        changes_checked=len(change_hashes),
        raw_logs_checked=raw_checked,
        events_checked=len(event_hashes),
        proposals_checked=proposals_checked,
        notes_checked=notes_checked,
        first_bad_change=f.first_bad_change,
        first_bad_raw_log=f.first_bad_raw_log,
        first_bad_event=f.first_bad_event,
        bad_row=f.problems[0][0] if f.problems else None,
        message=message,
        problems=[m for _, m in f.problems],
        checkpoints=proofs,
        notices=notices,
        untraced_model_proposals=untraced.count,
    )


class _Reporting:
    """The read transaction as verify sees it: its scans of the chains and of the big tables report
    ``progress`` (start, every ``REPORT_EVERY`` rows, end), so a large ledger shows a moving bar."""

    def __init__(self, tx: LedgerTx, progress: Progress) -> None:
        self._tx, self._progress = tx, progress

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def iter_changes(self, after_seq: int = 0) -> Iterator[Any]:
        return self._counted(VERIFY_CHANGES, self._tx.chain_head_seq(), self._tx.iter_changes(after_seq))

    def iter_events(self) -> Iterator[Any]:
        return self._counted(VERIFY_EVENTS, self._tx.event_head()[0], self._tx.iter_events())

    def iter_rows(self, table_name: str, key: str) -> Iterator[Any]:
        task = VERIFY_ROWS.get(table_name)
        rows = self._tx.iter_rows(table_name, key)
        return rows if task is None else self._counted(task, self._tx.count_rows(table_name), rows)

    def _counted(self, task: str, total: int, rows: Iterator[Any]) -> Iterator[Any]:
        done = 0
        self._progress(task, 0, total)
        try:
            for row in rows:
                yield row
                done += 1
                if done % REPORT_EVERY == 0:
                    self._progress(task, done, total)
        finally:
            if done % REPORT_EVERY or not done:
                self._progress(task, done, total)


# -- the chains ----------------------------------------------------------------------------------


def _erased(tx: LedgerTx) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """erased_rows entries: table -> row key -> entries, oldest erasure first."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for e in erasure_queries.all_entries(tx):
        out[e["table_name"]][e["row_key"]].append(e)
    return out


def _change_chain(
    tx: LedgerTx,
    f: _Findings,
    erased: dict[str, list[dict[str, Any]]],
    changed_notes: set[str],
    erased_proposals: AbstractSet[str] = frozenset(),
    notes_of_erased: dict[str, set[str]] | None = None,
) -> tuple[bool, list[str]]:
    """Recompute the change chain; returns whether it holds and the hashes of its intact prefix, and
    adds the note of each change to ``changed_notes`` (a note's row deleted is found from them), and
    of each change applying one of ``erased_proposals`` to ``notes_of_erased``.

    An erased change is hashed from its values' original digests, kept by its erasure; its values
    must be a redaction of those (an erasure only puts its marker where text was) and those its
    latest erasure left (where that erasure recorded them), else they were rewritten after it,
    which its hash alone cannot tell."""
    prev = GENESIS_HASH
    hashes: list[str] = []
    for c in tx.iter_changes(0):
        changed_notes.add(c.note_id)
        if notes_of_erased is not None and c.proposal_id in erased_proposals:
            notes_of_erased[c.proposal_id].add(c.note_id)
        entries = erased.get(str(c.seq))
        detail = (entries[0]["detail"] or {}) if entries else {}
        expected = change_hash_of_digests(
            prev_hash=prev,
            seq=c.seq,
            note_id=c.note_id,
            proposal_id=c.proposal_id,
            attribute=c.attribute,
            old_value_sha256=detail.get("old_value_sha256") or value_digest(c.old_value),
            new_value_sha256=detail.get("new_value_sha256") or value_digest(c.new_value),
            note_version=c.note_version,
            actor_kind=c.actor.kind.value,
            actor_id=c.actor.id,
            kind=c.kind.value,
            applied_at=c.applied_at,
        )
        if c.prev_hash != prev or c.hash != expected or c.seq != len(hashes) + 1:
            what = "its link to the previous row" if c.prev_hash != prev else "its content"
            if c.seq != len(hashes) + 1:
                what = f"its sequence number (expected {len(hashes) + 1})"
            f.first_bad_change = c.seq
            f.add(f"changes {c.seq}", f"change {c.seq} does not match the chain: {what} was altered")
            return False, hashes
        if entries:
            _erased_values_match(f, c, detail, entries[-1])
        prev = c.hash
        hashes.append(c.hash)
    head_seq, head_hash = audit_queries.change_head(tx)
    if head_seq != len(hashes):
        f.first_bad_change = len(hashes) + 1
        f.add(
            f"changes {len(hashes) + 1}",
            f"the chain head says {head_seq} changes but {len(hashes)} are present",
        )
        return False, hashes
    if head_hash != prev:
        # the rows hold; the head the next write links to does not: that write would be blamed
        last = f"change {len(hashes)}'s hash" if hashes else "the genesis hash"
        f.add("chain_head", f"the change chain's head (chain_head) was altered: its hash is not {last}")
    return True, hashes


def _erased_values_match(f: _Findings, c: Any, original: dict[str, Any], entry: dict[str, Any]) -> None:
    """An erased change holds a redaction of the values it was written with (``original``: its first
    erasure's record of their digests): an erasure entry appended later cannot make it hold anything
    else. And it holds the values its latest erasure left, where that erasure recorded their digests
    (erasures made before it did are checked by the change's hash and the redaction alone)."""
    for name, value in (("old_value", c.old_value), ("new_value", c.new_value)):
        if not is_redaction(value, original.get(f"{name}_sha256")):
            _bad(
                f,
                "change",
                str(c.seq),
                f"change {c.seq}'s {name} is not a redaction of the value it was written with (an "
                f"erasure leaves {REDACTED!r} where text was, nothing else): it was rewritten under "
                f"cover of erasure {entry['erasure_id']}",
            )
            return
    detail = entry["detail"] or {}
    recorded = [detail.get(name) for name in REDACTED_VALUE_DIGESTS]
    if None in recorded:
        return
    if recorded != [value_digest(c.old_value), value_digest(c.new_value)]:
        _bad(
            f,
            "change",
            str(c.seq),
            f"change {c.seq} does not hold the values erasure {entry['erasure_id']} left: "
            "it was rewritten after the erasure",
        )


def is_redaction(value: Any, original_sha256: str | None) -> bool:
    """Whether ``value`` can be what an erasure left of a value whose digest is ``original_sha256``:
    the value itself, the marker (a text), or a list holding the marker (a list's items the erased
    inputs added, or a link's reason, replaced by it). An erasure never empties or invents a value.
    (The items a list kept cannot be told from its digest alone.)"""
    if original_sha256 is None or value_digest(value) == original_sha256:
        return True
    if value == REDACTED:
        return True
    return isinstance(value, list) and any(_holds_marker(item) for item in value)


def _holds_marker(item: Any) -> bool:
    if isinstance(item, dict):
        return any(v == REDACTED for v in item.values())
    return bool(item == REDACTED)


def _event_chain(
    tx: LedgerTx,
    f: _Findings,
    wanted: AbstractSet[tuple[str, str]] = frozenset(),
) -> tuple[bool, list[str], dict[str, dict[str, list[str]]], dict[tuple[str, str], int]]:
    """Recompute the event chain. Returns whether it holds, the hashes of its intact prefix, what
    the events recorded (kind -> subject -> payload digests in order), and the sequence number of
    the first event of each (kind, subject) of ``wanted``, of each erasure and of each token event
    (what a checkpoint signed, and which of two records came first)."""
    prev = GENESIS_HASH
    hashes: list[str] = []
    recorded: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    seq_of: dict[tuple[str, str], int] = {}
    ok = True
    for e in tx.iter_events():
        expected = event_hash(
            prev_hash=prev,
            seq=e.seq,
            kind=e.kind,
            subject=e.subject,
            payload_digest=e.payload_digest,
            at=e.at,
        )
        if e.seq != len(hashes) + 1 or e.prev_hash != prev or e.hash != expected:
            what = "its content"
            if e.seq != len(hashes) + 1:
                what = f"its sequence number (expected {len(hashes) + 1})"
            elif e.prev_hash != prev:
                what = "its link to the previous event"
            f.first_bad_event = e.seq
            f.add(
                f"events {e.seq}",
                f"event {e.seq} ({e.kind} {e.subject}) does not match the chain: {what} was altered",
            )
            ok = False
            break
        prev = e.hash
        hashes.append(e.hash)
        recorded[e.kind][e.subject].append(e.payload_digest)
        if e.kind in ("erasure", "token") or (e.kind, e.subject) in wanted:
            seq_of.setdefault((e.kind, e.subject), e.seq)
    head_seq, head_hash = tx.event_head()
    if ok and (head_seq != len(hashes) or head_hash != prev):
        f.first_bad_event = len(hashes) + 1
        said = f"says {head_seq} events but {len(hashes)} are present"
        if head_seq == len(hashes):  # only its hash: the rows hold, the head was edited
            last = f"event {head_seq}'s hash" if hashes else "the genesis hash"
            said = f"(chain_head) was altered: its hash is not {last}"
        f.add(f"events {len(hashes) + 1}", f"the event chain's head {said}")
        ok = False
    return ok, hashes, recorded, seq_of


# -- rows against their events -------------------------------------------------------------------


def _check_rows(
    tx: LedgerTx,
    f: _Findings,
    recorded: dict[str, dict[str, list[str]]],
    erased: dict[str, dict[str, list[dict[str, Any]]]],
    *,
    kind: str,
    table: str,
    key: str,
    noun: str,
    also: Callable[[Any], None] | None = None,
) -> int:
    """Each row of ``table`` against the one event of ``kind`` recorded for it; then events without rows.

    ``also``: a further check of each row, made in the same pass (each table is read once)."""
    seen: set[str] = set()
    checked = 0
    for row in tx.iter_rows(table, key):
        subject = str(row[key])
        seen.add(subject)
        digests = recorded[kind].get(subject)
        if not digests:
            _bad(
                f,
                kind,
                subject,
                f"{noun} {subject} is not in the event chain: it was inserted behind amem's back",
            )
        elif len(digests) > 1:
            # amem records a row once: a second event for it passes off another version as recorded
            _bad(
                f,
                kind,
                subject,
                f"{noun} {subject} is recorded {len(digests)} times in the event chain, where amem "
                "records it once: the later records were added behind amem's back",
            )
        elif not _matches(payload_digest(kind, row), digests[0], erased.get(table, {}).get(subject)):
            _bad(
                f,
                kind,
                subject,
                f"{noun} {subject} does not match the digest the event chain recorded: it was altered",
            )
        elif kind in _ERASABLE and erased.get(table, {}).get(subject):
            _erased_fields_hold(f, kind, subject, noun, row, erased[table][subject])
        if also is not None:
            also(row)
        checked += 1
    for subject in recorded[kind]:
        if subject not in seen:
            _bad(
                f,
                kind,
                subject,
                f"{noun} {subject} is recorded in the event chain but missing from {table}: it was deleted",
            )
    return checked


def _matches(digest: str, recorded: str, entries: list[dict[str, Any]] | None) -> bool:
    """A row matches its event's digest, or, once erased, the chain of digests its erasures recorded:
    the first erasure started from the recorded digest, each from the one before, the row is the last."""
    if not entries or entries[0]["digest_before"] is None:
        return digest == recorded
    expected = recorded
    for e in entries:
        if e["digest_before"] != expected:
            return False
        expected = e["digest_after"]
    return digest == expected


def _erased_fields_hold(
    f: _Findings, kind: str, subject: str, noun: str, row: Any, entries: list[dict[str, Any]]
) -> None:
    """An erased row against its erasures' field digests (``erased_row_detail``): no erasure changed
    a field an erasure never changes (a decision's status, a proposal's attribute, a model call's
    model or usage), the row holds every field its latest erasure left, and each field one changed
    is a redaction (the marker; a list whose items are the kept ones and the marker; a model answer
    of the same JSON shape whose string leaves are the kept ones or the marker). The whole-row
    digests alone let a forged erasure cover any change. Entries made before field digests were
    recorded are checked by those digests alone (and ``_erasures`` refuses one made after)."""
    recorded = [e for e in entries if _field_digests(e) is not None]
    if not recorded:
        return
    changed: dict[str, dict[str, Any]] = {}  # field -> the latest entry that changed it
    for entry in recorded:
        before, after = _field_digests(entry) or ({}, {})
        for name in PAYLOAD_FIELDS[kind]:
            if name not in before or name not in after:
                _bad(
                    f,
                    kind,
                    subject,
                    f"{noun} {subject}: erasure {entry['erasure_id']} records no digest of its "
                    f"{_label(name)}, which amem records for every field: it was not made by amem",
                )
                return
        for name in sorted(before.keys() | after.keys()):
            if before.get(name) == after.get(name):
                continue
            if name not in _ERASABLE[kind]:
                _bad(
                    f,
                    kind,
                    subject,
                    f"{noun} {subject}'s {_label(name)} was changed by erasure {entry['erasure_id']}, "
                    "which never changes it: it was rewritten under cover of that erasure",
                )
                return
            changed[name] = entry
    latest = recorded[-1]
    _, left = _field_digests(latest) or ({}, {})
    for name, digest in left.items():
        if value_digest(row[name]) != digest:
            _bad(
                f,
                kind,
                subject,
                f"{noun} {subject}'s {_label(name)} is not what erasure {latest['erasure_id']} left: "
                "it was rewritten after that erasure",
            )
            return
    for name, entry in changed.items():
        if not _redaction_holds(kind, name, row[name], entry["detail"]):
            _bad(
                f,
                kind,
                subject,
                f"{noun} {subject}'s {_label(name)} is not a redaction (an erasure leaves {REDACTED!r} "
                f"where text was, nothing else): it was rewritten under cover of erasure "
                f"{entry['erasure_id']}",
            )
            return


def _field_digests(entry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    detail = entry.get("detail")
    if not isinstance(detail, dict) or not all(isinstance(detail.get(k), dict) for k in ERASED_FIELDS):
        return None
    return detail[ERASED_FIELDS[0]], detail[ERASED_FIELDS[1]]


def _label(name: str) -> str:
    return name.replace("_", " ")


def _redaction_holds(kind: str, name: str, value: Any, detail: dict[str, Any]) -> bool:
    """Whether ``value``, a field an erasure changed, is what an erasure leaves of it."""
    if kind == "raw_log":
        return value == {}
    if value == REDACTED:
        return True
    if kind == "llm_call" and name == "response_text":
        return _answer_kept(value, detail.get("answer_before"))
    if isinstance(value, list):
        kept = (detail.get("items_before") or {}).get(name)
        if not isinstance(kept, list):
            return any(_holds_marker(item) for item in value)
        return _items_kept(value, kept)
    return False


def _items_kept(value: list[Any], kept: list[Any]) -> bool:
    """A list an erasure changed: the items it kept (``kept``: their digests, null for each it
    removed), in order, and the marker where it removed some; nothing else."""
    wanted = [d for d in kept if d is not None]
    found = 0
    for item in value:
        if found < len(wanted) and value_digest(item) == wanted[found]:
            found += 1
        elif not _holds_marker(item):
            return False
    removed = len(wanted) < len(kept)
    return found == len(wanted) and (not removed or any(_holds_marker(item) for item in value))


def _answer_kept(text: str, recorded: Any) -> bool:
    """A model answer an erasure rewrote (``answer_without``): a JSON object of the shape the answer
    had (keys, list lengths, numbers and flags kept), each string leaf the one it held or the marker."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("strings"), list):
        return False
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(data, dict) or json_shape_digest(data) != recorded.get("shape_sha256"):
        return False
    leaves = string_leaves(data)
    if len(leaves) != len(recorded["strings"]):
        return False
    return all(
        leaf == REDACTED if digest is None else value_digest(leaf) == digest
        for leaf, digest in zip(leaves, recorded["strings"], strict=True)
    )


def _erased_entries(entries: list[dict[str, Any]] | None) -> bool:
    """Whether a row's erased_rows entries hold digests (those of a change hold its value digests)."""
    return bool(entries) and entries[0]["digest_before"] is not None  # type: ignore[index]


def _bad(f: _Findings, kind: str, subject: str, message: str) -> None:
    table = {
        "raw_log": "raw_logs",
        "llm_call": "llm_calls",
        "proposal": "proposals",
        "decision": "proposals",
        "change": "changes",
        "erasure": "erasures",
        "policy": "policy_versions",
        "token": "token_events",
    }[kind]
    if kind == "raw_log" and f.first_bad_raw_log is None:
        f.first_bad_raw_log = subject
    if kind == "change" and f.first_bad_change is None:
        f.first_bad_change = int(subject)
    f.add(f"{table} {subject}", message)


def _raw_logs(
    tx: LedgerTx,
    f: _Findings,
    recorded: dict[str, dict[str, list[str]]],
    erased: dict[str, dict[str, list[dict[str, Any]]]],
) -> int:
    gone = erased.get("raw_logs", {})

    def text_matches_sha256(row: Any) -> None:
        if row["id"] in gone and any(e["digest_before"] is not None for e in gone[row["id"]]):
            if row["text"] != REDACTED or row["metadata"]:
                # an erasure leaves the marker and no metadata: any other content was put there
                _bad(
                    f,
                    "raw_log",
                    row["id"],
                    f"raw log {row['id']} is not what an erasure leaves ({REDACTED!r}, no metadata): "
                    "it was rewritten after its erasure",
                )
            return
        if row["id"] in gone and row["text"] == REDACTED:
            return  # erased on request: its sha256 is the original text's, which is gone
        if sha256_text(row["text"]) != row["sha256"]:
            _bad(
                f,
                "raw_log",
                row["id"],
                f"raw log {row['id']} does not match its sha256: its text was altered",
            )

    return _check_rows(
        tx,
        f,
        recorded,
        erased,
        kind="raw_log",
        table="raw_logs",
        key="id",
        noun="raw log",
        also=text_matches_sha256,
    )


def _erasures(
    tx: LedgerTx,
    f: _Findings,
    recorded: dict[str, dict[str, list[str]]],
    seq_of: dict[tuple[str, str], int] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each erasure against its event, and its erased_rows entries against the digest it recorded.
    Once an erasure records field digests for the rows it redacts, every later one does (amem
    records them since): an entry without them after that is a forged erasure passing itself off
    as an older one, to be checked by whole-row digests alone. Returns the erasures by id (who,
    when, why: what a notice about one names)."""
    _check_rows(tx, f, recorded, {}, kind="erasure", table="erasures", key="id", noun="erasure")
    by_erasure: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in erasure_queries.all_entries(tx):
        by_erasure[e["erasure_id"]].append(e)
    rows: dict[str, dict[str, Any]] = {}
    for row in tx.iter_rows("erasures", "id"):
        rows[row["id"]] = dict(row)
        if erased_rows_digest(by_erasure.get(row["id"], [])) != row["rows_sha256"]:
            _bad(
                f,
                "erasure",
                row["id"],
                f"erasure {row['id']}: the rows it lists in erased_rows are not those it recorded",
            )
    order = seq_of or {}
    first_with: str | None = None
    for erasure_id in sorted(rows, key=lambda e: order.get(("erasure", e), 0)):
        entries = [e for e in by_erasure.get(erasure_id, []) if e["table_name"] in _ERASED_KIND]
        bare = [e for e in entries if _field_digests(e) is None]
        if bare and (first_with is not None or len(bare) < len(entries)):
            since = first_with or erasure_id
            _bad(
                f,
                "erasure",
                erasure_id,
                f"erasure {erasure_id} records no field digests of {bare[0]['table_name']} "
                f"{bare[0]['row_key']}, where amem records them for every row it erases (erasure "
                f"{since} did): it was not made by amem",
            )
        if len(bare) < len(entries) and first_with is None:
            first_with = erasure_id
    return rows


def _proposals(
    tx: LedgerTx,
    f: _Findings,
    recorded: dict[str, dict[str, list[str]]],
    erased: dict[str, dict[str, list[dict[str, Any]]]],
    creations: dict[str, tuple[str, list[str]]],
    notes_of_erased: dict[str, set[str]] | None = None,
    untraced: _Untraced | None = None,
) -> int:
    """Each proposal against its event and its one decision; fills ``creations`` (a content
    proposal's id -> its scope and raw logs: where a note was made, and from what) and ``untraced``
    (the model's proposals that name no model call).

    amem decides a proposal once (every decision is a compare-and-set from pending): a second
    decision event would overturn the first, so it is reported and the row compared with the first.
    An erased proposal still names the note its changes name; an erased decision differs from its
    record in its comment only, which an erasure replaces by the marker."""
    decisions = recorded["decision"]
    erased_decisions = erased.get("decisions", {})
    seen: set[str] = set()

    def status_is_decided(row: Any) -> None:
        pid = row["id"]
        seen.add(pid)
        if row["attribute"] == "content":
            creations[pid] = (row["scope"], list(row["raw_log_ids"] or []))
        if untraced is not None and row["proposer_kind"] == "llm" and not row["llm_call_id"]:
            untraced.add(pid, row["note_id"], row["created_at"])
        moved = (notes_of_erased or {}).get(pid, set()) - {row["note_id"]}
        if moved:
            _bad(
                f,
                "proposal",
                pid,
                f"proposal {pid} is on note {row['note_id']} but its changes are on "
                f"{', '.join(sorted(moved))}: it was rewritten under cover of an erasure",
            )
        made = decisions.get(pid)
        entries = erased_decisions.get(pid)
        if made and len(made) > 1:
            _bad(
                f,
                "decision",
                pid,
                f"proposal {pid} is decided {len(made)} times in the event chain, where amem decides a "
                "proposal once: the later decisions were added behind amem's back to overturn the first",
            )
        elif made and _erased_entries(entries) and row["review_comment"] != REDACTED:
            _bad(
                f,
                "decision",
                pid,
                f"proposal {pid}'s decision is not what an erasure leaves (its comment replaced by "
                f"{REDACTED!r}, nothing else): it was rewritten under cover of erasure "
                f"{(entries or [{}])[-1].get('erasure_id')}",
            )
        elif made and not _matches(payload_digest("decision", row), made[0], entries):
            _bad(
                f,
                "decision",
                pid,
                f"proposal {pid} is {row['status']}, which is not the decision the event chain recorded: "
                f"{_decision_difference(row, made[0])}",
            )
        elif made and entries:
            _erased_fields_hold(f, "decision", pid, "proposal", row, entries)
        elif not made and (
            row["status"] != "pending" or row["reviewer"] is not None or row["reviewed_at"] is not None
        ):
            _bad(
                f,
                "decision",
                pid,
                f"proposal {pid} is {row['status']} but the event chain records no decision on it",
            )

    checked = _check_rows(
        tx,
        f,
        recorded,
        erased,
        kind="proposal",
        table="proposals",
        key="id",
        noun="proposal",
        also=status_is_decided,
    )
    for pid in sorted(decisions.keys() - seen):
        _bad(
            f,
            "decision",
            pid,
            f"the event chain records a decision on proposal {pid}, which is missing from proposals: "
            "it was deleted",
        )
    return checked


class _Untraced:
    """The model's proposals that name no model call, as verify's one pass over the proposals meets
    them: how many, and the oldest few by when they were made (a heap: a ledger of such rows is not
    held in memory whole)."""

    #: How many a notice names.
    SHOWN = 5

    def __init__(self) -> None:
        self.count = 0
        self._oldest: list[tuple[float, str, str, str]] = []  # (-time, at, proposal, note): a max-heap
        self.first: datetime | None = None
        self.last: datetime | None = None

    def add(self, proposal_id: str, note_id: str, at: datetime) -> None:
        at = as_utc(at)
        self.count += 1
        self.first = at if self.first is None else min(self.first, at)
        self.last = at if self.last is None else max(self.last, at)
        entry = (-at.timestamp(), at.isoformat(), proposal_id, note_id)
        if len(self._oldest) < self.SHOWN:
            heapq.heappush(self._oldest, entry)
        elif entry > self._oldest[0]:  # older than the newest of those kept
            heapq.heapreplace(self._oldest, entry)

    def notice(self) -> str:
        """What an auditor is told: not tampering (the chain covers them as recorded), but these
        values say a model made them and nothing traces them to the call."""
        named = ", ".join(
            f"{pid} (note {note}, {at})" for _, at, pid, note in sorted(self._oldest, reverse=True)
        )
        which = "it is" if self.count == 1 else f"the oldest {len(self._oldest)} are"
        span = (
            ""
            if self.count == 1 or self.first is None or self.last is None
            else f", made {self.first.isoformat()} to {self.last.isoformat()}"
        )
        return (
            f"{self.count} proposal(s) say a model made them (proposer llm:...) but name no model call "
            f"(llm_call_id){span}: their values cannot be traced to the call that made them; {which} "
            f"{named}. amem refuses such a proposal now; older versions recorded them from library "
            "callers, so this is not tampering"
        )


def _decision_difference(row: Any, recorded: str) -> str:
    """Which field of a decision differs from its record, where one alone does: the chain keeps only
    a digest, so a field is named when putting back the value it can only have had (another status,
    no reviewer, no comment, no time) matches it."""
    from amem.domain.models import ProposalStatus

    current = {name: row[name] for name in ("id", *_DECISION_FIELDS)}
    candidates: dict[str, list[Any]] = {
        "status": [s.value for s in ProposalStatus],
        "reviewer": [None],
        "review_comment": [None],
        "reviewed_at": [None],
    }
    for name, values in candidates.items():
        for value in values:
            if value != current[name] and payload_digest("decision", {**current, name: value}) == recorded:
                shown = "none" if value is None else repr(value)
                return f"its {name.replace('_', ' ')} was altered (recorded: {shown})"
    return (
        "its reviewer, its comment or its review time was altered (the chain keeps their digest, not "
        "their text, so which one cannot be told)"
    )


def _notes(
    tx: LedgerTx,
    f: _Findings,
    creations: dict[str, tuple[str, list[str]]],
    changed_notes: set[str],
    batch: int = 500,
) -> int:
    """Each note must equal the replay of its changes, and keep the scope and raw logs its creation
    proposal (checked against the event chain) recorded: a note moved to another account, or given
    other sources, is named. A note the changes name that has no row was deleted (a note is never
    deleted, only marked so by a change)."""
    checked = 0
    present: set[str] = set()
    page: list[Note] = []

    def flush() -> None:
        by_note: dict[str, list[Any]] = defaultdict(list)
        for c in tx.changes_of_notes([n.id for n in page]):
            by_note[c.note_id].append(c)
        for note in page:
            rebuilt = replay(note, by_note.get(note.id, []))
            if rebuilt is None:
                f.add(
                    f"notes {note.id}", f"note {note.id} has no changes: it was inserted behind amem's back"
                )
                continue
            with warnings.catch_warnings():  # a forged value of the wrong type is reported below
                warnings.simplefilter("ignore")
                stored, expected = note.model_dump(mode="json"), rebuilt.model_dump(mode="json")
            wrong = [k for k in REPLAYED_FIELDS if stored[k] != expected[k]]
            made = creations.get(by_note[note.id][0].proposal_id)
            if made is None or made[0] != note.scope:
                wrong.append("scope")
            if made is None or made[1] != list(note.raw_log_ids):
                wrong.append("raw_log_ids")
            if wrong:
                f.add(
                    f"notes {note.id}",
                    f"note {note.id} does not equal the replay of its changes ({', '.join(wrong)}): "
                    "it was edited outside governance",
                )
        page.clear()

    for row in tx.iter_rows("notes", "id"):
        page.append(tx.note_from_row(row))
        present.add(page[-1].id)
        checked += 1
        if len(page) >= batch:
            flush()
    flush()
    for note_id in sorted(changed_notes - present):
        f.add(f"notes {note_id}", f"note {note_id} has changes but no row: it was deleted")
    return checked


# -- checkpoints ---------------------------------------------------------------------------------


def _prove(
    line: int,
    statement: dict[str, Any],
    public_key: Any,
    event_hashes: list[str],
    events_ok: bool,
    change_hashes: list[str],
    changes_ok: bool,
    *,
    of_a_backup: bool = False,
) -> CheckpointProof:
    from amem.services.checkpoints import other_ledger, statement_problem

    seq = statement.get("event_seq")
    at = statement.get("at")
    when = datetime.fromisoformat(at) if isinstance(at, str) else None
    problem = statement_problem(statement, public_key)
    if problem is None and of_a_backup and events_ok and seq > len(event_hashes):
        problem = _changes_held_as_signed(statement, change_hashes)
        if problem is None:  # signed after the backup was taken, or the backup was cut short
            return CheckpointProof(
                line=line,
                seq=seq,
                at=when,
                proven=False,
                newer_than_ledger=True,
                message=f"checkpoint at line {line}: newer than this backup (events "
                f"{len(event_hashes) + 1}..{seq} not in it), signed at {at}",
            )
    if problem is None:
        problem = _extends(statement, event_hashes, events_ok, change_hashes, changes_ok)
        elsewhere = other_ledger(statement, event_hashes[0] if event_hashes else None)
        if problem is not None and elsewhere is not None:
            problem = f"{problem}; {elsewhere}"
    if problem is not None:
        return CheckpointProof(
            line=line,
            seq=seq if isinstance(seq, int) else None,
            at=when,
            proven=False,
            message=f"checkpoint at line {line}: {problem}",
        )
    return CheckpointProof(
        line=line,
        seq=seq,
        at=when,
        proven=True,
        message=f"checkpoint at line {line}: events 1..{seq} and changes 1..{statement['change_seq']} "
        f"are as signed at {at}",
    )


def _extends(
    statement: dict[str, Any],
    event_hashes: list[str],
    events_ok: bool,
    change_hashes: list[str],
    changes_ok: bool,
) -> str | None:
    seq, signed = statement["event_seq"], statement["event_hash"]
    if seq > len(event_hashes):
        if events_ok:
            return f"it signed {seq} events but the ledger holds {len(event_hashes)}: the chain was truncated"
        return f"it signed {seq} events but the event chain breaks at event {len(event_hashes) + 1}"
    if seq and event_hashes[seq - 1] != signed:
        return (
            f"event {seq} no longer has the hash it signed: the chain was rewritten at or before event {seq}"
        )
    cseq, csigned = statement["change_seq"], statement["change_hash"]
    if cseq > len(change_hashes):
        if changes_ok:
            return f"it signed {cseq} changes but the ledger holds {len(change_hashes)}: truncated"
        return f"it signed {cseq} changes but the change chain breaks at change {len(change_hashes) + 1}"
    if cseq and change_hashes[cseq - 1] != csigned:
        return (
            f"change {cseq} no longer has the hash it signed: the changes were rewritten at or before {cseq}"
        )
    return None


def _changes_held_as_signed(statement: dict[str, Any], change_hashes: list[str]) -> str | None:
    """Of a statement newer than the backup verified (its events are not all there), the part that
    can still be checked: the change it signed last, if the backup holds that many changes, must
    have the hash it signed. A genuine older backup is a prefix of what was signed."""
    cseq, csigned = statement["change_seq"], statement["change_hash"]
    if cseq and cseq <= len(change_hashes) and change_hashes[cseq - 1] != csigned:
        return (
            f"change {cseq} no longer has the hash it signed: the changes were rewritten at or before {cseq}"
        )
    return None


def _not_held(newer: list[CheckpointProof], held: int) -> str:
    """What restoring a backup older than some signed statements loses, said plainly: the operator
    decides, since a backup cut short by someone looks the same as an older one."""
    lines = ", ".join(str(p.line) for p in newer)
    last = max(newer, key=lambda p: p.seq or 0)
    signed = last.at.isoformat() if last.at else "?"
    return (
        f"the ledger ends at event {held}, and the checkpoint(s) at line(s) {lines} of the log signed "
        f"events up to {last.seq} (the latest at {signed}): events {held + 1}..{last.seq} are not in it. "
        "They were recorded after this backup was taken, and restoring it loses them; a backup cut "
        "short would look the same. If a newer backup holds them, restore that one instead"
    )


def _tokens(tx: LedgerTx, f: _Findings, seq_of: dict[tuple[str, str], int] | None = None) -> None:
    """Each token (api_tokens, its current state) against its chained record (token_events): made
    as it stands (name, role, term, scopes, maker and time, and its digest where recorded), revoked
    if and only if a revocation is recorded, and when. amem records a token's creation once and its
    revocation at most once (it revokes active tokens only): a second record of either, which would
    pass off another token as recorded, is reported, and the row compared with the first, in the
    event chain's order. A token row no recorded creation backs was inserted behind amem's back: it
    would let its holder act as its name."""
    order = seq_of or {}
    made: dict[str, Any] = {}
    revocations: dict[str, Any] = {}
    events = sorted(
        (dict(e) for e in tx.iter_rows("token_events", "id")),
        key=lambda e: (order.get(("token", e["id"]), 0), e["at"], e["id"]),
    )
    for event in events:
        first = made if event["action"] == "created" else revocations
        if event["token_id"] in first:
            what = "created" if event["action"] == "created" else "revoked"
            f.add(
                f"api_tokens {event['token_id']}",
                f"token {event['token_id']} is recorded as {what} twice (token events "
                f"{first[event['token_id']]['id']} and {event['id']}), where amem records it once: the "
                "later record was added behind amem's back",
            )
            continue
        first[event["token_id"]] = event
    seen: set[str] = set()
    for row in tx.iter_rows("api_tokens", "id"):
        seen.add(row["id"])
        creation = made.get(row["id"])
        where = f"api_tokens {row['id']}"
        if creation is None:
            f.add(
                where,
                f"token {row['id']} ({row['name']}) has no recorded creation: it was inserted "
                "behind amem's back",
            )
            continue
        recorded = {
            "name": creation["name"],
            "role": creation["role"],
            "expires_at": creation["expires_at"],
            "scopes": creation.get("scopes"),
            "created_by": creation["by"],
            "created_at": creation["at"],
        }
        altered = [name for name, value in recorded.items() if value != row[name]]
        revocation = revocations.get(row["id"])
        if altered:
            f.add(
                where,
                f"token {row['id']} is not the token its recorded creation made: its "
                f"{', '.join(altered)} {'differs' if len(altered) == 1 else 'differ'} from the record",
            )
        elif creation.get("token_sha256") is not None and creation["token_sha256"] != row["token_sha256"]:
            # a creation before migration 0022 recorded no digest: there is nothing to compare
            f.add(
                where,
                f"token {row['id']} ({row['name']}) is not the token its recorded creation made: its "
                "digest was swapped, so another token acts as its name",
            )
        elif (row["revoked_at"] is not None) != (revocation is not None):
            state = (
                "revoked with no recorded revocation"
                if row["revoked_at"] is not None
                else "un-revoked behind amem's back"
            )
            f.add(where, f"token {row['id']} was {state}")
        elif revocation is not None and revocation["at"] != row["revoked_at"]:
            f.add(
                where,
                f"token {row['id']} says it was revoked at {row['revoked_at']}, but its recorded "
                f"revocation was at {revocation['at']}: its revocation time was altered",
            )
    for token_id in made.keys() - seen:
        f.add(f"api_tokens {token_id}", f"token {token_id} was made, as recorded, and its row is gone")


def _erased_after_signing(
    proofs: list[CheckpointProof],
    checkpoints: Sequence[tuple[int, dict[str, Any]]],
    erased: dict[str, dict[str, list[dict[str, Any]]]],
    erasure_rows: dict[str, dict[str, Any]],
    seq_of: dict[tuple[str, str], int],
) -> list[str]:
    """For each erasure recorded after a proven checkpoint, the rows that checkpoint signed which it
    redacted: not tampering (an erasure is a recorded, authorised event), but what they held when
    signed is now proven by digests only, and an auditor should see who did that, and why."""
    proven = sorted(
        (st["event_seq"], st["change_seq"], line)
        for (line, st), proof in zip(checkpoints, proofs, strict=True)
        if proof.proven
    )
    if not proven:
        return []
    by_erasure: dict[str, list[str]] = defaultdict(list)
    for table, rows in erased.items():
        for key, entries in rows.items():
            for entry in entries:
                at = seq_of.get(("erasure", entry["erasure_id"]))
                signed = [p for p in proven if at is not None and p[0] < at]
                if not signed:
                    continue
                event_seq, change_seq, _line = signed[-1]
                if table == "changes":
                    inside = key.isdigit() and int(key) <= change_seq
                else:
                    row_seq = seq_of.get((_ERASED_KIND.get(table, ""), key))
                    inside = row_seq is not None and row_seq <= event_seq
                if inside:
                    by_erasure[entry["erasure_id"]].append(f"{table} {key}")
    notices = []
    for erasure_id, rows in sorted(by_erasure.items(), key=lambda kv: seq_of.get(("erasure", kv[0]), 0)):
        at = seq_of[("erasure", erasure_id)]
        line = max((p for p in proven if p[0] < at), key=lambda p: p[0])[2]
        who = erasure_rows.get(erasure_id, {})
        shown = ", ".join(sorted(set(rows))[:10]) + (", ..." if len(set(rows)) > 10 else "")
        notices.append(
            f"erasure {erasure_id} (event {at}, by {who.get('erased_by')}: {who.get('reason')}) was recorded "
            f"after the checkpoint at line {line} and redacted {len(set(rows))} row(s) it signed ({shown}): "
            "what they held when signed is proven by their digests only"
        )
    return notices


#: The triggers a PostgreSQL ledger's append-only tables are made with (migrations 0001, 0007, 0008
#: and amem.ledger.append_only): one refusing a row's UPDATE or DELETE, one refusing TRUNCATE.
#: Each table is found as the ledger's own statements find it, by its unqualified name on the
#: search_path (to_regclass), not in current_schema(): that is the first schema on the path that
#: exists, which an empty role-named schema ("$user", public) takes over from the ledger's.
_PG_GUARDS = ("append_only", "no_truncate")
_PG_TRIGGERS = sa.text(
    "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "WHERE t.tgrelid IN (SELECT to_regclass(name) FROM unnest(CAST(:tables AS text[])) AS name) "
    "AND NOT t.tgisinternal"
)


def _append_only_guards(tx: LedgerTx, f: _Findings) -> None:
    """A PostgreSQL ledger whose append-only tables lack their triggers, named: its rows verify,
    yet nothing stops them being rewritten. PostgreSQL only: pg_restore loads the rows before the
    triggers, where a SQLite restore is copied whole. What someone with the rights to disable or
    drop a trigger then rewrites, the chains and the checkpoints catch."""
    if tx.dialect != "postgresql":
        return
    present = {
        (str(table), str(name))
        for table, name in tx.conn.execute(_PG_TRIGGERS, {"tables": list(APPEND_ONLY_TABLES)})
    }
    lacking: list[str] = []
    for table in APPEND_ONLY_TABLES:
        missing = [f"{table}_{g}" for g in _PG_GUARDS if (table, f"{table}_{g}") not in present]
        if missing:
            lacking.append(table if len(missing) == len(_PG_GUARDS) else f"{table} ({', '.join(missing)})")
    if lacking:
        f.add(
            "append-only triggers",
            f"the append-only triggers of {', '.join(lacking)} are missing: the database no longer "
            "refuses to change or delete their rows (dropped, or a restore stopped part-way: restore "
            "the backup again into a new database)",
        )


def _policy_text_matches(f: _Findings, row: Any) -> None:
    """An installed policy's text must still hash to the sha256 its event recorded."""
    if sha256_text(row["text"]) != row["sha256"]:
        _bad(
            f,
            "policy",
            str(row["version"]),
            f"policy version {row['version']}: its text does not match its sha256",
        )
