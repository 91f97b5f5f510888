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
    assert code == 1 and json.loads(out) == {"processed": [], "still_unprocessed": 1, "held": 0}

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


def test_update_refuses_an_attribute_given_twice(amem: Cli) -> None:
    """`next_step=a next_step=b` kept b without a word: the editor is asked which they meant."""
    note_id = amem.json("add", "Globex churn risk: usage fell", "--scope", "globex")["note_id"]

    code, _, err = amem(
        "update",
        note_id,
        "next_step=Call their VP",
        "next_step=Email their VP",
        "--actor",
        "agent:sales-agent",
    )

    assert code == 2
    said = " ".join(err.split())
    assert "next_step is given twice (next_step=Call their VP too): give each attribute once" in said
    assert amem.memory.pending() == [] or all(p.attribute != "next_step" for p in amem.memory.pending())


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
    assert code == 2 and "content: rejected" in out  # frozen: recorded as refused, said in the exit
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
    assert code == 2 and line.startswith("content: rejected (p_")  # a script checking $? sees it
    assert line.endswith("): refused by policy: content is frozen")
    code, out, _ = amem("delete", note_id, "--actor", "agent:crm", "--reason", "duplicate")
    assert code == 2 and out.strip().endswith(": rejected: refused by policy: deleted is frozen")
    code, out, _ = amem(
        "propose", note_id, "content", "Globex pays $60", "--reason", "x", "--actor", "agent:crm"
    )
    assert code == 2 and out.strip().endswith(": refused by policy: content is frozen")
    code, _, _ = amem(
        "update", note_id, "content=Globex pays $60", 'tags=["pricing"]', "--actor", "agent:crm"
    )
    assert code == 0  # one value applied beside the refused one: as an approval of some values
    assert amem.memory.read(note_id).content == "Globex pays $55 per seat"
    assert not amem.memory.read(note_id).deleted


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["update", "NOTE", "tags", "--actor", "agent:crm"], "attribute=value"),
        (["update", "n_nope", "tags=[]", "--actor", "agent:crm"], "does not exist"),
        (["delete", "n_nope", "--actor", "agent:crm", "--reason", "x"], "does not exist"),
        (["update", "NOTE", "reason=budget cut", "--actor", "agent:crm"], "use --reason"),
        (["update", "NOTE", "actor=bob", "--actor", "agent:crm"], "use --actor"),
        (["update", "NOTE", "note_id=n_1", "--actor", "agent:crm"], "the first argument"),
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


def test_update_reads_each_value_as_its_attribute_type_in_the_policy(
    reviewer_passwords: dict[str, str], amem: Cli
) -> None:
    """Before: every value was read as JSON first, so next_step=2027 was refused ("must be text,
    got int") and context=null cleared the context, applied at once. Text stays the text typed; a
    list is JSON, a date-time ISO 8601; a JSON string's quotes still come off, as the help says."""
    note_id = amem.json("add", "Globex renews in March", "--scope", "globex")["note_id"]
    context = amem.memory.read(note_id).context
    agent = ["--actor", "agent:crm"]
    edits = amem.json(
        "update",
        note_id,
        "next_step=2027",
        "context=null",
        "category=true",
        'customer_priorities=["EU data residency"]',
        "valid_at=2026-03-01",
        *agent,
    )
    by = {p["attribute"]: p for p in edits}
    assert by["next_step"]["new_value"] == "2027" and by["next_step"]["status"] == "pending"
    assert by["context"]["new_value"] == "null" and by["category"]["new_value"] == "true"
    assert by["customer_priorities"]["new_value"] == ["EU data residency"]
    assert by["valid_at"]["new_value"].startswith("2026-03-01T00:00:00")
    note = amem.memory.read(note_id)
    assert note.context == "null" != context and note.category == "true"  # text, never cleared

    (quoted,) = amem.json("update", note_id, 'next_step="Call their VP"', *agent)
    assert quoted["new_value"] == "Call their VP"
    (cleared,) = amem.json("update", note_id, "tags=[]", *agent)  # a list's own empty form
    assert cleared["new_value"] == [] and amem.memory.read(note_id).tags == []

    before = len(amem.memory.proposals(limit=1000))
    code, out, err = amem("update", note_id, "tags=churn-risk", *agent)
    assert code == 2 and out == ""
    assert one_error_line(err) == (
        "error: tags=churn-risk: tags is a list[str] in the policy, written as JSON "
        '(e.g. tags=\'["first", "second"]\' (tags=[] for none))'
    )
    assert len(amem.memory.proposals(limit=1000)) == before


def test_an_import_and_reprocess_say_which_inputs_a_lease_holds_and_until_when(
    amem: Cli, tmp_path: Path
) -> None:
    """After an import killed by a signal its inputs stay held until their lease ends. Before, the
    re-run said "run `amem reprocess`" and reprocess "N still unprocessed", each sending the user to
    the other in a loop; now both say how many a lease holds and until when. The re-run cannot tell
    a run killed from one still at work (tests/cli/test_import_overlapping.py), so it exits 4
    until they are done."""
    lines = [
        {"content": f"Acme call {i}: {i} more seats", "scope": "acme", "at": f"2026-03-0{i}T10:00:00Z"}
        for i in (1, 2)
    ]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    kept = amem.memory.add_notes(lines, actor="agent:import", wait=False)  # recorded, then the
    held = amem.memory.queue.claim("import-killed-by-sigterm", 10)  # import holding them is killed
    assert sorted(r.id for r in held) == sorted(o.raw_log_id for o in kept)
    until = max(amem.memory.input_status(o.raw_log_id).lease_until for o in kept)

    code, out, err = amem("import", str(path), "--json")
    result = json.loads(out)
    assert code == 4, err
    assert (result["pending"], result["held"], result["skipped"]) == (2, 2, 0)
    assert result["held_until"] == until.isoformat()
    code, out, _ = amem("import", str(path))
    assert code == 4 and out.startswith("0 notes added\n")  # "run `amem reprocess`" for none
    said = " ".join(out.split())
    holding = f"an import or worker holding them until {until:%Y-%m-%d %H:%M:%S} UTC"
    assert f"2 inputs are being processed by another run ({holding}" in said
    assert "If that run was stopped: after that time `amem reprocess` analyses what it left" in said

    code, out, _ = amem("reprocess")
    said = " ".join(out.split())
    assert code == 1 and said.startswith("processed 0 raw logs; 2 still unprocessed 2 of them held by")
    assert "reprocess leaves alone" in said and "AMEM_WORKER_LEASE_SECONDS" in said
    assert amem.memory.notes() == [] and amem.memory.count_raw_logs() == 2


def test_the_notes_table_shows_terminal_escapes_instead_of_obeying_them(amem: Cli) -> None:
    """A note's text, scope and tags came to the terminal as written: an ESC sequence in an
    agent's input could hide what followed or retitle the reviewer's window."""
    make_note(
        amem.memory, "Hooli pilot\x1b[8m hidden\x1b]0;owned\x07", scope="hooli\x1b[31m", tags=["q3\x9b"]
    )
    code, out, err = amem("notes")
    assert code == 0, err
    assert not any(c in out for c in "\x1b\x07\x9b"), out
    assert out.count("\\x") == 5  # each shown as its escape (folded by the table's columns)


def test_propose_reads_its_value_as_the_attribute_type_in_the_policy(amem: Cli) -> None:
    """`amem propose` read its value as JSON first, as `update` did: a next step of 2027 was
    refused ("must be text, got int"). Now both read a value the same way."""
    note_id = amem.json("add", "Globex renews in March", "--scope", "globex")["note_id"]
    agent = ["--actor", "agent:crm"]
    proposed = amem.json("propose", note_id, "next_step", "2027", "--reason", "the year", *agent)
    assert proposed["new_value"] == "2027" and proposed["status"] == "pending"
    listed = amem.json("propose", note_id, "customer_priorities", '["SSO"]', "--reason", "r", *agent)
    assert listed["new_value"] == ["SSO"]
    code, out, err = amem("propose", note_id, "tags", "churn-risk", "--reason", "r", *agent)
    assert code == 2 and out == "" and "tags is a list[str] in the policy" in err


def test_show_and_history_show_terminal_escapes_instead_of_obeying_them(amem: Cli) -> None:
    """`amem show` and `amem history` printed a note's values through table cells that passed
    control characters to the terminal as the `notes` table once did."""
    note = make_note(amem.memory, "Hooli pilot\x1b[8m hidden\x1b]0;owned\x07", scope="hooli", tags=["q3\x9b"])
    for command in ("show", "history"):
        code, out, err = amem(command, note.id)
        assert code == 0, err
        assert not any(c in out for c in "\x1b\x07\x9b"), (command, out)
        assert "\\x1b" in out, (command, out)


def test_show_writes_out_the_characters_that_reorder_or_hide_text(amem: Cli) -> None:
    """A right-to-left override made "$94" read "$49" on the reviewer's terminal, and a zero-width
    space made two account names look alike: both reached the terminal as written. They show as
    their escapes now; an emoji built with the zero-width joiner is left whole."""
    note = make_note(
        amem.memory, "Seat price \u202e94$\u202c, owner ac\u200bme \U0001f468\u200d\U0001f4bb", scope="hooli"
    )
    code, out, err = amem("show", note.id)
    assert code == 0, err
    assert not any(c in out for c in "\u202e\u202c\u200b"), out
    assert "\\u202e94$\\u202c" in out and "ac\\u200bme" in out, out
    assert "\U0001f468\u200d\U0001f4bb" in out
