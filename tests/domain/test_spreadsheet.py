"""The CSV dialect every export amem writes shares: rows a spreadsheet and the csv module read whole."""

from __future__ import annotations

import csv
import io

from amem.domain.spreadsheet import csv_writer


def test_a_cell_holding_any_line_break_stays_in_its_row() -> None:
    """Before: rows ended in a bare LF, and a cell holding a lone carriage return (an old Mac line
    break) was written unquoted: every reader split its row in two there."""
    cells = ["Call notes:\rAcme wants 40 seats", "two\nlines", "crlf\r\nend", "plain"]
    buffer = io.StringIO(newline="")
    writer = csv_writer(buffer)
    writer.writerow(cells)
    writer.writerow(["next", "row", "", ""])
    assert list(csv.reader(io.StringIO(buffer.getvalue(), newline=""))) == [cells, ["next", "row", "", ""]]
