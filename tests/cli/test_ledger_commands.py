"""The command-line contract of the ledger: every command, --json, errors on stderr."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from unittest.mock import patch

import pytest

from amem.cli import main
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, signed_in


def run(
    memory: Memory, capsys: pytest.CaptureFixture[str], *args: str, stdin: str = ""
) -> tuple[int, str, str]:
    with patch("sys.stdin", io.StringIO(stdin)):
        code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_review_flow_through_the_cli(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    note = make_note(memory, "Umbrella Corp chose the annual plan because of the discount")
    p = memory.propose(
        note.id, "decision_rationale", "annual discount", reason="stated", proposer=llm_proposer(memory)
    )

    code, out, _ = run(memory, capsys, "pending", "--json")
    assert code == 0
    page = json.loads(out)
    assert page["total"] == 1 and page["items"][0]["key"] == p.id  # no raw log: an item of its own
    pending = [f["proposal"] for f in page["items"][0]["fields"]]
    assert [x["id"] for x in pending] == [p.id]
    assert pending[0]["new_value"] == "annual discount" and pending[0]["proposer"]["model"] == "offline"

    code, out, err = run(memory, capsys, "approve", p.id, "--reviewer", "agent:sales-agent")
    assert code == 2 and "can never approve" in err and "Traceback" not in err

    code, out, err = run(
        memory, capsys, "approve", p.id, "--reviewer", "alice", "--password-stdin", stdin="not-hers\n"
    )
    assert code == 2 and err.strip() == "error: wrong reviewer name or password"
    assert memory.proposal(p.id).status.value == "pending"

    password = reviewer_passwords["alice"] + "\n"
    approve = ["approve", p.id, "--reviewer", "Alice", "--password-stdin", "--comment", "ok", "--json"]
    code, out, _ = run(memory, capsys, *approve, stdin=password)
    assert code == 0 and json.loads(out)["status"] == "approved"

    code, out, _ = run(memory, capsys, "show", note.id, "--json")
    assert json.loads(out)["decision_rationale"] == "annual discount"

    code, out, _ = run(memory, capsys, "history", note.id, "--json")
    events = [e["event"] for e in json.loads(out)]
    assert events[-3:] == ["proposed", "approved", "applied"]

    code, out, _ = run(memory, capsys, "pending")
    assert code == 0 and "nothing pending" in out


def test_reject_requires_comment_and_records_it(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    note = make_note(memory, "x")
    p = memory.propose(
        note.id, "valid_at", "2026-02-01T00:00:00Z", reason="dated", proposer=llm_proposer(memory)
    )
    code, _, err = run(memory, capsys, "reject", p.id, "--reviewer", "alice")
    assert code == 2 and "--comment" in err
    reject = ["reject", p.id, "--reviewer", "alice", "--comment", "no date stated", "--password-stdin"]
    code, out, _ = run(memory, capsys, *reject, stdin=reviewer_passwords["alice"])
    assert code == 0 and "rejected by alice" in out
    assert memory.proposal(p.id).review_comment == "no date stated"


def test_show_as_of_and_revert(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    note = make_note(memory, "Hooli pilot", tags=["pilot"])
    memory.propose(note.id, "tags", ["pilot", "expansion"], reason="r", proposer=llm_proposer(memory))
    _first_tags, second_tags = [c for c in memory.changes() if c.attribute == "tags"]

    moment = (second_tags.applied_at - timedelta(microseconds=1)).isoformat()
    code, out, _ = run(memory, capsys, "show", note.id, "--as-of", moment, "--json")
    assert code == 0 and json.loads(out)["tags"] == ["pilot"]

    revert = ["revert", str(second_tags.seq), "--reviewer", "bob", "--password-stdin", "--json"]
    code, out, _ = run(memory, capsys, *revert, stdin=reviewer_passwords["bob"])
    assert code == 0 and json.loads(out)["status"] == "auto_applied"
    assert memory.read(note.id).tags == ["pilot"]

    code, _, err = run(memory, capsys, "show", note.id, "--as-of", "last tuesday")
    assert code == 2 and "ISO 8601" in err


def test_a_revert_the_policy_refuses_says_why_and_exits_2(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, it printed "rejected" alone, exit 0: the reviewer learnt neither why nor that nothing
    was applied, where `amem approve` of a frozen attribute says so and exits 2."""
    import yaml

    from amem.policy import load_policy

    note = make_note(memory, "Hooli pilot", tags=["pilot"])
    memory.propose(note.id, "tags", ["pilot", "expansion"], reason="r", proposer=llm_proposer(memory))
    change = [c for c in memory.changes() if c.attribute == "tags"][-1]
    path = Path(os.environ["AMEM_POLICY"])
    data = yaml.safe_load(path.read_text("utf-8"))
    data["attributes"]["tags"] = {"mode": "frozen"}
    path.write_text(yaml.safe_dump(data), "utf-8")
    memory.install_policy(load_policy(path), by=signed_in(memory, "alice"))

    revert = ["revert", str(change.seq), "--reviewer", "alice", "--password-stdin"]
    code, out, err = run(memory, capsys, *revert, stdin=reviewer_passwords["alice"])
    (refused,) = [p for p in memory.proposals(limit=100) if p.revert_of == change.seq]
    assert code == 2 and f"proposal {refused.id} restores tags of {note.id}: rejected" in out
    assert "refused by policy: tags is frozen (attributes.tags.mode -> frozen)" in err
    assert "nothing was applied" in err and "Traceback" not in err
    code, out, err = run(memory, capsys, *revert, "--json", stdin=reviewer_passwords["alice"])
    assert code == 2 and json.loads(out)["status"] == "rejected"
    assert json.loads(err)["exit_code"] == 2 and "tags is frozen" in json.loads(err)["error"]
    assert memory.read(note.id).tags == ["pilot", "expansion"]


def test_show_keeps_team_attributes_apart_from_the_notes_own_fields(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy installed before such names were refused may declare a team attribute raw_log_ids:
    `amem show` printed its value in place of the note's raw logs."""
    import yaml

    from amem.policy import parse_policy

    monkeypatch.setattr("amem.policy._NOTE_FIELDS", frozenset(), raising=False)  # as an amem before the check
    data = yaml.safe_load(Path(os.environ["AMEM_POLICY"]).read_text("utf-8"))
    data["attributes"]["raw_log_ids"] = {"type": "text", "mode": "auto"}
    older = parse_policy(yaml.safe_dump(data), source="older.yaml")
    home = tmp_path / "home"
    with Memory(home, database_url=database_url, policy=older) as mem:
        note = make_note(mem, "Hooli wants a cheaper plan.")
        mem.update(note.id, actor="agent:sales-agent", reason="r", raw_log_ids="the CRM export")
    monkeypatch.undo()

    assert main(["--database-url", database_url, "--home", str(home), "show", note.id]) == 0
    out = capsys.readouterr().out
    own, team = out.split("team attributes")
    assert f'raw_log_ids        │ ["{note.raw_log_ids[0]}"]' in own and "the CRM export" not in own
    assert "raw_log_ids" in team and "the CRM export" in team


def test_user_mistakes_exit_non_zero_without_traceback(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (
        ["show", "n_nope"],
        ["approve", "p_nope", "--reviewer", "alice", "--password-stdin"],
        ["revert", "999", "--reviewer", "alice", "--password-stdin"],
    ):
        code, _out, err = run(memory, capsys, *args, stdin=reviewer_passwords["alice"])
        assert code == 2, args
        assert "does not exist" in err and "Traceback" not in err


def test_propose_command_routes_by_policy(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    note = make_note(memory, "x")
    bob = ["--actor", "bob", "--password-stdin"]
    password = reviewer_passwords["bob"] + "\n"
    code, out, _ = run(
        memory, capsys, "propose", note.id, "tags", '["a","b"]', "--reason", "r", *bob, stdin=password
    )
    assert code == 0 and "auto_applied" in out
    code, out, _ = run(
        memory, capsys, "propose", note.id, "content", "new", "--reason", "r", "--actor", "agent:crm"
    )
    assert code == 2 and "rejected" in out and "frozen" in out  # refused: a script's $? sees it
    assert memory.read(note.id).tags == ["a", "b"]


def test_installed_command_honours_environment(tmp_path, database_url: str) -> None:
    """The real `amem` entry point, configured only through AMEM_* variables."""
    env = {**os.environ, "AMEM_HOME": str(tmp_path / "store"), "AMEM_DATABASE_URL": database_url}
    amem = [sys.executable, "-m", "amem"]
    up = subprocess.run([*amem, "db", "upgrade"], env=env, capture_output=True, text=True, check=False)
    assert up.returncode == 0, up.stderr
    verify = subprocess.run([*amem, "verify", "--json"], env=env, capture_output=True, text=True, check=False)
    assert verify.returncode == 0, verify.stderr
    assert json.loads(verify.stdout)["ok"] is True


def test_approving_a_frozen_attribute_says_it_was_rejected_and_it_stays_rejected(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    note = make_note(memory, "x")
    p = memory.propose(
        note.id, "decision_rationale", "because", reason="stated", proposer=llm_proposer(memory)
    )
    policy = Path(os.environ["AMEM_POLICY"])
    frozen = policy.with_name("frozen.yaml")  # beside the reviewers file with the passwords
    text = policy.read_text("utf-8")
    frozen.write_text(
        text.replace("decision_rationale: {mode: review}", "decision_rationale: {mode: frozen}")
    )
    # the policy changes by an install (a process started with the file alone decides nothing)
    approve = ["--policy", str(frozen), "approve", p.id, "--reviewer", "alice", "--password-stdin"]
    code, _out, err = run(memory, capsys, *approve, stdin=reviewer_passwords["alice"])
    assert code == 2 and "decides nothing" in err and memory.proposal(p.id).status.value == "pending"
    # installed by a process started with the new file, as after editing ./policies.yaml: it said
    # "this process reads but decides nothing", then installed
    install = [
        "--policy",
        str(frozen),
        "policy",
        "install",
        str(frozen),
        "--reviewer",
        "alice",
        "--password-stdin",
    ]
    code, _out, err = run(memory, capsys, *install, stdin=reviewer_passwords["alice"])
    assert code == 0, err
    assert "decides nothing" not in err  # it installed: the warning was not true of this process
    code, _out, err = run(memory, capsys, *approve, stdin=reviewer_passwords["alice"])
    assert code == 2 and "refused by the policy: decision_rationale is frozen by policy v2" in err
    assert "was not approved: the policy rejected it" in err and "Traceback" not in err
    assert "decides nothing" not in err  # the install said nothing of the kind either
    assert memory.proposal(p.id).status.value == "rejected"
    code, _out, err = run(memory, capsys, *approve, stdin=reviewer_passwords["alice"])
    assert code == 2 and "is rejected by the policy, not pending" in err


def test_a_reviewer_decides_with_a_personal_token_and_an_agent_token_never_does(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A personal token (AMEM_REVIEWER_TOKEN, never on the command line) stands in for the password;
    it proves only its own holder, and an agent's token decides nothing."""
    note = make_note(memory, "We chose Postgres because the team knows it")
    p = memory.propose(
        note.id, "decision_rationale", "the team knows it", reason="stated", proposer=llm_proposer(memory)
    )
    bob_token, _ = memory.tokens.create("bob", role="reviewer", by=signed_in(memory, "bob"))
    agent_token, _ = memory.tokens.create("sales-agent", role="agent")

    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", agent_token)
    code, _, err = run(memory, capsys, "approve", p.id, "--reviewer", "alice")
    assert code == 2 and "can never approve" in err
    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", bob_token)
    code, _, err = run(memory, capsys, "approve", p.id, "--reviewer", "alice")
    assert code == 2 and "bob's token, not alice's" in err
    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", "not-a-token")
    code, _, err = run(memory, capsys, "approve", p.id, "--reviewer", "bob")
    assert code == 2 and "token" in err and len(err.strip().splitlines()) == 1
    assert memory.proposal(p.id).status.value == "pending"

    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", bob_token)
    code, out, err = run(memory, capsys, "approve", p.id, "--reviewer", "bob", "--json")
    assert code == 0, err
    decided = json.loads(out)
    assert decided["status"] == "approved" and decided["reviewer"] == "bob"


def test_only_the_reviewer_creates_their_token(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """A reviewer token stands in for the password, so making one takes that password: someone at a
    shell cannot mint bob's token and approve as bob, nor can another reviewer."""
    from amem.errors import PermissionDeniedError

    note = make_note(memory, "We chose Postgres because the team knows it")
    p = memory.propose(
        note.id, "decision_rationale", "the team knows it", reason="stated", proposer=llm_proposer(memory)
    )
    with pytest.raises(PermissionDeniedError, match="only bob, signed in"):
        memory.tokens.create("bob", "reviewer")
    with pytest.raises(PermissionDeniedError, match="each reviewer creates their own"):
        memory.tokens.create("bob", "reviewer", by=signed_in(memory, "alice"))

    create = ["tokens", "create", "bob", "--role", "reviewer", "--password-stdin", "--json"]
    code, out, err = run(memory, capsys, *create, stdin="guessed\n")
    assert code == 2 and "wrong reviewer name or password" in err and out == ""
    code, out, err = run(memory, capsys, *create[:-2])  # no password given: asked for, none typed
    assert code != 0 and "amem_" not in out
    assert memory.tokens.list() == []

    code, out, err = run(memory, capsys, *create, stdin=reviewer_passwords["bob"] + "\n")
    assert code == 0, err
    made = json.loads(out)
    assert made["identity"] == "bob" and made["created_by"] == "bob"
    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", made["token"])
    code, _, err = run(memory, capsys, "approve", p.id, "--reviewer", "bob")
    assert code == 0, err
    assert memory.proposal(p.id).reviewer == "bob"


def test_tokens_revoke_of_an_agent_name_leaves_its_reviewer_namesake_signed_in(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """`amem tokens revoke agent:bob` revoked reviewer bob's own token too: a leaked agent token's
    revocation signed a person out of the console and the CLI."""
    memory.tokens.create("bob", "agent")
    person, _ = memory.tokens.create("bob", "reviewer", by=signed_in(memory, "bob"))
    code, out, err = run(memory, capsys, "tokens", "revoke", "agent:bob", "--json")
    assert code == 0 and json.loads(out) == {"revoked": 1}, err
    assert memory.tokens.authenticate(person).role.value == "reviewer"
    active = sorted((t.role.value, t.revoked_at is None) for t in memory.tokens.list())
    assert active == [("agent", False), ("reviewer", True)]


def test_a_reviewer_token_expires_by_default_and_an_expired_one_decides_nothing(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """A reviewer token stands in for a password, so it lasts 90 days unless its reviewer says
    otherwise; an agent token lasts until revoked unless given a term. Past its expiry a token is
    refused, saying so; `amem tokens list` shows each token's expiry."""
    import sqlalchemy as sa

    from amem.domain.models import utcnow
    from amem.ledger.tables import api_tokens

    note = make_note(memory, "We chose Postgres because the team knows it")
    p = memory.propose(
        note.id, "decision_rationale", "the team knows it", reason="stated", proposer=llm_proposer(memory)
    )
    create = ["tokens", "create", "bob", "--role", "reviewer", "--password-stdin", "--json"]
    code, out, err = run(memory, capsys, *create, stdin=reviewer_passwords["bob"] + "\n")
    assert code == 0, err
    made = json.loads(out)
    expires = datetime.fromisoformat(made["expires_at"])
    assert timedelta(days=89, hours=23) < expires - utcnow() <= timedelta(days=90)
    code, out, err = run(memory, capsys, "tokens", "create", "crm-sync", "--json")
    assert code == 0 and json.loads(out)["expires_at"] is None, err
    code, out, err = run(memory, capsys, "tokens", "create", "crm-sync", "--expires-in-days", "7")
    assert code == 0 and "expires " in out, err
    code, _, err = run(memory, capsys, "tokens", "create", "crm-sync", "--expires-in-days", "-1")
    assert code == 2 and "give 1 to 3650 days, or 0" in err

    with memory.ledger.engine.begin() as conn:  # 90 days later
        conn.execute(
            sa.update(api_tokens)
            .where(api_tokens.c.id == made["id"])
            .values(expires_at=utcnow() - timedelta(minutes=1))
        )
    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", made["token"])
    code, _, err = run(memory, capsys, "approve", p.id, "--reviewer", "bob")
    assert code == 2 and "this token expired on" in err
    assert memory.proposal(p.id).status.value == "pending"
    monkeypatch.delenv("AMEM_REVIEWER_TOKEN")
    code, out, err = run(memory, capsys, "tokens", "list")
    assert code == 0 and "expires" in out and "never" in out, err
    code, out, _ = run(memory, capsys, "tokens", "list", "--json")
    terms = sorted((t["name"], t["expires_at"] is not None) for t in json.loads(out))
    assert terms == [("bob", True), ("crm-sync", False), ("crm-sync", True)]

    assert run(memory, capsys, "tokens", "revoke", "crm-sync")[0] == 0
    code, out, err = run(memory, capsys, "tokens", "history", "--json")
    history = [(e["action"], e["name"], e["by"]) for e in json.loads(out)]
    assert code == 0 and history[0] == ("created", "bob", "bob"), err
    assert [a for a, name, _ in history if name == "crm-sync"] == ["created", "created", "revoked", "revoked"]
    # the expiry this test moved by hand is not the term the chained record made
    assert memory.verify().bad_row == f"api_tokens {made['id']}"


def test_a_reviewer_is_told_before_their_token_expires_and_rotates_it_in_one_step(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """A week before its end, deciding with the token warns (and still decides); `--replace`
    makes the next token and revokes the old one in one step, both on the record."""
    note = make_note(memory, "We chose Postgres because the team knows it")
    p = memory.propose(
        note.id, "decision_rationale", "the team knows it", reason="stated", proposer=llm_proposer(memory)
    )
    create = ["tokens", "create", "bob", "--role", "reviewer", "--password-stdin", "--json"]
    code, out, err = run(
        memory, capsys, *create, "--expires-in-days", "3", stdin=reviewer_passwords["bob"] + "\n"
    )
    assert code == 0, err
    old = json.loads(out)
    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", old["token"])
    code, _, err = run(memory, capsys, "approve", p.id, "--reviewer", "bob")
    assert code == 0 and "warning: AMEM_REVIEWER_TOKEN expires on" in err and "--replace" in err

    code, out, err = run(memory, capsys, *create, "--replace", stdin=reviewer_passwords["bob"] + "\n")
    assert code == 0, err
    new = json.loads(out)
    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", old["token"])
    other = memory.propose(
        note.id, "next_step", "send the quote", reason="stated", proposer=llm_proposer(memory)
    )
    code, _, err = run(memory, capsys, "approve", other.id, "--reviewer", "bob")
    assert code == 2 and "unknown or revoked" in err
    monkeypatch.setenv("AMEM_REVIEWER_TOKEN", new["token"])
    code, _, err = run(memory, capsys, "approve", other.id, "--reviewer", "bob")
    assert code == 0 and "warning" not in err, err  # 90 days ahead
    history = [(e.action, e.token_id, e.by) for e in memory.tokens.history()]
    assert history[-2:] == [("revoked", old["id"], "bob"), ("created", new["id"], "bob")]
    assert memory.verify().ok


def test_pending_pages_have_the_bounds_of_facts_pages(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """A huge offset or limit is refused with what the bounds are, not an internal error."""
    from amem.services.facts import MAX_OFFSET, MAX_PAGE

    memory.propose(
        make_note(memory, "Acme renewed").id,
        "decision_rationale",
        "price",
        reason="r",
        proposer=llm_proposer(memory),
    )
    for option, value in (("--limit", str(MAX_PAGE + 1)), ("--offset", str(10**20)), ("--limit", "0")):
        code, out, err = run(memory, capsys, "pending", option, value)
        assert code == 2 and out == "", (option, value, err)
        assert f"Invalid value for '{option}'" in err and "internal error" not in err
    code, out, err = run(
        memory, capsys, "pending", "--limit", str(MAX_PAGE), "--offset", str(MAX_OFFSET), "--json"
    )
    assert code == 0 and json.loads(out) == {"items": [], "total": 1}, err
