"""argparse `type=` functions over the strict parsers of mpilab.units: an option's value is
parsed by the same grammar as everywhere else (no blanks, no Unicode digits, no nan/inf,
no '1_000'), and a bad value is argparse's one-line error naming the option."""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Callable
from typing import TypeVar

from mpilab import units

T = TypeVar("T")


def wrap(fn: Callable[[str], T], what: str) -> Callable[[str], T]:
    """An argparse type from a parser that raises ValueError (its message names the
    problem; argparse's one line names the option)."""
    return _wrap(fn, what)


def _wrap(fn: Callable[[str], T], what: str) -> Callable[[str], T]:
    def parse(text: str) -> T:
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    parse.__name__ = what
    return parse


count = _wrap(lambda t: _nonneg(units.parse_int(t)), "count")
"""A non-negative integer (ranks, rails, flows): '4'; not '٤', ' 4', '4.0', '1e3'."""
positive = _wrap(lambda t: _positive(units.parse_int(t)), "positive count")
"""An integer of at least 1 (ranks, repetitions): checked before any environment is touched."""
lanes = _wrap(lambda t: t if t in ("opt", "all") else str(_lanes(t)), "lanes")
"""A lane count of at least 1, or 'opt' or 'all'."""
integer = _wrap(units.parse_int, "integer")
real = _wrap(units.parse_real, "number")
duration = _wrap(units.parse_duration, "duration")
seconds = _wrap(lambda t: _limit(units.parse_real(t)), "seconds")
"""A time limit in seconds, above 0 and at most MAX_SECONDS: '900', '0.5'; not '-1', '0',
'nan', '1e30'."""
tolerance = _wrap(lambda t: _tolerance(units.parse_real(t)), "tolerance")
"""A relative error allowed, 0 <= x <= 10 (0.1 = 10%): not '-0.5', '1e30'."""
fraction = _wrap(lambda t: _fraction(units.parse_real(t)), "fraction")
"""A share 0 <= x < 1 (a minimum effect size): '0.05'; not '-1', '1'."""


MAX_SECONDS = 1e7
"""The longest time limit an option takes (about 116 days): beyond it a number is a typo, and
the clocks' and the OS's waits overflow long before 1e30."""


def _limit(v: float) -> float:
    if not 0 < v <= MAX_SECONDS:
        raise ValueError(f"need 0 < seconds <= {MAX_SECONDS:g}")
    return v


def _prefix(t: str) -> str:
    from mpilab.testbed.spec import PREFIX_RE

    if not PREFIX_RE.match(t):
        raise ValueError("must be 1-6 characters a-z0-9, starting with a letter")
    return t


testbed_prefix = _wrap(_prefix, "testbed prefix")
"""A testbed's name prefix as `testbed up` takes it: 1-6 characters a-z0-9, starting with a
letter; a name no testbed can have is refused as such, not looked up."""


def _tolerance(v: float) -> float:
    if not 0 <= v <= 10:
        raise ValueError("need a relative error 0 <= x <= 10 (0.1 = 10%)")
    return v


def nonempty(t: str) -> str:
    """A word that must not be empty (an argument passed on to another program)."""
    if not t:
        raise argparse.ArgumentTypeError("'': must not be empty")
    return t


def out_dir(t: str) -> str:
    """A directory a command creates or reuses: empty, a path through a file, or an
    existing file that is not a directory (/dev/null, a FIFO) is refused at parse time."""
    if not t:
        raise argparse.ArgumentTypeError("'': expected a directory")
    p = os.path.abspath(t)
    at = p
    while not os.path.lexists(at):
        at = os.path.dirname(at)
    try:
        mode = os.stat(at).st_mode
    except OSError as e:
        raise argparse.ArgumentTypeError(f"{t!r}: {e.strerror}") from None
    if not stat.S_ISDIR(mode):
        what = "" if at == p else f" ({at} is not a directory)"
        raise argparse.ArgumentTypeError(f"{t!r}: not a directory{what}")
    return t


def _above_zero(v: float) -> float:
    if not v > 0:
        raise ValueError("must be above 0")
    return v


def _fraction(v: float) -> float:
    if not 0 <= v < 1:
        raise ValueError("need 0 <= x < 1")
    return v


def _nonneg(v: int) -> int:
    if v < 0:
        raise ValueError("must not be negative")
    return v


def _positive(v: int) -> int:
    if v < 1:
        raise ValueError("must be at least 1")
    return v


def _lanes(t: str) -> int:
    try:
        return _positive(units.parse_int(t))
    except ValueError as e:
        raise ValueError(f"{e}: expected a lane count of at least 1, opt or all") from None


def _runner_sizes(t: str) -> str:
    """mpilab-bench's --sizes: a size list (units.parse_size_list) or auto:MIN:MAX[:BUDGET];
    the runner checks the rest of its own rules."""
    if t.startswith("auto:"):
        parts = t.split(":")[1:]
        if len(parts) not in (2, 3):
            raise ValueError("expected auto:MIN:MAX[:BUDGET]")
        lo, hi = units.parse_size(parts[0]), units.parse_size(parts[1])
        if lo > hi:
            raise ValueError(f"MIN {lo} above MAX {hi}")
        if len(parts) == 3:
            _positive(units.parse_int(parts[2]))
        return t
    units.parse_size_list(t)
    return t


def _rank_counts(t: str) -> list[int]:
    counts = [_positive(units.parse_int(x)) for x in t.split(",")]
    return counts


runner_sizes = _wrap(_runner_sizes, "sizes")
"""Message sizes in the runner's syntax, checked before anything runs: '0,4K,1:64K:x4',
'auto:1:1M'; not '', 'abc', '-1'."""
rank_counts = _wrap(_rank_counts, "rank counts")
"""A comma list of rank counts of at least 1: '1,2,4'."""
