"""amem: an evolving, auditable memory store for AI agents."""

from amem.memory import Memory

__all__ = ["Memory"]
__version__ = "0.1.0"
