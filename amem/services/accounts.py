"""Who may sign in to the approval console, and as whom.

The reviewers of the policy (policies.yaml and its reviewers file) are the console's accounts:
the same identities the governance service checks when a decision is made. Passwords exist only
as bcrypt hashes (``password_hash``); this module never stores, logs or returns a plain password.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import bcrypt

from amem.domain.identity import canonical_identity, split_kind
from amem.domain.models import Actor, ActorKind
from amem.errors import InvalidInputError
from amem.policy import Policy, is_bcrypt_hash

#: bcrypt's work factor for new hashes (2^12 rounds, about a quarter of a second here).
DEFAULT_ROUNDS = 12
#: bcrypt reads at most 72 bytes of a password; longer ones would be silently cut.
MAX_PASSWORD_BYTES = 72
MIN_PASSWORD_CHARS = 8


@dataclass(frozen=True)
class Account:
    """A reviewer as the console sees them: identity, display name and roles."""

    id: str
    name: str
    roles: tuple[str, ...]
    email: str | None = None
    password_hash: str | None = field(default=None, repr=False)
    decides: bool = False
    #: The scopes (accounts) they decide in, sorted; None: every scope.
    scopes: tuple[str, ...] | None = None

    @property
    def actor(self) -> Actor:
        return Actor(kind=ActorKind.PERSON, id=self.id)

    @property
    def read_only(self) -> bool:
        """True for accounts whose roles approve nothing (auditors): the console shows no decisions."""
        return not self.decides

    @property
    def can_sign_in_with_password(self) -> bool:
        """A malformed hash (a pasted password, in a version installed before hashes were checked)
        lets no one in."""
        return bool(self.password_hash) and is_bcrypt_hash(self.password_hash or "")

    @property
    def password_digest(self) -> str:
        """The digest a console sign-in is tied to (password_digest): a new password changes it."""
        return password_digest(self.password_hash)


def accounts(policy: Policy) -> dict[str, Account]:
    """Every reviewer of ``policy`` as an account, keyed by identity."""
    out: dict[str, Account] = {}
    for ident, reviewer in policy.reviewers.items():
        roles = tuple(reviewer.roles)
        decides = any(policy.roles[r].approves for r in roles if r in policy.roles)
        out[ident] = Account(
            id=ident,
            name=reviewer.name or ident,
            roles=roles,
            email=reviewer.email,
            password_hash=reviewer.password_hash,
            decides=decides,
            scopes=policy.scopes_of(ident),
        )
    return out


def account_for(policy: Policy, identity: str | None) -> Account | None:
    """The account of ``identity`` in its canonical form (amem.domain.identity: case, width and a
    ``person:`` prefix do not matter), or None; a name with invisible characters is no one."""
    if not identity or not identity.strip():
        return None
    try:
        wanted = canonical_identity(identity, what="reviewer")
    except InvalidInputError:
        return None
    if split_kind(identity.strip())[0] not in (None, ActorKind.PERSON.value):
        return None
    return accounts(policy).get(wanted)


def password_digest(password_hash: str | None) -> str:
    """A digest of a bcrypt ``password_hash`` (sha256, hex): what a console session and its
    re-sign-in cookie carry to end when the password changes. The cookie is readable by whoever
    holds it, so it carries this and never the hash, from which a password could be guessed offline."""
    return hashlib.sha256((password_hash or "").encode("utf-8")).hexdigest()


def hash_password(password: str, *, rounds: int = DEFAULT_ROUNDS) -> str:
    """A bcrypt hash of ``password`` for a reviewer's ``password_hash``."""
    if len(password) < MIN_PASSWORD_CHARS:
        raise InvalidInputError(f"a password needs at least {MIN_PASSWORD_CHARS} characters")
    encoded = password.encode("utf-8")
    if len(encoded) > MAX_PASSWORD_BYTES:
        raise InvalidInputError(f"a password may have at most {MAX_PASSWORD_BYTES} bytes (bcrypt's limit)")
    return bcrypt.hashpw(encoded, bcrypt.gensalt(rounds=rounds)).decode("ascii")


def check_password(password: str, password_hash: str | None) -> bool:
    """True when ``password`` matches ``password_hash``; False for no hash or a malformed one."""
    if not password_hash or not password:
        return False
    try:
        return bcrypt.checkpw(password.encode("utf-8"), password_hash.encode("ascii"))
    except ValueError:
        return False


def authenticator_credentials(policy: Policy) -> dict[str, Any]:
    """Credentials in streamlit-authenticator's shape: reviewers that have a bcrypt hash only.

    Reviewers without a hash cannot sign in with a password (they may still come through a
    trusted proxy header). A malformed hash is left out rather than treated as a password.
    """
    users: dict[str, dict[str, Any]] = {}
    for account in accounts(policy).values():
        if account.password_hash and is_bcrypt_hash(account.password_hash):
            users[account.id.casefold()] = {
                "name": account.name,
                "email": account.email,
                "password": account.password_hash,
                "roles": list(account.roles),
            }
    return {"usernames": users}


def identity_from_headers(policy: Policy, headers: Mapping[str, str], header: str) -> Account | None:
    """The reviewer a trusted reverse proxy names in ``header`` (None when absent or unknown).

    Only use this behind a proxy that sets the header itself and strips it from clients' requests.
    """
    value = None
    wanted = header.casefold()
    for key, val in headers.items():
        if key.casefold() == wanted:
            value = val
            break
    if value is None:
        return None
    return account_for(policy, value.strip())
