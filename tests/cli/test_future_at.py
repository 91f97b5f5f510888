"""`amem add --at` and `amem import` (and its --check) refuse a time later than now: `at` is when
the input was said. Before, a line dated 3026 passed --check and was kept."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_note_commands import Cli


def one_line(err: str) -> str:
    return " ".join(err.split())


def test_add_refuses_a_time_in_the_future(amem: Cli) -> None:
    code, _, err = amem(
        "add", "Omega price is 10 EUR per seat.", "--scope", "omega", "--at", "2209-01-01T00:00:00Z"
    )
    assert code == 2
    assert one_line(err).startswith("error: at: '2209-01-01T00:00:00Z' is in the future: this server's clock")
    assert amem.memory.count_raw_logs() == 0


def test_import_and_its_check_name_each_line_dated_in_the_future(amem: Cli, tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text(
        '{"content": "Omega renewed", "scope": "omega", "at": "2026-03-01T00:00:00Z"}\n'
        '{"content": "Omega has 40 seats", "scope": "omega", "at": "3026-01-01T00:00:00Z"}\n'
        '{"content": "", "scope": "omega"}\n',
        "utf-8",
    )
    for run in (["import", str(path), "--check"], ["import", str(path)]):
        code, _, err = amem(*run)
        assert code == 2, run
        said = one_line(err)
        assert said.startswith(
            f"error: {path}: 2 lines are wrong: line 2: at: '3026-01-01T00:00:00Z' is in the future"
        )
        assert "line 3: content is empty" in said and said.endswith("nothing was recorded")
    assert amem.memory.count_raw_logs() == 0
