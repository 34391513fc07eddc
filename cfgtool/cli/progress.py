"""A progress bar on stderr for long compiles: only on a terminal, only for text output, only after a second.

The compile library never prints (STYLE): it calls a `Progress` callback with (stage, done, total). This module turns
those calls into a rich progress bar. The bar is drawn by hand and removed when the compile ends. There is no refresh
thread: a compile forks a worker only when it is the only thread.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress

    from cfgtool.compile.compiler import Progress

DELAY_S = 1.0  # a compile that ends sooner shows nothing (CFGTOOL_PROGRESS_DELAY, in seconds, changes it)
REFRESH_S = 0.1  # at most ten redraws a second


class _Bar:
    """The callback: starts the rich bar once the compile has run for its delay. Then it redraws it at most every
    REFRESH_S, and at each new stage."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        try:
            self.delay = float(os.environ.get("CFGTOOL_PROGRESS_DELAY", DELAY_S))
        except ValueError:
            self.delay = DELAY_S
        self.shown: RichProgress | None = None
        self.task: object = None
        self.stage = ""
        self.drawn = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        new_stage = stage != self.stage
        if not new_stage and now - self.drawn < REFRESH_S:
            return
        if self.shown is None:
            if now - self.started < self.delay:
                return
            self.shown = _start()
            self.task = self.shown.add_task(stage, total=total or None)
        self.stage, self.drawn = stage, now
        self.shown.update(self.task, description=stage, completed=done, total=total or None)  # type: ignore[arg-type]
        self.shown.refresh()

    def close(self) -> None:
        if self.shown is not None:
            self.shown.stop()


def _start() -> RichProgress:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), auto_refresh=False, transient=True, redirect_stdout=False,
        redirect_stderr=False,
    )  # fmt: skip
    bar.start()
    return bar


@contextmanager
def terminal_progress(text_output: bool) -> Iterator[Progress | None]:
    """A progress callback when stderr is a terminal and the output is text for people. Else None."""
    if not (text_output and sys.stderr.isatty()):
        yield None
        return
    bar = _Bar()
    try:
        yield bar
    finally:
        bar.close()
