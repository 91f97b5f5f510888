"""Who edits through the library: a bare name is an agent's everywhere (add_note, update, delete,
propose), a person's edit is said so, and no caller edits as the model or as amem itself.

A policy may apply a person's edits without review (``proposer_kinds: [person]``); a name alone,
which the library cannot sign in, read as a person's let an agent's edit through unreviewed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from amem.domain.models import Actor, ActorKind, ProposalStatus, Proposer
from amem.errors import InvalidInputError, PermissionDeniedError
from amem.memory import Memory
from tests.conftest import REPO
from tests.factories import make_note, policy_with_scopes

PERSONS_EDIT_APPLIES = """
      - when: {proposer_kinds: [person]}
        mode: auto
"""


@pytest.fixture
def team(database_url: str, tmp_path: Path) -> Iterator[Memory]:
    """The repository's policy with one rule more: a person's next_step applies at once (the
    repository's agents, sales-agent and support-agent, stay agents)."""
    folder = tmp_path / "policy"
    folder.mkdir()
    text = (REPO / "policies.yaml").read_text("utf-8")
    marker = "    mode: review\n"
    at = text.index(marker, text.index("  next_step:")) + len(marker)
    (folder / "policies.yaml").write_text(
        text[:at] + "    rules:" + PERSONS_EDIT_APPLIES + text[at:], "utf-8"
    )
    (folder / "reviewers.yaml").write_text((REPO / "reviewers.yaml").read_text("utf-8"), "utf-8")
    mem = Memory(tmp_path / "home", database_url=database_url, policy=folder / "policies.yaml")
    try:
        yield mem
    finally:
        mem.close()


def test_the_team_policy_applies_a_persons_edit_at_once(team: Memory) -> None:
    """The rule the other tests lean on: a person said so edits without review."""
    note = make_note(team, "Duff Beer agreed to a tasting next week", scope="duff")
    (edit,) = team.update(note.id, actor="person:bob", next_step="book the tasting room")
    assert (edit.status, edit.proposer.kind) == (ProposalStatus.AUTO_APPLIED, ActorKind.PERSON)
    assert team.read(note.id).extra["next_step"] == "book the tasting room"


@pytest.mark.parametrize("name", ["sales-agent", "alice", "Bob"])
def test_a_bare_name_edits_as_an_agent_and_waits_for_review(team: Memory, name: str) -> None:
    note = make_note(team, "Duff Beer agreed to a tasting next week", scope="duff")
    (edit,) = team.update(note.id, actor=name, next_step="ship 500 free kegs")
    proposed = team.propose(note.id, "next_step", "ship 600 free kegs", reason="r", proposer=name)
    deletion = team.delete(note.id, actor=name, reason="duplicate")
    for p in (edit, proposed, deletion):
        assert p.proposer.kind == ActorKind.AGENT
        assert p.proposer.id == name.casefold()
    # each held for a reviewer, none applied as a person's edit would be
    assert {edit.status, proposed.status, deletion.status} == {ProposalStatus.PENDING}
    assert "next_step" not in team.read(note.id).extra
    assert not team.read(note.id).deleted


def _edits(mem: Memory, note_id: str, who: Any) -> list[Callable[[], object]]:
    return [
        lambda: mem.update(note_id, actor=who, next_step="ship 500 free kegs"),
        lambda: mem.delete(note_id, actor=who, reason="duplicate"),
        lambda: mem.propose(note_id, "next_step", "ship 500 free kegs", reason="r", proposer=who),
    ]


@pytest.mark.parametrize(
    "who",
    [
        "person:sales-agent",
        "Person:Sales-Agent",
        Actor(kind=ActorKind.PERSON, id="support-agent"),
    ],
)
def test_an_agent_of_the_policy_claiming_a_person_is_refused(team: Memory, who: Any) -> None:
    note = make_note(team, "Duff Beer agreed to a tasting next week", scope="duff")
    before = team.count_proposals()
    for edit in _edits(team, note.id, who):
        with pytest.raises(PermissionDeniedError, match=r"is an agent in .*: it proposes as agent:"):
            edit()
    assert team.count_proposals() == before
    assert "next_step" not in team.read(note.id).extra


@pytest.mark.parametrize(
    "who",
    [
        "llm:openai/gpt-4o",
        "system:amem",
        " LLM:offline",
        Actor(kind=ActorKind.LLM, id="openai/gpt-4o"),
        Actor(kind=ActorKind.SYSTEM, id="amem"),
    ],
)
def test_no_library_edit_is_the_models_or_amems_own(team: Memory, who: Any) -> None:
    note = make_note(team, "Duff Beer agreed to a tasting next week", scope="duff")
    before = team.count_proposals()
    for edit in _edits(team, note.id, who):
        with pytest.raises(
            InvalidInputError, match=r"edit as agent:NAME or as person:NAME, not as (llm|system):"
        ):
            edit()
    assert team.count_proposals() == before


def test_a_system_proposer_is_refused_by_governance(team: Memory) -> None:
    """A Proposer passed whole reaches governance, which refuses ``system:`` too."""
    note = make_note(team, "Duff Beer agreed to a tasting next week", scope="duff")
    before = team.count_proposals()
    with pytest.raises(InvalidInputError, match=r"system:amem.* proposes nothing"):
        team.propose(note.id, "tags", ["forged"], reason="r", proposer=Proposer(kind="system", id="amem"))
    assert team.count_proposals() == before


def test_an_agent_of_a_reviewers_name_keeps_to_the_reviewers_accounts(
    database_url: str, tmp_path: Path
) -> None:
    """One namespace: a bare ``alice``, an agent now, is still alice, limited to acme."""
    policy = policy_with_scopes(tmp_path / "policy", alice=["acme"])
    with Memory(tmp_path / "home", database_url=database_url, policy=policy) as owned:
        theirs = make_note(owned, "Globex pays $55 per seat", scope="globex", tags=["pricing"])
        for who in ("alice", "agent:Alice"):
            with pytest.raises(PermissionDeniedError, match="alice decides in acme only, not in globex"):
                owned.update(theirs.id, actor=who, tags=["hacked"])
        assert owned.read(theirs.id).tags == ["pricing"]
        (other,) = owned.update(theirs.id, actor="sales-agent", tags=["pricing", "seats"])
        assert other.status == ProposalStatus.AUTO_APPLIED  # an agent no reviewer is named after
