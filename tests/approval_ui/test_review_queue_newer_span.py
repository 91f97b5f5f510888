"""Review queue: a record analysed after the note that retires it (a late import, a retry). Its
retirement's evidence is the newer note's words, which are not in the record's raw log, so the card
highlighted nothing; the "Newer fact" now shows them highlighted as evidence in a raw log is. A
retirement an older amem recorded (its evidence the record's own sentence) shows as before."""

from __future__ import annotations

from amem.domain.models import Proposer
from amem.memory import Memory
from tests.approval_ui.conftest import open_console, plain, texts
from tests.factories import said

NEWER, OLDER = "Acme now pays $55 per seat", "Acme pays $42 per seat"
#: a newer input whose evidence is one of its sentences
UPDATE = "Pricing update. As of today Globex pays $55 per seat per month."


def _add(mem: Memory, text: str, at: str, scope: str = "acme") -> None:
    mem.add_note(text, at=at, actor="agent:crm", scope=scope, wait=True)


def test_a_late_record_s_card_highlights_the_newer_note_s_words(mem: Memory) -> None:
    _add(mem, NEWER, "2026-04-02T10:00:00Z")
    _add(mem, OLDER, "2026-01-10T10:00:00Z")  # the older record, analysed last
    _add(mem, UPDATE, "2026-06-08T10:00:00Z", scope="globex")
    _add(mem, "Pricing call: Globex pays $42 per seat per month.", "2026-03-10T10:00:00Z", scope="globex")

    at = open_console("alice")

    raw = texts(at)
    assert r":orange-background[Acme now pays \$55 per seat]" in raw, raw
    # only the words the retirement quotes, not the rest of the newer note
    assert r"Pricing update\. :orange-background[As of today Globex pays \$55 per seat per month\.]" in raw
    assert plain(raw).count("Highlighted: the evidence for invalid_at") == 2
    codes = [c.value for c in at.code]
    assert OLDER in codes  # the record itself, as before


def test_a_retirement_an_older_amem_recorded_shows_the_newer_fact_as_before(mem: Memory) -> None:
    """Its evidence is the record's own sentence, highlighted in the record's raw log; the newer
    note's words carry no span and show verbatim. Beside it, a late record of this amem's."""
    _add(mem, NEWER, "2026-04-02T10:00:00Z")
    _add(mem, OLDER, "2026-01-10T10:00:00Z")
    older = said(mem, "Globex signed the order form for the Growth plan.", scope="globex")
    newer = said(mem, "Globex booked the onboarding kickoff for next week.", scope="globex")
    mem.propose(
        older.id,
        "invalid_at",
        "2026-06-08T10:00:00Z",
        reason=f"contradicted by newer note {newer.id}: a later fact",
        proposer=Proposer(kind="agent", id="crm"),  # as by hand: no model call to name
        raw_log_ids=older.raw_log_ids,
        evidence="Globex signed the order form",
    )

    at = open_console("alice")

    raw = texts(at)
    assert ":orange-background[Globex signed the order form] for the Growth plan" in raw, raw
    assert newer.content in [c.value for c in at.code]  # verbatim, nothing highlighted in it
    assert "orange-background[Globex booked" not in raw
    assert r":orange-background[Acme now pays \$55 per seat]" in raw
