"""Which scopes a caller may read and add to: an agent token limited to some accounts, or an MCP
server started for some (``amem mcp --scope``).

One grant, checked by every interface an agent comes through (the HTTP API, the MCP server) on
every request, so a limit holds whichever door is used. A scope the caller names itself (to add to,
to search) it is told it may not use (PermissionDeniedError: 403); a note or an input it names by
id in a scope it may not use is answered as if it did not exist (NotFoundError: 404), so ids do not
tell a limited caller what other accounts hold.

A scope a caller names is read here once, as memory keeps an input's (stripped; an empty or
invisible one refused, naming ``scope``), and every interface passes on what the grant returns:
" acme" is acme's memory on every endpoint and tool, never "no filter" nor an account of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from amem.domain.models import scope_as_kept
from amem.domain.text import check_name, check_text, is_visible
from amem.errors import InvalidBatchInputError, InvalidInputError, NotFoundError, PermissionDeniedError

#: The longest scope: as an input's (amem/services/pipeline.py raw_log_from) and the interfaces'.
MAX_SCOPE_CHARS = 200


def named_scope(scope: object) -> str:
    """The scope a caller named, as memory keeps it: stripped, as an input's scope is stored. An
    empty or invisible one is refused, naming ``scope``: read as "no filter" it answered about every
    scope, and a change feed filtered on " acme" moved past every change of acme unseen."""
    if not isinstance(scope, str):
        raise InvalidInputError(f"scope must be text, got {type(scope).__name__}")
    check_text(scope, "scope")
    stripped = scope.strip()
    if not stripped:
        raise InvalidInputError("scope is empty: say whose memory (an account, a user)")
    if not is_visible(stripped):
        raise InvalidInputError("scope shows nothing (only spaces, zero-width or control characters)")
    if len(stripped) > MAX_SCOPE_CHARS:
        raise InvalidInputError(f"scope is longer than {MAX_SCOPE_CHARS} characters")
    return scope_as_kept(check_name(stripped, "scope"))


def granted_scope(scope: object) -> str:
    """A scope a grant is made for (``amem tokens create --scope``, ``amem mcp --scope``), exactly
    as agents' inputs keep it: no space at either end, else the grant would refuse the very account
    it was made for."""
    if not isinstance(scope, str):
        raise InvalidInputError(f"scope must be text, got {type(scope).__name__}")
    check_name(check_text(scope, f"scope {scope!r}"), f"scope {scope!r}")
    if not is_visible(scope) or len(scope) > MAX_SCOPE_CHARS or scope != scope.strip():
        raise InvalidInputError(
            f"scope {scope!r}: give a scope as agents send it, 1 to {MAX_SCOPE_CHARS} characters, "
            "with no space at either end"
        )
    return scope_as_kept(scope)


@dataclass(frozen=True)
class ScopeGrant:
    #: The scopes allowed, or None: every scope.
    scopes: frozenset[str] | None
    #: Who holds it, as a refusal names it ("token 'crm-sync'").
    holder: str = "this caller"

    @classmethod
    def of(cls, scopes: Iterable[str] | None, *, holder: str = "this caller") -> ScopeGrant:
        return cls(None if scopes is None else frozenset(scopes), holder)

    @classmethod
    def everything(cls) -> ScopeGrant:
        return cls(None)

    @property
    def limited(self) -> bool:
        return self.scopes is not None

    def allows(self, scope: str) -> bool:
        # add_note keeps a scope stripped: " acme" is acme's memory
        return self.scopes is None or scope_as_kept(scope) in self.scopes

    def require(self, scope: str) -> str:
        """``scope`` as memory keeps it (``named_scope``: InvalidInputError for an empty one), if the
        caller may use it; PermissionDeniedError otherwise. Every interface passes on what this
        returns, so no door reads " acme" one way and another door another."""
        named = named_scope(scope)
        if not self.allows(named):
            raise PermissionDeniedError(f"{self.holder} may not use scope {scope!r}: {self._reach()}")
        return named

    def named(self, scope: str | None) -> str | None:
        """``require`` for an optional filter: None stays None (every scope the question covers)."""
        return None if scope is None else self.require(scope)

    def require_all(self, scopes: Sequence[str]) -> list[str]:
        """As ``require``, for a batch: the scopes as memory keeps them, in order. A scope that is
        no scope (empty, invisible, two lines) is the input's mistake, said first as a single
        input's is (InvalidBatchInputError: 422, each named 1-based), before the grant is asked
        about the rest; then every refused input is named, nothing half-allowed."""
        named: list[str] = []
        wrong: list[tuple[int, str]] = []
        for position, scope in enumerate(scopes, start=1):
            try:
                named.append(named_scope(scope))
            except InvalidInputError as exc:
                wrong.append((position, str(exc)))
        if wrong:
            raise InvalidBatchInputError(wrong)
        refused = [(i, s) for i, s in enumerate(named, start=1) if not self.allows(s)]
        if refused:
            listed = "; ".join(f"input {i}: scope {s!r}" for i, s in refused[:20])
            more = f" and {len(refused) - 20} more" if len(refused) > 20 else ""
            raise PermissionDeniedError(
                f"{self.holder} may not use the scope of {len(refused)} input(s), so none was kept "
                f"({listed}{more}): {self._reach()}"
            )
        return named

    def require_visible(self, scope: str, not_found: str) -> None:
        """NotFoundError(``not_found``) unless the caller may use ``scope``: for something it named
        by id, which must not tell it the id exists elsewhere."""
        if not self.allows(scope):
            raise NotFoundError(not_found)

    def within(self, scope: str | None) -> list[str | None]:
        """The scopes a question about ``scope`` (None: every scope) covers for this caller: a
        limited caller asking about all asks about its own."""
        if scope is not None:
            return [self.require(scope)]
        return [None] if self.scopes is None else sorted(self.scopes)

    def narrowed(self, scope: str | None) -> list[str] | None:
        """``within`` as a filter of one query: the scopes covered, or None for every scope."""
        covered = self.within(scope)
        return None if covered == [None] else [s for s in covered if s is not None]

    def _reach(self) -> str:
        assert self.scopes is not None
        shown = ", ".join(repr(s) for s in sorted(self.scopes)[:10])
        more = f" and {len(self.scopes) - 10} more" if len(self.scopes) > 10 else ""
        return f"it is limited to {shown}{more}"
