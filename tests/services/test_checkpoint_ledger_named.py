"""A checkpoint statement names the ledger it signs (the hash of its first event, inside what is
signed). `amem verify` given another store's log said only that the chain was not as signed; it now
also says the statement signs another ledger. It still fails: this ledger rewritten from its first
event reads the same, and that is what checkpoints are kept to catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.domain.hashing import sign_checkpoint
from amem.memory import Memory
from amem.services import checkpoints as cp
from tests.cli.test_note_commands import Cli
from tests.factories import said


def test_verify_says_a_log_signs_another_ledger_and_still_fails(
    memory: Memory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    amem = Cli(memory, capsys)
    key = tmp_path / "keys" / "k.pem"
    assert amem("keys", "init", "--key", str(key))[0] == 0
    said(memory, "Acme renews in March", scope="acme")
    mine = tmp_path / "mine.jsonl"
    assert amem("checkpoint", "--key", str(key), "--log", str(mine))[0] == 0
    with memory.ledger.read() as tx:
        first = str(tx.get_event(1).hash)
    assert cp.read_checkpoints(mine)[0][1]["ledger"] == first

    other = Memory(tmp_path / "other", database_url=f"sqlite:///{tmp_path / 'other.sqlite3'}")
    try:
        said(other, "Globex renews in May", scope="globex")
        theirs = tmp_path / "theirs.jsonl"
        Cli(other, capsys)("checkpoint", "--key", str(key), "--log", str(theirs))
    finally:
        other.close()

    code, out, _ = amem("verify", "--checkpoints", str(theirs), "--public-key", str(key))
    said_out = " ".join(out.split())
    assert code == 1, out
    assert "NOT PROVEN: checkpoint at line 1" in said_out
    assert (
        f"this one's is {first[:16]}): another store's checkpoint log, or this ledger rewritten" in said_out
    )
    code, out, _ = amem("verify", "--checkpoints", str(mine), "--public-key", str(key))
    assert code == 0 and "it signs another ledger" not in out, out

    # a statement from before statements named their ledger: proven as before, nothing more said
    (_, old), private = cp.read_checkpoints(theirs)[0], cp.load_private_key(key)
    del old["ledger"], old["signature"]
    old["signature"] = sign_checkpoint(private, old)
    assert cp.other_ledger(old, first) is None
