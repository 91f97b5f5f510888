"""`amem verify` on proposals that say the model made them and name no model call: governance now
refuses one, but an older amem recorded them from a library caller, and a row written straight into
the table is one too. Verify passed them without a word, and an auditor took their values as traced
to a model call. It now says how many there are and names the oldest (proposal, note, when): a
notice, not a failure, since the chain covers each as it was recorded."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from amem.cli import main
from amem.domain.models import ActorKind, Proposer
from amem.ledger.tables import proposals
from amem.memory import Memory
from amem.services.governance import Governance
from tests.factories import make_note, said

#: The model as an older amem let a library caller name it: no recorded call.
UNNAMED = Proposer(kind="llm", id="offline", model="offline", prompt_version="test/1")


def _cli(memory: Memory, *args: str) -> list[str]:
    return ["--database-url", memory.settings.database_url, "--home", str(memory.home), *args]


@pytest.fixture
def older_amem(monkeypatch: pytest.MonkeyPatch) -> None:
    """Governance as it was before it refused a model's proposal without its model call."""
    check = Governance._check_proposer

    def older(self: Governance, proposer: Proposer) -> None:
        if proposer.kind == ActorKind.LLM and not proposer.llm_call_id:
            return
        check(self, proposer)

    monkeypatch.setattr(Governance, "_check_proposer", older)


def test_verify_names_the_models_proposals_that_name_no_model_call(
    memory: Memory, older_amem: None, capsys: pytest.CaptureFixture[str]
) -> None:
    make_note(memory, "Globex renewal is due in March", tags=["renewal"])  # traced: not counted
    note = said(memory, "Acme renews for 40 seats because the auditor asked")
    untraced = [
        memory.propose(note.id, "tags", [f"tag-{i}"], reason="seen", proposer=UNNAMED).id for i in range(6)
    ]
    untraced.append(
        memory.propose(note.id, "decision_rationale", "the auditor asked", reason="seen", proposer=UNNAMED).id
    )
    oldest = [memory.proposal(pid) for pid in untraced[:5]]

    result = memory.verify()

    assert result.ok, result.problems  # the chain is intact: a notice, not tampering
    assert result.untraced_model_proposals == 7
    (notice,) = result.notices
    assert notice.startswith("7 proposal(s) say a model made them (proposer llm:...) but name no model call")
    assert "their values cannot be traced to the call that made them; the oldest 5 are " in notice
    named = ", ".join(f"{p.id} (note {note.id}, {p.created_at.isoformat()})" for p in oldest)
    assert named in notice and untraced[5] not in notice and untraced[6] not in notice
    assert "not tampering" in notice

    capsys.readouterr()
    assert main(_cli(memory, "verify")) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK:") and f"  note: {notice}" in out
    assert main(_cli(memory, "verify", "--json")) == 0
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert body["ok"] and body["untraced_model_proposals"] == 7 and body["notices"] == [notice]


def test_a_traced_ledger_has_no_such_notice(memory: Memory) -> None:
    make_note(memory, "Globex renewal is due in March", tags=["renewal"], keywords=["globex"])
    result = memory.verify()
    assert result.ok and result.notices == [] and result.untraced_model_proposals == 0


def test_a_row_written_straight_into_the_table_is_tampering_and_untraced(memory: Memory) -> None:
    note = make_note(memory, "Initech renews in March", tags=["renewal"])
    with memory.ledger.engine.begin() as conn:
        row = dict(
            conn.execute(sa.select(proposals).where(proposals.c.note_id == note.id)).mappings().first()
        )
        top = conn.execute(sa.select(sa.func.max(proposals.c.seq))).scalar_one()
        row |= {"id": "p_forged000000000", "seq": top + 1, "proposer_kind": "llm", "llm_call_id": None}
        conn.execute(sa.insert(proposals), [row])

    result = memory.verify()

    assert not result.ok and "proposal p_forged000000000 is not in the event chain" in result.message
    assert result.untraced_model_proposals == 1
    (notice,) = result.notices
    assert (
        notice.startswith("1 proposal(s) say a model made them")
        and "it is p_forged000000000 (note " in notice
    )
