"""The caches of texts a process keeps, and how it empties them after an erasure.

The offline analyst's readings and the answer checks' of raw logs are cached by text, so an erased
input's text can outlive its erasure in the memory of any process that read it: the eraser's, and
every worker or server open on the same ledger. The eraser empties its own at once; the others
notice the erasure in the check a catch-up reads first (``LedgerCheck.erasures``, one query they
already make) and empty theirs before their next search or analysis goes on.
"""

from __future__ import annotations

import sys

#: Caches of texts in this process (module, function): the offline analyst's readings and the
#: answer checks' of raw logs, which can hold an erased input's text after its erasure.
TEXT_CACHES = (
    ("amem.llm.offline.text", "_readable_cached"),
    ("amem.llm.offline.contradictions", "facts"),
    ("amem.llm.offline.restatements", "values"),
    ("amem.services.answer_checks", "_injection_runs"),
    ("amem.services.answer_checks", "_payloads"),
)


def forget_texts() -> int:
    """Empty this process's caches of texts (``TEXT_CACHES``, those of modules it has loaded);
    returns how many entries they held. Modules not loaded are not imported for it."""
    held = 0
    for module_name, function in TEXT_CACHES:
        module = sys.modules.get(module_name)
        cached = getattr(module, function, None) if module is not None else None
        if cached is not None:
            held += cached.cache_info().currsize
            cached.cache_clear()
    return held
