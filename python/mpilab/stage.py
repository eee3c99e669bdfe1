"""A long stage's progress on any output: never silent for more than PERIOD seconds.

On a terminal the stage shows a rich spinner with its elapsed time and what it is doing;
on anything else (a log file, a pipe, CI) a background thread writes one plain line every
PERIOD seconds while the stage runs ("  validate: 12 s, merging 3 launches"), so a stage
that takes minutes is never mistaken for a hang. Quiet: nothing at all.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from rich.console import Console

PERIOD = 5.0  # seconds between two lines of a running stage on a non-terminal output
PERIOD_ENV = "MPILAB_PROGRESS_S"  # another period (seconds, > 0), e.g. for tests


class Stage:
    """`with Stage(console, "validate") as st: st.note("reading ...")`. `console` is a
    rich Console (its `quiet` and `is_terminal` decide the form); `spinner=False` when the
    caller draws its own progress on a terminal (the plain lines still appear elsewhere)."""

    def __init__(self, console: Any, name: str, period: float = PERIOD,
                 spinner: bool = True) -> None:
        self.console = console
        self.name = name
        self.period = period
        self.what = ""
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._status: Any = None
        self._spinner = spinner

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def note(self, what: str) -> None:
        """What the stage is doing now (shown with the next line or at once on a terminal)."""
        self.what = what
        if self._status is not None:
            self._status.update(f"[bold]{self.name}[/]: {what}")

    def _line(self) -> str:
        return f"  {self.name}: {self.elapsed():.0f} s" + (f", {self.what}" if self.what else "")

    def _beat(self) -> None:
        while not self._stop.wait(self.period):
            self.console.print(self._line(), markup=False, highlight=False)

    def __enter__(self) -> Stage:
        self.t0 = time.monotonic()
        if self.console.quiet:
            return self
        if self.console.is_terminal:
            if self._spinner:
                self._status = self.console.status(f"[bold]{self.name}[/]: {self.what}")
                self._status.__enter__()
        else:
            self._thread = threading.Thread(target=self._beat, name=f"stage-{self.name}",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._status is not None:
            self._status.__exit__(et, ev, tb)


def period() -> float:
    """Seconds between two progress lines: $MPILAB_PROGRESS_S when it is a positive number,
    else PERIOD."""
    try:
        v = float(os.environ.get(PERIOD_ENV, ""))
    except ValueError:
        return PERIOD
    return v if 0 < v < float("inf") else PERIOD


@contextlib.contextmanager
def command(name: str, quiet: bool = False) -> Iterator[Stage]:
    """The progress of one whole command on standard error (mpilab.cli wraps the long-running
    commands in it): a spinner when standard error and standard output are both a terminal,
    a plain line every period() seconds when standard error is not one, nothing when quiet.
    Standard output is never written to."""
    console = Console(stderr=True, quiet=quiet)
    # rich's live display redirects standard output into its console (standard error): only
    # when both are the same terminal
    spinner = console.is_terminal and sys.stdout.isatty()
    with Stage(console, name, period(), spinner=spinner) as st:
        yield st
