"""argparse `type=` functions over the strict parsers of mpilab.units: an option's value is
parsed by the same grammar as everywhere else (no blanks, no Unicode digits, no nan/inf,
no '1_000'), and a bad value is argparse's one-line error naming the option."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

from mpilab import units

T = TypeVar("T")


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
integer = _wrap(units.parse_int, "integer")
real = _wrap(units.parse_real, "number")
duration = _wrap(units.parse_duration, "duration")


def _nonneg(v: int) -> int:
    if v < 0:
        raise ValueError("must not be negative")
    return v
