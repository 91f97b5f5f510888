"""policies.yaml: validated, and errors name the file, the line and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.cli import main
from amem.domain.models import ActorKind
from amem.errors import PolicyError
from amem.policy import Mode, load_policy
from tests.conftest import REPO


def test_shipped_defaults_route_as_documented() -> None:
    policy = load_policy(REPO / "policies.yaml")
    expected = {
        "tags": Mode.AUTO,
        "keywords": Mode.AUTO,
        "context": Mode.AUTO,
        "category": Mode.AUTO,
        "links": Mode.AUTO,
        "decision_rationale": Mode.REVIEW,
        "valid_at": Mode.REVIEW,
        "invalid_at": Mode.REVIEW,
        "content": Mode.FROZEN,
    }
    for attribute, mode in expected.items():
        assert policy.route(attribute, [], ActorKind.LLM).mode == mode, attribute
    assert policy.self_approval is False
    assert policy.may_approve("alice", "tags") and not policy.may_approve("bob", "tags")
    assert not policy.may_approve("audrey", "decision_rationale")


def test_a_tag_rule_matches_the_tag_whatever_its_case() -> None:
    policy = load_policy(REPO / "policies.yaml")  # context held on notes tagged contract
    for tags in (["contract"], ["Contract"], ["acme", "CONTRACT"]):
        assert policy.route("context", tags, ActorKind.LLM).mode == Mode.REVIEW, tags
    assert policy.route("context", ["contracts", "acme"], ActorKind.LLM).mode == Mode.AUTO


def test_a_change_of_tags_that_drops_a_tag_a_rule_names_waits_for_a_person() -> None:
    policy = load_policy(REPO / "policies.yaml")
    dropped = policy.route("tags", ["contract", "acme"], ActorKind.LLM, ["acme", "renewal"])
    assert dropped.mode == Mode.REVIEW and "drops contract" in dropped.rule
    # tags added, or a tag no rule names dropped: applied as before
    for proposed in (["contract", "acme", "renewal"], ["Contract"]):
        assert policy.route("tags", ["contract", "acme"], ActorKind.LLM, proposed).mode == Mode.AUTO
    assert policy.route("tags", ["pricing", "acme"], ActorKind.LLM, ["acme"]).mode == Mode.AUTO


def test_packaged_default_matches_repository_policy() -> None:
    packaged = REPO / "amem" / "defaults" / "policies.yaml"
    assert packaged.read_text() == (REPO / "policies.yaml").read_text()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policies.yaml"
    path.write_text(text)
    return path


def test_bad_mode_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "version: 1\nattributes:\n  tags:\n    mode: sometimes\n")
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    message = str(info.value)
    assert message.startswith(f"{path}:4:")
    assert "attributes.tags.mode" in message and "'auto', 'review' or 'frozen'" in message


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "version: 1\nattributes:\n  tags: {mode: auto\n  keywords: x\n")
    with pytest.raises(PolicyError, match=rf"^{path}:\d+: invalid YAML"):
        load_policy(path)


def test_unknown_role_and_untyped_attribute_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "reviewers:\n  zoe:\n    roles: [wizard]\n")
    with pytest.raises(PolicyError, match="unknown role 'wizard'"):
        load_policy(path)
    path = _write(tmp_path, "attributes:\n  budget:\n    mode: review\n")
    with pytest.raises(PolicyError, match="declares no type"):
        load_policy(path)


def test_misspelt_setting_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "version: 1\nself_aproval: true\n")
    with pytest.raises(PolicyError, match=r":2: self_aproval: Extra inputs are not permitted"):
        load_policy(path)


def test_agent_listed_as_reviewer_is_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "roles:\n  lead: {approves: ['*']}\nreviewers:\n  bot: {roles: [lead]}\nagents: [bot]\n",
    )
    with pytest.raises(PolicyError, match="listed as an agent"):
        load_policy(path)


def test_cli_reports_policy_error_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "default_mode: maybe\n")
    assert main(["--policy", str(path), "--home", str(tmp_path / "h"), "pending"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: default_mode" in err and "Traceback" not in err
