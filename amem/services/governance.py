"""Governance: the one place where note values change.

Every value reaches a note through a proposal that the policy routed; applied values append a
hash-chained change. Interfaces (CLI, console, agents) call these methods and nothing else, so
policy cannot be bypassed by a new feature.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from amem.domain.hashing import ORIGINAL_VALUE_DIGESTS, change_hash, value_digest
from amem.domain.identity import same_identity
from amem.domain.models import (
    CREATE_RULE,
    ERASURE_RULE,
    Actor,
    ActorKind,
    Change,
    ChangeKind,
    LlmCall,
    Note,
    PolicyVersion,
    Proposal,
    ProposalStatus,
    Proposer,
    RawLog,
    RawLogState,
    as_utc,
    new_id,
    utcnow,
)
from amem.domain.progress import Progress, no_progress
from amem.domain.replay import replay
from amem.domain.text import check_text, is_visible, text_problem
from amem.domain.values import current_value, normalize, parse_datetime, with_value
from amem.errors import (
    FrozenAttributeError,
    InvalidInputError,
    NoteDeletedError,
    NotFoundError,
    PermissionDeniedError,
    PolicyMismatchError,
    ProposalStateError,
)
from amem.ledger import erasure_queries
from amem.ledger.audit_queries import POLICY_REFUSAL
from amem.ledger.store import ChangeFilter, Ledger, LedgerTx, ProposalFilter
from amem.policy import Mode, Policy, fingerprint
from amem.services.authentication import AuthenticatedReviewer, is_authenticated
from amem.services.integrity import VerifyResult, verify_ledger

#: verify's steps, as its progress reports them; rows checked between two reports.
PROGRESS_EVERY = 1000


@dataclass(frozen=True)
class Draft:
    """A proposal before routing: what someone wants to change, and why."""

    note_id: str
    attribute: str
    new_value: Any
    reason: str
    proposer: Proposer
    raw_log_ids: Sequence[str] = field(default_factory=tuple)
    #: The exact span of the raw log behind the value, shown highlighted to the reviewer.
    evidence: str | None = None


class HistoryEvent(BaseModel):
    """One line of a note's history, oldest first."""

    at: datetime
    event: str
    attribute: str
    old_value: Any = None
    new_value: Any = None
    actor: str
    reason: str | None = None
    comment: str | None = None
    raw_log_ids: list[str] = []
    proposal_id: str | None = None
    change_seq: int | None = None
    rule: str | None = None
    model: str | None = None
    prompt_version: str | None = None
    #: The recorded model call behind a proposed value (``Memory.llm_call``): its answer, its tokens.
    llm_call_id: str | None = None


class SkippedDecision(BaseModel):
    """A proposal a decision of many left undecided, and why (the policy refused, say).
    ``note_deleted``: its note was deleted since (``NoteDeletedError``): it stays pending."""

    proposal_id: str
    reason: str
    note_deleted: bool = False


class DecisionReport(BaseModel):
    """What a decision on many proposals did: each one decided, each one skipped and why."""

    decided: list[Proposal] = []
    skipped: list[SkippedDecision] = []

    def count(self, status: ProposalStatus) -> int:
        return sum(1 for p in self.decided if p.status == status)

    def refused_by_policy(self) -> list[Proposal]:
        """The approvals the policy refused (frozen or no longer declared since): recorded as
        rejected with the reviewer who asked, the comment saying the policy refused it."""
        return [p for p in self.decided if _refused_by_policy(p)]

    def summary(self) -> str:
        """``"3 approved, 1 conflict, 1 refused by the policy, 2 skipped"``: what a reviewer reads
        after a bulk decision."""
        refused = len(self.refused_by_policy())
        parts = [
            f"{n} {s.value}"
            for s in (ProposalStatus.APPROVED, ProposalStatus.REJECTED, ProposalStatus.CONFLICT)
            if (n := self.count(s) - (refused if s == ProposalStatus.REJECTED else 0))
        ]
        if refused:
            parts.append(f"{refused} refused by the policy (frozen since), not approved")
        if self.skipped:
            deleted = sum(1 for s in self.skipped if s.note_deleted)
            parts.append(
                f"{len(self.skipped)} skipped" + (f" ({deleted} on a note deleted since)" if deleted else "")
            )
        return ", ".join(parts) or "nothing decided"


class NoteDeletion(BaseModel):
    """How a note came to be deleted: the last applied change that set ``deleted`` (``change_seq``,
    ``at``, ``by``; None where no such change is found). ``erased``: an erasure's tombstone, which
    cannot be reverted; a `delete` can (``amem revert CHANGE``)."""

    note_id: str
    at: datetime | None = None
    by: str | None = None
    change_seq: int | None = None
    erased: bool = False

    def words(self) -> str:
        """``note n_1 was deleted on 2026-03-01 09:30 UTC by person:alice (change 12)``."""
        when = f" on {as_utc(self.at):%Y-%m-%d %H:%M} UTC" if self.at is not None else ""
        who = f" by {self.by}" if self.by else ""
        which = f" (change {self.change_seq})" if self.change_seq is not None else ""
        how = "erased on a data subject's request" if self.erased else "deleted"
        return f"note {self.note_id} was {how}{when}{who}{which}"

    def advice(self) -> str:
        """What a reviewer can do with an edit of the deleted note."""
        if self.erased:
            return "reject it (an erased note cannot be restored)"
        restore = f"`amem revert {self.change_seq}`" if self.change_seq is not None else "`amem revert`"
        return (
            f"reject it, or restore the note first ({restore}, or Revert in the console's note "
            "explorer) and approve it then"
        )

    def refusal(self) -> str:
        return f"{self.words()}; this edit no longer applies: {self.advice()}"


def note_deletions(tx: LedgerTx, notes: Sequence[Note]) -> dict[str, NoteDeletion]:
    """For each deleted note of ``notes``, how it was deleted (``NoteDeletion``), by note id: one
    query a deleted note (its last ``deleted`` change), none for the others."""
    found: dict[str, NoteDeletion] = {}
    for note in notes:
        if not note.deleted:
            continue
        last = tx.list_changes(ChangeFilter(note_id=note.id, attribute="deleted"), limit=1, newest_first=True)
        change = last[0] if last and last[0].new_value is True else None
        if change is None:  # no change set it (not written by amem): the note's own last write
            found[note.id] = NoteDeletion(note_id=note.id, at=note.updated_at)
            continue
        proposal = tx.get_proposal(change.proposal_id) if change.proposal_id else None
        found[note.id] = NoteDeletion(
            note_id=note.id,
            at=change.applied_at,
            by=str(change.actor),
            change_seq=change.seq,
            erased=proposal is not None and proposal.rule == ERASURE_RULE,
        )
    return found


def edits_deleted(proposal: Proposal, note: Note) -> bool:
    """Whether approving ``proposal`` would change a value of a deleted note (anything but bringing
    it back, or deleting it again): nobody reads that value, so approving it is refused."""
    return note.deleted and proposal.attribute != "deleted"


def _refused_by_policy(proposal: Proposal) -> bool:
    """A rejection the policy made when a reviewer asked to approve (``POLICY_REFUSAL`` comment)."""
    comment = proposal.review_comment or ""
    return proposal.status == ProposalStatus.REJECTED and comment.startswith(POLICY_REFUSAL)


def _decided_by(proposal: Proposal) -> str:
    """Who a note's history says decided: the policy for its refusals (the comment names who asked)."""
    if proposal.reviewer and not _refused_by_policy(proposal):
        return f"person:{proposal.reviewer}"
    return "policy"


class PolicyFreeze(BaseModel):
    """Why the policy in force refuses to approve a held value: its attribute is frozen there (for
    that note and proposer: ``rule``), or no longer declared (``undeclared``). ``version`` and
    ``sha256``: the installed policy version in force (None where none is installed); ``since``: when
    the first version of the unbroken run of installed versions that refuse it was installed."""

    rule: str
    undeclared: bool = False
    version: int | None = None
    sha256: str | None = None
    since: datetime | None = None

    def words(self) -> str:
        """``frozen by policy v2 since 2026-12-07 22:57 UTC (attributes.next_step.mode)``."""
        what = "no longer declared" if self.undeclared else "frozen"
        by = f"policy v{self.version}" if self.version is not None else "the policy in force"
        when = f" since {as_utc(self.since):%Y-%m-%d %H:%M} UTC" if self.since is not None else ""
        return f"{what} by {by}{when} ({self.rule})"

    def record(self, attribute: str) -> str:
        """The policy's rejection, as recorded (``POLICY_REFUSAL`` first, for the statistics)."""
        what = "no longer declared" if self.undeclared else "frozen"
        by = f"policy v{self.version}" if self.version is not None else "the policy in force"
        sha = f"sha256 {self.sha256[:12]}, " if self.sha256 else ""
        return f"refused by policy: {attribute} is {what} by {by} ({sha}{self.rule})"


def refusal_of(policy: Policy, proposal: Proposal, note: Note) -> PolicyFreeze | None:
    """The policy's refusal of approving ``proposal`` (on ``note``), version not filled; None when it
    may be approved as far as the policy's modes go."""
    if not policy.knows(proposal.attribute):
        return PolicyFreeze(rule="not among its attributes", undeclared=True)
    routing = policy.route(proposal.attribute, note.tags, proposal.proposer.kind, category=note.category)
    return PolicyFreeze(rule=routing.rule) if routing.mode == Mode.FROZEN else None


def policy_freezes(
    tx: LedgerTx, policy: Policy, pairs: Sequence[tuple[Proposal, Note]]
) -> dict[str, PolicyFreeze]:
    """For each proposal of ``pairs`` the policy in force refuses to approve, why (``PolicyFreeze``),
    by proposal id, with the installed version and since when its versions refuse it. The installed
    versions are read only when one is refused (a few rows), and each older one parsed once."""
    from amem.services.policy_registry import policy_of

    refused = {p.id: (f, p, n) for p, n in pairs if (f := refusal_of(policy, p, n)) is not None}
    if not refused:
        return {}
    versions = tx.policy_versions()
    parsed: dict[int, Policy] = {}
    out: dict[str, PolicyFreeze] = {}
    for pid, (freeze, p, note) in refused.items():
        if not versions:
            out[pid] = freeze
            continue
        head = versions[-1]
        since = head.installed_at
        for v in reversed(versions[:-1]):
            try:
                older = parsed[v.version] = parsed.get(v.version) or policy_of(v)
            except Exception:  # an installed text this version cannot read: the run stops here
                break
            if refusal_of(older, p, note) is None:
                break
            since = v.installed_at
        out[pid] = freeze.model_copy(update={"version": head.version, "sha256": head.sha256, "since": since})
    return out


class Correction(BaseModel):
    """A reviewer's correction: the proposal it rejected, and the one carrying their value (applied
    when they could approve it themselves, else waiting for another reviewer)."""

    corrected: Proposal
    correction: Proposal


#: Attributes whose proposals cannot be corrected, and why: a value a reviewer does not type.
UNCORRECTABLE: dict[str, str] = {
    "deleted": "deletes a note",
    "links": "links notes the model found",
    "content": "would change what was said",
}


class Governance:
    def __init__(
        self,
        ledger: Ledger,
        policy: Policy,
        *,
        installed: PolicyVersion | None = None,
        mismatch: str | None = None,
    ) -> None:
        """``policy`` is the policy in force: ``installed``'s when one is installed in the ledger.
        ``mismatch`` (amem.services.policy_registry) says why this process may decide nothing."""
        self.ledger = ledger
        self.policy = policy
        self.installed_sha256 = installed.sha256 if installed else None
        self.policy_fingerprint = self.installed_sha256 or fingerprint(policy)
        self.mismatch = mismatch

    def _check_policy_in_force(self, tx: LedgerTx) -> None:
        """Decisions are made only under the ledger's policy, as it is at this moment."""
        if self.mismatch:
            raise PolicyMismatchError(self.mismatch)
        if tx.installed_policy_sha256() == self.installed_sha256:
            return
        head = tx.installed_policy()
        if (head.sha256 if head else None) != self.installed_sha256:
            raise PolicyMismatchError(
                f"the ledger's policy changed since this process started (now installed version "
                f"{head.version if head else '?'}): start it again to decide under the new one"
            )

    def followed_policy(self) -> Policy:
        """The newest installed policy, followed now: a reviewer's request to a process that may not
        write for hours (a read-only API server) is answered under the policy in force, not the one
        it opened with. One read of the installed version; the policy's text only when it changed."""
        with self.ledger.read() as tx:
            self._follow_installed_policy(tx)
        return self.policy

    def _follow_installed_policy(self, tx: LedgerTx) -> None:
        """Route under the newest installed policy, even in a long-running process (an agent's)."""
        if tx.installed_policy_sha256() == self.installed_sha256:
            return  # unchanged: the policy's text is read only when another version was installed
        head = tx.installed_policy()
        if head is not None and head.sha256 != self.installed_sha256:
            from amem.services.policy_registry import policy_of

            self.policy = policy_of(head)
            self.installed_sha256 = self.policy_fingerprint = head.sha256
            self.mismatch = (
                f"the ledger's policy changed since this process started (now installed version "
                f"{head.version}): start it again to decide under the new one"
            )

    # -- notes come into being -----------------------------------------------------------------

    def create_note(
        self,
        tx: LedgerTx,
        *,
        scope: str,
        content: str,
        raw_logs: Sequence[RawLog],
        actor: Actor,
        note_id: str | None = None,
    ) -> Note:
        """A new note with its content; recorded as an auto-applied proposal and a create change."""
        self._follow_installed_policy(tx)
        now = utcnow()
        note = Note(
            id=note_id or new_id("n"),
            scope=scope,
            content=content,
            raw_log_ids=[r.id for r in raw_logs],
            created_at=now,
            updated_at=now,
            version=1,
        )
        tx.insert_note(note)
        with tx.batched():  # its proposal and change: one INSERT each
            proposal = Proposal(
                id=new_id("p"),
                note_id=note.id,
                scope=scope,
                attribute="content",
                old_value=None,
                new_value=content,
                base_version=0,
                reason="note created from raw log",
                proposer=Proposer.of(actor),
                raw_log_ids=note.raw_log_ids,
                rule=CREATE_RULE,
                status=ProposalStatus.AUTO_APPLIED,
                created_at=now,
                policy_sha256=self.policy_fingerprint,
            )
            tx.insert_proposals([proposal])
            self._append(
                tx, note, proposal, old=None, new=content, actor=actor, kind=ChangeKind.CREATE, now=now
            )
        return note

    # -- proposing -----------------------------------------------------------------------------

    def propose(
        self,
        note_id: str,
        attribute: str,
        new_value: Any,
        *,
        reason: str,
        proposer: Proposer,
        raw_log_ids: Sequence[str] = (),
        evidence: str | None = None,
    ) -> Proposal:
        draft = Draft(note_id, attribute, new_value, reason, proposer, raw_log_ids, evidence)
        return self.propose_drafts([draft])[0]

    def propose_drafts(self, drafts: Sequence[Draft]) -> list[Proposal]:
        """``propose_in`` in a write transaction of its own: an edit of several attributes is
        recorded whole or, one draft refused, not at all."""
        with self.ledger.write() as tx:
            return self.propose_in(tx, drafts)

    def propose_in(
        self,
        tx: LedgerTx,
        drafts: Sequence[Draft],
        *,
        revert_of: int | None = None,
        corrects: str | None = None,
    ) -> list[Proposal]:
        """Route and record drafts inside ``tx``; applies the ones the policy lets through.
        ``revert_of``: the change a revert undoes; ``corrects``: the proposal a correction replaces.

        Every value traces to who proposed it, the raw logs it comes from and the model call that
        made it, so each draft's are checked first (``_Sources``, a query a table for all drafts): a
        raw log that does not exist or belongs to another scope than the note's, a model call that
        was not recorded, a model's proposal naming no call, a person the policy lists as an agent,
        or ``system:`` is refused, and nothing of the drafts is recorded."""
        self._follow_installed_policy(tx)
        now = utcnow()
        notes: dict[str, Note] = {n.id: n for n in tx.get_notes(list({d.note_id for d in drafts}))}
        sources = _Sources.read(tx, drafts)
        changed: set[str] = set()  # notes to write back once, at the end (each write re-indexes it)
        out: list[Proposal] = []
        # The proposals and changes of all drafts: one multi-row INSERT per table at the end.
        with tx.batched():
            for d in drafts:
                note = notes.get(d.note_id)
                if note is None:
                    raise NotFoundError(f"note {d.note_id} does not exist")
                if note.deleted and _erased(tx, note):
                    # restoring it would put "[erased]" back in search; its history stays readable
                    raise InvalidInputError(
                        f"note {note.id} was erased on a data subject's request: it takes no more changes"
                    )
                if not self.policy.knows(d.attribute):
                    raise InvalidInputError(
                        f"unknown attribute {d.attribute!r}: not a core attribute and not declared in "
                        f"{self.policy.source or 'the policy'}"
                    )
                if not d.reason or not d.reason.strip():
                    raise InvalidInputError(f"a proposal to change {d.attribute!r} needs a reason")
                check_text(d.reason, "reason")
                self._check_proposer(d.proposer)
                sources.check(d, note)
                self._check_edits_in(d.proposer, note.scope)
                attr_type = self.policy.type_of(d.attribute)
                new = normalize(d.attribute, attr_type, d.new_value)
                if attr_type == "links":
                    new = self._check_links(tx, note, new)
                old = current_value(note, d.attribute, attr_type)
                routing = self.policy.route(
                    d.attribute, note.tags, d.proposer.kind, new, category=note.category
                )
                status = {
                    Mode.AUTO: ProposalStatus.AUTO_APPLIED,
                    Mode.REVIEW: ProposalStatus.PENDING,
                    Mode.FROZEN: ProposalStatus.REJECTED,
                }[routing.mode]
                comment = (
                    f"refused by policy: {d.attribute} is frozen" if status.value == "rejected" else None
                )
                # (a model's contradiction only: a person's edit or a revert says what they mean)
                earlier = (
                    _earlier_retirement(tx, note.id, new)
                    if d.attribute == "invalid_at"
                    and status == ProposalStatus.PENDING
                    and d.proposer.kind == ActorKind.LLM
                    and revert_of is None
                    else None
                )
                if earlier is not None:
                    # The note stopped holding when the first newer fact came: a later contradiction
                    # would move its end later and rewrite what held in between. It is recorded, and
                    # the earlier retirement stays the one a reviewer decides.
                    status = ProposalStatus.SUPERSEDED
                    comment = f"an earlier retirement of this note waits for review ({earlier})"
                proposal = Proposal(
                    id=new_id("p"),
                    note_id=note.id,
                    scope=note.scope,
                    attribute=d.attribute,
                    old_value=old,
                    new_value=new,
                    base_version=note.version,
                    reason=d.reason.strip(),
                    evidence=d.evidence,
                    proposer=d.proposer,
                    raw_log_ids=list(d.raw_log_ids),
                    rule=f"{routing.rule} -> {routing.mode.value}",
                    status=status,
                    created_at=now,
                    revert_of=revert_of,
                    corrects=corrects,
                    review_comment=comment,
                    reviewed_at=now
                    if status in (ProposalStatus.REJECTED, ProposalStatus.SUPERSEDED)
                    else None,
                    policy_sha256=self.policy_fingerprint,
                )
                tx.insert_proposals([proposal])
                # A newer suggestion replaces an older one in the queue. An applied change does not:
                # the older proposal stays, and approving it gives a conflict the reviewer can see.
                if status == ProposalStatus.PENDING:
                    tx.supersede_pending(note.id, d.attribute, by=proposal.id, at=now)
                if status == ProposalStatus.AUTO_APPLIED and new != old:
                    kind = ChangeKind.REVERT if revert_of is not None else ChangeKind.APPLY
                    notes[note.id] = self._apply(tx, note, proposal, d.proposer.actor, kind, now, save=False)
                    changed.add(note.id)
                out.append(proposal)
        for note_id in sorted(changed):
            tx.save_note(notes[note_id])
        return out

    def _check_proposer(self, proposer: Proposer) -> None:
        """Refuse a proposer no one may claim: ``system:`` (what amem does itself is recorded as its
        own act, a bootstrap or an erasure, never proposed), the model without the recorded call
        that made its value (the value would say a model made it, with nothing to trace it to), and
        a person the policy lists as an agent (a policy may apply a person's edits without review:
        an agent's name claiming a person would step around it)."""
        if proposer.kind == ActorKind.SYSTEM:
            raise InvalidInputError(
                f"proposer {proposer.actor}: system: names what amem does itself and proposes nothing; "
                "propose as agent:NAME or as a person"
            )
        if proposer.kind == ActorKind.LLM and not proposer.llm_call_id:
            raise InvalidInputError(
                f"proposer {proposer.actor} names no model call (llm_call_id): a model's proposal names "
                "the recorded call that made it, and amem's pipeline (add_note, reprocess, a worker) "
                "records each call and proposes with it; a value proposed by hand is proposed as "
                "agent:NAME or as a person"
            )
        if proposer.kind == ActorKind.PERSON and self.policy.is_agent(proposer.id):
            raise PermissionDeniedError(
                f"{proposer.id} is an agent in {self.policy.source or 'the policy'}: it proposes as "
                f"agent:{proposer.id}, never as a person"
            )

    def _check_edits_in(self, proposer: Proposer, scope: str) -> None:
        """A person the policy names as a reviewer edits only in the accounts it gives them, as they
        decide there only: a limit that an edit (applied by itself where a rule lets a person's
        value through) could step around would limit nothing. So does an agent of a reviewer's name
        (one namespace: agent:alice is alice, and a bare name in the library is an agent's). A name
        it does not name as a reviewer has no limit to keep (nothing of theirs signs in): other
        agents' tokens carry their own."""
        named = proposer.kind in (ActorKind.PERSON, ActorKind.AGENT)
        if named and self.policy.reviewer(proposer.id) is not None:
            self.check_decides_in(proposer.id, scope)

    def _check_links(self, tx: LedgerTx, note: Note, links: list[dict[str, str]]) -> list[dict[str, str]]:
        targets = {n.id: n for n in tx.get_notes([x["note_id"] for x in links])}
        for link in links:
            target = targets.get(link["note_id"])
            if target is None:
                raise InvalidInputError(f"link to {link['note_id']}: no such note")
            if target.scope != note.scope:
                raise InvalidInputError(f"link to {link['note_id']}: notes never link across scopes")
            if target.id == note.id:
                raise InvalidInputError("a note cannot link to itself")
        return links

    # -- deciding ------------------------------------------------------------------------------

    def approve(
        self, proposal_id: str, reviewer: AuthenticatedReviewer, comment: str | None = None
    ) -> Proposal:
        """Approve and apply a pending proposal. Raises FrozenAttributeError, after recording the
        rejection, when the policy now freezes the attribute or no longer declares it; a conflict is
        returned, not raised."""
        who = self._reviewer(reviewer)
        if comment is not None:
            check_text(comment, "comment")
        with self.ledger.write() as tx:
            self._check_policy_in_force(tx)
            proposal = self._pending(tx, proposal_id)
            self._check_may_decide(proposal, who)
            decided, refusal = self._approve_in(tx, proposal, who, comment)
        if refusal is None:
            return decided
        raise FrozenAttributeError(
            f"refused by the policy: {decided.attribute} is {refusal}; proposal {decided.id} was not "
            "approved: the policy rejected it (recorded as the policy's rejection, with your approval "
            "and comment), and nothing was applied",
            proposal=decided,
        )

    def _approve_in(
        self, tx: LedgerTx, proposal: Proposal, who: Actor, comment: str | None
    ) -> tuple[Proposal, str | None]:
        """Decide a pending proposal ``who`` may decide, inside ``tx``: approved and applied, a
        conflict, or rejected when the policy now freezes the attribute or no longer declares it
        (a newer policy dropped it: no type to write the value with). A rejection returns why too,
        and the caller raises after the transaction commits it."""
        note = tx.get_note(proposal.note_id)
        assert note is not None
        self._check_not_deleted(tx, proposal, note)
        now = utcnow()
        freeze = policy_freezes(tx, self.policy, [(proposal, note)]).get(proposal.id)
        if freeze is not None:
            # The policy's rejection at the reviewer's request: she stays the one who asked (her
            # decisions, the fact's decisions and the trail filtered by her still show it), and
            # the comment says the policy refused it, which version, and keeps her own words.
            asked = f"; approval asked by person:{who.id}" + (
                f", who wrote: {comment.strip()}" if comment and comment.strip() else ""
            )
            # Recorded and committed before the caller hears of it: the proposal leaves the queue.
            if not tx.decide_proposal(
                proposal.id,
                expect=ProposalStatus.PENDING,
                status=ProposalStatus.REJECTED,
                reviewer=who.id,
                comment=freeze.record(proposal.attribute) + asked,
                at=now,
            ):
                raise ProposalStateError(f"proposal {proposal.id} was decided by someone else meanwhile")
            return self._get(tx, proposal.id), freeze.words()
        attr_type = self.policy.type_of(proposal.attribute)
        if current_value(note, proposal.attribute, attr_type) != proposal.old_value:
            tx.decide_proposal(
                proposal.id,
                expect=ProposalStatus.PENDING,
                status=ProposalStatus.CONFLICT,
                reviewer=who.id,
                comment=_join(comment, f"{proposal.attribute} changed since the proposal was made"),
                at=now,
            )
            return self._get(tx, proposal.id), None
        if not tx.decide_proposal(
            proposal.id,
            expect=ProposalStatus.PENDING,
            status=ProposalStatus.APPROVED,
            reviewer=who.id,
            comment=comment,
            at=now,
        ):
            raise ProposalStateError(f"proposal {proposal.id} was decided by someone else meanwhile")
        decided = self._get(tx, proposal.id)
        if decided.new_value == decided.old_value:
            # the note holds the value already: the approval is recorded, no change (as an applied
            # proposal of the same value makes none), so the note's version says what changed
            return decided, None
        kind = ChangeKind.REVERT if proposal.revert_of is not None else ChangeKind.APPLY
        self._apply(tx, note, decided, who, kind, now)
        return decided, None

    def correct(
        self,
        proposal_id: str,
        new_value: Any,
        reviewer: AuthenticatedReviewer,
        comment: str | None = None,
    ) -> Correction:
        """Replace a pending proposal's value with the one the reviewer reads in the same raw log.

        The proposal is rejected, and a new one by the reviewer carries their value, with the same raw
        logs and evidence and ``corrects`` naming the one it replaces, routed by the policy like any
        person's edit. The reviewer applies it at once only where they could approve it themselves
        (the policy allows self-approval); otherwise it waits for another reviewer, so a held value
        still gets a second person's look. One transaction: both happen, or neither."""
        who = self._reviewer(reviewer)
        why = comment.strip() if comment and comment.strip() else None
        if why is not None:
            check_text(why, "comment")
        with self.ledger.write() as tx:
            self._check_policy_in_force(tx)
            proposal = self._pending(tx, proposal_id)
            self._check_may_decide(proposal, who)
            if proposal.attribute in UNCORRECTABLE:
                raise InvalidInputError(
                    f"proposal {proposal.id} {UNCORRECTABLE[proposal.attribute]}: approve or reject it"
                )
            if not self.policy.knows(proposal.attribute):  # a newer policy dropped it: no type to check
                raise InvalidInputError(
                    f"{proposal.attribute} is no longer declared by the policy in force: no value of it "
                    f"can be written; reject proposal {proposal.id}"
                )
            attr_type = self.policy.type_of(proposal.attribute)
            listed = attr_type == "list[str]" and isinstance(new_value, list | tuple)
            texts = [new_value] if attr_type == "text" else list(new_value) if listed else []
            if any(isinstance(text, str) and not is_visible(text) for text in texts):
                raise InvalidInputError(  # stripped, it became "" and replaced the model's value
                    f"value of {proposal.attribute!r} shows nothing (only spaces, zero-width or control "
                    f"characters): give the right value, or reject proposal {proposal.id}"
                )
            new = normalize(proposal.attribute, attr_type, new_value)
            if new == proposal.new_value:
                raise InvalidInputError(f"{new!r} is the value proposal {proposal.id} proposes: approve it")
            note = tx.get_note(proposal.note_id)
            assert note is not None
            self._check_not_deleted(tx, proposal, note)
            if new == current_value(note, proposal.attribute, attr_type):
                raise InvalidInputError(
                    f"{new!r} is already the note's {proposal.attribute}: reject proposal {proposal.id}"
                )
            routing = self.policy.route(
                proposal.attribute, note.tags, ActorKind.PERSON, new, category=note.category
            )
            if routing.mode == Mode.FROZEN:  # the correction would be refused: lose nothing
                raise InvalidInputError(
                    f"the policy freezes {proposal.attribute} for a person's value ({routing.rule}): "
                    f"approve or reject proposal {proposal.id}"
                )
            if not tx.decide_proposal(
                proposal.id,
                expect=ProposalStatus.PENDING,
                status=ProposalStatus.REJECTED,
                reviewer=who.id,
                comment=_join(why, f"corrected by {who.id}"),
                at=utcnow(),
            ):
                raise ProposalStateError(f"proposal {proposal.id} was decided by someone else meanwhile")
            draft = Draft(
                proposal.note_id,
                proposal.attribute,
                new,
                _join(why, f"correction of {proposal.id}"),
                Proposer.of(who),
                proposal.raw_log_ids,
                proposal.evidence,
            )
            correction = self.propose_in(tx, [draft], corrects=proposal.id)[0]
            if correction.status == ProposalStatus.PENDING and self._may_decide(correction, who):
                correction, _ = self._approve_in(tx, correction, who, why)
            return Correction(corrected=self._get(tx, proposal.id), correction=correction)

    @staticmethod
    def _check_not_deleted(tx: LedgerTx, proposal: Proposal, note: Note) -> None:
        """NoteDeletedError, nothing recorded, when ``proposal`` edits a note deleted since (a
        `delete`, an erasure): the value would change a note nobody reads, and not bring it back. It
        stays pending: reject it, or approve it once the deletion is reverted."""
        if edits_deleted(proposal, note):
            deletion = note_deletions(tx, [note])[note.id]
            raise NoteDeletedError(
                f"proposal {proposal.id} ({proposal.attribute}) refused: {deletion.refusal()}",
                note_id=note.id,
                change_seq=deletion.change_seq,
            )

    def _may_decide(self, proposal: Proposal, who: Actor) -> bool:
        try:
            self._check_may_decide(proposal, who)
        except PermissionDeniedError:
            return False
        return True

    def reject(self, proposal_id: str, reviewer: AuthenticatedReviewer, comment: str) -> Proposal:
        who = self._reviewer(reviewer)
        if not comment or not comment.strip():
            raise InvalidInputError("a rejection needs a comment saying why")
        check_text(comment, "comment")
        with self.ledger.write() as tx:
            self._check_policy_in_force(tx)
            proposal = self._pending(tx, proposal_id)
            self._check_may_decide(proposal, who)
            if not tx.decide_proposal(
                proposal.id,
                expect=ProposalStatus.PENDING,
                status=ProposalStatus.REJECTED,
                reviewer=who.id,
                comment=comment.strip(),
                at=utcnow(),
            ):
                raise ProposalStateError(f"proposal {proposal.id} was decided by someone else meanwhile")
            return self._get(tx, proposal.id)

    def approve_many(
        self, proposal_ids: Sequence[str], reviewer: AuthenticatedReviewer, comment: str | None = None
    ) -> DecisionReport:
        """Approve each proposal through ``approve``, one transaction each, with every check of a
        single approval. One the reviewer may not decide (or decided by someone else meanwhile)
        is skipped and reported, never approved; the others still are."""
        self._reviewer(reviewer)  # not a reviewer at all: refuse the whole request
        return _each(proposal_ids, lambda pid: self.approve(pid, reviewer, comment))

    def reject_many(
        self, proposal_ids: Sequence[str], reviewer: AuthenticatedReviewer, comment: str
    ) -> DecisionReport:
        """``reject`` for each proposal; refusals are skipped and reported, as in ``approve_many``."""
        self._reviewer(reviewer)
        if not comment or not comment.strip():
            raise InvalidInputError("a rejection needs a comment saying why")
        return _each(proposal_ids, lambda pid: self.reject(pid, reviewer, comment))

    def check_may_approve(self, proposal: Proposal, reviewer: AuthenticatedReviewer) -> None:
        """Raises PermissionDeniedError when ``reviewer`` may not decide ``proposal`` (for the console)."""
        if self.mismatch:
            raise PolicyMismatchError(self.mismatch)
        self._check_may_decide(proposal, self._reviewer(reviewer))

    def person(self, reviewer: AuthenticatedReviewer) -> Actor:
        """The person behind ``reviewer``, checked as for a decision (authenticated, under the policy in
        force, a reviewer in it): for acts that are not decisions on a proposal, such as an erasure."""
        return self._reviewer(reviewer)

    def _reviewer(self, reviewer: AuthenticatedReviewer) -> Actor:
        """The deciding person, once proven: authenticated, under this policy, a reviewer in it."""
        if self.mismatch:
            raise PolicyMismatchError(self.mismatch)
        if not is_authenticated(reviewer):
            raise PermissionDeniedError(
                f"a decision needs an authenticated reviewer (Memory.authenticate, a console sign-in, "
                f"a token), not {str(reviewer)!r}: agents and LLMs can never approve or reject"
            )
        if reviewer.policy_fingerprint != self.policy_fingerprint:
            raise PermissionDeniedError(
                f"{reviewer.id} signed in under another policy than the one in force here; sign in again"
            )
        if self.policy.is_agent(reviewer.id):
            raise PermissionDeniedError(f"{reviewer.id} is an agent: agents can never approve or reject")
        if self.policy.reviewer(reviewer.id) is None:
            raise PermissionDeniedError(
                f"{reviewer.id} is not a reviewer in {self.policy.source or 'the policy'}"
            )
        return reviewer.actor

    def _check_may_decide(self, proposal: Proposal, who: Actor) -> None:
        self.check_decides_in(who.id, proposal.scope or "(no scope)")
        self._check_role_covers(who, proposal.attribute, "decide")
        # One namespace: the proposer's kind does not matter (agent:alice is alice), nor case or width.
        if not self.policy.self_approval and same_identity(proposal.proposer.id, who.id):
            raise PermissionDeniedError(
                f"{who.id} proposed {proposal.id} (as {proposal.proposer.kind.value}:"
                f"{proposal.proposer.id}) and may not decide it (self-approval)"
            )

    def _check_role_covers(self, who: Actor, attribute: str, act: str) -> None:
        """PermissionDeniedError unless one of ``who``'s roles approves ``attribute``."""
        if not self.policy.may_approve(who.id, attribute):
            roles = ", ".join(self.policy.roles_of(who.id)) or "none"
            need = ", ".join(self.policy.approver_roles(attribute)) or "no role"
            raise PermissionDeniedError(
                f"{who.id} (roles: {roles}) may not {act} changes to {attribute}; needs: {need}"
            )

    def check_decides_in(self, reviewer: str, scope: str) -> None:
        """PermissionDeniedError when the policy limits ``reviewer`` to other scopes (the accounts a
        lead owns): every decision, revert and erasure of theirs stays in their accounts."""
        if not self.policy.decides_in(reviewer, scope):
            mine = ", ".join(self.policy.scopes_of(reviewer) or ())
            if not mine:  # `scopes: []`: an empty list limits them to no account at all
                raise PermissionDeniedError(
                    f"{reviewer} decides in no account (the policy gives them no scope), not in {scope}"
                )
            raise PermissionDeniedError(f"{reviewer} decides in {mine} only, not in {scope}")

    def _pending(self, tx: LedgerTx, proposal_id: str) -> Proposal:
        proposal = tx.get_proposal(proposal_id)
        if proposal is None:
            raise NotFoundError(f"proposal {proposal_id} does not exist")
        if proposal.status != ProposalStatus.PENDING:
            policy = _refused_by_policy(proposal) or (
                proposal.status == ProposalStatus.REJECTED and proposal.reviewer is None
            )
            by = " by the policy" if policy else f" by {proposal.reviewer}" if proposal.reviewer else ""
            raise ProposalStateError(f"proposal {proposal_id} is {proposal.status.value}{by}, not pending")
        return proposal

    @staticmethod
    def _get(tx: LedgerTx, proposal_id: str) -> Proposal:
        p = tx.get_proposal(proposal_id)
        assert p is not None
        return p

    # -- applying (the only writer of note values) ---------------------------------------------

    def _apply(
        self,
        tx: LedgerTx,
        note: Note,
        proposal: Proposal,
        actor: Actor,
        kind: ChangeKind,
        now: datetime,
        *,
        save: bool = True,
    ) -> Note:
        """Record the change and return the note with it. ``save``: False when the caller writes the
        note back itself, once for all its changes of one transaction."""
        attr_type = self.policy.type_of(proposal.attribute)
        old = current_value(note, proposal.attribute, attr_type)
        updated = with_value(note, proposal.attribute, attr_type, proposal.new_value)
        updated = updated.model_copy(update={"version": note.version + 1, "updated_at": now})
        if save:
            tx.save_note(updated)
        self._append(tx, updated, proposal, old=old, new=proposal.new_value, actor=actor, kind=kind, now=now)
        return updated

    def _append(
        self,
        tx: LedgerTx,
        note: Note,
        proposal: Proposal,
        *,
        old: Any,
        new: Any,
        actor: Actor,
        kind: ChangeKind,
        now: datetime,
    ) -> Change:
        seq = tx.head.last_seq + 1
        fields = dict(
            seq=seq,
            note_id=note.id,
            proposal_id=proposal.id,
            attribute=proposal.attribute,
            old_value=old,
            new_value=new,
            note_version=note.version,
            kind=kind.value,
            applied_at=now,
        )
        digest = change_hash(
            prev_hash=tx.head.last_hash, actor_kind=actor.kind.value, actor_id=actor.id, **fields
        )
        change = Change(**{**fields, "kind": kind}, actor=actor, prev_hash=tx.head.last_hash, hash=digest)
        tx.append_change(change)
        return change

    def tombstone_in(self, tx: LedgerTx, note_ids: Sequence[str], *, by: Actor, reason: str) -> int:
        """Mark erased notes deleted, in the erasure's transaction, as the person who erased them: the
        erasure is the decision (the policy's ``erasers`` gave them that authority, checked by the
        caller), recorded as an approved proposal and its change. Deleted notes leave search, the
        link step's neighbours and the account's facts; their history stays. Returns how many."""
        now = utcnow()
        made = 0
        for note in tx.get_notes(list(note_ids)):
            if note.deleted:
                continue
            proposal = self._erasure_decision(note, "deleted", False, True, by, reason, reason, now)
            tx.insert_proposals([proposal])
            self._apply(tx, note, proposal, by, ChangeKind.APPLY, now)
            made += 1
        return made

    def redactions_in(
        self, tx: LedgerTx, notes: Sequence[tuple[Note, Sequence[str]]], *, by: Actor, reason: str
    ) -> int:
        """Record each value of a kept note an erasure redacted in place (``notes``: each note as the
        erasure left it, and the attributes it changed) as a change by the eraser, approved by the
        erasure as its tombstones are: old and new value both what the note holds now (what it held
        before is what was erased), so the change feed, which a poller reads from ``next_after``
        on, names every value the erasure replaced, and replay gives the note it is already.
        Returns how many."""
        now = utcnow()
        made = 0
        left: list[Note] = []
        with tx.batched():  # their proposals and changes: one INSERT each
            for note, attributes in notes:
                for attribute in attributes:
                    value = current_value(note, attribute, self.policy.type_of(attribute))
                    why = f"{reason}: redacted in place"
                    proposal = self._erasure_decision(note, attribute, value, value, by, why, reason, now)
                    tx.insert_proposals([proposal])
                    note = self._apply(tx, note, proposal, by, ChangeKind.APPLY, now, save=False)
                    made += 1
                left.append(note)
        for note in left:
            tx.save_note(note)
        return made

    def _erasure_decision(
        self,
        note: Note,
        attribute: str,
        old: Any,
        new: Any,
        by: Actor,
        reason: str,
        comment: str,
        now: datetime,
    ) -> Proposal:
        """A value an erasure sets, as the approved proposal its eraser's authority makes it."""
        return Proposal(
            id=new_id("p"),
            note_id=note.id,
            scope=note.scope,
            attribute=attribute,
            old_value=old,
            new_value=new,
            base_version=note.version,
            reason=reason,
            proposer=Proposer.of(by),
            rule=ERASURE_RULE,
            status=ProposalStatus.APPROVED,
            reviewer=by.id,
            review_comment=comment,
            reviewed_at=now,
            created_at=now,
            policy_sha256=self.policy_fingerprint,
        )

    # -- revert --------------------------------------------------------------------------------

    def revert(self, change_seq: int, reviewer: AuthenticatedReviewer, reason: str | None = None) -> Proposal:
        """Propose the value a change replaced, as an authenticated reviewer; routed by the same
        policy. History stays.

        A revert is that person's edit restoring the earlier value, so it takes what their edit
        takes (``Memory.update``): a person signed in, in an account they decide in, and no role of
        their own: where the attribute applies by itself their edit would too, and where it is held
        the revert waits for a reviewer whose role covers it, as any person's proposal does."""
        who = self._reviewer(reviewer)
        with self.ledger.write() as tx:
            self._check_policy_in_force(tx)
            change = tx.get_change(change_seq)
            if change is None:
                raise NotFoundError(f"change {change_seq} does not exist")
            if change.kind == ChangeKind.CREATE:
                raise InvalidInputError(f"change {change_seq} created the note; delete the note instead")
            reverted = tx.get_note(change.note_id)
            if reverted is not None:
                self.check_decides_in(who.id, reverted.scope)
            if _old_value_erased(tx, change):
                raise InvalidInputError(
                    f"the value change {change_seq} replaced was erased on a data subject's request: "
                    f"it cannot be put back; propose the value {change.attribute} should hold instead"
                )
            why = f"revert of change {change_seq}" + (
                f": {reason.strip()}" if reason and reason.strip() else ""
            )
            draft = Draft(change.note_id, change.attribute, change.old_value, why, Proposer.of(who))
            return self.propose_in(tx, [draft], revert_of=change_seq)[0]

    # -- reading the past ----------------------------------------------------------------------

    def history(self, note_id: str) -> list[HistoryEvent]:
        with self.ledger.read() as tx:
            if tx.get_note(note_id) is None:
                raise NotFoundError(f"note {note_id} does not exist")
            props = tx.proposals_for_note(note_id)
            chg = tx.changes_for_note(note_id)
        events: list[tuple[datetime, int, HistoryEvent]] = []
        for p in props:
            events.append(
                (
                    p.created_at,
                    0,
                    HistoryEvent(
                        at=p.created_at,
                        event="created" if p.rule == CREATE_RULE else "proposed",
                        attribute=p.attribute,
                        old_value=p.old_value,
                        new_value=p.new_value,
                        actor=f"{p.proposer.kind.value}:{p.proposer.id}",
                        reason=p.reason,
                        raw_log_ids=p.raw_log_ids,
                        proposal_id=p.id,
                        rule=p.rule,
                        model=p.proposer.model,
                        prompt_version=p.proposer.prompt_version,
                        llm_call_id=p.proposer.llm_call_id,
                    ),
                )
            )
            if p.status not in (ProposalStatus.PENDING, ProposalStatus.AUTO_APPLIED) and p.reviewed_at:
                events.append(
                    (
                        p.reviewed_at,
                        1,
                        HistoryEvent(
                            at=p.reviewed_at,
                            event=p.status.value,
                            attribute=p.attribute,
                            old_value=p.old_value,
                            new_value=p.new_value,
                            actor=_decided_by(p),
                            comment=p.review_comment,
                            proposal_id=p.id,
                            rule=p.rule,
                            raw_log_ids=p.raw_log_ids,
                        ),
                    )
                )
        for c in chg:
            events.append(
                (
                    c.applied_at,
                    2,
                    HistoryEvent(
                        at=c.applied_at,
                        event="reverted" if c.kind == ChangeKind.REVERT else "applied",
                        attribute=c.attribute,
                        old_value=c.old_value,
                        new_value=c.new_value,
                        actor=str(c.actor),
                        proposal_id=c.proposal_id,
                        change_seq=c.seq,
                    ),
                )
            )
        events.sort(key=lambda e: (e[0], e[1]))
        return [e[2] for e in events]

    def as_of(self, note_id: str, at: datetime) -> Note | None:
        """The note exactly as it stood at ``at``, rebuilt from its changes; None before it existed."""
        moment = as_utc(at)
        with self.ledger.read() as tx:
            current = tx.get_note(note_id)
            if current is None:
                raise NotFoundError(f"note {note_id} does not exist")
            chg = tx.changes_for_note(note_id, until=moment)
        return replay(current, chg)

    def as_of_version(self, note_id: str, version: int) -> Note:
        """The note exactly as it stood at its ``version``, rebuilt from its changes up to that one.
        Not by time: every change of one transaction (an add_note's attributes) shares its moment,
        and a moment would fold the later versions in."""
        with self.ledger.read() as tx:
            current = tx.get_note(note_id)
            if current is None:
                raise NotFoundError(f"note {note_id} does not exist")
            chg = tx.changes_for_note(note_id)
        upto = [c for c in chg if c.note_version <= version]
        past = replay(current, upto)
        if past is None or past.version != version:
            raise NotFoundError(f"note {note_id} has no version {version} (versions 1 to {current.version})")
        return past

    def llm_call(self, call_id: str) -> LlmCall:
        """The recorded model call behind a value (``HistoryEvent.llm_call_id``): what the model was
        asked (its prompt's digest), answered, and spent; an erasure leaves its answer redacted."""
        with self.ledger.read() as tx:
            call = tx.get_llm_call(call_id)
        if call is None:
            raise NotFoundError(f"model call {call_id} does not exist")
        return call

    # -- integrity -----------------------------------------------------------------------------

    def verify(self, *, progress: Progress = no_progress) -> VerifyResult:
        """Recompute both hash chains, compare every row with its event, replay every note."""
        return verify_ledger(self.ledger, progress=progress)


@dataclass(frozen=True)
class _Sources:
    """The raw logs and model calls a batch of drafts cites, read in one query a table whatever the
    number of drafts (a statement binds a few hundred ids at most; the pipeline proposes each
    input's values through here): each raw log's scope, and each model call's raw log."""

    #: raw log id -> its scope, for the cited raw logs and the model calls' raw logs that exist
    scopes: Mapping[str, str]
    #: model call id -> the raw log it analysed (None: a call on no raw log), for those that exist
    calls: Mapping[str, str | None]

    @classmethod
    def read(cls, tx: LedgerTx, drafts: Sequence[Draft]) -> _Sources:
        # an id no row can have (a NUL: PostgreSQL refuses the statement) is simply not found
        call_ids = {
            d.proposer.llm_call_id
            for d in drafts
            if d.proposer.llm_call_id and _findable(d.proposer.llm_call_id)
        }
        calls: dict[str, str | None] = {}
        if call_ids:
            calls = {
                c["id"]: c["raw_log_id"]
                for c in erasure_queries.rows(tx, "llm_calls", "id", sorted(call_ids))
            }
        raw_ids = {r for d in drafts for r in d.raw_log_ids if _findable(r)}
        raw_ids |= {r for r in calls.values() if r is not None}
        scopes: dict[str, str] = {}
        if raw_ids:
            scopes = {
                r["id"]: r["scope"] for r in erasure_queries.rows(tx, "raw_logs", "id", sorted(raw_ids))
            }
        return cls(scopes=scopes, calls=calls)

    def check(self, draft: Draft, note: Note) -> None:
        """InvalidInputError naming the raw log or model call ``draft`` cites that does not exist or
        is of another scope than ``note``'s: a value traces to what was said in its own account."""
        for raw_log_id in draft.raw_log_ids:
            scope = self.scopes.get(raw_log_id) if isinstance(raw_log_id, str) else None
            if scope is None:
                raise InvalidInputError(
                    f"raw log {_shown(raw_log_id)} does not exist: a proposal cites the raw logs of "
                    f"note {note.id}'s scope its value comes from"
                )
            if scope != note.scope:
                raise InvalidInputError(
                    f"raw log {raw_log_id} is of another scope than note {note.id} ({note.scope}): a "
                    "value comes from what was said in its own note's scope"
                )
        call_id = draft.proposer.llm_call_id
        if call_id is None:
            return
        if draft.proposer.kind != ActorKind.LLM:
            raise InvalidInputError(
                f"proposer {draft.proposer.actor} names model call {_shown(call_id)}: only the model's "
                "proposals name the call that made them"
            )
        if call_id not in self.calls:
            raise InvalidInputError(
                f"model call {_shown(call_id)} does not exist: a model's proposal names the recorded "
                "call that made it"
            )
        analysed = self.calls[call_id]
        if analysed is not None and self.scopes.get(analysed) != note.scope:
            raise InvalidInputError(
                f"model call {call_id} analysed a raw log of another scope than note {note.id} "
                f"({note.scope}): its answer is no source of this note's values"
            )


def _findable(identifier: object) -> bool:
    """Whether a row could have ``identifier`` as its id (text PostgreSQL can hold)."""
    return isinstance(identifier, str) and text_problem(identifier) is None


def _shown(identifier: object) -> str:
    """An id for a message, its NUL or control characters escaped."""
    if isinstance(identifier, str):
        return identifier.encode("unicode_escape").decode("ascii")
    return repr(identifier)


def _each(proposal_ids: Sequence[str], decide: Callable[[str], Proposal]) -> DecisionReport:
    """``decide`` each proposal in its own transaction; one refused (the policy, someone else decided
    it meanwhile, gone) is skipped and reported, never decided, and the others still are. One whose
    attribute the policy froze meanwhile was decided, by the policy (recorded as its rejection at the
    reviewer's request): it is reported among the decided, and counted apart (``refused_by_policy``)."""
    report = DecisionReport()
    for proposal_id in proposal_ids:
        try:
            report.decided.append(decide(proposal_id))
        except FrozenAttributeError as exc:
            assert isinstance(exc.proposal, Proposal)
            report.decided.append(exc.proposal)
        except (PermissionDeniedError, ProposalStateError, NotFoundError) as exc:
            deleted = isinstance(exc, NoteDeletedError)
            report.skipped.append(
                SkippedDecision(proposal_id=proposal_id, reason=str(exc), note_deleted=deleted)
            )
    return report


def _join(a: str | None, b: str) -> str:
    return f"{a.strip()} ({b})" if a and a.strip() else b


def _earlier_retirement(tx: LedgerTx, note_id: str, invalid_at: Any) -> str | None:
    """A pending retirement of the note that ends it no later than ``invalid_at`` (its id), if any."""
    if invalid_at is None:
        return None
    end = as_utc(parse_datetime(invalid_at, what="invalid_at"))
    pending = tx.list_proposals(
        ProposalFilter(status=[ProposalStatus.PENDING.value], attribute="invalid_at", note_id=note_id),
        limit=20,
    )
    for p in pending:
        if p.new_value is not None and as_utc(parse_datetime(p.new_value, what="invalid_at")) <= end:
            return p.id
    return None


def _old_value_erased(tx: LedgerTx, change: Change) -> bool:
    """Whether an erasure redacted the value ``change`` replaced: its erased_rows entry records the
    digest of the value the change was written with, which the row no longer holds. Putting it back
    would write the marker ("[erased]") into a kept note, not the value."""
    entry = erasure_queries.earlier_entries(tx, "changes", [str(change.seq)]).get(str(change.seq))
    if entry is None:
        return False
    written = (entry.get("detail") or {}).get(ORIGINAL_VALUE_DIGESTS[0])
    return written is None or written != value_digest(change.old_value)


def _erased(tx: LedgerTx, note: Note) -> bool:
    """Whether every raw log behind ``note`` was erased (the note is then one an erasure deleted)."""
    states = [tx.raw_log_state(r) for r in note.raw_log_ids]
    return bool(states) and all(s is not None and s["state"] == RawLogState.ERASED.value for s in states)
