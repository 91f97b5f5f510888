"""Progress of long commands (import, reprocess, reindex, verify, erase), from the services' callback.

On a terminal: a rich progress bar with counts and time left, on stderr. Otherwise (a pipe, a
log file, or ``--json``): a plain line on stderr at most every ``QUIET_EVERY_S`` seconds and one
when a step ends, so a short command prints nothing and standard output keeps only the result;
a wait (``WAITING``) is said as it begins, since nothing moves while it lasts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

from amem.cli.app import err
from amem.domain.progress import WAITING, Progress

#: Seconds between two plain progress lines; the first comes only after this long.
QUIET_EVERY_S = 10.0


class _Lines:
    """Plain lines for logs and pipes: "analysing raw logs: 640/1500 (43%)"."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.last_line = time.monotonic()
        self.shown: set[str] = set()
        self.ended: set[str] = set()

    def __call__(self, task: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        if task.startswith(WAITING):
            self._wait(task, done, now)
            return
        ended = total is not None and done >= total
        due = now - self.last_line >= QUIET_EVERY_S
        if task in self.ended or not (due or (ended and task in self.shown)):
            return
        self.last_line = now
        self.shown.add(task)
        if ended:
            self.ended.add(task)
        counts = f"{done:,}/{total:,}" if total is not None else f"{done:,}"
        share = f" ({100 * done // total}%)" if total else ""
        self.console.print(f"{task}: {counts}{share}", markup=False, highlight=False)

    def _wait(self, task: str, waited: int, now: float) -> None:
        """A wait is said when it begins (it names what it waits on), then how long so far at most
        every ``QUIET_EVERY_S``; its end is silent, the command's result follows."""
        if task not in self.shown:
            self.shown.add(task)
            self.last_line = now
            self.console.print(task, markup=False, highlight=False)
        elif now - self.last_line >= QUIET_EVERY_S:
            self.last_line = now
            self.console.print(f"{task}: {waited} s so far", markup=False, highlight=False)


class _Bar:
    """One rich task per step, created when the step first reports."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.tasks: dict[str, Any] = {}

    def __call__(self, task: str, done: int, total: int | None) -> None:
        if task not in self.tasks:
            self.tasks[task] = self.bar.add_task(task, total=total)
        self.bar.update(self.tasks[task], completed=done, total=total)


@contextmanager
def reporter(as_json: bool, console: Console | None = None) -> Iterator[Progress]:
    """The progress callback for a command: a bar on a terminal, quiet lines otherwise."""
    console = console or err
    if as_json or not console.is_terminal:
        yield _Lines(console)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import (
        Progress as RichProgress,
    )

    with RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        yield _Bar(bar)
