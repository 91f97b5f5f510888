"""A team's number attributes verify on both ledgers, whatever number is set: SQLite reads a
number stored alone in a JSON column as a number (5.0 comes back as 5), PostgreSQL's JSONB gives
1.2345678901234568e17 back as 123456789012345680 and -0.0 as 0.0."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from amem.errors import InvalidInputError
from amem.memory import Memory
from amem.policy import parse_policy
from tests.services.test_pipeline import MODEL, construct, link

POLICY = (
    "default_mode: auto\nattributes:\n  content: {mode: frozen}\n"
    "  seats: {type: number, mode: auto, description: 'Seats bought.'}\n"
)


@pytest.fixture
def seats(database_url: str, tmp_path: Path, scripted_llm) -> Iterator[Memory]:
    with Memory(tmp_path / "home", database_url=database_url, llm=MODEL, policy=parse_policy(POLICY)) as mem:
        yield mem


def test_a_number_set_by_a_person_verifies_and_reads_back_as_stored(seats: Memory, scripted_llm) -> None:
    """Before, `amem verify` reported "change N ... its content was altered" on an untouched
    ledger: the proposal and change were hashed on the number given, and the ledger gave back
    another form of it (5.0 on SQLite; 1e17-odd and -0.0 on PostgreSQL)."""
    scripted_llm.push(construct(keywords=["Acme"]), link())
    note_id = seats.add_note("Acme is buying seats", actor="agent:crm", scope="acme")
    for given, stored in ((5.0, 5), (-0.0, 0), (1.2345678901234568e17, 123456789012345680), (2.5, 2.5)):
        (proposal,) = seats.update(note_id, actor="person:alice", seats=given)
        value = seats.read(note_id).extra["seats"]
        assert value == stored and type(value) is type(stored) and math.copysign(1.0, value) == 1.0
        assert proposal.new_value == stored
    verified = seats.verify()
    assert verified.ok, verified.message
    assert [e.new_value for e in seats.history(note_id) if e.attribute == "seats" and e.change_seq] == [
        5,
        0,
        123456789012345680,
        2.5,
    ]


def test_a_number_no_ledger_keeps_exactly_is_refused_and_nothing_recorded(
    seats: Memory, scripted_llm
) -> None:
    """1e20: SQLite keeps it as a float of 16 digits, PostgreSQL as 100000000000000000000; a
    change holding it failed `amem verify` on PostgreSQL. It is refused, saying why."""
    scripted_llm.push(construct(keywords=["Acme"]), link())
    note_id = seats.add_note("Acme is buying seats", actor="agent:crm", scope="acme")
    with pytest.raises(InvalidInputError, match=r"value of 'seats': 1e\+20 is out of range"):
        seats.update(note_id, actor="person:alice", seats=1e20)
    assert "seats" not in seats.read(note_id).extra
    assert seats.verify().ok


def test_a_whole_number_the_model_reads_verifies(seats: Memory, scripted_llm) -> None:
    """The model's numbers take the same road: its 40.0 is kept as 40."""
    scripted_llm.push(construct(extra={"seats": 40.0}, evidence={"seats": "40 seats"}), link())
    note_id = seats.add_note("Acme bought 40 seats", actor="agent:crm", scope="acme")
    value = seats.read(note_id).extra["seats"]
    assert value == 40 and type(value) is int
    verified = seats.verify()
    assert verified.ok, verified.message


def test_a_fractional_amount_verifies_and_reads_the_same_everywhere(seats: Memory, scripted_llm) -> None:
    """SQLite parsed the JSON text of a float into the REAL it stored, and not always to the same
    float (3.40 is not correctly rounded): `amem update NOTE amount=24349.51343622073` made an
    untouched ledger fail `amem verify` ("change N ... its content was altered"), `amem show` gave
    24349.51343622073 and history and the export 24349.513436220732."""
    scripted_llm.push(construct(keywords=["Soylent"]), link())
    note_id = seats.add_note("Soylent asked for a quote", actor="agent:crm", scope="soy")
    given = [
        24349.51343622073,
        17234.67122134489,
        8879.97740712625,
        5.079847532820406e-08,
        0.30000000000000004,
    ]
    for value in given:
        (proposal,) = seats.update(note_id, actor="person:alice", seats=value)
        assert seats.read(note_id).extra["seats"] == value and proposal.new_value == value
    verified = seats.verify()
    assert verified.ok, verified.problems
    history = [e.new_value for e in seats.history(note_id) if e.attribute == "seats" and e.change_seq]
    exported = [c["new_value"] for c in seats.export("changes") if c["attribute"] == "seats"]
    proposed = [p["new_value"] for p in seats.export("proposals") if p["attribute"] == "seats"]
    assert history == exported == proposed == given
    assert [c["old_value"] for c in seats.export("changes") if c["attribute"] == "seats"] == [
        None,
        *given[:-1],
    ]
