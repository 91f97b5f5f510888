"""The library's reads answer alike on SQLite and PostgreSQL: a negative page size or start is refused
naming the argument (SQLite returned every row, PostgreSQL raised its DataError with the SQL), an
id no row can have (a NUL) is not found, and a scope holding one is refused (PostgreSQL refused the
statement, SQLite answered with nothing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from amem.errors import InvalidInputError, NotFoundError
from amem.ledger.audit_queries import AuditQuery
from amem.ledger.store import ChangeFilter, ProposalFilter
from amem.memory import Memory
from tests.factories import llm_proposer, make_note


def _pages(memory: Memory) -> dict[str, Callable[..., Any]]:
    return {
        "notes": memory.notes,
        "proposals": memory.proposals,
        "changes": memory.changes,
        "pending": memory.pending,
        "review_items": memory.review_items,
        "find_notes": lambda **page: memory.find_notes(scope="acme", **page),
        "audit_events": lambda **page: memory.audit_events(AuditQuery(), **page),
    }


@pytest.mark.parametrize("argument", ["limit", "offset"])
def test_a_negative_page_is_refused_naming_the_argument(memory: Memory, argument: str) -> None:
    note = make_note(memory, "Acme: next step is to send the quote.")
    memory.propose(note.id, "decision_rationale", "finance asked", reason="r", proposer=llm_proposer(memory))
    for name, read in _pages(memory).items():
        with pytest.raises(InvalidInputError, match=rf"^{argument} must be a whole number from 0 to "):
            read(**{argument: -1})
            pytest.fail(f"{name} answered {argument}=-1")
        read(**{argument: 0})  # the smallest page is still answered
    with pytest.raises(InvalidInputError, match=r"^limit must be a whole number .* not '5'"):
        memory.notes(limit="5")  # type: ignore[arg-type]


def test_an_id_no_row_can_have_is_not_found(memory: Memory) -> None:
    note = make_note(memory, "Acme: next step is to send the quote.")
    lookups: dict[str, Callable[[], object]] = {
        "input": lambda: memory.input_status("r_\x00"),
        "history": lambda: memory.history("n_\x00"),
        "as_of": lambda: memory.as_of("n_\x00", "2026-01-01"),
        "as_of_version": lambda: memory.as_of_version("n_\x00", 1),
        "note_versions": lambda: memory.note_versions("n_\x00"),
        "proposal": lambda: memory.proposal("p_\x00"),
        "review item": lambda: memory.review_item("r_\x00"),
        "model call": lambda: memory.llm_call("llm_\x00"),
    }
    for name, lookup in lookups.items():
        with pytest.raises(NotFoundError, match=r"\\x00 does not exist \(character \d+ is a NUL"):
            lookup()
            pytest.fail(f"{name} answered")
    assert list(memory.notes_by_id(["n_\x00", note.id])) == [note.id]
    assert [r.id for r in memory.raw_logs(["r_\x00", *note.raw_log_ids])] == note.raw_log_ids


def test_a_scope_or_filter_holding_a_nul_is_refused(memory: Memory) -> None:
    make_note(memory, "Acme: next step is to send the quote.")
    reads: dict[str, Callable[[], object]] = {
        "notes": lambda: memory.notes(scope="ac\x00me"),
        "count_notes": lambda: memory.count_notes("ac\x00me"),
        "facts": lambda: memory.facts("ac\x00me"),
        "count_pending": lambda: memory.count_pending("ac\x00me"),
        "proposals": lambda: memory.proposals(ProposalFilter(scope="ac\x00me")),
        "pending": lambda: memory.pending(scope="ac\x00me"),
        "changes": lambda: memory.changes(ChangeFilter(actor="ac\x00me")),
        "export": lambda: list(memory.export("changes", scope="ac\x00me")),
        "count_erasable": lambda: memory.count_erasable(scope="ac\x00me"),
    }
    for name, read in reads.items():
        with pytest.raises(InvalidInputError, match=r"^(scope|actor): character 3 is a NUL"):
            read()
            pytest.fail(f"{name} answered")
    assert memory.count_notes("acme") == 1  # good text as before
