"""Erasure and what kept inputs gave: a kept input's facts stay with it, and a kept note's value
redacted in place reaches the pollers of the change feed. Through the real litellm path (scripted
provider) on both ledgers."""

from __future__ import annotations

import uuid
from typing import Any

from amem.domain.hashing import REDACTED
from amem.memory import Memory
from tests.factories import signed_in
from tests.services.test_pipeline import construct, link

FACT = "Elaine asked to push the Globex renewal to January 15"
RECAP = "Recap: Globex renewal moves to January 15 because their fiscal year starts then."


def _fact_and_recap(mem: Memory, scripted_llm) -> tuple[str, str]:
    """A fact, then a kept input restating it that gives the reason the first lacked: drafting
    proposes the recap's rationale on the first note, and leaves its date out (pending there)."""
    scripted_llm.push(construct(valid_at="2027-01-15T00:00:00Z", evidence={"valid_at": "January 15"}), link())
    first = mem.add_note(FACT, at="2026-09-15T00:00:00Z", actor="agent:x", scope="globex")
    scripted_llm.push(
        construct(
            decision_rationale="their fiscal year starts then",
            valid_at="2027-01-15T00:00:00Z",
            evidence={"decision_rationale": "their fiscal year starts then", "valid_at": "January 15"},
        ),
        link(links=[{"note_id": first, "reason": "same renewal"}], restates=first),
    )
    second = mem.add_note(RECAP, at="2026-09-16T00:00:00Z", actor="agent:x", scope="globex")
    assert {p.attribute for p in mem.pending(note_id=first)} == {"valid_at", "decision_rationale"}
    assert mem.pending(note_id=second) == []
    return first, second


def test_a_kept_input_that_restated_an_erased_note_has_its_facts_proposed_on_its_own_note(
    mem: Memory, scripted_llm
) -> None:
    """The recap's rationale, approved on the note it restated, and its date, left out there as
    already stated, are the kept recap's facts. Before, erasing the first input took them with its
    note: the recap's own note held neither, and the facts showed neither."""
    first, second = _fact_and_recap(mem, scripted_llm)
    alice = signed_in(mem, "alice")
    for held in mem.pending(note_id=first):
        mem.approve(held.id, reviewer=alice)
    recap_raw = mem.read(second).raw_log_ids

    report = mem.erase(by=alice, reason="request", raw_log_id=mem.read(first).raw_log_ids[0])

    held = {p.attribute: p for p in mem.pending(note_id=second)}
    assert set(held) == {"decision_rationale", "valid_at"} and report.restated_values_proposed == 2
    assert held["decision_rationale"].new_value == "their fiscal year starts then"
    assert held["valid_at"].new_value == "2027-01-15T00:00:00+00:00"
    # from the recap's own answer, input and span: traceable as drafting's first proposal was
    for p in held.values():
        assert p.raw_log_ids == recap_raw and p.evidence is not None and p.evidence in RECAP
        with mem.ledger.read() as tx:
            call = tx.get_llm_call(p.proposer.llm_call_id or "")
        assert call is not None and call.raw_log_id == recap_raw[0] and call.task == "construct_note"
        assert report.erasure_id in p.reason
    for p in held.values():
        mem.approve(p.id, reviewer=alice)
    (fact,) = mem.facts("globex").facts
    assert fact.note.id == second and fact.note.decision_rationale == "their fiscal year starts then"
    assert fact.note.valid_at is not None and fact.note.valid_at.isoformat().startswith("2027-01-15")
    result = mem.verify()
    assert result.ok, result.problems


def test_a_restated_value_a_reviewer_rejected_on_the_erased_note_is_not_asked_again(
    mem: Memory, scripted_llm
) -> None:
    """Only what no reviewer turned down comes back: the rejected rationale stays rejected."""
    first, second = _fact_and_recap(mem, scripted_llm)
    alice = signed_in(mem, "alice")
    (why,) = [p for p in mem.pending(note_id=first) if p.attribute == "decision_rationale"]
    mem.reject(why.id, reviewer=alice, comment="not what they said")

    mem.erase(by=alice, reason="request", raw_log_id=mem.read(first).raw_log_ids[0])

    assert [p.attribute for p in mem.pending(note_id=second)] == ["valid_at"]


def test_a_date_a_reviewer_rejected_on_the_erased_note_is_not_asked_again_of_the_recap_that_repeated_it(
    mem: Memory, scripted_llm
) -> None:
    """Drafting left the recap's date out because the first note had the same date pending; a
    reviewer rejected that date there. Before, the erasure skipped only what the recap's own model
    call had proposed and been refused, so it asked for the rejected date again on the recap."""
    first, second = _fact_and_recap(mem, scripted_llm)
    alice = signed_in(mem, "alice")
    held = {p.attribute: p for p in mem.pending(note_id=first)}
    assert held["valid_at"].proposer.llm_call_id != held["decision_rationale"].proposer.llm_call_id
    mem.reject(held["valid_at"].id, reviewer=alice, comment="wrong date: the renewal stays in December")
    mem.approve(held["decision_rationale"].id, reviewer=alice)

    report = mem.erase(by=alice, reason="request", raw_log_id=mem.read(first).raw_log_ids[0])

    assert [p.attribute for p in mem.pending(note_id=second)] == ["decision_rationale"]
    assert report.restated_values_proposed == 1
    assert mem.read(second).valid_at is None
    result = mem.verify()
    assert result.ok, result.problems


def test_a_poller_of_the_change_feed_learns_the_values_an_erasure_redacted_on_kept_notes(
    mem: Memory, scripted_llm
) -> None:
    """A later link step wrote the erased name into a kept note's context. Before, the erasure
    redacted it in place with no change: a CRM mirroring the feed from ``next_after`` was told only
    of the erased note's deletion and kept the name in the kept note."""
    secret = f"Quibblestone{uuid.uuid4().hex[:6]}"
    scripted_llm.push(construct(context=f"Mrs {secret} wants SSO"), link())
    erased = mem.add_note(f"Mrs {secret} of Acme insists on SSO", actor="agent:sales-agent", scope="acme")
    scripted_llm.push(construct(context="The auditor wants SSO"), link())
    kept = mem.add_note("Acme's auditor requires SSO before renewal", actor="agent:sales-agent", scope="acme")
    updates = [{"note_id": kept, "context": f"Auditor and {secret} want SSO", "reason": "both named"}]
    scripted_llm.push(construct(context="Okta admin sent metadata"), link(updates=updates))
    mem.add_note("Acme's Okta admin sent the SAML metadata", actor="agent:sales-agent", scope="acme")
    mirror: dict[tuple[str, str], Any] = {}
    feed = mem.change_feed(scopes=["acme"], limit=1000)
    mirror |= {(c.note_id, c.attribute): c.new_value for c in feed.changes}
    assert secret in mirror[(kept, "context")]

    alice = signed_in(mem, "alice")
    report = mem.erase(by=alice, reason="GDPR", raw_log_id=mem.read(erased).raw_log_ids[0])

    later = mem.change_feed(after=feed.next_after, scopes=["acme"], limit=1000)
    mirror |= {(c.note_id, c.attribute): c.new_value for c in later.changes}
    assert mirror[(kept, "context")] == REDACTED == mem.read(kept).context
    assert mirror[(erased, "deleted")] is True and later.changes[-1].attribute == "deleted"
    (told,) = [c for c in later.changes if c.note_id == kept]
    assert told.actor == f"person:{alice.id}"
    assert report.values_redacted == len([c for c in later.changes if c.attribute != "deleted"])
    assert report.erasure_id in (mem.proposal(told.proposal_id).reason or "")
    # the erased note's own values: the mirror is told it is deleted
    assert not [v for (note, _), v in mirror.items() if note != erased and secret in str(v)]
    result = mem.verify()
    assert result.ok, result.problems
