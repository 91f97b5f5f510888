"""Canonical serialisation and the change chain's hash.

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
    body = {
        "prev_hash": prev_hash,
        "seq": seq,
        "note_id": note_id,
        "proposal_id": proposal_id,
        "attribute": attribute,
        "old_value_sha256": value_digest(old_value),
        "new_value_sha256": value_digest(new_value),
        "note_version": note_version,
        "actor": f"{actor_kind}:{actor_id}",
        "kind": kind,
        "applied_at": as_utc(applied_at).isoformat(),
    }
    return sha256_text(canonical_json(body))
