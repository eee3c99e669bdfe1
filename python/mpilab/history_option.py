"""The --history option of the commands that write results files (bench, survey, compare),
apart from `mpilab history` itself: parsing it costs no import of the history's database
code."""

from __future__ import annotations

import os
from typing import Any

from mpilab import argtypes

#: the environment variable that makes `bench`, `survey` and `compare` add their results ("1": the
#: default history; anything else: that path)
ENV = "MPILAB_HISTORY"

__all__ = ["ENV", "add_option", "history_target"]


def _history_db(text: str) -> str:
    """--history DB: checked before the command measures (a run is not spent on a history
    that cannot take it): a name, and not something other than a regular file."""
    if not text:
        raise ValueError("an empty name (--history alone: the default history)")
    if text != "1" and os.path.exists(text):
        if not os.path.isfile(text):
            raise ValueError("not a regular file (a history is one SQLite file)")
        try:
            with open(text, "rb") as f:
                head = f.read(16)
        except OSError as e:
            raise ValueError(f"cannot read it ({e.strerror})") from None
        if head and head != b"SQLite format 3\x00":
            raise ValueError("not an SQLite database (not an mpilab history)")
    return text


def add_option(p: Any) -> None:
    """--history [DB] of a command that writes results files (bench, survey, compare)."""
    p.add_argument("--history", nargs="?", const="1", metavar="DB",
                   type=argtypes.wrap(_history_db, "history"),
                   help="add the results to the history (mpilab history; default database "
                        "$MPILAB_DATA_DIR/history.sqlite, or DB); also when $MPILAB_HISTORY is "
                        "set (1: the default database, else its path)")


def history_target(flag: str | None) -> str | None:
    """Where `bench`, `survey` and `compare` add their results: --history [PATH], else
    $MPILAB_HISTORY, else nowhere."""
    if flag is not None:
        return flag
    return os.environ.get(ENV) or None
