"""Readable blocks for the terminal: one block per item, labels on the left, values in full.

Never a table of narrow columns: at 80 columns those fold words into fragments. A block's value
wraps at spaces under its own indent; nothing is cut. Every text from the ledger is data, never
rich markup, and never a terminal's command: every control character is shown as an escape
(``printable``), so an input carrying ESC sequences cannot hide text from a reviewer or retitle
their window. Each function takes the Console to print on, so tests can give it a width.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.text import Text

from amem.domain.text import revealed

#: The evidence in a raw log's text, marked so that it shows without colour too.
MARK_OPEN, MARK_CLOSE = "«", "»"


#: C0 controls but tab and newline, DEL, and the C1 controls: what a terminal may act on (ESC
#: starts a sequence that hides text or sets the window's title; CSI, U+009B, does in one character).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` as a terminal shows it without acting on it: each control character written as
    its escape (ESC as \\x1b), tab and newline kept for the layout, a CRLF line end read as a
    newline; a character that reorders or hides text (a bidi override, a zero-width space) as
    its \\u escape. The one filter between ledger text and the terminal; --json output stays exact."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text.replace("\r\n", "\n"))
    return revealed(text)


def shown(text: object) -> Text:
    """A value from the ledger as a rich Text: printable, never read as markup."""
    return Text(printable(str(text)))


def when(moment: datetime | None) -> str:
    from amem.services.review import date_words  # on use: the commands that print no date start light

    return date_words(moment) if moment is not None else "unknown"


def _rows(console: Console, rows: Iterable[tuple[str, str | Text]], indent: int = 2) -> None:
    """Labels in a column, each value wrapped at spaces under its own indent (a word longer than
    the line is folded, never cut), no trailing blanks."""
    rows = list(rows)
    if not rows:
        return
    label_width = max(len(label) for label, _ in rows)
    room = max(20, console.width - indent - label_width - 2)
    for label, value in rows:
        text = value if isinstance(value, Text) else shown(value)
        first = True
        for paragraph in text.split("\n", allow_blank=True):
            for line in paragraph.wrap(console, room, overflow="fold") or [Text("")]:
                line.rstrip()
                head = label.ljust(label_width) if first else " " * label_width
                out = Text(" " * indent) + Text(head, style="dim") + Text("  ") + line
                out.rstrip()
                console.print(out, soft_wrap=True)
                first = False


def _head(console: Console, text: str) -> None:
    console.print(Text(printable(text), style="bold"), soft_wrap=False)


# -- review items --------------------------------------------------------------------------------


def marked_text(item: Any) -> Text:
    """The raw log's text with each located evidence span «marked», printable."""
    text = Text()
    for piece in item.pieces:
        if piece.attributes:
            text.append(MARK_OPEN + printable(piece.text) + MARK_CLOSE, style="bold reverse")
        else:
            text.append(printable(piece.text))
    return text


def marked_span(text: str, span: tuple[int, int] | None) -> Text:
    """``text`` printable with its evidence ``span`` «marked» as in ``marked_text``: a late record's
    retirement quotes the newer note's words, which are in that note, not in the record's raw log.
    No span (a proposal an older amem recorded), or one that does not fit, marks nothing."""
    start, end = span if span is not None else (0, 0)
    if not 0 <= start < end <= len(text):
        return shown(text)
    marked = Text(printable(text[:start]))
    marked.append(MARK_OPEN + printable(text[start:end]) + MARK_CLOSE, style="bold reverse")
    marked.append(printable(text[end:]))
    return marked


def review_items(console: Console, page: Any, *, offset: int = 0) -> None:
    if not page.items:
        console.print("nothing pending", markup=False)
        return
    showing = f"{offset + 1}-{offset + len(page.items)}"
    more = offset + len(page.items) < page.total
    paging = f"; --offset {offset + len(page.items)} shows the next" if more else ""
    console.print(
        Text(
            f"review items waiting: {page.total} (showing {showing}{paging}); «» marks the evidence",
            style="dim",
        )
    )
    for item in page.items:
        console.print()
        values = "1 held value" if len(item.fields) == 1 else f"{len(item.fields)} held values"
        _head(console, f"item {item.key} ({values})")
        rows: list[tuple[str, str | Text]] = [("account", item.scope)]
        if item.raw_log is not None:
            rows.append(("said", f"{when(item.said_at)} by {item.said_by}"))
            rows.append(("text", marked_text(item)))
        _rows(console, rows)
        for number, field in enumerate(item.fields, 1):
            _head(console, f"  {number}. {field.attribute} of note {field.note_id}")
            p = field.proposal
            source = f"{p.proposer.kind.value}:{p.proposer.id}"
            if p.proposer.model:
                source += f", model {p.proposer.model}"
            rows = [("current", field.current_words), ("proposed", field.proposed_words)]
            if field.corrected is not None:
                c = field.corrected
                rows.append(("corrects", f"{c.proposed_words} ({c.proposer}, proposal {c.proposal_id})"))
            if field.older is not None:
                rows.append(("older fact", f"{field.older.content} (said {when(field.older.said_at)})"))
            if field.newer is not None:  # the item is an older record's, analysed late
                said = shown(f" (said {when(field.newer.said_at)})")
                rows.append(("newer fact", marked_span(field.newer.content, field.newer.span) + said))
            if field.brings_back:
                rows.append(("brings back", _brought_back(field)))
            rows.append(("reason", p.reason))
            if p.evidence:
                rows.append(("evidence", p.evidence))
            rows.append(("source", f"{source}; proposal {p.id}"))
            if field.note_deleted is not None:  # approving is refused (Governance._check_not_deleted)
                d = field.note_deleted
                rows.append(("deleted", f"{d.words()}: approving is refused; {d.advice()}"))
            elif field.policy_frozen is not None:  # approving: the policy's rejection (_approve_in)
                rows.append(("frozen", f"{field.policy_frozen.words()}: approving is refused; reject it"))
            elif field.stale:
                rows.append(("warning", "the note changed since: approving records a conflict"))
            _rows(console, rows, indent=5)
    console.print()
    for hint in (
        "amem approve ITEM --reviewer YOU: every value of the item",
        "amem approve PROPOSAL --reviewer YOU: one value",
        "amem approve --all --scope S --attribute A --kind K --reviewer YOU: all matching",
        "amem correct PROPOSAL VALUE --reviewer YOU: the right value instead",
    ):
        console.print(Text(hint, style="dim"), soft_wrap=True)


def _brought_back(field: Any) -> str:
    """What approving an un-retirement does, in the console's words (its card says "Brings the
    fact back (retired from ...): approving removes its end date, so it holds again"): a proposed
    "(none)" alone reads like a value being taken away."""
    ended = f" (retired from {field.current_words})" if field.current_value is not None else ""
    return f"the fact{ended}: approving removes its end date, so it holds again"


def decision_report(console: Console, report: Any) -> None:
    console.print(shown(report.summary()), soft_wrap=False)
    for p in report.decided:
        # an approval the policy refused (frozen since) is its rejection, recorded with no reviewer
        refused = p.status.value == "rejected" and p.reviewer is None
        status = "refused by the policy, not approved" if refused else p.status.value
        line = f"  {status}: {p.attribute} of {p.note_id} ({p.id})"
        console.print(shown(line), soft_wrap=False)
        if p.status.value == "conflict":
            console.print(shown(f"    {p.review_comment}; propose again against the current value"))
        elif p.status.value == "rejected" and p.review_comment:  # the policy's refusal, or the comment
            console.print(shown(f"    {p.review_comment}"))
    for s in report.skipped:
        console.print(shown(f"  skipped {s.proposal_id}: {s.reason}"), soft_wrap=False)


# -- history -------------------------------------------------------------------------------------


def history(console: Console, note_id: str, events: Sequence[Any], words: Any) -> None:
    """A note's history, one block per event. ``words(attribute, value)`` puts a value in words."""
    _head(console, f"history of {note_id} ({len(events)} events, oldest first)")
    for e in events:
        console.print()
        _head(console, f"{e.at:%Y-%m-%d %H:%M:%S} UTC  {e.event}  {e.attribute}")
        rows: list[tuple[str, str | Text]] = []
        if e.event in ("proposed", "applied", "reverted", "created"):
            rows.append(("value", words(e.attribute, e.new_value)))
        rows.append(("by", e.actor + (f", model {e.model}" if e.model else "")))
        if e.llm_call_id:
            rows.append(("model call", e.llm_call_id))
        if e.reason:
            rows.append(("reason", e.reason))
        if e.comment:
            rows.append(("comment", e.comment))
        if e.raw_log_ids:
            rows.append(("raw logs", ", ".join(e.raw_log_ids)))
        ref = f"proposal {e.proposal_id}" if e.proposal_id else ""
        if e.change_seq:
            ref += f"; change {e.change_seq}"
        if ref:
            rows.append(("ref", ref.strip("; ")))
        _rows(console, rows)


# -- search and facts ----------------------------------------------------------------------------


def _validity(valid_at: datetime | None, invalid_at: datetime | None, retired: bool) -> str:
    parts = []
    if valid_at is not None:
        parts.append(f"valid from {when(valid_at)}")
    if invalid_at is not None:
        parts.append(f"{'retired' if retired else 'holds until'} {when(invalid_at)}")
    return "; ".join(parts) or "holds (no end date)"


def search_hits(console: Console, results: Sequence[Any]) -> None:
    if not results:
        console.print("no notes found", markup=False)
        return
    for i, r in enumerate(results, 1):
        console.print()
        mark = "RETIRED  " if r.retired else ""
        _head(console, f"{i}. {mark}{r.note_id}  {r.score:.3f}  {'+'.join(r.matched_by)}")
        rows: list[tuple[str, str | Text]] = [("content", " ".join(r.note.content.split()))]
        rows.append(("said", when(r.said_at)))
        rows.append(("currency", _validity(r.valid_at, r.invalid_at, r.retired)))
        rows += _contested(getattr(r, "retirement_waiting", None), r.note.content)
        if r.note.tags:
            rows.append(("tags", ", ".join(r.note.tags)))
        _rows(console, rows, indent=3)
        if r.linked_from:
            because = f": {r.link_reason}" if r.link_reason else ""
            console.print(shown(f"   linked from {r.linked_from}{because}"), soft_wrap=False)


def _contested(waiting: Any, content: str) -> list[tuple[str, str | Text]]:
    """The row saying a newer note contradicts this one (``content``) and a reviewer has not
    decided yet: in the newer note's words, never in this note's own (``contested_words``)."""
    if waiting is None:
        return []
    from amem.services.review import contested_words  # on use: the commands that print none start light

    said = contested_words(waiting.evidence, waiting.reason, content)
    return [("contested", f"{said}; its retirement waits for review (proposal {waiting.proposal_id})")]


def facts(console: Console, page: Any) -> None:
    then = f" as the ledger held them at {page.as_of:%Y-%m-%d %H:%M:%S} UTC" if page.as_of else ""
    if not page.facts:
        console.print(shown(f"no {'' if then else 'current '}facts for {page.scope}{then}"))
        return
    _head(console, f"facts of {page.scope}{then}: {page.total}, newest said first")
    for i, fact in enumerate(page.facts, 1):
        console.print()
        note = fact.note
        _head(console, f"{i}. {'RETIRED  ' if fact.retired else ''}{' '.join(note.content.split())}")
        rows: list[tuple[str, str | Text]] = [
            ("said", f"{when(fact.said_at)}" + (f" by {fact.said_by}" if fact.said_by else "")),
            ("currency", _validity(note.valid_at, note.invalid_at, fact.retired)),
            *_contested(fact.retirement_waiting, note.content),
        ]
        if note.category:
            rows.append(("category", note.category))
        if note.decision_rationale:
            rows.append(("why", note.decision_rationale))
        for d in fact.decisions:
            by = f" by {d.reviewer}" if d.reviewer else ""
            comment = f": {d.comment}" if d.comment else ""
            rows.append(("decided", f"{d.attribute} {d.status}{by}{comment}"))
        rows.append(("history", f"amem history {note.id}"))
        if page.as_of:
            rows.append(("then", f"amem show {note.id} --as-of {page.as_of.isoformat()}"))
        _rows(console, rows, indent=3)
