"""`amem pending` for a record analysed after the note that retires it (a late import, a retry):
the retirement's evidence is the newer note's words, which are not in the record's raw log, so the
"newer fact" row marks them «» as the text row marks evidence; a retirement an older amem recorded
(its evidence the record's own sentence) keeps its row as it was."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from amem.cli import blocks
from amem.domain.models import Proposer
from amem.memory import Memory
from tests.cli.test_note_commands import Cli
from tests.factories import said

NEWER, OLDER = "Acme now pays $55 per seat", "Acme pays $42 per seat"
NEWER_AT, OLDER_AT = "2026-04-02T10:00:00Z", "2026-01-10T10:00:00Z"
#: a newer input whose evidence is one of its sentences
UPDATE = "Pricing update. As of today Globex pays $55 per seat per month."
UPDATE_SAYS = "As of today Globex pays $55 per seat per month."


@pytest.fixture
def amem(database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    memory = Memory(tmp_path / "home", database_url=database_url)
    try:
        yield Cli(memory, capsys)
    finally:
        memory.close()


def _add(amem: Cli, text: str, at: str, scope: str = "acme") -> None:
    code, _, err = amem("add", text, "--scope", scope, "--actor", "agent:crm", "--at", at)
    assert code == 0, err


def _flat(out: str) -> str:
    """The output with its wrapped lines joined."""
    return " ".join(out.split())


def test_pending_marks_the_newer_note_s_words_a_late_record_is_retired_for(amem: Cli) -> None:
    _add(amem, NEWER, NEWER_AT)
    _add(amem, OLDER, OLDER_AT)  # the older record, analysed last
    _add(amem, UPDATE, "2026-06-08T10:00:00Z", scope="globex")
    _add(amem, "Pricing call: Globex pays $42 per seat per month.", "2026-03-10T10:00:00Z", scope="globex")

    code, out, err = amem("pending")

    assert code == 0, err
    flat = _flat(out)
    assert f"newer fact «{NEWER}» (said 2 April 2026, 10:00 UTC)" in flat, flat
    # only the words the retirement quotes are marked, not the rest of the newer note
    assert f"newer fact Pricing update. «{UPDATE_SAYS}» (said 8 June 2026, 10:00 UTC)" in flat, flat
    assert "\x1b" not in out  # not a terminal: the marks alone, no escape sequences


def test_on_a_terminal_the_newer_words_are_marked_as_evidence_in_a_raw_log_is(amem: Cli) -> None:
    _add(amem, NEWER, NEWER_AT)
    _add(amem, OLDER, OLDER_AT)
    terminal = io.StringIO()

    blocks.review_items(
        Console(file=terminal, force_terminal=True, color_system="standard", width=200),
        amem.memory.review_items(),
    )

    shown = terminal.getvalue()
    # bold reverse, the style of the text row's «evidence» (blocks.marked_text)
    assert f"\x1b[1;7m«{NEWER}»\x1b[0m" in shown, repr(shown)


def test_a_retirement_an_older_amem_recorded_keeps_its_newer_fact_row_unmarked(amem: Cli) -> None:
    """Its evidence is the record's own sentence, marked in the text row; the newer note's words
    carry no span. Beside it, a late record's item of this amem marks them."""
    _add(amem, NEWER, NEWER_AT)
    _add(amem, OLDER, OLDER_AT)
    memory = amem.memory
    older = said(memory, "Globex signed the order form for the Growth plan.", scope="globex")
    newer = said(memory, "Globex booked the onboarding kickoff for next week.", scope="globex")
    memory.propose(
        older.id,
        "invalid_at",
        "2026-06-08T10:00:00Z",
        reason=f"contradicted by newer note {newer.id}: a later fact",
        proposer=Proposer(kind="agent", id="crm"),  # as by hand: no model call to name
        raw_log_ids=older.raw_log_ids,
        evidence="Globex signed the order form",
    )

    code, out, err = amem("pending", "--scope", "globex")

    assert code == 0, err
    flat = _flat(out)
    assert "text «Globex signed the order form» for the Growth plan." in flat, flat
    assert f"newer fact {newer.content} (said " in flat, flat
    code, out, err = amem("pending", "--scope", "acme")
    assert code == 0, err
    assert f"newer fact «{NEWER}» (said 2 April 2026, 10:00 UTC)" in _flat(out)
