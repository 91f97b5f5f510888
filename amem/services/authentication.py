"""Who is deciding: a reviewer proven by a password (or signed in by an interface that proved it).

Governance decides nothing for a bare name. Its decision methods take an ``AuthenticatedReviewer``,
which only this module issues:

- ``Authentication.with_password``: the reviewer's password against their bcrypt ``password_hash``
  in the policy in force (the CLI, scripts, the Python API);
- ``Authentication.signed_in``: for an interface that has authenticated the person itself and is
  trusted to say so (the console's sign-in form or its trusted proxy header; a token service).

Each one carries the fingerprint of the policy it was issued under, so a reviewer signed in under
one policy cannot decide under another (``--policy`` cannot widen anyone's rights).

This is a discipline for every interface, not a barrier against code running with the ledger's
own credentials: such code can write the database directly, which only ``verify`` detects.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from amem.domain.identity import canonical_identity, split_kind
from amem.domain.models import Actor, ActorKind, utcnow
from amem.errors import AuthenticationError, InvalidInputError, PermissionDeniedError, SignInsLockedError
from amem.policy import Policy
from amem.services.accounts import check_password

#: Only this module holds it: an AuthenticatedReviewer made anywhere else refuses to exist.
_SEAL = object()
#: Compared against when the name is unknown or has no hash, so a wrong name costs what a wrong
#: password costs (no timing hint about who exists): a random string's hash, 12 rounds.
_DUMMY_HASH = "$2b$12$IR96QMzaFxaG5dfQ9rHA/ORYCVglJLQjU6mMjvNq/neKavR6fERmq"

#: Failed password sign-ins one reviewer name may take within ``SIGN_IN_WINDOW``; the next are
#: refused, right password or not, until the oldest of them is that old (guessing a password then
#: costs a window per few guesses, not a bcrypt check's quarter of a second).
MAX_FAILED_SIGN_INS = 5
SIGN_IN_WINDOW = timedelta(minutes=15)

#: How a reviewer was authenticated (recorded nowhere secret; shown in messages).
METHODS = ("password", "console", "trusted-header", "token", "test")


@dataclass(frozen=True)
class AuthenticatedReviewer:
    """A reviewer of the policy in force whose identity was proven. Issued by ``Authentication``."""

    id: str
    name: str
    roles: tuple[str, ...]
    method: str
    policy_fingerprint: str
    at: datetime
    _seal: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._seal is not _SEAL:
            raise PermissionDeniedError(
                "an AuthenticatedReviewer is issued by amem's Authentication (a password, a console "
                "sign-in, a token), never built directly"
            )

    @property
    def actor(self) -> Actor:
        return Actor(kind=ActorKind.PERSON, id=self.id)

    def __str__(self) -> str:
        return f"person:{self.id}"


def is_authenticated(value: object) -> bool:
    return isinstance(value, AuthenticatedReviewer) and value._seal is _SEAL


class FailedSignIns:
    """The failed password sign-ins of each reviewer name in the last ``window``, kept by the
    process that checks passwords (the console's, held by its Memory; each CLI run has its own).
    Counted by the name as entered, canonical, whether or not a reviewer has it, so a refusal says
    nothing about who exists. Thread-safe: a console serves many sessions."""

    def __init__(
        self,
        limit: int = MAX_FAILED_SIGN_INS,
        window: timedelta = SIGN_IN_WINDOW,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._failed: dict[str, deque[datetime]] = {}
        self._lock = threading.Lock()

    def refuse_if_locked(self, name: str) -> None:
        """SignInsLockedError while ``name`` has ``limit`` failures in the window."""
        with self._lock:
            recent = self._recent(name)
            if len(recent) < self.limit:
                return
            until = recent[0] + self.window
        minutes = max(1, -(-int((until - self.clock()).total_seconds()) // 60))
        raise SignInsLockedError(
            f"too many failed sign-ins for {name}: try again in {minutes} minute{'s' if minutes > 1 else ''}"
        )

    def failed(self, name: str) -> None:
        with self._lock:
            self._recent(name).append(self.clock())

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._failed.pop(name, None)

    def _recent(self, name: str) -> deque[datetime]:
        recent = self._failed.setdefault(name, deque())
        while recent and recent[0] <= self.clock() - self.window:
            recent.popleft()
        return recent


class Authentication:
    """Authenticates reviewers against one policy (the one in force for this store). ``failed``:
    where failed password sign-ins are counted (a Memory keeps one for its life)."""

    def __init__(self, policy: Policy, policy_fingerprint: str, failed: FailedSignIns | None = None) -> None:
        self.policy = policy
        self.policy_fingerprint = policy_fingerprint
        self.failed = failed if failed is not None else FailedSignIns()

    def with_password(self, identity: str, password: str) -> AuthenticatedReviewer:
        """The reviewer ``identity`` if ``password`` matches their bcrypt hash; AuthenticationError
        (one message for a wrong name and a wrong password) otherwise, and SignInsLockedError after
        ``MAX_FAILED_SIGN_INS`` failures of that name within ``SIGN_IN_WINDOW``."""
        who = self.person(identity)
        self.failed.refuse_if_locked(who)
        entry = self.policy.reviewer(who)
        password_hash = entry.password_hash if entry is not None else None
        if entry is not None and not password_hash:
            check_password(password or "x", _DUMMY_HASH)
            raise AuthenticationError(
                f"{who} has no password_hash in {self.policy.source or 'the policy'}: make one with "
                "`amem reviewers hash-password` (or `amem reviewers set-password`)"
            )
        if not check_password(password, password_hash or _DUMMY_HASH) or entry is None:
            self.failed.failed(who)
            raise AuthenticationError("wrong reviewer name or password")
        self.failed.succeeded(who)
        return self._issue(who, "password")

    def signed_in(self, identity: str, *, method: str) -> AuthenticatedReviewer:
        """A reviewer an interface has authenticated itself (the console's password form or trusted
        proxy header, a token service). Still only a reviewer of the policy in force."""
        if method not in METHODS or method == "password":
            raise InvalidInputError(f"unknown sign-in method {method!r}")
        who = self.person(identity)
        if self.policy.reviewer(who) is None:
            raise AuthenticationError(f"{who} is not a reviewer in {self.policy.source or 'the policy'}")
        return self._issue(who, method)

    def person(self, identity: str) -> str:
        """The canonical name of ``identity``, refused at once when it names an agent, an LLM or the
        system (before any password is asked for): they can never approve or reject."""
        kind, _name = split_kind(identity.strip()) if isinstance(identity, str) else (None, "")
        who = canonical_identity(identity, what="reviewer")
        if (kind is not None and kind != ActorKind.PERSON.value) or self.policy.is_agent(who):
            raise PermissionDeniedError(
                f"{identity.strip()} is not a person: agents and LLMs can never approve or reject"
            )
        return who

    def _issue(self, who: str, method: str) -> AuthenticatedReviewer:
        entry = self.policy.reviewer(who)
        assert entry is not None
        return AuthenticatedReviewer(
            id=who,
            name=entry.name or who,
            roles=tuple(entry.roles),
            method=method,
            policy_fingerprint=self.policy_fingerprint,
            at=utcnow(),
            _seal=_SEAL,
        )
