"""The policy lives in the ledger: installing it, who may, and what a process with another file may do."""

from __future__ import annotations

import io
import os
from pathlib import Path
from unittest.mock import patch

import pytest
import sqlalchemy as sa

from amem.cli import main
from amem.domain.models import ProposalStatus
from amem.errors import InvalidInputError, PermissionDeniedError, PolicyMismatchError
from amem.memory import Memory
from amem.policy import Mode, Policy, fingerprint, load_policy, parse_policy
from amem.services.authentication import Authentication
from tests.factories import LLM, make_note, signed_in


def _variant(policy: Policy, **changes: object) -> Policy:
    return policy.model_copy(update=changes)


def _open(memory: Memory, policy: Policy) -> Memory:
    return Memory(memory.home, database_url=memory.settings.database_url, policy=policy)


def _bootstrap(memory: Memory, policy: Policy, who: str = "alice") -> None:
    by = Authentication(policy, fingerprint(policy)).signed_in(who, method="test")
    version, new = memory.install_policy(policy, by=by)
    assert new and version.sha256 == fingerprint(policy)


def test_until_a_policy_is_installed_the_file_is_in_force(memory: Memory) -> None:
    assert memory.policy_in_force.installed is None and memory.policy_in_force.mismatch is None
    assert "not installed in the ledger" in memory.policy_in_force.describe()
    note = make_note(memory, "x")
    p = memory.propose(note.id, "decision_rationale", "why", reason="r", proposer=LLM)
    assert p.policy_sha256 == fingerprint(memory.policy)
    assert memory.approve(p.id, reviewer=signed_in(memory, "alice")).status == ProposalStatus.APPROVED


def test_installed_policy_routes_and_a_different_file_decides_nothing(memory: Memory) -> None:
    note = make_note(memory, "Acme chose SSO because the auditor asked")
    _bootstrap(memory, memory.policy)
    with _open(memory, memory.policy) as same:
        installed = same.policy_in_force.installed
        assert installed is not None and installed.version == 1 and installed.installed_by == "alice"
        assert same.policy_in_force.mismatch is None
        p = same.propose(note.id, "decision_rationale", "auditor", reason="r", proposer=LLM)
        assert p.policy_sha256 == installed.sha256

    # A file that would widen rights: mallory becomes a lead, tags need review, self-approval is on.
    wider = _variant(
        memory.policy,
        self_approval=True,
        reviewers={**memory.policy.reviewers, "mallory": memory.policy.reviewers["alice"]},
        attributes={**memory.policy.attributes, "tags": memory.policy.attributes["decision_rationale"]},
    )
    with _open(memory, wider) as other:
        assert "is not the one installed in the ledger" in (other.policy_in_force.mismatch or "")
        assert other.read(note.id).id == note.id and [x.id for x in other.pending()] == [p.id]  # reads work
        assert "mallory" not in other.policy.reviewers  # the installed policy is in force
        with pytest.raises(PermissionDeniedError, match="not a reviewer"):
            signed_in(other, "mallory")
        with pytest.raises(PolicyMismatchError, match="decides nothing"):
            other.approve(p.id, reviewer=signed_in(other, "alice"))
        with pytest.raises(PolicyMismatchError, match="decides nothing"):
            other.reject(p.id, reviewer=signed_in(other, "alice"), comment="no")
        tags = other.propose(note.id, "tags", ["sso"], reason="r", proposer=LLM)
        assert tags.status == ProposalStatus.AUTO_APPLIED  # routed by the installed policy, not the file
    assert memory.proposal(p.id).status == ProposalStatus.PENDING


def test_only_a_policy_admin_of_the_policy_in_force_installs_the_next(memory: Memory) -> None:
    base = memory.policy
    with pytest.raises(PermissionDeniedError, match=r"bob .*may not install a policy; needs one of: cs_lead"):
        _bootstrap(memory, base, who="bob")
    _bootstrap(memory, base)
    stricter = _variant(base, default_mode=Mode.FROZEN)
    with _open(memory, base) as current:
        with pytest.raises(PermissionDeniedError, match=r"bob .*may not install"):
            current.install_policy(stricter, by=signed_in(current, "bob"))
        # signed in under the policy being installed, not the one in force: refused
        under_new = Authentication(stricter, fingerprint(stricter)).signed_in("alice", method="test")
        with pytest.raises(PermissionDeniedError, match="signed in under another policy"):
            current.install_policy(stricter, by=under_new)
        alice = signed_in(current, "alice")
        version, new = current.install_policy(stricter, by=alice)
        assert new and version.version == 2
        assert [v.version for v in current.policy_versions()] == [1, 2]
        # a process opened before the install reads on, routes under the new policy, decides nothing
        note = make_note(current, "x")
        p = current.propose(note.id, "next_step", "call", reason="r", proposer=LLM)
        assert p.policy_sha256 == version.sha256
        with pytest.raises(PolicyMismatchError, match="changed since this process started"):
            current.reject(p.id, reviewer=alice, comment="no")


def test_a_policy_no_one_could_replace_is_refused(memory: Memory) -> None:
    admins_only_bob = _variant(memory.policy, policy_admins=["auditor"])
    admins_only_bob = admins_only_bob.model_copy(
        update={"reviewers": {k: v for k, v in admins_only_bob.reviewers.items() if k != "audrey"}}
    )
    with pytest.raises(InvalidInputError, match="no one could install the next policy"):
        _bootstrap(memory, admins_only_bob)
    with pytest.raises(Exception, match="policy_admins names unknown role"):
        parse_policy("policy_admins: [ghosts]\n")


def test_installed_versions_are_append_only(memory: Memory) -> None:
    _bootstrap(memory, memory.policy)
    for statement in ("UPDATE policy_versions SET text = 'x'", "DELETE FROM policy_versions"):
        with pytest.raises(sa.exc.DBAPIError, match="append-only"), memory.ledger.engine.begin() as conn:
            conn.execute(sa.text(statement))
    assert len(memory.policy_versions()) == 1


def _cli(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str, stdin: str = "") -> tuple[int, str]:
    with patch("sys.stdin", io.StringIO(stdin)):
        code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_cli_install_and_policy_flag_cannot_widen_rights(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    policy_file = Path(os.environ["AMEM_POLICY"])
    note = make_note(memory, "x")
    p = memory.propose(note.id, "decision_rationale", "why", reason="r", proposer=LLM)

    code, text = _cli(memory, capsys, "policy")
    assert code == 0 and "not installed in the ledger" in text
    install = ["policy", "install", str(policy_file), "--reviewer", "alice", "--password-stdin"]
    code, text = _cli(memory, capsys, *install, stdin="wrong\n")
    assert code == 2 and "wrong reviewer name or password" in text
    code, text = _cli(memory, capsys, *install, stdin=reviewer_passwords["alice"])
    assert code == 0 and "policy version 1" in text and "installed by alice" in text
    code, text = _cli(memory, capsys, "policy")
    assert code == 0 and "installed version 1" in text

    # mallory writes herself into a copy of the policy, with a password she knows
    rogue = policy_file.with_name("rogue.yaml")
    rogue.write_text(policy_file.read_text("utf-8").replace("reviewers_file: reviewers.yaml", ""), "utf-8")
    mallory_hash = load_policy(policy_file).reviewers["bob"].password_hash  # bob's password, her name
    with rogue.open("a", encoding="utf-8") as f:
        f.write(f"reviewers:\n  mallory: {{roles: [cs_lead], password_hash: '{mallory_hash}'}}\n")
    approve = ["--policy", str(rogue), "approve", p.id, "--reviewer", "mallory", "--password-stdin"]
    code, text = _cli(memory, capsys, *approve, stdin=reviewer_passwords["bob"])
    assert code == 2 and "decides nothing" in text and "Traceback" not in text
    assert len(text.strip().splitlines()) == 1
    code, text = _cli(memory, capsys, "--policy", str(rogue), "pending", "--json")
    assert code == 0 and p.id in text  # reads still work, with a warning
    rogue_install = ["--policy", str(rogue), "policy", "install", str(rogue), "--reviewer", "mallory"]
    code, text = _cli(memory, capsys, *rogue_install, "--password-stdin", stdin=reviewer_passwords["bob"])
    assert code == 2 and "wrong reviewer name or password" in text
    assert memory.proposal(p.id).status == ProposalStatus.PENDING

    code, text = _cli(memory, capsys, "policy", "export")
    assert code == 0 and parse_policy(text).reviewers.keys() == {"alice", "bob", "audrey"}


@pytest.mark.parametrize("edit", ["text", "installed_by"])
def test_an_installed_policy_edited_in_the_database_is_caught_by_verify(memory: Memory, edit: str) -> None:
    """An installed version is an event of the chain: its text must still hash to its sha256, and
    its row must still match the digest its event recorded."""
    from tests.ledger.tamper_cases import unlock

    _bootstrap(memory, memory.policy)
    assert memory.verify().ok
    values = {"text": "self_approval: true\n", "installed_by": "mallory"}[edit]
    with memory.ledger.engine.begin() as conn:
        unlock(conn, "policy_versions")
        conn.execute(sa.text(f"UPDATE policy_versions SET {edit} = :v WHERE version = 1"), {"v": values})
    result = memory.verify()
    assert not result.ok and result.bad_row == "policy_versions 1", result.problems
