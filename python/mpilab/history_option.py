"""The --history option of the commands that write results files (bench, survey, compare),
apart from `mpilab history` itself: parsing it costs no import of the history's database
code."""

from __future__ import annotations

import os
from typing import Any

#: the environment variable that makes `bench`, `survey` and `compare` add their results ("1": the
#: default history; anything else: that path)
ENV = "MPILAB_HISTORY"

__all__ = ["ENV", "add_option", "history_target"]


def add_option(p: Any) -> None:
    """--history [DB] of a command that writes results files (bench, survey, compare)."""
    p.add_argument("--history", nargs="?", const="1", metavar="DB",
                   help="add the results to the history (mpilab history; default database "
                        "$MPILAB_DATA_DIR/history.sqlite, or DB); also when $MPILAB_HISTORY is "
                        "set (1: the default database, else its path)")


def history_target(flag: str | None) -> str | None:
    """Where `bench`, `survey` and `compare` add their results: --history [PATH], else
    $MPILAB_HISTORY, else nowhere."""
    if flag is not None:
        return flag
    return os.environ.get(ENV) or None
