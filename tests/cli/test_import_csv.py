"""`amem import` of a CSV file, as a CRM or a spreadsheet exports one: named columns, cells that
span lines, every wrong row named by the line it starts on, nothing recorded when one is wrong."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from amem.cli import main
from amem.cli.import_files import read_csv
from amem.memory import Memory

COLUMNS = [
    "--content-column",
    "Description",
    "--scope-column",
    "Account Name",
    "--at-column",
    "Activity Date",
]
EXPORT = (
    "\ufeffAccount Name,Activity Date,Description,Owner,Stage\r\n"
    'acme,2026-03-01,"Acme wants 10 seats, and SSO before the audit",Priya,Negotiation\r\n'
    'globex,2026-03-02T15:30:00Z,"Globex signed\r\nthe two-year renewal",,\r\n'
    "\r\n"
    ",2026-03-03,Initech asked about pricing,Leo,\r\n"
)


def run(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_crm_export_is_imported_by_its_columns(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "activities.csv"
    path.write_text(EXPORT, encoding="utf-8", newline="")
    code, out, err = run(memory, capsys, "import", str(path), *COLUMNS, "--scope", "initech")
    assert code == 0, err
    assert out.startswith("3 notes added")
    with memory.ledger.read() as tx:
        raws = {r.text: r for r in tx.iter_raw_logs()}
    assert set(raws) == {
        "Acme wants 10 seats, and SSO before the audit",
        "Globex signed\r\nthe two-year renewal",  # a cell over two lines, kept as it was written
        "Initech asked about pricing",
    }
    acme = raws["Acme wants 10 seats, and SSO before the audit"]
    assert acme.scope == "acme" and acme.occurred_at == datetime(2026, 3, 1, tzinfo=UTC)
    assert acme.metadata == {"Owner": "Priya", "Stage": "Negotiation"}  # the other cells, empty ones left out
    globex = raws["Globex signed\r\nthe two-year renewal"]
    assert globex.occurred_at == datetime(2026, 3, 2, 15, 30, tzinfo=UTC) and globex.metadata == {}
    assert raws["Initech asked about pricing"].scope == "initech"  # no account in the row: --scope


def test_every_wrong_row_is_named_by_the_line_it_starts_on(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "activities.csv"
    path.write_text(
        "scope,at,content\n"
        'acme,2026-03-01,"a note\nover two lines"\n'
        "acme,next week,Acme asked for a quote\n"
        ",2026-03-02,no account\n"
        "acme,2026-03-03,\n"
        "acme,2026-03-04,one,cell,too many\n",
        encoding="utf-8",
    )
    code, _, err = run(memory, capsys, "import", str(path))
    assert code == 2
    message = " ".join(err.split())
    assert message == (
        f"error: {path}: 4 lines are wrong: line 4: at: 'next week' is not an ISO 8601 date-time "
        "(e.g. 2026-03-01T09:30:00Z); line 5: scope: Field required; line 6: content is empty: "
        "add_note needs the text to remember; line 7: 5 cells, more than the header's 3 columns; "
        "nothing was recorded"
    )
    assert memory.unprocessed_count() == 0 and memory.notes() == []


def test_a_file_without_the_text_column_or_not_in_utf8_says_what_to_do(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "activities.csv"
    path.write_text(EXPORT, encoding="utf-8", newline="")
    code, _, err = run(memory, capsys, "import", str(path))
    assert code == 2
    assert (
        "line 1: no column 'content' for the text (columns: 'Account Name', 'Activity Date', "
        "'Description', 'Owner', 'Stage'); name it with --content-column" in " ".join(err.split())
    )
    legacy = tmp_path / "excel.csv"  # saved by a spreadsheet in Windows-1252
    legacy.write_bytes("content,scope\nCafé Co. churned,cafe\n".encode("cp1252"))
    code, _, err = run(memory, capsys, "import", str(legacy))
    assert code == 2
    assert "line 2: not UTF-8 (byte 0xe9 at column 4): save the file as CSV UTF-8" in err
    assert memory.notes() == []


def test_the_format_can_be_named_for_a_file_of_another_suffix(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "activities.txt"
    path.write_text("content,scope\nAcme renewed,acme\n", encoding="utf-8")
    code, _, err = run(memory, capsys, "import", str(path))
    assert code == 2 and "not JSON" in err  # read as JSON Lines by default
    code, out, err = run(memory, capsys, "import", str(path), "--format", "csv")
    assert code == 0 and out.startswith("1 notes added"), err


def test_rows_keep_their_order_and_their_starting_lines() -> None:
    read = read_csv(EXPORT.encode("utf-8"), content="Description", scope="Account Name", at="Activity Date")
    assert read.numbers == [2, 3, 6] and read.unread == []
    assert [item.get("scope") for item in read.items] == ["acme", "globex", None]


def test_a_check_names_every_wrong_line_and_opens_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before a first import: `--check` runs the import's own checks on the file and says how many
    inputs are ready, without creating or opening a store."""
    home = tmp_path / "not-yet"
    path = tmp_path / "activities.csv"
    path.write_text(EXPORT, encoding="utf-8", newline="")
    code = main(["--home", str(home), "import", str(path), *COLUMNS, "--scope", "initech", "--check"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.startswith(f"{path}: 3 inputs ready to import, none wrong; nothing recorded")
    code = main(["--home", str(home), "import", str(path), *COLUMNS, "--check"])  # row 6 has no account
    captured = capsys.readouterr()
    assert code == 2 and f"{path}, line 6: scope: Field required; nothing was recorded" in captured.err
    assert not home.exists()


def test_an_import_with_a_wrong_line_creates_no_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = tmp_path / "not-yet"
    path = tmp_path / "calls.jsonl"
    lines = ['{"content": "Acme renewed", "scope": "acme"}', '{"content": "no scope"}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["--home", str(home), "import", str(path)])
    assert code == 2 and f"{path}, line 2: scope: Field required" in capsys.readouterr().err
    assert not home.exists()


def test_rows_named_by_their_crm_id_are_imported_once_even_without_a_time(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A CRM exports its activities with ids and no times: run twice (or a later export holding the
    same rows), each row is kept once, by its id. A row whose id comes back with another text is
    named, and nothing of that run is recorded."""
    path = tmp_path / "activities.csv"
    path.write_text(
        "Activity ID,Account,Note\nA-1,acme,Acme wants SSO\nA-2,globex,Globex signed\n", encoding="utf-8"
    )
    columns = ["--content-column", "Note", "--scope-column", "Account", "--key-column", "Activity ID"]
    assert run(memory, capsys, "import", str(path), *columns)[0] == 0
    later = tmp_path / "later.csv"
    later.write_text(
        "Activity ID,Account,Note\nA-1,acme,Acme wants SSO\nA-2,globex,Globex signed\n"
        "A-3,acme,Acme churned\n",
        encoding="utf-8",
    )
    code, out, err = run(memory, capsys, "import", str(later), *columns)
    assert code == 0, err
    assert out.startswith("1 notes added") and "2 lines recorded before (the same idempotency key" in out
    with memory.ledger.read() as tx:
        raws = list(tx.iter_raw_logs())
    assert sorted(r.text for r in raws) == ["Acme churned", "Acme wants SSO", "Globex signed"]
    assert {r.metadata["Activity ID"] for r in raws} == {"A-1", "A-2", "A-3"}  # the id stays in metadata

    edited = tmp_path / "edited.csv"
    edited.write_text("Activity ID,Account,Note\nA-4,acme,Acme renewed\nA-2,globex,Globex cancelled\n")
    code, _, err = run(memory, capsys, "import", str(edited), *columns)
    assert code == 2 and "line 3: idempotency_key 'A-2' names another input" in " ".join(err.split())
    with memory.ledger.read() as tx:
        assert len(list(tx.iter_raw_logs())) == 3
    missing = run(memory, capsys, "import", str(path), *columns[:4], "--key-column", "Id")
    assert missing[0] == 2 and "no column 'Id' for each row's id" in missing[2]


@pytest.mark.parametrize(
    ("header", "row", "problem"),
    [
        (
            "content,scope,Email,Email",
            "Acme call,acme,ann@acme.test,bob@acme.test",
            "line 1: column 4 repeats the name 'Email' (column 3), and line 3 has a cell under it",
        ),
        (
            "content,scope,Email,",
            "Acme call,acme,ann@acme.test,PO 4471 signed",
            "line 1: column 4 has no name, and line 3 has a cell under it",
        ),
    ],
)
def test_a_cell_under_a_repeated_or_unnamed_column_refuses_the_file(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path, header: str, row: str, problem: str
) -> None:
    """Before: the cell was dropped without a word (the metadata keeps one cell a name), though the
    row was "imported"."""
    path = tmp_path / "contacts.csv"
    path.write_text(f"{header}\nGlobex call,globex,,\n{row}\n", encoding="utf-8")
    code, _, err = run(memory, capsys, "import", str(path))
    assert code == 2
    message = " ".join(err.split())
    assert f"error: {path}, {problem}" in message and "nothing was recorded" in message
    assert memory.count_raw_logs() == 0


def test_a_repeated_or_unnamed_column_left_empty_is_no_problem(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A spreadsheet's trailing comma, a column exported twice and left empty: nothing is lost, and
    the first column of a name keeps its cell."""
    path = tmp_path / "contacts.csv"
    path.write_text("content,scope,Email,Email,\nAcme call,acme,ann@acme.test,,\n", encoding="utf-8")
    code, out, err = run(memory, capsys, "import", str(path))
    assert code == 0 and out.startswith("1 notes added"), err
    with memory.ledger.read() as tx:
        (raw,) = tx.iter_raw_logs()
    assert raw.metadata == {"Email": "ann@acme.test"}


UNCLOSED = (
    "content,scope,at\n"
    "Acme wants SSO,acme,2026-03-01T10:00:00Z\n"
    '"Globex said ""maybe"" about annual billing,globex,2026-03-02T10:00:00Z\n'
    "Initech asked for a discount,initech,2026-03-03T10:00:00Z\n"
    "Umbrella renews,umbrella,2026-03-04T10:00:00Z\n"
)


def test_an_unclosed_quote_is_named_by_the_line_it_opens_on_and_nothing_is_recorded(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: the rest of the file became one input's text (a raw log, never changed, in the
    --scope account, timed now), and --check said "2 inputs ready to import, none wrong"."""
    path = tmp_path / "unclosed.csv"
    path.write_text(UNCLOSED, encoding="utf-8")
    for check in (["--check"], []):
        code, out, err = run(memory, capsys, "import", str(path), "--scope", "misc", *check)
        message = " ".join(err.split())
        assert code == 2 and out == "", (check, out)
        assert message.startswith(
            f"error: {path}, line 3: unclosed quote: the quoted cell starting on this line"
        )
        assert message.endswith("nothing was recorded")
    assert memory.count_raw_logs() == 0 and memory.notes() == []


def test_a_quote_closed_on_a_later_line_names_both_lines(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A stray quote further down closes the cell: the rows between would have been one cell."""
    path = tmp_path / "stray.csv"
    path.write_text(
        'content,scope\n"Globex said maybe,globex\nInitech asked,initech\nUmbrella "big" renews,umbrella\n'
        "Hooli called,hooli\n",
        encoding="utf-8",
    )
    code, _, err = run(memory, capsys, "import", str(path))
    message = " ".join(err.split())
    assert code == 2
    assert f"{path}, line 2: the quoted cell starting on this line runs on to a quote on line 4" in message
    assert memory.count_raw_logs() == 0


@pytest.mark.parametrize(
    ("option", "column", "what"),
    [("--scope-column", "Account name", "for the account"), ("--at-column", "Activity date", "for the time")],
)
def test_a_scope_or_time_column_named_but_missing_refuses_the_file(
    memory: Memory,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    option: str,
    column: str,
    what: str,
) -> None:
    """Before: a mistyped column (here a letter's case) was ignored without a word: every row in the
    --scope account, timed now, and a second run recorded everything again."""
    path = tmp_path / "crm.csv"
    path.write_text(
        "Description,Account Name,Activity Date\nAcme wants SSO,acme,2026-03-01T10:00:00Z\n", encoding="utf-8"
    )
    columns = [
        "--content-column",
        "Description",
        "--scope-column",
        "Account Name",
        "--at-column",
        "Activity Date",
    ]
    columns[columns.index(option) + 1] = column
    code, _, err = run(memory, capsys, "import", str(path), *columns, "--scope", "fallback")
    assert code == 2
    assert (
        f"error: {path}, line 1: no column {column!r} {what} (columns: 'Description', 'Account Name', "
        f"'Activity Date'); see {option}; nothing was recorded"
    ) in " ".join(err.split())
    assert memory.count_raw_logs() == 0
    code, out, err = run(memory, capsys, "import", str(path), *columns[:2], "--scope", "fallback")
    assert code == 0 and out.startswith("1 notes added"), err  # not named: no column needed
    (raw,) = memory.raw_logs([memory.notes()[0].raw_log_ids[0]])
    assert raw.scope == "fallback" and raw.metadata["Account Name"] == "acme"


def test_a_key_given_twice_in_a_file_names_the_line_of_the_first(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: "line 7: idempotency_key 'A1' is given to input 1 too", the first A1 being on line 3."""
    path = tmp_path / "dupkey.csv"
    path.write_text(
        "content,scope,at,id\n\nAcme wants SSO,acme,2026-03-01T10:00:00Z,A1\n\n"
        "Globex likes annual billing,globex,2026-03-02T10:00:00Z,B1\n\n"
        "Acme again,acme,2026-03-03T10:00:00Z,A1\n",
        encoding="utf-8",
    )
    for check in (["--check"], []):
        code, _, err = run(memory, capsys, "import", str(path), "--key-column", "id", *check)
        assert code == 2
        assert (
            f"error: {path}, line 7: idempotency_key 'A1' is given to line 3 too: a key names one input; "
            "nothing was recorded"
        ) == " ".join(err.split())
    assert memory.count_raw_logs() == 0


def test_every_column_named_and_missing_is_named_at_once(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "crm.csv"
    path.write_text("Description,Account Name\nAcme wants SSO,acme\n", encoding="utf-8")
    code, _, err = run(
        memory,
        capsys,
        "import",
        str(path),
        "--content-column",
        "Description",
        "--scope-column",
        "Account",
        "--at-column",
        "When",
        "--scope",
        "fallback",
    )
    message = " ".join(err.split())
    assert code == 2 and "no column 'Account' for the account" in message
    assert "no column 'When' for the time" in message and memory.count_raw_logs() == 0


def test_a_long_cell_is_read_when_the_store_takes_long_texts(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: with AMEM_MAX_CONTENT_CHARS raised, a cell over 131,072 characters (the csv module's
    default limit) was "not CSV (field larger than field limit)", though JSON Lines took it."""
    monkeypatch.setenv("AMEM_MAX_CONTENT_CHARS", "500000")
    text = "Acme call transcript. " * 9000  # 198,000 characters
    path = tmp_path / "calls.csv"
    path.write_text(f'content,scope\n"{text}",acme\n', encoding="utf-8")
    code, out, err = run(memory, capsys, "import", str(path), "--check")
    assert code == 0, err
    assert out.startswith(f"{path}: 1 inputs ready to import")


def test_a_time_that_cannot_be_read_is_named_by_the_users_column(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: "at: 'next week' is not an ISO 8601 date-time", a name the file does not have."""
    path = tmp_path / "activities.csv"
    path.write_text(EXPORT.replace("2026-03-01", "next week"), encoding="utf-8", newline="")
    code, _, err = run(memory, capsys, "import", str(path), *COLUMNS, "--scope", "initech")
    assert code == 2
    assert " ".join(err.split()) == (
        f"error: {path}, line 2: column 'Activity Date': 'next week' is not an ISO 8601 date-time "
        "(e.g. 2026-03-01T09:30:00Z); nothing was recorded"
    )
