"""Every tampering case of issue 13, done with the database's own rights, is caught and named.

Without a checkpoint, the chains and the replay catch each case of the issue; the cases where the
attacker recomputes every hash of both chains are caught only with a signed checkpoint taken before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.memory import Memory
from amem.services import checkpoints
from tests.ledger import tamper_cases as tc

CASES = {**tc.ISSUE_CASES, **tc.ADDED_CASES}


@pytest.mark.parametrize("name", list(CASES))
def test_tampering_is_detected_and_the_row_named(memory: Memory, tmp_path: Path, name: str) -> None:
    scene = tc.build(memory, erased=name in tc.NEEDS_ERASURE)
    key, log = tmp_path / "key.pem", tmp_path / "checkpoints.jsonl"
    checkpoints.init_key(key)
    memory.checkpoint(key=key, log=log)
    assert memory.verify().ok and memory.verify(checkpoints=log, public_key=key).ok

    named = tc.tamper(memory, CASES[name], scene)

    plain = memory.verify()
    with_checkpoint = memory.verify(checkpoints=log, public_key=key)
    assert not with_checkpoint.ok
    if name in tc.NEEDS_CHECKPOINT:
        assert plain.ok  # every hash recomputed: only the checkpoint can tell
        assert with_checkpoint.bad_row == "checkpoint line 1"
        assert not with_checkpoint.checkpoints[0].proven
    else:
        assert not plain.ok
        assert plain.bad_row == named, plain.problems
        if name in tc.NAMED_FIELD:
            assert tc.NAMED_FIELD[name] in plain.message, plain.message


def test_a_forged_append_after_the_checkpoint_is_outside_what_it_proves(
    memory: Memory, tmp_path: Path
) -> None:
    """A documented limit: the checkpoint proves the past; the rows after it are reported as uncovered."""
    scene = tc.build(memory)
    key, log = tmp_path / "key.pem", tmp_path / "checkpoints.jsonl"
    checkpoints.init_key(key)
    signed = memory.checkpoint(key=key, log=log)
    tc.tamper(memory, tc.full_forged_append, scene)
    result = memory.verify(checkpoints=log, public_key=key)
    assert result.ok
    assert f"events {signed['event_seq'] + 1}..{signed['event_seq'] + 3} are covered by no checkpoint" in (
        result.message
    )
