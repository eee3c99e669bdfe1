"""A long stage's progress on any output: never silent for more than PERIOD seconds.

On a terminal the stage shows a rich spinner with its elapsed time and what it is doing;
on anything else (a log file, a pipe, CI) a background thread writes one plain line every
PERIOD seconds while the stage runs ("  validate: 12 s, merging 3 launches"), so a stage
that takes minutes is never mistaken for a hang. Quiet: nothing at all.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

PERIOD = 5.0  # seconds between two lines of a running stage on a non-terminal output


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
