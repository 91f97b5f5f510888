"""Erasing a scope reaches every spelling of it, whatever its case: scopes are kept as typed, so a CRM
import's "Acme" and an agent's "acme" are two, and a data subject's request naming the account must
take both, as ``--actor`` takes a person's name however it is written."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.domain.hashing import REDACTED
from amem.errors import PermissionDeniedError
from amem.memory import Memory
from tests.factories import policy_with_scopes, signed_in
from tests.services.test_erasure import run


@pytest.fixture(autouse=True)
def _passwords(reviewer_passwords: dict[str, str]) -> None:
    """Every reviewer has a password; `amem erase` gets the eraser's on standard input."""


def _three_spellings(memory: Memory) -> dict[str, str]:
    """Raw logs of "acme", "Acme" and "ACME", and one of another account: raw log id by scope."""
    ids = {}
    for scope, text in (
        ("acme", "Acme wants SSO before the renewal"),
        ("Acme", "Call with Acme: Jane Roe-Qzx asked to cancel, jane.qzx@acme.example"),
        ("ACME", "Acme asked for a quote for 40 seats"),
        ("globex", "Globex signed the two-year renewal"),
    ):
        note_id = memory.add_note(text, actor="agent:sales-agent", scope=scope)
        ids[scope] = memory.read(note_id).raw_log_ids[0]
    return ids


def test_a_scope_erasure_reaches_every_spelling_of_the_scope_and_records_them(memory: Memory) -> None:
    """Before, `erase --scope acme` left the "Acme" and "ACME" raw logs, their notes and search hits
    as they were, and the eraser was told the account was erased."""
    ids = _three_spellings(memory)
    assert memory.count_erasable(scope="acme") == 3 and memory.count_erasable(scope="ＡＣＭＥ") == 3
    assert memory.scope_spellings(["aCmE"]) == {"aCmE": ["ACME", "Acme", "acme"]}

    report = memory.erase(by=signed_in(memory, "alice"), reason="data subject request", scope="acme")

    assert report.scopes == ["ACME", "Acme", "acme"] and report.raw_logs == 3 and report.notes_deleted == 3
    texts = {r.id: r.text for r in memory.raw_logs(list(ids.values()))}
    assert [texts[ids[s]] for s in ("acme", "Acme", "ACME")] == [REDACTED] * 3
    assert texts[ids["globex"]] == "Globex signed the two-year renewal"
    for scope in ("acme", "Acme", "ACME"):
        assert not [n for n in memory.notes(scope=scope) if not n.deleted], scope
    with memory.ledger.engine.connect() as conn:
        (selector,) = conn.execute(sa.text("SELECT selector FROM erasures")).scalars()
    selector = json.loads(selector) if isinstance(selector, str) else selector
    assert selector["scope"] == "acme" and selector["scopes"] == ["ACME", "Acme", "acme"]
    assert memory.count_erasable(scope="Acme") == 0
    result = memory.verify()
    assert result.ok, result.problems


def test_the_erase_command_names_every_spelling_it_asks_about_and_erased(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the eraser confirms and reads back names "ACME", "Acme" and "acme", not only the name
    typed: they see the request covers the account however its inputs spelled it."""
    _three_spellings(memory)
    asked: list[str] = []

    def answer(reply: bool) -> Callable[..., bool]:
        def confirm(text: str, default: bool = False) -> bool:
            asked.append(text)
            return reply

        return confirm

    monkeypatch.setattr("amem.cli.trust.typer.confirm", answer(False))
    assert run(memory, "erase", "--scope", "acme", "--reviewer", "alice", "--reason", "dsr") == 0
    assert "3 raw logs of scopes ACME, Acme, acme (acme whatever its case)" in asked[0]
    capsys.readouterr()

    monkeypatch.setattr("amem.cli.trust.typer.confirm", answer(True))
    assert run(memory, "erase", "--scope", "acme", "--reviewer", "alice", "--reason", "dsr") == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "of scopes ACME, Acme, acme (acme whatever its case): 3 raw logs" in said

    memory.add_note("Acme came back for a new contract", actor="agent:sales-agent", scope="Acme")
    args = ("erase", "--scope", "ACME", "--reviewer", "alice", "--reason", "again", "--yes", "--json")
    assert run(memory, *args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["scopes"] == ["ACME", "Acme", "acme"] and report["raw_logs"] == 1
    assert report["already_erased"] == 3


def test_case_is_all_that_makes_two_scopes_one() -> None:
    """Lower case, not case-folding: "Straße" and "Strasse" are two names (an erasure reaching both
    erased an account nobody named); a Greek name in capitals is still the same name."""
    from amem.domain.models import same_scope

    spellings = ["Acme", "ACME", "acme", "ａｃｍｅ"]
    assert same_scope("acme", [*spellings, "acne"]) == spellings
    assert same_scope("Straße", ["Straße", "Strasse", "STRASSE"]) == ["Straße"]
    assert same_scope("Σίσυφος", ["Σίσυφος", "ΣΊΣΥΦΟΣ", "σίσυφοσ"]) == ["Σίσυφος", "ΣΊΣΥΦΟΣ"]


@pytest.fixture
def carol_in_acme(database_url: str, tmp_path: Path) -> Iterator[Memory]:
    """The repository's policy with carol, a cs_lead (an eraser), limited to the account "acme";
    alice, a cs_lead of every account, may erase anywhere."""
    mem = Memory(
        tmp_path / "home",
        database_url=database_url,
        policy=policy_with_scopes(tmp_path / "p", carol=["acme"]),
    )
    try:
        yield mem
    finally:
        mem.close()


def test_an_eraser_limited_to_acme_is_refused_by_the_plan_when_another_spelling_lies_outside(
    carol_in_acme: Memory,
) -> None:
    """The plan `amem erase` reads before its prompt makes the erasure's own checks: carol decides in
    "acme" only, and "Acme" and "ACME" are the same account for erasure, so she is refused there
    (before, `amem erase` asked her to confirm first), told which spellings are not hers and who
    may erase them all; the erasure refuses too, and nothing is erased."""
    memory = carol_in_acme
    ids = _three_spellings(memory)
    carol = signed_in(memory, "carol")

    with pytest.raises(PermissionDeniedError) as refused:
        memory.erasure_plan(by=carol, scope="acme")
    said = str(refused.value)
    assert "carol decides in acme only: 'acme' reaches raw logs of ACME, Acme" in said
    assert "(the request reaches ACME, Acme, acme: one account whatever its case" in said
    assert "nothing was erased; ask alice (who may erase in all of them) to erase it" in said
    with pytest.raises(PermissionDeniedError, match="reaches raw logs of ACME, Acme"):
        memory.erase(by=carol, reason="data subject request", scope="acme")

    texts = {r.id: r.text for r in memory.raw_logs(list(ids.values()))}
    assert REDACTED not in texts.values() and not memory.erasures()
    plan = memory.erasure_plan(by=signed_in(memory, "alice"), scope="acme")
    assert (plan.raw_logs, plan.scopes) == (3, ["ACME", "Acme", "acme"])


def test_the_erasure_checks_again_what_its_plan_allowed(carol_in_acme: Memory) -> None:
    """Allowed when only "acme" was there; an "Acme" input kept between the plan (the prompt) and the
    erasure is outside carol's accounts, so the erasure refuses, whole."""
    memory = carol_in_acme
    kept = memory.read(memory.add_note("Acme wants SSO", actor="agent:sales-agent", scope="acme"))
    carol = signed_in(memory, "carol")
    plan = memory.erasure_plan(by=carol, scope="acme")
    assert (plan.raw_logs, plan.scopes) == (1, ["acme"])

    memory.add_note("Call with Acme: Jane asked to cancel", actor="agent:sales-agent", scope="Acme")
    with pytest.raises(
        PermissionDeniedError, match="carol decides in acme only: 'acme' reaches raw logs of Acme"
    ):
        memory.erase(by=carol, reason="data subject request", scope="acme")
    assert memory.raw_logs(kept.raw_log_ids)[0].text == "Acme wants SSO" and not memory.erasures()
