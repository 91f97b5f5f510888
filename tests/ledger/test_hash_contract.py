"""The hash contract, pinned: fixed input -> fixed hash.

Every existing ledger and checkpoint log was written with these functions. If one of these tests
fails, an edit (to canonical JSON, a payload's fields, an event's body, the signed bytes) has
redefined every existing ledger: they would all fail to verify. Change the contract only with a
migration that says how old rows are read.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from amem.domain.hashing import (
    GENESIS_HASH,
    OPTIONAL_PAYLOAD_FIELDS,
    PAYLOAD_FIELDS,
    REDACTED,
    canonical_json,
    change_hash,
    checkpoint_message,
    checkpoint_signature_ok,
    erased_change_detail,
    erased_rows_digest,
    event_hash,
    payload_digest,
    sha256_text,
    sign_checkpoint,
    value_digest,
)

AT = datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)
#: A reviewer token's creation event as recorded before migration 0019 (no scopes, no digest).
REVIEWER_TOKEN_CREATED = {
    "id": "tev_1",
    "token_id": "tok_1",
    "action": "created",
    "name": "alice",
    "role": "reviewer",
    "by": "alice",
    "at": AT,
    "expires_at": None,
}
RAW = {
    "id": "r_1",
    "seq": 1,
    "sha256": sha256_text("We agreed on 50 seats"),
    "occurred_at": AT,
    "actor_kind": "agent",
    "actor_id": "sales-agent",
    "scope": "acme",
    "received_at": AT,
    "metadata": {"call": 7},
}


def test_canonical_json_is_pinned() -> None:
    value = {"b": [1, 2.5, None, True], "a": "é\u200b", "t": AT}
    assert (
        canonical_json(value)
        == '{"a":"é\u200b","b":[1,2.5,null,true],"t":"2026-11-30T12:00:00.123456+00:00"}'
    )
    # the same instant in another zone is the same canonical time
    assert canonical_json({"t": AT.astimezone(timezone(timedelta(hours=5)))}) == canonical_json({"t": AT})
    assert (
        value_digest({"b": [1, 2.5, None, True], "a": "é", "t": AT})
        == "c28b0c58cf7454ecba0070399a63691a8a372fd60bf6e9d5b1a7dadc6994fa5d"
    )


def test_change_hash_is_pinned() -> None:
    digest = change_hash(
        prev_hash=GENESIS_HASH,
        seq=1,
        note_id="n_1",
        proposal_id="p_1",
        attribute="tags",
        old_value=None,
        new_value=["a", "b"],
        note_version=2,
        actor_kind="llm",
        actor_id="offline",
        kind="apply",
        applied_at=AT,
    )
    assert digest == "db8a4b1e9a3b629fc8e2ca313451122a165093bc147e4cfa835b5031dc595cbf"


def test_event_payloads_and_hash_are_pinned() -> None:
    assert (
        payload_digest("raw_log", RAW) == "8184cd611d298b25054696cc1e7e4a45952a7cdc2de49afc985c597ca6287316"
    )
    decision = {
        "id": "p_1",
        "status": "approved",
        "reviewer": "alice",
        "review_comment": "ok",
        "reviewed_at": AT,
    }
    assert (
        payload_digest("decision", decision)
        == "b3e4581b9573cabd3adc804d3586aece1e39e4f8db74a0b52edbf25fdc43b5a3"
    )
    digest = event_hash(
        prev_hash=GENESIS_HASH,
        seq=1,
        kind="raw_log",
        subject="r_1",
        payload_digest=payload_digest("raw_log", RAW),
        at=AT,
    )
    assert digest == "30a2151a482d7fd1e58e70caf04b569d78e2b1878aeb599443b13beb101c0a0c"
    token = dict(REVIEWER_TOKEN_CREATED)
    assert (
        payload_digest("token", token) == "4e4ade875e5a87e800c08ab2104f6e1e25f8dcf7b1d0bdc231ff7befab392222"
    )
    # a row without scopes (every token before migration 0019) keeps its digest: none is redefined
    assert payload_digest("token", {**token, "scopes": None}) == payload_digest("token", token)


def test_token_scopes_are_covered_where_given() -> None:
    """An agent token limited to some scopes commits to them: lifting the limit changes the digest."""
    token = {
        "id": "tev_1",
        "token_id": "tok_1",
        "action": "created",
        "name": "crm-sync",
        "role": "agent",
        "by": "os:ops@host",
        "at": AT,
        "expires_at": None,
        "scopes": ["acme", "globex"],
    }
    assert (
        payload_digest("token", token) == "7a5281ff98d44155faf8cea481d973ce19fe8a6a8fffdfa1426b8d897714d9cc"
    )
    assert payload_digest("token", {**token, "scopes": None}) != payload_digest("token", token)
    assert payload_digest("token", {**token, "scopes": ["acme"]}) != payload_digest("token", token)


def test_a_token_creation_commits_to_its_tokens_digest_where_it_records_one() -> None:
    """Migration 0022: a creation recorded before (no token_sha256) keeps its digest; one made since
    commits to the token's digest, so another token's digest in its api_tokens row is told."""
    token = dict(REVIEWER_TOKEN_CREATED)
    before = "4e4ade875e5a87e800c08ab2104f6e1e25f8dcf7b1d0bdc231ff7befab392222"  # pinned above
    assert payload_digest("token", {**token, "token_sha256": None}) == before
    recorded = payload_digest("token", {**token, "token_sha256": sha256_text("amem_x")})
    assert recorded == "015e4790039a8faf75aec971b49def018f1ec69ff6e59afa876180c5980c4656"
    assert payload_digest("token", {**token, "token_sha256": sha256_text("amem_y")}) != recorded


def test_an_erased_changes_entry_is_pinned() -> None:
    """An erasure commits (rows_sha256) to each erased change's entry: the digests its hash covers,
    and those of the values it left, which verify holds the row to."""
    original = {"old_value_sha256": value_digest(None), "new_value_sha256": value_digest("Jane Doe")}
    detail = erased_change_detail({**original, "redacted_new_value_sha256": "x"}, None, REDACTED)
    assert detail == {
        **original,
        "redacted_old_value_sha256": value_digest(None),
        "redacted_new_value_sha256": value_digest(REDACTED),
    }
    entry = {"table_name": "changes", "row_key": "3", "digest_before": None, "digest_after": None}
    assert (
        erased_rows_digest([{**entry, "detail": detail}])
        == "bbc44300a9000ad91e480780c6981f3acd5b3277c2d66eba56b383bd14f62e2e"
    )


def test_a_proposal_commits_to_the_proposal_it_corrects_where_it_corrects_one() -> None:
    """Migration 0021: a proposal without ``corrects`` (every one made before) keeps its digest; a
    reviewer's correction commits to the proposal it replaces."""
    from amem.domain.hashing import PAYLOAD_FIELDS as fields

    proposal = {name: None for name in fields["proposal"]}
    proposal |= {"id": "p_1", "seq": 1, "note_id": "n_1", "attribute": "valid_at", "created_at": AT}
    plain = payload_digest("proposal", proposal)
    # the digest f397157's code (before 0021) gave this row
    assert plain == "5a4a1e37b4276176751953a04b44a2fdf205e6e1d18e6a0da5aa7203f6d8609f"
    assert payload_digest("proposal", {**proposal, "corrects": None}) == plain
    corrected = payload_digest("proposal", {**proposal, "corrects": "p_0"})
    assert corrected not in (plain, payload_digest("proposal", {**proposal, "corrects": "p_2"}))


def test_payload_fields_are_pinned() -> None:
    """Adding, dropping or renaming a covered column changes every digest of that kind. The kinds
    before migration 0016 are pinned apart: adding the token kind left them as they were."""
    before_tokens = {kind: fields for kind, fields in PAYLOAD_FIELDS.items() if kind != "token"}
    assert value_digest(before_tokens) == "2ad8a6c1a093a0a54890505ae9f39d0997a7f5a6224538611138d24c3801f826"
    assert value_digest(PAYLOAD_FIELDS) == "008130c0220b3a5d4071ca104cca864e066afb89ed6672e6d211b559b43b69b3"
    # 0022 added the token creation's token_sha256 (optional: no digest made before changes);
    # 0024 added the model call's served_model (optional too)
    assert (
        value_digest(OPTIONAL_PAYLOAD_FIELDS)
        == "63cfe5803035295bade1302369682e8c6a156e1507e63f1f8fadd4d5b7579b3e"
    )


def test_checkpoint_signature_is_pinned() -> None:
    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    statement = {
        "v": 1,
        "at": "2026-11-30T12:00:00+00:00",
        "event_seq": 3,
        "event_hash": "a" * 64,
        "change_seq": 1,
        "change_hash": "b" * 64,
        "counts": {"change": 1},
        "key_id": "x",
    }
    assert checkpoint_message({**statement, "signature": "ignored"}) == checkpoint_message(statement)
    signature = sign_checkpoint(key, statement)
    assert (
        signature
        == "oW9G5dhtN+NkQxYf6rx2JcJNa8zNr1bBc7xJyYlbCRYwndPIi7saYfYKVOnH0tWbsSesC6HMMjV7XBYBz/b0Dw=="
    )
    assert checkpoint_signature_ok(key.public_key(), {**statement, "signature": signature})
    assert not checkpoint_signature_ok(
        key.public_key(), {**statement, "event_seq": 4, "signature": signature}
    )
