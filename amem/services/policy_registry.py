"""The policy lives in the ledger: which policy is in force, and installing the next one.

Once a policy has been installed (`amem policy install FILE`), the newest installed version is the
policy in force for every process on that ledger, whatever file it was started with: a process whose
file differs says so and decides nothing (reads still work), so ``--policy`` cannot widen anyone's
rights. Until the first install, the policy file is in force, as before.

Only a reviewer holding one of the ``policy_admins`` roles of the policy in force may install the
next one; the first install bootstraps (the installer must be an admin of the policy installed).
``record_install`` is the one place that writes an installed version.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from amem.domain.models import PolicyVersion, utcnow
from amem.errors import InvalidInputError, PermissionDeniedError
from amem.ledger.store import Ledger, LedgerTx
from amem.policy import Policy, canonical_text, fingerprint, parse_policy
from amem.services.authentication import AuthenticatedReviewer, is_authenticated


@dataclass(frozen=True)
class PolicyInForce:
    """The policy a process works under, and how it relates to the file it was started with."""

    policy: Policy
    fingerprint: str
    installed: PolicyVersion | None
    file_policy: Policy
    #: Why this process may not decide (its file is not the installed policy); None when it may.
    mismatch: str | None = None

    def describe(self) -> str:
        if self.installed is None:
            return (
                f"the policy file {self.file_policy.source or '(given in code)'} (not installed in the "
                "ledger: run `amem policy install FILE` to make it the ledger's policy)"
            )
        v = self.installed
        return (
            f"installed version {v.version} (sha256 {v.sha256[:12]}, by {v.installed_by} at "
            f"{v.installed_at.isoformat(timespec='seconds')})"
        )


def policy_of(version: PolicyVersion) -> Policy:
    return parse_policy(version.text, source=f"installed policy version {version.version}")


def resolve(ledger: Ledger, file_policy: Policy) -> PolicyInForce:
    """The policy in force on ``ledger`` for a process started with ``file_policy``."""
    with ledger.read() as tx:
        installed = tx.installed_policy()
    file_fp = fingerprint(file_policy)
    if installed is None:
        return PolicyInForce(file_policy, file_fp, None, file_policy)
    mismatch = None
    if file_fp != installed.sha256:
        mismatch = (
            f"the policy {file_policy.source or '(given in code)'} is not the one installed in the ledger "
            f"(version {installed.version}, sha256 {installed.sha256[:12]}, by {installed.installed_by}): "
            "this process reads but decides nothing. Install it (`amem policy install FILE`) or start "
            "with the installed one (`amem policy export > policies.yaml`)"
        )
    return PolicyInForce(policy_of(installed), installed.sha256, installed, file_policy, mismatch)


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
    itself on the first install). Returns (the version in force, whether it is new)."""
    if not is_authenticated(by):
        raise PermissionDeniedError("installing a policy needs an authenticated reviewer, not a bare name")
    if not any(policy.may_install(who) for who in policy.reviewers):
        raise InvalidInputError(
            f"{policy.source or 'the policy'}: no reviewer holds a policy_admins role "
            f"({', '.join(policy.admin_roles()) or 'none'}), so no one could install the next policy"
        )
    with ledger.write() as tx:
        current = tx.installed_policy()
        authority = policy_of(current) if current is not None else policy
        authority_fp = current.sha256 if current is not None else fingerprint(policy)
        if by.policy_fingerprint != authority_fp:
            which = f"installed version {current.version}" if current else "the policy being installed"
            raise PermissionDeniedError(
                f"{by.id} signed in under another policy; installing needs a sign-in under {which}"
            )
        if not authority.may_install(by.id):
            roles = ", ".join(authority.roles_of(by.id)) or "none"
            raise PermissionDeniedError(
                f"{by.id} (roles: {roles}) may not install a policy; needs one of: "
                f"{', '.join(authority.admin_roles()) or 'no role'} (policy_admins)"
            )
        if current is not None and current.sha256 == fingerprint(policy):
            return current, False
        return record_install(tx, policy, installed_by=by.id, now=utcnow(), previous=current), True
