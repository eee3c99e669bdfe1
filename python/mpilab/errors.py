"""The one error type every mpilab command turns into a one-line message."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


class MpilabError(Exception):
    """Bad input or a failed step. The message is one line, naming what and where
    (file:line for parsed files). The CLI prints it and exits non-zero."""


class AlreadyReported(MpilabError):
    """A step failed and has already said why in its own one line (a C tool refusing bad
    input inside a job, exit status 2): the CLI exits with `status` and adds nothing."""

    def __init__(self, status: int = 2) -> None:
        super().__init__("")
        self.status = status


def no_action(command: str) -> Callable[[object], int]:
    """The handler of a command group run without its action: one line, not the help."""

    def handler(_args: object) -> int:
        raise MpilabError(f"{command}: no action given (mpilab {command} --help lists them)")

    return handler


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose refusals are one line (`PROG: error: ...`, exit 2), not the
    usage text and the error: `mpilab` itself and the project's other entry points."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)
