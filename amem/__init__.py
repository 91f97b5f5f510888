"""amem: an evolving, auditable memory store for AI agents."""

from amem.domain.models import AddOutcome, NoteInput
from amem.memory import Memory

__all__ = ["AddOutcome", "Memory", "NoteInput"]
__version__ = "0.1.0"
