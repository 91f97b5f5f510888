"""policies.yaml: which attribute changes apply at once, wait for review, or never apply.

The policy is data, validated by pydantic; errors name the file, the line and what is wrong.
Routing is a pure function of the policy, the attribute, the note and the proposer, so the
governance service (not the UI) is where it is enforced.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from amem.domain.identity import canonical_identity, identity_key
from amem.domain.models import CORE_ATTRIBUTES, CORE_TYPES, ActorKind, AttributeType, Note
from amem.errors import AmemError, PolicyError

M = TypeVar("M", bound=BaseModel)


class Mode(StrEnum):
    AUTO = "auto"
    REVIEW = "review"
    FROZEN = "frozen"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Unknown(Enum):
    """The type of ``UNKNOWN``: None cannot say "not known", since None is a value (cleared)."""

    VALUE = "unknown"


#: The proposed value a routing question leaves out (``Policy.route``): the guards that look at
#: what a change takes away from a note then do not apply.
UNKNOWN = _Unknown.VALUE


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


#: A bcrypt hash as bcrypt writes it: $2a$/$2b$/$2y$, a two-digit cost, 53 characters of salt and digest.
_BCRYPT_HASH = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")


def is_bcrypt_hash(value: str) -> bool:
    """Whether ``value`` is a bcrypt hash someone can sign in with (a pasted password is not)."""
    return _BCRYPT_HASH.fullmatch(value) is not None


def _installed(info: ValidationInfo) -> bool:
    """Whether the text validated is an installed version read back from the ledger: the checks
    added since (hash format, identities) must not make a ledger's own history unreadable."""
    return bool((info.context or {}).get("installed"))


class _Problem(ValueError):
    """A cross-check's refusal and where it is in the file (a path ``_line_of`` maps to a line)."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


#: Names a team attribute may not take: pydantic's own (the model the analyst's answer is read
#: into, amem/llm/construct_note.py, would ignore or refuse a field so named).
_RESERVED_NAMES = frozenset(n for n in dir(BaseModel) if not n.startswith("_"))
#: A note's own fields that are not attributes (its id, account, sources, times, version): a team
#: attribute so named would be shown, exported and read in their place.
_NOTE_FIELDS = frozenset(set(Note.model_fields) - set(CORE_ATTRIBUTES))
#: The parameters of ``Memory.update(note_id, *, actor, reason, **attributes)``, where attributes are
#: keyword arguments: an attribute so named could never be edited (``amem update N reason=...``).
_UPDATE_PARAMETERS = frozenset({"self", "note_id", "actor", "reason"})
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _attribute_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a team attribute's name, or None when it can."""
    if not _ATTRIBUTE_NAME.fullmatch(name):
        return (
            f"attribute name {name!r} is not allowed: a team attribute's name starts with a letter "
            "and holds only letters, digits and underscores (e.g. deal_size)"
        )
    if name.startswith("model_") or name in _RESERVED_NAMES:
        return (
            f"attribute name {name!r} is reserved (pydantic's own: model_..., json, dict, copy, schema, "
            "validate, construct, ...): choose another"
        )
    return None


@dataclass(frozen=True)
class Flaw:
    """A setting amem refuses in a new policy but accepted before (a team attribute named like a
    note's own field, a rule condition given an empty list): a policy may not introduce one, while
    one the installed version holds already keeps loading, so a check added later never locks a
    store out of its own policy (``policy_registry.install`` and ``resolve`` decide which)."""

    #: What the installed version must hold for the setting to be kept: ("name", attribute) or
    #: ("rule", attribute, the rule as canonical JSON).
    kept_by: tuple[str, ...]
    #: Where it is: "FILE:LINE: attributes.NAME..." (the file's line where it was read from a file).
    where: str
    problem: str
    #: What to do instead, in a policy that would introduce it.
    instead: str
    #: What to do about it where the installed version keeps it.
    remedy: str

    def refusal(self) -> str:
        """The message refusing it in a policy that would introduce it."""
        return f"{self.where}: {self.problem}: {self.instead}"

    def warning(self) -> str:
        """The message saying it is kept, and the way out of it."""
        return (
            f"{self.where}: {self.problem}; kept, as the installed policy held it before amem refused "
            f"it: {self.remedy}"
        )


def _note_field_problem(name: str) -> str | None:
    """Why ``name``, a name allowed before, now cannot be a new team attribute's, or None."""
    if name in _NOTE_FIELDS or name in _UPDATE_PARAMETERS:
        taken = ", ".join(sorted(_NOTE_FIELDS | (_UPDATE_PARAMETERS - {"self"})))
        return (
            f"attribute name {name!r} is reserved: a note or an edit already has a field of that name "
            f"({taken})"
        )
    return None


def _rename_path(name: str) -> str:
    """How a team attribute kept under a name refused since is edited, and renamed."""
    edit = (
        f"edit it with `amem propose NOTE {name} VALUE` (`amem update` cannot take it); "
        if name in _UPDATE_PARAMETERS
        else ""
    )
    return (
        f"{edit}to rename it, declare the new name (e.g. call_{name}) beside it and install that "
        f"policy, then leave {name} out of a later one once no note or pending proposal holds a value "
        "of it (the install says if one does)"
    )


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

    @field_validator("password_hash")
    @classmethod
    def _a_bcrypt_hash(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A pasted password (or a cut hash) would let no one sign in, and would count as a
        password for the first-install claim; the value itself is never echoed."""
        if value is not None and not _installed(info) and not is_bcrypt_hash(value):
            raise ValueError(
                "is not a bcrypt hash ($2b$..., 60 characters): make one with `amem reviewers "
                "hash-password`, or set it with `amem reviewers set-password NAME`"
            )
        return value


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
    #: The YAML the policy was read from (its lines, for ``flaws``); None for one built in code.
    _node: yaml.Node | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Policy:
        """Checks across settings; each refusal says where it is, so the error names its line."""
        for name, attr in self.attributes.items():
            if name not in CORE_ATTRIBUTES and not _installed(info):
                problem = _attribute_name_problem(name)
                if problem:
                    raise _Problem(("attributes", name), problem)
            if name not in CORE_ATTRIBUTES and attr.type is None:
                raise _Problem(
                    ("attributes", name), f"attribute {name!r} is not a core attribute and declares no type"
                )
            if name in CORE_ATTRIBUTES and attr.type is not None and attr.type != CORE_TYPES[name]:
                raise _Problem(
                    ("attributes", name, "type"),
                    f"attribute {name!r} is a core attribute of type {CORE_TYPES[name]}",
                )
        for rname, role in self.roles.items():
            for i, attribute in enumerate(role.approves):
                if attribute != "*" and not self.knows(attribute):
                    raise _Problem(
                        ("roles", rname, "approves", i),
                        f"role {rname!r} approves unknown attribute {attribute!r}",
                    )
        for i, role in enumerate(self.erasers):
            if role not in self.roles:
                raise _Problem(("erasers", i), f"erasers names unknown role {role!r}")
        for i, role in enumerate(self.policy_admins or []):
            if role not in self.roles:
                raise _Problem(("policy_admins", i), f"policy_admins names unknown role {role!r}")
        # Identities in their canonical form (amem.domain.identity), so a lookup cannot be dodged by
        # a name variant and two entries cannot name one person.
        stored = _installed(info)
        agents = [_identity(a, ("agents", i), "agents", stored) for i, a in enumerate(self.agents)]
        reviewers: dict[str, Reviewer] = {}
        for who, reviewer in self.reviewers.items():
            key = _identity(who, ("reviewers", who), "reviewers", stored)
            if key in reviewers:
                raise _Problem(
                    ("reviewers", who), f"reviewers {who!r} and another entry are the same identity {key!r}"
                )
            for i, role in enumerate(reviewer.roles):
                if role not in self.roles:
                    raise _Problem(
                        ("reviewers", who, "roles", i), f"reviewer {who!r} has unknown role {role!r}"
                    )
            if reviewer.scopes is not None and not all(s and s == s.strip() for s in reviewer.scopes):
                raise _Problem(
                    ("reviewers", who, "scopes"),
                    f"reviewer {who!r}: each of scopes is a scope as agents send it (no empty one, "
                    "no space at either end); leave scopes out for every scope",
                )
            if key in agents:
                raise _Problem(("reviewers", who), f"{who!r} is listed as an agent and cannot be a reviewer")
            reviewers[key] = reviewer
        self.agents, self.reviewers = agents, reviewers
        return self

    # -- settings refused since -------------------------------------------------------------

    def flaws(self) -> list[Flaw]:
        """The settings a new policy may not introduce but an installed one keeps (``Flaw``), in
        the order of the file: checked where a policy is installed, never where one is read."""
        found: list[Flaw] = []
        for name, attr in self.attributes.items():
            problem = None if name in CORE_ATTRIBUTES else _note_field_problem(name)
            if problem is not None:
                found.append(
                    Flaw(
                        kept_by=("name", name),
                        where=self._where(("attributes", name)),
                        problem=problem,
                        instead=f"choose another (e.g. call_{name})",
                        remedy=_rename_path(name),
                    )
                )
            for i, rule in enumerate(attr.rules):
                for field in ("tags_any", "proposer_kinds"):
                    if getattr(rule.when, field) != []:
                        continue
                    found.append(
                        Flaw(
                            kept_by=("rule", name, json.dumps(rule.model_dump(mode="json"), sort_keys=True)),
                            where=self._where(("attributes", name, "rules", i, "when", field)),
                            problem="is an empty list, which matches nothing, so the rule never applies",
                            instead="name at least one, or leave it out to match every note or proposer",
                            remedy="name at least one, or leave it out, in the next policy installed",
                        )
                    )
        return found

    def _where(self, loc: tuple[str | int, ...]) -> str:
        """``loc`` as an error names it: the file and line when the policy was read from a file."""
        dotted = ".".join(str(p) for p in loc)
        found = _line_if_present(self._node, list(loc))
        if self.source is None:
            return dotted
        return f"{self.source}:{found}: {dotted}" if found is not None else f"{self.source}: {dotted}"

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
        self,
        attribute: str,
        note_tags: Iterable[str],
        proposer_kind: ActorKind,
        proposed: Any = UNKNOWN,
        *,
        category: str | None = None,
    ) -> Routing:
        """Which mode applies, and the rule that said so (recorded with the proposal).

        ``category``, the category the note is filed under: a rule sees it as one of the note's
        tags (``category_tag``), as construction tags a new note with it, so a note re-filed under
        ``contract`` later is held like one filed there at once.

        ``proposed``, the new value when it is known (``UNKNOWN`` otherwise; None is a value: the
        attribute cleared): a change of tags that would take from the note a tag some rule names
        (the default policy's ``contract``) waits for a person even where tags apply by themselves,
        since the protection that rule gives the note would go with it; so does a re-filing that
        takes such a tag away with the old category, a category cleared included."""
        tags = list(note_tags)
        filed = category_tag(category)
        routing = self._route(attribute, [*tags, filed] if filed else tags, proposer_kind)
        if routing.mode != Mode.AUTO:
            return routing
        lost: list[str] = []
        if attribute == "tags" and (proposed is None or isinstance(proposed, list | tuple)):
            kept = {str(t).casefold() for t in proposed or ()} | {filed}
            lost = sorted({t.casefold() for t in tags} & self.rule_tags() - kept)
        elif attribute == "category" and (proposed is None or isinstance(proposed, str)) and filed:
            kept = {t.casefold() for t in tags} | {category_tag(proposed)}
            lost = sorted({filed} & self.rule_tags() - kept)
        if lost:
            return Routing(
                Mode.REVIEW, f"attributes.{attribute} (the change drops {', '.join(lost)}, named by a rule)"
            )
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
        self,
        attribute: str,
        note_tags: Iterable[str],
        proposer_kind: ActorKind,
        proposed: Any = UNKNOWN,
        *,
        category: str | None = None,
    ) -> bool:
        """Whether a proposal of ``attribute`` by ``proposer_kind`` is applied without a person."""
        return self.route(attribute, note_tags, proposer_kind, proposed, category=category).mode == Mode.AUTO

    def holds(
        self,
        attribute: str,
        note_tags: Iterable[str],
        proposer_kind: ActorKind,
        proposed: Any = UNKNOWN,
        *,
        category: str | None = None,
    ) -> bool:
        """Whether a proposal of ``attribute`` by ``proposer_kind`` waits for a person (review)."""
        return (
            self.route(attribute, note_tags, proposer_kind, proposed, category=category).mode == Mode.REVIEW
        )

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
        """A policy admin with no scope limit: a reviewer limited to some accounts could otherwise
        install a policy that lifts their own limit."""
        return self.scopes_of(identity) is None and bool(
            set(self.roles_of(identity)) & set(self.admin_roles())
        )

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


def category_tag(category: str | None) -> str:
    """The tag a note filed under ``category`` carries, as a slug ("Support issue" is
    "support-issue"; "" for none): what note construction adds to a new note's tags, and what a
    rule sees of the category whatever the tags say now (``Policy.route``)."""
    return re.sub(r"[^a-z0-9]+", "-", (category or "").lower()).strip("-")


def _identity(name: str, loc: tuple[str | int, ...], where: str, stored: bool) -> str:
    """``stored``: an installed version read back, kept readable (amem.domain.identity)."""
    try:
        return canonical_identity(name, what=f"{where}: {name!r}", stored=stored)
    except AmemError as exc:
        raise _Problem(loc, str(exc)) from None


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
    text = _read_text(policy_path, "policy file")
    data, node = _parse_yaml(text, policy_path)
    policy = _validate(Policy, data, node, policy_path)
    if policy.reviewers_file:
        reviewers_path = (policy_path.parent / policy.reviewers_file).resolve()
        rtext = _read_text(reviewers_path, "reviewers file")
        rdata, rnode = _parse_yaml(rtext, reviewers_path)
        _validate(_ReviewersFile, rdata, rnode, reviewers_path)
        own = _Source(data.get("reviewers") or {}, node, policy_path)
        listed = _Source(rdata.get("reviewers") or {}, rnode, reviewers_path)
        merged, spelled = _merge_reviewers(own, listed)
        data = {**data, "reviewers": merged}
        policy = _validate(
            Policy, data, node, policy_path, elsewhere=lambda loc: _blame(loc, spelled, listed)
        )
    return _read_from(policy, str(policy_path), node)


def _read_from(policy: Policy, source: str, node: yaml.Node | None) -> Policy:
    """``policy`` naming the file (or version) it was read from, with its YAML for the lines."""
    read = policy.model_copy(update={"source": source})
    read._node = node
    return read


def _read_text(path: Path, what: str) -> str:
    """The text of a policy or reviewers file, which must be UTF-8: a file saved in another encoding
    (Latin-1 by an editor) is named with the line and column of its first byte that is not."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise PolicyError(
            f"{path}:{line}: the {what} is not UTF-8 (byte 0x{raw[exc.start]:02x} at column {column}): "
            "save it as UTF-8"
        ) from exc


def parse_policy(text: str, source: str = "<policy>", *, installed: bool = False) -> Policy:
    """A policy from its text. ``installed``: a version read back from the ledger, held to the checks
    it was installed under (a check added since must not make the ledger's history unreadable)."""
    data, node = _parse_yaml(text, Path(source))
    policy = _validate(Policy, data, node, Path(source), context={"installed": installed})
    return _read_from(policy, source, node)


@dataclass(frozen=True)
class _Source:
    """The ``reviewers:`` mapping of one file, with the file's YAML node and path (for its lines)."""

    entries: dict[str, Any]
    node: yaml.Node | None
    path: Path

    def line(self, *loc: str | int) -> int:
        return _line_of(self.node, ["reviewers", *loc])


def _merge_reviewers(own: _Source, listed: _Source) -> tuple[dict[str, Any], dict[str, tuple[str, set[str]]]]:
    """The policy file's reviewers and the reviewers file's, merged field by field.

    A reviewer may be named in both (roles and scopes in policies.yaml, the password hash the
    reviewers file keeps): each field comes from the one file that gives it, so a password set in
    the reviewers file never takes a reviewer's roles or scope limit away. A field given in both
    files is refused, saying where: which one counts would otherwise be a silent choice.

    Returns the merged entries and, for each, the reviewers file's spelling of its name and the
    fields it gave (an error about those is reported in the reviewers file)."""
    merged: dict[str, Any] = {name: dict(entry or {}) for name, entry in own.entries.items()}
    by_key = {identity_key(name): name for name in own.entries}
    spelled: dict[str, tuple[str, set[str]]] = {}
    for name, entry in listed.entries.items():
        fields = dict(entry or {})
        match = by_key.get(identity_key(name))
        if match is None:
            merged[name] = fields
            spelled[name] = (name, set(fields) | {""})
            continue
        both = sorted(set(merged[match]) & set(fields))
        if both:
            raise PolicyError(
                f"{listed.path}:{listed.line(name, both[0])}: reviewers.{name}: {', '.join(both)} "
                f"given both here and in {own.path}:{own.line(match, both[0])}; give each field of a "
                "reviewer in one file only"
            )
        merged[match] = {**merged[match], **fields}
        spelled[match] = (name, set(fields))
    return merged, spelled


def _blame(
    loc: list[Any], spelled: dict[str, tuple[str, set[str]]], listed: _Source
) -> tuple[Path, int, list[Any]] | None:
    """Where an error at ``loc`` of the merged policy is, when it is in the reviewers file: the
    entry came from there (or, for an entry named in both, the field did)."""
    if len(loc) < 2 or loc[0] != "reviewers" or loc[1] not in spelled:
        return None
    name, fields = spelled[loc[1]]
    if (loc[2] if len(loc) > 2 else "") not in fields:
        return None
    at = ["reviewers", name, *loc[2:]]
    return listed.path, _line_of(listed.node, at), at


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
    _refuse_duplicate_keys(node, path)
    return data, node


def _refuse_duplicate_keys(node: yaml.Node | None, path: Path) -> None:
    """A key given twice in one mapping: YAML keeps the last silently, so a reader of the file (who
    sees the first) and amem would disagree on what the policy says."""
    seen: set[int] = set()

    def walk(node: yaml.Node, where: list[str]) -> None:
        if id(node) in seen:  # an alias: the anchored node was walked already
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    line = key.start_mark.line + 1
                    if (key.tag, key.value) in first:
                        at = ".".join(where) or "(top level)"
                        raise PolicyError(
                            f"{path}:{line}: {at}: {key.value!r} is given twice (first on line "
                            f"{first[(key.tag, key.value)]}); keep one"
                        )
                    first[(key.tag, key.value)] = line
                walk(value, [*where, str(key.value)])
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, [*where, str(i)])

    if node is not None:
        walk(node, [])


def _validate(
    model: type[M],
    data: Any,
    node: yaml.Node | None,
    path: Path,
    *,
    context: dict[str, Any] | None = None,
    elsewhere: Callable[[list[Any]], tuple[Path, int, list[Any]] | None] | None = None,
) -> M:
    """``data`` as ``model``; an error names the file, line and setting. ``elsewhere`` says when an
    error's location is in another file (the reviewers file's entries)."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [p for p in err["loc"] if not isinstance(p, str) or not p.startswith("function-")]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, _Problem):
            loc = [*loc, *cause.loc]
        where_else = elsewhere(loc) if elsewhere is not None else None
        if where_else is not None:
            path, line, loc = where_else
        else:
            line = _line_of(node, loc)
        where = ".".join(str(p) for p in loc) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        raise PolicyError(f"{path}:{line}: {where}: {msg}{more}") from exc


def _line_if_present(node: yaml.Node | None, loc: list[Any]) -> int | None:
    """The line ``_line_of`` gives ``loc``, or None when the YAML holds no node there (a policy
    changed in code since it was read)."""
    at = node
    for part in loc:
        if isinstance(at, yaml.MappingNode):
            at = next((value for key, value in at.value if key.value == str(part)), None)
        elif isinstance(at, yaml.SequenceNode) and isinstance(part, int) and part < len(at.value):
            at = at.value[part]
        else:
            return None
    return _line_of(node, loc) if at is not None else None


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
