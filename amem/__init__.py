"""amem: an evolving, auditable memory store for AI agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from amem.domain.models import AddOutcome, NoteInput
    from amem.memory import Memory

__all__ = ["AddOutcome", "Memory", "NoteInput"]
__version__ = "0.1.0"

_LAZY = {"Memory": "amem.memory", "AddOutcome": "amem.domain.models", "NoteInput": "amem.domain.models"}


def __getattr__(name: str) -> Any:
    """``from amem import Memory`` imports the ledger stack only then: ``amem --help`` stays fast."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'amem' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module), name)
