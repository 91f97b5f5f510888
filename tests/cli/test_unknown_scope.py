"""A scope no input was ever kept under is named (exit 2), with the scopes it may mean, wherever a
command would otherwise answer it with nothing: `amem pending` said "nothing pending matches" and
`amem export` wrote an empty file, exit 0, for a mistyped or case-variant scope. A scope that holds
inputs, even none analysed yet, is answered as usual. A reversed --since/--until is refused too."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.cli import main
from amem.memory import Memory


def run(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


@pytest.fixture
def accounts(memory: Memory) -> Memory:
    """acme holds a note; globex an input no worker has analysed yet (no note, nothing pending)."""
    memory.add_note("Acme wants SSO before the renewal", actor="agent:sales-agent", scope="acme")
    memory.add_note("Globex asked for a quote", actor="agent:sales-agent", scope="globex", wait=False)
    return memory


def test_pending_names_a_scope_never_seen_and_answers_one_that_holds_inputs(
    accounts: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, `--scope nosuch` (nothing spelled like it) said "nothing pending matches", exit 0,
    while `--scope acmee` was refused: only a scope with a did-you-mean was named."""
    code, out, err = run(accounts, capsys, "pending", "--scope", "nosuch")
    assert code == 2 and "nothing pending" not in out
    assert "scope 'nosuch' has no inputs; known scopes: acme, globex" in err

    code, _, err = run(accounts, capsys, "pending", "--scope", "acmee")
    assert code == 2 and "did you mean acme?" in err

    # globex has no note yet, but an input: its queue is empty, not its name wrong
    code, out, err = run(accounts, capsys, "pending", "--scope", "globex")
    assert code == 0 and "nothing pending matches --scope globex" in out and not err


def test_approve_all_names_a_scope_never_seen(accounts: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(accounts, capsys, "approve", "--all", "--scope", "nosuch", "--reviewer", "alice")
    assert code == 2 and "scope 'nosuch' has no inputs" in err


@pytest.mark.parametrize(
    ("scope", "said"),
    [
        ("Acme", "scope 'Acme' has no inputs; did you mean acme?"),
        ("nosuch", "scope 'nosuch' has no inputs; known scopes: acme, globex"),
    ],
)
def test_export_refuses_a_scope_never_seen_before_writing_anything(
    accounts: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path, scope: str, said: str
) -> None:
    """Before, an auditor exporting `--scope Acme` (the account is kept as acme) got an empty file
    and exit 0, with no word."""
    target = tmp_path / "changes.jsonl"
    code, out, err = run(accounts, capsys, "export", "changes", "--scope", scope)
    assert code == 2 and out == "" and said in err

    code, _, err = run(accounts, capsys, "export", "changes", "--scope", scope, "--output", str(target))
    assert code == 2 and said in err and not target.exists()

    # the scope as kept exports its rows; one with inputs but no change yet exports none, exit 0
    code, out, _ = run(accounts, capsys, "export", "changes", "--scope", "acme")
    assert code == 0 and '"scope": "acme"' in out.replace('":"', '": "')
    code, out, err = run(accounts, capsys, "export", "raw-logs", "--scope", "globex")
    assert code == 0 and "Globex asked for a quote" in out


def test_export_refuses_a_reversed_range(accounts: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, `--since 2026-12-08 --until 2026-12-07` exported nothing, exit 0."""
    for kind in ("changes", "raw-logs", "events"):
        code, out, err = run(
            accounts, capsys, "export", kind, "--since", "2026-12-08", "--until", "2026-12-07"
        )
        assert code == 2 and out == "", kind
        assert "until (2026-12-07T00:00:00+00:00) is not after since (2026-12-08T00:00:00+00:00)" in err

    span = ("--since", "2000-01-01", "--until", "2999-01-01")
    code, out, _ = run(accounts, capsys, "export", "raw-logs", *span)
    assert code == 0 and "Acme wants SSO" in out
