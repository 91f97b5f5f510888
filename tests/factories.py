"""Building test data through the real services (no SQL, no shortcuts around governance)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from amem.domain.hashing import sha256_text
from amem.domain.models import Actor, LlmCall, Note, Proposal, Proposer, RawLog, new_id, utcnow
from amem.llm import construct_note
from amem.memory import Memory
from amem.policy import Policy
from amem.services.accounts import hash_password
from amem.services.authentication import AuthenticatedReviewer

AGENT = Actor(kind="agent", id="sales-agent")
#: The offline model as it is named, with no model call: governance refuses it as a proposer (a
#: model's value names the call that made it). Propose as the model with ``llm_proposer``.
LLM = Proposer(kind="llm", id="offline", model="offline", prompt_version="test/1")


def llm_proposer(
    mem: Memory,
    *,
    model: str = "offline",
    name: str | None = None,
    prompt_version: str = "test/1",
    raw_log_id: str | None = None,
) -> Proposer:
    """The model as amem's pipeline proposes with it: a model call recorded in ``mem``'s ledger (its
    own write), and the Proposer naming it, as every value a model proposes names the call behind it.
    ``name``: the proposer's id (the analyst's model name), ``model`` by default; ``raw_log_id``: the
    raw log the call analysed (None: none in particular, so it backs a note of any scope)."""
    call = LlmCall(
        id=new_id("llm"),
        task=construct_note.TASK,
        model=model,
        prompt_version=prompt_version,
        raw_log_id=raw_log_id,
        prompt_sha256=sha256_text(f"a test's prompt to {model}"),
        response_text="{}",
        created_at=utcnow(),
    )
    with mem.ledger.write() as tx:
        tx.insert_llm_call(call)
    return Proposer(
        kind="llm", id=name or model, model=model, prompt_version=prompt_version, llm_call_id=call.id
    )


def raw_log(text: str, scope: str = "acme", at: datetime | None = None, actor: Actor = AGENT) -> RawLog:
    now = utcnow()
    return RawLog(
        id=new_id("r"),
        text=text,
        occurred_at=at or now,
        actor=actor,
        scope=scope,
        received_at=now,
        sha256=sha256_text(text),
    )


def make_note(mem: Memory, content: str, scope: str = "acme", **attributes: object) -> Note:
    """A note created through governance, with ``attributes`` proposed by the model (one recorded call
    on the note's raw log, as its analysis) and routed by policy."""
    raw = raw_log(content, scope)
    with mem.ledger.write() as tx:
        tx.insert_raw_logs([raw], raw.received_at)
        note = mem.governance.create_note(tx, scope=scope, content=content, raw_logs=[raw], actor=AGENT)
    if attributes:
        by = llm_proposer(mem, raw_log_id=raw.id)
        for name, value in attributes.items():
            mem.propose(note.id, name, value, reason=f"set {name} for the test", proposer=by)
    return mem.read(note.id)


def said(mem: Memory, text: str, *, scope: str = "acme", at: datetime | None = None) -> Note:
    """A raw log said at ``at`` and the note made from it, through governance (no analysis)."""
    raw = raw_log(text, scope, at=at)
    with mem.ledger.write() as tx:
        tx.insert_raw_logs([raw], raw.received_at)
        return mem.governance.create_note(tx, scope=scope, content=text, raw_logs=[raw], actor=AGENT)


def held_by_model(mem: Memory, note: Note, attribute: str, value: object, reason: str = "stated") -> Proposal:
    """A value the model proposes for ``note`` from its own raw logs (held or applied as the policy
    routes it)."""
    return mem.propose(
        note.id, attribute, value, reason=reason, proposer=llm_proposer(mem), raw_log_ids=note.raw_log_ids
    )


def signed_in(mem: Memory, name: str) -> AuthenticatedReviewer:
    """``name`` signed in as the console signs reviewers in, for tests that are not about how
    reviewers authenticate (tests/services/test_authentication.py is)."""
    return mem.authentication.signed_in(name, method="test")


def admin_can_sign_in(policy: Policy, who: str = "alice") -> Policy:
    """``policy`` with a password for ``who``, a policy admin: installing refuses a policy whose
    admins could not sign in to install the next one."""
    entry = policy.reviewers[who].model_copy(
        update={"password_hash": hash_password("admin-password", rounds=4)}
    )
    return policy.model_copy(update={"reviewers": {**policy.reviewers, who: entry}})


def contradict(mem: Memory, old: Note, new: Note, when: str, *, reason: str = "a newer fact") -> Proposal:
    """The analyst's retirement of ``old`` by the newer ``new`` (its content the evidence), routed by
    the policy: held for review under the repository's policy."""
    return mem.propose(
        old.id,
        "invalid_at",
        when,
        reason=reason,
        evidence=new.content,
        proposer=llm_proposer(mem),
        raw_log_ids=new.raw_log_ids,
    )


def policy_with_scopes(directory: Path, **scopes: list[str] | None) -> Path:
    """The repository's policy with its reviewers limited to ``scopes`` (name -> scopes), and
    carol, a cs_lead of every account; returns the policy file."""
    import yaml

    repo = Path(__file__).resolve().parents[1]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "policies.yaml").write_text((repo / "policies.yaml").read_text("utf-8"), "utf-8")
    data = yaml.safe_load((repo / "reviewers.yaml").read_text("utf-8"))
    # an admin who can sign in: a policy whose admins have no password is not installed
    data["reviewers"]["carol"] = {
        "name": "Carol",
        "roles": ["cs_lead"],
        "password_hash": hash_password("carol-password-1", rounds=4),
    }
    for name, limited in scopes.items():
        data["reviewers"][name]["scopes"] = limited
    (directory / "reviewers.yaml").write_text(yaml.safe_dump(data), "utf-8")
    return directory / "policies.yaml"


def record_tokens_as_before_0022(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokens made from here on are recorded as the code before migration 0022 recorded them: a
    creation without its token's digest (0022's own downgrade refuses once one records it)."""
    from amem.ledger import token_queries

    record = token_queries.record_event

    def as_before(tx: Any, row: dict[str, Any]) -> None:
        record(tx, {k: v for k, v in row.items() if k != "token_sha256"})

    monkeypatch.setattr(token_queries, "record_event", as_before)
