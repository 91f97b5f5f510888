"""Whether a new note only restates an earlier one (a recap, a CRM entry logging a known fact).

A restatement says it logs or recaps ("Recap for the team:", "Email logged:", "updated to",
"marked Closed Won"), shares most of its words with the earlier note, and states no number the
earlier note does not. The pipeline then links it to the earlier note instead of proposing its
held values again.
"""

from __future__ import annotations

import re

from amem.llm.offline.contradictions import roots
from amem.llm.offline.text import readable

_RECAP = re.compile(
    r"\b(?:recap\w*|logged|updated|as discussed|as agreed|to confirm|marked|for the record|"
    r"fyi|reminder|noted|per our call|re:|following up on|confirmed in writing)",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"(?<![\d.])\d{2,3}(?:[.,]\d+)?(?![\d])")

#: Share of the new note's words found in the earlier note: with a recap cue, and without one.
WITH_CUE, WITHOUT_CUE = 0.3, 0.75


def numbers(text: str) -> set[str]:
    """Amounts and days of two or three digits (years and ids left out)."""
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def restatement_score(
    new_text: str, old_text: str, background: set[str] | frozenset[str] = frozenset()
) -> float:
    """How much of the new note the old one already says (0 when it adds a number). Words in
    ``background`` (the account's own name) say nothing about the fact and are not counted."""
    new, old = readable(new_text), readable(old_text)
    if not numbers(new) <= numbers(old):
        return 0.0
    mine = roots(new) - set(background)
    if len(mine) < 3:
        return 0.0
    coverage = len(mine & roots(old)) / len(mine)
    threshold = WITH_CUE if _RECAP.search(new) else WITHOUT_CUE
    return coverage if coverage >= threshold else 0.0
