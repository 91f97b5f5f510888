"""Whether a scope is one the store knows, and which it may have meant: the one decision behind every
"did you mean ...?" (``amem pending``, ``amem export``, ``amem search`` and ``amem facts`` refuse an
unknown scope with it; the HTTP API answers it beside an empty answer, ``scope_unknown`` and
``did_you_mean``). A scope is known once an input was kept under it (a new account's inputs may wait
for review before its first note). Read from the scopes raw logs were kept under (``kept_scopes``, a
loose index scan: its cost grows with the scopes, never with the notes or the raw logs)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from amem.domain.models import same_scope, scope_as_kept
from amem.ledger import erasure_queries as q
from amem.ledger.store import Ledger

#: The most scopes a did-you-mean names.
SUGGESTIONS = 3


class ScopeHint(BaseModel):
    """What the HTTP API adds to an empty answer about a scope: whether the store never kept an
    input under it (a mistyped scope, or an account before its first input) and the scopes it may
    have meant."""

    scope_unknown: bool = Field(
        False,
        description="True when no input was ever kept under the scope asked about: a mistyped scope, "
        "or an account before its first input. The answer is empty then, not an error.",
    )
    did_you_mean: list[str] = Field(
        default_factory=list,
        description="With `scope_unknown`: the scopes the caller may use that it may have meant, the "
        "same name in another case first (scopes are kept as typed: 'Acme' and 'acme' are two).",
    )


class ScopeCheck(BaseModel):
    """``scope`` as memory keeps it, whether an input was ever kept under it, and if not the scopes
    it may have meant, and every scope kept (for a refusal to list)."""

    scope: str
    known: bool
    did_you_mean: list[str] = Field(default_factory=list)
    kept: list[str] = Field(default_factory=list)

    def hint(self) -> ScopeHint:
        return ScopeHint(scope_unknown=not self.known, did_you_mean=self.did_you_mean)


def suggestions(name: str, scopes: Sequence[str]) -> list[str]:
    """The scopes among ``scopes`` that ``name`` may mean: those it equals whatever its case first
    ("ACME" for an account kept as "Acme", which difflib alone finds too far), then those spelled
    alike."""
    same = same_scope(name, scopes)
    close = difflib.get_close_matches(name, scopes, n=SUGGESTIONS)
    return (same + [s for s in close if s not in same])[: max(SUGGESTIONS, len(same))]


def check_scope(ledger: Ledger, scope: str, visible: Callable[[str], bool] | None = None) -> ScopeCheck:
    """Whether an input was ever kept under ``scope`` (read as memory keeps it); if not, what it may
    mean among the scopes ``visible`` allows (None: every scope). One read of the scopes kept."""
    named = scope_as_kept(scope)
    with ledger.read() as tx:
        kept = q.kept_scopes(tx)
    shown = kept if visible is None else [s for s in kept if visible(s)]
    if named in kept:
        return ScopeCheck(scope=named, known=True, kept=shown)
    return ScopeCheck(scope=named, known=False, did_you_mean=suggestions(named, shown), kept=shown)
