"""Settings amem refuses since a store was made (a team attribute named like a note's own field, a
rule condition given an empty list): a new policy may not introduce one, while a store whose
installed policy holds one keeps working under it, warned what to do about it."""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import yaml

from amem.cli import main
from amem.domain.models import utcnow
from amem.errors import PolicyError
from amem.memory import Memory
from amem.policy import fingerprint, load_policy
from amem.services import policy_registry
from amem.services.authentication import Authentication
from tests.cli.test_note_commands import MODEL, construct
from tests.conftest import REPO
from tests.factories import llm_proposer, make_note

TEXT = "Acme renews on 2027-03-01 only with SSO: their auditor asked for it."


@dataclass
class OlderStore:
    """A store made before amem refused the settings its installed policy holds, and its file."""

    home: Path
    database_url: str
    policy_file: Path
    capsys: pytest.CaptureFixture[str]

    def __call__(self, *args: str, stdin: str = "") -> tuple[int, str, str]:
        options = ["--database-url", self.database_url, "--home", str(self.home), "--llm", MODEL]
        with patch("sys.stdin", io.StringIO(stdin)):
            code = main([*options, *args])
        captured = self.capsys.readouterr()
        return code, captured.out, captured.err


def _with(path: Path, change: Any) -> Path:
    """A copy of the policy file ``path`` beside it, its data changed by ``change``."""
    data = yaml.safe_load(path.read_text("utf-8"))
    change(data)
    changed = path.with_name(f"changed-{len(list(path.parent.iterdir()))}.yaml")
    changed.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return changed


def _declare_reason_and_an_empty_rule(data: dict[str, Any]) -> None:
    data["attributes"]["reason"] = {"type": "text", "mode": "auto", "description": "Why they called."}
    data["attributes"]["next_step"]["rules"] = [{"when": {"tags_any": []}, "mode": "auto"}]


@pytest.fixture
def older(
    reviewer_passwords: dict[str, str],
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    scripted_llm: Any,
) -> Iterator[OlderStore]:
    """A store whose installed policy declares a team attribute ``reason`` and a rule whose
    ``tags_any`` is empty, installed as an amem before those checks installed it (the version
    recorded as it was), the same file in AMEM_POLICY."""
    monkeypatch.setenv("AMEM_EMBEDDING_MODEL", "scripted/embed-v1")
    clean = Path(os.environ["AMEM_POLICY"])
    before = _with(clean, _declare_reason_and_an_empty_rule)
    before = before.rename(clean.with_name("policies-before.yaml"))
    home = tmp_path / "home"
    with Memory(home, database_url=database_url, policy=clean) as mem, mem.ledger.write() as tx:
        previous = tx.installed_policy()
        policy_registry.record_install(
            tx, load_policy(before), installed_by="alice", now=utcnow(), previous=previous
        )
    monkeypatch.setenv("AMEM_POLICY", str(before))
    yield OlderStore(home, database_url, before, capsys)


def test_a_store_whose_policy_holds_a_name_reserved_since_still_verifies_adds_and_decides(
    older: OlderStore,
    reviewer_passwords: dict[str, str],
    scripted_llm: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """After the upgrade that reserved `reason` and refused empty conditions, every command on such
    a store exited 2 ("attribute name 'reason' is reserved"), `amem policy export` printed a file
    that failed to load, and no policy could be installed to get out of it."""
    caplog.set_level(logging.WARNING)
    code, out, err = older("verify")
    assert code == 0 and out.startswith("OK"), err
    # each warning once, on stderr, marked as one (not a bare line that reads like an error)
    told = [line for line in err.splitlines() if "attribute name 'reason' is reserved" in line]
    assert len(told) == 1 and told[0].startswith(f"warning: {older.policy_file}:"), err
    said = caplog.text
    assert (
        f"{older.policy_file}:" in said and "attributes.reason: attribute name 'reason' is reserved" in said
    )
    assert (
        "kept, as the installed policy held it" in said and "declare the new name (e.g. call_reason)" in said
    )
    assert "attributes.next_step.rules.0.when.tags_any: is an empty list" in said

    scripted_llm.push(
        construct(valid_at="2027-03-01T00:00:00Z", extra={"reason": "their auditor asked for it"},
                  evidence={"valid_at": "2027-03-01"}),
        json.dumps({"links": [], "updates": [], "contradictions": []}),
    )  # fmt: skip
    code, out, err = older("add", TEXT, "--scope", "acme", "--json")
    assert code == 0, err
    added = json.loads(out)
    assert added["note"]["extra"]["reason"] == "their auditor asked for it"  # the model filled it
    (held,) = added["pending_proposals"]
    code, out, err = older(
        "approve", held, "--reviewer", "bob", "--password-stdin", stdin=reviewer_passwords["bob"]
    )
    assert code == 0 and "approved by bob" in out, err

    code, exported, err = older("policy", "export")
    assert code == 0, err
    again = older.policy_file.with_name("exported.yaml")
    again.write_text(exported, "utf-8")
    with Memory(older.home, database_url=older.database_url, policy=again) as mem:
        assert mem.policy_in_force.mismatch is None  # the export loads, and is the policy in force
        assert fingerprint(load_policy(again)) == mem.policy_in_force.installed.sha256  # type: ignore[union-attr]
        assert mem.verify().ok


def test_the_next_policy_keeps_what_is_installed_and_may_not_introduce_more(
    older: OlderStore, reviewer_passwords: dict[str, str]
) -> None:
    """The way out the warning names: the new name declared beside the old one installs; a name or
    an empty condition the installed policy does not hold is refused at install, naming its line."""
    install = ["policy", "install", "--reviewer", "alice", "--password-stdin"]
    password = reviewer_passwords["alice"]
    beside = _with(older.policy_file, lambda d: d["attributes"].update(call_reason={"type": "text"}))
    code, out, err = older(*install[:2], str(beside), *install[2:], stdin=password)
    assert code == 0 and "policy version 3" in out and "installed by alice" in out, err

    def add_actor(data: dict[str, Any]) -> None:
        data["attributes"]["actor"] = {"type": "text"}

    refused = _with(beside, add_actor)
    code, out, err = older(*install[:2], str(refused), *install[2:], stdin=password)
    line = refused.read_text("utf-8").splitlines().index("  actor:") + 1
    assert code == 2 and f"{refused}:{line}: attributes.actor: attribute name 'actor' is reserved" in err
    assert "choose another (e.g. call_actor)" in err

    def empty_kinds(data: dict[str, Any]) -> None:
        data["attributes"]["context"]["rules"].append({"when": {"proposer_kinds": []}, "mode": "review"})

    code, out, err = older(*install[:2], str(_with(beside, empty_kinds)), *install[2:], stdin=password)
    assert code == 2 and "attributes.context.rules.1.when.proposer_kinds: is an empty list" in err
    with Memory(older.home, database_url=older.database_url, policy=beside) as mem:
        assert [v.version for v in mem.policy_versions()] == [1, 2, 3]


def test_a_new_store_may_not_start_with_a_name_reserved_since(database_url: str, tmp_path: Path) -> None:
    """A new store's policy is a new policy: its first version is refused as an install would be,
    naming the line, and nothing is installed."""
    folder = tmp_path / "policy"
    folder.mkdir()
    for name in ("policies.yaml", "reviewers.yaml"):
        (folder / name).write_text((REPO / name).read_text("utf-8"), "utf-8")
    path = _with(folder / "policies.yaml", lambda d: d["attributes"].update(scope={"type": "text"}))
    line = path.read_text("utf-8").splitlines().index("  scope:") + 1
    with pytest.raises(
        PolicyError, match=rf"^{path}:{line}: attributes.scope: attribute name 'scope' is reserved"
    ):
        Memory(tmp_path / "home", database_url=database_url, policy=path)
    with Memory(tmp_path / "home", database_url=database_url) as mem:  # a good file starts it
        assert [v.version for v in mem.policy_versions()] == [1]


def test_the_first_install_on_a_ledger_made_before_installs_keeps_the_names_its_notes_hold(
    reviewer_passwords: dict[str, str], database_url: str, tmp_path: Path
) -> None:
    """A ledger made before amem installed policies has no installed version to keep a name by:
    its notes' values do (refusing their name would leave renaming, which orphans them, as the only
    way to a policy); a name no note holds is still refused."""
    with_reason = _with(
        Path(os.environ["AMEM_POLICY"]),
        lambda d: d["attributes"].update(reason={"type": "text", "mode": "auto"}),
    )
    home = tmp_path / "home"
    with (
        patch("amem.services.policy_registry.bootstrap", return_value=None),
        Memory(home, database_url=database_url, policy=with_reason) as old,
    ):
        note = make_note(old, "Acme chose SSO")
        old.propose(note.id, "reason", "their auditor asked", reason="r", proposer=llm_proposer(old))
    also_actor = _with(with_reason, lambda d: d["attributes"].update(actor={"type": "text"}))
    with Memory(home, database_url=database_url, policy=with_reason) as mem:
        assert mem.policy_in_force.installed is None
        for path in (also_actor, with_reason):
            policy = load_policy(path)
            by = Authentication(policy, fingerprint(policy)).signed_in("alice", method="test")
            if path == also_actor:
                with pytest.raises(
                    PolicyError, match=r"attributes.actor: attribute name 'actor' is reserved"
                ):
                    mem.install_policy(policy, by=by)
            else:
                version, _ = mem.install_policy(policy, by=by)
                assert (version.version, version.installed_by) == (1, "alice")
        assert mem.read(note.id).extra["reason"] == "their auditor asked"
