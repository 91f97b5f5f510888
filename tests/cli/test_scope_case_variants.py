"""Scopes that differ only in case are two accounts (they are kept as typed): recording a new one is
warned about, naming the spelling kept before, and a read naming none of them points to them first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amem.cli import main
from amem.memory import Memory

WARNING = "warning: new scope"


def run(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_adding_to_a_new_scope_that_differs_only_in_case_warns_and_keeps_it_as_typed(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, "Acme" after "acme" was kept as a second account without a word."""
    add = ("add", "--actor", "agent:sales-agent")
    code, _, err = run(memory, capsys, *add, "Acme wants SSO before the renewal", "--scope", "acme")
    assert code == 0 and WARNING not in err

    code, out, err = run(memory, capsys, *add, "Acme asked for a quote for 40 seats", "--scope", "Acme")

    assert code == 0 and "in scope Acme" in out
    assert "warning: new scope 'Acme' differs only in case from 'acme'" in " ".join(err.split())
    assert memory.scopes() == ["Acme", "acme"]  # kept as given
    # neither a scope kept before nor an unrelated new one is warned about
    for scope in ("Acme", "globex"):
        code, _, err = run(memory, capsys, *add, f"{scope} signed the renewal", "--scope", scope)
        assert code == 0 and WARNING not in err, scope


def test_importing_a_crm_export_names_the_spellings_its_accounts_differ_from(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A CRM's "Account Name" column says "Acme" where the agents wrote "acme"; a line of the
    file saying "ACME" is a new spelling too."""
    memory.add_note("Acme wants SSO before the renewal", actor="agent:sales-agent", scope="acme")
    path = tmp_path / "activities.csv"
    path.write_text(
        "Account Name,Activity Date,Description\r\n"
        'Acme,2026-11-02,"Call with Acme: Jane asked to cancel"\r\n'
        "Acme,2026-11-03,Acme asked for a quote\r\n"
        "ACME,2026-11-04,Acme renewal moved to March\r\n"
        "acme,2026-11-05,Acme wants 10 seats\r\n"
        "globex,2026-11-05,Globex signed the renewal\r\n",
        encoding="utf-8",
        newline="",
    )
    columns = ("--content-column", "Description", "--scope-column", "Account Name")

    code, out, err = run(memory, capsys, "import", str(path), *columns, "--at-column", "Activity Date")

    assert code == 0 and out.startswith("5 notes added")
    warned = [line for line in err.splitlines() if line.startswith(WARNING)]
    assert len(warned) == 2, err
    assert "new scope 'Acme' differs only in case from 'ACME', 'acme'" in warned[0]
    assert "new scope 'ACME' differs only in case from 'Acme', 'acme'" in warned[1]
    assert memory.scopes() == ["ACME", "Acme", "acme", "globex"]


@pytest.mark.parametrize("command", ["search", "facts", "pending"])
def test_a_read_of_an_unknown_scope_points_first_to_its_other_cases(
    memory: Memory, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Before, `--scope ACME` was told only "known scopes: Acme, acme": difflib finds "ACME" too
    far from either to suggest it."""
    for scope in ("Acme", "acme", "acne"):
        memory.add_note(f"{scope} wants SSO before the renewal", actor="agent:sales-agent", scope=scope)
    args = {"search": ("search", "SSO"), "facts": ("facts",), "pending": ("pending",)}[command]

    code, _, err = run(memory, capsys, *args, "--scope", "ACME")

    assert code == 2
    said = " ".join(err.split())  # search and facts read notes, pending the inputs kept
    assert re.search(r"scope 'ACME' has no (notes|inputs); did you mean Acme, acme", said)
