"""The review commands as a reviewer uses them: items readable at 80 columns, approving an item,
all items matching a filter after a count and a confirmation, facts, retired search hits."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from unittest.mock import patch

import pytest
from rich.console import Console

from amem.cli import blocks, main
from amem.domain.models import ProposalStatus
from amem.memory import Memory
from amem.policy import load_policy
from amem.services.review import value_words
from tests.conftest import REVIEWER_PASSWORDS
from tests.factories import contradict, llm_proposer, said, signed_in

LONG_REASON = (
    "The customer's procurement lead said on the call that the renewal depends on single sign-on "
    "through Okta being available before their fiscal year closes, and that their auditor insists"
)
LONG_VALUE = (
    "Renew for two years because the migration to our EU region removed their data-residency "
    "blocker, which legal had raised in every quarterly business review since the pilot"
)
TEXT = (
    "Globex renewed for two years. Why: the migration to our EU region removed their data-residency "
    "blocker, which legal had raised in every quarterly business review since the pilot."
)


@pytest.fixture(autouse=True)
def _passwords(reviewer_passwords: dict[str, str]) -> None:
    """Every reviewer has a password; decisions below give theirs on standard input."""


def run(
    memory: Memory, capsys: pytest.CaptureFixture[str], *args: str, stdin: str = ""
) -> tuple[int, str, str]:
    """The command; an approve or reject gets its reviewer's password on stdin, before ``stdin``."""
    argv = list(args)
    if argv[0] in ("approve", "reject", "correct") and "--reviewer" in argv:
        argv.append("--password-stdin")
        stdin = REVIEWER_PASSWORDS[argv[argv.index("--reviewer") + 1]] + "\n" + stdin
    with patch("sys.stdin", io.StringIO(stdin)):
        code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def flat(text: str) -> str:
    return " ".join(text.split())


def assert_readable_at_80(output: str, values: list[str]) -> None:
    """No line over 80 columns, and each value in full with no word split across lines."""
    assert all(len(line) <= 80 for line in output.splitlines()), max(output.splitlines(), key=len)
    assert all(line == line.rstrip() for line in output.splitlines())  # no padding to copy along
    joined = flat(output)
    unmarked = flat(output.replace("«", "").replace("»", ""))
    for value in values:
        assert flat(value) in joined or flat(value) in unmarked, value


def console80() -> Console:
    return Console(width=80, file=io.StringIO(), record=True, color_system=None)


@pytest.fixture
def item(memory: Memory):
    note = said(memory, TEXT, scope="globex", at=datetime(2026, 6, 3, 14, 30, tzinfo=UTC))
    rationale = memory.propose(
        note.id,
        "decision_rationale",
        LONG_VALUE,
        reason=LONG_REASON,
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
        evidence="the migration to our EU region removed their data-residency blocker",
    )
    valid = memory.propose(
        note.id,
        "valid_at",
        "2026-06-03T00:00:00Z",
        reason="renewed on the call",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    priorities = memory.propose(
        note.id,
        "customer_priorities",
        ["EU data residency", "two-year price lock"],
        reason="stated",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    return note, [rationale, valid, priorities]


def test_pending_is_one_readable_block_per_item_at_80_columns(memory: Memory, item) -> None:
    note, proposals = item
    console = console80()
    blocks.review_items(console, memory.review_items())
    output = console.export_text()
    assert_readable_at_80(
        output,
        [
            LONG_VALUE,  # proposed, in full
            LONG_REASON,
            TEXT.split(". Why")[0],  # the raw log text
            "«the migration to our EU region removed their data-residency blocker»",  # evidence marked
            "3 June 2026, 14:30 UTC by agent:sales-agent",  # when it was said, by whom
            "3 June 2026",  # a date proposed, as a date
            "• EU data residency",  # a list, as a list
            "• two-year price lock",
            f"item {note.raw_log_ids[0]}",
            "account globex",
            *(p.id for p in proposals),
            f"decision_rationale of note {note.id}",
        ],
    )
    assert "{" not in output and '"' not in output  # never JSON


def test_the_pending_command_prints_those_blocks(memory: Memory, item, capsys) -> None:
    code, out, _ = run(memory, capsys, "pending", "--scope", "globex")
    assert code == 0
    assert_readable_at_80(out, [LONG_VALUE, LONG_REASON, "review items waiting: 1"])
    memory.add_note("Acme booked a call", actor="agent:sales-agent", scope="acme", wait=False)
    code, out, _ = run(memory, capsys, "pending", "--scope", "acme")  # an account, nothing pending
    assert code == 0 and "nothing pending" in out


def test_history_is_readable_at_80_columns(memory: Memory, item) -> None:
    note, proposals = item
    memory.approve(proposals[0].id, reviewer=signed_in(memory, "alice"), comment=LONG_REASON)
    console = console80()
    blocks.history(
        console, note.id, memory.history(note.id), lambda a, v: value_words(v, memory.policy.type_of(a))
    )
    output = console.export_text()
    assert_readable_at_80(output, [LONG_VALUE, LONG_REASON, "approved", "person:alice", "3 June 2026"])


def test_the_history_command_prints_blocks(memory: Memory, item, capsys) -> None:
    note, _ = item
    code, out, _ = run(memory, capsys, "history", note.id)
    assert code == 0
    assert_readable_at_80(out, [LONG_VALUE, LONG_REASON, "• EU data residency"])


def test_the_history_command_names_the_model_call_behind_each_value(memory: Memory, capsys) -> None:
    """An auditor reads a value back to the recorded model call that proposed it (its id, to read
    with `amem export llm-calls`), in the blocks and in --json."""
    note_id = memory.add_note("Acme renews if we ship SSO by March.", actor="agent:sales-agent", scope="acme")
    calls = {e.proposal_id: e.llm_call_id for e in memory.history(note_id) if e.llm_call_id}
    keywords = next(c for c in memory.note_versions(note_id) if c.attribute == "keywords")
    call_id = calls[keywords.proposal_id]
    assert call_id == memory.proposal(keywords.proposal_id).proposer.llm_call_id
    code, out, _ = run(memory, capsys, "history", note_id)
    assert code == 0 and re.search(rf"model call\s+{call_id}", out)
    code, out, _ = run(memory, capsys, "history", note_id, "--json")
    events = json.loads(out)
    assert {e["proposal_id"]: e["llm_call_id"] for e in events if e["llm_call_id"]} == calls


def test_approve_takes_an_item_or_a_proposal(memory: Memory, item, capsys) -> None:
    note, proposals = item
    code, out, _ = run(memory, capsys, "approve", proposals[1].id, "--reviewer", "alice")
    assert code == 0 and "approved by alice" in out
    code, out, _ = run(memory, capsys, "approve", note.raw_log_ids[0], "--reviewer", "bob", "--json")
    report = json.loads(out)
    assert code == 0 and len(report["decided"]) == 2 and report["skipped"] == []
    assert {memory.proposal(p.id).status for p in proposals} == {ProposalStatus.APPROVED}
    code, _, err = run(memory, capsys, "approve", note.raw_log_ids[0], "--reviewer", "bob")
    assert code == 2 and "does not exist or was decided" in err


def test_an_item_value_the_reviewer_may_not_decide_is_reported(memory: Memory, capsys) -> None:
    note = said(memory, "Initech is a duplicate of Initrode")
    gone = memory.propose(
        note.id,
        "deleted",
        True,
        reason="duplicate",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    code, out, _ = run(memory, capsys, "approve", note.raw_log_ids[0], "--reviewer", "bob")
    assert code == 2 and f"skipped {gone.id}" in out and "may not decide changes to deleted" in flat(out)
    # said before the password is asked: what the reviewer is about to decide
    assert out.startswith(f"item {note.raw_log_ids[0]} (acme), 1 held value: deleted\n")
    assert memory.proposal(gone.id).status == ProposalStatus.PENDING


def _install_freezing(memory: Memory, *attributes: str) -> None:
    """The policy in force (AMEM_POLICY's file) with ``attributes`` frozen, installed by alice: the
    file and the ledger's version agree, so the CLI decides under it."""
    import os

    import yaml

    path = Path(os.environ["AMEM_POLICY"])
    data = yaml.safe_load(path.read_text("utf-8"))
    for attribute in attributes:
        data["attributes"][attribute] = {**data["attributes"][attribute], "mode": "frozen"}
    path.write_text(yaml.safe_dump(data), "utf-8")
    memory.install_policy(load_policy(path), by=signed_in(memory, "alice"))


def test_an_approval_the_policy_refuses_whole_exits_2_as_for_one_proposal(
    memory: Memory, item, capsys
) -> None:
    """README: approving what the policy has frozen since says so, exit 2. One proposal did; an item
    or --all whose every value the policy refused ended "2 rejected", exit 0, as if approved."""
    note, proposals = item
    other = said(memory, "Initech decided to renew in May, because the CFO asked for it.")
    later = memory.propose(
        other.id,
        "valid_at",
        "2026-05-01T00:00:00Z",
        reason="r",
        proposer=llm_proposer(memory),
        raw_log_ids=other.raw_log_ids,
    )
    _install_freezing(memory, "decision_rationale", "valid_at", "customer_priorities")

    code, out, _ = run(memory, capsys, "approve", note.raw_log_ids[0], "--reviewer", "alice")
    assert code == 2 and "3 refused by the policy (frozen since), not approved" in out
    assert "refused by policy: valid_at is frozen by policy v2" in flat(out) and "3 rejected" not in out
    code, out, _ = run(memory, capsys, "approve", "--all", "--yes", "--reviewer", "alice", "--json")
    assert code == 2 and [d["status"] for d in json.loads(out)["decided"]] == ["rejected"]
    assert {memory.proposal(p.id).status for p in [*proposals, later]} == {ProposalStatus.REJECTED}
    assert memory.read(note.id).decision_rationale is None and memory.read(other.id).valid_at is None


def test_an_approval_that_applies_some_values_exits_0_beside_the_refused_ones(
    memory: Memory, item, capsys
) -> None:
    note, proposals = item
    _install_freezing(memory, "valid_at")
    code, out, _ = run(memory, capsys, "approve", note.raw_log_ids[0], "--reviewer", "alice")
    assert code == 0 and "2 approved, 1 refused by the policy (frozen since), not approved" in out
    assert memory.proposal(proposals[1].id).status == ProposalStatus.REJECTED


def test_a_value_frozen_since_is_marked_and_its_approval_is_recorded_as_the_policy_s_refusal(
    memory: Memory, item, capsys
) -> None:
    """The queue said nothing of a held value frozen since; approving it was recorded as the
    reviewer's own rejection, their comment replaced by the policy's words. Now `amem pending` (and
    --json) marks it, and the rejection is the policy's, with the version that froze it and what
    the reviewer asked kept: history reads "by policy", bob's comment still there."""
    note, proposals = item
    _install_freezing(memory, "valid_at")
    code, out, _ = run(memory, capsys, "pending")
    assert code == 0 and "frozen by policy v2 since " in flat(out)
    assert "(attributes.valid_at.mode): approving is refused; reject it" in flat(out)
    assert flat(out).count("approving is refused") == 1  # the other values are approvable
    code, out, _ = run(memory, capsys, "pending", "--json")
    fields = {f["proposal"]["attribute"]: f for f in json.loads(out)["items"][0]["fields"]}
    assert fields["valid_at"]["policy_frozen"]["version"] == 2
    assert fields["decision_rationale"]["policy_frozen"] is None

    code, out, err = run(
        memory, capsys, "approve", proposals[1].id, "--reviewer", "bob", "--comment", "frozen now"
    )
    assert code == 2 and "refused by the policy: valid_at is frozen by policy v2 since" in flat(err)
    decided = memory.proposal(proposals[1].id)
    assert decided.status == ProposalStatus.REJECTED and decided.reviewer == "bob"  # who asked
    sha = memory.policy_versions()[-1].sha256[:12]
    assert decided.review_comment == (
        f"refused by policy: valid_at is frozen by policy v2 (sha256 {sha}, attributes.valid_at.mode); "
        "approval asked by person:bob, who wrote: frozen now"
    )
    code, out, _ = run(memory, capsys, "history", note.id)
    assert "rejected valid_at by policy comment refused by policy: valid_at is frozen" in flat(out)
    assert "person:bob, who wrote: frozen now" in flat(out) and " by person:bob " not in flat(out)
    # bob's own last decisions (the console's "Your last decision") still show what his click did
    assert proposals[1].id in [p.id for p in memory.decided_by("bob")]
    assert memory.verify().ok


def test_approve_all_counts_asks_and_decides_every_page(
    memory: Memory, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        n = said(memory, f"Acme call {i}")
        memory.propose(
            n.id,
            "next_step",
            f"step {i}",
            reason="r",
            proposer=llm_proposer(memory),
            raw_log_ids=n.raw_log_ids,
        )
    other = said(memory, "Globex call", scope="globex")
    kept = memory.propose(
        other.id, "next_step", "x", reason="r", proposer=llm_proposer(memory), raw_log_ids=other.raw_log_ids
    )

    code, out, _ = run(
        memory, capsys, "approve", "--all", "--scope", "acme", "--reviewer", "alice", stdin="n\n"
    )
    assert code == 0 and "3 review items (3 held values) match" in out and "nothing approved" in out
    assert memory.count_review_items().items == 4

    code, out, _ = run(
        memory, capsys, "approve", "--all", "--scope", "acme", "--reviewer", "alice", stdin="y\n"
    )
    assert code == 0 and "3 approved" in out
    assert memory.count_review_items().items == 1
    assert memory.proposal(kept.id).status == ProposalStatus.PENDING

    code, _, err = run(memory, capsys, "approve", "--all", "--reviewer", "alice", "--json")
    assert code == 2 and "--yes" in err
    code, out, _ = run(
        memory,
        capsys,
        "approve",
        "--all",
        "--attribute",
        "next_step",
        "--reviewer",
        "alice",
        "--yes",
        "--json",
    )
    assert code == 0 and len(json.loads(out)["decided"]) == 1
    code, _, err = run(memory, capsys, "approve", "--all", "--kind", "nonsense", "--reviewer", "alice")
    assert code == 2 and "contradiction" in err


def test_import_says_how_many_items_wait_and_how_to_see_them(memory: Memory, capsys, tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text(
        json.dumps({"content": "Acme chose the annual plan because of the 15% discount", "scope": "acme"})
        + "\n",
        "utf-8",
    )
    code, out, _ = run(memory, capsys, "import", str(calls))
    assert code == 0
    waiting = memory.count_review_items().items
    assert waiting >= 1  # the offline analyst holds the decision rationale for review
    assert f"review items waiting for a person: {waiting}; see them with `amem pending`" in flat(out)


def test_facts_as_of_a_past_moment_in_the_cli(memory: Memory, capsys) -> None:
    """`amem facts --as-of`: what the memory said about the account then, for an auditor; the
    retirement approved later does not count, and each fact says how to see it as it stood."""
    from amem.domain.models import utcnow

    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    moment = utcnow()
    new = said(memory, "Acme pays $49 per seat from now on", at=datetime(2026, 8, 20, tzinfo=UTC))
    retirement = contradict(memory, old, new, "2026-01-20T00:00:00Z")
    memory.approve(retirement.id, reviewer=signed_in(memory, "alice"))
    code, out, _ = run(memory, capsys, "facts", "--scope", "acme", "--as-of", moment.isoformat())
    assert code == 0 and "$42 per seat" in out and "$49" not in out
    assert f"facts of acme as the ledger held them at {moment:%Y-%m-%d %H:%M:%S} UTC: 1" in flat(out)
    assert f"amem show {old.id} --as-of {moment.isoformat()}" in flat(out)
    code, out, _ = run(memory, capsys, "facts", "--scope", "acme")
    assert "$49 per seat" in out and "$42" not in out
    code, out, err = run(memory, capsys, "facts", "--scope", "acme", "--as-of", "last tuesday")
    assert code == 2 and "--as-of" in err


def test_facts_and_retired_search_hits_in_the_cli(memory: Memory, capsys) -> None:
    old = said(memory, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(memory, "Acme pays $49 per seat from now on", at=datetime(2026, 8, 20, tzinfo=UTC))
    p = contradict(memory, old, new, "2026-08-20T00:00:00Z")
    # before a reviewer decides, the older price still holds, marked as contested
    code, out, _ = run(memory, capsys, "search", "price per seat", "--scope", "acme")
    assert code == 0 and "RETIRED" not in out
    assert (
        'a newer note says otherwise: "Acme pays $49 per seat from now on"; '
        f"its retirement waits for review (proposal {p.id})" in flat(out)
    )
    code, out, _ = run(memory, capsys, "search", "price per seat", "--scope", "acme", "--json")
    waiting = {h["note_id"]: h["retirement_waiting"] for h in json.loads(out)}
    assert waiting[old.id]["proposal_id"] == p.id and waiting[new.id] is None
    code, out, _ = run(memory, capsys, "facts", "--scope", "acme")  # the account's facts say it too
    assert code == 0 and "$42 per seat" in out
    assert 'contested a newer note says otherwise: "Acme pays $49 per seat from now on"' in flat(out)
    code, out, _ = run(memory, capsys, "facts", "--scope", "acme", "--json")
    facts = {f["note"]["id"]: f["retirement_waiting"] for f in json.loads(out)["facts"]}
    assert facts[old.id]["proposal_id"] == p.id and facts[new.id] is None

    memory.approve(p.id, reviewer=signed_in(memory, "alice"), comment="the renewal changed it")
    code, out, _ = run(memory, capsys, "facts", "--scope", "acme")
    assert code == 0 and "$49 per seat" in out and "$42" not in out
    assert f"amem history {new.id}" in out and "20 August 2026" in out
    code, out, _ = run(memory, capsys, "facts", "--scope", "acme", "--include-retired")
    assert "RETIRED  Acme pays $42 per seat" in out and "invalid_at approved by alice" in flat(out)
    code, out, _ = run(memory, capsys, "search", "price per seat", "--scope", "acme", "--include-retired")
    assert code == 0
    lines = [line for line in out.splitlines() if re.match(r"\d+\. ", line)]
    assert new.id in lines[0] and "RETIRED" not in lines[0] and f"RETIRED  {old.id}" in lines[1]
    assert "retired 20 August 2026" in out
    code, out, _ = run(memory, capsys, "search", "price per seat", "--scope", "acme", "--json")
    hits = json.loads(out)
    assert [h["note_id"] for h in hits] == [new.id] and hits[0]["said_at"].startswith("2026-08-20")


def test_pending_for_a_reviewer_shows_the_accounts_they_decide_in(
    memory: Memory, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import yaml

    for scope in ("acme", "globex"):
        n = said(memory, f"{scope} call", scope=scope)
        memory.propose(
            n.id,
            "next_step",
            "call back",
            reason="r",
            proposer=llm_proposer(memory),
            raw_log_ids=n.raw_log_ids,
        )
    reviewers = Path(os.environ["AMEM_POLICY"]).parent / "reviewers.yaml"
    data = yaml.safe_load(reviewers.read_text("utf-8"))
    data["reviewers"]["alice"]["scopes"] = ["acme"]  # alice owns acme
    # a policy admin of every account (one limited to some may not install a policy)
    data["reviewers"]["carol"] = {
        "roles": ["cs_lead"],
        "password_hash": data["reviewers"]["bob"]["password_hash"],
    }
    reviewers.write_text(yaml.safe_dump(data), "utf-8")
    owned = load_policy(os.environ["AMEM_POLICY"])
    memory.install_policy(owned, by=signed_in(memory, "alice"))  # the policy in force from now on

    code, out, err = run(memory, capsys, "pending", "--reviewer", "alice", "--json")
    assert code == 0, err
    assert [i["scope"] for i in json.loads(out)["items"]] == ["acme"]
    code, out, _ = run(memory, capsys, "pending", "--json")
    assert sorted(i["scope"] for i in json.loads(out)["items"]) == ["acme", "globex"]
    code, _, err = run(memory, capsys, "pending", "--reviewer", "mallory")
    assert code == 2 and "'mallory' is not a reviewer" in err


def test_approve_all_counts_before_asking_and_names_the_accounts_the_reviewer_decides_in(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing to decide: said before any password is asked (none is given here), and where items
    match only in accounts the reviewer does not decide in, said so, as a single decision would."""
    import os

    import yaml

    n = said(memory, "initech call", scope="initech")
    memory.propose(
        n.id, "next_step", "call back", reason="r", proposer=llm_proposer(memory), raw_log_ids=n.raw_log_ids
    )
    reviewers = Path(os.environ["AMEM_POLICY"]).parent / "reviewers.yaml"
    data = yaml.safe_load(reviewers.read_text("utf-8"))
    data["reviewers"]["bob"]["scopes"] = ["acme", "globex"]
    reviewers.write_text(yaml.safe_dump(data), "utf-8")
    memory.install_policy(load_policy(os.environ["AMEM_POLICY"]), by=signed_in(memory, "alice"))

    home = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    with patch("sys.stdin", io.StringIO("")):  # no password on stdin: none may be asked for
        code = main([*home, "approve", "--all", "--scope", "initech", "--reviewer", "bob"])
    out = flat(capsys.readouterr().out)
    assert code == 0
    assert "nothing pending matches in the accounts bob decides in (acme, globex)" in out
    assert "1 review item matches in others" in out
    with patch("sys.stdin", io.StringIO("")):
        code = main([*home, "approve", "--all", "--scope", "nowhere", "--reviewer", "bob"])
    assert code == 2 and "scope 'nowhere' has no inputs" in flat(capsys.readouterr().err)  # no input ever
    assert memory.count_review_items().items == 1


def test_pending_says_how_to_see_the_next_page_and_a_decision_with_no_terminal_how_to_sign_in(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(3):
        n = said(memory, f"Acme call {i}")
        memory.propose(
            n.id,
            "next_step",
            f"step {i}",
            reason="r",
            proposer=llm_proposer(memory),
            raw_log_ids=n.raw_log_ids,
        )
    code, out, _ = run(memory, capsys, "pending", "--limit", "2")
    assert code == 0 and "showing 1-2; --offset 2 shows the next" in flat(out)
    code, out, _ = run(memory, capsys, "pending", "--limit", "2", "--offset", "2")
    assert code == 0 and "showing 3-3)" in flat(out) and "--offset" not in out
    home = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    with patch("sys.stdin", io.StringIO("")):  # a script, no terminal, and no password given
        code = main([*home, "approve", "--all", "--reviewer", "alice", "--yes"])
    err = flat(capsys.readouterr().err)
    assert code == 2 and "no terminal to ask alice's password on" in err and "--password-stdin" in err
    assert memory.count_review_items().items == 3


def test_a_reviewer_given_no_accounts_is_listed_and_refused_as_deciding_in_none(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """`scopes: []` limits a reviewer to no account: the reviewers list says so, and a decision
    of theirs is refused saying so, not "decides in  only"."""
    import os

    import yaml

    n = said(memory, "acme call")
    held = memory.propose(
        n.id, "next_step", "call back", reason="r", proposer=llm_proposer(memory), raw_log_ids=n.raw_log_ids
    )
    reviewers = Path(os.environ["AMEM_POLICY"]).parent / "reviewers.yaml"
    data = yaml.safe_load(reviewers.read_text("utf-8"))
    data["reviewers"]["alice"]["scopes"] = []
    # a policy admin of every account (one limited to some may not install a policy)
    data["reviewers"]["carol"] = {
        "roles": ["cs_lead"],
        "password_hash": data["reviewers"]["bob"]["password_hash"],
    }
    reviewers.write_text(yaml.safe_dump(data), "utf-8")
    memory.install_policy(load_policy(os.environ["AMEM_POLICY"]), by=signed_in(memory, "alice"))

    code, out, err = run(memory, capsys, "reviewers", "list")
    assert code == 0, err
    alice = next(line for line in out.splitlines() if "alice" in line)
    assert "no (in no account)" in alice and "yes" not in alice.split("│")[4]
    code, out, err = run(memory, capsys, "approve", held.id, "--reviewer", "alice")
    assert code != 0 and "alice decides in no account" in flat(out + err)
    assert memory.proposal(held.id).status == ProposalStatus.PENDING


def test_reject_all_matching_counts_asks_and_says_why_on_each(memory: Memory, capsys) -> None:
    """A run of wrong values (a bad import's dates) goes in one step, with the reviewer's reason on
    every one; what does not match stays, and without a reason nothing is rejected."""
    held = []
    for i in range(3):
        n = said(memory, f"Acme call {i}")
        held.append(
            memory.propose(
                n.id,
                "next_step",
                f"step {i}",
                reason="r",
                proposer=llm_proposer(memory),
                raw_log_ids=n.raw_log_ids,
            )
        )
    other = said(memory, "Globex call", scope="globex")
    kept = memory.propose(
        other.id, "next_step", "x", reason="r", proposer=llm_proposer(memory), raw_log_ids=other.raw_log_ids
    )

    code, out, _ = run(
        memory, capsys, "reject", "--all", "--scope", "acme", "--comment", "the import misread these",
        "--reviewer", "alice", stdin="n\n",
    )  # fmt: skip
    assert code == 0 and "3 review items (3 held values) match" in out and "nothing rejected" in out
    code, out, _ = run(
        memory, capsys, "reject", "--all", "--scope", "acme", "--comment", "the import misread these",
        "--reviewer", "alice", stdin="y\n",
    )  # fmt: skip
    assert code == 0 and "3 rejected" in out
    decided = [memory.proposal(p.id) for p in held]
    assert {(d.status, d.review_comment, d.reviewer) for d in decided} == {
        (ProposalStatus.REJECTED, "the import misread these", "alice")
    }
    assert memory.proposal(kept.id).status == ProposalStatus.PENDING
    code, _, err = run(memory, capsys, "reject", "--all", "--comment", " ", "--reviewer", "alice", "--yes")
    assert (
        code == 2 and "needs a comment" in err and memory.proposal(kept.id).status == ProposalStatus.PENDING
    )


def test_correct_rejects_a_held_value_and_proposes_the_right_one(memory: Memory, capsys) -> None:
    note = said(memory, "Acme will renew in March", at=datetime(2026, 11, 30, tzinfo=UTC))
    wrong = memory.propose(
        note.id,
        "valid_at",
        "2026-03-01",
        reason="renewal",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    code, out, _ = run(
        memory, capsys, "correct", wrong.id, "2027-03-01", "--reviewer", "alice", "--comment", "next March"
    )
    fix = memory.pending()[0]
    assert code == 0 and fix.corrects == wrong.id and fix.new_value == "2027-03-01T00:00:00+00:00"
    assert f"proposal {wrong.id}: rejected, corrected by alice" in out
    assert f"proposal {fix.id} (valid_at of {note.id}): pending (another reviewer approves it)" in flat(out)
    code, out, _ = run(memory, capsys, "pending", "--kind", "correction", "--reviewer", "bob")
    assert f"corrects 1 March 2026 (llm:offline, proposal {wrong.id})" in flat(out)
    assert "1 correction(s) by other reviewers wait for your second look" in flat(out)
    code, out, _ = run(memory, capsys, "pending", "--reviewer", "alice")
    assert "second look" not in out  # her own correction is not hers to approve
    code, _, err = run(memory, capsys, "correct", fix.id, "2027-03-01", "--reviewer", "bob")
    assert code != 0 and "approve it" in err
    assert memory.proposal(fix.id).status == ProposalStatus.PENDING
    code, out, _ = run(memory, capsys, "correct", fix.id, '"2027-03-15"', "--reviewer", "bob", "--json")
    assert code == 0 and json.loads(out)["correction"]["corrects"] == fix.id


def test_correct_reads_the_right_value_as_its_attributes_type(memory: Memory, capsys) -> None:
    """`amem correct` read every value as JSON: a next_step of 2027 became a number (refused,
    "must be text, got int") and `null` cleared the next step instead of naming it "null". It
    reads the value as `amem update` and `amem propose` do, by the held value's attribute."""
    notes = [said(memory, "Acme: next step is the 2027 plan"), said(memory, "Globex: next step?")]
    held = [
        memory.propose(
            n.id, "next_step", guess, reason="r", proposer=llm_proposer(memory), raw_log_ids=n.raw_log_ids
        )
        for n, guess in zip(notes, ("send the quote", "book a demo"), strict=True)
    ]
    code, _, err = run(memory, capsys, "correct", held[0].id, "2027", "--reviewer", "alice")
    assert code == 0, err
    code, _, err = run(memory, capsys, "correct", held[1].id, "null", "--reviewer", "alice")
    assert code == 0, err
    fixes = {p.corrects: p.new_value for p in memory.pending() if p.corrects}
    assert fixes == {held[0].id: "2027", held[1].id: "null"}


def test_reject_all_of_one_proposer(memory: Memory, capsys) -> None:
    """`amem review-stats` names a model whose values reviewers turn down; `--proposer` rejects
    those only."""
    cheap = llm_proposer(memory, model="cheap-model", prompt_version="c/1")
    bad, good = said(memory, "Acme call 1"), said(memory, "Acme call 2")
    guess = memory.propose(bad.id, "valid_at", "2026-01-05", reason="r", proposer=cheap)
    kept = memory.propose(good.id, "next_step", "send the quote", reason="r", proposer=llm_proposer(memory))
    code, out, _ = run(memory, capsys, "review-stats")
    assert "llm:cheap-model · c/1" in flat(out)
    code, out, _ = run(
        memory, capsys, "reject", "--all", "--proposer", "llm:cheap-model", "--comment", "guessed",
        "--reviewer", "alice", "--yes",
    )  # fmt: skip
    assert code == 0 and "1 rejected" in out
    assert memory.proposal(guess.id).status == ProposalStatus.REJECTED
    assert memory.proposal(kept.id).status == ProposalStatus.PENDING
    code, _, err = run(
        memory, capsys, "reject", guess.id, "--proposer", "llm:x", "--comment", "c", "--reviewer", "bob"
    )
    assert code != 0 and "only go with --all" in err


def test_review_stats_say_what_reviewers_did_per_attribute_and_model(memory: Memory, capsys) -> None:
    note = said(memory, "Acme will renew in March", at=datetime(2026, 11, 30, tzinfo=UTC))
    for value in ("call back", "send the quote"):  # the second supersedes the first: no verdict
        p = memory.propose(note.id, "next_step", value, reason="r", proposer=llm_proposer(memory))
    memory.reject(p.id, reviewer=signed_in(memory, "bob"), comment="not said")
    memory.propose(note.id, "valid_at", "2026-03-01", reason="r", proposer=llm_proposer(memory))
    code, out, _ = run(memory, capsys, "review-stats")
    assert code == 0 and "held values by attribute, decided in the last 30 days" in out
    assert "llm:offline · test/1 1 waiting, 0 approved, 0 corrected, 1 rejected, 0 conflict; 0%" in flat(out)
    assert "Reviewers approve few" not in out  # one decision is no pattern
    code, out, _ = run(memory, capsys, "review-stats", "--json", "--days", "7")
    stats = json.loads(out)
    rows = {r["name"]: (r["waiting"], r["rejected"]) for r in stats["by_attribute"]}
    assert stats["days"] == 7 and rows == {"next_step": (0, 1), "valid_at": (1, 0)}
    for n in range(20):
        p = memory.propose(note.id, "next_step", f"call {n}", reason="r", proposer=llm_proposer(memory))
        memory.reject(p.id, reviewer=signed_in(memory, "bob"), comment="not said")
    code, out, _ = run(memory, capsys, "review-stats")
    assert "Reviewers approve few held values of next_step (0% of 21)" in flat(out)


HIDDEN = "\x1b[8m Ignore: the CFO actually refused.\x1b[0m"
TITLE = "\x1b]0;owned-title\x07"


def test_terminal_escapes_in_an_input_are_shown_not_obeyed(memory: Memory, capsys) -> None:
    """An agent's input carrying ESC sequences reached the reviewer's terminal as such: ESC[8m hid
    the rest of the text, OSC set the window's title. Shown as escapes now, in the text, the
    proposed value, the reason and the evidence; --json keeps the text exact."""
    text = f"Globex decided to renew in March because the CFO approved it.{HIDDEN}{TITLE}"
    note = said(memory, text, scope="globex")
    evidence = "the CFO approved it.\x1b[8m Ignore"
    memory.propose(
        note.id,
        "decision_rationale",
        evidence,
        reason=f"the model said so{TITLE}",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
        evidence=evidence,
    )
    code, out, err = run(memory, capsys, "pending", "--scope", "globex")
    assert code == 0, err
    assert not any(c in out for c in "\x1b\x07\x9b"), out
    assert flat(out).count("approved it.\\x1b[8m Ignore") == 3  # the text (marked), proposed, evidence
    assert "the CFO actually refused.\\x1b[0m\\x1b]0;owned-title\\x07" in flat(out)
    assert "the model said so\\x1b]0;owned-title\\x07" in out

    code, out, _ = run(memory, capsys, "pending", "--scope", "globex", "--json")
    (data,) = json.loads(out)["items"]  # exact: JSON escapes the control characters itself
    assert code == 0 and data["raw_log"]["text"] == text
    assert data["fields"][0]["proposal"]["evidence"] == evidence


def test_a_mistyped_filter_is_named_not_answered_with_an_empty_queue(memory: Memory, item, capsys) -> None:
    code, _, err = run(memory, capsys, "pending", "--scope", "globexx")
    assert code == 2 and "scope 'globexx' has no inputs; did you mean globex?" in flat(err)
    code, _, err = run(memory, capsys, "pending", "--attribute", "decision_rationel")
    assert code == 2 and "--attribute 'decision_rationel' is not an attribute" in flat(err)
    code, _, err = run(memory, capsys, "approve", "--all", "--scope", "globexx", "--reviewer", "alice")
    assert code == 2 and "did you mean globex?" in flat(err)
    assert {memory.proposal(p.id).status for p in item[1]} == {ProposalStatus.PENDING}
    code, out, _ = run(memory, capsys, "pending", "--scope", "globex", "--kind", "contradiction")
    assert code == 0 and "nothing pending matches --scope globex --kind contradiction in" in flat(out)
    # a new account (its inputs may wait before its first note) is no typo: nothing matches, said so
    memory.add_note("Initech asked for a demo", actor="agent:sales-agent", scope="initech", wait=False)
    code, out, _ = run(memory, capsys, "pending", "--scope", "initech", "--json")
    assert code == 0 and json.loads(out)["items"] == []


def test_approve_with_neither_an_id_nor_all_says_what_it_needs(memory: Memory, item, capsys) -> None:
    code, _, err = run(memory, capsys, "approve", "--reviewer", "alice")
    assert code == 2 and "approve needs an item or proposal id" in flat(err) and "not both" not in err
    code, _, err = run(memory, capsys, "approve", item[1][0].id, "--all", "--reviewer", "alice")
    assert code == 2 and "not both" in flat(err)
