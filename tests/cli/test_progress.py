"""Long commands say how far they are: services report through a callback, the CLI shows it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from amem.cli import main
from amem.cli import progress as cli_progress
from amem.index.sync import INDEXING
from amem.memory import Memory
from amem.services import integrity
from amem.services.integrity import VERIFY_CHANGES, VERIFY_EVENTS, VERIFY_RAW_LOGS
from amem.services.pipeline import ANALYSING

CALLS = [
    {"content": "Acme asked for 40 seats at $12 per seat", "scope": "acme"},
    {"content": "Acme decided to renew in March because of SSO", "scope": "acme"},
    {"content": "Globex wants a pilot next week", "scope": "globex"},
]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []

    def __call__(self, task: str, done: int, total: int | None) -> None:
        self.calls.append((task, done, total))

    def of(self, task: str) -> list[tuple[int, int | None]]:
        return [(d, t) for name, d, t in self.calls if name == task]


def test_import_reindex_and_verify_report_counts_as_they_go(memory: Memory) -> None:
    seen = Recorder()
    memory.add_notes(CALLS, actor="agent:import", batch_size=2, progress=seen)
    assert seen.of(ANALYSING) == [(0, 3), (2, 3), (3, 3)]

    seen = Recorder()
    assert memory.reindex(progress=seen) == 3
    assert seen.of(INDEXING)[0] == (0, 3) and seen.of(INDEXING)[-1] == (3, 3)

    seen = Recorder()
    result = memory.verify(progress=seen)
    assert result.ok
    assert seen.of(VERIFY_CHANGES)[-1] == (result.changes_checked, result.changes_checked)
    assert seen.of(VERIFY_RAW_LOGS) == [(0, 3), (3, 3)]


def test_reindex_in_a_new_process_reports_as_it_goes(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`amem reindex` opens a Memory whose index is not open yet: the rebuild it starts reports."""
    memory.add_notes(CALLS, actor="agent:import")
    seen = Recorder()
    with Memory(memory.home, database_url=memory.settings.database_url) as fresh:
        assert fresh.reindex(progress=seen) == 3
    assert seen.of(INDEXING)[0] == (0, 3) and seen.of(INDEXING)[-1] == (3, 3)

    monkeypatch.setattr(cli_progress, "QUIET_EVERY_S", 0.0)
    base = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    assert main([*base, "reindex", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"indexed": 3}
    assert "indexing notes: 3/3 (100%)" in captured.err.splitlines()


def test_verify_reports_every_long_step_as_it_goes(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a large ledger each step moves on as rows are checked (here every 2 rows): not 0 then
    all at the end of the change chain and nothing for the event chain, proposals or notes."""
    memory.add_notes(CALLS, actor="agent:import")
    monkeypatch.setattr(integrity, "REPORT_EVERY", 2)
    seen = Recorder()
    result = memory.verify(progress=seen)
    assert result.ok
    changes = seen.of(VERIFY_CHANGES)
    assert changes[0] == (0, result.changes_checked) and (2, result.changes_checked) in changes
    assert changes[-1] == (result.changes_checked, result.changes_checked)
    events = seen.of(VERIFY_EVENTS)
    assert [done for done, _ in events] == [*range(0, result.events_checked, 2), result.events_checked]
    assert {total for _, total in events} == {result.events_checked}
    assert seen.of("checking proposals")[-1] == (result.proposals_checked, result.proposals_checked)
    assert seen.of("replaying notes") == [(0, 3), (2, 3), (3, 3)]


def test_reprocess_reports_what_it_retries(memory: Memory) -> None:
    seen = Recorder()
    assert memory.reprocess(progress=seen) == []
    assert seen.of(ANALYSING) == [(0, 0)]


def _import_file(tmp_path: Path) -> Path:
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CALLS), "utf-8")
    return path


def test_off_a_terminal_progress_is_plain_lines_on_stderr_and_json_stays_clean(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli_progress, "QUIET_EVERY_S", 0.0)  # a line at every report
    base = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    assert main([*base, "import", str(_import_file(tmp_path)), "--batch-size", "2", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["added"] == 3
    assert "analysing raw logs: 3/3 (100%)" in captured.err.splitlines()
    assert "analysing raw logs: 2/3 (66%)" in captured.err.splitlines()

    assert main([*base, "verify"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("OK: intact")
    assert "verifying raw logs: 3/3 (100%)" in captured.err.splitlines()


def test_a_short_command_off_a_terminal_prints_no_progress(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    assert main([*base, "import", str(_import_file(tmp_path))]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "3 notes added" and captured.err == ""


def test_on_a_terminal_progress_is_a_bar_with_counts_and_time_left() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120, color_system=None)
    with cli_progress.reporter(False, console) as progress:
        progress(ANALYSING, 0, 1500)
        progress(ANALYSING, 1500, 1500)
    shown = screen.getvalue()
    assert "analysing raw logs" in shown and "1500/1500" in shown and "eta" in shown
