"""How a long operation reports how far it is: a plain callback, so services never import a UI.

``progress(task, done, total)``: ``task`` names the step in a few words ("analysing raw logs"),
``done`` counts items finished so far, ``total`` the items expected (None when unknown). The CLI
turns the calls into a progress bar on a terminal and into occasional plain lines otherwise.

A task whose name starts with ``WAITING`` is a wait, not work: ``done`` and ``total`` are seconds
waited and the most it waits, and the name says what it waits on. Nothing moves while it lasts, so
the CLI says it at once rather than after its usual quiet spell.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, "int | None"], None]

#: How a wait's task name begins ("waiting up to 60 s for ...").
WAITING = "waiting "


def no_progress(task: str, done: int, total: int | None) -> None:
    """The default: report nothing."""
