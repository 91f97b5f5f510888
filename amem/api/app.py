"""The HTTP API: agents add inputs (answered at once, 202), follow them, search and read notes.

An interface like the CLI: it parses, authenticates and calls the facade. Every request carries a
bearer token (``amem tokens create NAME --role agent``); the token's holder is the actor of what it
adds (``agent:NAME``; a reviewer's own token, ``person:NAME``). No agent token decides anything.
Served with ``--decisions``, a reviewer's token approves and rejects held values as its reviewer
would in the console (governance checks their role); no endpoint reverts, erases or edits.
"""

import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any
from urllib.parse import quote

import anyio
from fastapi import Depends, FastAPI, Header, HTTPException, Path, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator
from pydantic_core import PydanticCustomError
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from amem.api.inputs import (
    LEDGER_UNREACHABLE,
    MAX_WAIT_SECONDS,
    AddedStatus,
    add_once,
    added_status,
    report_embedded,
    status_when_settled,
    waiting_for_review,
)
from amem.domain.models import InputStatus, Note, Proposal
from amem.domain.values import parse_as_of
from amem.errors import (
    AmemError,
    AnalysisPendingError,
    ConfigError,
    FrozenAttributeError,
    InvalidBatchInputError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    PolicyError,
    ProposalStateError,
    SchemaMismatchError,
    ledger_unreachable,
)
from amem.index.base import IndexUnavailableError
from amem.index.sync import IndexModelChangedError
from amem.memory import Memory
from amem.services.access import named_scope
from amem.services.authentication import AuthenticatedReviewer
from amem.services.export import FEED_LIMIT, MAX_SEQ, ChangeFeed
from amem.services.facts import MAX_OFFSET
from amem.services.facts import FactPage as _FactPage
from amem.services.governance import Correction, DecisionReport, HistoryEvent
from amem.services.review import MatchCount as _MatchCount
from amem.services.review import ReviewFilter, ReviewKind
from amem.services.review import ReviewPage as _ReviewPage
from amem.services.scopes import ScopeHint
from amem.services.search import SearchResult
from amem.services.tokens import NotAuthenticatedError, TokenInfo, TokenRole

DESCRIPTION = """\
amem keeps every input an agent sends as an immutable raw log and turns it, in the background, into
a structured, linked note whose every value is a governed proposal.

**Authentication**: `Authorization: Bearer <token>`; tokens come from `amem tokens create NAME
--role agent|reviewer` and are stored hashed. A token with an expiry says when in each answer's
`Amem-Token-Expires` header; past it, 401. An agent token made for some scopes only (`amem tokens
create NAME --role agent --scope acme`) reads and adds to those only: naming another scope is
refused (403), and an input or note of another scope is answered as one that does not exist (404).
**Agents never decide**: no agent token approves,
rejects, reverts, erases or edits anything.

**Adding is asynchronous and durable**: `POST /v1/inputs` answers 202 as soon as the raw log is
committed, with its id and a status URL; workers analyse it; `GET /v1/inputs/{raw_log_id}` says
queued, processing, done (with the note id), failed (with why) or erased (on a data subject's
request). An acknowledged input is never lost.

**Retries keep nothing twice**: name an input with an `Idempotency-Key` header (or its
`idempotency_key` field, per input of a batch), unique per token name and scope; a request whose
answer was lost (a timeout) can be sent again as it was, and answers `recorded_before` with the raw
log that holds the input. An input that gives its `at` is kept once even without a key (the same
text, scope and metadata at that time). An input erased since on a data subject's request answers
`erased` (still 202, with the `erasure_id`): it is kept nowhere again and never analysed, and
sending it again changes nothing.
"""


NO_DECISIONS = """
**Decisions**: this server decides nothing, for any token: reviewers decide in the console or the
CLI (`amem serve --decisions` lets their tokens approve and reject here too).
"""
DECISIONS = """
**Decisions** (`amem serve --decisions`): a reviewer's token approves and rejects held values
(`/v1/review/items/{key}/approve`, `.../reject`, one proposal, or every item matching a filter), as
its reviewer would in the console: their role per attribute, frozen attributes and the policy in
force apply, and the decision is recorded as theirs. An agent's token is refused (403).
"""

#: Inputs one batch request may carry.
BATCH_LIMIT = 500


class Problem(BaseModel):
    detail: str


class InputIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        min_length=1, description="The text to remember, kept verbatim as a raw log (no NUL characters)."
    )
    scope: str = Field(min_length=1, max_length=200, description="Whose memory: an account, a user.")
    at: str | None = Field(
        None,
        description="When it was said (ISO 8601 date-time), never later than now (an hour's clock "
        "skew allowed); default: now.",
        json_schema_extra={"format": "date-time"},
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Any JSON object, kept with it (no NUL characters in its text)."
    )
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Your own name for this input (a CRM record id, a message id), unique per token "
        "name and scope: sent again with the same key, the input is kept once and answers "
        "`recorded_before`. A key names one input of a scope: given there with another text, the "
        "request is refused (422).",
    )


#: What an add says of an input erased since on a data subject's request, in both answers.
_ERASED = (
    "; erased: an earlier request kept this input, and it was erased since on a data subject's request "
    "(`erasure_id` names the erasure): raw_log_id is the erased raw log, nothing was kept again and "
    "nothing is analysed; the answer is final, sending it again changes nothing."
)
_ERASURE_ID = Field(
    None,
    description="With status erased: the erasure that erased this input on a data subject's request "
    "(`amem erasures` lists it); else null.",
)


class Accepted(BaseModel):
    raw_log_id: str
    status: AddedStatus = Field(
        "queued",
        description="queued: kept now, waiting for a worker; recorded_before: an earlier request "
        "kept this input (the same idempotency key, or the same `at`, scope, actor, text and metadata), and "
        "raw_log_id is the raw log holding it: a retry keeps nothing twice" + _ERASED,
    )
    erasure_id: str | None = _ERASURE_ID
    status_url: str


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inputs: list[InputIn] = Field(
        min_length=1, max_length=BATCH_LIMIT, description=f"1 to {BATCH_LIMIT} inputs, kept in this order."
    )


class AcceptedInput(BaseModel):
    raw_log_id: str
    status: AddedStatus = Field(
        description="queued: kept now, waiting for a worker; recorded_before: an earlier request "
        "kept this input (the same idempotency key, or the same scope, at, actor, text and metadata), and "
        "raw_log_id is the raw log holding it" + _ERASED
    )
    erasure_id: str | None = _ERASURE_ID
    status_url: str


class BatchAccepted(BaseModel):
    inputs: list[AcceptedInput]


class QueueDepth(BaseModel):
    queued: int
    processing: int
    failed: int


class PendingCount(ScopeHint):
    pending: int


class FactPage(_FactPage, ScopeHint):
    """A page of an account's facts; an empty one says whether the account is unknown."""


class ReviewPage(_ReviewPage, ScopeHint):
    """A page of review items; an empty one says whether the scope asked about is unknown."""


class MatchCount(_MatchCount, ScopeHint):
    """What "approve all matching" would decide; none matching says whether the scope is unknown."""


#: The headers /v1/search adds to an empty answer about a scope no input was ever kept under (a list
#: has no field to carry ``scope_unknown``): what the other endpoints say in ``ScopeHint``'s fields.
SCOPE_UNKNOWN_HEADER = "Amem-Scope-Unknown"
DID_YOU_MEAN_HEADER = "Amem-Did-You-Mean"
_SEARCH_HEADERS = {
    200: {
        "headers": {
            SCOPE_UNKNOWN_HEADER: {
                "description": "`true` on an empty answer when no input was ever kept under `scope`: a "
                "mistyped scope, or an account before its first input (still answered 200, empty).",
                "schema": {"type": "string", "enum": ["true"]},
            },
            DID_YOU_MEAN_HEADER: {
                "description": "With it, the scopes the token may use that `scope` may mean, comma-"
                "separated, each percent-encoded (UTF-8): the same name in another case first.",
                "schema": {"type": "string"},
            },
        }
    }
}


class ApproveIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    comment: str | None = Field(
        None, min_length=1, max_length=2000, pattern=r"^[^\x00]*$", description="Why, for the record."
    )


class RejectIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    comment: str = Field(
        min_length=1, max_length=2000, pattern=r"^[^\x00]*$", description="Why it is wrong: required."
    )


class _Shown(BaseModel):
    model_config = ConfigDict(extra="forbid")

    proposals: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,40}$")]] = Field(
        min_length=1,
        max_length=1000,
        description="The ids of the held values the reviewer was shown (`fields[].proposal.id` of the "
        "item): if the item holds others now (another reviewer's correction, a newer suggestion), "
        "nothing is decided (409).",
    )


class ApproveItemIn(ApproveIn, _Shown):
    pass


class RejectItemIn(RejectIn, _Shown):
    pass


_Text = Annotated[str, StringConstraints(min_length=1, max_length=20_000, pattern=r"^[^\x00]*$")]
_Item = Annotated[str, StringConstraints(min_length=1, max_length=2000, pattern=r"^[^\x00]*$")]


class CorrectIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: _Text | Annotated[list[_Item], Field(max_length=100)] = Field(
        description="The right value, as the attribute's type has it: text, a date (2027-03-01), a list."
    )
    comment: str | None = Field(
        None, min_length=1, max_length=2000, pattern=r"^[^\x00]*$", description="Why the value was wrong."
    )

    @field_validator("value", mode="wrap")
    @classmethod
    def _plain_value(cls, value: Any, handler: Any) -> Any:
        """One plain sentence for a value of neither form: pydantic named each member of the union
        ("value.constrained-str: Input should be a valid string", "value.list[constrained-str]")."""
        try:
            return handler(value)
        except ValidationError:
            raise PydanticCustomError("value", _WRONG_VALUE, {"given": _kind_of(value)}) from None


#: What a correction's value must be, said once for every way it can be wrong.
_WRONG_VALUE = (
    "give the right value as text (1 to 20,000 characters, no NUL; a date as 2027-03-01, a number as "
    "text) or as a list of up to 100 texts (each 1 to 2,000 characters); got {given}"
)


def _kind_of(value: Any) -> str:
    """A JSON value's kind, in words, for a message that does not echo it."""
    if isinstance(value, str):
        return f"text of {len(value):,} characters" + (" with a NUL" if "\x00" in value else "")
    if isinstance(value, list):
        texts = "" if all(isinstance(i, str) for i in value) else ", not all texts"
        return f"a list of {len(value):,} item(s){texts}"
    if isinstance(value, bool):
        return "true" if value else "false"
    kinds = {int: "a number", float: "a number", dict: "an object", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


class _Matching(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scope: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[^\x00]*$")
    kind: ReviewKind | None = None
    expected_items: int = Field(
        ge=0, le=MAX_OFFSET, description="`items` of GET /v1/review/items/count for the same filter."
    )
    fingerprint: str = Field(
        min_length=1,
        max_length=128,
        description="`fingerprint` of the same count: if the matching set changed since, nothing is "
        "decided (409).",
    )


class RejectMatchingIn(_Matching):
    comment: str = Field(
        min_length=1, max_length=2000, pattern=r"^[^\x00]*$", description="Why they are wrong: required."
    )


class ApproveMatchingIn(_Matching):
    comment: str | None = Field(
        None, min_length=1, max_length=2000, pattern=r"^[^\x00]*$", description="Why, for the record."
    )


#: Ids are letters, digits, _ and - (``r_…``, ``n_…``); plain text carries no NUL (no ledger stores it).
_ID = r"^[A-Za-z0-9_-]{1,40}$"
_TEXT = r"^[^\x00]*$"
RawLogId = Annotated[str, Path(pattern=_ID, description="A raw log id, as POST /v1/inputs returned it.")]
NoteId = Annotated[str, Path(pattern=_ID, description="A note id.")]


def _as_of(description: str) -> Any:
    """The `as_of` query parameter of /v1/search and /v1/facts, one schema for both: a date or a
    date-time, read as text by values.parse_as_of (ISO 8601 only; typed as a datetime, a number such
    as 0.99999 was taken as seconds since 1970, which the schema denies). ``description``: what the
    moment means to that endpoint."""
    schema = {
        "anyOf": [
            {"type": "string", "format": "date-time"},
            {"type": "string", "format": "date"},
            {"type": "null"},
        ]
    }
    return Query(description=description, json_schema_extra=schema)


_AUTH = {401: {"model": Problem, "description": "No token, or an unknown or revoked one."}}
_NOT_FOUND = {
    404: {"model": Problem, "description": "No such input or note, or one in a scope the token may not use."}
}
_INVALID = {422: {"description": "The request is malformed; the body says which field and why."}}
#: Every answer a body that is not JSON gets (FastAPI's default was a 422 the document did not list).
_NOT_JSON = {
    400: {
        "model": Problem,
        "description": "The body is not JSON, not UTF-8 or nested too deep (what and where is said).",
    }
}
_UNAVAILABLE_ANSWER = {
    503: {
        "model": Problem,
        "description": "The index or a model cannot answer now (the Chroma server out of reach, the "
        "index built with another embedding model, the embedding model failing): the body says "
        "which; nothing was changed.",
    }
}
_FORBIDDEN = {403: {"model": Problem, "description": "The token's role may not do this."}}
_OUT_OF_SCOPE = {403: {"model": Problem, "description": "The token is limited to other scopes."}}
_DECIDED = {
    **_NOT_JSON,
    403: {
        "model": Problem,
        "description": "Not a reviewer's token, or the reviewer's role may not decide this.",
    },
    404: {"model": Problem, "description": "No such pending item or proposal."},
    409: {
        "model": Problem,
        "description": "Decided meanwhile, or the matching set changed: nothing decided. Or an approval "
        "the policy refused (the attribute frozen since): recorded as the policy's rejection, not "
        "approved; `proposal` (one value) or `report` (an item, a filter) says what was recorded.",
    },
}


def create_app(
    memory: Memory, *, workers: int = 0, batch_size: int | None = None, decisions: bool = False
) -> FastAPI:
    """The API on ``memory``; with ``workers`` > 0 it runs that many workers in this process.
    ``decisions`` (``amem serve --decisions``): reviewers' tokens may also approve and reject, as
    their reviewer would in the console, under the same governance; off, the API decides nothing."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        pool = memory.start_workers(workers, batch_size=batch_size) if workers > 0 else None
        try:
            yield
        finally:
            if pool is not None:
                pool.stop(timeout=memory.settings.worker_lease_seconds)
            report_embedded(memory, "amem serve")

    app = FastAPI(
        title="amem",
        version="1",
        description=DESCRIPTION + (DECISIONS if decisions else NO_DECISIONS),
        lifespan=lifespan,
        responses={**_AUTH, **_INVALID, **_UNAVAILABLE_ANSWER},
    )
    app.add_middleware(_ExpiryOnEveryAnswer)
    bearer = HTTPBearer(auto_error=False, description="A token from `amem tokens create`.")

    def caller(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)], request: Request
    ) -> TokenInfo:
        try:
            info = memory.tokens.authenticate(credentials.credentials if credentials else None)
        except NotAuthenticatedError as exc:
            raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from None
        _note_expiry(request, info)
        setattr(request.state, _SENDER, info.actor)  # a batch's 422 checks its inputs as theirs
        return info

    Caller = Annotated[TokenInfo, Depends(caller)]

    def _hint(scope: str, who: TokenInfo) -> ScopeHint:
        """Whether ``scope`` is unknown, and what it may mean among the scopes the caller may use:
        the CLI's did-you-mean (``Memory.scope_check``), said beside an empty answer, not refused
        (an agent may ask about an account before its first input)."""
        return memory.scope_check(scope, visible=who.grant.allows).hint()

    def _visible_note(note_id: str, who: TokenInfo) -> Note:
        note = memory.read(note_id)
        who.grant.require_visible(note.scope, f"note {note_id} does not exist")
        return note

    def reviewer(who: Caller) -> TokenInfo:
        if who.role != TokenRole.REVIEWER:
            raise HTTPException(403, "only a reviewer's token may read the review queue")
        return who

    async def _not_json(request: Request, detail: str) -> Response:
        """400 for a body that cannot be read as JSON. It is read before the token is checked, so
        the token is read here for its expiry (every answer to it says when)."""
        if _EXPIRES not in request.scope.get("state", {}):
            await anyio.to_thread.run_sync(_expiry_of_sender, memory, request)
        return Response(json.dumps({"detail": detail}, ensure_ascii=True), 400, media_type="application/json")

    @app.exception_handler(RequestValidationError)
    async def _unreadable(request: Request, exc: RequestValidationError) -> Response:
        """FastAPI's own answer, less the values it echoed (``input``: a missing field's answer held
        the whole body, 5 M characters sent made a 30 MB answer, and the text went into the
        client's logs), written as ASCII JSON (a lone surrogate, valid JSON, not valid UTF-8, turned
        the 422 into a 500). A body that is not JSON is a 400, as the OpenAPI document says."""
        broken = next((e for e in exc.errors() if e.get("type") == "json_invalid"), None)
        sender = request.scope.get("state", {}).get(_SENDER)
        if broken is None and sender is not None and _inputs_wrong(exc):
            problems = await anyio.to_thread.run_sync(_batch_problems, memory, exc, sender)
            detail = str(InvalidBatchInputError(problems))
            return Response(
                json.dumps({"detail": detail}, ensure_ascii=True), 422, media_type="application/json"
            )
        if broken is None:
            errors = [{k: v for k, v in error.items() if k != "input"} for error in exc.errors()]
            body = json.dumps({"detail": jsonable_encoder(errors)}, ensure_ascii=True)
            return Response(body, status_code=422, media_type="application/json")
        where = broken.get("loc", ("body", 0))[-1]
        why = (broken.get("ctx") or {}).get("error", "JSON decode error")
        return await _not_json(request, f"the body is not JSON: {why} at character {where}")

    @app.exception_handler(StarletteHTTPException)
    async def _http_refusal(request: Request, exc: StarletteHTTPException) -> Response:
        """FastAPI's answers (a 401, a 403), as it makes them; but a body it could not parse (bytes
        that are not UTF-8, JSON nested deeper than Python reads) was a bare "There was an error
        parsing the body" without the token's expiry: it says what is wrong and where."""
        why = _unparsed_body(exc.__cause__) if exc.status_code == 400 else None
        if why is None:
            return await http_exception_handler(request, exc)
        return await _not_json(request, why)

    @app.exception_handler(AmemError)
    async def _refused(_: Request, exc: AmemError) -> JSONResponse:
        """Every other state amem explains (the index out of reach, built with another embedding
        model, the model failing, a misconfigured server): its message, never a bare 500."""
        status = 503 if isinstance(exc, _UNAVAILABLE) else 500
        return JSONResponse({"detail": _without_secrets(str(exc))}, status_code=status)

    @app.exception_handler(Exception)
    async def _failed(request: Request, exc: Exception) -> JSONResponse:
        """What amem does not explain itself still answers in words: a model or embedder that failed
        (litellm's errors) is a 503 naming it, anything else a 500; the text stays in the server's
        log (it may hold a provider's answer), and the exception is still raised there."""
        if _from_a_model(exc):
            detail = (
                f"the embedding or language model could not answer ({_kind(exc)}): the server's "
                "log says why; try again once it is fixed"
            )
            answer = JSONResponse({"detail": detail}, status_code=503)
        elif ledger_unreachable(exc) is not None:  # the server's database down, not a bug
            answer = JSONResponse({"detail": LEDGER_UNREACHABLE}, status_code=503)
        else:
            detail = f"the server failed ({_kind(exc)}): nothing more is said here; its log has the details"
            answer = JSONResponse({"detail": detail}, status_code=500)
        expires = request.scope.get("state", {}).get(_EXPIRES)
        if expires is not None:  # this answer is made outside _ExpiryOnEveryAnswer
            answer.headers["Amem-Token-Expires"] = expires
        return answer

    @app.exception_handler(NotFoundError)
    async def _not_found(_: Request, exc: NotFoundError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(InvalidInputError)
    async def _invalid(_: Request, exc: InvalidInputError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(NotAuthenticatedError)
    async def _unauthenticated(_: Request, exc: NotAuthenticatedError) -> JSONResponse:
        """A token revoked or expired between two checks of one request."""
        return JSONResponse({"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(ProposalStateError)
    async def _decided(_: Request, exc: ProposalStateError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    @app.exception_handler(FrozenAttributeError)
    async def _refused_by_policy(_: Request, exc: FrozenAttributeError) -> JSONResponse:
        """An approval the policy refused: not the caller's permission (403) but the state of the
        policy, as a note deleted since is (409); the body says what was recorded."""
        body = {"detail": str(exc), "proposal": jsonable_encoder(exc.proposal)}
        return JSONResponse(body, status_code=409)

    @app.exception_handler(PermissionDeniedError)
    async def _denied(_: Request, exc: PermissionDeniedError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=403)

    @app.post(
        "/v1/inputs",
        status_code=202,
        response_model=Accepted,
        responses={**_NOT_JSON, **_OUT_OF_SCOPE},
        tags=["inputs"],
    )
    def add_input(
        body: InputIn,
        request: Request,
        who: Caller,
        idempotency_key: Annotated[
            str | None,
            Header(
                alias="Idempotency-Key",
                min_length=1,
                max_length=200,
                description="Your name for this input, unique per token name and scope: a retry "
                "with it keeps nothing twice (as the body's `idempotency_key`).",
            ),
        ] = None,
    ) -> Accepted:
        """Keep an input and queue it for analysis. Answers as soon as the raw log is committed; the
        note is built, linked and evolved by a worker. Follow `status_url` to learn its fate. An
        input named by an `Idempotency-Key`, or that gives `at`, is kept once: sent again (a retry
        after a timeout), it answers `recorded_before` with the raw log that holds it, or, erased
        since on a data subject's request, `erased` with the erasure (202 all the same: the retry
        succeeded, and sending it again changes nothing)."""
        item = body.model_dump()
        if idempotency_key is not None:
            if item["idempotency_key"] not in (None, idempotency_key):
                raise InvalidInputError(
                    "the Idempotency-Key header and the body's idempotency_key differ: give one, or the same"
                )
            item["idempotency_key"] = idempotency_key
        item["scope"] = who.grant.require(body.scope)  # " acme" is acme, as every endpoint reads it
        outcome = add_once(memory, item, who.actor)  # a reviewer's token adds as person:NAME
        return Accepted(
            raw_log_id=outcome.raw_log_id,
            status=added_status(outcome),
            erasure_id=outcome.erasure_id,
            status_url=str(request.url_for("input_status", raw_log_id=outcome.raw_log_id)),
        )

    @app.post(
        "/v1/inputs/batch",
        status_code=202,
        response_model=BatchAccepted,
        responses={**_NOT_JSON, **_INVALID, **_OUT_OF_SCOPE},
        tags=["inputs"],
    )
    def add_inputs(body: BatchIn, request: Request, who: Caller) -> BatchAccepted:
        """Keep many inputs at once (a CRM sync, a backlog), all or none: every wrong input is
        named in the 422, in one sentence counted from 1 ("input 2: ..."), and nothing is kept.
        Answers once the raw logs are committed, in one transaction; workers analyse them in order.
        Sending the same batch again (a retry after a timeout) keeps nothing twice: an input that
        gives its `idempotency_key` or its `at` and was kept before comes back as `recorded_before`,
        with the raw log that holds it; one erased since on a data subject's request, as `erased`
        with its `erasure_id`."""
        items = [i.model_dump() for i in body.inputs]
        if who.grant.limited:
            # every wrong input named first (422), as for any token, before the grant's 403: an
            # empty scope is the input's mistake, not another account's
            problems = memory.check_inputs(items, actor=who.actor)
            if problems:
                raise InvalidBatchInputError(problems)
            for item, scope in zip(items, who.grant.require_all([i.scope for i in body.inputs]), strict=True):
                item["scope"] = scope
        outcomes = memory.add_notes(items, actor=who.actor, wait=False, skip_recorded=True)
        return BatchAccepted(
            inputs=[
                AcceptedInput(
                    raw_log_id=o.raw_log_id,
                    status=added_status(o),
                    erasure_id=o.erasure_id,
                    status_url=str(request.url_for("input_status", raw_log_id=o.raw_log_id)),
                )
                for o in outcomes
            ]
        )

    @app.get("/v1/inputs/{raw_log_id}", response_model=InputStatus, responses=_NOT_FOUND, tags=["inputs"])
    async def input_status(
        raw_log_id: RawLogId,
        who: Caller,
        wait: Annotated[
            float,
            Query(
                ge=0,
                le=MAX_WAIT_SECONDS,
                description="Seconds to wait while the input is queued or processing (0 to 30): the "
                "answer comes as soon as it is done, failed or erased, or when the time is up.",
            ),
        ] = 0,
    ) -> InputStatus:
        """What became of an input: queued, processing, done (with `note_id`), failed (with `error`;
        the text is kept, and an operator retries it with `amem reprocess`: nothing retries it
        before) or erased (on a data subject's request). With `wait`, one request follows it to its
        note."""
        return await status_when_settled(memory, raw_log_id, wait, who.grant)

    @app.get("/v1/queue", response_model=QueueDepth, tags=["inputs"])
    def queue_depth(who: Caller) -> QueueDepth:
        """How many inputs wait for a worker, are being analysed, or failed, in the whole store (the
        workers' backlog, shared by every scope: counts only, for any token)."""
        return QueueDepth(**memory.queue_depth())

    @app.get(
        "/v1/search",
        response_model=list[SearchResult],
        responses={**_OUT_OF_SCOPE, **_SEARCH_HEADERS},
        tags=["notes"],
    )
    def search(
        who: Caller,
        response: Response,
        q: Annotated[
            str, Query(min_length=1, pattern=_TEXT, description="What to look for, in plain words.")
        ],
        scope: Annotated[
            str, Query(min_length=1, max_length=200, pattern=_TEXT, description="Whose memory.")
        ],
        k: Annotated[int, Query(ge=1, le=100, description="How many hits.")] = 10,
        agentic: Annotated[
            bool, Query(description="Also return the notes the hits link to and from.")
        ] = False,
        include_retired: Annotated[
            bool, Query(description="Also notes whose invalid_at has passed.")
        ] = False,
        tag: Annotated[
            list[str] | None,
            Query(max_length=20, description="Only notes holding every one of these tags (repeat it)."),
        ] = None,
        as_of: Annotated[
            str | None,
            _as_of(
                "Search the notes as they stood at the end of this ISO 8601 date or date-time, UTC "
                "unless it gives an offset (as /v1/facts reads it)."
            ),
        ] = None,
    ) -> list[SearchResult]:
        """Hybrid search (meaning and words) over one scope's current notes; with `as_of`, the
        notes as they stood then (a search made then, again); with `tag`, only notes holding them.
        An empty answer about a scope no input was ever kept under carries the headers
        `Amem-Scope-Unknown: true` and `Amem-Did-You-Mean` (the scopes it may mean)."""
        scope = who.grant.require(scope)
        moment = parse_as_of(as_of) if as_of is not None else None
        find: Callable[..., list[SearchResult]] = memory.search_agentic if agentic else memory.search
        hits = find(q, k, scope=scope, include_retired=include_retired, tags=tag or None, as_of=moment)
        if not hits and (hint := _hint(scope, who)).scope_unknown:
            response.headers[SCOPE_UNKNOWN_HEADER] = "true"
            if hint.did_you_mean:
                response.headers[DID_YOU_MEAN_HEADER] = ",".join(quote(s, safe="") for s in hint.did_you_mean)
        return hits

    @app.get("/v1/facts", response_model=FactPage, responses=_OUT_OF_SCOPE, tags=["notes"])
    def account_facts(
        who: Caller,
        scope: Annotated[
            str, Query(min_length=1, max_length=200, pattern=_TEXT, description="Whose memory.")
        ],
        limit: Annotated[int, Query(ge=1, le=500, description="How many facts.")] = 50,
        offset: Annotated[
            int, Query(ge=0, le=MAX_OFFSET, description="How many to skip (the next page).")
        ] = 0,
        include_retired: Annotated[
            bool, Query(description="Also notes whose invalid_at has passed.")
        ] = False,
        as_of: Annotated[
            str | None,
            _as_of(
                "The facts as the ledger stood at the end of this ISO 8601 date or date-time, UTC "
                "unless it gives an offset: 2026-12-07 is what it said that day (to its end), "
                "2026-12-07T04:41:09Z what it said in that second."
            ),
        ] = None,
    ) -> FactPage:
        """What holds now about one account, newest said first: each fact's note, when and by whom
        it was said, whether it is retired, and what reviewers decided on it. Values waiting for
        review are not in the notes yet. `total` counts them all; page with `offset`. With
        `as_of`, the facts as they stood at the end of that day, minute or second: the notes made
        by then, their values, retirements and the decisions taken by then. None for a scope no
        input was ever kept under: `scope_unknown` says so, `did_you_mean` what it may mean."""
        scope = who.grant.require(scope)
        moment = parse_as_of(as_of) if as_of is not None else None
        page = memory.facts(scope, limit=limit, offset=offset, include_retired=include_retired, as_of=moment)
        hint = _hint(scope, who) if not page.total else ScopeHint()
        return FactPage(**dict(page), **dict(hint))

    @app.get("/v1/changes", response_model=ChangeFeed, responses=_OUT_OF_SCOPE, tags=["notes"])
    def change_feed(
        who: Caller,
        after: Annotated[
            int,
            Query(ge=0, le=MAX_SEQ, description="The last change seen (`next_after`); 0: from the first."),
        ] = 0,
        scope: Annotated[
            str | None,
            Query(min_length=1, max_length=200, pattern=_TEXT, description="Only this account."),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=FEED_LIMIT, description="How many changes.")] = 100,
    ) -> ChangeFeed:
        """Every value applied to memory after change `after`, oldest first: a note made, a value the
        policy applied at once, one a reviewer approved or corrected, a retirement, a revert. Each
        says who applied it and from which input, so a CRM sync learns what became of what it sent
        as it lands. Poll again with `after=next_after`; the numbers only grow, so nothing is
        missed or seen twice. A token limited to some accounts sees theirs."""
        return memory.change_feed(after=after, scopes=who.grant.narrowed(scope), limit=limit)

    @app.get("/v1/notes/{note_id}", response_model=Note, responses=_NOT_FOUND, tags=["notes"])
    def read_note(note_id: NoteId, who: Caller) -> Note:
        """A note as it stands now (values waiting for review are not in it)."""
        return _visible_note(note_id, who)

    @app.get(
        "/v1/notes/{note_id}/history", response_model=list[HistoryEvent], responses=_NOT_FOUND, tags=["notes"]
    )
    def note_history(note_id: NoteId, who: Caller) -> list[HistoryEvent]:
        """Every proposal and change of a note, oldest first: who, when, why, from which raw log."""
        _visible_note(note_id, who)  # 404 for a note that does not exist, or in another scope
        return memory.history(note_id)

    @app.get("/v1/review/count", response_model=PendingCount, responses=_OUT_OF_SCOPE, tags=["review"])
    def pending_count(
        who: Caller,
        scope: Annotated[str | None, Query(min_length=1, max_length=200, pattern=_TEXT)] = None,
    ) -> PendingCount:
        """How many proposals wait for a reviewer, in `scope` or in every scope the token may use;
        for a reviewer's token, in their queue: the accounts they decide in, as `/v1/review/items`."""
        mine = who.identity if who.role == TokenRole.REVIEWER else None
        count = waiting_for_review(memory, scope, who.grant, reviewer=mine)
        hint = _hint(who.grant.require(scope), who) if scope is not None and not count else ScopeHint()
        return PendingCount(pending=count, **dict(hint))

    @app.get("/v1/review/pending", response_model=list[Proposal], responses=_FORBIDDEN, tags=["review"])
    def pending(
        who: Annotated[TokenInfo, Depends(reviewer)],
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
    ) -> list[Proposal]:
        """The proposals waiting for review (reviewer tokens only), in the accounts the reviewer
        decides in, as `/v1/review/items`. Read-only: decide in the console or the CLI, or here with
        `amem serve --decisions`."""
        # the scopes of her queue as /v1/review/items reads them: under the policy governance follows
        mine = memory.review.for_reviewer(ReviewFilter(), who.identity).within
        return memory.pending(limit=limit, scopes=mine)

    @app.get("/v1/review/items", response_model=ReviewPage, responses=_FORBIDDEN, tags=["review"])
    def review_items(
        who: Annotated[TokenInfo, Depends(reviewer)],
        scope: Annotated[str | None, Query(min_length=1, max_length=200, pattern=_TEXT)] = None,
        kind: Annotated[
            ReviewKind | None,
            Query(
                description="contradiction: a newer fact retires an older note; correction: a reviewer's "
                "value instead of a model's, for a second reviewer; value: any other held value."
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=100, description="How many items.")] = 20,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="How many to skip.")] = 0,
    ) -> ReviewPage:
        """What waits for a reviewer, as the console and `amem pending` show it: one item per input
        (the account, when it was said and by whom, the raw log with each held value's evidence, every
        value it holds), oldest input first; `total` counts them all. Reviewer tokens only; a
        reviewer the policy limits to some accounts sees those only. None for a scope no input was
        ever kept under: `scope_unknown` says so, `did_you_mean` what it may mean."""
        f = ReviewFilter(scope=who.grant.named(scope), kind=kind)
        page = memory.review_items(f, limit=limit, offset=offset, reviewer=who.identity)
        hint = _hint(f.scope, who) if f.scope is not None and not page.total else ScopeHint()
        return ReviewPage(**dict(page), **dict(hint))

    @app.get("/v1/review/items/count", response_model=MatchCount, responses=_FORBIDDEN, tags=["review"])
    def count_review_items(
        who: Annotated[TokenInfo, Depends(reviewer)],
        scope: Annotated[str | None, Query(min_length=1, max_length=200, pattern=_TEXT)] = None,
        kind: Annotated[ReviewKind | None, Query()] = None,
    ) -> MatchCount:
        """How many items and proposals match a filter, and a fingerprint of that exact set: what
        "approve all matching" would decide (reviewer tokens only). None for a scope no input was
        ever kept under: `scope_unknown` says so, `did_you_mean` what it may mean."""
        f = ReviewFilter(scope=who.grant.named(scope), kind=kind)
        counted = memory.count_review_items(f, reviewer=who.identity)
        hint = _hint(f.scope, who) if f.scope is not None and not counted.items else ScopeHint()
        return MatchCount(**dict(counted), **dict(hint))

    if decisions:
        _decision_routes(app, memory, bearer, Caller)
    return app


def _filter(body: _Matching) -> ReviewFilter:
    """The filter "all matching" decides, its scope read as GET /v1/review/items/count reads it."""
    return ReviewFilter(scope=named_scope(body.scope) if body.scope is not None else None, kind=body.kind)


#: Where a request's token expiry waits for its answer (``request.state``), as the header's value.
_EXPIRES = "amem_token_expires"
#: Where a request's state keeps the actor its token adds as.
_SENDER = "amem_sender"
#: States that are the server's, not the request's: the index or a model cannot answer now.
_UNAVAILABLE = (
    IndexUnavailableError,
    IndexModelChangedError,
    AnalysisPendingError,
    ConfigError,
    PolicyError,
    SchemaMismatchError,
)
#: What may carry a secret in a message: a URL's user and password, a key or token, "api_key=...".
_SECRETS = (
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@"), r"\1***@"),
    (re.compile(r"\b(sk|amem|key|token)[-_][A-Za-z0-9_-]{8,}"), r"\1-***"),
    (re.compile(r"(?i)\b(api[_-]?key|token|password|secret|authorization)(\s*[=:]\s*)\S+"), r"\1\2***"),
)


def _without_secrets(message: str) -> str:
    """``message`` with anything that looks like a credential masked: it goes to the caller."""
    for pattern, mask in _SECRETS:
        message = pattern.sub(mask, message)
    return message


def _note_expiry(request: Request, info: TokenInfo) -> None:
    """Remember the token's expiry for the answer, whatever it turns out to be (an error too)."""
    if info.expires_at is not None:  # so an agent's operator sees the end coming
        setattr(request.state, _EXPIRES, info.expires_at.isoformat())


def _inputs_wrong(exc: RequestValidationError) -> bool:
    """Whether FastAPI refused a batch's inputs only (each error within ``inputs[i]``), not the
    request's shape (no ``inputs``, too many, a field beside it), which keeps FastAPI's answer."""
    errors = exc.errors()
    return bool(errors) and all(
        len(loc := tuple(e.get("loc", ()))) >= 3 and loc[:2] == ("body", "inputs") and isinstance(loc[2], int)
        for e in errors
    )


def _batch_problems(memory: Memory, exc: RequestValidationError, sender: str) -> list[tuple[int, str]]:
    """Every wrong input of a batch FastAPI refused, 1-based, as the batch's own check names them
    (``Memory.check_inputs``): FastAPI stopped at the fields it checks (an empty text) and never
    named another input's wrong ``at``, and it counted from 0. An input only FastAPI refused keeps
    its words."""
    problems = dict(memory.check_inputs(exc.body["inputs"], actor=sender))
    refused: dict[int, list[str]] = {}
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"][3:]) or "input"
        refused.setdefault(error["loc"][2] + 1, []).append(f"{field}: {error['msg']}")
    return sorted((problems | {n: "; ".join(why) for n, why in refused.items() if n not in problems}).items())


def _expiry_of_sender(memory: Memory, request: Request) -> None:
    """For an answer made before the token was checked (a body that is not JSON): its expiry, if
    the token is good; a bad one is no business of that answer's."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return
    try:
        _note_expiry(request, memory.tokens.authenticate(token.strip()))
    except AmemError:
        return


def _unparsed_body(cause: BaseException | None) -> str | None:
    """What is wrong with a body FastAPI could not parse (``cause``: what its JSON reading raised),
    or None when it is something else."""
    if isinstance(cause, UnicodeDecodeError):
        byte = cause.object[cause.start]
        return (
            f"the body is not UTF-8: byte 0x{byte:02x} at position {cause.start} ({cause.reason}); "
            "send JSON encoded as UTF-8"
        )
    if isinstance(cause, RecursionError):
        from amem.domain.text import TOO_DEEP

        return f"the body is not JSON amem can read: it is {TOO_DEEP}"
    return None


def _from_a_model(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is a model provider's failure, as litellm
    raises it for an embedding or a completion."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if type(seen).__module__.split(".")[0] in ("litellm", "openai"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _kind(exc: BaseException) -> str:
    return f"{type(exc).__module__.split('.')[0]}.{type(exc).__name__}"


class _ExpiryOnEveryAnswer:
    """Puts ``Amem-Token-Expires`` on every answer to a token with an expiry, errors included (a
    404, a 422): an exception handler's answer is not the route's, so a header set on the route's
    response was lost with it. Plain ASGI, so a request costs no more than a dict look-up."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                expires = scope.get("state", {}).get(_EXPIRES)
                headers = MutableHeaders(scope=message)
                if expires is not None and "Amem-Token-Expires" not in headers:
                    headers["Amem-Token-Expires"] = expires
            await send(message)

        await self.app(scope, receive, sending)


def _refused_or(report: DecisionReport) -> Any:
    """An approval of many values: 409 where it approved nothing because the policy refused its
    values (frozen since: recorded as the policy's rejections), as one value's approval answers;
    the report otherwise (200), refusals counted in its summary."""
    refused = report.refused_by_policy()
    if refused and len(refused) == len(report.decided):
        detail = (
            f"refused by the policy, not approved: {report.summary()}; the attributes are frozen since "
            "(see each proposal's review_comment), and nothing was applied"
        )
        return JSONResponse({"detail": detail, "report": jsonable_encoder(report)}, status_code=409)
    return report


def _decision_routes(app: FastAPI, memory: Memory, bearer: HTTPBearer, caller: Any) -> None:
    """Approve and reject, for reviewers' tokens: each decision goes through governance as the
    console's does (the reviewer's role per attribute, frozen attributes, the policy in force), and
    is recorded as the reviewer's, authenticated by their token. ``caller``: the dependency every
    request's token goes through first (401, and the ``Amem-Token-Expires`` header)."""

    def decider(
        _token: caller,  # type: ignore[valid-type]
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> AuthenticatedReviewer:
        assert credentials is not None  # caller refused a request without one
        return memory.authenticate_token(credentials.credentials)  # an agent's: 403

    Decider = Annotated[AuthenticatedReviewer, Depends(decider)]
    ItemKey = Annotated[str, Path(pattern=_ID, description="The item's key: its raw log id.")]
    ProposalId = Annotated[str, Path(pattern=_ID, description="A proposal id.")]

    @app.post(
        "/v1/review/items/{key}/approve", response_model=DecisionReport, responses=_DECIDED, tags=["review"]
    )
    def approve_item(key: ItemKey, body: ApproveItemIn, who: Decider) -> Any:
        """Approve every value the item holds, if they are still the ones in `proposals` (else 409,
        nothing decided); one the reviewer's role may not decide is skipped and said in `skipped`."""
        return _refused_or(memory.approve_item(key, reviewer=who, shown=body.proposals, comment=body.comment))

    @app.post(
        "/v1/review/items/{key}/reject", response_model=DecisionReport, responses=_DECIDED, tags=["review"]
    )
    def reject_item(key: ItemKey, body: RejectItemIn, who: Decider) -> DecisionReport:
        """Reject every value the item holds, saying why, if they are still the ones in `proposals`
        (else 409, nothing decided)."""
        return memory.reject_item(key, reviewer=who, shown=body.proposals, comment=body.comment)

    @app.post(
        "/v1/review/proposals/{proposal_id}/approve",
        response_model=Proposal,
        responses=_DECIDED,
        tags=["review"],
    )
    def approve_proposal(proposal_id: ProposalId, body: ApproveIn, who: Decider) -> Proposal:
        """Approve one held value (field by field)."""
        return memory.approve(proposal_id, reviewer=who, comment=body.comment)

    @app.post(
        "/v1/review/proposals/{proposal_id}/reject",
        response_model=Proposal,
        responses=_DECIDED,
        tags=["review"],
    )
    def reject_proposal(proposal_id: ProposalId, body: RejectIn, who: Decider) -> Proposal:
        """Reject one held value, saying why."""
        return memory.reject(proposal_id, reviewer=who, comment=body.comment)

    @app.post(
        "/v1/review/proposals/{proposal_id}/correct",
        response_model=Correction,
        responses=_DECIDED,
        tags=["review"],
    )
    def correct_proposal(proposal_id: ProposalId, body: CorrectIn, who: Decider) -> Correction:
        """Reject one held value and propose the right one from the same input, as the reviewer:
        where the policy lets reviewers approve their own proposals it is applied, else it waits for
        another reviewer (`correction.status` says which)."""
        return memory.correct(proposal_id, body.value, reviewer=who, comment=body.comment)

    @app.post(
        "/v1/review/approve-matching", response_model=DecisionReport, responses=_DECIDED, tags=["review"]
    )
    def approve_matching(body: ApproveMatchingIn, who: Decider) -> Any:
        """Approve every item matching a filter, however many pages: send `expected_items` and
        `fingerprint` set to the `items` and `fingerprint` GET /v1/review/items/count answered for
        it; if the set changed since, nothing is decided (409)."""
        return _refused_or(
            memory.approve_matching(
                _filter(body),
                reviewer=who,
                expected_items=body.expected_items,
                fingerprint=body.fingerprint,
                comment=body.comment,
            )
        )

    @app.post(
        "/v1/review/reject-matching", response_model=DecisionReport, responses=_DECIDED, tags=["review"]
    )
    def reject_matching(body: RejectMatchingIn, who: Decider) -> DecisionReport:
        """Reject every item matching a filter (a run of wrong values), saying why on each: send
        `expected_items` and `fingerprint` set to the `items` and `fingerprint` GET
        /v1/review/items/count answered for it; if the set changed since, nothing is decided (409)."""
        return memory.reject_matching(
            _filter(body),
            reviewer=who,
            expected_items=body.expected_items,
            fingerprint=body.fingerprint,
            comment=body.comment,
        )
