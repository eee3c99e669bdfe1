"""Strict parsers, one per notion: integers, reals, sizes (and counts), size lists,
durations, rates and points in time. The grammar is the C library's (include/mpilab/parse.h);
both are tested against tests/data/parse_cases.json.

Common rules: the whole text is the value; ASCII only (no Unicode digits), no blanks
anywhere (so no " -5"), no hexadecimal, no nan/inf, no digit separators. Every parser
raises ValueError with a short reason (no trailing period, no newline); callers prefix the
option or file:line. Numbers (from TOML files) are accepted where a plain number has a
meaning: sizes (int), durations and rates (int or float, finite); never bool.
"""

from __future__ import annotations

import datetime as _dt
import math
import re

_INT = re.compile(r"-?[0-9]+", re.ASCII)
_REAL = r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_REAL_RE = re.compile(_REAL, re.ASCII)
_SIZE_RE = re.compile(r"([0-9]+)([KkMmGg]?)B?", re.ASCII)
_DURATION_RE = re.compile(rf"({_REAL})(ns|us|ms|s)?", re.ASCII)
_RATE_RE = re.compile(rf"({_REAL})([A-Za-z]+)", re.ASCII)
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)

SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
"""Binary size suffixes: K = 1024, M = 1024^2, G = 1024^3."""
DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
RATE_UNITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}
"""Decimal rate units in bit/s (case-insensitive): 1 kbit = 1000 bit/s."""
SIZE_MAX = (1 << 64) - 1


def _finite(v: float, what: str) -> float:
    if not math.isfinite(v):
        raise ValueError(f"not {what} (out of range)")
    return v


def parse_int(text: str) -> int:
    """'-7' -> -7: an optional minus and ASCII digits."""
    if not isinstance(text, str) or not _INT.fullmatch(text):
        raise ValueError("not an integer")
    v = int(text)
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("not an integer (out of range)")
    return v


def parse_real(text: str) -> float:
    """'2.5', '-1e-3', '.5' -> float; finite."""
    if not isinstance(text, str) or not _REAL_RE.fullmatch(text):
        raise ValueError("not a number")
    return _finite(float(text), "a number")


def parse_size(value: str | int) -> int:
    """'4K' / '64M' / '1GB' / 100 -> bytes (K, M, G are powers of 1024; optional B).
    Non-negative; callers that need a positive size check that themselves."""
    if isinstance(value, bool):
        raise ValueError("not a size")
    if isinstance(value, int):
        v = value
    elif isinstance(value, str):
        m = _SIZE_RE.fullmatch(value)
        if not m:
            raise ValueError("not a size (use e.g. 256K, 64M)")
        v = int(m.group(1)) * SIZE_UNITS[m.group(2).lower()]
    else:
        raise ValueError("not a size")
    if v < 0:
        raise ValueError("size must not be negative")
    if v > SIZE_MAX:
        raise ValueError("size too large")
    return v


def parse_duration(value: str | int | float) -> float:
    """'5ms' / '0.2s' / '2' / 0.005 -> seconds (units ns, us, ms, s; none = s)."""
    if isinstance(value, bool):
        raise ValueError("not a duration")
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        m = _DURATION_RE.fullmatch(value)
        if not m:
            raise ValueError("not a duration (use e.g. 5ms, 0.2s)")
        v = float(m.group(1)) * DURATION_UNITS[m.group(2) or "s"]
    else:
        raise ValueError("not a duration")
    _finite(v, "a duration")
    if v < 0:
        raise ValueError("duration must not be negative")
    return v + 0.0  # no -0.0


def parse_rate(value: str | int | float) -> float:
    """'100Mbit' / '1Gbit' / 5e7 (bit/s) -> bit/s; a string needs a unit."""
    if isinstance(value, bool):
        raise ValueError("not a rate")
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        m = _RATE_RE.fullmatch(value)
        if not m or m.group(2).lower() not in RATE_UNITS:
            raise ValueError("not a rate (use e.g. 100Mbit, 1Gbit)")
        v = float(m.group(1)) * RATE_UNITS[m.group(2).lower()]
    else:
        raise ValueError("not a rate")
    _finite(v, "a rate")
    if v < 0:
        raise ValueError("rate must be positive")
    return v + 0.0


def _size_item(it: str, out: list[int], max_count: int) -> None:
    def push(x: int) -> None:
        if len(out) >= max_count:
            raise ValueError(f"too many sizes (more than {max_count})")
        out.append(x)

    parts = it.split(":")
    if len(parts) == 1:
        try:
            push(parse_size(it))
        except ValueError:
            raise ValueError(f"bad size '{it}' (want a non-negative number, "
                             "optional K/M/G)") from None
        return
    if len(parts) != 3:
        raise ValueError(f"bad size range '{it}' (want A:B:STEP or A:B:xF)")
    try:
        a, b = parse_size(parts[0]), parse_size(parts[1])
    except ValueError:
        raise ValueError(f"bad size range '{it}' (bounds must be non-negative sizes)") from None
    if a > b:
        raise ValueError(f"bad size range '{it}' (start above end)")
    step = parts[2]
    if step[:1] in ("x", "X"):
        try:
            f = parse_int(step[1:])
        except ValueError:
            f = 0
        if f < 2:
            raise ValueError(f"bad size range '{it}' (factor must be an integer >= 2)")
        if a == 0:
            push(0)
            a = 1
        x = a
        while x <= b:
            push(x)
            x *= f
        return
    try:
        s = parse_size(step)
    except ValueError:
        s = 0
    if s == 0:
        raise ValueError(f"bad size range '{it}' (step must be a positive size)")
    for x in range(a, b + 1, s):
        push(x)


def parse_size_list(text: str, max_count: int = 100000) -> list[int]:
    """'0,4K,1:64K:x4,0:1K:256' -> sorted sizes without duplicates: sizes, linear ranges
    A:B:STEP and geometric ranges A:B:xF (F >= 2; A == 0 gives 0 and continues from 1)."""
    if not text:
        raise ValueError("empty size list")
    items = text.split(",")
    if any(not x for x in items):
        raise ValueError(f"empty item in size list '{text}'")
    out: list[int] = []
    for it in items:
        _size_item(it, out, max_count)
    return sorted(set(out))


def parse_instant(text: str) -> float:
    """A point in time -> seconds since 1970 (UTC): ISO 8601 with a time zone
    ('2026-11-21T12:00:00Z', '...+01:00') or '@EPOCH' (positive seconds)."""
    if text.startswith("@"):
        try:
            epoch = parse_real(text[1:])
        except ValueError:
            raise ValueError("not a time (@EPOCH needs seconds since 1970, e.g. "
                             "@1795000000)") from None
        if epoch <= 0:
            raise ValueError("not a time (@EPOCH must be positive)")
        return epoch
    if not text.isascii() or not _DATE_RE.match(text):
        raise ValueError("not a time (ISO 8601 with a time zone, or @EPOCH)")
    try:
        d = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("not an ISO 8601 time (e.g. 2026-11-21T12:00:00Z)") from None
    if d.tzinfo is None:
        raise ValueError("no time zone (add Z for UTC, or +HH:MM)")
    return d.timestamp()


def is_instant(text: str) -> bool:
    """True if text looks like an absolute time (parse_instant), not a duration."""
    return text.startswith("@") or bool(_DATE_RE.match(text))
