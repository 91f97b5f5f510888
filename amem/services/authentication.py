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

import ipaddress
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from amem.domain.identity import canonical_identity, identity_key, split_kind
from amem.domain.models import Actor, ActorKind, utcnow
from amem.errors import AuthenticationError, InvalidInputError, PermissionDeniedError, SignInsLockedError
from amem.policy import Policy
from amem.services.accounts import check_password

#: Only this module holds it: an AuthenticatedReviewer made anywhere else refuses to exist.
_SEAL = object()
#: Compared against when the name is unknown or has no hash, so a wrong name costs what a wrong
#: password costs (no timing hint about who exists): a random string's hash, 12 rounds.
_DUMMY_HASH = "$2b$12$IR96QMzaFxaG5dfQ9rHA/ORYCVglJLQjU6mMjvNq/neKavR6fERmq"

#: Failed password sign-ins one reviewer name may take from one address within ``SIGN_IN_WINDOW``;
#: the next from there are refused, right password or not, until the oldest of them is that old
#: (guessing a password then costs a window per few guesses, not a bcrypt check's quarter of a
#: second). Counted per address, so one guesser cannot lock the reviewer out from everywhere.
MAX_FAILED_SIGN_INS = 5
#: Failed sign-ins of one name from all addresses together within the window, past which the name
#: is refused from everywhere: what guessers at many (or spoofed) addresses may try.
MAX_FAILED_SIGN_INS_ANYWHERE = 20
SIGN_IN_WINDOW = timedelta(minutes=15)

#: How a reviewer was authenticated (recorded nowhere secret; shown in messages).
METHODS = ("password", "console", "trusted-header", "token", "test")


def client_address(peer: str | None, forwarded_for: Sequence[str], trusted_proxies: str | None) -> str | None:
    """The address a sign-in comes from, for counting failures per address. ``peer``: the
    connection's own; ``forwarded_for``: every X-Forwarded-For header value, in order;
    ``trusted_proxies``: AMEM_UI_TRUSTED_PROXIES, addresses or networks ("10.0.0.0/8, ::1").

    Behind a reverse proxy every connection is the proxy's, so every reviewer would share one
    address and one guesser's failures would lock the name out for all. The header is believed
    only when the connection comes from a trusted proxy, and then only up to the first address
    that is not one (the rightmost untrusted hop: what a client writes into the header itself is
    to the left of it, so it cannot choose its own address)."""
    if peer is None or not trusted_proxies:
        return peer
    trusted = [
        ipaddress.ip_network(part.strip(), strict=False)
        for part in trusted_proxies.split(",")
        if part.strip()
    ]

    def is_trusted(address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in trusted)

    if not is_trusted(peer):
        return peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not is_trusted(hop):
            return hop
    return hops[0] if hops else peer


def check_trusted_proxies(value: str) -> None:
    """InvalidInputError naming the part of AMEM_UI_TRUSTED_PROXIES that is no address or network."""
    for part in (p.strip() for p in value.split(",")):
        if part:
            try:
                ipaddress.ip_network(part, strict=False)
            except ValueError:
                raise InvalidInputError(
                    f"AMEM_UI_TRUSTED_PROXIES: {part!r} is no address or network (e.g. 10.0.0.5, 10.0.0.0/8)"
                ) from None


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
    """The failed password sign-ins of each reviewer name in the last ``window``, by the address
    they came from (the console's client address; None where there is none, as on a command line),
    kept by the process that checks passwords (the console's, held by its Memory; each CLI run has
    its own). A name is refused from an address after ``limit`` failures from there, and from
    everywhere after ``anywhere`` failures in all. Counted by the identity the name is compared by
    (``identity_key``: every variant of a name is one count, as every variant is one reviewer to the
    policy), whether or not a reviewer has it, so a refusal says nothing about who exists.
    Thread-safe: a console serves many sessions."""

    def __init__(
        self,
        limit: int = MAX_FAILED_SIGN_INS,
        window: timedelta = SIGN_IN_WINDOW,
        clock: Callable[[], datetime] = utcnow,
        anywhere: int = MAX_FAILED_SIGN_INS_ANYWHERE,
    ) -> None:
        self.limit = limit
        self.anywhere = anywhere
        self.window = window
        self.clock = clock
        self._failed: dict[str, dict[str | None, deque[datetime]]] = {}
        self._lock = threading.Lock()

    def refuse_if_locked(self, name: str, source: str | None = None) -> None:
        """SignInsLockedError while ``name`` has ``limit`` failures from ``source`` in the window,
        or ``anywhere`` failures in all."""
        with self._lock:
            sources = self._recent(name)
            here = sources.get(source, deque())
            everywhere = sorted(t for times in sources.values() for t in times)
            if len(here) >= self.limit:
                until, where = here[0] + self.window, " from this address" if source else ""
            elif len(everywhere) >= self.anywhere:
                until, where = everywhere[-self.anywhere] + self.window, ""
            else:
                return
        minutes = max(1, -(-int((until - self.clock()).total_seconds()) // 60))
        raise SignInsLockedError(
            f"too many failed sign-ins for {name}{where}: try again in {minutes} "
            f"minute{'s' if minutes > 1 else ''}"
        )

    def failed(self, name: str, source: str | None = None) -> None:
        with self._lock:
            self._recent(name).setdefault(source, deque()).append(self.clock())

    def succeeded(self, name: str, source: str | None = None) -> None:
        with self._lock:
            self._recent(name).pop(source, None)

    def _recent(self, name: str) -> dict[str | None, deque[datetime]]:
        sources = self._failed.setdefault(identity_key(name), {})
        for source, recent in list(sources.items()):
            while recent and recent[0] <= self.clock() - self.window:
                recent.popleft()
            if not recent:
                del sources[source]
        return sources


class Authentication:
    """Authenticates reviewers against one policy (the one in force for this store). ``failed``:
    where failed password sign-ins are counted (a Memory keeps one for its life)."""

    def __init__(self, policy: Policy, policy_fingerprint: str, failed: FailedSignIns | None = None) -> None:
        self.policy = policy
        self.policy_fingerprint = policy_fingerprint
        self.failed = failed if failed is not None else FailedSignIns()

    def with_password(
        self, identity: str, password: str, *, source: str | None = None
    ) -> AuthenticatedReviewer:
        """The reviewer ``identity`` if ``password`` matches their bcrypt hash; AuthenticationError
        (one message for a wrong name and a wrong password) otherwise, and SignInsLockedError after
        ``MAX_FAILED_SIGN_INS`` failures of that name from ``source`` (the client's address, where
        the interface knows it) within ``SIGN_IN_WINDOW``, or ``MAX_FAILED_SIGN_INS_ANYWHERE`` in all."""
        who = self.person(identity)
        self.failed.refuse_if_locked(who, source)
        entry = self.policy.reviewer(who)
        password_hash = entry.password_hash if entry is not None else None
        if entry is not None and not password_hash:
            check_password(password or "x", _DUMMY_HASH)
            raise AuthenticationError(
                f"{who} has no password_hash in {self.policy.source or 'the policy'}: make one with "
                "`amem reviewers hash-password` (or `amem reviewers set-password`)"
            )
        if not check_password(password, password_hash or _DUMMY_HASH) or entry is None:
            self.failed.failed(who, source)
            raise AuthenticationError("wrong reviewer name or password")
        self.failed.succeeded(who, source)
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
