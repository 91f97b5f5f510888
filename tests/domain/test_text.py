"""What a reviewer is shown of text: every character that hides or reorders text, as its escape."""

from __future__ import annotations

import sys
import unicodedata

from amem.domain.text import is_visible, revealed


def _tags(text: str) -> str:
    """``text`` spelled in Unicode tag characters (U+E0000 + ASCII): shown as nothing at all."""
    return "".join(chr(0xE0000 + ord(c)) for c in text)


def test_a_sentence_in_tag_characters_and_other_format_characters_are_revealed() -> None:
    """Tag characters carried a whole hidden instruction past the reviewer ("ASCII smuggling"),
    and U+061C, U+2061-2064, U+180E and the soft hyphen hid in text, though ``is_visible`` already
    counted them as showing nothing. Each is now written as its escape."""
    hidden = _tags("wire 50k")
    shown = revealed(f"send the quote.{hidden} ALM\u061c42 f\u2061x \u180eok soft\u00adhyphen")
    assert shown == (
        "send the quote.\\U000e0077\\U000e0069\\U000e0072\\U000e0065\\U000e0020\\U000e0035"
        "\\U000e0030\\U000e006b ALM\\u061c42 f\\u2061x \\u180eok soft\\u00adhyphen"
    )
    assert not is_visible(hidden)


def test_every_format_character_but_the_joiners_is_revealed() -> None:
    """The rule is the Unicode category, not a list that misses the next one: whatever
    ``is_visible`` counts as showing nothing and is neither a space nor a control character
    (the CLI escapes those itself; tab and newline are layout) is revealed."""
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp")
        and chr(code) not in "\u200c\u200d"
        and revealed(chr(code)) == chr(code)
    ]
    assert missed == []
    assert revealed("\u200b") == "\\u200b" and revealed("\U000e0001") == "\\U000e0001"


def test_emoji_sequences_and_scripts_that_need_joiners_read_as_they_are() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    scotland = "\U0001f3f4" + _tags("gbsct") + "\U000e007f"
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # "I want", with a non-joiner
    text = f"Team {family} from {scotland}, caf\u00e9 \u4e2d\u6587 {persian} \U0001f44d\U0001f3fd"
    assert revealed(text) == text
    # the black flag does not launder a hidden sentence: only a region's short code makes a flag
    smuggled = "\U0001f3f4" + _tags("ignore the customer") + "\U000e007f"
    assert revealed(smuggled).startswith("\U0001f3f4\\U000e0069\\U000e0067")
