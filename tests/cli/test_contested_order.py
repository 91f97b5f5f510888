"""`amem facts`, `amem search` and `amem pending` for a record analysed after the note that
retires it (a late import, a retry): contested in the newer note's terms, never in the record's
own words, and the pending item gives the newer fact beside the record; in order, as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from amem.memory import Memory
from tests.cli.test_note_commands import Cli

OLDER = "Acme pays 40 USD per seat on the Pro plan"
NEWER = "Acme now pays 45 USD per seat on the Pro plan"
OLDER_AT, NEWER_AT = "2026-10-01T10:00:00Z", "2026-11-01T10:00:00Z"


@pytest.fixture
def amem(database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    memory = Memory(tmp_path / "home", database_url=database_url)
    try:
        yield Cli(memory, capsys)
    finally:
        memory.close()


def _add(amem: Cli, text: str, at: str) -> None:
    code, _, err = amem("add", text, "--scope", "acme", "--actor", "agent:a", "--at", at)
    assert code == 0, err


def _flat(out: str) -> str:
    """The output with its wrapped lines joined: a row's words, however the terminal wrapped them."""
    return " ".join(out.split())


def test_a_late_older_note_is_contested_with_the_newer_value_and_its_item_shows_the_newer_fact(
    amem: Cli,
) -> None:
    _add(amem, NEWER, NEWER_AT)
    _add(amem, OLDER, OLDER_AT)  # the older statement, analysed last

    for command in (["facts", "--scope", "acme"], ["search", "Acme price per seat", "--scope", "acme"]):
        code, out, err = amem(*command)
        assert code == 0, err
        flat = _flat(out)
        assert f'says otherwise: "{OLDER}"' not in flat  # never its own words as the newer note's
        assert f'a newer note says otherwise: "{NEWER}"; its retirement waits for review' in flat

    code, out, err = amem("pending")
    assert code == 0, err
    flat = _flat(out)
    assert f"newer fact «{NEWER}» (said 1 November 2026, 10:00 UTC)" in flat  # its words the evidence
    assert "different price per seat: $40/seat here, $45/seat in that note" in flat
    assert f"evidence {NEWER}" in flat  # the newer note's words, not the record's


def test_in_order_the_older_note_is_contested_in_the_newer_note_s_words(amem: Cli) -> None:
    _add(amem, OLDER, OLDER_AT)
    _add(amem, NEWER, NEWER_AT)

    code, out, err = amem("facts", "--scope", "acme")
    assert code == 0, err
    assert f'a newer note says otherwise: "{NEWER}"; its retirement waits for review' in _flat(out)

    code, out, err = amem("pending")
    assert code == 0, err
    flat = _flat(out)
    assert f"older fact {OLDER} (said 1 October 2026, 10:00 UTC)" in flat and "newer fact" not in flat
    assert "different price per seat: $45/seat here, $40/seat in that note" in flat
