"""Every value traces to the raw logs and the model call behind it: a proposal citing a raw log or a
model call that does not exist, or one of another scope, is refused before anything is recorded
(it was applied, and verify passed; a made-up model call was a database error with its SQL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

from amem.domain.models import LlmCall, Proposer, new_id, utcnow
from amem.errors import InvalidInputError, PermissionDeniedError
from amem.memory import Memory
from amem.services.governance import Draft
from tests.factories import make_note


def _recorded_call(memory: Memory, raw_log_id: str) -> str:
    """A model call recorded on ``raw_log_id``, as the pipeline records one; its id."""
    call = LlmCall(
        id=new_id("llm"),
        task="construct_note",
        model="offline",
        prompt_version="test/1",
        raw_log_id=raw_log_id,
        prompt_sha256="0" * 64,
        response_text="{}",
        created_at=utcnow(),
    )
    with memory.ledger.write() as tx:
        tx.insert_llm_call(call)
    return call.id


def _by_call(call_id: str) -> Proposer:
    return Proposer(kind="llm", id="offline", model="offline", prompt_version="test/1", llm_call_id=call_id)


def test_a_raw_log_that_does_not_exist_backs_no_value(memory: Memory) -> None:
    note = make_note(memory, "Soylent wants 50 seats from April", scope="soylent")
    before = memory.count_proposals()
    for cited in (["r_doesnotexist"], [note.raw_log_ids[0], "r_doesnotexist"], ["r_\x00"]):
        with pytest.raises(InvalidInputError, match=r"^raw log r_(doesnotexist|\\x00) does not exist"):
            memory.propose(note.id, "tags", ["fake"], reason="r", proposer="agent:a", raw_log_ids=cited)
    assert memory.count_proposals() == before
    assert memory.read(note.id).tags == note.tags


def test_a_raw_log_of_another_scope_backs_no_value(memory: Memory) -> None:
    note = make_note(memory, "Soylent wants 50 seats from April", scope="soylent")
    other = make_note(memory, "Initech wants 5 seats", scope="initech")
    before = memory.count_proposals()
    with pytest.raises(InvalidInputError, match=r"is of another scope than note .* \(soylent\)"):
        memory.propose(
            note.id, "category", "pricing", reason="r", proposer="agent:a", raw_log_ids=other.raw_log_ids
        )
    assert memory.count_proposals() == before
    # its own scope's raw log is a source like any
    own = memory.propose(
        note.id, "category", "pricing", reason="r", proposer="agent:a", raw_log_ids=note.raw_log_ids
    )
    assert own.raw_log_ids == note.raw_log_ids


def test_a_model_call_that_was_not_recorded_is_refused_not_a_database_error(memory: Memory) -> None:
    note = make_note(memory, "Soylent wants 50 seats from April", scope="soylent")
    before = memory.count_proposals()
    for forged in ("llm_forged", "llm_\x00"):
        with pytest.raises(InvalidInputError, match=r"^model call llm_(forged|\\x00) does not exist"):
            memory.propose(note.id, "keywords", ["forged"], reason="r", proposer=_by_call(forged))
    assert memory.count_proposals() == before


def test_a_model_call_on_another_scopes_raw_log_is_no_source(memory: Memory) -> None:
    note = make_note(memory, "Soylent wants 50 seats from April", scope="soylent")
    other = make_note(memory, "Initech wants 5 seats", scope="initech")
    theirs = _recorded_call(memory, other.raw_log_ids[0])
    with pytest.raises(InvalidInputError, match=r"^model call .* analysed a raw log of another scope"):
        memory.propose(note.id, "keywords", ["seats"], reason="r", proposer=_by_call(theirs))
    mine = _recorded_call(memory, note.raw_log_ids[0])
    p = memory.propose(
        note.id, "keywords", ["seats"], reason="r", proposer=_by_call(mine), raw_log_ids=note.raw_log_ids
    )
    assert p.proposer.llm_call_id == mine
    assert memory.history(note.id)[-2].llm_call_id == mine
    assert memory.verify().ok


def test_only_the_models_proposal_names_a_model_call(memory: Memory) -> None:
    note = make_note(memory, "Soylent wants 50 seats from April", scope="soylent")
    call = _recorded_call(memory, note.raw_log_ids[0])
    agent = Proposer(kind="agent", id="sales-agent", llm_call_id=call)
    with pytest.raises(InvalidInputError, match=r"only the model's proposals name the call"):
        memory.propose(note.id, "keywords", ["seats"], reason="r", proposer=agent)


def test_a_person_the_policy_names_an_agent_proposes_nothing(memory: Memory) -> None:
    """Governance refuses it whatever the door (a Proposer passed whole, a draft of the pipeline's)."""
    note = make_note(memory, "Soylent wants 50 seats from April", scope="soylent")
    before = memory.count_proposals()
    claimed = Proposer(kind="person", id="sales-agent")
    with pytest.raises(PermissionDeniedError, match=r"sales-agent is an agent in .*: it proposes as agent:"):
        memory.propose(note.id, "decision_rationale", "mine", reason="r", proposer=claimed)
    with pytest.raises(PermissionDeniedError), memory.ledger.write() as tx:
        memory.governance.propose_in(tx, [Draft(note.id, "tags", ["x"], "r", claimed)])
    assert memory.count_proposals() == before


@contextmanager
def _statements(memory: Memory) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        seen.append(statement)

    sa.event.listen(memory.ledger.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(memory.ledger.engine, "before_cursor_execute", record)


def test_the_sources_of_many_drafts_are_read_in_one_query_each(memory: Memory) -> None:
    """The pipeline proposes a batch's values through the same check: its cost must not grow with
    the drafts (one query for the raw logs, one for the model calls, whatever their number)."""
    notes = [make_note(memory, f"Soylent note {n} about seats", scope="soylent") for n in range(6)]
    drafts = [
        Draft(
            n.id,
            "keywords",
            [f"k{i}"],
            "r",
            _by_call(_recorded_call(memory, n.raw_log_ids[0])),
            n.raw_log_ids,
        )
        for i, n in enumerate(notes)
    ]
    with _statements(memory) as seen:
        proposals = memory.governance.propose_drafts(drafts)
    assert len(proposals) == 6
    assert sum("FROM raw_logs" in s for s in seen) == 1
    assert sum("FROM llm_calls" in s for s in seen) == 1
    plain = [Draft(n.id, "tags", ["t"], "r", Proposer(kind="agent", id="crm-sync")) for n in notes]
    with _statements(memory) as seen:
        memory.governance.propose_drafts(plain)
    assert not any("FROM raw_logs" in s or "FROM llm_calls" in s for s in seen)  # nothing cited


def test_the_pipelines_own_proposals_still_name_their_model_calls(memory: Memory) -> None:
    note_id = memory.add_note(
        "Soylent decided to renew in March because of SSO", actor="agent:a", scope="soylent"
    )
    made = [p for p in memory.proposals() if p.note_id == note_id and p.proposer.llm_call_id]
    assert made
    for p in made:
        assert memory.llm_call(p.proposer.llm_call_id or "").raw_log_id == memory.read(note_id).raw_log_ids[0]
