"""The policy lives in the ledger: installing it, who may, and what a process with another file may do."""

from __future__ import annotations

import io
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest.mock import patch

import pytest
import sqlalchemy as sa

from amem.cli import main
from amem.domain.models import PolicyVersion, ProposalStatus
from amem.errors import InvalidInputError, PermissionDeniedError, PolicyMismatchError
from amem.memory import Memory
from amem.policy import DEFAULT_POLICY_PATH, Mode, Policy, fingerprint, load_policy, parse_policy
from amem.services import policy_registry
from amem.services.accounts import hash_password
from amem.services.authentication import Authentication
from amem.services.policy_registry import BOOTSTRAP_ACTOR
from tests.factories import llm_proposer, make_note, signed_in


def _variant(policy: Policy, **changes: object) -> Policy:
    return policy.model_copy(update=changes)


def _open(memory: Memory, policy: Policy) -> Memory:
    return Memory(memory.home, database_url=memory.settings.database_url, policy=policy)


def _bootstrap(memory: Memory, policy: Policy, who: str = "alice") -> PolicyVersion:
    """A first install: signed in under ``policy`` itself (over no installed version, or over a new
    ledger's version 1 that gives no policy admin a password)."""
    by = Authentication(policy, fingerprint(policy)).signed_in(who, method="test")
    version, new = memory.install_policy(policy, by=by)
    assert new and version.sha256 == fingerprint(policy)
    return version


def _with_password(policy: Policy, who: str = "alice") -> Policy:
    """``policy`` with a password for ``who``: an installed version an admin can sign in under."""
    entry = policy.reviewers[who].model_copy(
        update={"password_hash": hash_password("alice-password", rounds=4)}
    )
    return policy.model_copy(update={"reviewers": {**policy.reviewers, who: entry}})


def test_a_new_ledger_installs_the_creating_process_policy_as_version_1(memory: Memory) -> None:
    installed = memory.policy_in_force.installed
    assert installed is not None and memory.policy_in_force.mismatch is None
    assert (installed.version, installed.installed_by) == (1, BOOTSTRAP_ACTOR)
    assert installed.sha256 == fingerprint(memory.policy_in_force.file_policy)
    assert "installed version 1" in memory.policy_in_force.describe()
    with memory.ledger.read() as tx:  # recorded like any install: a chain event
        assert [(e.kind, e.subject) for e in tx.iter_events()] == [("policy", "1")]
    note = make_note(memory, "x")
    p = memory.propose(note.id, "decision_rationale", "why", reason="r", proposer=llm_proposer(memory))
    assert p.policy_sha256 == installed.sha256
    assert memory.approve(p.id, reviewer=signed_in(memory, "alice")).status == ProposalStatus.APPROVED
    with _open(memory, memory.policy) as again:  # reopening with the same file installs nothing
        assert again.policy_in_force.mismatch is None
        assert [v.version for v in again.policy_versions()] == [1]
    assert memory.verify().ok


def test_processes_opening_a_new_ledger_together_agree_on_one_version_1(database_url: str, tmp_path) -> None:
    base = load_policy(Path(os.environ["AMEM_POLICY"]))
    wider = _variant(base, self_approval=True)
    with ThreadPoolExecutor(4) as pool:
        opened = list(
            pool.map(
                lambda i: Memory(tmp_path / "home", database_url=database_url, policy=(base, wider)[i % 2]),
                range(4),
            )
        )
    try:
        versions = {m.policy_in_force.installed.sha256 for m in opened if m.policy_in_force.installed}
        assert len(versions) == 1 and [v.version for v in opened[0].policy_versions()] == [1]
        deciding = [m for m in opened if m.policy_in_force.mismatch is None]
        assert deciding and all(fingerprint(m.policy_in_force.file_policy) in versions for m in deciding)
        assert all(
            "decides nothing" in (m.policy_in_force.mismatch or "") for m in opened if m not in deciding
        )
    finally:
        for m in opened:
            m.close()


def test_a_ledger_with_data_and_no_installed_policy_decides_nothing_until_one_is_installed(
    database_url: str, tmp_path
) -> None:
    """A ledger made before amem installed the creating process's policy: no file is trusted."""
    home = tmp_path / "home"
    with (
        patch("amem.services.policy_registry.bootstrap", return_value=None),
        Memory(home, database_url=database_url) as old,
    ):
        note = make_note(old, "Acme chose SSO")
        p = old.propose(note.id, "decision_rationale", "auditor", reason="r", proposer=llm_proposer(old))
    with Memory(home, database_url=database_url) as mem:
        assert mem.policy_in_force.installed is None
        assert "no policy is installed in this ledger" in (mem.policy_in_force.mismatch or "")
        with pytest.raises(PolicyMismatchError, match="decides nothing"):
            mem.approve(p.id, reviewer=signed_in(mem, "alice"))
        assert [v.version for v in mem.policy_versions()] == []  # opening it installed nothing
        claimed = _with_password(mem.policy)  # an admin who can sign in to install the next
        version = _bootstrap(mem, claimed)  # the first install bootstraps, as before
        assert (version.version, version.installed_by) == (1, "alice")
    with Memory(home, database_url=database_url, policy=claimed) as mem:
        assert mem.approve(p.id, reviewer=signed_in(mem, "alice")).status == ProposalStatus.APPROVED
        assert mem.verify().ok


def test_installed_policy_routes_and_a_different_file_decides_nothing(memory: Memory) -> None:
    note = make_note(memory, "Acme chose SSO because the auditor asked")
    with _open(memory, memory.policy) as same:
        installed = same.policy_in_force.installed
        assert installed is not None and installed.version == 1 and installed.installed_by == BOOTSTRAP_ACTOR
        assert same.policy_in_force.mismatch is None
        p = same.propose(note.id, "decision_rationale", "auditor", reason="r", proposer=llm_proposer(same))
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
        tags = other.propose(note.id, "tags", ["sso"], reason="r", proposer=llm_proposer(other))
        assert tags.status == ProposalStatus.AUTO_APPLIED  # routed by the installed policy, not the file
    assert memory.proposal(p.id).status == ProposalStatus.PENDING


def test_only_a_policy_admin_of_the_policy_in_force_installs_the_next(memory: Memory) -> None:
    # version 1 (the repository's policy) gives no admin a password: the first install claims it
    base = _with_password(memory.policy)
    with pytest.raises(PermissionDeniedError, match=r"bob .*may not install a policy; needs one of: cs_lead"):
        _bootstrap(memory, base, who="bob")
    assert _bootstrap(memory, base).version == 2
    stricter = _variant(base, default_mode=Mode.FROZEN)
    with pytest.raises(PermissionDeniedError, match="signed in under another policy"):
        _bootstrap(memory, stricter)  # claimed: no second first install
    with _open(memory, base) as current:
        with pytest.raises(PermissionDeniedError, match=r"bob .*may not install"):
            current.install_policy(stricter, by=signed_in(current, "bob"))
        # signed in under the policy being installed, not the one in force: refused
        under_new = Authentication(stricter, fingerprint(stricter)).signed_in("alice", method="test")
        with pytest.raises(PermissionDeniedError, match="signed in under another policy"):
            current.install_policy(stricter, by=under_new)
        alice = signed_in(current, "alice")
        version, new = current.install_policy(stricter, by=alice)
        assert new and version.version == 3
        assert [v.version for v in current.policy_versions()] == [1, 2, 3]
        # a process opened before the install reads on, routes under the new policy, decides nothing
        note = make_note(current, "x")
        p = current.propose(note.id, "next_step", "call", reason="r", proposer=llm_proposer(current))
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
    for statement in ("UPDATE policy_versions SET text = 'x'", "DELETE FROM policy_versions"):
        with pytest.raises(sa.exc.DBAPIError, match="append-only"), memory.ledger.engine.begin() as conn:
            conn.execute(sa.text(statement))
    assert len(memory.policy_versions()) == 1


def _cli(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str, stdin: str = "") -> tuple[int, str]:
    with patch("sys.stdin", io.StringIO(stdin)):
        code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _cli_at(
    url: str, home: Path, capsys: pytest.CaptureFixture[str], *args: str, stdin: str = ""
) -> tuple[int, str]:
    with patch("sys.stdin", io.StringIO(stdin)):
        code = main(["--database-url", url, "--home", str(home), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _rogue(policy_file: Path) -> Path:
    """mallory writes herself into a copy of the policy, as a lead, with bob's password hash (so she
    signs in with bob's password under her own name)."""
    rogue = policy_file.with_name("rogue.yaml")
    rogue.write_text(policy_file.read_text("utf-8").replace("reviewers_file: reviewers.yaml", ""), "utf-8")
    mallory_hash = load_policy(policy_file).reviewers["bob"].password_hash
    with rogue.open("a", encoding="utf-8") as f:
        f.write(f"reviewers:\n  mallory: {{roles: [cs_lead], password_hash: '{mallory_hash}'}}\n")
    return rogue


def test_on_a_new_ledger_another_policy_file_decides_nothing(
    reviewer_passwords: dict[str, str], database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit's case: nobody ran `amem policy install`; the first command created the ledger."""
    home, policy_file = tmp_path / "home", Path(os.environ["AMEM_POLICY"])
    code, text = _cli_at(
        database_url,
        home,
        capsys,
        "add",
        "Acme chose SSO because the auditor asked",
        "--scope",
        "acme",
        "--actor",
        "agent:sales-agent",
        "--json",
    )
    assert code == 0, text
    pending = json.loads(text)["pending_proposals"]
    assert pending
    code, text = _cli_at(database_url, home, capsys, "policy", "--json")
    installed = json.loads(text)["installed"]
    assert code == 0 and (installed["version"], installed["installed_by"]) == (1, BOOTSTRAP_ACTOR)
    assert installed["sha256"] == fingerprint(load_policy(policy_file))

    rogue = _rogue(policy_file)
    approve = ["--policy", str(rogue), "approve", pending[0], "--reviewer", "mallory", "--password-stdin"]
    code, text = _cli_at(database_url, home, capsys, *approve, stdin=reviewer_passwords["bob"])
    assert code == 2 and "decides nothing" in text and "approved" not in text
    install = ["--policy", str(rogue), "policy", "install", str(rogue), "--reviewer", "mallory"]
    code, text = _cli_at(
        database_url, home, capsys, *install, "--password-stdin", stdin=reviewer_passwords["bob"]
    )
    assert code == 2 and "wrong reviewer name or password" in text

    with Memory(home, database_url=database_url) as mem:
        assert mem.proposal(pending[0]).status == ProposalStatus.PENDING
        assert [(v.version, v.installed_by) for v in mem.policy_versions()] == [(1, BOOTSTRAP_ACTOR)]
    code, text = _cli_at(database_url, home, capsys, "verify", "--json")
    assert code == 0 and json.loads(text)["ok"] is True


def test_cli_install_and_policy_flag_cannot_widen_rights(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    policy_file = Path(os.environ["AMEM_POLICY"])
    note = make_note(memory, "x")
    p = memory.propose(note.id, "decision_rationale", "why", reason="r", proposer=llm_proposer(memory))

    code, text = _cli(memory, capsys, "policy")
    assert code == 0 and "installed version 1" in text and BOOTSTRAP_ACTOR in text
    stricter = policy_file.with_name("stricter.yaml")
    stricter.write_text(
        policy_file.read_text("utf-8").replace("default_mode: review", "default_mode: frozen"), "utf-8"
    )
    install = ["policy", "install", str(stricter), "--reviewer", "alice", "--password-stdin"]
    code, text = _cli(memory, capsys, *install, stdin="wrong\n")
    assert code == 2 and "wrong reviewer name or password" in text
    code, text = _cli(
        memory, capsys, *install[:-2], "bob", "--password-stdin", stdin=reviewer_passwords["bob"]
    )
    assert code == 2 and "may not install" in text  # bob signs in, but holds no policy_admins role
    code, text = _cli(memory, capsys, *install, stdin=reviewer_passwords["alice"])
    assert code == 0 and "policy version 2" in text and "installed by alice" in text
    code, text = _cli(memory, capsys, "--policy", str(stricter), "policy")
    assert code == 0 and "installed version 2" in text

    rogue = _rogue(policy_file)
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

    code, text = _cli(memory, capsys, "--policy", str(stricter), "policy", "export")
    assert code == 0 and parse_policy(text).reviewers.keys() == {"alice", "bob", "audrey"}


def test_a_new_ledger_whose_policy_gives_no_admin_a_password_is_claimed_by_the_first_install(
    memory: Memory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The repository's policy has no passwords: no one can sign in under version 1, so the first
    install by an admin of the file installed claims the ledger (the quick start's `amem reviewers
    set-password` after `amem add`), and from then on only the installed policy's admins install."""
    assert policy_registry.is_unclaimed(memory.policy_in_force.installed)
    assert "claims the ledger" in memory.policy_in_force.describe()
    note = make_note(memory, "x")
    p = memory.propose(note.id, "decision_rationale", "why", reason="r", proposer=llm_proposer(memory))
    folder = tmp_path / "claim"
    folder.mkdir()
    for name in ("policies.yaml", "reviewers.yaml"):
        (folder / name).write_text(
            (Path(os.environ["AMEM_POLICY"]).parent / name).read_text("utf-8"), "utf-8"
        )
    claim = folder / "policies.yaml"
    code, text = _cli(
        memory,
        capsys,
        "--policy",
        str(claim),
        "reviewers",
        "set-password",
        "alice",
        "--password-stdin",
        stdin="alice-pw\n",
    )
    assert code == 0, text
    approve = ["--policy", str(claim), "approve", p.id, "--reviewer", "alice", "--password-stdin"]
    code, text = _cli(memory, capsys, *approve, stdin="alice-pw\n")
    assert code == 2 and "decides nothing" in text and "claims the ledger" in text
    install = [
        "--policy",
        str(claim),
        "policy",
        "install",
        str(claim),
        "--reviewer",
        "alice",
        "--password-stdin",
    ]
    code, text = _cli(memory, capsys, *install, stdin="alice-pw\n")
    assert code == 0 and "policy version 2" in text and "installed by alice" in text
    code, text = _cli(memory, capsys, *approve, stdin="alice-pw\n")
    assert code == 0 and "approved by alice" in text

    # claimed: a file of mallory's neither decides nor installs (nor does a first install in code)
    code, text = _cli(
        memory,
        capsys,
        "--policy",
        str(claim),
        "reviewers",
        "set-password",
        "bob",
        "--password-stdin",
        stdin="bob-password\n",
    )
    assert code == 0, text
    rogue = _rogue(claim)
    code, text = _cli(
        memory,
        capsys,
        "--policy",
        str(rogue),
        "policy",
        "install",
        str(rogue),
        "--reviewer",
        "mallory",
        "--password-stdin",
        stdin="bob-password\n",
    )
    assert code == 2 and "wrong reviewer name or password" in text
    mallory = load_policy(rogue)
    with pytest.raises(PermissionDeniedError, match="signed in under another policy"):
        _bootstrap(memory, mallory, who="mallory")
    assert [v.installed_by for v in memory.policy_versions()] == [BOOTSTRAP_ACTOR, "alice"]


def test_an_unclaimed_ledger_is_claimed_only_by_an_admin_its_version_1_names(memory: Memory) -> None:
    """Version 1 gives no admin a password; mallory writes a file naming herself policy admin, with a
    password: signing in under her own file does not claim a ledger someone else created."""
    assert policy_registry.is_unclaimed(memory.policy_in_force.installed)
    own = memory.policy.model_copy(
        update={
            "reviewers": {
                **memory.policy.reviewers,
                "mallory": memory.policy.reviewers["alice"].model_copy(
                    update={"password_hash": hash_password("mallory-pw", rounds=4)}
                ),
            }
        }
    )
    with pytest.raises(PermissionDeniedError, match=r"mallory is no policy admin of installed version 1"):
        _bootstrap(memory, own, who="mallory")
    assert [v.installed_by for v in memory.policy_versions()] == [BOOTSTRAP_ACTOR]
    assert _bootstrap(memory, _with_password(own), who="alice").version == 2  # alice, named by v1, may


@pytest.mark.parametrize("edit", ["text", "installed_by"])
def test_an_installed_policy_edited_in_the_database_is_caught_by_verify(memory: Memory, edit: str) -> None:
    """An installed version is an event of the chain: its text must still hash to its sha256, and
    its row must still match the digest its event recorded."""
    from tests.ledger.tamper_cases import unlock

    assert memory.verify().ok
    values = {"text": "self_approval: true\n", "installed_by": "mallory"}[edit]
    with memory.ledger.engine.begin() as conn:
        unlock(conn, "policy_versions")
        conn.execute(sa.text(f"UPDATE policy_versions SET {edit} = :v WHERE version = 1"), {"v": values})
    result = memory.verify()
    assert not result.ok and result.bad_row == "policy_versions 1", result.problems


def test_a_schema_made_by_db_upgrade_gets_its_policy_from_the_first_process_that_opens_it(
    database_url: str, tmp_path: Path
) -> None:
    from amem.services import schema_admin

    assert schema_admin.upgrade(database_url).before is None  # `amem db upgrade` on an empty database
    with Memory(tmp_path / "home", database_url=database_url) as mem:
        installed = mem.policy_in_force.installed
        assert installed and (installed.version, installed.installed_by) == (1, BOOTSTRAP_ACTOR)
        assert mem.policy_in_force.mismatch is None


def test_a_process_given_no_policy_works_under_the_installed_one(
    reviewer_passwords: dict[str, str], database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newcomer's case: the store was made from one directory's policies.yaml; a command run
    from another directory (no --policy, no AMEM_POLICY, no ./policies.yaml) finds only the packaged
    default. It works under the ledger's policy, not as a stranger that decides nothing."""
    home = tmp_path / "home"
    with Memory(home, database_url=database_url) as first:  # AMEM_POLICY: the policy with passwords
        chosen = first.policy_in_force.installed
        assert chosen is not None and chosen.sha256 == fingerprint(first.policy)
        note = make_note(first, "Acme chose SSO because the auditor asked")
        p = first.propose(
            note.id, "decision_rationale", "the auditor asked", reason="r", proposer=llm_proposer(first)
        )

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("AMEM_POLICY")
    with Memory(home, database_url=database_url) as later:
        assert later.policy_in_force.file_policy.source == str(DEFAULT_POLICY_PATH)
        assert fingerprint(later.policy_in_force.file_policy) != chosen.sha256  # the default differs
        assert later.policy_in_force.mismatch is None
        assert (
            later.policy_in_force.installed == chosen and later.policy_in_force.fingerprint == chosen.sha256
        )
        alice = later.authenticate("alice", reviewer_passwords["alice"])  # the installed policy's hash
        assert later.approve(p.id, reviewer=alice).status == ProposalStatus.APPROVED

    # a policy someone chose that differs from the installed one still decides nothing
    (elsewhere / "policies.yaml").write_text(DEFAULT_POLICY_PATH.read_text("utf-8"), "utf-8")
    (elsewhere / "reviewers.yaml").write_text(
        (DEFAULT_POLICY_PATH.parent / "reviewers.yaml").read_text("utf-8"), "utf-8"
    )
    with Memory(home, database_url=database_url) as chose:
        assert "decides nothing" in (chose.policy_in_force.mismatch or "")


def test_a_policy_that_drops_or_retypes_an_attribute_the_ledger_holds_is_refused(memory: Memory) -> None:
    """Values of the old type would have made the review queue and every change to that attribute
    fail; the refusal names the attribute and how many notes and pending proposals hold it."""
    base = _with_password(memory.policy)
    _bootstrap(memory, base)
    with _open(memory, base) as mem:
        alice = signed_in(mem, "alice")
        note = make_note(mem, "Acme: uptime matters most")
        held = mem.propose(note.id, "customer_priorities", ["uptime"], reason="r", proposer=llm_proposer(mem))
        mem.approve(held.id, reviewer=alice)
        mem.propose(
            note.id, "customer_priorities", ["uptime", "price"], reason="r", proposer=llm_proposer(mem)
        )
        attributes = dict(base.attributes)
        retyped = attributes["customer_priorities"].model_copy(update={"type": "text"})
        with pytest.raises(InvalidInputError) as info:
            mem.install_policy(
                _variant(base, attributes={**attributes, "customer_priorities": retyped}), by=alice
            )
        assert "'customer_priorities'" in str(info.value) and "from list[str] to text" in str(info.value)
        assert "1 note and 1 pending proposal hold values of it" in str(info.value)
        dropped = {k: v for k, v in attributes.items() if k != "customer_priorities"}
        roles = {
            k: v.model_copy(update={"approves": [a for a in v.approves if a != "customer_priorities"]})
            for k, v in base.roles.items()
        }
        with pytest.raises(
            InvalidInputError, match=r"'customer_priorities': the policy drops it, but 1 note"
        ):
            mem.install_policy(_variant(base, attributes=dropped, roles=roles), by=alice)
        assert [v.version for v in mem.policy_versions()] == [1, 2]
        assert mem.review_items().items  # the queue reads as before
        # an attribute no note or proposal holds may change its type
        next_step = attributes["next_step"].model_copy(update={"type": "list[str]"})
        version, new = mem.install_policy(
            _variant(base, attributes={**attributes, "next_step": next_step}), by=alice
        )
        assert new and version.version == 3


def test_a_reviewer_limited_to_some_accounts_may_not_install_a_policy(memory: Memory) -> None:
    """carol, a cs_lead limited to acme, would otherwise install a policy lifting her own limit."""
    carol = memory.policy.reviewers["alice"].model_copy(
        update={"name": "Carol", "scopes": ["acme"], "password_hash": hash_password("carol-pw-1", rounds=4)}
    )
    base = _with_password(_variant(memory.policy, reviewers={**memory.policy.reviewers, "carol": carol}))
    _bootstrap(memory, base)
    unlimited = _variant(
        base, reviewers={**base.reviewers, "carol": carol.model_copy(update={"scopes": None})}
    )
    with _open(memory, base) as mem:
        with pytest.raises(
            PermissionDeniedError, match=r"carol .*limited to the accounts acme .*no scope limit"
        ):
            mem.install_policy(unlimited, by=signed_in(mem, "carol"))
        assert [v.version for v in mem.policy_versions()] == [1, 2]
        # a policy whose only admin is limited to some accounts could never be replaced
        only_carol = _variant(base, reviewers={k: v for k, v in base.reviewers.items() if k != "alice"})
        with pytest.raises(InvalidInputError, match="no scope limit, so no one could install the next"):
            mem.install_policy(only_carol, by=signed_in(mem, "alice"))


def test_a_policy_whose_admins_cannot_sign_in_is_refused(memory: Memory) -> None:
    """`amem policy install` signs in by password: a policy giving no admin a valid password_hash
    (sign-in moved to a proxy header, or a plain password pasted) would lock the store's policy."""
    base = _with_password(memory.policy)
    _bootstrap(memory, base)
    pasted = base.reviewers["alice"].model_copy(update={"password_hash": "alice-password"})
    with _open(memory, base) as mem:
        alice = signed_in(mem, "alice")
        for locked in (memory.policy, _variant(base, reviewers={**base.reviewers, "alice": pasted})):
            with pytest.raises(
                InvalidInputError, match=r"no policy admin \(alice\) has a valid password_hash"
            ):
                mem.install_policy(locked, by=alice)
        assert [v.version for v in mem.policy_versions()] == [1, 2]


def test_a_version_1_whose_admin_hash_is_malformed_stays_claimable(database_url: str, tmp_path: Path) -> None:
    """A plain password where the hash goes (a policy built in code; files refuse it at load) lets no
    one sign in: version 1 is unclaimed, and an admin it names claims it with a real password."""
    repo = load_policy(Path(os.environ["AMEM_POLICY"]))
    pasted = repo.reviewers["alice"].model_copy(update={"password_hash": "alice-password"})
    with Memory(
        tmp_path / "home",
        database_url=database_url,
        policy=_variant(repo, reviewers={**repo.reviewers, "alice": pasted}),
    ) as mem:
        assert policy_registry.is_unclaimed(mem.policy_in_force.installed)
        assert _bootstrap(mem, _with_password(repo)).version == 2


def test_a_ledger_made_with_a_policy_naming_no_admin_is_claimed_by_the_first_admin_install(
    database_url: str, tmp_path: Path
) -> None:
    """A store made with an empty policies.yaml: version 1 names no policy admin. Before, the claim
    was open only to an admin version 1 names, so no one could ever install a policy there (nothing
    could be decided) while `amem policy` promised the first install by one of its admins claimed it."""
    empty = tmp_path / "empty" / "policies.yaml"
    empty.parent.mkdir()
    empty.write_text("", "utf-8")
    home = tmp_path / "home"
    with Memory(home, database_url=database_url, policy=load_policy(empty)) as mem:
        installed = mem.policy_in_force.installed
        assert installed is not None and policy_registry.is_unclaimed(installed)
        assert "names no policy admin" in mem.policy_in_force.describe()
        assert "one of its admins" not in mem.policy_in_force.describe()
        good = _with_password(load_policy(Path(os.environ["AMEM_POLICY"])))
        with pytest.raises(PermissionDeniedError, match=r"bob .*may not install a policy"):
            _bootstrap(mem, good, who="bob")  # still an admin of the policy installed only
        assert _bootstrap(mem, good).version == 2
        assert [v.installed_by for v in mem.policy_versions()] == [BOOTSTRAP_ACTOR, "alice"]
        mallory = _variant(good, self_approval=True)
        with pytest.raises(PermissionDeniedError, match="signed in under another policy"):
            _bootstrap(mem, mallory)  # claimed: no second first install
    with Memory(home, database_url=database_url, policy=good) as mem:
        note = make_note(mem, "Acme chose SSO because the auditor asked")
        p = mem.propose(note.id, "decision_rationale", "auditor", reason="r", proposer=llm_proposer(mem))
        assert mem.approve(p.id, reviewer=signed_in(mem, "alice")).status == ProposalStatus.APPROVED
        assert mem.verify().ok


def test_an_unclaimed_version_1_names_who_may_claim_it(memory: Memory) -> None:
    """What `amem policy` says of a version 1 whose admins have no password: who claims it."""
    assert "by one of its admins (alice) claims the ledger" in memory.policy_in_force.describe()
