"""The ledger's tables (SQLAlchemy Core). Alembic migrations in migrations/ create them.

raw_logs, changes and events are append-only: database triggers refuse UPDATE and DELETE on both.
Processing state of a raw log therefore lives beside it, in raw_log_states.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import TypeDecorator

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC on both backends (SQLite stores no offset)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JSONValue = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
#: A JSON value where None is SQL NULL (not JSON ``null``): "IS NULL" means "not given".
OptionalJSON = sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")


#: SQLite's own integers: a bare number beyond them is bound as JSON text, as before (SQLite keeps a
#: float of it), since the driver cannot bind it as a number.
_SQLITE_INTEGERS = range(-(2**63), 2**63)


def _bound_as_number(value: Any) -> bool:
    """A bare JSON number SQLite can be handed as a number: a float, or an integer it holds."""
    if isinstance(value, bool):  # JSON true/false: kept as JSON text
        return False
    return isinstance(value, float) or (isinstance(value, int) and value in _SQLITE_INTEGERS)


class ExactJSON(TypeDecorator[Any]):
    """A JSON value that keeps a bare number exactly on both ledgers (an attribute's old and new
    value is one, as a proposal and its change hold it).

    SQLite gives a column declared JSON NUMERIC affinity: the JSON text of a number became the REAL
    SQLite parsed from it, and SQLite's parsing (3.40) is not correctly rounded: a few floats in ten
    thousand came back one unit in the last place off (24349.51343622073 as 24349.513436220732), so
    history and the export showed another value than the note, and an untouched ledger failed
    `amem verify`, its hashes being of the value given. Here a bare number is handed to SQLite as
    the number itself, which it keeps bit for bit (a whole one as an integer, as
    ``values.normalize`` writes it); any other value is JSON text, as before. Rows stored before are
    read as they always were. PostgreSQL: JSONB, which keeps a number's digits. Binding is the one
    step changed (``bind_processor``, which TypeDecorator's subclasses usually leave alone): a number
    must not pass through the JSON serializer on SQLite at all."""

    impl = sa.JSON
    cache_ok = True
    #: As ``sa.JSON()``: Python None is stored as JSON ``null``, not SQL NULL.
    should_evaluate_none = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(postgresql.JSONB())
        return dialect.type_descriptor(sa.JSON())

    def bind_processor(self, dialect: sa.Dialect) -> Callable[[Any], Any] | None:
        as_json_text = super().bind_processor(dialect)
        if dialect.name != "sqlite":
            return as_json_text

        def bind(value: Any) -> Any:
            if _bound_as_number(value):
                return value
            return as_json_text(value) if as_json_text is not None else value

        return bind


def _json() -> Any:
    """The type of a JSON column: ``ExactJSON``, so a bare number, wherever one is stored, is kept
    exactly on SQLite too."""
    return ExactJSON()


raw_logs = sa.Table(
    "raw_logs",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False, unique=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("occurred_at", UTCDateTime, nullable=False),
    sa.Column("actor_kind", sa.String(16), nullable=False),
    sa.Column("actor_id", sa.String(200), nullable=False),
    sa.Column("scope", sa.String(200), nullable=False, index=True),
    sa.Column("received_at", UTCDateTime, nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("metadata", _json(), nullable=False),
    # an input recorded before, found by its text's digest (migration 0013): `amem import` run again
    sa.Index("ix_raw_logs_sha256", "sha256"),
)

raw_log_states = sa.Table(
    "raw_log_states",
    metadata,
    sa.Column("raw_log_id", sa.String(40), sa.ForeignKey("raw_logs.id"), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False, index=True),
    sa.Column("note_id", sa.String(40), nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    # The queue (migration 0006): who holds the input now, until when, and how often it was taken.
    sa.Column("lease_owner", sa.String(100), nullable=True),
    sa.Column("lease_until", UTCDateTime, nullable=True),
    sa.Column("claims", sa.Integer, nullable=False, server_default="0"),
    # The raw log's arrival number (raw_logs.seq), copied here (migration 0025) so that an index
    # gives a claim its order: a claim reads the first free rows of its state, never the backlog.
    sa.Column("raw_log_seq", sa.Integer, nullable=False),
    sa.Index("ix_raw_log_states_queue", "state", "lease_until"),
    sa.Index("ix_raw_log_states_claim", "state", "raw_log_seq"),
)

# A sender's own name for an input (migration 0014: the HTTP API's Idempotency-Key, an import
# line's idempotency_key): an input whose key its author sent before is kept once. Keyed by author,
# so two agents' keys never meet; append-only, like the raw logs it names. Only the key's sha256 is
# kept (migration 0017): a key can hold what an erasure must remove, and a digest still matches.
input_keys = sa.Table(
    "input_keys",
    metadata,
    sa.Column("actor_kind", sa.String(16), primary_key=True),
    sa.Column("actor_id", sa.String(200), primary_key=True),
    sa.Column("key_sha256", sa.String(200), primary_key=True),
    # migration 0023: a key names one input per (author, scope), so tokens of one name limited to
    # different scopes never meet; after the key in the primary key, so a lookup by key reads its index
    sa.Column("scope", sa.String(200), primary_key=True),
    sa.Column("raw_log_id", sa.String(40), sa.ForeignKey("raw_logs.id"), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
)

notes = sa.Table(
    "notes",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("scope", sa.String(200), nullable=False, index=True),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("keywords", _json(), nullable=False),
    sa.Column("tags", _json(), nullable=False),
    sa.Column("context", sa.Text, nullable=True),
    sa.Column("category", sa.String(200), nullable=True),
    sa.Column("links", _json(), nullable=False),
    sa.Column("decision_rationale", sa.Text, nullable=True),
    sa.Column("valid_at", UTCDateTime, nullable=True),
    sa.Column("invalid_at", UTCDateTime, nullable=True),
    sa.Column("deleted", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("extra", _json(), nullable=False),
    sa.Column("raw_log_ids", _json(), nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    # the retired notes, which a process's index view loads when it opens (migration 0012)
    sa.Index(
        "ix_notes_retired",
        "id",
        "invalid_at",
        "deleted",
        sqlite_where=sa.text("invalid_at IS NOT NULL"),
        postgresql_where=sa.text("invalid_at IS NOT NULL"),
    ),
)

llm_calls = sa.Table(
    "llm_calls",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("task", sa.String(64), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("prompt_version", sa.String(64), nullable=False),
    sa.Column("raw_log_id", sa.String(40), nullable=True, index=True),
    sa.Column("prompt_sha256", sa.String(64), nullable=False),
    sa.Column("response_text", sa.Text, nullable=True),
    sa.Column("prompt_tokens", sa.Integer, nullable=False, server_default="0"),
    sa.Column("completion_tokens", sa.Integer, nullable=False, server_default="0"),
    sa.Column("latency_ms", sa.Float, nullable=False, server_default="0"),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    # The model the provider says answered, where not the one asked for (migration 0024).
    sa.Column("served_model", sa.String(200), nullable=True),
)

proposals = sa.Table(
    "proposals",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False, unique=True),
    sa.Column("note_id", sa.String(40), sa.ForeignKey("notes.id"), nullable=False, index=True),
    sa.Column("scope", sa.String(200), nullable=False, index=True),
    sa.Column("attribute", sa.String(100), nullable=False),
    sa.Column("old_value", _json(), nullable=True),
    sa.Column("new_value", _json(), nullable=True),
    sa.Column("base_version", sa.Integer, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("evidence", sa.Text, nullable=True),
    sa.Column("proposer_kind", sa.String(16), nullable=False),
    sa.Column("proposer_id", sa.String(200), nullable=False),
    sa.Column("model", sa.String(200), nullable=True),
    sa.Column("prompt_version", sa.String(64), nullable=True),
    sa.Column("usage", _json(), nullable=True),
    sa.Column("llm_call_id", sa.String(40), sa.ForeignKey("llm_calls.id"), nullable=True),
    sa.Column("raw_log_ids", _json(), nullable=False),
    sa.Column("rule", sa.String(300), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reviewer", sa.String(200), nullable=True),
    sa.Column("review_comment", sa.Text, nullable=True),
    sa.Column("reviewed_at", UTCDateTime, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("revert_of", sa.Integer, nullable=True),
    sa.Column("policy_sha256", sa.String(64), nullable=True),
    # The proposal a reviewer's correction replaces (migration 0021).
    sa.Column("corrects", sa.String(40), nullable=True),
    sa.Index("ix_proposals_status_created", "status", "created_at"),
    sa.Index("ix_proposals_note_attr_status", "note_id", "attribute", "status"),
    # A reviewer's own last decisions, newest first (the console's queue page; migration 0020).
    sa.Index("ix_proposals_reviewer_reviewed", "reviewer", "reviewed_at"),
    # Which proposal a correction replaced (the audit log's verdicts; migration 0021).
    sa.Index("ix_proposals_corrects", "corrects"),
)

changes = sa.Table(
    "changes",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("note_id", sa.String(40), sa.ForeignKey("notes.id"), nullable=False, index=True),
    sa.Column("proposal_id", sa.String(40), sa.ForeignKey("proposals.id"), nullable=False, index=True),
    sa.Column("attribute", sa.String(100), nullable=False),
    sa.Column("old_value", _json(), nullable=True),
    sa.Column("new_value", _json(), nullable=True),
    sa.Column("note_version", sa.Integer, nullable=False),
    sa.Column("actor_kind", sa.String(16), nullable=False),
    sa.Column("actor_id", sa.String(200), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("applied_at", UTCDateTime, nullable=False),
    sa.Column("prev_hash", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.Index("ix_changes_note_attr", "note_id", "attribute"),
    sa.Index("ix_changes_applied_at", "applied_at"),
)

# One row: the head of the change chain. Writers lock it, so appends are serial and the
# chain never forks, on SQLite and on Postgres alike.
chain_head = sa.Table(
    "chain_head",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("last_seq", sa.Integer, nullable=False),
    sa.Column("last_hash", sa.String(64), nullable=False),
    sa.Column("raw_log_seq", sa.Integer, nullable=False),
    sa.Column("proposal_seq", sa.Integer, nullable=False),
    sa.Column("event_seq", sa.Integer, nullable=False, server_default="0"),
    sa.Column("event_hash", sa.String(64), nullable=False, server_default="0" * 64),
)

# Every event, one hash chain (amem.domain.hashing): a raw log recorded, an LLM call recorded, a
# proposal made, a decision, a change applied, a policy installed, an erasure, a token made or
# revoked. Appended in the
# transaction of the event itself, numbered and hashed under the chain-head lock at its commit;
# append-only like raw_logs.
events = sa.Table(
    "events",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("subject", sa.String(200), nullable=False),
    sa.Column("payload_digest", sa.String(64), nullable=False),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("prev_hash", sa.String(64), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    # a raw log's or a proposal's own event, for the auditors' export (migration 0011)
    sa.Index("ix_events_subject_kind", "subject", "kind"),
)

# Erasure on a data subject's request: the one controlled exception to append-only. Each erasure is
# a row here and an event in the chain; each row it redacted is listed in erased_rows with its event
# digest before and after (changes: their values' original digests in ``detail``), so the chain
# still verifies. The raw_logs and changes triggers allow an UPDATE only of a row listed here, only
# to the redacted form. Both tables are append-only.
erasures = sa.Table(
    "erasures",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("erased_by", sa.String(200), nullable=False),
    sa.Column("erased_at", UTCDateTime, nullable=False),
    sa.Column("selector", _json(), nullable=False),
    sa.Column("rows_sha256", sa.String(64), nullable=False),
)

erased_rows = sa.Table(
    "erased_rows",
    metadata,
    sa.Column("erasure_id", sa.String(40), sa.ForeignKey("erasures.id"), primary_key=True),
    sa.Column("table_name", sa.String(32), primary_key=True),
    sa.Column("row_key", sa.String(64), primary_key=True),
    sa.Column("digest_before", sa.String(64), nullable=True),
    sa.Column("digest_after", sa.String(64), nullable=True),
    sa.Column("detail", _json(), nullable=True),
)

# Derived stores (the vector index) record here how far into the change sequence they are: the
# position only moves forward (compare-and-set), for the index ``instance`` (a build of it) made
# with embedding model ``built_by`` from the ledger whose first change hash is ``ledger_id``
# (migration 0010 added those three).
index_state = sa.Table(
    "index_state",
    metadata,
    sa.Column("name", sa.String(200), primary_key=True),
    sa.Column("last_seq", sa.Integer, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("instance", sa.String(64), nullable=False, server_default=""),
    sa.Column("built_by", sa.String(300), nullable=False, server_default=""),
    sa.Column("ledger_id", sa.String(64), nullable=False, server_default=""),
)

# Each note's embedded document as a vector, per embedding model (migration 0010): a process
# catching up, or a rebuild, loads these instead of embedding again. ``model`` is the model's
# identity (a digest of its weights, or a remote model's name and dimension); ``document_sha256``
# says which text the vector is of, so a vector of an older version of the note is never used.
note_vectors = sa.Table(
    "note_vectors",
    metadata,
    sa.Column("note_id", sa.String(40), sa.ForeignKey("notes.id"), primary_key=True),
    sa.Column("model", sa.String(300), primary_key=True),
    sa.Column("document_sha256", sa.String(64), nullable=False),
    sa.Column("vector", sa.LargeBinary, nullable=False),  # float32, little-endian
    sa.Column("stored_at", UTCDateTime, nullable=False),
)

# Every policy installed with `amem policy install` (migration 0007); append-only.
policy_versions = sa.Table(
    "policy_versions",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("source", sa.String(1000), nullable=True),
    sa.Column("installed_by", sa.String(200), nullable=False),
    sa.Column("installed_at", UTCDateTime, nullable=False),
)

# Bearer tokens of agents and services (migration 0006): only a token's sha256 is kept.
api_tokens = sa.Table(
    "api_tokens",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, index=True),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("created_by", sa.String(200), nullable=True),
    sa.Column("revoked_at", UTCDateTime, nullable=True),
    sa.Column("last_used_at", UTCDateTime, nullable=True),
    # When it stops being accepted (migration 0015); NULL: never.
    sa.Column("expires_at", UTCDateTime, nullable=True),
    # The scopes an agent token may read and add to, a sorted list (migration 0019); NULL: every one.
    sa.Column("scopes", OptionalJSON, nullable=True),
)

# Who created and revoked which token, when (migration 0016): a reviewer's token stands in for
# their password, so its making and unmaking are chained events an auditor can prove, not only
# api_tokens' current state. Append-only.
token_events = sa.Table(
    "token_events",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("token_id", sa.String(40), nullable=False, index=True),
    sa.Column("action", sa.String(16), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("by", sa.String(200), nullable=True),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=True),
    sa.Column("scopes", OptionalJSON, nullable=True),  # migration 0019, as api_tokens.scopes
    # a creation's token digest, as api_tokens.token_sha256 (0022; NULL: a revocation, or made before)
    sa.Column("token_sha256", sa.String(64), nullable=True),
)

APPEND_ONLY_TABLES = (
    "raw_logs", "changes", "policy_versions", "events", "erasures", "erased_rows", "input_keys",
    "token_events",
)  # fmt: skip
