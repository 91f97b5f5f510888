"""Erasing what was erased before: the request is recorded as made, but nothing is counted as
redacted that an earlier erasure had already redacted, and the report says who erased it and when."""

from __future__ import annotations

import pytest

from amem.memory import Memory
from tests.factories import signed_in


def test_erasing_an_erased_raw_log_again_redacts_nothing_and_names_the_erasure_that_did(
    memory: Memory,
) -> None:
    """Before, the second erasure reported "0 raw logs, 1 notes ... redacted": the erased note was
    counted although nothing of it changed, and nothing said the raw log had been erased already."""
    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    raw = memory.read(gone).raw_log_ids[0]
    alice = signed_in(memory, "alice")
    first = memory.erase(by=alice, reason="her request", raw_log_id=raw)
    assert first.notes >= 1

    again = memory.erase(by=alice, reason="her request, sent twice", raw_log_id=raw)

    counts = (again.raw_logs, again.notes, again.proposals, again.changes, again.llm_calls)
    assert counts == (0, 0, 0, 0, 0) and again.notes_deleted == 0
    assert again.nothing_redacted and not first.nothing_redacted
    assert (again.already_erased, first.already_erased) == (1, 0)
    (earlier,) = again.earlier_erasures
    assert (earlier.erasure_id, earlier.erased_by, earlier.raw_logs) == (first.erasure_id, "alice", 1)
    # the request itself stays on record, with no rows of its own
    newest, oldest = memory.erasures()
    assert (newest.id, newest.rows) == (again.erasure_id, {}) and oldest.id == first.erasure_id
    result = memory.verify()
    assert result.ok, result.problems


def test_a_scope_erasure_counts_and_redacts_only_the_raw_logs_not_erased_before(memory: Memory) -> None:
    """What `amem erase --scope` asks to confirm is what it will erase. Before, the count held the raw
    log erased already, and the scope's erasure counted its note among the notes redacted again."""
    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    memory.add_note("Acme asked for a quote for 40 seats", actor="agent:x", scope="acme")
    alice = signed_in(memory, "alice")
    first = memory.erase(by=alice, reason="her request", raw_log_id=memory.read(gone).raw_log_ids[0])

    assert memory.count_erasable(scope="acme") == 2
    whole = memory.erase(by=alice, reason="the account left", scope="acme")

    assert whole.raw_logs == 2 and whole.notes == 2 and whole.notes_deleted == 2
    assert whole.already_erased == 1 and [e.erasure_id for e in whole.earlier_erasures] == [first.erasure_id]
    assert not whole.nothing_redacted
    assert memory.count_erasable(scope="acme") == 0
    result = memory.verify()
    assert result.ok, result.problems


def test_the_erase_command_says_nothing_was_left_to_redact_and_who_erased_it(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.services.test_erasure import run

    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    raw = memory.read(gone).raw_log_ids[0]
    assert run(memory, "erase", "--raw-log", raw, "--reviewer", "alice", "--reason", "her request") == 0
    first = " ".join(capsys.readouterr().out.split())
    assert "nothing left to redact" not in first and "1 raw logs" in first
    assert run(memory, "erase", "--raw-log", raw, "--reviewer", "alice", "--reason", "again") == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "nothing left to redact; 1 of the raw logs chosen were already erased, by " in said
    assert "(alice, " in said and "raw logs, 0 notes" not in said
