"""Bearer tokens for agents and services (the HTTP API) and a reviewer's personal token (the CLI's
``AMEM_REVIEWER_TOKEN``, the HTTP API's read-only review queue).

A token is 256 random bits, shown once when created; the ledger keeps only its sha256 (enough for
a secret of that entropy: there is nothing to guess, so no slow hash is needed), with the identity
and role it carries. ``authenticate_token`` is the one place a token becomes an identity: an agent
token is ``agent:NAME`` and a reviewer token is the person ``NAME`` (the reviewer of the policy it
must match to decide anything; governance still checks their role per attribute). Agents can
never decide a proposal, whatever interface they come through.

A reviewer token stands in for the reviewer's password, so only the reviewer creates one: ``create``
takes the reviewer authenticated (``by``, an ``AuthenticatedReviewer`` of the same identity), and
the CLI asks for their password. Otherwise anyone at a shell could mint alice's token and decide as
her.

An agent token may be limited to some scopes (``scopes``: a CRM sync for one customer's workspace,
a support bot for one account): it then reads and adds to those only, whatever interface it comes
through (``TokenInfo.grant``, checked by amem/services/access.py). Without, it uses every scope.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel

from amem.domain.identity import same_identity, split_kind
from amem.domain.models import ActorKind, new_id, utcnow
from amem.errors import AmemError, InvalidInputError, NotFoundError, PermissionDeniedError
from amem.ledger import token_queries
from amem.ledger.store import Ledger
from amem.policy import Policy
from amem.services.access import ScopeGrant, granted_scope
from amem.services.authentication import AuthenticatedReviewer, is_authenticated

PREFIX = "amem_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")
#: ``last_used_at`` is written at most this often per token (a write per request would cost more
#: than the request), and only when no writer holds the lock: else the next request tries again.
TOUCH_EVERY = timedelta(minutes=1)
#: How long a reviewer token lasts unless its reviewer says otherwise: it stands in for a password.
REVIEWER_TOKEN_DAYS = 90
#: From this long before its expiry, a token's user is told it is coming (the CLI warns; the HTTP
#: API says every token's expiry in the ``Amem-Token-Expires`` header).
EXPIRY_WARNING = timedelta(days=7)
#: The most scopes one token may be limited to (more is a token for everyone, spelt out).
MAX_SCOPES = 100


class TokenRole(StrEnum):
    AGENT = "agent"
    REVIEWER = "reviewer"


#: The role of the tokens a kind prefix names (``TokenInfo.actor``): ``agent:NAME`` the agent
#: tokens of NAME, ``person:NAME`` the reviewer's own.
_ROLE_OF_KIND = {
    ActorKind.AGENT.value: TokenRole.AGENT.value,
    ActorKind.PERSON.value: TokenRole.REVIEWER.value,
}


class TokenInfo(BaseModel):
    id: str
    name: str
    role: TokenRole
    identity: str
    created_at: datetime
    created_by: str | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    #: When it stops being accepted; None: never.
    expires_at: datetime | None = None
    #: The scopes an agent token may read and add to, sorted; None: every scope.
    scopes: list[str] | None = None

    @property
    def actor(self) -> str:
        """Who what this token adds is recorded as: ``agent:NAME``, or ``person:NAME`` for a
        reviewer's own token, so the trail never reads a person as an agent of their name (nor
        lets the two share idempotency keys)."""
        return f"agent:{self.name}" if self.role == TokenRole.AGENT else f"person:{self.name}"

    @property
    def grant(self) -> ScopeGrant:
        """What this token may reach, for the interfaces to check each request against."""
        return ScopeGrant.of(self.scopes, holder=f"token {self.name!r}")

    def expires_soon(self, now: datetime | None = None) -> bool:
        """True from ``EXPIRY_WARNING`` before its expiry: time to make the next one."""
        return self.expires_at is not None and self.expires_at - (now or utcnow()) <= EXPIRY_WARNING


class TokenEvent(BaseModel):
    """A token created or revoked, as the event chain holds it (``amem tokens history``)."""

    id: str
    token_id: str
    action: str
    name: str
    role: TokenRole
    by: str | None = None
    at: datetime
    expires_at: datetime | None = None
    scopes: list[str] | None = None


class NotAuthenticatedError(AmemError):
    """No token, an unknown one, a revoked one or an expired one."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def identity_of(name: str, role: TokenRole) -> str:
    return f"agent:{name}" if role == TokenRole.AGENT else name


class TokenService:
    def __init__(self, ledger: Ledger, policy: Callable[[], Policy] | None = None) -> None:
        """``policy``: the policy in force, asked on each use (a process follows a new installed
        version): a reviewer token whose reviewer it no longer names is refused."""
        self.ledger = ledger
        self.policy = policy

    def create(
        self,
        name: str,
        role: TokenRole | str,
        *,
        created_by: str | None = None,
        by: AuthenticatedReviewer | None = None,
        expires_in_days: int | None = None,
        replace: bool = False,
        scopes: Sequence[str] | None = None,
    ) -> tuple[str, TokenInfo]:
        """A new token for ``name``; returns the token (shown once, never stored) and its record.

        A reviewer token needs ``by``: the reviewer ``name`` themself, authenticated (their password;
        a token stands in for it, so no one else may make one). ``expires_in_days``: it is refused
        from that many days on; 0: never; None: the role's default (a reviewer token
        ``REVIEWER_TOKEN_DAYS``, an agent token never). ``replace``: the name's other active
        tokens of the same role are revoked in the same transaction (a rotation: no moment with
        neither or both); the name is compared as an identity (``Alice`` is ``alice``).
        ``scopes``: an agent token reads and adds to these scopes only; None: every scope, or, with
        ``replace``, the scopes of the tokens it replaces, or, when every one was revoked already
        (a leaked token revoked at once, then rotated), of the name's newest token: a rotation
        keeps a token's reach."""
        if not _NAME.match(name or ""):
            raise InvalidInputError(
                f"token name {name!r}: letters, digits and . _ @ - (at most 100), "
                "starting with a letter or digit"
            )
        try:
            chosen = TokenRole(role)
        except ValueError:
            raise InvalidInputError(f"role {role!r}: use agent or reviewer") from None
        if chosen == TokenRole.REVIEWER:
            if not is_authenticated(by):
                raise PermissionDeniedError(
                    f"a reviewer token for {name} stands in for their password: only {name}, signed in "
                    "(their password), may create it"
                )
            assert by is not None
            if not same_identity(by.id, name):
                raise PermissionDeniedError(
                    f"{by.id} may not create a reviewer token for {name}: each reviewer creates their own"
                )
            created_by = by.id
        limited = _scopes(scopes, chosen)
        if expires_in_days is None:
            expires_in_days = REVIEWER_TOKEN_DAYS if chosen == TokenRole.REVIEWER else 0
        if not 0 <= expires_in_days <= 3650:
            raise InvalidInputError(
                f"expires in {expires_in_days} days: give 1 to 3650 days, or 0 for a token that never expires"
            )
        now = utcnow()
        token = PREFIX + secrets.token_urlsafe(32)
        row = {
            "id": new_id("tok"),
            "name": name,
            "role": chosen.value,
            "token_sha256": digest(token),
            "created_at": now,
            "created_by": created_by,
            "revoked_at": None,
            "last_used_at": None,
            "expires_at": now + timedelta(days=expires_in_days) if expires_in_days else None,
            "scopes": limited,
        }
        with self.ledger.write() as tx:  # the chains' head: the creation is an event
            if replace:
                # the name's tokens of this role only: an agent may share a reviewer's name
                replaced = token_queries.revoke(tx, name_or_id=name, at=now, role=chosen.value)
                if scopes is None:  # a rotation never widens a token's reach unasked
                    newest = replaced or [token_queries.newest_named(tx, name, role=chosen.value)]
                    row["scopes"] = _scopes(_inherited_scopes(name, newest), chosen)
                for old in replaced:
                    token_queries.record_event(tx, _event(old, "revoked", created_by, now))
            token_queries.insert(tx, row)
            token_queries.record_event(tx, _event(row, "created", created_by, now))
        return token, _info(row)

    def list(self) -> list[TokenInfo]:
        with self.ledger.read() as tx:
            return [_info(r) for r in token_queries.all_tokens(tx)]

    def revoke(self, name_or_id: str, *, by: str | None = None) -> int:
        """Revoke every active token of that name, compared as an identity (``CRM`` is ``crm``), or
        the token with that id, each a chained event naming ``by``. Returns how many.

        A name with a kind prefix names that role's tokens only: ``agent:bob`` the agent bob's,
        ``person:bob`` reviewer bob's own (what each adds as, ``TokenInfo.actor``), so revoking a
        leaked agent token never signs its reviewer namesake out; a bare ``bob`` revokes both."""
        kind, name = split_kind(name_or_id.strip())
        role = _ROLE_OF_KIND.get(kind) if kind is not None else None
        now = utcnow()
        revoked: list[dict[str, Any]] = []
        if kind is None or role is not None:  # llm: and system: hold no token
            with self.ledger.write() as tx:
                revoked = token_queries.revoke(
                    tx, name_or_id=name if kind is not None else name_or_id, at=now, role=role
                )
                for row in revoked:
                    token_queries.record_event(tx, _event(row, "revoked", by, now))
        if not revoked:
            held = "" if kind is None or role is not None else " (tokens are agent:NAME or person:NAME)"
            raise NotFoundError(f"no active token is named {name_or_id!r} or has that id{held}")
        return len(revoked)

    def reviewer_tokens(self, reviewer: str) -> list[TokenInfo]:
        """``reviewer``'s own tokens (role reviewer), revoked and expired ones too, oldest first: what
        the console's "Your tokens" page lists."""
        with self.ledger.read() as tx:
            rows = token_queries.all_tokens(tx)
        return [
            _info(r)
            for r in rows
            if r["role"] == TokenRole.REVIEWER.value and same_identity(str(r["name"]), reviewer)
        ]

    def revoke_own(self, token_id: str, *, by: AuthenticatedReviewer) -> None:
        """A signed-in reviewer revokes one of their own tokens (a lost laptop, a leaked shell
        history); another's token, or an agent's, is refused: that is the operator's (`amem tokens
        revoke`)."""
        if not is_authenticated(by):
            raise PermissionDeniedError("revoking a reviewer token needs its reviewer, signed in")
        mine = {t.id: t for t in self.reviewer_tokens(by.id)}
        if token_id not in mine:
            raise PermissionDeniedError(f"{by.id} may revoke only their own reviewer tokens, not {token_id}")
        if mine[token_id].revoked_at is not None:
            raise NotFoundError(f"token {token_id} is already revoked")
        self.revoke(token_id, by=by.id)

    def history(self) -> list[TokenEvent]:
        """Every token created or revoked since migration 0016, oldest first: who, when, which
        role, until when (tokens made before it have their api_tokens row only)."""
        with self.ledger.read() as tx:
            return [TokenEvent.model_validate(row) for row in token_queries.events(tx)]

    def authenticate(self, token: str | None) -> TokenInfo:
        """The token's record, if it is known, not revoked and not expired; NotAuthenticatedError
        otherwise. PermissionDeniedError for a reviewer token whose reviewer the policy in force no
        longer names (the one check, so no route or interface reads it as anyone's)."""
        if not token:
            raise NotAuthenticatedError("a bearer token is required (amem tokens create NAME --role agent)")
        if not token.startswith(PREFIX):  # a token given, not amem's: another service's, or cut short
            raise NotAuthenticatedError(
                f"this is not an amem token (amem tokens start with {PREFIX}); give one `amem tokens "
                "create NAME --role agent` made"
            )
        with self.ledger.read(one_statement=True) as tx:  # every request checks: one round trip
            row = token_queries.by_digest(tx, digest(token))
        if row is None or row["revoked_at"] is not None:
            raise NotAuthenticatedError("this token is unknown or revoked")
        now = utcnow()
        if row["expires_at"] is not None and now >= row["expires_at"]:
            raise NotAuthenticatedError(
                f"this token expired on {row['expires_at']:%Y-%m-%d %H:%M} UTC: create another "
                "(amem tokens create)"
            )
        info = _info(row)
        self._check_reviewer(info)
        if row["last_used_at"] is None or now - row["last_used_at"] > TOUCH_EVERY:
            # best effort: a request never waits on the writers to note when its token was used
            token_queries.touch_unless_busy(self.ledger, row["id"], now)
        return info

    def _check_reviewer(self, info: TokenInfo) -> None:
        """A reviewer token acts as its reviewer: once the policy in force no longer names them (they
        left the team), it is refused, never read as someone of every scope."""
        if info.role != TokenRole.REVIEWER or self.policy is None:
            return
        if self.policy().reviewer(info.identity) is None:  # no file path: an API client reads this
            raise PermissionDeniedError(
                f"the reviewer token {info.name!r} is refused: {info.identity} is not a reviewer of the "
                "policy in force"
            )

    def authenticate_token(self, token: str | None) -> tuple[str, TokenRole]:
        """(identity, role) of a bearer token: ``agent:NAME`` for an agent, ``NAME`` for a reviewer."""
        info = self.authenticate(token)
        return info.identity, info.role


def _event(token: dict[str, Any], action: str, by: str | None, at: datetime) -> dict[str, Any]:
    return {
        "id": new_id("tev"),
        "token_id": token["id"],
        "action": action,
        "name": token["name"],
        "role": token["role"],
        "by": by,
        "at": at,
        "expires_at": token.get("expires_at"),
        "scopes": token.get("scopes"),
        # a creation commits to the token it made: a digest swapped into api_tokens later is told
        "token_sha256": token["token_sha256"] if action == "created" else None,
    }


def _info(row: dict[str, object]) -> TokenInfo:
    role = TokenRole(str(row["role"]))
    return TokenInfo(
        id=str(row["id"]),
        name=str(row["name"]),
        role=role,
        identity=identity_of(str(row["name"]), role),
        created_at=row["created_at"],  # type: ignore[arg-type]
        created_by=row["created_by"],  # type: ignore[arg-type]
        revoked_at=row["revoked_at"],  # type: ignore[arg-type]
        last_used_at=row["last_used_at"],  # type: ignore[arg-type]
        expires_at=row.get("expires_at"),  # type: ignore[arg-type]
        scopes=row.get("scopes"),  # type: ignore[arg-type]
    )


def _inherited_scopes(name: str, replaced: Sequence[dict[str, Any] | None]) -> list[str] | None:
    """The scopes a rotation's new token keeps: those its predecessors shared (None among them: no
    predecessor ever, so nothing to keep)."""
    kinds = {tuple(r["scopes"]) if r is not None and r.get("scopes") is not None else None for r in replaced}
    if len(kinds) > 1:
        raise InvalidInputError(
            f"the active tokens of {name} reach different scopes: give the new token's scopes (--scope)"
        )
    (kept,) = kinds or {None}
    return list(kept) if kept is not None else None


def _scopes(scopes: Sequence[str] | None, role: TokenRole) -> list[str] | None:
    """The scopes a token is limited to, sorted and once each; None: every scope. A reviewer token
    stands in for its reviewer, whose reach the policy decides, so it takes none."""
    if scopes is None:
        return None
    if role != TokenRole.AGENT:
        raise InvalidInputError(
            "only an agent token may be limited to scopes: a reviewer token acts as its reviewer"
        )
    named = sorted(set(scopes))
    if not named:
        raise InvalidInputError("a token limited to scopes needs at least one scope")
    if len(named) > MAX_SCOPES:
        raise InvalidInputError(f"{len(named)} scopes: a token may be limited to at most {MAX_SCOPES}")
    return [granted_scope(scope) for scope in named]
