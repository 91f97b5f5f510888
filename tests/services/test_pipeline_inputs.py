"""What an input may be, one rule on every path that takes one (add_note with or without a key,
add_notes, check_inputs): its time is ISO 8601 text, never a number; a wrong type is named as such;
an actor's kind is one amem knows; a scope is one account however its name was typed.

Reviewer L, findings 3, 13 and 7."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pytest

from amem.errors import InvalidBatchInputError, InvalidInputError
from amem.memory import Memory
from tests.services.test_pipeline import _raw_log_count

NUMBER = r"at: 1700000000 is a number; write the time as ISO 8601 text"


@pytest.mark.parametrize("key", [None, "crm-1"])
def test_add_note_refuses_a_time_given_as_a_number_with_or_without_a_key(
    mem: Memory, key: str | None
) -> None:
    """Before: with an idempotency key (add_notes' path) 1700000000 was read as Unix seconds,
    2023-11-14; without one it was refused. Milliseconds were read the same way."""
    with pytest.raises(InvalidInputError, match=NUMBER):
        mem.add_note(
            "Umbrella bought 40 seats",
            actor="agent:a",
            scope="umbrella",
            at=1700000000,
            wait=False,
            idempotency_key=key,
        )
    assert _raw_log_count(mem) == 0


@pytest.mark.parametrize("at", [1700000000, 1700000000000, 1.7e9])
def test_add_notes_and_check_inputs_refuse_a_time_given_as_a_number(mem: Memory, at: float) -> None:
    line = {"content": "Umbrella bought 41 seats", "scope": "umbrella", "at": at}
    ((position, problem),) = mem.check_inputs([line], actor="agent:a")
    assert position == 1 and problem.startswith(f"at: {at} is a number; write the time as ISO 8601 text")
    with pytest.raises(InvalidBatchInputError, match="is a number"):
        mem.add_notes([line], actor="agent:a", wait=False)
    assert _raw_log_count(mem) == 0


@pytest.mark.parametrize(
    ("content", "scope", "message"),
    [
        (123, "acme", "content must be text, got int"),
        (b"hello", "acme", r"content must be text, got bytes \(decode the bytes first\)"),
        ("hello world", 5, "scope must be text, got int"),
    ],
)
def test_a_wrong_type_is_named_not_reported_as_empty(
    mem: Memory, content: Any, scope: Any, message: str
) -> None:
    """Before: each said "content is empty" or "scope is empty"."""
    with pytest.raises(InvalidInputError, match=message):
        mem.add_note(content, actor="agent:x", scope=scope, wait=False)
    assert _raw_log_count(mem) == 0


@pytest.mark.parametrize(
    ("actor", "message"),
    [("robot:x", r"'robot' is not a kind of actor"), (":", r"nothing names a kind before ':'")],
)
def test_an_actor_whose_prefix_names_no_kind_is_refused(mem: Memory, actor: str, message: str) -> None:
    """Before: ``robot:x`` was kept as the agent ``robot:x`` and ``:`` as the agent ``:``."""
    with pytest.raises(InvalidInputError, match=message):
        mem.add_note("hello world", actor=actor, scope="acme", wait=False)
    with pytest.raises(InvalidInputError, match=message):
        mem.add_notes([{"content": "hello world", "scope": "acme"}], actor=actor, wait=False)
    assert _raw_log_count(mem) == 0
    mem.add_note("hello world", actor="agent:robot:x", scope="acme", wait=False)  # a name with a colon


def test_a_scope_typed_composed_decomposed_or_full_width_is_one_account(mem: Memory) -> None:
    """Before: "Société Générale" typed composed (NFC) and decomposed (NFD) were two accounts, and
    full-width ``ａｃｍｅ`` a third look-alike of acme."""
    composed = unicodedata.normalize("NFC", "Société Générale")
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    ids = [
        mem.add_note("Société Générale wants a pilot in May", actor="agent:a", scope=decomposed, wait=False),
        mem.add_note("Société Générale signs in June", actor="agent:a", scope=composed, wait=False),
        mem.add_note("Acme renews in May", actor="agent:a", scope="ａｃｍｅ", wait=False),
        *(
            o.raw_log_id
            for o in mem.add_notes(
                [{"content": "Acme wants SSO", "scope": " acme\u00a0"}], actor="agent:a", wait=False
            )
        ),
    ]
    assert [mem.input_status(i).scope for i in ids] == [composed, composed, "acme", "acme"]


def test_an_account_is_found_however_its_scope_is_typed(memory: Memory) -> None:
    """Kept composed, the account is searched and briefed on decomposed (as macOS types it) or
    full-width too; a grant made decomposed allows the composed account."""
    from amem.services.access import ScopeGrant, granted_scope

    composed = unicodedata.normalize("NFC", "Société Générale")
    decomposed = unicodedata.normalize("NFD", composed)
    note = memory.add_note("Société Générale wants a pilot in May", actor="agent:a", scope=decomposed)
    for typed in (composed, decomposed):
        assert [h.note_id for h in memory.search("pilot in May", scope=typed)] == [note]
        assert [f.note.id for f in memory.facts(typed).facts] == [note]
    acme = memory.add_note("Acme renews in May", actor="agent:a", scope="acme")
    assert [h.note_id for h in memory.search("renews", scope="ａｃｍｅ")] == [acme]
    assert granted_scope(decomposed) == composed
    assert ScopeGrant(holder="agent:a", scopes=frozenset({composed})).require(decomposed) == composed


@pytest.mark.parametrize(
    ("scope", "named"),
    [
        ("acme\u200b", "character 5 (U+200B ZERO WIDTH SPACE)"),
        ("\u202eemca", "character 1 (U+202E RIGHT-TO-LEFT OVERRIDE)"),
        ("acme\u00ad", "character 5 (U+00AD SOFT HYPHEN)"),
        ("ac\u200dme", "character 3 (U+200D ZERO WIDTH JOINER)"),
    ],
)
def test_a_scope_holding_an_invisible_or_reordering_character_is_refused_naming_it(
    mem: Memory, scope: str, named: str
) -> None:
    """Before: each was kept as an account of its own, shown as (or like) acme."""
    with pytest.raises(InvalidInputError, match=re.escape(f"scope: {named}")):
        mem.add_note("Acme lookalike pilot", actor="agent:a", scope=scope, wait=False)
    with pytest.raises(InvalidBatchInputError, match="invisible or reorders text"):
        mem.add_notes([{"content": "Acme lookalike pilot", "scope": scope}], actor="agent:a", wait=False)
    assert _raw_log_count(mem) == 0


def test_joiners_stay_where_a_name_outside_ascii_needs_them(mem: Memory) -> None:
    """The zero-width non-joiner of a Persian name, the joiner of an emoji sequence."""
    for scope in ("می\u200cخواهم", "👨\u200d👩\u200d👧"):
        raw_log_id = mem.add_note("A pilot in May", actor="agent:a", scope=scope, wait=False)
        assert mem.input_status(raw_log_id).scope == scope
