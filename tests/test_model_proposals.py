"""A value the model proposed names the recorded model call that made it: a Proposer of kind llm
without one was accepted (the value said a model made it, nothing traced it to a call, and verify
passed). amem's pipeline records each call and proposes with it; a caller proposing by hand proposes
as an agent or a person, and no interface lets anyone type ``llm:``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.domain.models import Proposer
from amem.errors import InvalidInputError
from amem.memory import Memory
from amem.services.governance import Draft
from tests.cli.test_note_commands import Cli
from tests.factories import llm_proposer, said

UNNAMED = Proposer(kind="llm", id="offline", model="offline", prompt_version="test/1")


def _recorded(memory: Memory) -> tuple[int, int, int]:
    """What the ledger holds: proposals, changes, and the event chain's head."""
    with memory.ledger.read() as tx:
        head = tx.event_head()[0]
    return memory.count_proposals(), len(memory.changes()), head


def test_a_models_proposal_without_its_model_call_is_refused_and_records_nothing(memory: Memory) -> None:
    note = said(memory, "Acme renews for 40 seats because the auditor asked")
    before = _recorded(memory)
    for nameless in (UNNAMED, UNNAMED.model_copy(update={"llm_call_id": ""})):
        # tags apply by themselves, the rationale waits for a reviewer: neither is recorded
        for attribute, value in (("tags", ["renewal"]), ("decision_rationale", "the auditor asked")):
            with pytest.raises(InvalidInputError, match=r"^proposer llm:offline names no model call") as e:
                memory.propose(note.id, attribute, value, reason="seen", proposer=nameless)
            assert "agent:NAME or as a person" in str(e.value)
    # one such draft among good ones: the edit is refused whole
    drafts = [
        Draft(note.id, "keywords", ["seats"], "typed", Proposer(kind="agent", id="crm-sync")),
        Draft(note.id, "tags", ["renewal"], "seen", UNNAMED),
    ]
    with pytest.raises(InvalidInputError, match="names no model call"):
        memory.governance.propose_drafts(drafts)
    assert _recorded(memory) == before
    assert (memory.read(note.id).tags, memory.read(note.id).keywords) == (note.tags, note.keywords)
    assert memory.verify().ok


def test_the_same_proposal_naming_its_recorded_call_is_traced_to_it(memory: Memory) -> None:
    note = said(memory, "Acme renews for 40 seats because the auditor asked")
    by = llm_proposer(memory, raw_log_id=note.raw_log_ids[0])
    made = memory.propose(note.id, "tags", ["renewal"], reason="seen", proposer=by)
    assert memory.read(note.id).tags == ["renewal"]
    (event,) = [e for e in memory.history(note.id) if e.proposal_id == made.id and e.event == "proposed"]
    assert event.actor == "llm:offline" and event.llm_call_id == by.llm_call_id
    assert memory.llm_call(by.llm_call_id or "").raw_log_id == note.raw_log_ids[0]
    assert memory.verify().ok


@pytest.fixture
def amem(database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    memory = Memory(tmp_path / "home", database_url=database_url)
    try:
        yield Cli(memory, capsys)
    finally:
        memory.close()


def test_no_one_proposes_as_the_model_on_the_command_line(amem: Cli) -> None:
    note = said(amem.memory, "Initech renews in March")
    before = _recorded(amem.memory)
    for args in (
        ["propose", note.id, "tags", '["renewal"]', "--reason", "r"],
        ["update", note.id, 'tags=["renewal"]'],
        ["delete", note.id, "--reason", "r"],
    ):
        for who in ("llm:offline", "LLM:gpt-4o"):
            code, _out, err = amem(*args, "--actor", who)
            assert code == 2 and "edit as agent:NAME or as a person, not as llm:" in err, (args, err)
    assert _recorded(amem.memory) == before


def _properties(schema: dict[str, Any], spec: dict[str, Any], seen: set[str]) -> Iterator[str]:
    """Every property name a request body's schema accepts, following references."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return
        seen.add(ref)
        schema = spec["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    for name, sub in schema.get("properties", {}).items():
        yield name
        yield from _properties(sub, spec, seen)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _properties(schema[key], spec, seen)
    for key in ("anyOf", "allOf", "oneOf"):
        for sub in schema.get(key, []):
            yield from _properties(sub, spec, seen)


def test_no_http_request_names_a_proposer_or_a_model_call(memory: Memory) -> None:
    """The HTTP API proposes nothing in anyone's name: an input's author is its token's, a
    correction its reviewer's. A request naming a proposer or a model call would let a caller
    speak for the model."""
    with TestClient(create_app(memory, decisions=True)) as api:
        spec = api.get("/openapi.json").json()
    accepted: set[str] = set()
    bodies = 0
    for operations in spec["paths"].values():
        for operation in operations.values():
            for media in operation.get("requestBody", {}).get("content", {}).values():
                bodies += 1
                accepted |= set(_properties(media["schema"], spec, set()))
            accepted |= {p["name"] for p in operation.get("parameters", [])}
    assert bodies >= 5 and {"content", "comment"} <= accepted  # the walk reads the bodies
    assert not accepted & {"proposer", "proposer_kind", "llm_call_id", "actor_kind"}
