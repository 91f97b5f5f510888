"""The policy lives in the ledger: which policy is in force, and installing the next one.

The newest installed version is the policy in force for every process on that ledger, whatever file
it was started with: a process whose file differs says so and decides nothing (reads still work), so
``--policy`` cannot widen anyone's rights. A process given no policy at all (the packaged default
stood in) simply works under the installed one: a store made from one directory's policies.yaml is
usable from any other.

A new ledger is never without one: the process that opens an empty ledger (no raw log, proposal,
change, event or policy yet: the one that creates it, or the first after `amem db upgrade` made an
empty schema) installs its own policy as version 1, by ``system:bootstrap``, in one write
transaction under the writers' lock, so processes opening a new ledger together agree on one
version 1. A ledger that holds data and no installed policy (made before amem did this) decides
nothing until `amem policy install`.

Only a reviewer holding one of the ``policy_admins`` roles of the policy in force, and limited to no
scopes, may install the next one (a reviewer limited to some accounts could otherwise lift their own
limit). A policy is refused when none of its admins could sign in to install the next (no valid bcrypt
password_hash), and when it drops a team attribute, or changes its type, while notes or pending
proposals hold values of it. A first install bootstraps (the installer must be an admin of the
policy installed, signed in under it) in two cases only: on a ledger with data and no installed
policy, and over an *unclaimed* version 1, one that gives no policy admin a usable password (the
packaged default policy),
which no one could sign in under to replace otherwise; that claim is open only to a policy admin
version 1 itself names, or, when it names none (a store made with an empty policies.yaml), to an
admin of the policy installed, as on a ledger with no installed policy: otherwise nothing could
ever be decided there. ``record_install`` is the one place that writes an installed version.

A check amem added later (a team attribute named like a note's own field, a rule condition given an
empty list: ``Policy.flaws``) is made here, where a policy is installed, never where one is read: a
new policy may not introduce such a setting, while one the installed version holds keeps loading,
from the ledger and from a file that matches it, with a warning saying what to do about it. A store
made before the check is never locked out of its own policy, nor refused a rename of its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from amem.domain.models import PolicyVersion, utcnow
from amem.errors import InvalidInputError, NotFoundError, PermissionDeniedError, PolicyError
from amem.ledger import policy_queries
from amem.ledger.store import Ledger, LedgerTx
from amem.policy import (
    DEFAULT_POLICY_PATH,
    Flaw,
    Policy,
    canonical_text,
    fingerprint,
    is_bcrypt_hash,
    parse_policy,
)
from amem.services.authentication import AuthenticatedReviewer, is_authenticated

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PolicyInForce:
    """The policy a process works under, and how it relates to the file it was started with."""

    policy: Policy
    fingerprint: str
    installed: PolicyVersion | None
    file_policy: Policy
    #: Why this process may not decide (its file is not the installed policy); None when it may.
    mismatch: str | None = None
    #: What the policy in force holds that amem refuses in a new policy (kept, since installed
    #: before), and what the file would introduce that an install refuses: each says what to do.
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.installed is None:
            return (
                f"the policy file {self.file_policy.source or '(given in code)'} (not installed in the "
                "ledger, which was made before amem installed one: it decides nothing until a policy "
                "admin runs `amem policy install FILE`)"
            )
        v = self.installed
        unclaimed = ""
        if is_unclaimed(v):
            claimants = claimants_of(v)
            unclaimed = (
                f"; no policy admin of it has a password, so the first `amem policy install` by one of "
                f"its admins ({', '.join(claimants)}) claims the ledger"
                if claimants
                else "; it names no policy admin, so the first `amem policy install` by an admin of the "
                "policy installed claims the ledger"
            )
        return (
            f"installed version {v.version} (sha256 {v.sha256[:12]}, by {v.installed_by} at "
            f"{v.installed_at.isoformat(timespec='seconds')}{unclaimed})"
        )


#: Who installs the creating process's policy as version 1 of a new ledger.
BOOTSTRAP_ACTOR = "system:bootstrap"


def policy_of(version: PolicyVersion) -> Policy:
    return parse_policy(version.text, source=f"installed policy version {version.version}", installed=True)


def signing_admins(policy: Policy) -> list[str]:
    """The policy admins of ``policy`` who can sign in to install the next one: a valid bcrypt
    password_hash (a pasted password or a cut hash lets no one in)."""
    return sorted(
        who
        for who, entry in policy.reviewers.items()
        if policy.may_install(who) and entry.password_hash and is_bcrypt_hash(entry.password_hash)
    )


def is_unclaimed(version: PolicyVersion) -> bool:
    """Whether ``version`` is a bootstrap version no one can sign in under to replace: installed by
    ``system:bootstrap`` and giving no policy admin a usable password. The next install claims it."""
    if version.installed_by != BOOTSTRAP_ACTOR:
        return False
    return not signing_admins(policy_of(version))


def claimants_of(version: PolicyVersion) -> list[str]:
    """Who may claim ``version`` while it is unclaimed: the policy admins it names (with no scope
    limit), so a file of one's own naming oneself admin does not claim a ledger someone else made.
    Empty when it names none (a store made with an empty policies.yaml): then, as on a ledger with
    no installed policy, an admin of the policy installed claims it, or no one ever could."""
    policy = policy_of(version)
    return sorted(who for who in policy.reviewers if policy.may_install(who))


def _unchosen(file_policy: Policy) -> bool:
    """Whether ``file_policy`` is the packaged default, read because nothing else was given."""
    source = file_policy.source
    return source is not None and Path(source).resolve() == DEFAULT_POLICY_PATH.resolve()


def bootstrap(ledger: Ledger, file_policy: Policy) -> PolicyVersion | None:
    """Install ``file_policy`` as version 1 when the ledger is empty; returns the version installed
    now, or None when the ledger already has a policy or holds data."""
    with ledger.write() as tx:
        if tx.installed_policy() is not None or not tx.is_empty():
            return None
        _refuse_new_flaws(tx, None, file_policy)  # a new store's policy is a new policy
        return record_install(tx, file_policy, installed_by=BOOTSTRAP_ACTOR, now=utcnow(), previous=None)


def resolve(ledger: Ledger, file_policy: Policy, *, bootstrap_empty: bool = False) -> PolicyInForce:
    """The policy in force on ``ledger`` for a process started with ``file_policy``, its warnings
    logged (and kept on it for an interface to show).

    ``bootstrap_empty``: on an empty ledger, install ``file_policy`` as version 1 first."""
    in_force = _resolve(ledger, file_policy, bootstrap_empty=bootstrap_empty)
    for warning in in_force.warnings:
        log.warning("%s", warning)
    return in_force


def _warnings(in_force: Policy, installed: PolicyVersion | None, file_policy: Policy) -> tuple[str, ...]:
    """What the policy in force keeps that amem refuses in a new policy, and what the file (when it
    is not the policy in force) would introduce, which the next install refuses."""
    if installed is None:
        return ()  # none installed: the first install says what it refuses
    kept = in_force.flaws()
    said = [flaw.warning() for flaw in kept]
    if in_force is not file_policy:
        said += [
            f"{flaw.refusal()} (`amem policy install` refuses it)" for flaw in _new_flaws(kept, file_policy)
        ]
    return tuple(said)


def _resolve(ledger: Ledger, file_policy: Policy, *, bootstrap_empty: bool) -> PolicyInForce:
    with ledger.read() as tx:
        installed = tx.installed_policy()
        empty = installed is None and tx.is_empty()
    if installed is None and empty and bootstrap_empty:
        bootstrap(ledger, file_policy)
        with ledger.read() as tx:
            installed = tx.installed_policy()
    file_fp = fingerprint(file_policy)
    if installed is not None and file_fp != installed.sha256 and _unchosen(file_policy):
        # No policy was chosen for this process (the packaged default stood in: no --policy, no
        # AMEM_POLICY, no ./policies.yaml, none in the store): the ledger's policy is the one to
        # work under, as it would be with `amem policy export > policies.yaml`. A file someone chose
        # that differs from it still decides nothing.
        ledgers = policy_of(installed)
        said = _warnings(ledgers, installed, ledgers)
        return PolicyInForce(ledgers, installed.sha256, installed, file_policy, None, said)
    if installed is None:
        mismatch = None
        if not empty:
            mismatch = (
                "no policy is installed in this ledger (it was made before amem installed the creating "
                "process's policy), so this process reads but decides nothing: a policy admin installs "
                "one with `amem policy install FILE --reviewer NAME` (the first install bootstraps)"
            )
        return PolicyInForce(file_policy, file_fp, None, file_policy, mismatch)
    mismatch = None
    if file_fp != installed.sha256:
        claim = ""
        if is_unclaimed(installed):
            claimants = claimants_of(installed)
            claim = (
                " (no policy admin of the installed version has a password, so one of them "
                f"({', '.join(claimants)}) claims the ledger with the first install)"
                if claimants
                else " (the installed version names no policy admin, so an admin of FILE claims the "
                "ledger with the first install)"
            )
        mismatch = (
            f"the policy {file_policy.source or '(given in code)'} is not the one installed in the ledger "
            f"(version {installed.version}, sha256 {installed.sha256[:12]}, by {installed.installed_by}): "
            "this process reads but decides nothing. Install it (`amem policy install FILE --reviewer "
            f"NAME`){claim} or start with the installed one (`amem policy export > policies.yaml`)"
        )
    # The file, when it is the installed policy (same canonical text), keeps its source and layout.
    policy = file_policy if mismatch is None else policy_of(installed)
    said = _warnings(policy, installed, file_policy)
    return PolicyInForce(policy, installed.sha256, installed, file_policy, mismatch, said)


def record_install(
    tx: LedgerTx, policy: Policy, *, installed_by: str, now: datetime, previous: PolicyVersion | None
) -> PolicyVersion:
    """Write the next installed version (the one place that does: hook chain events here)."""
    text = canonical_text(policy)
    version = PolicyVersion(
        version=(previous.version + 1) if previous else 1,
        sha256=fingerprint(policy),
        text=text,
        source=policy.source,
        installed_by=installed_by,
        installed_at=now,
    )
    tx.insert_policy_version(version)
    return version


def install(ledger: Ledger, policy: Policy, by: AuthenticatedReviewer) -> tuple[PolicyVersion, bool]:
    """Install ``policy`` as the next version, by a policy admin of the policy in force (of ``policy``
    itself on a first install: no version installed, or an unclaimed bootstrap one, which only a
    policy admin it names may claim). Returns (the version in force, whether it is new)."""
    if not is_authenticated(by):
        raise PermissionDeniedError("installing a policy needs an authenticated reviewer, not a bare name")
    _refuse_locking(policy)
    with ledger.write() as tx:
        current = tx.installed_policy()
        governing = current if current is not None and not is_unclaimed(current) else None
        authority = policy_of(governing) if governing is not None else policy
        authority_fp = governing.sha256 if governing is not None else fingerprint(policy)
        if by.policy_fingerprint != authority_fp:
            which = f"installed version {governing.version}" if governing else "the policy being installed"
            raise PermissionDeniedError(
                f"{by.id} signed in under another policy; installing needs a sign-in under {which}"
            )
        if not authority.may_install(by.id):
            roles = ", ".join(authority.roles_of(by.id)) or "none"
            scopes = authority.scopes_of(by.id)
            if scopes is not None and set(authority.roles_of(by.id)) & set(authority.admin_roles()):
                raise PermissionDeniedError(
                    f"{by.id} (roles: {roles}) is limited to the accounts {', '.join(scopes) or '(none)'} "
                    "and may not install a policy: only a policy admin with no scope limit may"
                )
            raise PermissionDeniedError(
                f"{by.id} (roles: {roles}) may not install a policy; needs one of: "
                f"{', '.join(authority.admin_roles()) or 'no role'} (policy_admins)"
            )
        claimants = claimants_of(current) if current is not None and governing is None else []
        if current is not None and claimants and by.id not in claimants:
            # claiming an unclaimed version 1: only one of ITS policy admins, by name, may (a file of
            # one's own naming oneself admin does not claim a ledger someone else created)
            raise PermissionDeniedError(
                f"{by.id} is no policy admin of installed version {current.version}, which no admin has "
                f"claimed yet; one of {', '.join(claimants)} claims it (set their password, then "
                "`amem policy install FILE --reviewer NAME`)"
            )
        if current is not None and current.sha256 == fingerprint(policy):
            return current, False
        _refuse_new_flaws(tx, current, policy)
        if current is not None:
            _refuse_orphaned_values(tx, policy_of(current), policy)
        return record_install(tx, policy, installed_by=by.id, now=utcnow(), previous=current), True


def _new_flaws(kept: list[Flaw], policy: Policy) -> list[Flaw]:
    """``policy``'s flaws that none of ``kept`` (the installed version's) keeps."""
    keys = {flaw.kept_by for flaw in kept}
    return [flaw for flaw in policy.flaws() if flaw.kept_by not in keys]


def _refuse_new_flaws(tx: LedgerTx, current: PolicyVersion | None, policy: Policy) -> None:
    """Refuse a setting amem refuses since (``Policy.flaws``) unless the installed version holds it:
    a store keeps what it was made with, a new policy introduces none. On a ledger made before amem
    installed policies, a team attribute the notes hold values of is kept too (the first install
    may not orphan them, so it may not refuse their name)."""
    new = _new_flaws(policy_of(current).flaws() if current is not None else [], policy)
    if current is None and new:
        named = [flaw.kept_by[1] for flaw in new if flaw.kept_by[0] == "name"]
        held = policy_queries.values_held(tx, named) if not tx.is_empty() else {}
        new = [flaw for flaw in new if not (flaw.kept_by[0] == "name" and flaw.kept_by[1] in held)]
    if new:
        more = f" (and {_count(len(new) - 1, 'more problem')})" if len(new) > 1 else ""
        raise PolicyError(f"{new[0].refusal()}{more}")


def _refuse_locking(policy: Policy) -> None:
    """Refuse a policy under which no one could install the next: no policy admin (with no scope
    limit), or none with a password to sign in with (`amem policy install` signs in by password)."""
    where = policy.source or "the policy"
    admins = sorted(who for who in policy.reviewers if policy.may_install(who))
    if not admins:
        raise InvalidInputError(
            f"{where}: no reviewer holds a policy_admins role "
            f"({', '.join(policy.admin_roles()) or 'none'}) with no scope limit, so no one could install "
            "the next policy"
        )
    if not signing_admins(policy):
        raise InvalidInputError(
            f"{where}: no policy admin ({', '.join(admins)}) has a valid password_hash, so no one could "
            "sign in to install the next policy: set one first (`amem reviewers set-password NAME`)"
        )


def _refuse_orphaned_values(tx: LedgerTx, before: Policy, after: Policy) -> None:
    """Refuse dropping a team attribute, or changing its type, while the ledger holds values of it:
    values of the old type would make the review queue and every change to it fail."""
    changed: dict[str, str] = {}
    for name, attr in before.declared_attributes().items():
        now = after.declared_attributes().get(name)
        if now is None:
            changed[name] = "drops it"
        elif now.type != attr.type:
            changed[name] = f"changes its type from {attr.type} to {now.type}"
    held = policy_queries.values_held(tx, list(changed))
    if held:
        name = sorted(held)[0]
        count = held[name]
        more = sorted(held)[1:]
        others = f" (as do {', '.join(more)}, which it drops or retypes too)" if more else ""
        raise InvalidInputError(
            f"{after.source or 'the policy'}: team attribute {name!r}: the policy {changed[name]}, but "
            f"{_count(count.notes, 'note')} and {_count(count.pending, 'pending proposal')} hold values "
            f"of it{others}: keep "
            "it as it is, or declare a new attribute under another name"
        )


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def chosen_version(
    versions: list[PolicyVersion], *, number: int | None = None, moment: datetime | None = None
) -> PolicyVersion:
    """The installed version an auditor asks for: ``number``, or the one in force at ``moment`` (the
    newest installed by then), else the newest. ``versions`` in installation order."""
    if not versions:
        raise NotFoundError("no policy is installed in this ledger (made before amem installed one)")
    if number is not None:
        found = next((v for v in versions if v.version == number), None)
        if found is None:
            raise NotFoundError(
                f"no policy version {number}: versions 1 to {versions[-1].version} are installed"
            )
        return found
    if moment is not None:
        then = [v for v in versions if v.installed_at <= moment]
        if not then:
            first = versions[0]
            raise NotFoundError(
                f"no policy was installed by {moment.isoformat()}: the first, version {first.version}, "
                f"was installed at {first.installed_at.isoformat()}"
            )
        return then[-1]
    return versions[-1]
