"""The MCP server: amem's memory as tools an agent's model can call (``amem mcp``; ``mcp`` extra).

Tools add (answered at once, analysed by the workers this server starts), follow an input, search
and read. No tool approves, rejects, reverts, erases, edits or changes the policy: those are
decisions, made by an authenticated person in the console or the CLI, never by an agent.

Over stdio the client that started the process is its user, and every input is recorded with this
server's actor (``--actor``, default ``agent:mcp``). Over HTTP every request carries a bearer token
of the ledger's (``amem tokens create NAME --role agent``, as for the HTTP API), checked before any
tool runs, and the token's holder is the actor of what it adds (``agent:NAME``; a reviewer's own
token, ``person:NAME``). A token limited to some scopes
(``amem tokens create NAME --role agent --scope acme``) reaches those only, as over the HTTP API;
over stdio, ``amem mcp --scope`` limits the server itself.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from amem.api.inputs import (
    LEDGER_UNREACHABLE,
    add_once,
    added_status,
    report_embedded,
    status_when_settled,
    waiting_for_review,
)
from amem.domain.models import Note, RetirementWaiting
from amem.domain.values import parse_as_of
from amem.errors import AmemError, PermissionDeniedError, ledger_unreachable
from amem.memory import Memory
from amem.services.access import ScopeGrant, granted_scope
from amem.services.facts import MAX_OFFSET, Fact
from amem.services.search import SearchResult
from amem.services.tokens import NotAuthenticatedError, TokenRole

log = logging.getLogger(__name__)

T = TypeVar("T")

INSTRUCTIONS = """\
amem is a long-term memory of facts about accounts and people (calls, decisions, prices, dates).
Use add_note to remember something (it returns at once; the note is built in the background),
search / search_agentic before answering a question about an account, and account_facts for what
holds now about it. Notes are scoped: pass the account or user the memory is about as `scope`.
You cannot approve or change reviewed values: people decide those.
"""

_READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)


def _currency(
    note: Note, said_at: datetime | None, retired: bool, waiting: RetirementWaiting | None
) -> dict[str, Any]:
    """Whether a note still holds, as a search hit and a fact both say it: its validity, when it
    was said, and, while a person has not decided, the newer note that contradicts it."""
    out: dict[str, Any] = {
        "valid_at": note.valid_at.isoformat() if note.valid_at else None,
        "invalid_at": note.invalid_at.isoformat() if note.invalid_at else None,
        "said_at": said_at.isoformat() if said_at else None,
        "retired": retired,
    }
    if waiting is not None:
        out["retirement_waiting"] = waiting.model_dump(mode="json")
    return out


def _hit(result: SearchResult) -> dict[str, Any]:
    note = result.note
    hit: dict[str, Any] = {
        "note_id": result.note_id,
        "score": round(result.score, 4),
        "content": note.content,
        "context": note.context,
        "keywords": note.keywords,
        "tags": note.tags,
        "category": note.category,
        "decision_rationale": note.decision_rationale,
        "attributes": note.extra,  # the team's own attributes (next step, priorities, ...)
        "links": [link.note_id for link in note.links],
        "matched_by": list(result.matched_by),
        **_currency(note, result.said_at, result.retired, result.retirement_waiting),
    }
    if result.linked_from:
        hit["linked_from"] = result.linked_from
        hit["link_reason"] = result.link_reason
    return hit


def _fact(fact: Fact) -> dict[str, Any]:
    note = fact.note
    return {
        "note_id": note.id,
        "content": note.content,
        "category": note.category,
        "decision_rationale": note.decision_rationale,
        "attributes": note.extra,
        "said_by": fact.said_by,
        "decisions": [d.model_dump(mode="json", exclude_none=True) for d in fact.decisions],
        **_currency(note, fact.said_at, fact.retired, fact.retirement_waiting),
    }


def _guard(call: Callable[[], T]) -> T:
    """A mistake the caller can fix comes back as the tool's error text, not a server fault; so
    does a ledger database out of reach, said in words as the HTTP API says it (the driver's
    text, naming the server, stays in the log)."""
    try:
        return call()
    except Exception as exc:
        told = _told(exc)
        if told is None:
            raise
        raise told from None


def _told(exc: Exception) -> ToolError | None:
    """What a tool answers for ``exc``: amem's own explanation, or the ledger out of reach in
    words (its reason logged); None for anything else, raised as it is: a bug to see."""
    if isinstance(exc, AmemError):
        return ToolError(str(exc))
    reason = ledger_unreachable(exc)
    if reason is None:
        return None
    log.warning("the ledger database cannot be reached: %s", reason)
    return ToolError(LEDGER_UNREACHABLE)


#: The most hits one search may ask for, as the HTTP API's ``k``.
MAX_K = 100


def _check_k(k: int) -> None:
    """A ``k`` outside 1 to ``MAX_K`` is the caller's mistake, said as such (a huge one reached the
    index and came back as an opaque error)."""
    if not 1 <= k <= MAX_K:
        raise ToolError(f"k must be 1 to {MAX_K}, not {k}")


def _moment(as_of: str | None) -> datetime | None:
    """The moment a tool's ``as_of`` names, read as the HTTP API reads its ``as_of``
    (values.parse_as_of: the end of the day, minute or second given, UTC unless it gives an
    offset); a value that is not an ISO 8601 date or date-time is the tool's error, in the same
    words as the HTTP API's 422. None: now."""
    return _guard(lambda: parse_as_of(as_of)) if as_of is not None else None


class LedgerTokens:
    """The MCP SDK's token verifier over the ledger's bearer tokens: the same tokens, revocation
    and hashing as the HTTP API's (amem/services/tokens.py)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            info = await anyio.to_thread.run_sync(self.memory.tokens.authenticate, token)
        except NotAuthenticatedError:
            return None  # the SDK answers 401 before any tool runs
        except PermissionDeniedError as exc:  # a reviewer's token whose reviewer left the policy
            log.warning("MCP request refused: %s", exc)  # the SDK's 401 cannot say why; the log does
            return None
        except Exception as exc:
            reason = ledger_unreachable(exc)
            if reason is None:
                raise
            log.warning("MCP request refused: the ledger database cannot be reached: %s", reason)
            raise LedgerUnreachableError from None  # 503, as the HTTP API answers it
        expires = int(info.expires_at.timestamp()) if info.expires_at is not None else None
        return AccessToken(
            token=token,
            client_id=info.identity,
            scopes=[info.role.value],
            expires_at=expires,
            claims={_SCOPES_CLAIM: info.scopes, "name": info.name, _ACTOR_CLAIM: info.actor},
        )


class LedgerUnreachableError(Exception):
    """A bearer token could not be checked: the ledger's database is out of reach. The machine's
    state, not the caller's token: answered 503 (``_LedgerUnreachableAnswer``), never 401 (which
    would tell a client to drop a good token) nor the SDK's bare 500."""


class _LedgerUnreachableAnswer:
    """ASGI, around the SDK's authentication: a request whose token could not be checked for
    ``LedgerUnreachableError`` gets 503 with the HTTP API's words (``LEDGER_UNREACHABLE``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except LedgerUnreachableError:
            if scope["type"] != "http":
                raise
            body = {"error": "temporarily_unavailable", "error_description": LEDGER_UNREACHABLE}
            await JSONResponse(body, status_code=503)(scope, receive, send)


class _AmemMCPServer(MCPServer):
    """The SDK's server, its HTTP apps answering a ledger out of reach at the token check as the
    HTTP API does (503, in words) rather than as a crash (500)."""

    def streamable_http_app(self, **options: Any) -> Starlette:  # type: ignore[override]
        app = super().streamable_http_app(**options)
        app.add_middleware(_LedgerUnreachableAnswer)  # outside the SDK's AuthenticationMiddleware
        return app

    def sse_app(self, **options: Any) -> Starlette:  # type: ignore[override]
        app = super().sse_app(**options)
        app.add_middleware(_LedgerUnreachableAnswer)
        return app


#: Where a verified token carries the amem scopes it is limited to (None: every scope).
_SCOPES_CLAIM = "amem_scopes"
#: Where it carries who its inputs are recorded as (``TokenInfo.actor``: a reviewer's, person:NAME).
_ACTOR_CLAIM = "amem_actor"


def create_mcp_server(
    memory: Memory,
    *,
    actor: str = "agent:mcp",
    workers: int = 1,
    tokens_at: str | None = None,
    scopes: Sequence[str] | None = None,
) -> MCPServer:
    """The server on ``memory``; it runs ``workers`` queue workers while it serves (0: none).

    ``tokens_at``: the server's URL when it serves HTTP; every request must then carry a bearer
    token of the ledger's, and what a request adds is recorded as the token's holder (else as
    ``actor``), within the token's scopes. ``scopes``: without a token (stdio), the scopes the
    server reads and adds to (None: every scope)."""
    # checked as a token's --scope is: " acme" would refuse acme, the account it was started for
    own = ScopeGrant.of(
        None if scopes is None else [granted_scope(s) for s in scopes], holder="this MCP server"
    )

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        pool = memory.start_workers(workers) if workers > 0 else None
        try:
            yield
        finally:
            if pool is not None:
                pool.stop(timeout=memory.settings.worker_lease_seconds)
            report_embedded(memory, "amem mcp")

    auth = {}
    if tokens_at is not None:
        auth = {
            "token_verifier": LedgerTokens(memory),
            "auth": AuthSettings(issuer_url=tokens_at, resource_server_url=None),  # type: ignore[arg-type]
        }
    server = _AmemMCPServer("amem", instructions=INSTRUCTIONS, lifespan=lifespan, **auth)  # type: ignore[arg-type]

    def author() -> str:
        """Who adds: the bearer token's holder over HTTP (an agent, or the person a reviewer's
        token stands for), this server's actor over stdio."""
        token = get_access_token()
        return str((token.claims or {})[_ACTOR_CLAIM]) if token is not None else actor

    def reach() -> ScopeGrant:
        """What the caller may use: its token's scopes over HTTP, the server's own over stdio."""
        token = get_access_token()
        if token is None:
            return own
        claims = token.claims or {}
        return ScopeGrant.of(
            claims.get(_SCOPES_CLAIM), holder=f"token {claims.get('name', token.client_id)!r}"
        )

    def reviewer() -> str | None:
        """The reviewer a bearer token stands for (their queue is what they count), else None."""
        token = get_access_token()
        return token.client_id if token is not None and TokenRole.REVIEWER in token.scopes else None

    def visible(note_id: str) -> Note:
        note = memory.read(note_id)
        reach().require_visible(note.scope, f"note {note_id} does not exist")
        return note

    @server.tool(annotations=_ADD)
    def add_note(
        content: str,
        scope: str,
        at: str | None = None,
        metadata: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Remember something: a fact, a decision and its reason, what a customer said, a date.

        Returns at once with a raw_log_id; the text is kept verbatim and turned into a linked,
        structured note in the background (usually within seconds). Call input_status with the
        raw_log_id to learn when it is done and its note_id. `scope` is whose memory this is (an
        account or user, e.g. "acme"); `at` is when it happened (ISO 8601) if not now.
        `idempotency_key` is your own name for this input (e.g. the message or record id): with
        it, or with `at`, the same input sent again (a retry) is kept once: status
        recorded_before, same raw_log_id; or status erased, with an erasure_id, when that input
        was erased since on a data subject's request: nothing is kept again or analysed. That is
        final, not a failure: do not add the text again (under another key, or none)."""
        who = author()
        named = _guard(lambda: reach().require(scope))  # " acme" is acme, as every tool reads it
        item = {
            "content": content,
            "scope": named,
            "at": at,
            "metadata": metadata or {},
            "idempotency_key": idempotency_key,
        }
        outcome = _guard(lambda: add_once(memory, item, who))
        added = {"raw_log_id": outcome.raw_log_id, "status": added_status(outcome)}
        return added | ({"erasure_id": outcome.erasure_id} if outcome.erasure_id is not None else {})

    @server.tool(annotations=_READ_ONLY)
    async def input_status(raw_log_id: str, wait_seconds: float = 0) -> dict[str, Any]:
        """What became of something add_note was given: queued (waiting), processing, done (with
        note_id, readable with read_note), failed (with error; the text is kept, and an operator
        retries it with `amem reprocess`: nothing retries it before) or erased (on a data
        subject's request: its text is gone). `wait_seconds` (0 to 30): wait
        while it is queued or processing, and answer as soon as it is done: one call instead of
        asking again and again. What reviewers later do with its values: changes_since."""
        try:
            status = await status_when_settled(memory, raw_log_id, wait_seconds, reach())
        except Exception as exc:  # as _guard answers, the ledger out of reach included
            told = _told(exc)
            if told is None:
                raise
            raise told from None
        return status.model_dump(mode="json")

    @server.tool(annotations=_READ_ONLY)
    def search(
        query: str, scope: str, k: int = 10, include_retired: bool = False, as_of: str | None = None
    ) -> list[dict[str, Any]]:
        """Find the notes of one scope that answer a question, by meaning and by words. Use this
        first for a direct question ("what price did Acme agree?"). Notes whose fact was
        superseded (invalid_at passed) are left out unless include_retired is true; a hit with
        retirement_waiting is contradicted by a newer note (its words in evidence) whose
        retirement a reviewer has not decided yet: prefer the newer fact, say it is unconfirmed.
        `k`: how many hits, 1 to 100. `as_of` (an ISO 8601 date or time, UTC unless it gives an
        offset): the notes as they stood at the end of it, the search made then again: 2026-06-01
        for "what did we know about Acme's price on 1 June?" (that whole day), 2026-06-01T09:30Z for
        the end of that minute; notes made later are not in it, values changed later are as they
        were then."""
        _check_k(k)
        named = _guard(lambda: reach().require(scope))
        moment = _moment(as_of)
        results = _guard(
            lambda: memory.search(query, k, scope=named, include_retired=include_retired, as_of=moment)
        )
        return [_hit(r) for r in results]

    @server.tool(annotations=_READ_ONLY)
    def search_agentic(query: str, scope: str, k: int = 5, as_of: str | None = None) -> list[dict[str, Any]]:
        """Like search, then also the notes each hit links to and is linked from (marked with
        linked_from and link_reason). Use it for questions that need context or a chain of facts
        ("why did Acme change plans, and what happened next?"). `k`: how many hits, 1 to 100.
        `as_of`: as for search."""
        _check_k(k)
        named = _guard(lambda: reach().require(scope))
        moment = _moment(as_of)
        results = _guard(lambda: memory.search_agentic(query, k, scope=named, as_of=moment))
        return [_hit(r) for r in results]

    @server.tool(annotations=_READ_ONLY)
    def account_facts(
        scope: str,
        limit: int = 20,
        offset: int = 0,
        include_retired: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any]:
        """What holds now about one account or user, newest said first: each fact's content,
        category, decision rationale and validity dates, when and by whom it was said, and what
        reviewers decided on it. Use it to brief yourself on an account ("what do we know about
        Acme?"); use search for a specific question. `total` is how many facts there are: page
        with offset (limit 1 to 100). Values waiting for a reviewer are not in it yet. `as_of`
        (an ISO 8601 date or time, UTC unless it gives an offset): the facts as memory held them
        at the end of it, with only the decisions taken by then: 2026-06-01 for "what did we know
        about Acme on 1 June?" (that whole day), 2026-06-01T09:30Z for the end of that minute."""
        if not 1 <= limit <= 100:
            raise ToolError(f"limit must be 1 to 100, not {limit}")
        if not 0 <= offset <= MAX_OFFSET:  # else the service's own bounds, not this tool's, were said
            raise ToolError(f"offset must be 0 to {MAX_OFFSET:,}, not {offset}")
        named = _guard(lambda: reach().require(scope))
        moment = _moment(as_of)
        page = _guard(
            lambda: memory.facts(
                named, limit=limit, offset=offset, include_retired=include_retired, as_of=moment
            )
        )
        answer = {"scope": page.scope, "total": page.total, "facts": [_fact(f) for f in page.facts]}
        if page.as_of is not None:
            answer["as_of"] = page.as_of.isoformat()
        return answer

    @server.tool(annotations=_READ_ONLY)
    def read_note(note_id: str) -> dict[str, Any]:
        """One note as it stands now: content, keywords, tags, context, category, validity dates,
        links, team attributes and the raw logs it came from. Values waiting for a reviewer are not
        in it yet."""
        return _guard(lambda: visible(note_id)).model_dump(mode="json")

    @server.tool(annotations=_READ_ONLY)
    def note_history(note_id: str) -> list[dict[str, Any]]:
        """Every change and proposal of a note, oldest first: who or which model, when, why, from
        which raw log. Use it to explain where a value came from."""
        _guard(lambda: visible(note_id))
        return [event.model_dump(mode="json") for event in _guard(lambda: memory.history(note_id))]

    @server.tool(annotations=_READ_ONLY)
    def changes_since(after: int = 0, scope: str | None = None, limit: int = 50) -> dict[str, Any]:
        """Every value applied to memory after change number `after` (0: from the first), oldest
        first: a note made, a value applied at once, one a reviewer approved or corrected, a fact
        retired. Each says who applied it (`person:NAME` for a reviewer) and from which input
        (`raw_log_ids`). Use it to learn what became of what you sent, or what changed since you
        last looked; call again with `after` = the `next_after` it gave (limit 1 to 200)."""
        if not 1 <= limit <= 200:
            raise ToolError(f"limit must be 1 to 200, not {limit}")
        scopes = _guard(lambda: reach().narrowed(scope))
        return _guard(lambda: memory.change_feed(after=after, scopes=scopes, limit=limit)).model_dump(
            mode="json"
        )

    @server.tool(annotations=_READ_ONLY)
    def pending_review_count(scope: str | None = None) -> dict[str, int]:
        """How many proposed values wait for a person's review (optionally in one scope). Read-only:
        you cannot approve or reject; tell the user a reviewer must look if it matters. With a
        reviewer's token: those in the reviewer's queue (the accounts they decide in)."""
        return {"pending": _guard(lambda: waiting_for_review(memory, scope, reach(), reviewer()))}

    return server
