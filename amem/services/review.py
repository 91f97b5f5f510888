"""The review queue's read model: one review item per input, decidable at a glance.

A review item gathers every pending proposal one raw log caused (the proposal's first source raw
log): the account, when it was said and by whom, the raw log's text with each proposal's evidence
located in it, and each held value with its current and proposed values in words. For a
contradiction (a newer fact proposing ``invalid_at`` for an older note) the older fact is given
beside the newer one; for an older record analysed after the note that retires it (a late import,
a retry) the item is the record's, and the newer fact is given beside it. Decisions go through
governance, proposal by proposal, with its checks.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, computed_field

from amem.domain.models import AttributeType, Note, Proposal, RawLog, as_utc
from amem.domain.values import current_value
from amem.errors import InvalidInputError, NotFoundError, ReviewSetChangedError
from amem.ledger import review_queries as q
from amem.ledger.review_queries import REVIEW_KINDS, ReviewFilter, ReviewKind
from amem.ledger.store import Ledger
from amem.policy import Policy
from amem.services.authentication import AuthenticatedReviewer
from amem.services.governance import (
    UNCORRECTABLE,
    DecisionReport,
    Governance,
    NoteDeletion,
    PolicyFreeze,
    edits_deleted,
    note_deletions,
    policy_freezes,
)

__all__ = [
    "REVIEW_KINDS",
    "MatchCount",
    "NewerFact",
    "NoteDeletion",
    "OlderFact",
    "PolicyFreeze",
    "ReviewField",
    "ReviewFilter",
    "ReviewItem",
    "ReviewKind",
    "ReviewPage",
    "ReviewService",
    "TextPiece",
    "contested_words",
    "proposal_words",
    "value_words",
]

#: A proposed value is looked for in the raw log (when it has no evidence) only if this long:
#: shorter text ("no", "Q3") would be found by chance.
MIN_VALUE_CHARS = 4
#: How drafting names the note said later that retires an input's own note ("contradicted by newer
#: note n_…: …"); a reviewer's correction keeps the reason of the proposal it corrects. Read only for
#: a proposal recorded before drafting cited that note's raw log among its sources (``_later_notes``).
_RETIRED_BY = re.compile(r"\bcontradicted by newer note (?P<note_id>n_\w+)")


class TextPiece(BaseModel):
    """A stretch of the raw log's text; ``attributes``: the held values it is evidence for."""

    text: str
    attributes: list[str] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def marked(self) -> bool:
        return bool(self.attributes)


class OlderFact(BaseModel):
    """For a contradiction: the note the newer fact would retire, and when it was said."""

    note_id: str
    content: str
    said_at: datetime | None = None
    said_by: str | None = None


class NewerFact(BaseModel):
    """For an older record analysed after the note that retires it (a late import, a retry): that
    newer note, and when it was said. The item shows the record's raw log, so the fact it is
    retired for is given beside it. ``span``: where the proposal's evidence, the newer note's words
    saying otherwise, is in ``content`` (None for a proposal recorded before amem cited them)."""

    note_id: str
    content: str
    said_at: datetime | None = None
    said_by: str | None = None
    span: tuple[int, int] | None = None


class CorrectedValue(BaseModel):
    """For a correction: the value it replaces, who proposed that one, and who corrected it."""

    proposal_id: str
    proposed_words: str
    proposer: str
    corrected_by: str | None = None


class ReviewField(BaseModel):
    """One held value of an item: one pending proposal, in words."""

    proposal: Proposal
    kind: ReviewKind
    note_content: str | None = None
    current_value: Any = None
    current_words: str
    proposed_words: str
    #: The note's value changed since the proposal was made: approving records a conflict.
    stale: bool = False
    #: Where the proposal's support was found in the raw log: its evidence, else its value.
    located_by: Literal["evidence", "value"] | None = None
    span: tuple[int, int] | None = None
    older: OlderFact | None = None
    newer: NewerFact | None = None
    #: The attribute's type: what a correction of the value must be (text, a date, a list...).
    value_type: AttributeType = "text"
    #: Whether a reviewer may correct the value (Governance.correct), not only approve or reject it.
    correctable: bool = True
    #: For a correction: the value it replaces (a second reviewer reads both).
    corrected: CorrectedValue | None = None
    #: The note was deleted (a `delete`, an erasure) and this value would not bring it back: approving
    #: is refused (``Governance._check_not_deleted``); reject it, or revert the deletion first.
    note_deleted: NoteDeletion | None = None
    #: The policy in force freezes the attribute since it was proposed (or no longer declares it):
    #: approving is refused, recorded as the policy's rejection (``Governance._approve_in``); reject it.
    policy_frozen: PolicyFreeze | None = None

    @property
    def attribute(self) -> str:
        return self.proposal.attribute

    @property
    def note_id(self) -> str:
        return self.proposal.note_id

    @property
    def brings_back(self) -> bool:
        """Approving removes the note's end date: a retired fact holds again (an un-retirement,
        a person's or a revert's), which the queue must not word as a retirement."""
        return self.attribute == "invalid_at" and self.proposal.new_value is None


class ReviewItem(BaseModel):
    """Every pending proposal one input caused. ``key``: the raw log's id (the proposal's own id
    when it has no raw log)."""

    key: str
    scope: str
    raw_log: RawLog | None = None
    fields: list[ReviewField]
    pieces: list[TextPiece] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def said_at(self) -> datetime | None:
        return self.raw_log.occurred_at if self.raw_log else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def said_by(self) -> str | None:
        return str(self.raw_log.actor) if self.raw_log else None

    @property
    def proposal_ids(self) -> list[str]:
        return [f.proposal.id for f in self.fields]


class ReviewPage(BaseModel):
    items: list[ReviewItem]
    total: int


class MatchCount(BaseModel):
    """What "approve all matching" would decide, counted: items, their matching proposals, and a
    fingerprint of that exact set (so a decision can refuse when it changed)."""

    items: int
    proposals: int
    fingerprint: str


class ReviewService:
    def __init__(self, ledger: Ledger, policy: Policy, governance: Governance) -> None:
        self.ledger = ledger
        self.policy = policy
        self.governance = governance

    # -- reading -----------------------------------------------------------------------------------

    def for_reviewer(self, f: ReviewFilter, reviewer: str | None) -> ReviewFilter:
        """``f`` narrowed to the scopes the policy limits ``reviewer`` to (the accounts a lead owns):
        the queue they can decide. None, or a reviewer of every scope: ``f`` as it is."""
        scopes = self.governance.policy.scopes_of(reviewer) if reviewer is not None else None
        return f if scopes is None else replace(f, within=scopes)

    def items(
        self, f: ReviewFilter | None = None, *, limit: int = 20, offset: int = 0, reviewer: str | None = None
    ) -> ReviewPage:
        """A page of items holding a matching pending proposal, oldest input first; each item
        shows all of its pending proposals. ``reviewer``: only the scopes they decide in."""
        f = self.for_reviewer(f or ReviewFilter(), reviewer)
        _check_filter(f)
        with self.ledger.read() as tx:
            keys = q.item_keys(tx, f, limit=limit, offset=offset)
            total = q.count_items(tx, f)
            items = self._build(tx, keys)
        return ReviewPage(items=items, total=total)

    def decided_by(self, reviewer: str, *, limit: int = 8) -> list[Proposal]:
        """``reviewer``'s own last decisions, newest first: what they just did, from the ledger, so
        it survives a reload (a message of the page would not)."""
        if not 1 <= limit <= 100:
            raise InvalidInputError(f"limit {limit}: give 1 to 100")
        with self.ledger.read() as tx:
            return q.decided_by(tx, reviewer, limit=limit)

    def second_looks(self, reviewer: str) -> int:
        """Corrections by other reviewers waiting in ``reviewer``'s queue: a correction waits for
        someone other than its author, so each reviewer is told how many are theirs to look at."""
        every = self.for_reviewer(ReviewFilter(kind="correction"), reviewer)
        with self.ledger.read() as tx:
            waiting = len(q.matching_proposal_ids(tx, every))
            if not waiting:
                return 0
            own = replace(every, proposer=f"person:{reviewer}")
            return waiting - len(q.matching_proposal_ids(tx, own))

    def item(self, key: str) -> ReviewItem:
        with self.ledger.read() as tx:
            found = self._build(tx, [key])
        if not found:
            raise NotFoundError(f"no pending review item {key}: it does not exist or was decided")
        return found[0]

    def count(self, f: ReviewFilter | None = None, *, reviewer: str | None = None) -> MatchCount:
        f = self.for_reviewer(f or ReviewFilter(), reviewer)
        _check_filter(f)
        with self.ledger.read() as tx:
            rows = q.matching_proposal_ids(tx, f)
        return _count(rows)

    # -- deciding ----------------------------------------------------------------------------------

    def approve_item(
        self, key: str, reviewer: AuthenticatedReviewer, comment: str | None, *, shown: Sequence[str]
    ) -> DecisionReport:
        """Approve the pending proposals of the item ``key`` (a raw log id), if they are still the
        ones the reviewer was shown (``shown``: ``ReviewItem.proposal_ids``). A value that joined the
        item since (another reviewer's correction, a newer input's suggestion) was never seen:
        ReviewSetChangedError, nothing decided."""
        return self.governance.approve_many(self._still_shown(key, shown), reviewer, comment)

    def reject_item(
        self, key: str, reviewer: AuthenticatedReviewer, comment: str, *, shown: Sequence[str]
    ) -> DecisionReport:
        """Reject the item's pending proposals, if they are still the ones shown (as ``approve_item``)."""
        return self.governance.reject_many(self._still_shown(key, shown), reviewer, comment)

    def approve_matching(
        self,
        f: ReviewFilter,
        reviewer: AuthenticatedReviewer,
        *,
        expected_items: int,
        fingerprint: str,
        comment: str | None = None,
    ) -> DecisionReport:
        """Approve every pending proposal matching ``f``, however many pages they fill.

        ``expected_items`` and ``fingerprint`` are what the reviewer was shown by
        ``count``: if the matching set changed since, nothing is decided. Each proposal then goes
        through governance's single approval, so one the reviewer may not decide is skipped and
        reported. Only the scopes the reviewer decides in match (count with the same ``reviewer``)."""
        rows = self._counted(f, reviewer, expected_items, fingerprint)
        # Exactly the proposals just checked: one arriving from now on waits for the next count.
        return self.governance.approve_many([pid for _, pid in rows], reviewer, comment)

    def reject_matching(
        self,
        f: ReviewFilter,
        reviewer: AuthenticatedReviewer,
        *,
        expected_items: int,
        fingerprint: str,
        comment: str,
    ) -> DecisionReport:
        """Reject every pending proposal matching ``f`` (a run of wrong values: a bad import's dates,
        a model's misreading), as ``approve_matching`` approves: the count the reviewer saw or
        nothing, each through governance's single rejection, with their comment saying why."""
        if not comment or not comment.strip():
            raise InvalidInputError("a rejection needs a comment saying why")
        rows = self._counted(f, reviewer, expected_items, fingerprint)
        return self.governance.reject_many([pid for _, pid in rows], reviewer, comment)

    def _counted(
        self, f: ReviewFilter, reviewer: AuthenticatedReviewer, expected_items: int, fingerprint: str
    ) -> Sequence[tuple[str, str]]:
        """The (item, proposal) pairs matching ``f`` in the reviewer's scopes, if they are still what
        the reviewer was shown (``expected_items``, ``fingerprint``); ReviewSetChangedError if not."""
        f = self.for_reviewer(f, reviewer.id)
        _check_filter(f)
        with self.ledger.read() as tx:
            rows = q.matching_proposal_ids(tx, f)
        now = _count(rows)
        # The fingerprint, not the count alone: a correction replacing a value inside an item, or one
        # item decided while another arrived, keeps the count and changes what would be decided.
        if now.items != expected_items or now.fingerprint != fingerprint:
            raise ReviewSetChangedError(
                f"the matching items changed since they were counted ({expected_items} then, "
                f"{now.items} items / {now.proposals} proposals now): nothing was decided; count again"
            )
        return rows

    def _still_shown(self, key: str, shown: Sequence[str]) -> list[str]:
        """The item's pending proposal ids, if they are exactly ``shown``."""
        with self.ledger.read() as tx:
            ids = [p.id for p in q.pending_in_items(tx, [key])]
        if not ids:
            raise NotFoundError(f"no pending review item or proposal {key}: it does not exist or was decided")
        if set(ids) != set(shown):
            joined, gone = len(set(ids) - set(shown)), len(set(shown) - set(ids))
            raise ReviewSetChangedError(
                f"item {key} changed since it was shown ({len(shown)} held values then, {len(ids)} now: "
                f"{joined} joined, {gone} decided or replaced): nothing was decided; look at it again"
            )
        return ids

    # -- building items ----------------------------------------------------------------------------

    def _build(self, tx: Any, keys: Sequence[str]) -> list[ReviewItem]:
        pending = q.pending_in_items(tx, keys)
        if not pending:
            return []
        notes = {n.id: n for n in tx.get_notes(list(dict.fromkeys(p.note_id for p in pending)))}
        raw = {r.id: r for r in tx.get_raw_logs([k for k in keys])}
        corrected = {c.id: c for c in tx.get_proposals([p.corrects for p in pending if p.corrects])}
        retiring, notes_by_id = _later_notes(tx, pending, notes, corrected)
        edited = {
            p.note_id for p in pending if (n := notes.get(p.note_id)) is not None and edits_deleted(p, n)
        }
        deletions = note_deletions(tx, [notes[i] for i in sorted(edited)])
        freezes = policy_freezes(
            tx, self.governance.policy, [(p, notes[p.note_id]) for p in pending if p.note_id in notes]
        )
        older_raw = q.first_raw_logs(tx, list(notes_by_id.values()))
        by_key: dict[str, list[Proposal]] = {}
        for p in pending:
            by_key.setdefault(p.raw_log_ids[0] if p.raw_log_ids else p.id, []).append(p)
        items = []
        for key in keys:
            if key not in by_key:
                continue
            log = raw.get(key)
            fields = [
                self._field(
                    p,
                    notes.get(p.note_id),
                    log,
                    older_raw,
                    corrected.get(p.corrects or ""),
                    notes_by_id.get(retiring.get(p.id, "")),
                    deletions.get(p.note_id),
                    freezes.get(p.id),
                )
                for p in by_key[key]
            ]
            items.append(
                ReviewItem(
                    key=key,
                    scope=log.scope if log else (fields[0].proposal.scope or ""),
                    raw_log=log,
                    fields=fields,
                    pieces=_pieces(log.text, fields) if log else [],
                )
            )
        return items

    def _field(
        self,
        p: Proposal,
        note: Note | None,
        log: RawLog | None,
        first_raw: dict[str, RawLog],
        corrected: Proposal | None = None,
        retired_by: Note | None = None,
        deletion: NoteDeletion | None = None,
        freeze: PolicyFreeze | None = None,
    ) -> ReviewField:
        declared = self.policy.knows(p.attribute)
        attr_type = attribute_type(self.policy, p.attribute, p.new_value, p.old_value)
        if note is None:
            now = p.old_value
        elif declared:
            now = current_value(note, p.attribute, attr_type)
        else:  # a newer policy dropped the attribute: the value as stored, no type to put it in
            now = note.extra.get(p.attribute)
        span, located_by = None, None
        if log is not None:
            if p.evidence:
                span, located_by = locate(log.text, p.evidence), "evidence"
            if span is None:
                span = _locate_value(log.text, p.new_value, attr_type)
                located_by = "value" if span is not None else None
        older = None
        kind = _kind(p)
        if _retires_for_a_newer_fact(p, note, log) and note is not None and log is not None:
            said = first_raw.get(note.id)
            older = OlderFact(
                note_id=note.id,
                content=note.content,
                said_at=said.occurred_at if said else note.created_at,
                said_by=str(said.actor) if said else None,
            )
        newer = None
        if retired_by is not None and log is not None and note is not None and log.id in note.raw_log_ids:
            said = first_raw.get(retired_by.id)
            newer = NewerFact(
                note_id=retired_by.id,
                content=retired_by.content,
                said_at=said.occurred_at if said else retired_by.created_at,
                said_by=str(said.actor) if said else None,
                span=locate(retired_by.content, p.evidence) if p.evidence and span is None else None,
            )
        return ReviewField(
            proposal=p,
            kind=kind,
            note_content=note.content if note else None,
            current_value=now,
            current_words=value_words(now, attr_type),
            proposed_words=value_words(p.new_value, attr_type),
            stale=now != p.old_value,
            located_by=located_by,
            span=span,
            older=older,
            newer=newer,
            value_type=attr_type,
            correctable=declared and p.attribute not in UNCORRECTABLE,
            corrected=None
            if corrected is None
            else CorrectedValue(
                proposal_id=corrected.id,
                proposed_words=value_words(corrected.new_value, attr_type),
                proposer=f"{corrected.proposer.kind.value}:{corrected.proposer.id}",
                corrected_by=corrected.reviewer,
            ),
            note_deleted=deletion if note is not None and edits_deleted(p, note) else None,
            policy_frozen=freeze,
        )


def contested_words(evidence: str | None, reason: str, own_text: str) -> str:
    """What a newer note says against a fact whose retirement waits for review, as a contested
    fact is shown: the newer note's words (the evidence; for a record said before that note but
    analysed after it, a late import or a retry, too). A retirement of such a record recorded
    before drafting cited the newer note's words has the record's own sentence as its evidence
    (or one whose model gave none): then the reason, which names the newer note and its value, since
    quoting the record's words as the newer note's would say the opposite of what happened."""
    said = " ".join((evidence or "").split())
    if said and not _within(said, own_text):
        return f'a newer note says otherwise: "{said}"'
    if found := _RETIRED_BY.search(reason):
        why = reason[found.end() :].lstrip(": ").strip()
        return f"a newer note ({found['note_id']}) says otherwise" + (f": {why}" if why else "")
    return "a newer note says otherwise" + (f": {reason.strip()}" if reason.strip() else "")


def _within(span: str, text: str) -> bool:
    """Whether ``span`` occurs in ``text``, ignoring case and runs of whitespace."""
    return " ".join(span.split()).casefold() in " ".join(text.split()).casefold()


def attribute_type(policy: Policy, attribute: str, *values: Any) -> AttributeType:
    """The type ``attribute``'s values read as: the policy's, or for one it no longer declares,
    the shape of the first of ``values`` given."""
    return policy.type_of(attribute) if policy.knows(attribute) else _shape_of(*values)


def proposal_words(policy: Policy, p: Proposal) -> str:
    """``p``'s proposed value in the words its review card used (a date as a date, a list one item
    a line), wherever a decision is shown again after it was made."""
    return value_words(p.new_value, attribute_type(policy, p.attribute, p.new_value, p.old_value))


def _shape_of(*values: Any) -> AttributeType:
    """The type a value of an attribute the policy no longer declares reads as, from the first value
    given (a list of words, a flag, a number): the queue still shows it, and approving rejects it."""
    for value in values:
        if isinstance(value, list):
            return "list[str]"
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int | float):
            return "number"
        if value is not None:
            return "text"
    return "text"


def _retires_for_a_newer_fact(p: Proposal, note: Note | None, log: RawLog | None) -> bool:
    """Whether ``p`` ends ``note`` because of what another input (``log``) says, so the queue
    shows the older fact beside that newer one: a retirement date, first-hand or a reviewer's
    correction of it. Not a revert (it puts an earlier date back), not a value that brings a
    retired fact back (no date at all), and not a person's edit without an input behind it: those
    read as the note's current and proposed dates."""
    return (
        p.attribute == "invalid_at"
        and p.revert_of is None
        and p.new_value is not None
        and note is not None
        and log is not None
        and log.id not in note.raw_log_ids
    )


def _later_notes(
    tx: Any, pending: Sequence[Proposal], notes: dict[str, Note], corrected: dict[str, Proposal]
) -> tuple[dict[str, str], dict[str, Note]]:
    """For each pending retirement of a record by a note said after it (``_retires_its_own``), that
    note's id, by proposal id; and ``notes`` with those notes added. The newer note is found from
    data: drafting cites its raw log among the proposal's sources, after the record's own (a
    reviewer's correction carries the sources of the proposal it corrects), and it is the note made
    from that raw log (its first). A proposal recorded before amem cited it names the note only in
    its reason, which is read then (``_RETIRED_BY``; also where the raw log's note cannot be told):
    history is never rewritten."""
    own = [(p, n) for p in pending if (n := notes.get(p.note_id)) is not None and _retires_its_own(p, n)]
    cited: dict[str, str] = {}  # proposal id -> the newer raw log it cites
    for p, note in own:
        later = [r for r in p.raw_log_ids[1:] if r not in note.raw_log_ids]
        if later:
            cited[p.id] = later[0]
    made: dict[str, str] = {}  # raw log id -> the note made from it
    for raw_log_id in dict.fromkeys(cited.values()):
        state = tx.raw_log_state(raw_log_id)
        if state is not None and state["note_id"]:
            made[raw_log_id] = str(state["note_id"])
    notes_by_id = {**notes, **_read(tx, made.values(), notes)}
    retiring: dict[str, str] = {}
    for pid, raw_log_id in cited.items():
        newer = notes_by_id.get(made.get(raw_log_id, ""))
        # the note whose first raw log it is (its creation, which verify checks, says so)
        if newer is not None and newer.raw_log_ids[:1] == [raw_log_id]:
            retiring[pid] = newer.id
    named = {
        p.id: found
        for p, note in own
        if p.id not in retiring and (found := _named_in_reason(p, note, corrected.get(p.corrects or "")))
    }
    notes_by_id |= _read(tx, named.values(), notes_by_id)
    retiring |= named
    return retiring, notes_by_id


def _read(tx: Any, note_ids: Iterable[str], known: dict[str, Note]) -> dict[str, Note]:
    """The notes of ``note_ids`` not in ``known``, by id."""
    return {n.id: n for n in tx.get_notes([i for i in dict.fromkeys(note_ids) if i not in known])}


def _retires_its_own(p: Proposal, note: Note) -> bool:
    """Whether ``p`` retires ``note`` for a note said later, proposed by the note's own input (a
    record said before that note but analysed after it: a late import, a retry), so the queue shows
    the newer fact beside the record. Another input's retirement shows the older fact beside it
    (``_retires_for_a_newer_fact``)."""
    if p.attribute != "invalid_at" or p.revert_of is not None or p.new_value is None:
        return False
    return bool(p.raw_log_ids) and p.raw_log_ids[0] in note.raw_log_ids


def _named_in_reason(p: Proposal, note: Note, corrected: Proposal | None) -> str | None:
    """The newer note a retirement recorded before its sources cited it names in its reason
    ("contradicted by newer note n_…"); a reviewer's correction keeps the reason of the proposal it
    corrects."""
    for reason in (p.reason, corrected.reason if corrected is not None else ""):
        found = _RETIRED_BY.search(reason)
        if found is not None and found["note_id"] != note.id:
            return found["note_id"]
    return None


def _kind(p: Proposal) -> ReviewKind:
    """The kind the queue's Kind filter files ``p`` under (one per proposal)."""
    return q.kind_of(p.attribute, corrects=p.corrects, revert_of=p.revert_of, new_value=p.new_value)


def _check_filter(f: ReviewFilter) -> None:
    if f.kind is not None and f.kind not in REVIEW_KINDS:
        raise InvalidInputError(f"kind {f.kind!r}: expected one of {', '.join(REVIEW_KINDS)}")


def _count(rows: Sequence[tuple[str, str]]) -> MatchCount:
    digest = hashlib.sha256("\n".join(sorted(pid for _, pid in rows)).encode("utf-8")).hexdigest()
    return MatchCount(items=len({key for key, _ in rows}), proposals=len(rows), fingerprint=digest[:16])


# -- locating evidence ---------------------------------------------------------------------------


def locate(text: str, needle: str) -> tuple[int, int] | None:
    """Where ``needle`` occurs in ``text``: exactly, else ignoring case and runs of whitespace."""
    needle = needle.strip()
    if not needle:
        return None
    at = text.find(needle)
    if at >= 0:
        return at, at + len(needle)
    pattern = r"\s+".join(re.escape(word) for word in needle.split())
    match = re.search(pattern, text, flags=re.IGNORECASE)
    return (match.start(), match.end()) if match else None


def _locate_value(text: str, value: Any, attr_type: str) -> tuple[int, int] | None:
    """The proposed value's own words in the raw log, for a proposal that gave no evidence."""
    candidates: list[str] = []
    if attr_type == "text" and isinstance(value, str):
        candidates = [value]
    elif attr_type == "list[str]" and isinstance(value, list):
        candidates = [v for v in value if isinstance(v, str)]
    for candidate in candidates:
        if len(candidate.strip()) >= MIN_VALUE_CHARS:
            span = locate(text, candidate)
            if span is not None:
                return span
    return None


def _pieces(text: str, fields: Sequence[ReviewField]) -> list[TextPiece]:
    """``text`` cut where the fields' spans start and end; each piece names the attributes whose
    evidence covers it (spans may overlap)."""
    spans = [(f.span, f.attribute) for f in fields if f.span is not None]
    cuts = sorted({0, len(text), *(s for (s, _), _ in spans), *(e for (_, e), _ in spans)})
    pieces = []
    for start, end in itertools.pairwise(cuts):
        if start >= end:
            continue
        names = list(dict.fromkeys(a for (s, e), a in spans if s <= start and end <= e))
        pieces.append(TextPiece(text=text[start:end], attributes=names))
    return pieces


# -- values in words -----------------------------------------------------------------------------


def value_words(value: Any, attr_type: str) -> str:
    """A value as a reviewer reads it: dates as dates, lists one item a line, never JSON."""
    if value is None or value == "" or value == []:
        return "(none)"
    if attr_type == "datetime":
        try:
            return date_words(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
        except ValueError:
            return str(value)
    if attr_type == "bool" or isinstance(value, bool):
        return "yes" if value else "no"
    if attr_type == "links" and isinstance(value, list):
        return "\n".join(
            f"→ {x.get('note_id')}" + (f" ({x['reason']})" if x.get("reason") else "")
            for x in value
            if isinstance(x, dict)
        )
    if isinstance(value, list):
        return "\n".join(f"• {x}" for x in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


def date_words(moment: datetime) -> str:
    """``1 March 2026`` at midnight UTC, else ``1 March 2026, 09:30 UTC``."""
    moment = as_utc(moment)
    day = f"{moment.day} {moment:%B %Y}"
    if (moment.hour, moment.minute, moment.second) == (0, 0, 0):
        return day
    return f"{day}, {moment:%H:%M} UTC"
