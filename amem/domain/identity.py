"""Identities: one canonical form, one namespace, so name variants cannot pass for someone else.

``Alice``, ``ALICE``, ``agent:alice`` and ``ａｌｉｃｅ`` (full-width) are all the identity ``alice``;
``alice`` followed by a zero-width space is refused rather than treated as another person. The kind
prefix (``agent:``, ``person:``, ``llm:``, ``system:``) says what acted, not who: an agent called
alice and the reviewer alice are one identity when a rule compares identities (self-approval, the
policy's agents and reviewers). A name carries at most one kind prefix: ``person:agent:alice`` is
refused, never read as someone (it was once the reviewer ``agent:alice`` to one check and ``alice``
to another). Every comparison of identities goes through this module.
"""

from __future__ import annotations

import unicodedata

from amem.errors import InvalidInputError

#: The kind prefixes of ``Actor.parse`` (amem.domain.models.ActorKind's values).
KIND_PREFIXES = ("agent", "person", "llm", "system")
MAX_IDENTITY_CHARS = 200

#: Unicode categories an identity never contains: control, format (zero-width characters, bidi
#: controls, the soft hyphen), surrogates, line and paragraph separators, private use, unassigned.
_REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"}


def split_kind(text: str) -> tuple[str | None, str]:
    """``"agent:sales-bot"`` -> ("agent", "sales-bot"); a bare name -> (None, name)."""
    kind, sep, rest = text.partition(":")
    if sep and kind.strip().casefold() in KIND_PREFIXES:
        return kind.strip().casefold(), rest
    return None, text


def canonical_identity(text: str, *, what: str = "identity", stored: bool = False) -> str:
    """The canonical form of a new identity (NFKC, case-folded, trimmed), without a kind prefix.

    Refuses what could make two names look alike but compare different: invisible and control
    characters, empty names, and a name still carrying a kind prefix once one is removed
    (``person:agent:alice``: ``identity_key`` removes every prefix, so the two would name different
    people). Raises InvalidInputError naming the character and its position, or the prefix.
    ``stored``: text the ledger already holds (an installed policy version), which must stay
    readable: a second prefix is kept in the name, as before it was refused.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be text, got {type(text).__name__}")
    for position, char in enumerate(text, start=1):
        category = unicodedata.category(char)
        if category in _REFUSED_CATEGORIES:
            name = unicodedata.name(char, "unnamed character")
            raise InvalidInputError(
                f"{what} {text.encode('unicode_escape').decode('ascii')!r}: character {position} "
                f"(U+{ord(char):04X} {name}) is invisible or a control character; not allowed in an identity"
            )
    name = unicodedata.normalize("NFKC", text).casefold().strip()
    _kind, name = split_kind(name)
    name = name.strip()
    nested, _rest = split_kind(name)
    if nested is not None and not stored:
        raise InvalidInputError(
            f"{what} {text.strip()!r} carries a second kind prefix ({nested}:): give a name with at most "
            "one (e.g. person:alice or agent:sales-bot)"
        )
    if not name:
        raise InvalidInputError(f"{what} is empty")
    if len(name) > MAX_IDENTITY_CHARS:
        raise InvalidInputError(f"{what} is longer than {MAX_IDENTITY_CHARS} characters")
    if any(c.isspace() and c != " " for c in name):
        raise InvalidInputError(f"{what} {name!r} contains a tab or line break")
    return name


def identity_key(text: str) -> str:
    """The key two identities are compared by. Never raises: for stored values, which may predate
    canonical identities, invisible and control characters are dropped rather than refused."""
    cleaned = "".join(c for c in str(text) if unicodedata.category(c) not in _REFUSED_CATEGORIES)
    name = unicodedata.normalize("NFKC", cleaned).casefold().strip()
    while True:
        kind, rest = split_kind(name)
        if kind is None:
            return name
        name = rest.strip()


def same_identity(a: str, b: str) -> bool:
    return identity_key(a) == identity_key(b)
