"""Erasure on a data subject's request: the one exception to "a raw log is never changed".

``erase`` replaces, with the marker ``[erased]``, the text of the raw logs chosen (one, a scope's or
an actor's), every value derived from them (the notes they made, replayed from their redacted
changes; values their model calls proposed on other notes, and the same values where later rows
quote them as old values), the proposals' reasons, reviewers' comments on decisions about those
values, and the model answers about them: their own calls' answers whole, and in a later note's
link step the entries that answered about an erased note as a neighbour (its evolved context, tags,
the reason for a link to it). What a later link step wrote about an erased note in its own words,
on another note, goes too when it holds a word only the erased inputs held (``erased_words``): the
value, its answer's entry, a proposal's reason or evidence (the proposal withdrawn if pending) and a
reviewer's comment written since that quotes such a word. A proposal made from the erased inputs
by no model call (a reviewer's correction, which carries the corrected proposal's raw logs and
evidence) is reached as theirs. Of a kept note's list (tags, keywords) only the items the erased
inputs added or that quote such a word go: its other tags, and the rules they bring, stay. An
earlier erasure's own record (its tombstones' reasons) stays. It records who erased what and why as
an ``erasures`` row, an ``erased_rows`` entry per redacted row (its event digest before and after,
and each field's, so verify can hold every field an erasure never changes to what it was; for a
change, its values' original digests and those of the values left; for a reviewer's comment, its
decision's) and an
``erasure`` event, all in one transaction, so `verify` still proves the chain: it commits to
digests, not to payloads.
The vector index is rebuilt afterwards and the databases compacted by the caller
(``Memory.erase``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic import BaseModel, computed_field

from amem.domain.hashing import (
    REDACTED,
    erased_change_detail,
    erased_row_detail,
    erased_rows_digest,
    payload_digest,
    value_digest,
)
from amem.domain.models import (
    CORE_TYPES,
    ERASURE_RULE,
    Actor,
    ActorKind,
    Note,
    ProposalStatus,
    Proposer,
    new_id,
    same_scope,
    scope_as_kept,
    scope_folded,
    utcnow,
)
from amem.domain.replay import replay
from amem.domain.values import current_value, normalize
from amem.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from amem.ledger import erasure_queries as q
from amem.ledger.audit_queries import incoming_links
from amem.ledger.store import Ledger, LedgerTx
from amem.llm import construct_note, link_evolve
from amem.llm.factory import OFFLINE
from amem.llm.json_answer import InvalidAnswer, extract_json
from amem.policy import Policy
from amem.services import backup, erased_words, restore
from amem.services.drafting import Answers, Snapshot, draft
from amem.services.governance import Draft, Governance

#: Attribute types whose values hold words (times, numbers and flags hold none).
_TEXTUAL = ("text", "list[str]", "links")
#: A note's id as new_id writes it: how a model's answer names the neighbours it answers about.
_NOTE_ID = re.compile(r"\bn_[0-9a-f]{16}\b")


class EarlierErasure(BaseModel):
    """An earlier erasure that had already erased some of the raw logs a request chose."""

    erasure_id: str
    erased_by: str
    erased_at: datetime
    raw_logs: int


class ErasureReport(BaseModel):
    """What one erasure redacted: each count is of rows it changed, never of rows an earlier
    erasure had left as they are now."""

    erasure_id: str
    erased_by: str
    reason: str
    # The scopes of the raw logs chosen: a scope's erasure reaches every spelling of it, whatever
    # its case ("Acme" from a CRM import and an agent's "acme"), and says each.
    scopes: list[str] = []
    raw_logs: int
    # Notes whose values or history the erasure changed (an erased note, or a kept one that held
    # or had held an erased value): a note erased before and left as it was is not counted.
    notes: int
    proposals: int
    changes: int
    llm_calls: int
    # PostgreSQL sessions that still held a snapshot from before the erasure when the files were
    # compacted: until they end and the next VACUUM FULL, old row versions keep the erased bytes.
    older_sessions_open: int = 0
    # PostgreSQL replication slots whose xmin was from before the erasure when the files were
    # compacted (a standby's hot_standby_feedback, kept while that standby is down): until the slot
    # moves past it or is dropped, and the next VACUUM FULL, old row versions keep the erased bytes.
    replication_slots_holding: list[str] = []
    # PostgreSQL tables VACUUM FULL could not lock within the wait (another session held a lock on
    # them, such as one idle in a transaction that read them): not compacted, so their old row
    # versions keep the erased bytes until the next VACUUM FULL of each.
    tables_not_compacted: list[str] = []
    # Vector index segments whose files' unused capacity could not be cleared (a file layout the
    # code does not know): those files may still hold stale bytes of the erased inputs.
    index_segments_unchecked: int = 0
    # Pending proposals made from the erased inputs, or whose proposed value the erasure redacted:
    # withdrawn (superseded), so no reviewer is asked to apply "[erased]" or a value whose evidence
    # is gone.
    proposals_withdrawn: int = 0
    # Erased notes marked deleted (a change by the eraser): hidden from search, neighbours and facts.
    notes_deleted: int = 0
    # Reviewers' comments on decisions about the erased values (they may quote them), or quoting a
    # word only the erased inputs held: redacted.
    review_comments: int = 0
    # Values made since, on notes that stay, holding a word only the erased inputs held (a name, a
    # long number, an address: ``erased_words``): a later model call wrote what it read of an
    # erased neighbour. Erased as well, wherever they appear.
    values_quoting: int = 0
    # Proposals made since, on notes that stay, whose reason or evidence held such a word (a person's
    # edit "per Mrs X on the call"): those fields redacted, and the proposal withdrawn if pending.
    reasons_quoting: int = 0
    # Values of notes that stay that the erasure redacted in place (a value quoting the erased
    # inputs, a link's reason about an erased note): each recorded as a change by the eraser, so a
    # poller of the change feed learns the value the note holds now (an erased note's deletion
    # tells it that note is gone).
    values_redacted: int = 0
    # Values of kept inputs that restated an erased note: drafting had proposed them on that note
    # (when the fact took effect and why), or left them out as already stated there. Proposed again
    # on the kept input's own note from its recorded answer, routed by the policy.
    restated_values_proposed: int = 0
    # Raw logs chosen that an earlier erasure had already erased (not in ``raw_logs``), and the
    # erasures that did, oldest first: a second request for the same data subject finds them done.
    already_erased: int = 0
    earlier_erasures: list[EarlierErasure] = []
    # Whole copies of the ledger that restores and backups killed midway left, which hold what was
    # erased and which no erasure reaches into: restores' temporary copies and backups' partial files
    # beside a SQLite ledger, backups' scratch databases on a PostgreSQL ledger's server. Removed,
    # each said with what left it; and those left because a restore or backup running now uses them
    # (it removes its own when it ends), or that could not be looked at, each said why.
    copies_removed: list[str] = []
    copies_left: list[str] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def nothing_redacted(self) -> bool:
        """Whether the erasure found nothing left to redact (every raw log chosen erased before, and
        nothing derived from them left): it is recorded all the same, as the request it was."""
        return not any(
            (
                self.raw_logs,
                self.notes,
                self.proposals,
                self.changes,
                self.llm_calls,
                self.review_comments,
                self.proposals_withdrawn,
                self.notes_deleted,
                self.values_redacted,
                self.restated_values_proposed,
            )
        )


def _redacted(attr_type: str, value: Any) -> Any:
    """``value`` with its text replaced; times, numbers and flags carry no text and stay."""
    if value is None:
        return None
    if attr_type == "text":
        return REDACTED
    if attr_type == "list[str]":
        return [REDACTED] if value else []
    if attr_type == "links":
        return [{"note_id": link.get("note_id"), "reason": REDACTED} for link in value]
    return value


def _items_redacted(items: list[Any], derived: AbstractSet[str], marks: set[str]) -> list[Any]:
    """A kept note's list (tags, keywords) with only the items the erased inputs added
    (``derived``) or that quote one of ``marks`` replaced by the marker, once: its other items, its
    ``contract`` tag and the review the policy's rules give it, are no one's erased words."""
    out: list[Any] = []
    for item in items:
        if (isinstance(item, str) and item in derived) or erased_words.quotes(item, marks):
            if REDACTED in out:
                continue
            item = REDACTED
        out.append(item)
    return out


def check_may_erase(policy: Policy, by: str) -> None:
    if not policy.may_erase(by):
        roles = ", ".join(policy.roles_of(by)) or "none"
        need = ", ".join(policy.erasers) or "no role: the policy names no erasers"
        raise PermissionDeniedError(f"{by} (roles: {roles}) may not erase; needs: {need}")


def check_reach(policy: Policy, by: str, chosen: str, scopes: Sequence[str], *, by_scope: bool) -> None:
    """Refuses an erasure that reaches raw logs of a scope ``by`` does not decide in
    (PermissionDeniedError): a lead limited to their accounts erases in those only, and a data
    subject's request is erased whole or not at all, so nothing is erased. ``scopes``: those of
    the raw logs chosen (for a scope's erasure, every spelling of it, whatever its case). The
    message names the scopes outside theirs and who may erase them all."""
    outside = [s for s in scopes if not policy.decides_in(by, s)]
    if not outside:
        return
    mine = policy.scopes_of(by) or ()
    where = (
        f"decides in {', '.join(mine)} only" if mine else "decides in no account (the policy gives them none)"
    )
    spelled = ""
    if by_scope and len(scopes) > 1:
        spelled = (
            f" (the request reaches {', '.join(scopes)}: one account whatever its case, "
            "erased whole or not at all)"
        )
    can = [
        who
        for who in sorted(policy.reviewers)
        if policy.may_erase(who) and all(policy.decides_in(who, s) for s in scopes)
    ]
    ask = (
        f"ask {', '.join(can)} (who may erase in all of them) to erase it"
        if can
        else "no reviewer of the policy may erase in all of them: a policy admin must give an eraser "
        "those accounts (reviewers.yaml scopes)"
    )
    raise PermissionDeniedError(
        f"{by} {where}: {chosen!r} reaches raw logs of {', '.join(outside)}{spelled}; "
        f"nothing was erased; {ask}"
    )


class ErasurePlan(BaseModel):
    """What an erasure with one selector would take, read before it is done (``plan``): what
    `amem erase` says and asks to confirm, once the eraser was found to be allowed all of it."""

    # Raw logs chosen that no earlier erasure erased.
    raw_logs: int
    # The scopes of the raw logs chosen (erased before or not): every spelling a scope's erasure
    # reaches, whatever its case.
    scopes: list[str] = []


def plan(
    ledger: Ledger,
    policy: Policy,
    *,
    by: str,
    raw_log_id: str | None = None,
    scope: str | None = None,
    actor: str | None = None,
) -> ErasurePlan:
    """What ``erase`` with the same selector would take, after the checks it makes of ``by`` (may
    they erase, and in every scope it reaches: ``check_may_erase``, ``check_reach``), so that
    whoever would be refused is refused before any question is asked. One read; ``erase`` checks
    again as it erases."""
    chosen = [x for x in (raw_log_id, scope, actor) if x is not None]
    if len(chosen) != 1:
        raise InvalidInputError("name exactly one of a raw log, a scope or an actor to erase")
    check_may_erase(policy, by)
    with ledger.read() as tx:
        ids = q.raw_log_ids(tx, raw_log_id=raw_log_id, scope=scope, actor=actor)
        scopes = q.scopes_of(tx, ids)
        check_reach(policy, by, chosen[0], scopes, by_scope=scope is not None)
        left = len(ids) - len(q.erased_before(tx, ids))
    return ErasurePlan(raw_logs=left, scopes=scopes)


def erase(
    ledger: Ledger,
    policy: Policy,
    *,
    by: str,
    reason: str,
    raw_log_id: str | None = None,
    scope: str | None = None,
    actor: str | None = None,
    governance: Governance | None = None,
) -> ErasureReport:
    """Erase the raw logs chosen by exactly one of ``raw_log_id``, ``scope``, ``actor``, and all derived.
    With ``governance``, the erased notes are also marked deleted, as the eraser
    (``Governance.tombstone_in``).

    ``by``: the canonical identity of an authenticated reviewer (``Memory.erase`` takes the
    AuthenticatedReviewer and checks it as governance checks a decision); here, whether their roles
    may erase, and in which scopes: with ``governance``, under the ledger's installed policy as it is
    in the erasure's transaction (PolicyMismatchError when another process installed a newer one)."""
    chosen = [x for x in (raw_log_id, scope, actor) if x is not None]
    if len(chosen) != 1:
        raise InvalidInputError("name exactly one of a raw log, a scope or an actor to erase")
    if not reason or not reason.strip():
        raise InvalidInputError("an erasure needs a reason (the data subject's request)")
    check_may_erase(policy, by)

    now = utcnow()
    erasure_id = new_id("e")
    with ledger.write(head_first=True) as tx:  # no input is acknowledged meanwhile
        if governance is not None:
            # as a decision is: under the ledger's policy as it is now, not the one this process
            # opened with (another process may have installed one that takes the right away)
            governance._check_policy_in_force(tx)
            policy = governance.policy
            check_may_erase(policy, by)
        type_of = {**CORE_TYPES, **{n: a.type for n, a in policy.attributes.items() if a.type}}
        ids = q.raw_log_ids(tx, raw_log_id=raw_log_id, scope=scope, actor=actor)
        if not ids:
            raise NotFoundError(f"no raw log matches {chosen[0]!r}")
        raw = q.rows(tx, "raw_logs", "id", ids)
        # checked again here, though `amem erase` asked ``plan`` before its prompt: the policy or
        # the raw logs may have changed since
        check_reach(policy, by, chosen[0], sorted({r["scope"] for r in raw}), by_scope=scope is not None)
        # erased by an earlier erasure: nothing of them is left to redact, and they are not counted
        erased_earlier = q.erased_before(tx, ids)
        calls = q.rows(tx, "llm_calls", "raw_log_id", ids)
        erased_ids = set(ids)
        scopes = sorted({r["scope"] for r in raw})
        since = min(r["received_at"] for r in raw)
        erased_notes = set(q.notes_of_raw_logs(tx, ids, scopes))
        reached = q.proposals_reached(tx, sorted(erased_notes), [c["id"] for c in calls], ids, scopes, since)
        # the values the erased raw logs produced, per (note, attribute): wherever they appear, they go
        gone: dict[tuple[str, str], set[str]] = defaultdict(set)
        # of a list they proposed for a note that stays, the items they added: only those go
        added: dict[tuple[str, str], set[str]] = defaultdict(set)
        for p in reached:
            gone[(p["note_id"], p["attribute"])].add(value_digest(p["new_value"]))
            if type_of.get(p["attribute"]) == "list[str]" and isinstance(p["new_value"], list):
                before = set(p["old_value"]) if isinstance(p["old_value"], list) else set()
                added[(p["note_id"], p["attribute"])] |= {x for x in p["new_value"] if x not in before}
        # links other notes made to an erased note give a reason that may quote it
        linking = {
            x["note_id"]
            for n in tx.get_notes(sorted(erased_notes))
            for x in incoming_links(tx, n.id, n.scope)
        }
        # later values in the erased inputs' words: a model that saw an erased note as a neighbour
        # may have written what it read into another note (erased_words)
        marks = _marks(tx, raw, scopes)
        quoting, commented = 0, set()
        # proposals on kept notes whose reason or evidence quotes such a word, and which of the two:
        # beside a value erased for quoting it, or on its own ("Mrs X confirmed it on the call")
        explained: dict[str, set[str]] = {}
        for p in q.values_since(tx, scopes, since, link_evolve.TASK) if marks else ():
            if p["note_id"] in erased_notes:
                continue  # reached: its value, reason and evidence all go
            key = (p["note_id"], p["attribute"])
            textual = type_of.get(p["attribute"], "text") in _TEXTUAL
            if textual and erased_words.quotes(p["new_value"], marks):
                digest = value_digest(p["new_value"])
                quoting += digest not in gone[key]
                gone[key].add(digest)
            said = {f for f in ("reason", "evidence") if erased_words.quotes(p[f], marks)}
            if said:
                explained[p["id"]] = said
                gone.setdefault(key, set())
        for p in q.comments_since(tx, scopes, since) if marks else ():
            if erased_words.quotes(p["review_comment"], marks):
                commented.add(p["id"])
                gone.setdefault((p["note_id"], p["attribute"]), set())
        pairs = set(gone) | {(n, a) for n in erased_notes for a in type_of} | {(n, "links") for n in linking}

        def scrub(row: dict[str, Any], field: str) -> Any:
            value = row[field]
            key = (row["note_id"], row["attribute"])
            attr_type = type_of.get(row["attribute"], "text")
            if row["note_id"] in erased_notes:
                return _redacted(attr_type, value)
            if value_digest(value) in gone[key]:
                if attr_type == "list[str]" and isinstance(value, list):
                    return _items_redacted(value, added[key], marks)
                return _redacted(attr_type, value)
            if row["attribute"] == "links" and value:
                return [
                    {**link, "reason": REDACTED} if link.get("note_id") in erased_notes else link
                    for link in value
                ]
            return value

        reached_ids = {p["id"] for p in reached}
        reasons_quoting = 0
        proposal_updates, proposal_entries, decision_entries, withdrawn = [], [], [], []
        for p in q.pair_rows(tx, "proposals", pairs):
            after = {**p, "old_value": scrub(p, "old_value"), "new_value": scrub(p, "new_value")}
            own_words = p["rule"] == ERASURE_RULE  # an earlier erasure's tombstone: its record stays
            if p["id"] in reached_ids and not own_words:
                after["reason"] = REDACTED
                # the evidence is a span of the erased raw log itself
                after["evidence"] = REDACTED if p["evidence"] is not None else None
            elif not own_words and p["id"] in explained:
                after |= dict.fromkeys(explained[p["id"]], REDACTED)
                reasons_quoting += 1
            derived = p["id"] in reached_ids or after["new_value"] != p["new_value"]
            reviewed = p["reviewer"] is not None and bool(p["review_comment"]) and not own_words
            if (derived and reviewed) or p["id"] in commented:
                # a reviewer deciding on the erased input's value may have quoted it
                after["review_comment"] = REDACTED
            if after == p:
                continue
            proposal_updates.append(
                {
                    "id": p["id"],
                    "old_value": after["old_value"],
                    "new_value": after["new_value"],
                    "reason": after["reason"],
                    "evidence": after["evidence"],
                    "review_comment": after["review_comment"],
                }
            )
            if payload_digest("proposal", after) != payload_digest("proposal", p):
                proposal_entries.append(_entry(erasure_id, "proposals", p["id"], "proposal", p, after))
            if after["review_comment"] != p["review_comment"]:
                # the decision's event committed to the comment: its digests go where verify looks
                decision_entries.append(_entry(erasure_id, "decisions", p["id"], "decision", p, after))
            if p["status"] == ProposalStatus.PENDING.value and (
                p["id"] in reached_ids or any(after[f] != p[f] for f in ("new_value", "reason", "evidence"))
            ):
                # what it proposes, why, or the input behind it, is gone: no reviewer can check it
                withdrawn.append(p["id"])

        change_rows = q.pair_rows(tx, "changes", pairs)
        originals = q.earlier_entries(tx, "changes", [str(c["seq"]) for c in change_rows])
        change_updates, change_entries, redacted_changes = [], [], {}
        for c in change_rows:
            after = {**c, "old_value": scrub(c, "old_value"), "new_value": scrub(c, "new_value")}
            if after == c:
                continue
            key = str(c["seq"])
            # the values it was written with (its hash covers them; a change erased before keeps its
            # first erasure's), and those left now, which verify holds the row to
            original = (originals.get(key) or {}).get("detail") or {
                "old_value_sha256": value_digest(c["old_value"]),
                "new_value_sha256": value_digest(c["new_value"]),
            }
            detail = erased_change_detail(original, after["old_value"], after["new_value"])
            change_updates.append(
                {"seq": c["seq"], "old_value": after["old_value"], "new_value": after["new_value"]}
            )
            change_entries.append(
                {
                    "erasure_id": erasure_id,
                    "table_name": "changes",
                    "row_key": key,
                    "digest_before": None,
                    "digest_after": None,
                    "detail": detail,
                }
            )
            redacted_changes[c["seq"]] = after

        raw_updates, raw_entries = [], []
        for r in raw:
            after = {**r, "text": REDACTED, "metadata": {}}
            if after == r:
                continue  # erased before: nothing left to redact, nothing to record again
            raw_updates.append({"id": r["id"], "text": REDACTED, "metadata": {}})
            raw_entries.append(_entry(erasure_id, "raw_logs", r["id"], "raw_log", r, after))
        call_updates, call_entries = [], []
        own = {c["id"] for c in calls}
        # a construction saw only its own raw log: a mark in its answer is the model's own word
        shown: dict[str, set[str]] = {}
        naming = []
        restating: dict[str, set[str]] = defaultdict(set)  # kept input -> erased notes it restated
        for c in q.answered_calls(tx, scopes, since):
            names = _names(c["response_text"], erased_notes)
            if names and c["task"] == link_evolve.TASK and c["raw_log_id"] not in erased_ids:
                said = _restates(c["response_text"])
                if said in erased_notes:
                    restating[c["raw_log_id"]].add(said)
            quoted = marks if c["task"] == link_evolve.TASK else set()
            if c["id"] not in own and (names or erased_words.quotes(c["response_text"], quoted)):
                naming.append(c)
                shown[c["id"]] = quoted
        for c in [*calls, *naming]:
            if c["id"] in own:  # why a call of an erased input failed can quote its answer too
                text = REDACTED if c["response_text"] is not None else None
                error = REDACTED if c["error"] is not None else None
            else:
                text, error = (
                    answer_without(c["response_text"], erased_notes, shown.get(c["id"], set())),
                    c["error"],
                )
            if text == c["response_text"] and error == c["error"]:
                continue
            after = {**c, "response_text": text, "error": error}
            call_updates.append({"id": c["id"], "response_text": text, "error": error})
            answers = _answers(c["response_text"], text)
            call_entries.append(_entry(erasure_id, "llm_calls", c["id"], "llm_call", c, after, answers))

        # what reviewers turned down on the erased notes a kept input restated: read before the
        # redaction below replaces those values, so that no redrafted value asks for one again
        turned_down = _turned_down(tx, set().union(*restating.values()))
        entries = raw_entries + call_entries + proposal_entries + decision_entries + change_entries
        erasure = {
            "id": erasure_id,
            "reason": reason.strip(),
            "erased_by": by,
            "erased_at": now,
            # and the scopes it reached: a scope named is every spelling of it, whatever its case
            "selector": {"raw_log": raw_log_id, "scope": scope, "actor": actor, "scopes": scopes},
            "rows_sha256": erased_rows_digest(entries),
        }
        q.record(tx, erasure, entries)
        q.redact(tx, "raw_logs", "id", raw_updates)
        q.redact(tx, "llm_calls", "id", call_updates)
        q.redact(tx, "proposals", "id", proposal_updates)
        q.redact(tx, "changes", "seq", change_updates)
        q.mark_erased(tx, ids, now)
        why = (
            f"withdrawn by erasure {erasure_id}: the input behind it, the value it proposed or its reason,"
            " was erased"
        )
        q.withdraw(tx, withdrawn, why, now)
        # each note touched is its redacted changes replayed: verify's replay check still holds
        redacted_notes = {c["note_id"] for c in redacted_changes.values()}
        touched = sorted(redacted_notes | erased_notes)
        in_place: list[tuple[Note, list[str]]] = []  # kept notes as rebuilt, and which values changed
        for note in tx.get_notes(touched):
            history = [
                c.model_copy(update=_values(redacted_changes[c.seq])) if c.seq in redacted_changes else c
                for c in tx.changes_of_notes([note.id])
            ]
            rebuilt = replay(note, history)
            if rebuilt is not None:
                tx.save_note(rebuilt)
                changed = [a for a in type_of if _value(note, a, type_of) != _value(rebuilt, a, type_of)]
                if changed:  # an erased note an earlier erasure left as it is now is not counted
                    redacted_notes.add(note.id)
                if changed and note.id not in erased_notes:
                    in_place.append((rebuilt, changed))
        deleted = redacted_in_place = restated = 0
        if governance is not None:
            eraser = Actor(kind=ActorKind.PERSON, id=by)
            why = f"erasure {erasure_id}"
            # a kept note's value redacted in place is a change a poller of the feed must see
            redacted_in_place = governance.redactions_in(tx, in_place, by=eraser, reason=why)
            # the erased notes leave search, neighbours and facts
            deleted = governance.tombstone_in(tx, sorted(erased_notes), by=eraser, reason=why)
            # what kept inputs said of the fact an erased note held is theirs: on their own notes
            own_notes = q.notes_by_raw_log(tx, sorted(restating), scopes)
            drafts = [
                d
                for raw_log_id in sorted(restating)
                for note in tx.get_notes(own_notes.get(raw_log_id, []))
                if note.id not in erased_notes and not note.deleted
                for d in _restated_drafts(
                    tx, governance.policy, note, raw_log_id, restating[raw_log_id], marks, why, turned_down
                )
            ]
            restated = len(governance.propose_in(tx, drafts)) if drafts else 0
        # a note redacted in place had its vector embedded from the erased words: it goes too (a
        # rebuild would not reuse it, its digest no longer matching, but it would stay in the ledger)
        q.drop_vectors(tx, touched)
        tx.append_event("erasure", erasure_id, erasure, now)
        q.compact_fulltext(tx)
    return ErasureReport(
        erasure_id=erasure_id,
        erased_by=by,
        reason=reason.strip(),
        scopes=scopes,
        raw_logs=len(raw_updates),
        notes=len(redacted_notes),
        proposals=len(proposal_updates),
        changes=len(change_updates),
        llm_calls=len(call_updates),
        proposals_withdrawn=len(withdrawn),
        notes_deleted=deleted,
        review_comments=len(decision_entries),
        values_quoting=quoting,
        reasons_quoting=reasons_quoting,
        values_redacted=redacted_in_place,
        restated_values_proposed=restated,
        already_erased=len(erased_earlier),
        earlier_erasures=_earlier(erased_earlier),
        **_copies_left_by_killed(ledger),
    )


def _copies_left_by_killed(ledger: Ledger) -> dict[str, list[str]]:
    """Remove the whole copies of the ledger that restores and backups killed midway left where it
    lives (the erasure is committed by now): each holds the text just erased, and only the next
    restore or backup into the same place would have removed it. A SQLite ledger's directory holds
    restores' temporary copies and the partial files of backups written there; a PostgreSQL
    server, the scratch databases backups verify their dumps in. Those a running process holds are
    left and said; a place that cannot be looked at is said too, since the erasure is done."""
    removed: list[str] = []
    left: list[str] = []
    if ledger.dialect == "postgresql":
        try:
            removed += backup.stale_check_databases(ledger)
        except sa.exc.DBAPIError as exc:  # e.g. a role that may not list the server's databases
            left.append(f"backups' scratch databases on the ledger's server: not looked at ({exc.orig})")
        return {"copies_removed": removed, "copies_left": left}
    database = sa.make_url(ledger.url).database
    if database and database != ":memory:":
        directory = Path(database).expanduser().resolve().parent
        try:
            restores = restore.copies_of_stopped_restores(ledger.url)
            removed += restores.removed
            left += restores.left
            backups, running = backup.claims_in(directory, backup.PARTIAL, backup.STOPPED_BACKUP)
            removed += backups
            left += running
        except OSError as exc:  # a file another user owns, say: the erasure stands, the copy is said
            left.append(f"{directory}: not looked at for copies killed restores and backups left ({exc})")
    return {"copies_removed": removed, "copies_left": left}


def _earlier(erased_by_raw_log: dict[str, dict[str, Any]]) -> list[EarlierErasure]:
    """The erasures that had erased raw logs a request chose (raw log -> its erasure), oldest first."""
    by_erasure: dict[str, EarlierErasure] = {}
    for e in erased_by_raw_log.values():
        if (seen := by_erasure.get(e["erasure_id"])) is not None:
            seen.raw_logs += 1
        else:
            by_erasure[e["erasure_id"]] = EarlierErasure(**e, raw_logs=1)
    return sorted(by_erasure.values(), key=lambda e: (e.erased_at, e.erasure_id))


def matching(
    ledger: Ledger, *, raw_log_id: str | None = None, scope: str | None = None, actor: str | None = None
) -> int:
    """How many raw logs an erasure with these selectors would erase (what `amem erase` asks to
    confirm before erasing a scope's or an actor's): those an earlier erasure erased are not."""
    with ledger.read() as tx:
        ids = q.raw_log_ids(tx, raw_log_id=raw_log_id, scope=scope, actor=actor)
        return len(ids) - len(q.erased_before(tx, ids))


def scope_spellings(ledger: Ledger, names: Sequence[str]) -> dict[str, list[str]]:
    """Each of ``names`` with the scopes of raw logs it names whatever its case: what erasing it by
    scope reaches, for `amem erase` to say before it asks. One read."""
    with ledger.read() as tx:
        kept = q.kept_scopes(tx)
    return {name: same_scope(name, kept) for name in names}


def new_case_variants(ledger: Ledger, names: Sequence[str]) -> dict[str, list[str]]:
    """Of ``names`` (the scopes of inputs about to be recorded), each new one (no raw log kept under
    it) that equals another scope whatever its case, one kept or another of ``names``, with those
    spellings. It is kept as typed, an account of its own for search and facts, so whoever records
    it is told. One read of the scopes kept, however many inputs."""
    with ledger.read() as tx:
        kept = set(q.kept_scopes(tx))
    given = {scope_as_kept(n) for n in names}
    spellings: dict[str, list[str]] = defaultdict(list)  # one pass: a CRM export names thousands
    for spelled in sorted(kept | given):
        spellings[scope_folded(spelled)].append(spelled)
    out: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        spelled = scope_as_kept(name)
        if spelled in kept:
            continue
        others = [s for s in spellings[scope_folded(spelled)] if s != spelled]
        if others:
            out[name] = others
    return out


def answer_without(text: str, erased: AbstractSet[str], marks: AbstractSet[str] = frozenset()) -> str:
    """A model's answer with what it said about the erased notes taken out: each entry naming one
    (a link, an update of a neighbour, a contradiction), or quoting one of ``marks`` (words only the
    erased inputs held), keeps its note_id and loses its text; any other field quoting a mark loses
    its text. An answer that cannot be read as a JSON object is redacted whole, since where it names
    the note cannot be told."""
    try:
        data = extract_json(text)
    except InvalidAnswer:
        return REDACTED
    words = set(marks)
    for key, items in data.items():
        if isinstance(items, list):
            data[key] = [_entry_without(item, erased, words) for item in items]
        elif erased_words.quotes(items, words):
            data[key] = _text_redacted(items)
    return json.dumps(data, ensure_ascii=False)


def _entry_without(item: Any, erased: AbstractSet[str], marks: set[str]) -> Any:
    if isinstance(item, dict) and (item.get("note_id") in erased or erased_words.quotes(item, marks)):
        return {k: v if k == "note_id" else _text_redacted(v) for k, v in item.items()}
    return _text_redacted(item) if erased_words.quotes(item, marks) else item


def _marks(tx: Any, raw: list[dict[str, Any]], scopes: list[str]) -> set[str]:
    """The words that identify the erased texts and that no kept raw log of their scopes holds."""
    marks: set[str] = set().union(*(erased_words.marks_of(r["text"]) for r in raw))
    erased_ids = {r["id"] for r in raw}
    with closing(q.scope_texts(tx, scopes)) as texts:
        for raw_log_id, text in texts:
            if not marks:
                break
            if raw_log_id not in erased_ids and text != REDACTED:
                marks -= erased_words.held_by(marks, text)
    return marks


def _value(note: Note, attribute: str, type_of: dict[str, str]) -> Any:
    return current_value(note, attribute, type_of[attribute])


def _restates(text: str | None) -> str | None:
    """The note a link step's answer says its input only restates, if it says one."""
    try:
        said = extract_json(text).get("restates")
    except (InvalidAnswer, AttributeError):
        return None
    return said if isinstance(said, str) else None


def _restated_drafts(
    tx: LedgerTx,
    policy: Policy,
    note: Note,
    raw_log_id: str,
    restated: AbstractSet[str],
    marks: set[str],
    why: str,
    turned_down: AbstractSet[tuple[str, str, str]],
) -> list[Draft]:
    """The values a kept input that restated an erased note did not give its own note (``note``):
    drafting proposed when the fact took effect and why on the note it restated, and left out the
    held values that note carried or had pending (``drafting._construct_drafts``). That note gone,
    they are drafted again for the input's own note from its recorded construct answer, as drafting
    would have with nothing restated: the same model call, raw log and evidence span; the policy
    routes them (a value held for review waits for a reviewer again). Left out: an attribute the
    answer gave its own note, one waiting for review there, one a reviewer rejected on the erased
    note, and a value a reviewer rejected there whoever proposed it (``turned_down``: note,
    attribute, value digest, read before the erasure redacted them): drafting left this input's
    value out as the one pending there, so that reviewer's decision was on it too."""
    constructions = {
        c["id"]: c
        for c in q.rows(tx, "llm_calls", "raw_log_id", [raw_log_id])
        if c["task"] == construct_note.TASK and c["response_text"] is not None and c["error"] is None
    }
    proposals = tx.proposals_for_note(note.id)
    cited = [p for p in proposals if p.proposer.llm_call_id in constructions]
    if cited:  # the analysis that made the note
        call = constructions[cited[-1].proposer.llm_call_id or ""]
    elif constructions:
        call = max(constructions.values(), key=lambda c: c["created_at"])
    else:
        return []
    there = [p for p in q.rows(tx, "proposals", "llm_call_id", [call["id"]]) if p["note_id"] in restated]
    skip = {p.attribute for p in cited if p.proposer.llm_call_id == call["id"]}
    skip |= {p.attribute for p in proposals if p.status == ProposalStatus.PENDING}
    rejected = ProposalStatus.REJECTED.value
    skip |= {p["attribute"] for p in there if p["status"] == rejected and p["reviewer"] is not None}
    mine = [p.proposer for p in cited if p.proposer.llm_call_id == call["id"]]
    proposer = mine[0] if mine else _proposer_of(there[0] if there else None, call)
    try:
        answer = construct_note.parse_answer(call["response_text"], policy.declared_attributes())
    except InvalidAnswer:
        return []
    answers = Answers(
        construct=answer,
        link=link_evolve.LinkEvolveAnswer(),
        construct_by=proposer,
        link_by=proposer,
        checked=call["model"] != OFFLINE,
    )
    (raw,) = tx.get_raw_logs([raw_log_id])
    was = {p["attribute"]: p["id"] for p in there}
    gone = ", ".join(sorted(restated))
    out: list[Draft] = []
    for d in draft(note.id, raw, answers, Snapshot(), policy):
        if d.note_id != note.id or d.attribute in skip:
            continue
        if any((n, d.attribute, _digest(policy, d)) in turned_down for n in restated):
            continue
        if erased_words.quotes([d.new_value, d.reason, d.evidence], marks):
            continue  # a kept input's words hold no mark: checked all the same, so none comes back
        moved = f" (proposal {was[d.attribute]} there)" if d.attribute in was else ""
        reason = f"{d.reason}; {why}: the note it restated, {gone}, was erased{moved}"
        out.append(Draft(d.note_id, d.attribute, d.new_value, reason, d.proposer, d.raw_log_ids, d.evidence))
    return out


def _turned_down(tx: LedgerTx, notes: AbstractSet[str]) -> set[tuple[str, str, str]]:
    """The values a reviewer rejected on ``notes``: (note, attribute, value digest)."""
    rejected = ProposalStatus.REJECTED.value
    return {
        (p["note_id"], p["attribute"], value_digest(p["new_value"]))
        for p in (q.rows(tx, "proposals", "note_id", sorted(notes)) if notes else [])
        if p["status"] == rejected and p["reviewer"] is not None
    }


def _digest(policy: Policy, d: Draft) -> str | None:
    """A draft's value digest in the canonical form a proposal stores (``normalize``); None for a
    value that is not valid, which governance refuses as it would have."""
    try:
        return value_digest(normalize(d.attribute, policy.type_of(d.attribute), d.new_value))
    except InvalidInputError:
        return None


def _proposer_of(row: dict[str, Any] | None, call: dict[str, Any]) -> Proposer:
    """Who proposed a stored proposal (its model call's proposer), else the model call itself."""
    if row is not None:
        return Proposer(
            kind=ActorKind(row["proposer_kind"]),
            id=row["proposer_id"],
            model=row["model"],
            prompt_version=row["prompt_version"],
            usage=row["usage"],
            llm_call_id=row["llm_call_id"],
        )
    return Proposer(
        kind=ActorKind.LLM,
        id=call["model"],
        model=call["served_model"] or call["model"],
        prompt_version=call["prompt_version"],
        llm_call_id=call["id"],
    )


def _names(text: str, notes: AbstractSet[str]) -> bool:
    return not notes.isdisjoint(_NOTE_ID.findall(text))


def _text_redacted(value: Any) -> Any:
    if isinstance(value, str):
        return REDACTED
    if isinstance(value, list):
        return [_text_redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: _text_redacted(v) for k, v in value.items()}
    return value


def _values(row: dict[str, Any]) -> dict[str, Any]:
    return {"old_value": row["old_value"], "new_value": row["new_value"]}


def _answers(before: str | None, after: str | None) -> tuple[Any, Any] | None:
    """A model answer the erasure rewrote rather than replaced by the marker, parsed as it was and
    as left (``answer_without`` keeps its keys and shape, and redacts string leaves only): what
    verify holds the answer left to. None where the answer went whole (or was not touched)."""
    if before is None or after is None or after in (before, REDACTED):
        return None
    return extract_json(before), json.loads(after)


def _entry(
    erasure_id: str,
    table: str,
    key: str,
    kind: str,
    before: dict[str, Any],
    after: dict[str, Any],
    answer: tuple[Any, Any] | None = None,
) -> dict[str, Any]:
    """A row's erased_rows entry: its event's digest before and after, and each field's, so verify
    can tell which fields the erasure changed (``erased_row_detail``)."""
    return {
        "erasure_id": erasure_id,
        "table_name": table,
        "row_key": key,
        "digest_before": payload_digest(kind, before),
        "digest_after": payload_digest(kind, after),
        "detail": erased_row_detail(kind, before, after, answer),
    }
