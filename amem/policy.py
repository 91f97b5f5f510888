"""policies.yaml: which attribute changes apply at once, wait for review, or never apply.

The policy is data, validated by pydantic; errors name the file, the line and what is wrong.
Routing is a pure function of the policy, the attribute, the note and the proposer, so the
governance service (not the UI) is where it is enforced.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from amem.domain.identity import canonical_identity, identity_key
from amem.domain.models import CORE_ATTRIBUTES, CORE_TYPES, ActorKind, AttributeType
from amem.errors import AmemError, PolicyError

M = TypeVar("M", bound=BaseModel)


class Mode(StrEnum):
    AUTO = "auto"
    REVIEW = "review"
    FROZEN = "frozen"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Condition(_Strict):
    """Narrows a rule. Every given field must match."""

    tags_any: list[str] | None = Field(default=None, description="the note carries one of these tags")
    proposer_kinds: list[ActorKind] | None = Field(
        default=None, description="the proposer is of one of these kinds"
    )

    def matches(self, note_tags: Iterable[str], proposer_kind: ActorKind) -> bool:
        """Tags match whatever their case: a note tagged "Contract" is tagged contract."""
        if self.tags_any is not None and not {t.casefold() for t in self.tags_any} & {
            t.casefold() for t in note_tags
        }:
            return False
        return not (self.proposer_kinds is not None and proposer_kind not in self.proposer_kinds)

    def describe(self) -> str:
        parts = []
        if self.tags_any is not None:
            parts.append(f"note tagged {' or '.join(self.tags_any)}")
        if self.proposer_kinds is not None:
            parts.append(f"proposer is {' or '.join(k.value for k in self.proposer_kinds)}")
        return " and ".join(parts) or "always"


class Rule(_Strict):
    when: Condition
    mode: Mode


class AttributePolicy(_Strict):
    mode: Mode | None = None
    type: AttributeType | None = None
    description: str | None = None
    rules: list[Rule] = Field(default_factory=list)


class Role(_Strict):
    approves: list[str] = Field(default_factory=list, description="attribute names, or '*' for all")
    description: str | None = None

    def covers(self, attribute: str) -> bool:
        return "*" in self.approves or attribute in self.approves


class Reviewer(_Strict):
    roles: list[str] = Field(default_factory=list)
    scopes: list[str] | None = Field(
        default=None,
        description="the scopes (accounts) whose memory this reviewer decides on, e.g. the accounts "
        "a sales lead owns; unset: every scope",
    )
    name: str | None = None
    email: str | None = None
    password_hash: str | None = Field(default=None, description="bcrypt hash for the console's sign-in")


class Policy(_Strict):
    version: int = 1
    default_mode: Mode = Mode.REVIEW
    self_approval: bool = False
    attributes: dict[str, AttributePolicy] = Field(default_factory=dict)
    roles: dict[str, Role] = Field(default_factory=dict)
    reviewers: dict[str, Reviewer] = Field(default_factory=dict)
    reviewers_file: str | None = None
    agents: list[str] = Field(default_factory=list, description="identities that may never approve")
    policy_admins: list[str] | None = Field(
        default=None,
        description="roles that may install the next policy (`amem policy install`); "
        "unset: the roles that approve everything ('*')",
    )
    erasers: list[str] = Field(
        default_factory=list, description="roles whose reviewers may erase raw logs on request"
    )
    source: str | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        for name, attr in self.attributes.items():
            if name not in CORE_ATTRIBUTES and attr.type is None:
                raise ValueError(f"attribute {name!r} is not a core attribute and declares no type")
            if name in CORE_ATTRIBUTES and attr.type is not None and attr.type != CORE_TYPES[name]:
                raise ValueError(f"attribute {name!r} is a core attribute of type {CORE_TYPES[name]}")
        for rname, role in self.roles.items():
            for attribute in role.approves:
                if attribute != "*" and not self.knows(attribute):
                    raise ValueError(f"role {rname!r} approves unknown attribute {attribute!r}")
        for role in self.erasers:
            if role not in self.roles:
                raise ValueError(f"erasers names unknown role {role!r}")
        for role in self.policy_admins or []:
            if role not in self.roles:
                raise ValueError(f"policy_admins names unknown role {role!r}")
        # Identities in their canonical form (amem.domain.identity), so a lookup cannot be dodged by
        # a name variant and two entries cannot name one person.
        agents = [_identity(a, "agents") for a in self.agents]
        reviewers: dict[str, Reviewer] = {}
        for who, reviewer in self.reviewers.items():
            key = _identity(who, "reviewers")
            if key in reviewers:
                raise ValueError(f"reviewers {who!r} and another entry are the same identity {key!r}")
            for role in reviewer.roles:
                if role not in self.roles:
                    raise ValueError(f"reviewer {who!r} has unknown role {role!r}")
            if reviewer.scopes is not None and not all(s and s == s.strip() for s in reviewer.scopes):
                raise ValueError(
                    f"reviewer {who!r}: each of scopes is a scope as agents send it (no empty one, "
                    "no space at either end); leave scopes out for every scope"
                )
            if key in agents:
                raise ValueError(f"{who!r} is listed as an agent and cannot be a reviewer")
            reviewers[key] = reviewer
        self.agents, self.reviewers = agents, reviewers
        return self

    # -- questions the services ask ---------------------------------------------------------

    def may_erase(self, who: str) -> bool:
        return any(role in self.erasers for role in self.roles_of(who))

    def knows(self, attribute: str) -> bool:
        return attribute in CORE_ATTRIBUTES or attribute in self.attributes

    def type_of(self, attribute: str) -> AttributeType:
        if attribute in CORE_TYPES:
            return CORE_TYPES[attribute]
        declared = self.attributes.get(attribute)
        if declared is None or declared.type is None:
            raise KeyError(attribute)
        return declared.type

    def declared_attributes(self) -> dict[str, AttributePolicy]:
        """The team's extra attributes (not core), with their type and description."""
        return {k: v for k, v in self.attributes.items() if k not in CORE_ATTRIBUTES}

    def route(
        self, attribute: str, note_tags: Iterable[str], proposer_kind: ActorKind, proposed: Any = None
    ) -> Routing:
        """Which mode applies, and the rule that said so (recorded with the proposal).

        ``proposed``, the new value when it is known: a change of tags that would take from the
        note a tag some rule names (the default policy's ``contract``) waits for a person even where
        tags apply by themselves, since the protection that rule gives the note would go with it."""
        tags = list(note_tags)
        routing = self._route(attribute, tags, proposer_kind)
        if attribute == "tags" and routing.mode == Mode.AUTO and isinstance(proposed, list | tuple):
            kept = {str(t).casefold() for t in proposed}
            lost = sorted({t.casefold() for t in tags} & self.rule_tags() - kept)
            if lost:
                rule = f"attributes.tags (the change drops {', '.join(lost)}, named by a rule)"
                return Routing(Mode.REVIEW, rule)
        return routing

    def _route(self, attribute: str, tags: list[str], proposer_kind: ActorKind) -> Routing:
        attr = self.attributes.get(attribute)
        if attr is not None:
            for i, rule in enumerate(attr.rules):
                if rule.when.matches(tags, proposer_kind):
                    return Routing(rule.mode, f"attributes.{attribute}.rules[{i}] ({rule.when.describe()})")
            if attr.mode is not None:
                return Routing(attr.mode, f"attributes.{attribute}.mode")
        return Routing(self.default_mode, "default_mode")

    def rule_tags(self) -> set[str]:
        """Every tag a rule's condition names, casefolded."""
        return {
            t.casefold() for a in self.attributes.values() for r in a.rules for t in (r.when.tags_any or [])
        }

    def applies(
        self, attribute: str, note_tags: Iterable[str], proposer_kind: ActorKind, proposed: Any = None
    ) -> bool:
        """Whether a proposal of ``attribute`` by ``proposer_kind`` is applied without a person."""
        return self.route(attribute, note_tags, proposer_kind, proposed).mode == Mode.AUTO

    def holds(
        self, attribute: str, note_tags: Iterable[str], proposer_kind: ActorKind, proposed: Any = None
    ) -> bool:
        """Whether a proposal of ``attribute`` by ``proposer_kind`` waits for a person (review)."""
        return self.route(attribute, note_tags, proposer_kind, proposed).mode == Mode.REVIEW

    def reviewer(self, identity: str) -> Reviewer | None:
        """The reviewer entry of ``identity`` (any variant of the name), or None."""
        return self.reviewers.get(identity_key(identity))

    def is_agent(self, identity: str) -> bool:
        return identity_key(identity) in self.agents

    def roles_of(self, reviewer: str) -> list[str]:
        entry = self.reviewer(reviewer)
        return list(entry.roles) if entry else []

    def scopes_of(self, reviewer: str) -> tuple[str, ...] | None:
        """The scopes ``reviewer`` decides in, sorted; None: every scope. A name that is no reviewer
        of this policy (one removed from it, whose token may outlive them) decides in none: ``()``,
        never "every scope"."""
        entry = self.reviewer(reviewer)
        if entry is None:
            return ()
        return tuple(sorted(set(entry.scopes))) if entry.scopes is not None else None

    def decides_in(self, reviewer: str, scope: str) -> bool:
        """Whether ``reviewer``'s decisions may touch ``scope``'s memory (their roles aside)."""
        scopes = self.scopes_of(reviewer)
        return scopes is None or scope in scopes

    def may_approve(self, reviewer: str, attribute: str) -> bool:
        return any(self.roles[r].covers(attribute) for r in self.roles_of(reviewer) if r in self.roles)

    def admin_roles(self) -> list[str]:
        """The roles that may install the next policy."""
        if self.policy_admins is not None:
            return list(self.policy_admins)
        return [name for name, role in self.roles.items() if "*" in role.approves]

    def may_install(self, identity: str) -> bool:
        return bool(set(self.roles_of(identity)) & set(self.admin_roles()))

    def approver_roles(self, attribute: str) -> list[str]:
        return [name for name, role in self.roles.items() if role.covers(attribute)]

    def who_may_approve(self, attribute: str) -> list[str]:
        """The roles that may approve a change to ``attribute``; none when the policy freezes it
        whatever the note and the proposer (its mode and every rule say frozen).

        The one answer to that question for every reader: ``amem policy``, the console's policy page.
        """
        attr = self.attributes.get(attribute)
        own = attr.mode if attr is not None and attr.mode is not None else self.default_mode
        modes = {own, *(rule.mode for rule in (attr.rules if attr else []))}
        if modes == {Mode.FROZEN}:
            return []
        return self.approver_roles(attribute)


def _identity(name: str, where: str) -> str:
    try:
        return canonical_identity(name, what=f"{where}: {name!r}")
    except AmemError as exc:
        raise ValueError(str(exc)) from None


@dataclass(frozen=True)
class Routing:
    mode: Mode
    rule: str


# -- loading ------------------------------------------------------------------------------------

DEFAULT_POLICY_PATH = Path(__file__).resolve().parent / "defaults" / "policies.yaml"


def resolve_policy_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """--policy, else AMEM_POLICY, else ./policies.yaml, else the packaged default."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("AMEM_POLICY")
    if env:
        return Path(env)
    local = Path("policies.yaml")
    if local.is_file():
        return local
    return DEFAULT_POLICY_PATH


def load_policy(path: str | os.PathLike[str] | None = None) -> Policy:
    policy_path = resolve_policy_path(path)
    try:
        text = policy_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"{policy_path}: cannot read policy file: {exc.strerror or exc}") from exc
    data, node = _parse_yaml(text, policy_path)
    policy = _validate(Policy, data, node, policy_path)
    if policy.reviewers_file:
        reviewers_path = (policy_path.parent / policy.reviewers_file).resolve()
        try:
            rtext = reviewers_path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PolicyError(f"{reviewers_path}: cannot read reviewers file: {exc.strerror or exc}") from exc
        rdata, rnode = _parse_yaml(rtext, reviewers_path)
        reviewers = _validate(_ReviewersFile, rdata, rnode, reviewers_path).reviewers
        merged = {**policy.reviewers, **reviewers}
        data = dict(data or {})
        data["reviewers"] = {k: v.model_dump(exclude_none=True) for k, v in merged.items()}
        policy = _validate(Policy, data, node, policy_path)
    return policy.model_copy(update={"source": str(policy_path)})


def parse_policy(text: str, source: str = "<policy>") -> Policy:
    data, node = _parse_yaml(text, Path(source))
    return _validate(Policy, data, node, Path(source)).model_copy(update={"source": source})


def canonical_text(policy: Policy) -> str:
    """The policy as the ledger records it: every setting, the reviewers file folded in, keys
    sorted, so one policy has one text and one sha256 whatever its file's comments and layout."""
    data = policy.model_dump(mode="json", exclude_none=True)
    data.pop("reviewers_file", None)
    return yaml.safe_dump(data, sort_keys=True, allow_unicode=True, default_flow_style=False)


def fingerprint(policy: Policy) -> str:
    """sha256 of ``canonical_text(policy)``: which policy routed a proposal, or signed a reviewer in."""
    return hashlib.sha256(canonical_text(policy).encode("utf-8")).hexdigest()


class _ReviewersFile(_Strict):
    reviewers: dict[str, Reviewer] = Field(default_factory=dict)


def _parse_yaml(text: str, path: Path) -> tuple[Any, yaml.Node | None]:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError(f"{where}: invalid YAML: {problem}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError(f"{path}:1: the policy must be a mapping of settings, not {type(data).__name__}")
    return data, node


def _validate(model: type[M], data: Any, node: yaml.Node | None, path: Path) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [p for p in err["loc"] if not isinstance(p, str) or not p.startswith("function-")]
        line = _line_of(node, loc)
        where = ".".join(str(p) for p in loc) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        raise PolicyError(f"{path}:{line}: {where}: {msg}{more}") from exc


def _line_of(node: yaml.Node | None, loc: list[Any]) -> int:
    """The 1-based line of the YAML node at ``loc``, or of its deepest existing parent."""
    if node is None:
        return 1
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    line = key.start_mark.line + 1
                    node = value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line
