"""The hash and signature contract: canonical serialisation, the change chain, the event chain
and signed checkpoints.

A change's hash covers a canonical form of the row (sorted keys, fixed separators, UTC times)
and the previous row's hash. Values enter by digest, so a later redaction of a payload can keep
the chain verifiable.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from amem.domain.models import as_utc

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def value_digest(value: Any) -> str:
    return sha256_text(canonical_json(value))


def change_hash(
    *,
    prev_hash: str,
    seq: int,
    note_id: str,
    proposal_id: str,
    attribute: str,
    old_value: Any,
    new_value: Any,
    note_version: int,
    actor_kind: str,
    actor_id: str,
    kind: str,
    applied_at: datetime,
) -> str:
    return change_hash_of_digests(
        prev_hash=prev_hash,
        seq=seq,
        note_id=note_id,
        proposal_id=proposal_id,
        attribute=attribute,
        old_value_sha256=value_digest(old_value),
        new_value_sha256=value_digest(new_value),
        note_version=note_version,
        actor_kind=actor_kind,
        actor_id=actor_id,
        kind=kind,
        applied_at=applied_at,
    )


def change_hash_of_digests(
    *,
    prev_hash: str,
    seq: int,
    note_id: str,
    proposal_id: str,
    attribute: str,
    old_value_sha256: str,
    new_value_sha256: str,
    note_version: int,
    actor_kind: str,
    actor_id: str,
    kind: str,
    applied_at: datetime,
) -> str:
    """The change hash from its values' digests: what verify uses for a change whose values were erased."""
    body = {
        "prev_hash": prev_hash,
        "seq": seq,
        "note_id": note_id,
        "proposal_id": proposal_id,
        "attribute": attribute,
        "old_value_sha256": old_value_sha256,
        "new_value_sha256": new_value_sha256,
        "note_version": note_version,
        "actor": f"{actor_kind}:{actor_id}",
        "kind": kind,
        "applied_at": as_utc(applied_at).isoformat(),
    }
    return sha256_text(canonical_json(body))


# -- the event chain --------------------------------------------------------------------------
#
# Every event (a raw log recorded, an LLM call recorded, a proposal made, a decision, a change
# applied, a policy installed, an erasure) is a row of ``events`` whose hash covers the previous
# row's hash and a digest of the event's canonical content. The content itself stays in its own
# table; the chain holds only its digest, so an erased payload leaves the chain verifiable.

#: The columns of each kind of row that its event's payload digest covers. Changing a list, or the
#: canonical form above, redefines every existing ledger: tests/ledger/test_hash_contract.py pins
#: them to fixed hashes.
PAYLOAD_FIELDS: dict[str, tuple[str, ...]] = {
    # raw_logs: the text enters through its sha256; verify checks the text against that separately
    "raw_log": (
        "id",
        "seq",
        "sha256",
        "occurred_at",
        "actor_kind",
        "actor_id",
        "scope",
        "received_at",
        "metadata",
    ),
    "llm_call": (
        "id",
        "task",
        "model",
        "prompt_version",
        "raw_log_id",
        "prompt_sha256",
        "response_text",
        "prompt_tokens",
        "completion_tokens",
        "latency_ms",
        "error",
        "created_at",
    ),
    # proposals: what never changes once made; the status moves through decision events
    "proposal": (
        "id",
        "seq",
        "note_id",
        "scope",
        "attribute",
        "old_value",
        "new_value",
        "base_version",
        "reason",
        "evidence",
        "proposer_kind",
        "proposer_id",
        "model",
        "prompt_version",
        "usage",
        "llm_call_id",
        "raw_log_ids",
        "rule",
        "policy_sha256",
        "created_at",
        "revert_of",
    ),
    # a proposal's decision: the subject is the proposal id
    "decision": ("id", "status", "reviewer", "review_comment", "reviewed_at"),
    # a change applied: its own hash already covers its content and the change chain
    "change": ("seq", "hash"),
    # a policy version installed (the other rows of that table are the policy's own)
    "policy": ("version", "sha256", "installed_by", "installed_at"),
    # an erasure: who, why, what was asked; rows_sha256 covers every erased_rows entry it made
    "erasure": ("id", "reason", "erased_by", "erased_at", "selector", "rows_sha256"),
    # a token created or revoked (token_events, migration 0016): the whole row
    "token": ("id", "token_id", "action", "name", "role", "by", "at", "expires_at"),
}

#: Columns added to a kind after ledgers held rows of it: covered only where a row has a value, so
#: every row made before keeps the digest its event recorded. A token's scopes (migration 0019):
#: the accounts an agent token is limited to; none, every account, as before. A token creation's
#: ``token_sha256`` (migration 0022): the digest of the token it made, so a digest swapped in
#: api_tokens (someone else's token acting as its name) is told. A proposal's ``corrects``
#: (migration 0021): the proposal a reviewer's correction replaces. A model call's
#: ``served_model`` (migration 0024): the model the provider says answered, where not the one asked.
OPTIONAL_PAYLOAD_FIELDS: dict[str, tuple[str, ...]] = {
    "token": ("scopes", "token_sha256"),
    "proposal": ("corrects",),
    "llm_call": ("served_model",),
}


def erased_rows_digest(entries: list[dict[str, Any]]) -> str:
    """What an erasure commits to: every erased_rows entry it made (less its erasure id), in order."""
    fields = ("table_name", "row_key", "digest_before", "digest_after", "detail")
    ordered = sorted(
        ({f: e[f] for f in fields} for e in entries), key=lambda e: (e["table_name"], e["row_key"])
    )
    return value_digest(ordered)


#: What an erased text becomes, everywhere it was (raw logs, derived values, proposals, model answers).
REDACTED = "[erased]"

#: An erased change's entry (erased_rows.detail): the digests of the values it was written with,
#: which its hash covers (verify hashes it from these), and of the values the erasure left in the
#: row, which verify holds the row to. Erasures made before the latter were recorded lack them.
ORIGINAL_VALUE_DIGESTS = ("old_value_sha256", "new_value_sha256")
REDACTED_VALUE_DIGESTS = ("redacted_old_value_sha256", "redacted_new_value_sha256")


def erased_change_detail(original: dict[str, Any], old_value: Any, new_value: Any) -> dict[str, str]:
    """What an erasure records of a change it redacts: ``original``'s value digests (kept from the
    change's first erasure, since its hash covers them) and those of the values it leaves, so a row
    rewritten after the erasure is told."""
    return {
        **{name: original[name] for name in ORIGINAL_VALUE_DIGESTS},
        REDACTED_VALUE_DIGESTS[0]: value_digest(old_value),
        REDACTED_VALUE_DIGESTS[1]: value_digest(new_value),
    }


#: An erased row's entry (erased_rows.detail) for a raw log, a model call, a proposal or a decision:
#: the digest of each field its event covers, as the row was (``fields_before``) and as the erasure
#: left it (``fields_after``). The event commits to the whole row only, so without these a forged
#: erasure could change any field under cover of redacting one; verify holds each field an erasure
#: never changes to its digest before. What the erasure removed is recorded only as having been
#: there (null), since a digest of a short erased text would confirm a guess of it: a field it
#: changed has a null digest before; of a list it changed, each item's digest (``items_before``:
#: null for an item it removed; ``items_after``); of a model answer it rewrote (``answer_before``),
#: the digest of its JSON shape and of each string leaf it kept (null for one it redacted).
#: Erasures made before these were recorded have none.
ERASED_FIELDS = ("fields_before", "fields_after")


def erased_row_detail(
    kind: str, before: dict[str, Any], after: dict[str, Any], answer: tuple[Any, Any] | None = None
) -> dict[str, Any]:
    """What an erasure records of a row of ``kind`` it redacts from ``before`` to ``after``;
    ``answer``: a model answer it rewrote rather than replaced, parsed (before, after)."""
    names = [*PAYLOAD_FIELDS[kind]]
    names += [n for n in OPTIONAL_PAYLOAD_FIELDS.get(kind, ()) if before.get(n) is not None]
    detail: dict[str, Any] = {
        "fields_before": {n: value_digest(before[n]) if before[n] == after[n] else None for n in names},
        "fields_after": {n: value_digest(after[n]) for n in names},
    }
    lists = [n for n in names if isinstance(before[n], list) and before[n] != after[n]]
    if lists:
        detail["items_before"] = {n: kept_item_digests(before[n], after[n]) for n in lists}
        detail["items_after"] = {
            n: [value_digest(x) for x in after[n]] if isinstance(after[n], list) else None for n in lists
        }
    if answer is not None:
        old, new = string_leaves(answer[0]), string_leaves(answer[1])
        detail["answer_before"] = {
            "shape_sha256": json_shape_digest(answer[0]),
            "strings": [value_digest(a) if a == b else None for a, b in zip(old, new, strict=False)],
        }
    return detail


def kept_item_digests(before: list[Any], after: Any) -> list[str | None]:
    """Each item of ``before``: its digest where ``after`` kept it (in order), null where it went."""
    left = list(after) if isinstance(after, list) else []
    out: list[str | None] = []
    for item in before:
        if left and item in left:
            left = left[left.index(item) + 1 :]
            out.append(value_digest(item))
        else:
            out.append(None)
    return out


def json_shape_digest(data: Any) -> str:
    """The digest of a parsed JSON value with every string leaf emptied: its keys, list lengths,
    numbers, flags and nulls, which an erasure that only redacts text never changes."""
    return value_digest(_shape(data))


def _shape(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _shape(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_shape(v) for v in data]
    return "" if isinstance(data, str) else data


def string_leaves(data: Any) -> list[str]:
    """A parsed JSON value's string leaves (not its keys), in canonical (sorted key) order."""
    if isinstance(data, dict):
        return [s for k in sorted(data) for s in string_leaves(data[k])]
    if isinstance(data, list):
        return [s for v in data for s in string_leaves(v)]
    return [data] if isinstance(data, str) else []


def payload_digest(kind: str, row: Any) -> str:
    """The digest of a row's event content: the fields ``PAYLOAD_FIELDS[kind]`` of ``row`` (a mapping),
    and those of ``OPTIONAL_PAYLOAD_FIELDS[kind]`` that it holds a value in."""
    content = {name: row[name] for name in PAYLOAD_FIELDS[kind]}
    for name in OPTIONAL_PAYLOAD_FIELDS.get(kind, ()):
        if row.get(name) is not None:
            content[name] = row[name]
    return value_digest({"kind": kind, **content})


def event_hash(
    *, prev_hash: str, seq: int, kind: str, subject: str, payload_digest: str, at: datetime
) -> str:
    body = {
        "prev_hash": prev_hash,
        "seq": seq,
        "kind": kind,
        "subject": subject,
        "payload_sha256": payload_digest,
        "at": as_utc(at).isoformat(),
    }
    return sha256_text(canonical_json(body))


# -- signed checkpoints -----------------------------------------------------------------------
#
# A checkpoint is a JSON statement of the chain's head (sequence number and hash), signed with an
# Ed25519 key the database does not hold. Its signature covers the canonical JSON of every field
# but "signature" itself.

CHECKPOINT_VERSION = 1


def checkpoint_message(statement: dict[str, Any]) -> bytes:
    return canonical_json({k: v for k, v in statement.items() if k != "signature"}).encode("utf-8")


def public_key_id(public_key_raw: bytes) -> str:
    """A short name for a public key: the first 16 hex digits of the sha256 of its raw 32 bytes."""
    return hashlib.sha256(public_key_raw).hexdigest()[:16]


def sign_checkpoint(private_key: Any, statement: dict[str, Any]) -> str:
    """The base64 Ed25519 signature of ``statement`` (an ``Ed25519PrivateKey``)."""
    import base64

    return base64.b64encode(private_key.sign(checkpoint_message(statement))).decode("ascii")


def checkpoint_signature_ok(public_key: Any, statement: dict[str, Any]) -> bool:
    """True when ``statement['signature']`` is ``public_key``'s signature of the statement."""
    import base64
    import binascii

    from cryptography.exceptions import InvalidSignature

    try:
        signature = base64.b64decode(str(statement.get("signature", "")), validate=True)
        public_key.verify(signature, checkpoint_message(statement))
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True
