"""The offline analyst: amem's two tasks with local rules and statistics, one module per skill."""

from amem.llm.offline.analyst import MODEL, PROMPT_VERSION, OfflineAnalyst

__all__ = ["MODEL", "PROMPT_VERSION", "OfflineAnalyst"]
