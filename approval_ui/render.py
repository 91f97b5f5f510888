"""Safe rendering of ledger data: escaping, value text, diffs, times.

Notes, raw logs and reasons come from agents and LLMs: they are data, never markup. Anything
shown through st.markdown (or an alert, a caption, a label) goes through ``md_escape`` first;
raw text goes to st.code / st.text / st.dataframe, which never interpret it. No page uses
unsafe_allow_html. Either way a character that reorders or hides text (a bidi override, a
zero-width space) is shown as its escape (``revealed``): the browser would act on it.
"""

from __future__ import annotations

import difflib
import json
import re
from datetime import UTC, datetime
from typing import Any, NamedTuple

from amem.domain.text import revealed

# Every character Markdown, Streamlit's directives (:red[...], :material/x:), emoji shortcodes
# and LaTeX ($) could read as syntax. A backslash before any ASCII punctuation is a literal.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>:~$=^&\"'%@;/?])")


# GFM turns bare URLs and e-mail addresses in text into links even when escaped; an invisible
# word joiner after the scheme (or before the @) keeps them plain text.
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|xmpp|www)(?=[:.])")
_WORD_JOINER = "\u2060"

# A line's leading spaces or tabs: four make it a code block in Markdown (the highlight lost, the
# escapes shown as backslashes), fewer are dropped. As no-break spaces they are neither, and the
# indentation of a forwarded e-mail still shows.
_INDENT = re.compile(r"^[ \t]+(?=\S)", re.MULTILINE)
_NO_BREAK_SPACE = "\u00a0"
_TAB_WIDTH = 4


def _keep_indent(markdown: str) -> str:
    """``markdown`` with each line's indentation as no-break spaces (a blank line stays blank)."""
    return _INDENT.sub(
        lambda m: m.group().replace("\t", " " * _TAB_WIDTH).replace(" ", _NO_BREAK_SPACE), markdown
    )


def md_escape(text: object, *, keep_newlines: bool = True) -> str:
    """``text`` as literal Markdown: no link, no HTML, no directive, no formula survives."""
    s = revealed("" if text is None else str(text))
    s = _AUTOLINK.sub(lambda m: m.group(1) + _WORD_JOINER, s).replace("@", _WORD_JOINER + "@")
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    if keep_newlines:
        # A hard line break per newline; blank lines stay paragraph breaks.
        return _keep_indent("  \n".join(s.split("\n")))
    return " ".join(s.split())


def value_text(value: Any) -> str:
    """A value as readable plain text: text as is, a list one item per line, a link with its reason."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return revealed(value)
    if isinstance(value, list):
        lines = []
        for item in value:
            if isinstance(item, dict) and "note_id" in item:
                reason = item.get("reason") or ""
                lines.append(f"→ {item['note_id']}" + (f"  ({reason})" if reason else ""))
            else:
                lines.append(f"• {value_text(item)}")
        return "\n".join(lines)
    return revealed(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str))


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 item``, ``2 items``, ``1,109 held values``: the count with the noun it takes."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def short(text: str, width: int = 90) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


# A word with the whitespace after it (or leading whitespace alone): a changed word and its
# space move together, so a diff groups whole phrases instead of interleaving spaces.
_TOKEN = re.compile(r"\s+|\S+\s*")
_EDGES = re.compile(r"^(\s*)(.*?)(\s*)$", re.DOTALL)


def _inline(text: str) -> str:
    """Escaped like md_escape, but spaces kept as they are (the diff's pieces must join up)."""
    text = _AUTOLINK.sub(lambda m: m.group(1) + _WORD_JOINER, revealed(text)).replace("@", _WORD_JOINER + "@")
    return _MD_SPECIAL.sub(r"\\\1", text)


def _mark(text: str, directive: str, strike: bool) -> str:
    """``text`` in a Streamlit colour directive, line by line (a directive cannot span lines),
    with the whitespace at its edges left outside (Markdown ignores ``~~ x~~``)."""
    pieces = []
    for line in text.split("\n"):
        before, core, after = _EDGES.match(line).groups()  # type: ignore[union-attr]
        if not core:
            pieces.append(line)
            continue
        body = _inline(core)
        pieces.append(f"{before}:{directive}[{'~~' + body + '~~' if strike else body}]{after}")
    return "\n".join(pieces)


def word_diff_markdown(old: Any, new: Any) -> str:
    """The change from ``old`` to ``new`` word by word: removed words struck through on red,
    added words on green, the rest as is. Every piece of text is escaped."""
    a, b = value_text(old), value_text(new)
    old_tokens, new_tokens = _TOKEN.findall(a), _TOKEN.findall(b)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=old_tokens, b=new_tokens, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        removed, added = "".join(old_tokens[i1:i2]), "".join(new_tokens[j1:j2])
        if op == "equal":
            out.append(_inline(removed))
            continue
        if removed:
            out.append(_mark(removed, "red-background", strike=True))
            if not removed[-1].isspace() and added:
                out.append(" ")
        if added:
            out.append(_mark(added, "green-background", strike=False))
    return _keep_indent("  \n".join("".join(out).split("\n")))


def fmt_time(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def age(moment: datetime | None, now: datetime | None = None) -> str:
    """How long ago, in the largest unit that reads naturally ("3 h ago", "12 d ago")."""
    if moment is None:
        return "—"
    seconds = max(0.0, ((now or datetime.now(UTC)) - moment).total_seconds())
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


#: Material icons (shipped with Streamlit's fonts, unlike emoji) for the events of a history.
EVENT_ICON = {
    "created": ":material/note_add:",
    "proposed": ":material/edit_note:",
    "applied": ":material/done:",
    "reverted": ":material/undo:",
    "approved": ":green[:material/check_circle:]",
    "rejected": ":red[:material/cancel:]",
    "conflict": ":orange[:material/warning:]",
    "superseded": ":gray[:material/redo:]",
}


def dataframe_height(rows: int, *, max_rows: int = 20) -> int:
    """Pixels for a table that shows ``rows`` rows without an inner scrollbar (up to ``max_rows``)."""
    return 38 + 35 * max(1, min(rows, max_rows))


def highlighted_markdown(pieces: Any) -> str:
    """A raw log's text (``TextPiece``s) with its evidence spans on an orange background; every
    piece escaped, line breaks kept."""
    out = []
    for piece in pieces:
        if piece.attributes:
            out.append(_mark(piece.text, "orange-background", strike=False))
        else:
            out.append(_inline(piece.text))
    return _keep_indent("  \n".join("".join(out).replace("\r\n", "\n").split("\n")))


class _Piece(NamedTuple):
    """A stretch of a text, marked when ``attributes`` is not empty (as a review item's pieces)."""

    text: str
    attributes: tuple[str, ...] = ()


def highlighted_span_markdown(text: str, span: tuple[int, int] | None, attribute: str) -> str:
    """``text`` with the evidence ``span`` in it highlighted as a raw log's evidence is
    (``highlighted_markdown``): a late record's retirement quotes the newer note's words, which are
    in that note, not in the record's raw log. A span that does not fit the text marks nothing."""
    start, end = span if span is not None else (0, 0)
    if not 0 <= start < end <= len(text):
        return highlighted_markdown([_Piece(text)])
    return highlighted_markdown(
        [_Piece(text[:start]), _Piece(text[start:end], (attribute,)), _Piece(text[end:])]
    )
