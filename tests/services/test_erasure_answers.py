"""Erasure and the model answers of later notes: a link step answers about its neighbours by id,
and what it said about an erased neighbour (an evolved context, a link's reason) leaves its stored
answer too, through the real litellm path (scripted provider) on both ledgers."""

from __future__ import annotations

import json
import uuid

import sqlalchemy as sa

from amem.domain.hashing import REDACTED
from amem.ledger.tables import llm_calls
from amem.memory import Memory
from amem.services.erasure import answer_without
from tests.factories import signed_in
from tests.services.test_pipeline import construct, link


def _answers(mem: Memory) -> dict[str, str]:
    with mem.ledger.engine.connect() as conn:
        rows = conn.execute(sa.select(llm_calls.c.id, llm_calls.c.response_text)).all()
    return {i: text or "" for i, text in rows}


def _said_by(mem: Memory, secret: str, scripted_llm) -> tuple[str, str, str]:
    """A note that names the data subject, one that does not, then a third whose link step answers
    about both as neighbours."""
    scripted_llm.push(construct(), link())
    erased = mem.add_note(f"Mrs {secret} of Acme asked for SSO", actor="agent:sales-agent", scope="acme")
    scripted_llm.push(construct(), link())
    kept = mem.add_note("Acme's auditor requires SSO before renewal", actor="agent:sales-agent", scope="acme")
    scripted_llm.push(
        construct(),
        link(
            links=[
                {"note_id": erased, "reason": f"the SSO request {secret} made"},
                {"note_id": kept, "reason": "the auditor's requirement behind it"},
            ],
            updates=[
                {"note_id": erased, "context": f"{secret} wants SSO through Okta", "reason": "Okta named"},
                {"note_id": kept, "context": "The auditor wants SSO through Okta", "reason": "Okta named"},
            ],
        ),
    )
    third = mem.add_note("Acme's Okta admin sent the SAML metadata", actor="agent:sales-agent", scope="acme")
    return erased, kept, third


def test_a_later_answer_about_an_erased_neighbour_loses_what_it_said(mem: Memory, scripted_llm) -> None:
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    erased, kept, third = _said_by(mem, secret, scripted_llm)
    before = _answers(mem)
    assert [i for i, text in before.items() if secret in text], "the later answer quotes the subject"

    raw = mem.read(erased).raw_log_ids[0]
    report = mem.erase(by=signed_in(mem, "alice"), reason="GDPR art. 17", raw_log_id=raw)

    after = _answers(mem)
    assert [i for i, text in after.items() if secret in text] == []
    (changed,) = [i for i in after if after[i] != before[i] and after[i] != REDACTED]
    answer = json.loads(after[changed])
    # the entries about the erased note keep its id, not its text; the rest of the answer stands
    assert {"note_id": erased, "reason": REDACTED} in answer["links"]
    assert {"note_id": kept, "reason": "the auditor's requirement behind it"} in answer["links"]
    (update,) = [u for u in answer["updates"] if u["note_id"] == kept]
    assert update["context"] == "The auditor wants SSO through Okta"
    assert report.llm_calls == 3  # the erased note's two calls, whole, and the third note's link step
    assert mem.read(kept).context == "The auditor wants SSO through Okta"
    assert [x.note_id for x in mem.read(third).links] == [erased, kept]
    result = mem.verify()
    assert result.ok, result.problems


def test_an_answer_that_is_not_json_and_names_the_erased_note_is_redacted_whole(
    mem: Memory, scripted_llm
) -> None:
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    scripted_llm.push(construct(), link())
    erased = mem.add_note(f"Mrs {secret} of Acme asked for SSO", actor="agent:sales-agent", scope="acme")
    # the link step's first answer is prose about the neighbour; the analyst asks again
    scripted_llm.push(construct(), f"{erased} is {secret}'s request, link it", link())
    mem.add_note("Acme's Okta admin sent the SAML metadata", actor="agent:sales-agent", scope="acme")
    assert any(secret in text for text in _answers(mem).values())

    mem.erase(by=signed_in(mem, "alice"), reason="request", raw_log_id=mem.read(erased).raw_log_ids[0])

    assert [text for text in _answers(mem).values() if secret in text] == []
    assert mem.verify().ok


def test_answer_without_keeps_what_does_not_name_an_erased_note() -> None:
    text = (
        "```json\n"
        + json.dumps(
            {
                "links": [{"note_id": "n_0123456789abcdef", "reason": "Mrs Q asked"}],
                "updates": [
                    {"note_id": "n_0123456789abcdef", "tags": ["mrs-q"], "keywords": ["Q"], "context": "Q's"},
                    {"note_id": "n_fedcba9876543210", "context": "kept"},
                ],
                "contradictions": [],
                "restates": "n_0123456789abcdef",
            }
        )
        + "\n```"
    )
    answer = json.loads(answer_without(text, {"n_0123456789abcdef"}))
    assert answer["links"] == [{"note_id": "n_0123456789abcdef", "reason": REDACTED}]
    assert answer["updates"] == [
        {"note_id": "n_0123456789abcdef", "tags": [REDACTED], "keywords": [REDACTED], "context": REDACTED},
        {"note_id": "n_fedcba9876543210", "context": "kept"},
    ]
    assert answer["restates"] == "n_0123456789abcdef"  # an id alone says nothing of the subject
    assert answer_without("not an answer about n_0123456789abcdef", {"n_0123456789abcdef"}) == REDACTED


def test_pending_proposals_made_from_an_erased_input_are_withdrawn(mem: Memory, scripted_llm) -> None:
    """A held value the erased input's model call proposed, on a note that stays: no reviewer is
    asked to apply "[erased]". The withdrawal is a recorded decision; other pending values stay."""
    scripted_llm.push(construct(valid_at="2027-03-01T00:00:00Z", evidence={"valid_at": "in March"}), link())
    kept = mem.add_note("Acme will renew in March", actor="agent:sales-agent", scope="acme")
    (own,) = mem.pending(note_id=kept)  # the kept note's own date, held for review
    scripted_llm.push(
        construct(),
        link(
            updates=[
                {
                    "note_id": kept,
                    "decision_rationale": "Mrs Quibblestone's budget was approved",
                    "reason": "says why",
                    "evidence": "the budget was approved",
                }
            ]
        ),
    )
    erased = mem.add_note("Mrs Quibblestone said the budget was approved", actor="agent:x", scope="acme")
    (held,) = [p for p in mem.pending(note_id=kept) if p.attribute == "decision_rationale"]

    report = mem.erase(
        by=signed_in(mem, "alice"), reason="request", raw_log_id=mem.read(erased).raw_log_ids[0]
    )

    assert [p.id for p in mem.pending(note_id=kept)] == [own.id]
    withdrawn = mem.proposal(held.id)
    assert withdrawn.status.value == "superseded" and report.erasure_id in (withdrawn.review_comment or "")
    assert withdrawn.new_value == REDACTED
    assert report.proposals_withdrawn >= 1
    assert mem.read(kept).decision_rationale is None
    result = mem.verify()
    assert result.ok, result.problems


def test_why_a_call_of_the_erased_input_failed_is_redacted_too(mem: Memory, scripted_llm) -> None:
    """An invalid answer's error quotes what the model wrote, here a date in the subject's words."""
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    scripted_llm.push(construct(valid_at=f"the day {secret} signs"), construct(), link())
    note = mem.add_note(f"Mrs {secret} will sign soon", actor="agent:sales-agent", scope="acme")
    with mem.ledger.engine.connect() as conn:
        errors = [e for (e,) in conn.execute(sa.select(llm_calls.c.error)) if e]
    assert any(secret in e for e in errors), "the failed attempt's error quotes the answer"

    mem.erase(by=signed_in(mem, "alice"), reason="request", raw_log_id=mem.read(note).raw_log_ids[0])

    with mem.ledger.engine.connect() as conn:
        rows = conn.execute(sa.select(llm_calls.c.response_text, llm_calls.c.error)).all()
    assert [r for r in rows if secret in f"{r.response_text} {r.error}"] == []
    assert mem.verify().ok


def test_a_reviewers_comment_on_an_erased_value_is_redacted_and_the_chain_still_verifies(
    mem: Memory, scripted_llm
) -> None:
    """A reviewer who rejected a value the erased input proposed may have quoted the data subject in
    the comment: it goes, the decision (who, when, what) stays, and verify checks the decision against
    the digests the erasure recorded. A comment on a decision about another input's value stays."""
    secret = f"Quibblestone-{uuid.uuid4().hex[:8]}"
    scripted_llm.push(construct(valid_at="2027-03-01T00:00:00Z", evidence={"valid_at": "in March"}), link())
    kept = mem.add_note("Acme will renew in March", actor="agent:sales-agent", scope="acme")
    (own,) = mem.pending(note_id=kept)
    scripted_llm.push(
        construct(),
        link(
            updates=[
                {
                    "note_id": kept,
                    "decision_rationale": f"Mrs {secret}'s budget was approved",
                    "reason": "says why",
                    "evidence": "the budget was approved",
                }
            ]
        ),
    )
    erased = mem.add_note(f"Mrs {secret} said the budget was approved", actor="agent:x", scope="acme")
    (held,) = [p for p in mem.pending(note_id=kept) if p.attribute == "decision_rationale"]
    alice = signed_in(mem, "alice")
    mem.reject(held.id, reviewer=alice, comment=f"{secret} only said it might be, on a call")
    mem.approve(own.id, reviewer=alice, comment="the renewal date is in the contract")

    report = mem.erase(by=alice, reason="request", raw_log_id=mem.read(erased).raw_log_ids[0])

    rejected = mem.proposal(held.id)
    assert rejected.review_comment == REDACTED
    assert (rejected.status.value, rejected.reviewer, rejected.reviewed_at) == (
        "rejected",
        held.reviewer or "alice",
        mem.proposal(held.id).reviewed_at,
    )
    assert mem.proposal(own.id).review_comment == "the renewal date is in the contract"
    assert report.review_comments == 1
    assert [r.rows.get("decisions") for r in mem.erasures()] == [1]
    with mem.ledger.engine.connect() as conn:
        dump = " ".join(str(v) for (v,) in conn.execute(sa.text("SELECT review_comment FROM proposals")))
    assert secret not in dump
    result = mem.verify()
    assert result.ok, result.problems


def test_erasing_again_keeps_the_first_erasures_record(mem: Memory, scripted_llm) -> None:
    """An account erased after one of its inputs was: the first erasure's tombstone keeps its reason
    (which names that erasure) and comment; history is added to, not rewritten."""
    scripted_llm.push(construct(), link())
    note = mem.add_note("Mrs Quibblestone asked us to call", actor="agent:x", scope="acme")
    alice = signed_in(mem, "alice")
    first = mem.erase(by=alice, reason="her request", raw_log_id=mem.read(note).raw_log_ids[0])
    tombstone = mem.proposal(mem.history(note)[-1].proposal_id or "")
    assert first.erasure_id in tombstone.reason

    mem.erase(by=alice, reason="the account closed", scope="acme")

    again = mem.proposal(tombstone.id)
    assert (again.reason, again.review_comment) == (tombstone.reason, tombstone.review_comment)
    result = mem.verify()
    assert result.ok, result.problems
