"""Governance: the one place where note values change.

Every value reaches a note through a proposal that the policy routed; applied values append a
hash-chained change. Interfaces (CLI, console, agents) call these methods and nothing else, so
policy cannot be bypassed by a new feature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from amem.domain.hashing import change_hash
from amem.domain.models import (
    Actor,
    ActorKind,
    Change,
    ChangeKind,
    Note,
    Proposal,
    ProposalStatus,
    Proposer,
    RawLog,
    as_utc,
    new_id,
    utcnow,
)
from amem.domain.replay import replay
from amem.domain.values import current_value, normalize, with_value
from amem.errors import InvalidInputError, NotFoundError, PermissionDeniedError, ProposalStateError
from amem.ledger.store import Ledger, LedgerTx
from amem.policy import Mode, Policy
from amem.services.integrity import VerifyResult, verify_ledger

CREATE_RULE = "note creation"


@dataclass(frozen=True)
class Draft:
    """A proposal before routing: what someone wants to change, and why."""

    note_id: str
    attribute: str
    new_value: Any
    reason: str
    proposer: Proposer
    raw_log_ids: Sequence[str] = field(default_factory=tuple)


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


class Governance:
    def __init__(self, ledger: Ledger, policy: Policy) -> None:
        self.ledger = ledger
        self.policy = policy

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
        )
        tx.insert_proposals([proposal])
        self._append(tx, note, proposal, old=None, new=content, actor=actor, kind=ChangeKind.CREATE, now=now)
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
    ) -> Proposal:
        with self.ledger.write() as tx:
            return self.propose_in(tx, [Draft(note_id, attribute, new_value, reason, proposer, raw_log_ids)])[
                0
            ]

    def propose_in(
        self, tx: LedgerTx, drafts: Sequence[Draft], *, revert_of: int | None = None
    ) -> list[Proposal]:
        """Route and record drafts inside ``tx``; applies the ones the policy lets through."""
        now = utcnow()
        notes: dict[str, Note] = {n.id: n for n in tx.get_notes(list({d.note_id for d in drafts}))}
        changed: set[str] = set()  # notes to write back once, at the end (each write re-indexes it)
        out: list[Proposal] = []
        for d in drafts:
            note = notes.get(d.note_id)
            if note is None:
                raise NotFoundError(f"note {d.note_id} does not exist")
            if not self.policy.knows(d.attribute):
                raise InvalidInputError(
                    f"unknown attribute {d.attribute!r}: not a core attribute and not declared in "
                    f"{self.policy.source or 'the policy'}"
                )
            if not d.reason or not d.reason.strip():
                raise InvalidInputError(f"a proposal to change {d.attribute!r} needs a reason")
            attr_type = self.policy.type_of(d.attribute)
            new = normalize(d.attribute, attr_type, d.new_value)
            if attr_type == "links":
                new = self._check_links(tx, note, new)
            old = current_value(note, d.attribute, attr_type)
            routing = self.policy.route(d.attribute, note.tags, d.proposer.kind)
            status = {
                Mode.AUTO: ProposalStatus.AUTO_APPLIED,
                Mode.REVIEW: ProposalStatus.PENDING,
                Mode.FROZEN: ProposalStatus.REJECTED,
            }[routing.mode]
            proposal = Proposal(
                id=new_id("p"),
                note_id=note.id,
                scope=note.scope,
                attribute=d.attribute,
                old_value=old,
                new_value=new,
                base_version=note.version,
                reason=d.reason.strip(),
                proposer=d.proposer,
                raw_log_ids=list(d.raw_log_ids),
                rule=f"{routing.rule} -> {routing.mode.value}",
                status=status,
                created_at=now,
                revert_of=revert_of,
                review_comment=f"refused by policy: {d.attribute} is frozen"
                if status.value == "rejected"
                else None,
                reviewed_at=now if status == ProposalStatus.REJECTED else None,
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

    def approve(self, proposal_id: str, reviewer: str | Actor, comment: str | None = None) -> Proposal:
        who = self._reviewer(reviewer)
        with self.ledger.write() as tx:
            proposal = self._pending(tx, proposal_id)
            self._check_may_decide(proposal, who)
            note = tx.get_note(proposal.note_id)
            assert note is not None
            attr_type = self.policy.type_of(proposal.attribute)
            now = utcnow()
            if self.policy.route(proposal.attribute, note.tags, proposal.proposer.kind).mode == Mode.FROZEN:
                tx.decide_proposal(
                    proposal.id,
                    expect=ProposalStatus.PENDING,
                    status=ProposalStatus.REJECTED,
                    reviewer=who.id,
                    comment=f"refused by policy: {proposal.attribute} is frozen",
                    at=now,
                )
                raise PermissionDeniedError(
                    f"{proposal.attribute} is frozen by the policy; the proposal was rejected"
                )
            if current_value(note, proposal.attribute, attr_type) != proposal.old_value:
                tx.decide_proposal(
                    proposal.id,
                    expect=ProposalStatus.PENDING,
                    status=ProposalStatus.CONFLICT,
                    reviewer=who.id,
                    comment=_join(comment, f"{proposal.attribute} changed since the proposal was made"),
                    at=now,
                )
                return self._get(tx, proposal.id)
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
            kind = ChangeKind.REVERT if proposal.revert_of is not None else ChangeKind.APPLY
            self._apply(tx, note, decided, who, kind, now)
            return decided

    def reject(self, proposal_id: str, reviewer: str | Actor, comment: str) -> Proposal:
        who = self._reviewer(reviewer)
        if not comment or not comment.strip():
            raise InvalidInputError("a rejection needs a comment saying why")
        with self.ledger.write() as tx:
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

    def check_may_approve(self, proposal: Proposal, reviewer: str | Actor) -> None:
        """Raises PermissionDeniedError when ``reviewer`` may not decide ``proposal`` (for the console)."""
        self._check_may_decide(proposal, self._reviewer(reviewer))

    def _reviewer(self, reviewer: str | Actor) -> Actor:
        who = reviewer if isinstance(reviewer, Actor) else Actor.parse(reviewer)
        if who.kind != ActorKind.PERSON or who.id in self.policy.agents:
            raise PermissionDeniedError(f"{who} is not a person: agents and LLMs can never approve or reject")
        if who.id not in self.policy.reviewers:
            raise PermissionDeniedError(f"{who.id} is not a reviewer in {self.policy.source or 'the policy'}")
        return who

    def _check_may_decide(self, proposal: Proposal, who: Actor) -> None:
        if not self.policy.may_approve(who.id, proposal.attribute):
            roles = ", ".join(self.policy.roles_of(who.id)) or "none"
            need = ", ".join(self.policy.approver_roles(proposal.attribute)) or "no role"
            raise PermissionDeniedError(
                f"{who.id} (roles: {roles}) may not decide changes to {proposal.attribute}; needs: {need}"
            )
        if (
            not self.policy.self_approval
            and proposal.proposer.kind == ActorKind.PERSON
            and proposal.proposer.id == who.id
        ):
            raise PermissionDeniedError(
                f"{who.id} proposed {proposal.id} and may not decide it (self-approval)"
            )

    def _pending(self, tx: LedgerTx, proposal_id: str) -> Proposal:
        proposal = tx.get_proposal(proposal_id)
        if proposal is None:
            raise NotFoundError(f"proposal {proposal_id} does not exist")
        if proposal.status != ProposalStatus.PENDING:
            by = f" by {proposal.reviewer}" if proposal.reviewer else ""
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

    # -- revert --------------------------------------------------------------------------------

    def revert(self, change_seq: int, actor: str | Actor, reason: str | None = None) -> Proposal:
        """Propose the value a change replaced; routed by the same policy. History stays."""
        who = actor if isinstance(actor, Actor) else Actor.parse(actor)
        with self.ledger.write() as tx:
            change = tx.get_change(change_seq)
            if change is None:
                raise NotFoundError(f"change {change_seq} does not exist")
            if change.kind == ChangeKind.CREATE:
                raise InvalidInputError(f"change {change_seq} created the note; delete the note instead")
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
                            actor=f"person:{p.reviewer}" if p.reviewer else "policy",
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

    # -- integrity -----------------------------------------------------------------------------

    def verify(self) -> VerifyResult:
        """Recompute both hash chains, compare every row with its event, replay every note."""
        return verify_ledger(self.ledger)


def _join(a: str | None, b: str) -> str:
    return f"{a.strip()} ({b})" if a and a.strip() else b
