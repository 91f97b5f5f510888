"""Signed checkpoints kept outside the ledger: the key, the log, and what `verify --checkpoints` proves."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import sqlalchemy as sa

from amem.cli import main
from amem.ledger import schema
from amem.memory import Memory
from tests.factories import make_note, signed_in
from tests.ledger import older_ledgers
from tests.ledger import tamper_cases as tc


def _cli(memory: Memory, *args: str) -> list[str]:
    return ["--database-url", memory.settings.database_url, "--home", str(memory.home), *args]


def test_keys_init_writes_a_private_key_only_its_owner_reads(tmp_path: Path, monkeypatch, capsys) -> None:
    key = tmp_path / "secret" / "amem.pem"
    monkeypatch.setenv("AMEM_SIGNING_KEY", str(key))
    assert main(["--home", str(tmp_path / "home"), "keys", "init"]) == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert (tmp_path / "secret" / "amem.pem.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert "0600" in capsys.readouterr().out
    before = key.read_bytes()
    assert main(["--home", str(tmp_path / "home"), "keys", "init"]) == 2  # never overwrites
    assert "already exists" in capsys.readouterr().err
    assert key.read_bytes() == before


def test_checkpoints_are_proven_and_report_what_they_cover(memory: Memory, capsys) -> None:
    make_note(memory, "Acme renews in March", tags=["renewal"])
    assert main(_cli(memory, "keys", "init")) == 0
    assert main(_cli(memory, "checkpoint")) == 0
    make_note(memory, "Globex wants 50 seats", tags=["seats"])
    assert main(_cli(memory, "checkpoint")) == 0
    make_note(memory, "Initech asks for SSO", tags=["sso"])
    log = memory.home / "checkpoints.jsonl"
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    assert first["event_seq"] < second["event_seq"]
    assert "signature" in first and first["key_id"] == second["key_id"]
    capsys.readouterr()
    assert main(_cli(memory, "verify", "--checkpoints", str(log))) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK:")
    assert f"events 1..{first['event_seq']} and changes 1..{first['change_seq']}" in out
    assert "covered by no checkpoint yet" in out  # the third note came after the last checkpoint


def test_an_altered_or_foreign_statement_is_not_proven(memory: Memory, tmp_path: Path, capsys) -> None:
    make_note(memory, "Acme renews in March", tags=["renewal"])
    assert main(_cli(memory, "keys", "init")) == 0
    assert main(_cli(memory, "checkpoint")) == 0
    log = memory.home / "checkpoints.jsonl"
    statement = json.loads(log.read_text())
    # the attacker edits the statement to match a truncated ledger: the signature no longer holds
    edited = tmp_path / "edited.jsonl"
    edited.write_text(json.dumps({**statement, "event_seq": statement["event_seq"] - 1}) + "\n")
    capsys.readouterr()
    assert main(_cli(memory, "verify", "--checkpoints", str(edited))) == 1
    assert "signature does not match" in capsys.readouterr().out
    # ... or signs statements with a key of their own: verify checks them against ours
    other = tmp_path / "other.pem"
    assert main(_cli(memory, "checkpoint", "--key", str(other))) == 2  # no such key yet
    assert main(_cli(memory, "keys", "init", "--key", str(other))) == 0
    assert main(_cli(memory, "checkpoint", "--key", str(other), "--log", str(tmp_path / "mine.jsonl"))) == 0
    capsys.readouterr()
    # a log signed with another key proves nothing about this ledger either way: the key or the log
    # named is wrong, a usage error (2) naming both keys, not tampering (1)
    ours = json.loads(log.read_text())["key_id"]
    theirs = json.loads((tmp_path / "mine.jsonl").read_text())["key_id"]
    assert main(_cli(memory, "verify", "--checkpoints", str(tmp_path / "mine.jsonl"))) == 2
    said = capsys.readouterr()
    assert "wrong key for this log" in said.err and theirs in said.err and ours in said.err
    assert "TAMPERED" not in said.out


def test_a_bad_log_line_or_a_readable_key_is_a_user_mistake(memory: Memory, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event_seq": 1}\nnot json\n')
    assert main(_cli(memory, "keys", "init")) == 0
    capsys.readouterr()
    assert main(_cli(memory, "verify", "--checkpoints", str(bad))) == 2
    assert "bad.jsonl, line 2: not JSON" in capsys.readouterr().err
    key = memory.home / "keys" / "checkpoint-ed25519.pem"
    key.chmod(0o644)
    assert main(_cli(memory, "checkpoint")) == 2
    assert "readable by others" in capsys.readouterr().err


def test_truncation_after_a_checkpoint_is_caught_through_the_cli(memory: Memory, capsys) -> None:
    scene = tc.build(memory)
    assert main(_cli(memory, "keys", "init")) == 0
    assert main(_cli(memory, "checkpoint")) == 0
    tc.tamper(memory, tc.full_truncate_every_chain, scene)
    capsys.readouterr()
    assert main(_cli(memory, "verify")) == 0  # every hash consistent: the chains alone cannot tell
    log = memory.home / "checkpoints.jsonl"
    assert main(_cli(memory, "verify", "--checkpoints", str(log))) == 1
    out = capsys.readouterr().out
    assert "TAMPERED" in out and "the chain was truncated" in out


def test_an_upgraded_ledger_gets_its_events_in_order_and_verifies(memory: Memory) -> None:
    scene = tc.build(memory, recent=False)  # a downgrade below 0016 / 0021 is refused once tokens /
    # corrections are on the record
    with memory.ledger.read() as tx:
        before = tx.chain_state()["counts"]
    # 0004 predates policy_versions: going down to it drops the version 1 the new ledger installed
    assert before.pop("policy") == 1
    engine = memory.ledger.engine
    older_ledgers.back_to(engine, "0004")  # a ledger an amem before the chain wrote
    assert "events" not in sa.inspect(engine).get_table_names()
    schema.upgrade(engine)
    with memory.ledger.read() as tx:
        assert tx.chain_state()["counts"] == before
        ats = [e.at for e in tx.iter_events()]
    assert ats == sorted(ats)
    assert memory.verify().ok
    # the backfilled chain protects the old rows like new ones
    named = tc.tamper(memory, tc.proposal_status_forged, scene)
    assert memory.verify().bad_row == named


def test_an_emptied_checkpoint_log_proves_nothing_and_says_so(memory: Memory, capsys) -> None:
    make_note(memory, "Acme renews in March", tags=["renewal"])
    assert main(_cli(memory, "keys", "init")) == 0
    assert main(_cli(memory, "checkpoint")) == 0
    log = memory.home / "checkpoints.jsonl"
    log.write_text("\n")  # emptied: whoever rewrote the ledger also blanked the log
    capsys.readouterr()
    assert main(_cli(memory, "verify", "--checkpoints", str(log))) == 2
    said = capsys.readouterr()
    assert not said.out.startswith("OK")
    assert (
        str(log) in said.err
        and "holds no checkpoint statement" in said.err
        and "nothing is proven" in said.err
    )


def test_an_erasure_after_a_checkpoint_is_reported_as_a_note_not_as_tampering(memory: Memory, capsys) -> None:
    """A real erasure verifies; an auditor still learns it redacted rows a checkpoint signed."""
    gone = make_note(memory, "Jane Doe at jane@example.com asked for a refund", tags=["refund"])
    assert main(_cli(memory, "keys", "init")) == 0
    assert main(_cli(memory, "checkpoint")) == 0
    report = memory.erase(
        by=signed_in(memory, "alice"), reason="GDPR art. 17", raw_log_id=gone.raw_log_ids[0]
    )
    log = memory.home / "checkpoints.jsonl"
    result = memory.verify(checkpoints=log)
    assert result.ok, result.problems
    assert len(result.notices) == 1
    notice = result.notices[0]
    assert report.erasure_id in notice and "GDPR art. 17" in notice and "line 1" in notice
    assert f"raw_logs {gone.raw_log_ids[0]}" in notice and "changes " in notice
    capsys.readouterr()
    assert main(_cli(memory, "verify", "--checkpoints", str(log))) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK:") and f"note: erasure {report.erasure_id}" in out
    # signed again after the erasure: nothing the newest checkpoint signed was redacted after it
    assert main(_cli(memory, "checkpoint")) == 0
    assert memory.verify(checkpoints=log).notices == [notice]
