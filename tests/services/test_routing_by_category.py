"""A note re-filed under a category a rule names is governed by that rule, through the service."""

from __future__ import annotations

from amem.domain.models import ProposalStatus
from amem.memory import Memory
from tests.factories import make_note


def test_an_agent_cannot_change_the_context_of_a_note_re_filed_under_contract(memory: Memory) -> None:
    """Before, the category became a tag only when the note was made: re-filed under contract later,
    the note kept its tags and any agent's change of its context applied at once."""
    note = make_note(memory, "Acme renews only with SSO", tags=["renewal"])
    [refiled] = memory.update(note.id, actor="agent:sales-agent", reason="a contract", category="contract")
    assert refiled.status == ProposalStatus.AUTO_APPLIED
    assert memory.read(note.id).tags == ["renewal"]
    [change] = memory.update(note.id, actor="agent:sales-agent", reason="r", context="40% discount agreed")
    assert change.status == ProposalStatus.PENDING and "note tagged contract" in (change.rule or "")
    [away] = memory.update(note.id, actor="agent:sales-agent", reason="r", category="renewal")
    assert away.status == ProposalStatus.PENDING and "drops contract" in (away.rule or "")
