"""policies.yaml: validated, and errors name the file, the line and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.cli import main
from amem.domain.models import ActorKind
from amem.errors import PolicyError
from amem.policy import Mode, load_policy, parse_policy
from amem.services.accounts import hash_password
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


def test_a_tag_rule_sees_the_category_the_note_is_filed_under() -> None:
    """Before, routing looked at the note's tags only: a note re-filed under ``contract`` after it
    was made (its tags untouched) had its context changed by any agent without review."""
    policy = load_policy(REPO / "policies.yaml")  # context held on notes tagged contract
    for category in ("contract", "Contract", " CONTRACT "):
        held = policy.route("context", ["renewal"], ActorKind.AGENT, "new terms", category=category)
        assert held.mode == Mode.REVIEW and "note tagged contract" in held.rule, category
    for category in (None, "contracts", "renewal"):
        assert policy.route("context", ["renewal"], ActorKind.AGENT, category=category).mode == Mode.AUTO
    assert policy.holds("context", [], ActorKind.LLM, category="contract")
    assert not policy.applies("context", [], ActorKind.LLM, category="contract")


def test_a_re_filing_that_takes_a_rule_tag_away_waits_for_a_person() -> None:
    policy = load_policy(REPO / "policies.yaml")
    away = policy.route("category", ["renewal"], ActorKind.AGENT, "renewal", category="contract")
    assert away.mode == Mode.REVIEW and "drops contract" in away.rule
    # the note stays tagged contract, or is re-filed under the same slug, or was never a contract
    for tags, proposed, category in (
        (["contract"], "renewal", "contract"),
        (["renewal"], "Contract", "contract"),
        (["renewal"], "contract", "pricing"),
    ):
        routing = policy.route("category", tags, ActorKind.AGENT, proposed, category=category)
        assert routing.mode == Mode.AUTO, (tags, proposed, category)
    # while it is filed under contract, dropping the tag takes no protection away
    assert policy.route("tags", ["contract"], ActorKind.LLM, ["sso"], category="contract").mode == Mode.AUTO


def test_the_category_tag_is_the_one_note_construction_adds() -> None:
    from amem.llm.construct_note import ConstructedNote
    from amem.policy import category_tag

    for category in ("Contract", "Support issue", "  Q3 / renewal  "):
        answer = ConstructedNote.model_validate(
            {"keywords": [], "tags": [], "context": "c", "category": category}
        )
        assert answer.tags == [category_tag(category)], category


def test_an_installed_version_naming_a_reviewer_with_two_kind_prefixes_stays_readable() -> None:
    """A name with a second kind prefix is refused in a file now; a version installed before that
    must still read back from the ledger (its history unreadable otherwise)."""
    text = "roles:\n  lead: {approves: ['*']}\nreviewers:\n  'person:agent:alice': {roles: [lead]}\n"
    with pytest.raises(PolicyError, match="second kind prefix"):
        parse_policy(text)
    assert list(parse_policy(text, installed=True).reviewers) == ["agent:alice"]


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
    assert main(["--policy", str(path), "--home", str(tmp_path / "h"), "policy"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: default_mode" in err and "Traceback" not in err


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    """YAML keeps the last of two equal keys silently: the reader sees content frozen, amem would
    have enforced auto, and alice would have lost the role written first."""
    path = _write(
        tmp_path,
        "attributes:\n"
        "  content: {mode: frozen}\n"
        "  tags: {mode: auto}\n"
        "  content: {mode: auto}\n"
        "roles:\n"
        "  lead: {approves: ['*']}\n",
    )
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert str(info.value) == f"{path}:4: attributes: 'content' is given twice (first on line 2); keep one"
    (tmp_path / "reviewers.yaml").write_text(
        "reviewers:\n  alice: {roles: [lead]}\n  bob: {roles: []}\n  alice: {roles: []}\n"
    )
    path = _write(tmp_path, "roles:\n  lead: {approves: ['*']}\nreviewers_file: reviewers.yaml\n")
    with pytest.raises(
        PolicyError, match=rf"^{tmp_path / 'reviewers.yaml'}:4: reviewers: 'alice' is given twice"
    ):
        load_policy(path)


def test_cross_check_errors_name_their_file_and_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "version: 1\n"
        "roles:\n"
        "  cs_lead: {approves: ['*']}\n"
        "  sales_lead: {approves: [decision_rationale, nextstep]}\n"
        "erasers: [cs_lead, ghosts]\n"
        "reviewers_file: reviewers.yaml\n",
    )
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text("reviewers:\n  alice: {roles: [cs_lead]}\n")
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert str(info.value).startswith(f"{path}:4: roles.sales_lead.approves.1: ")
    assert "unknown attribute 'nextstep'" in str(info.value)
    path.write_text(path.read_text().replace(", nextstep", ""))
    with pytest.raises(PolicyError, match=rf"^{path}:5: erasers.1: erasers names unknown role 'ghosts'"):
        load_policy(path)
    path.write_text(path.read_text().replace(", ghosts", ""))
    # an entry of the reviewers file is blamed on the reviewers file, at its own line
    reviewers.write_text("reviewers:\n  alice: {roles: [cs_lead]}\n\n  bob: {roles: [cs-lead]}\n")
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert str(info.value).startswith(f"{reviewers}:4: reviewers.bob.roles.0: ")
    assert "unknown role 'cs-lead'" in str(info.value)


def test_a_reviewer_named_in_both_files_is_merged_field_by_field(tmp_path: Path) -> None:
    """roles and scopes in policies.yaml, the password in the reviewers file (where `amem reviewers
    set-password` puts it): a password never takes a reviewer's roles or scope limit away, and a
    field given in both files is refused, naming both places."""
    digest = hash_password("carol-password", rounds=4)
    path = _write(
        tmp_path,
        "roles:\n  lead: {approves: ['*']}\n"
        "reviewers:\n  carol: {name: Carol, roles: [lead], scopes: [acme]}\n"
        "reviewers_file: reviewers.yaml\n",
    )
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_text(f"reviewers:\n  alice: {{roles: [lead]}}\n  Carol: {{password_hash: '{digest}'}}\n")
    carol = load_policy(path).reviewer("carol")
    assert carol is not None and (carol.roles, carol.scopes, carol.password_hash) == (
        ["lead"],
        ["acme"],
        digest,
    )
    reviewers.write_text(f"reviewers:\n  carol: {{roles: [], password_hash: '{digest}'}}\n")
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert str(info.value).startswith(
        f"{reviewers}:2: reviewers.carol: roles given both here and in {path}:4"
    )
    reviewers.write_text("reviewers:\n  carol: {scopes: null}\n")  # never a silent widening
    with pytest.raises(PolicyError, match="scopes given both here"):
        load_policy(path)


def test_a_password_hash_that_is_no_bcrypt_hash_is_refused_without_echoing_it(tmp_path: Path) -> None:
    """A plain password pasted where the hash goes lets no one sign in (and would have counted as a
    password, so a new store's version 1 could not be claimed either)."""
    path = _write(
        tmp_path,
        "roles:\n  lead: {approves: ['*']}\nreviewers:\n  alice:\n    roles: [lead]\n"
        "    password_hash: alice-secret-1\n",
    )
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    message = str(info.value)
    assert message.startswith(f"{path}:6: reviewers.alice.password_hash: is not a bcrypt hash")
    assert "alice-secret-1" not in message
    path.write_text(path.read_text().replace("alice-secret-1", hash_password("alice-secret-1", rounds=4)))
    assert load_policy(path).reviewer("alice").password_hash.startswith("$2b$04$")


@pytest.mark.parametrize("name", ["_deal_size", "model_config", "deal-size", "json", "2fa"])
def test_a_team_attribute_name_the_model_answer_cannot_carry_is_refused(tmp_path: Path, name: str) -> None:
    """Such an attribute was offered to the model, and every answer filling it was refused."""
    path = _write(
        tmp_path, f"version: 1\nattributes:\n  next_step: {{type: text}}\n  '{name}':\n    type: number\n"
    )
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert str(info.value).startswith(f"{path}:4: attributes.{name}: attribute name {name!r} is ")
    assert "letters, digits and underscores" in str(info.value) or "reserved" in str(info.value)
    # a version installed before the check still reads (the ledger's history stays readable)
    text = f"attributes:\n  '{name}': {{type: number}}\n"
    assert name in parse_policy(text, installed=True).attributes
    with pytest.raises(PolicyError):
        parse_policy(text)


def test_clearing_the_category_of_a_note_filed_under_a_rule_tag_waits_for_a_person() -> None:
    """Before, only a new category (a string) counted as a re-filing: clearing it (None, or empty
    text) took the contract protection away at once, with no person."""
    policy = load_policy(REPO / "policies.yaml")  # context held on notes tagged contract
    for cleared in (None, ""):
        away = policy.route("category", ["renewal"], ActorKind.AGENT, cleared, category="contract")
        assert away.mode == Mode.REVIEW and "drops contract" in away.rule, cleared
    # the note's tags still say contract, or it was never filed there: nothing is taken away
    assert (
        policy.route("category", ["contract"], ActorKind.AGENT, None, category="contract").mode == Mode.AUTO
    )
    assert policy.route("category", ["renewal"], ActorKind.AGENT, None, category="renewal").mode == Mode.AUTO
    # tags cleared (None) drop the tag as an empty list does
    assert policy.route("tags", ["contract"], ActorKind.LLM, None).mode == Mode.REVIEW
    # a question that leaves the value out is not a question about clearing it
    from amem.policy import UNKNOWN

    assert policy.route("category", [], ActorKind.AGENT, UNKNOWN, category="contract").mode == Mode.AUTO
    assert policy.route("category", [], ActorKind.AGENT, category="contract").mode == Mode.AUTO


@pytest.mark.parametrize(
    "name", ["reason", "actor", "note_id", "scope", "raw_log_ids", "id", "version", "created_at", "extra"]
)
def test_a_team_attribute_named_like_a_notes_own_field_or_an_edits_parameter_is_a_flaw(
    tmp_path: Path, name: str
) -> None:
    """`amem update N reason=...` ended in an internal error (two values for Memory.update's
    reason), and `amem show` showed a team attribute `raw_log_ids` in place of the note's sources.
    Refused where a policy is installed (tests/services/test_policy_registry_refused_since.py), the
    file still loads: a store whose installed policy declared one before must not be locked out."""
    path = _write(
        tmp_path, f"version: 1\nattributes:\n  next_step: {{type: text}}\n  {name}:\n    type: text\n"
    )
    (flaw,) = load_policy(path).flaws()
    assert flaw.kept_by == ("name", name)
    assert flaw.refusal().startswith(f"{path}:4: attributes.{name}: attribute name {name!r} is reserved")
    assert f"choose another (e.g. call_{name})" in flaw.refusal()
    assert f"declare the new name (e.g. call_{name}) beside it" in flaw.warning()
    # a version installed before the check reads as it was, and is found to hold it
    installed = parse_policy(f"attributes:\n  {name}: {{type: text}}\n", installed=True)
    assert name in installed.attributes and [f.kept_by for f in installed.flaws()] == [("name", name)]


def test_every_parameter_of_an_edit_is_a_reserved_attribute_name() -> None:
    """Memory.update takes attributes as keyword arguments beside its own parameters: a parameter
    added there must be reserved here too, or an attribute of that name can never be edited."""
    import inspect

    from amem.memory import Memory

    own = [
        p.name
        for p in inspect.signature(Memory.update).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    for name in own:
        (flaw,) = parse_policy(f"attributes:\n  {name}: {{type: text}}\n").flaws()
        assert f"attribute name {name!r} is reserved" in flaw.refusal()


def test_a_policy_or_reviewers_file_not_in_utf8_is_named_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file saved in Latin-1 ended every command in "internal error ... a bug in amem" (exit 70)."""
    reviewers = tmp_path / "reviewers.yaml"
    reviewers.write_bytes(b"reviewers:\n  jose: {roles: [lead], name: 'Jos\xe9'}\n")
    path = tmp_path / "policies.yaml"
    path.write_bytes(b"roles: {lead: {approves: ['*']}}\nreviewers_file: reviewers.yaml\n")
    with pytest.raises(PolicyError, match=rf"^{reviewers}:2: the reviewers file is not UTF-8 \(byte 0xe9"):
        load_policy(path)
    path.write_bytes(b"roles: {lead: {approves: ['*']}}\n\n# caf\xe9\n")
    with pytest.raises(
        PolicyError, match=rf"^{path}:3: the policy file is not UTF-8 \(byte 0xe9 at column 6\)"
    ):
        load_policy(path)
    assert main(["--policy", str(path), "--home", str(tmp_path / "h"), "policy"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3: the policy file is not UTF-8" in err and "internal error" not in err


@pytest.mark.parametrize("condition", ["tags_any: []", "proposer_kinds: []"])
def test_a_rule_condition_given_an_empty_list_is_a_flaw_naming_its_line(
    tmp_path: Path, condition: str
) -> None:
    """An empty list matches nothing: the rule was accepted and silently never applied. Refused
    where a policy is installed; a policies.yaml holding one still loads (it stopped every command)."""
    path = _write(
        tmp_path,
        "attributes:\n  context:\n    mode: auto\n    rules:\n"
        f"      - when:\n          {condition}\n        mode: review\n",
    )
    field = condition.split(":")[0]
    policy = load_policy(path)
    (flaw,) = policy.flaws()
    assert flaw.refusal().startswith(f"{path}:6: attributes.context.rules.0.when.{field}: is an empty list")
    assert policy.attributes["context"].rules[0].mode == Mode.REVIEW
    # the same rule in an installed version keeps it: what install compares
    installed = parse_policy(path.read_text(), installed=True)
    assert [f.kept_by for f in installed.flaws()] == [flaw.kept_by]
    moved = parse_policy(path.read_text().replace("mode: review", "mode: frozen"))
    assert [f.kept_by for f in moved.flaws()] != [flaw.kept_by]  # another rule: not kept by it
