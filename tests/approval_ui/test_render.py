"""Rendering ledger data safely: escaping, autolinks, the word diff."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from amem.services.review import TextPiece
from approval_ui.render import highlighted_markdown, md_escape, value_text, word_diff_markdown
from tests.approval_ui.conftest import plain


def test_markup_is_escaped_and_reads_back_unchanged() -> None:
    hostile = "<script>alert(1)</script> [x](javascript:alert(1)) **b** `c` $x$ :red[y] # h"
    escaped = md_escape(hostile)
    assert not re.search(r"(?<!\\)[<>\[\]()*`$:#]", escaped)
    assert plain(escaped) == hostile


def test_bare_urls_and_addresses_do_not_become_links() -> None:
    escaped = md_escape("see https://evil.example, www.evil.example or ceo@evil.example")
    assert "https:" not in escaped and "www." not in escaped and "o@" not in escaped
    assert plain(escaped) == "see https://evil.example, www.evil.example or ceo@evil.example"


def test_newlines_become_hard_breaks() -> None:
    assert md_escape("a\nb") == "a  \nb"
    assert md_escape("a\nb", keep_newlines=False) == "a b"


def test_the_word_diff_marks_removed_and_added_words() -> None:
    diff = word_diff_markdown("Okta because IT says so.", "Okta because IT [mandates] it.")
    assert diff.startswith("Okta because IT ")
    assert ":red-background[~~says so\\.~~]" in diff
    assert ":green-background[\\[mandates\\] it\\.]" in diff


def test_values_read_as_text() -> None:
    assert value_text(["a", "b"]) == "• a\n• b"
    assert value_text([{"note_id": "n_1", "reason": "same deal"}]) == "→ n_1  (same deal)"
    assert value_text(None) == "" and value_text(True) == "true"


FORWARDED = (
    "Forwarded from Dana:\n\n    We need SSO (Okta); budget *approved*.\n"
    "\tNext step: send the quote.\n\nThanks!"
)


def test_an_indented_line_stays_text_with_its_highlight_and_indentation() -> None:
    """Four spaces or a tab before a line of a raw log (a quoted e-mail) made it a Markdown code
    block: the evidence lost its highlight and every escape showed as a backslash. The console's
    three renderings of text now keep such a line a paragraph, indented with no-break spaces."""
    commonmark = MarkdownIt("commonmark")
    start = FORWARDED.index("send the quote")
    pieces = [
        TextPiece(text=FORWARDED[:start]),
        TextPiece(text="send the quote", attributes=["next_step"]),
        TextPiece(text=FORWARDED[start + len("send the quote") :]),
    ]
    highlighted = highlighted_markdown(pieces)
    for markdown in (md_escape(FORWARDED), highlighted, word_diff_markdown("", FORWARDED)):
        html = commonmark.render(markdown)
        assert "<pre>" not in html and "<code>" not in html and "\\" not in html, html
        assert "We need SSO (Okta); budget *approved*." in html, html
    assert ":orange-background[send the quote]" in commonmark.render(highlighted)
    lines = md_escape(FORWARDED).split("\n")
    assert lines[2].startswith("\u00a0" * 4 + "We") and lines[3].startswith("\u00a0" * 4 + "Next")
    assert md_escape("a\n    \nb").split("\n")[1].strip(" ") == ""  # a blank line stays blank
