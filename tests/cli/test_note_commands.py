"""The command-line contract of the note commands: add, reprocess, update, delete, notes.

Commands run through ``amem.cli.main`` against a real ledger (both backends). Where the model's
answers matter, the scripted LLM answers through the real litellm path (``--llm scripted/...``);
elsewhere the offline default analyses.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from unittest.mock import patch

import litellm
import pytest
import sqlalchemy as sa

from amem.cli import main
from amem.domain.models import ProposalStatus, RawLogState
from amem.ledger.tables import raw_logs
from amem.memory import Memory
from tests.factories import make_note, signed_in

MODEL = "scripted/test-model"
TEXT = "Acme will renew only with SSO; their auditor requires it. Next: send the SAML guide."


def construct(**overrides: object) -> str:
    answer: dict[str, object] = {
        "keywords": ["Acme", "SSO", "renewal"],
        "tags": ["acme", "security"],
        "context": "Acme needs SSO before renewing.",
        "category": "renewal",
        "decision_rationale": None,
        "valid_at": None,
        "extra": {},
    }
    answer.update(overrides)
    return json.dumps(answer)


LINK_NOTHING = json.dumps({"links": [], "updates": [], "contradictions": []})


def outage() -> Exception:
    return litellm.APIConnectionError(
        message="connection refused", llm_provider="scripted", model="test-model"
    )


class Cli:
    """``amem`` on one ledger and home, the way a user types it (global options before the command)."""

    def __init__(self, memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
        self.memory = memory
        self.capsys = capsys

    def __call__(self, *args: str, llm: str | None = None, stdin: str = "") -> tuple[int, str, str]:
        options = ["--database-url", self.memory.settings.database_url, "--home", str(self.memory.home)]
        if llm:
            options += ["--llm", llm]
        with patch("sys.stdin", io.StringIO(stdin)):
            code = main([*options, *args])
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err

    def json(self, *args: str, llm: str | None = None, stdin: str = "") -> object:
        code, out, err = self(*args, "--json", llm=llm, stdin=stdin)
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def amem(database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    memory = Memory(tmp_path / "home", database_url=database_url)
    try:
        yield Cli(memory, capsys)
    finally:
        memory.close()


def raw_log_count(memory: Memory) -> int:
    with memory.ledger.engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(raw_logs)).scalar_one())


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_add_json_names_the_note_and_what_waits_for_review(amem: Cli, scripted_llm) -> None:
    scripted_llm.push(
        construct(
            decision_rationale="their auditor requires it",
            extra={"next_step": "send the SAML guide"},
            # a value held for review needs its span of the raw log (issue 12)
            evidence={"decision_rationale": "their auditor requires it", "next_step": "send the SAML guide"},
        ),
        LINK_NOTHING,
    )
    options = ["--at", "2026-03-02T10:00:00Z", "--actor", "agent:sales-agent", "--scope", "acme"]
    added = amem.json("add", TEXT, *options, llm=MODEL)
    assert isinstance(added, dict) and set(added) == {"note_id", "note", "pending_proposals"}
    note = added["note"]
    assert note["id"] == added["note_id"] and note["scope"] == "acme" and note["content"] == TEXT
    assert note["keywords"] == ["Acme", "SSO", "renewal"] and note["tags"] == ["renewal", "acme", "security"]
    assert note["decision_rationale"] is None  # review: waits, not applied
    pending = amem.memory.pending(note_id=added["note_id"])
    assert sorted(added["pending_proposals"]) == sorted(p.id for p in pending)
    assert {p.attribute for p in pending} == {"decision_rationale", "next_step"}

    # the raw log keeps who said it, where and when, verbatim
    with amem.memory.ledger.read() as tx:
        (raw,) = tx.get_raw_logs(note["raw_log_ids"])
    assert raw.text == TEXT and raw.scope == "acme" and str(raw.actor) == "agent:sales-agent"
    assert raw.occurred_at.isoformat().startswith("2026-03-02T10:00:00")

    # the same note, as a person reads it
    scripted_llm.push(construct(), LINK_NOTHING)
    code, out, _ = amem("add", "Globex asked about seats", "--scope", "globex", llm=MODEL)
    assert code == 0 and "in scope globex" in out and "keywords: Acme, SSO, renewal" in out

    listed = amem.json("notes", "--scope", "acme")
    assert [n["id"] for n in listed] == [added["note_id"]]
    code, out, _ = amem("notes")
    assert code == 0 and added["note_id"] in out and "globex" in out


def test_notes_pages_have_the_bounds_of_facts_pages(amem: Cli) -> None:
    """A negative limit is refused, not read as "no limit"; a huge one is refused with what the
    bounds are, not an internal error."""
    from amem.services.facts import MAX_OFFSET, MAX_PAGE

    for scope in ("acme", "globex"):
        make_note(amem.memory, f"{scope} renewed", scope=scope)
    for option, value in (
        ("--limit", "-1"),
        ("--limit", str(MAX_PAGE + 1)),
        ("--offset", "-3"),
        ("--offset", str(10**20)),
    ):
        code, out, err = amem("notes", option, value)
        assert code == 2 and out == "", (option, value, err)
        assert f"Invalid value for '{option}'" in err and "internal error" not in err
    assert len(amem.json("notes", "--limit", "1")) == 1
    assert amem.json("notes", "--limit", str(MAX_PAGE), "--offset", str(MAX_OFFSET)) == []


def test_outage_keeps_the_raw_log_and_reprocess_exits_1_until_done(amem: Cli, scripted_llm) -> None:
    scripted_llm.push(construct(), outage())  # construction answers, linking fails: nothing half-applied
    code, out, err = amem("add", "Initech wants a pilot in Q3", "--scope", "initech", llm=MODEL)
    line = one_error_line(err)
    assert code == 4 and out == ""  # not a user mistake: the input is kept
    assert "is kept" in line and "amem reprocess" in line
    assert raw_log_count(amem.memory) == 1 and amem.memory.notes() == []

    scripted_llm.push(outage())  # still down
    code, out, _err = amem("reprocess", "--json", llm=MODEL)
    assert code == 1 and json.loads(out) == {"processed": [], "still_unprocessed": 1}

    scripted_llm.push(construct(keywords=["Initech", "pilot"]), LINK_NOTHING)
    code, out, _ = amem("reprocess", "--json", llm=MODEL)
    done = json.loads(out)
    assert code == 0 and done["still_unprocessed"] == 0 and len(done["processed"]) == 1
    note = amem.memory.read(done["processed"][0])
    assert note.content == "Initech wants a pilot in Q3" and note.keywords == ["Initech", "pilot"]
    with amem.memory.ledger.read() as tx:
        state = tx.raw_log_state(note.raw_log_ids[0])
    assert state is not None and state["state"] == RawLogState.PROCESSED.value

    code, out, _ = amem("reprocess", llm=MODEL)  # nothing left: no model call, nothing twice
    assert code == 0 and "processed 0 raw logs; 0 still unprocessed" in out
    assert len(amem.memory.notes()) == 1 and raw_log_count(amem.memory) == 1


def test_update_and_delete_become_routed_proposals(reviewer_passwords: dict[str, str], amem: Cli) -> None:
    added = amem.json("add", "Globex churn risk: usage fell", "--scope", "globex")  # offline analyst
    note_id = added["note_id"]
    bob = ["--actor", "bob", "--password-stdin"]
    password = reviewer_passwords["bob"] + "\n"

    proposals = amem.json(
        "update", note_id, 'tags=["churn-risk", "globex"]', "next_step=Call their VP", *bob, stdin=password
    )
    by_attribute = {p["attribute"]: p for p in proposals}
    assert by_attribute["tags"]["status"] == ProposalStatus.AUTO_APPLIED.value
    assert by_attribute["next_step"]["status"] == ProposalStatus.PENDING.value
    assert by_attribute["next_step"]["new_value"] == "Call their VP"  # not JSON: kept as text
    assert by_attribute["tags"]["proposer"]["id"] == "bob"
    assert amem.memory.read(note_id).tags == ["churn-risk", "globex"]

    code, out, _ = amem("update", note_id, "content=rewritten", *bob, stdin=password)
    assert code == 0 and "content: rejected" in out  # frozen: recorded as refused
    assert amem.memory.read(note_id).content == "Globex churn risk: usage fell"

    tomb = amem.json("delete", note_id, "--actor", "agent:sales-agent", "--reason", "duplicate")
    assert tomb["attribute"] == "deleted" and tomb["status"] == ProposalStatus.PENDING.value
    assert tomb["reason"] == "duplicate"
    assert [n["id"] for n in amem.json("notes")] == [note_id]  # not hidden until approved
    amem.memory.approve(tomb["id"], reviewer=signed_in(amem.memory, "alice"))
    assert amem.json("notes") == []
    assert amem.memory.history(note_id)[-1].attribute == "deleted"  # kept in history


def test_a_person_edits_only_signed_in_and_an_agent_edits_by_its_name(
    reviewer_passwords: dict[str, str], amem: Cli
) -> None:
    """A name typed after --actor is not proof: a policy may apply a person's edits by themselves,
    and history would name someone who never acted. An agent edits, deletes and proposes as
    agent:NAME, its edits routed as an agent's."""
    note_id = amem.json("add", "Initech renews in March", "--scope", "initech")["note_id"]
    before = (len(amem.memory.changes()), len(amem.memory.pending(limit=100)))
    tags = 'tags=["renewal"]'
    for args in (
        ["update", note_id, tags, "--actor", "bob", "--password-stdin"],
        ["delete", note_id, "--actor", "Bob", "--reason", "dup", "--password-stdin"],
        ["propose", note_id, "tags", '["x"]', "--reason", "r", "--actor", "bob", "--password-stdin"],
    ):
        code, _out, err = amem(*args, stdin="not-bobs\n")
        assert code == 2 and one_error_line(err) == "error: wrong reviewer name or password", args
    code, _out, _err = amem("update", note_id, tags, "--actor", "bob")  # asked for, none given
    assert code != 0
    for kind in ("llm:gpt-4o", "system:amem", "LLM:x"):  # amem records these itself, never typed
        code, _out, err = amem("update", note_id, tags, "--actor", kind)
        assert code == 2 and "edit as agent:NAME or as a person" in err, kind
    code, _out, err = amem("update", note_id, tags, "--actor", "mallory", "--password-stdin", stdin="x\n")
    assert code == 2 and "wrong reviewer name or password" in err  # nobody of that name signs in
    assert (len(amem.memory.changes()), len(amem.memory.pending(limit=100))) == before

    (edit,) = amem.json("update", note_id, tags, "--actor", "agent:crm-sync")  # no password asked
    assert (edit["proposer"]["kind"], edit["proposer"]["id"]) == ("agent", "crm-sync")
    (signed,) = amem.json(
        "update",
        note_id,
        'tags=["renewal", "q1"]',
        "--actor",
        "Bob",
        "--password-stdin",
        stdin=reviewer_passwords["bob"] + "\n",
    )
    assert signed["proposer"]["kind"] == "person" and signed["proposer"]["id"] == "bob"
    assert amem.memory.read(note_id).tags == ["renewal", "q1"]


@pytest.fixture
def bob_owns_acme(reviewer_passwords: dict[str, str]) -> dict[str, str]:
    """The reviewers' passwords, bob limited to the acme account (``scopes``), set before the store
    opens (request it before ``amem``)."""
    import os

    import yaml

    folder = Path(os.environ["AMEM_POLICY"]).parent
    data = yaml.safe_load((folder / "reviewers.yaml").read_text("utf-8"))
    data["reviewers"]["bob"]["scopes"] = ["acme"]
    (folder / "reviewers.yaml").write_text(yaml.safe_dump(data), "utf-8")
    return reviewer_passwords


def test_a_person_edits_only_in_the_accounts_the_policy_gives_them(
    bob_owns_acme: dict[str, str], amem: Cli
) -> None:
    """Signing in proves who edits, and the policy's limit follows them: bob, owning acme, is
    refused an update, a deletion and a proposal on a globex note (his tags would apply by
    themselves), and nothing is recorded; in acme his edit applies."""
    theirs = amem.json("add", "Globex pays $55 per seat", "--scope", "globex")["note_id"]
    ours = amem.json("add", "Acme pays $40 per seat", "--scope", "acme")["note_id"]
    before = (len(amem.memory.changes()), len(amem.memory.proposals(limit=1000)))
    tags = amem.memory.read(theirs).tags
    bob = ["--actor", "bob", "--password-stdin"]
    password = bob_owns_acme["bob"] + "\n"
    for args in (
        ["update", theirs, 'tags=["hacked"]', *bob],
        ["delete", theirs, "--reason", "not mine to delete", *bob],
        ["propose", theirs, "tags", '["hacked"]', "--reason", "r", *bob],
    ):
        code, _out, err = amem(*args, stdin=password)
        assert code == 2 and one_error_line(err) == "error: bob decides in acme only, not in globex", args
    assert (len(amem.memory.changes()), len(amem.memory.proposals(limit=1000))) == before
    assert amem.memory.read(theirs).tags == tags and not amem.memory.read(theirs).deleted

    (edit,) = amem.json("update", ours, 'tags=["pricing"]', *bob, stdin=password)
    assert edit["status"] == ProposalStatus.AUTO_APPLIED.value and edit["proposer"]["id"] == "bob"


@pytest.fixture
def frozen_deletions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The repository's policy with ``deleted`` frozen, in force before the store opens (request it
    before ``amem``)."""
    import yaml

    from tests.conftest import REPO

    folder = tmp_path / "frozen-deletions"
    folder.mkdir()
    data = yaml.safe_load((REPO / "policies.yaml").read_text("utf-8"))
    data["attributes"]["deleted"] = {"mode": "frozen"}
    (folder / "policies.yaml").write_text(yaml.safe_dump(data), "utf-8")
    (folder / "reviewers.yaml").write_text((REPO / "reviewers.yaml").read_text("utf-8"), "utf-8")
    monkeypatch.setenv("AMEM_POLICY", str(folder / "policies.yaml"))


def test_an_edit_the_policy_refuses_says_why(frozen_deletions: None, amem: Cli) -> None:
    """ "rejected" alone leaves the editor guessing: the policy's reason is printed with it."""
    note_id = amem.json("add", "Globex pays $55 per seat", "--scope", "globex")["note_id"]
    code, out, _ = amem("update", note_id, "content=Globex pays $60", "--actor", "agent:crm")
    (line,) = out.strip().splitlines()
    assert code == 0 and line.startswith("content: rejected (p_")
    assert line.endswith("): refused by policy: content is frozen")
    code, out, _ = amem("delete", note_id, "--actor", "agent:crm", "--reason", "duplicate")
    assert code == 0 and out.strip().endswith(": rejected: refused by policy: deleted is frozen")
    assert amem.memory.read(note_id).content == "Globex pays $55 per seat"
    assert not amem.memory.read(note_id).deleted


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["update", "NOTE", "tags", "--actor", "agent:crm"], "attribute=value"),
        (["update", "n_nope", "tags=[]", "--actor", "agent:crm"], "does not exist"),
        (["delete", "n_nope", "--actor", "agent:crm", "--reason", "x"], "does not exist"),
    ],
)
def test_update_and_delete_mistakes(amem: Cli, args: list[str], message: str) -> None:
    note_id = amem.json("add", "Hooli pilot starts next week", "--scope", "hooli")["note_id"]
    before = len(amem.memory.changes())
    code, _out, err = amem(*[note_id if a == "NOTE" else a for a in args])
    assert code == 2 and message in err and "Traceback" not in err
    assert len(amem.memory.changes()) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", ""], "content is empty"),
        (["add", "  \n "], "content is empty"),
        (["add", "Acme call", "--at", "next thursday-ish"], "ISO 8601"),
        (["add", "Acme call", "--scope", " "], "scope is empty"),
        (["add", "Acme call", "--actor", " "], "actor is required"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    amem: Cli, scripted_llm, args: list[str], message: str
) -> None:
    code, out, err = amem(*args, "--json", llm=MODEL)
    assert code == 2 and out == ""
    assert message in one_error_line(err)
    assert raw_log_count(amem.memory) == 0 and amem.memory.notes() == []
    assert scripted_llm.requests == []  # refused before any model call


def test_add_run_again_with_its_key_shows_the_note_kept_before(amem: Cli, scripted_llm) -> None:
    """A script that retries `amem add` (a timeout, a cron run twice) keeps the input once."""
    scripted_llm.push(construct(), LINK_NOTHING)
    options = ["--scope", "globex", "--idempotency-key", "crm-note-812"]
    first = amem.json("add", "Globex asked about seats", *options, llm=MODEL)
    again = amem.json("add", "Globex asked about seats", *options, llm=MODEL)
    assert isinstance(first, dict) and isinstance(again, dict)
    assert again["note_id"] == first["note_id"]
    assert amem.memory.count_notes("globex") == 1
    code, _, err = amem("add", "Globex churned", *options, llm=MODEL)
    assert code == 2 and "names another input" in one_error_line(err)


def test_import_adds_every_line_and_names_a_bad_line_without_recording_anything(
    amem: Cli, scripted_llm, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "Acme call", "scope": "acme"}\n\n{"content": ""}\n', "utf-8")
    code, out, err = amem("import", str(bad), "--scope", "acme", llm=MODEL)
    assert code == 2 and out == "" and "bad.jsonl, line 3: content is empty" in one_error_line(err)
    bad.write_text('{"content": "Acme call", "scope": "acme"}\n{"content": "Acme\n', "utf-8")
    code, _, err = amem("import", str(bad), llm=MODEL)
    assert code == 2 and "line 2: not JSON" in one_error_line(err)
    assert raw_log_count(amem.memory) == 0

    good = tmp_path / "calls.jsonl"
    lines = [
        {"content": "Acme wants SSO", "at": "2026-03-01T09:00:00Z"},
        {"content": "Globex asked about seats", "scope": "globex", "metadata": {"crm_id": "G-7"}},
        {"content": "Acme confirmed Okta"},
    ]
    good.write_text("\n".join(json.dumps(line) for line in lines) + "\n", "utf-8")
    scripted_llm.push(construct(), outage(), construct(), LINK_NOTHING, LINK_NOTHING)
    code, out, err = amem("import", str(good), "--scope", "acme", "--json", llm=MODEL)
    result = json.loads(out)
    assert code == 4  # one input kept but not analysed: like `amem add` in an outage
    assert result["added"] == 2 and result["pending"] == 1
    assert [o["note_id"] is None for o in result["outcomes"]] == [False, True, False]
    assert {n.scope for n in amem.memory.notes()} == {"acme"}
    with amem.memory.ledger.read() as tx:
        raws = tx.get_raw_logs([o["raw_log_id"] for o in result["outcomes"]])
    assert {r.text: (r.scope, r.metadata) for r in raws}["Globex asked about seats"] == (
        "globex",
        {"crm_id": "G-7"},
    )
    assert raw_log_count(amem.memory) == 3


def test_import_run_again_skips_the_lines_recorded_before_and_says_so(
    amem: Cli, scripted_llm, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.jsonl"
    lines = [
        {"content": "Acme wants SSO", "at": "2026-03-01T09:00:00Z"},
        {"content": "Acme confirmed Okta", "at": "2026-03-02T09:00:00Z"},
    ]
    calls.write_text("\n".join(json.dumps(line) for line in lines) + "\n", "utf-8")
    scripted_llm.push(construct(), construct(), LINK_NOTHING, LINK_NOTHING)
    code, out, _ = amem("import", str(calls), "--scope", "acme", "--json", llm=MODEL)
    first = json.loads(out)
    assert code == 0 and (first["added"], first["skipped"]) == (2, 0)

    # run again, as after an interruption, with one more line at the end
    lines.append({"content": "Acme signed the order form", "at": "2026-03-03T09:00:00Z"})
    calls.write_text("\n".join(json.dumps(line) for line in lines) + "\n", "utf-8")
    scripted_llm.push(construct(), LINK_NOTHING)
    code, out, _ = amem("import", str(calls), "--scope", "acme", llm=MODEL)
    assert code == 0 and "1 notes added" in out
    assert (
        "2 lines recorded before (the same idempotency key, or the same scope, at, actor and text): skipped"
        in out
    )
    assert raw_log_count(amem.memory) == 3

    # --record-again records them anyway
    scripted_llm.push(*[construct() for _ in range(3)], *[LINK_NOTHING for _ in range(3)])
    code, out, _ = amem("import", str(calls), "--scope", "acme", "--record-again", "--json", llm=MODEL)
    again = json.loads(out)
    assert code == 0 and (again["added"], again["skipped"]) == (3, 0)
    assert raw_log_count(amem.memory) == 6
