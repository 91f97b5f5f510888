"""What text the ledger accepts, the same on SQLite and PostgreSQL.

PostgreSQL stores no NUL character (in text or in JSON) and no NaN or infinity in JSON; neither
backend can store a lone surrogate (what Python makes of bytes that are not UTF-8). SQLite would
take some of these, so both refuse them here, before anything is written, with a message naming
the field and the position. Machine output we only record (a model's answer, an error message) is
made storable instead (``storable``): it is evidence, not input, and must never fail a write.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from amem.errors import InvalidInputError

#: Characters that show nothing: format characters (zero-width space, joiners, bidi marks, BOM).
_INVISIBLE_CATEGORIES = {"Cf", "Cc", "Zs", "Zl", "Zp"}


#: What reorders or hides text without being seen, kept in the ledger as given (it is evidence) but
#: never shown as is: every format character (Unicode category Cf, which ``is_visible`` counts as
#: showing nothing): the bidirectional embeddings, overrides, isolates and marks (U+202A-202E,
#: U+2066-2069, U+200E, U+200F, U+061C: "Trojan Source", "$94" displayed as "$49"), the zero-width
#: space, word joiner, invisible operators and byte-order mark, the soft hyphen, the Mongolian
#: vowel separator, the tag characters (U+E0000-E007F, which spell a whole sentence no one sees),
#: and the line and paragraph separators. Two stay, as they reorder and hide nothing: the
#: zero-width joiner and non-joiner (emoji sequences, Persian and Indic script need them).
_KEPT_FORMAT = frozenset("\u200c\u200d")
_SEPARATORS = frozenset("\u2028\u2029")
#: A flag of a subdivision (England, Scotland, Wales): the black flag, a region's code in tag
#: letters and digits (3 to 6, UTS #51), the cancel tag. Shown as the flag it is; tag characters
#: in any other place are revealed.
_EMOJI_TAG_SEQUENCE = "\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{3,6}\U000e007f"
#: Only characters outside ASCII can hide text: an ASCII text is looked at no further.
_MAYBE_HIDDEN = re.compile(f"({_EMOJI_TAG_SEQUENCE})|[^\\x00-\\x7f]")


def _reveal(match: re.Match[str]) -> str:
    if match.group(1) is not None:  # a subdivision flag
        return match.group()
    char = match.group()
    if char in _SEPARATORS or (unicodedata.category(char) == "Cf" and char not in _KEPT_FORMAT):
        code = ord(char)
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


def revealed(text: str) -> str:
    """``text`` with each character that reorders or hides text written as its escape
    (``\\u202e``, ``\\U000e0041``), so a reviewer reads what the bytes say: the terminal and the
    console show text through this."""
    if text.isascii():
        return text
    return _MAYBE_HIDDEN.sub(_reveal, text)


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None."""
    for position, char in enumerate(value, start=1):
        code = ord(char)
        if code == 0:
            return f"character {position} is a NUL (U+0000), which the ledger cannot store"
        if 0xD800 <= code <= 0xDFFF:
            return (
                f"character {position} is a lone surrogate (U+{code:04X}): not valid Unicode text "
                "(was it decoded from bytes that are not UTF-8?)"
            )
    return None


def check_text(value: str, what: str) -> str:
    """``value`` if the ledger can store it; InvalidInputError naming ``what`` otherwise."""
    problem = text_problem(value)
    if problem:
        raise InvalidInputError(f"{what}: {problem}")
    return value


def check_name(value: str, what: str) -> str:
    """``value`` if it is a name on one line (a scope: printed in tables, typed after ``--scope``):
    no control character (a newline, a tab, an escape sequence that would repaint a terminal)."""
    for position, char in enumerate(value, start=1):
        if unicodedata.category(char) == "Cc":
            raise InvalidInputError(
                f"{what}: character {position} is a control character (U+{ord(char):04X}); "
                "a name is one line of visible text"
            )
    return value


def is_visible(value: str) -> bool:
    """True when ``value`` shows something: not only spaces, zero-width or control characters."""
    return any(unicodedata.category(c) not in _INVISIBLE_CATEGORIES and not c.isspace() for c in value)


#: How deep JSON (metadata, a value, a model's answer) may nest, objects and arrays inside each
#: other: deeper, what reads it back recursively (hashing, the ledger's JSON, an export, the HTTP
#: API's answer) would fail with RecursionError, after it was acknowledged. The one limit on input
#: JSON, the Python API's and the HTTP API's alike.
MAX_JSON_DEPTH = 100
#: What ``check_json`` says of JSON nested deeper than ``MAX_JSON_DEPTH``.
TOO_DEEP = (
    f"nested too deep (arrays and objects inside each other, more than {MAX_JSON_DEPTH} levels); "
    "send it flatter"
)


def check_json(value: Any, what: str) -> Any:
    """``value`` if every string and key in it can be stored, every number is finite and it nests
    at most ``MAX_JSON_DEPTH`` levels (refused as InvalidInputError, never RecursionError)."""
    _walk(value, what)
    return value


def json_problem(value: Any, where: str = "") -> str | None:
    """Why ``value`` (parsed JSON) cannot be stored, with the path to the bad part; or None."""
    try:
        _walk(value, where or "(the value)")
    except InvalidInputError as exc:
        return str(exc)
    return None


def _walk(value: Any, where: str, depth: int = 0) -> None:
    if isinstance(value, Mapping | list | tuple):
        depth += 1
        if depth > MAX_JSON_DEPTH:
            raise InvalidInputError(f"{_shortened(where)}: {TOO_DEEP}")
    if isinstance(value, str):
        check_text(value, where)
    elif isinstance(value, bool) or value is None or isinstance(value, int):
        return
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{where}: {value} is not a finite number, which JSON cannot hold")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_text(str(key), f"{where}: key {str(key).encode('unicode_escape').decode('ascii')!r}")
            _walk(item, f"{where}.{key}", depth)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _walk(item, f"{where}[{i}]", depth)


def _shortened(where: str, most: int = 80) -> str:
    """A path into JSON fit for a message: a path a hundred levels long shows its start and end."""
    return where if len(where) <= most else f"{where[: most // 2]}…{where[-most // 2 :]}"


def numbers_as_stored(value: Any) -> Any:
    """``value`` (parsed JSON: an object or array, as a raw log's metadata) with each number written
    as both ledgers give it back, so the digest its raw log's event commits to is the digest of
    what is stored, alike on SQLite and PostgreSQL. JSONB keeps a number as a decimal and gives back
    its digits: a float that Python writes with a positive exponent (1e+20, any float of 1e16 or
    more, always a whole number) comes back as that integer, its digits as written
    (1.2345678901234568e+17 as 123456789012345680), and -0.0 as 0.0. Hashed as given, an untouched
    ledger failed `amem verify` on PostgreSQL (and its export showed another value). The same
    number either way. (SQLite keeps an object or array as its JSON text, exactly; a number stored
    alone is read as a number: ``values.normalize`` gives a number attribute that form.) Metadata
    read back to be compared with a new input's (``queue_queries``: a retry, a re-import) is written
    so too: an input recorded before this (a float 1e23, which SQLite gives back as that float) is
    the same input as its retry, which carries the integer."""
    if isinstance(value, float):
        if value == 0.0:
            return 0.0
        written = repr(value)
        return int(Decimal(written)) if "e+" in written else value
    if isinstance(value, Mapping):
        return {key: numbers_as_stored(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [numbers_as_stored(item) for item in value]
    return value


def storable(value: str | None) -> str | None:
    """Recorded machine output (a model's answer, an error) with NUL and lone surrogates escaped as
    ``\\u0000`` / ``\\udc80``, so recording it never fails; everything else is kept as it was."""
    if value is None or text_problem(value) is None:
        return value
    return value.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode("utf-8")
