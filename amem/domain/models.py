"""The words of the guide as pydantic models: raw log, note, proposal, change, actor.

These are the shapes every layer speaks. They carry no behaviour beyond validation, so the
ledger, the pipeline, the CLI and the console can share them without importing each other.
"""

from __future__ import annotations

import unicodedata
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from amem.domain.text import check_name, check_text, is_visible
from amem.errors import InvalidInputError

#: The attributes every note has. Teams add more in policies.yaml (stored in ``Note.extra``).
CORE_ATTRIBUTES: tuple[str, ...] = (
    "content",
    "keywords",
    "tags",
    "context",
    "category",
    "links",
    "decision_rationale",
    "valid_at",
    "invalid_at",
    "deleted",
)

AttributeType = Literal["text", "list[str]", "datetime", "number", "bool", "links"]

#: The type of each core attribute; declared attributes say their own.
CORE_TYPES: dict[str, AttributeType] = {
    "content": "text",
    "keywords": "list[str]",
    "tags": "list[str]",
    "context": "text",
    "category": "text",
    "links": "links",
    "decision_rationale": "text",
    "valid_at": "datetime",
    "invalid_at": "datetime",
    "deleted": "bool",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


#: The longest scope, in characters once normalised.
MAX_SCOPE_CHARS = 200
#: What a scope never holds beyond control characters: format characters (zero-width spaces, bidi
#: controls such as the right-to-left override, the soft hyphen, the byte-order mark) and the line
#: and paragraph separators: "acme" followed by one of them looked like acme and was another account.
_HIDDEN_IN_A_SCOPE = frozenset({"Cf", "Zl", "Zp"})
#: The zero-width joiner and non-joiner, which emoji sequences and Persian or Indic names need: kept
#: between two characters outside ASCII, where they join or part letters, and nowhere else.
_JOINERS = frozenset("\u200c\u200d")


def scope_as_kept(value: str) -> str:
    """The spelling memory keeps for the scope ``value`` names (as ``canonical_scope`` stores an
    input's), for looking one up: a search or a grant typed decomposed (NFD) or full-width finds the
    account its inputs were kept under. Nothing is refused here: a look-up of a name an older amem
    kept finds it or nothing."""
    return unicodedata.normalize("NFC", "".join(_plain(char) for char in value.strip()))


def scope_folded(scope: str) -> str:
    """What every case of one scope shares: its kept spelling (``scope_as_kept``) in lower case.
    Lower case, not case-folding: folding makes "Straße" and "Strasse" one name (Maße and Masse
    are two words), and an erasure is not undone."""
    return scope_as_kept(scope).lower()


def same_scope(name: str, scopes: Sequence[str]) -> list[str]:
    """The spellings among ``scopes`` that name the scope ``name`` whatever its case
    (``scope_folded``). Scopes are kept as typed, so "Acme" from a CRM and an agent's "acme" are
    two; an erasure by scope reaches both, and a mistyped ``--scope`` is pointed to them first."""
    key = scope_folded(name)
    return [s for s in scopes if scope_folded(s) == key]


def canonical_scope(value: object, *, what: str = "scope") -> str:
    """The scope ``value`` names, as memory keeps it and finds it: trimmed, its full-width and
    half-width forms and its spaces (no-break, ideographic) made plain, in Unicode's composed form
    (NFC). "Société Générale" typed decomposed (NFD, as macOS file names and some keyboards give
    it) and composed were two accounts, neither finding the other's notes, and ``ａｃｍｅ`` another
    than ``acme``. Refused, naming the character and its position: what hides or reorders text
    (InvalidInputError). Other look-alikes (a Cyrillic a) are other names, as for identities."""
    if value is None:
        raise InvalidInputError(f"{what} is empty: say whose memory this is (an account, a user)")
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, got {type(value).__name__}")
    check_text(value, what)
    stripped = value.strip()
    if not stripped:
        raise InvalidInputError(f"{what} is empty: say whose memory this is (an account, a user)")
    if not is_visible(stripped):
        raise InvalidInputError(f"{what} shows nothing (only spaces, zero-width or control characters)")
    check_name(stripped, what)
    for position, char in enumerate(stripped, start=1):
        if unicodedata.category(char) in _HIDDEN_IN_A_SCOPE and not _joins(stripped, position - 1):
            name = unicodedata.name(char, "unnamed character")
            raise InvalidInputError(
                f"{what}: character {position} (U+{ord(char):04X} {name}) is invisible or reorders "
                "text; a scope is one line of visible text"
            )
    canonical = unicodedata.normalize("NFC", "".join(_plain(char) for char in stripped))
    if len(canonical) > MAX_SCOPE_CHARS:
        raise InvalidInputError(f"{what} is longer than {MAX_SCOPE_CHARS} characters")
    return canonical


def _joins(text: str, index: int) -> bool:
    """True when ``text[index]`` is a joiner between two characters outside ASCII."""
    return (
        text[index] in _JOINERS
        and 0 < index < len(text) - 1
        and not text[index - 1].isascii()
        and not text[index + 1].isascii()
    )


def _plain(char: str) -> str:
    """A full-width or half-width form as its plain character (ａ is a, ｶ is カ), a space as " "."""
    if unicodedata.category(char) == "Zs":
        return " "
    if unicodedata.decomposition(char).startswith(("<wide>", "<narrow>")):
        return unicodedata.normalize("NFKC", char)
    return char


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ActorKind(StrEnum):
    AGENT = "agent"
    PERSON = "person"
    LLM = "llm"
    SYSTEM = "system"


class Actor(_Frozen):
    """Who or what acted."""

    kind: ActorKind
    id: str = Field(min_length=1, max_length=200)

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.id}"

    @classmethod
    def parse(cls, text: str, default_kind: ActorKind = ActorKind.PERSON) -> Actor:
        """``"agent:sales-bot"`` or a bare name (taken as ``default_kind``), its name canonical
        (amem.domain.identity): ``Agent:Sales-Bot`` is ``agent:sales-bot``. A prefix that names no
        kind is refused (``robot:x``, ``:``): before, it was kept as part of an agent's name, so a
        mistyped kind (``agnet:crm``) made another agent; a name with a colon is given its kind
        first (``agent:robot:x``)."""
        from amem.domain.identity import KIND_PREFIXES, canonical_identity, split_kind

        # the kind read as canonical_identity reads the name (ａｇｅｎｔ: is agent:), which drops
        # the prefix and refuses a second one (person:agent:alice names no one)
        kind, _ = (
            split_kind(unicodedata.normalize("NFKC", text).strip()) if isinstance(text, str) else (None, "")
        )
        if kind is None and isinstance(text, str) and ":" in text:
            prefix = unicodedata.normalize("NFKC", text).partition(":")[0].strip()
            kinds = ", ".join(f"{k}:" for k in KIND_PREFIXES)
            raise InvalidInputError(
                f"actor {text.strip()!r}: "
                + (f"{prefix!r} is not a kind of actor" if prefix else "nothing names a kind before ':'")
                + f" ({kinds}); give KIND:NAME or a bare name (a name with a colon: agent:NAME)"
            )
        return cls(kind=ActorKind(kind) if kind else default_kind, id=canonical_identity(text, what="actor"))


class Usage(_Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0


class Proposer(_Frozen):
    """The actor behind a proposal; for an LLM also the model call that produced it."""

    kind: ActorKind
    id: str = Field(min_length=1, max_length=200)
    model: str | None = None
    prompt_version: str | None = None
    usage: Usage | None = None
    llm_call_id: str | None = None

    @property
    def actor(self) -> Actor:
        return Actor(kind=self.kind, id=self.id)

    @classmethod
    def of(cls, actor: Actor) -> Proposer:
        return cls(kind=actor.kind, id=actor.id)


class RawLog(_Frozen):
    """An input exactly as received. Never changed, never deleted."""

    id: str
    text: str
    occurred_at: datetime
    actor: Actor
    scope: str
    received_at: datetime
    sha256: str
    metadata: dict[str, Any] = Field(default_factory=dict)


def time_given_as_number(value: object) -> str | None:
    """Why ``value``, given as an input's time (``at``), is refused when it is a number, else None:
    read as seconds (or milliseconds) since 1970 it names a moment nobody checks (20260301 is
    1970-08-23), so a time is ISO 8601 text everywhere, add_note, add_notes, the APIs and imports."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value} is a number; write the time as ISO 8601 text (e.g. 2026-03-01T09:30:00Z)"
    return None


class NoteInput(BaseModel):
    """One input of ``add_notes``: what ``add_note`` takes, as data (a line of an import file)."""

    model_config = ConfigDict(extra="forbid")

    content: str
    scope: str
    at: datetime | str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: The sender's own name for this input (a CRM record's id, a message id, a request's
    #: Idempotency-Key): an input whose key its author sent before is kept once.
    idempotency_key: str | None = Field(None, min_length=1, max_length=200)

    @field_validator("at", mode="before")
    @classmethod
    def _at_is_not_a_number(cls, value: object) -> object:
        """pydantic's lax mode read a number as Unix seconds or milliseconds (1700000000 and
        1700000000000 both 2023-11-14), where add_note without a key refused it."""
        problem = time_given_as_number(value)
        if problem is not None:
            raise PydanticCustomError("time_is_a_number", problem)
        return value


class AddOutcome(_Frozen):
    """What became of one input of ``add_notes``: its raw log is always kept; ``note_id`` is None
    when analysis failed (``error`` says why; ``reprocess`` completes it later), or, with both None,
    when it was queued for the workers (``wait=False``). With
    ``recorded_before`` the input was not recorded again: ``raw_log_id`` is the raw log that holds
    it, and ``note_id`` / ``error`` say what became of that one so far. ``erasure_id``: the raw log
    was erased on a data subject's request (before, or while this call analysed it), by that erasure
    (`amem erasures`): nothing of the input is kept again or analysed."""

    raw_log_id: str
    note_id: str | None = None
    error: str | None = None
    recorded_before: bool = False
    erasure_id: str | None = None


class RawLogState(StrEnum):
    PENDING = "pending"
    PROCESSED = "processed"
    FAILED = "failed"
    #: Erased on a data subject's request: out of the queue, never analysed (again).
    ERASED = "erased"


class InputStatus(_Frozen):
    """What became of an input so far: ``queued`` (kept, waiting for a worker), ``processing`` (a
    worker holds it under a lease), ``done`` (``note_id`` is its note), ``failed`` (``error`` says
    why; the raw log is kept and ``amem reprocess`` retries it) or ``erased`` (on a data subject's
    request, `amem erase`: its text is gone, and it is never analysed again)."""

    raw_log_id: str
    status: Literal["queued", "processing", "done", "failed", "erased"]
    note_id: str | None = None
    error: str | None = None
    scope: str
    received_at: datetime
    updated_at: datetime
    #: Analyses that ended (done or failed), and times a worker took the input
    #: and did not give it back (a clean give-back is not counted).
    attempts: int = 0
    claims: int = 0
    lease_until: datetime | None = None


class Link(_Frozen):
    note_id: str
    reason: str = ""


class RetirementWaiting(_Frozen):
    """A newer note says this one no longer holds; a person has not decided yet (the policy holds
    ``invalid_at`` for review). ``invalid_at``: the end it proposes; ``evidence``: the proposal's
    span: the newer note's words saying otherwise (for a record said before the newer note but
    analysed after it, a late import or a retry, that note's raw log is among the proposal's
    sources, after the record's own; a proposal recorded by an older amem has the record's own
    sentence, and ``reason`` names the note: "contradicted by newer note n_…"); ``reason``: why the
    analyst thinks so. Search hits and an account's facts carry it."""

    proposal_id: str
    invalid_at: datetime | None = None
    reason: str
    evidence: str | None = None


class Note(BaseModel):
    """The current derived state of one note, rebuilt from applied changes."""

    model_config = ConfigDict(extra="forbid")

    id: str
    scope: str
    content: str
    keywords: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    context: str | None = None
    category: str | None = None
    links: list[Link] = Field(default_factory=list)
    decision_rationale: str | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    deleted: bool = False
    extra: dict[str, Any] = Field(default_factory=dict)
    raw_log_ids: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    version: int = 1

    def get(self, attribute: str) -> Any:
        """The value of a core or declared attribute, as JSON-ready data."""
        if attribute in CORE_ATTRIBUTES:
            return self.model_dump(mode="json")[attribute]
        return self.extra.get(attribute)

    def is_valid_at(self, moment: datetime) -> bool:
        moment = as_utc(moment)
        if self.valid_at is not None and as_utc(self.valid_at) > moment:
            return False
        return not (self.invalid_at is not None and as_utc(self.invalid_at) <= moment)


class ProposalStatus(StrEnum):
    PENDING = "pending"
    AUTO_APPLIED = "auto_applied"
    APPROVED = "approved"
    REJECTED = "rejected"
    CONFLICT = "conflict"
    SUPERSEDED = "superseded"


#: The rule of a proposal that creates a note (its content and first values).
CREATE_RULE = "note creation"
#: The rule of an erasure's own proposals (its tombstones): their reason and comment are the
#: erasure's words, which a later erasure keeps, and no reviewer approved them.
ERASURE_RULE = "erasure -> applied"


class Proposal(_Frozen):
    """A field-level diff against one note, waiting for or past a decision."""

    id: str
    note_id: str
    attribute: str
    old_value: Any = None
    new_value: Any = None
    base_version: int
    reason: str
    #: The exact span of the source raw log that supports ``new_value`` (None when not given).
    evidence: str | None = None
    proposer: Proposer
    raw_log_ids: list[str] = Field(default_factory=list)
    rule: str
    status: ProposalStatus
    reviewer: str | None = None
    review_comment: str | None = None
    reviewed_at: datetime | None = None
    created_at: datetime
    revert_of: int | None = None
    scope: str | None = None
    #: sha256 of the policy that routed it (amem.policy.fingerprint); None before migration 0007.
    policy_sha256: str | None = None
    #: A reviewer's correction: the id of the proposal whose value it replaces (migration 0021).
    corrects: str | None = None


class PolicyVersion(_Frozen):
    """A policy installed in the ledger (`amem policy install`): its canonical text and sha256."""

    version: int
    sha256: str
    text: str
    source: str | None = None
    installed_by: str
    installed_at: datetime


class ChangeKind(StrEnum):
    CREATE = "create"
    APPLY = "apply"
    REVERT = "revert"


class Change(_Frozen):
    """An applied diff: one row of the hash-chained history."""

    seq: int
    note_id: str
    proposal_id: str
    attribute: str
    old_value: Any = None
    new_value: Any = None
    note_version: int
    actor: Actor
    kind: ChangeKind
    applied_at: datetime
    prev_hash: str
    hash: str


class LlmCall(_Frozen):
    """One model call: what was asked (by digest), what came back, what it cost."""

    id: str
    task: str
    model: str
    prompt_version: str
    raw_log_id: str | None = None
    prompt_sha256: str
    response_text: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None
    created_at: datetime
    #: The model the provider says answered, where it names another than ``model`` (an alias served
    #: by a dated snapshot); None when it named the same, or none, or the call predates 0024.
    served_model: str | None = None

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)
