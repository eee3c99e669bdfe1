"""The one unit formatter of every report (tables, summary, hover text, axes).

Values arrive in SI base units (seconds, bytes, bytes per second, fractions) and leave as
engineering units with three significant digits: "3.52 us", "1.20 ms", "1234 MB/s" (decimal
MB, as network rates are quoted), "64 KiB" (binary sizes, as message sizes are chosen),
"42.0 %". A value that is missing or not finite is "-".
"""

from __future__ import annotations

import math

DASH = "-"

# The rule for every value a person reads (docs/report.md, "Values that cannot be right"):
# a quantity that cannot be below 0 (a time, a rate, a size) is never shown as a negative
# value, and an interval that says nothing about where a repeat would land, wider than a
# decade (hi / lo > 10) or, for a quantity that must be positive (a time, a rate), reaching
# 0 or below, is shown as UNDETERMINED. Callers put the flag beside it (flags_for).
NONNEG_UNITS = frozenset({"s", "B/s", "B", "ns/B"})
POSITIVE_UNITS = frozenset({"s", "B/s", "ns/B"})
DECADE = 10.0
UNDETERMINED = "undetermined"
IMPOSSIBLE = "impossible (< 0)"
FLAG_NEGATIVE = "negative"
FLAG_UNDETERMINED = "ci_undetermined"

_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


def _finite(v: float | None) -> bool:
    return v is not None and not isinstance(v, bool) and math.isfinite(v)


def _sig3(x: float) -> str:
    """Three significant digits, no exponent for 0.001 <= |x| < 10000, trailing digits kept
    (3.50, not 3.5: the reader sees the precision)."""
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{x:.0f}"
    digits = 2 - int(math.floor(math.log10(a)))
    s = f"{x:.{max(digits, 0)}f}"
    # rounding may have carried into one more digit (999.6 -> 1000, 9.996 -> 10.00)
    if len(s.replace("-", "").replace(".", "").lstrip("0")) > 3 and "." in s:
        s = s[:-1].rstrip(".")
    return s


def impossible(v: float | None, unit: str) -> bool:
    """A value below 0 of a quantity that cannot be negative."""
    return _finite(v) and unit in NONNEG_UNITS and v < 0  # type: ignore[operator]


def undetermined(lo: float | None, hi: float | None, unit: str) -> bool:
    """An interval wider than a decade (hi / lo > DECADE), or reaching 0 or below for a
    quantity that must be positive: it does not determine the value."""
    if not (_finite(lo) and _finite(hi)):
        return False
    assert lo is not None and hi is not None
    if lo <= 0:
        return unit in POSITIVE_UNITS
    return hi > DECADE * lo * (1 + 1e-9)  # a decade exactly (up to rounding) still holds


def flags_for(v: float | None, lo: float | None, hi: float | None, unit: str) -> list[str]:
    """The flags the rule puts beside a value and its interval: FLAG_NEGATIVE for an
    impossible value, FLAG_UNDETERMINED for an interval that determines nothing."""
    out = []
    if impossible(v, unit):
        out.append(FLAG_NEGATIVE)
    if undetermined(lo, hi, unit):
        out.append(FLAG_UNDETERMINED)
    return out


def sig3(x: float) -> str:
    """Three significant digits (see _sig3): a value in a unit chosen by the caller."""
    return _sig3(x)


def time_unit(seconds: float) -> tuple[float, str]:
    """(scale, name) of the engineering unit for this magnitude: value / scale is shown."""
    a = abs(seconds)
    for scale, name in _TIME_UNITS:
        if a >= scale * 0.9995:
            return scale, name
    return 1e-9, "ns"


def fmt_time(seconds: float | None) -> str:
    """3.52e-6 -> "3.52 us"; 0 -> "0 s"; None/nan -> "-"; below 0 IMPOSSIBLE (a duration
    cannot be negative: the caller flags it)."""
    if not _finite(seconds):
        return DASH
    assert seconds is not None
    if seconds < 0:
        return IMPOSSIBLE
    if seconds == 0:
        return "0 s"
    scale, name = time_unit(seconds)
    return f"{_sig3(seconds / scale)} {name}"


def fmt_rate(bytes_per_s: float | None) -> str:
    """Bytes per second in decimal MB/s (GB/s from 10 GB/s, kB/s below 1 MB/s); below 0
    IMPOSSIBLE."""
    if not _finite(bytes_per_s):
        return DASH
    assert bytes_per_s is not None
    if bytes_per_s < 0:
        return IMPOSSIBLE
    a = abs(bytes_per_s)
    if a >= 1e10:
        return f"{_sig3(bytes_per_s / 1e9)} GB/s"
    if a >= 1e6 or a == 0:
        return f"{_sig3(bytes_per_s / 1e6)} MB/s"
    return f"{_sig3(bytes_per_s / 1e3)} kB/s"


def fmt_bytes(n: float | None) -> str:
    """Message sizes in binary units: 0 -> "0 B", 4096 -> "4 KiB", 12288 -> "12 KiB",
    1000 -> "1000 B", 1.5 MiB -> "1.50 MiB"."""
    if not _finite(n):
        return DASH
    assert n is not None
    for name, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= f:
            q = n / f
            return f"{int(q)} {name}" if q == int(q) else f"{_sig3(q)} {name}"
    return f"{n:.0f} B" if n == int(n) else f"{_sig3(n)} B"


def fmt_size_short(n: float) -> str:
    """The compact size of labels and file names: 4096 -> "4K", 1048576 -> "1M", 1000 ->
    "1000" (exact multiples only; the multilane page uses it)."""
    for unit, f in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{int(n // f)}{unit}"
    return f"{int(n)}"


def fmt_percent(fraction: float | None) -> str:
    """0.423 -> "42.3 %"."""
    if not _finite(fraction):
        return DASH
    assert fraction is not None
    return f"{_sig3(fraction * 100)} %"


def fmt_count(v: float | None) -> str:
    """Ranks, repetitions: integers stay integers ("4", not "4.0")."""
    if not _finite(v):
        return DASH
    assert v is not None
    return str(int(v)) if v == int(v) else _sig3(v)


def fmt_plain(v: float | None) -> str:
    """A number without a unit (messages per second, efficiency), 3 significant digits; the
    large ones with a k/M/G suffix."""
    if not _finite(v):
        return DASH
    assert v is not None
    a = abs(v)
    for scale, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if a >= scale:
            return f"{_sig3(v / scale)}{suffix}"
    return _sig3(v)


_BY_UNIT = {"s": fmt_time, "B/s": fmt_rate, "B": fmt_bytes, "fraction": fmt_percent,
            "%": fmt_percent, "ranks": fmt_count, "count": fmt_count, "": fmt_plain}


def fmt_value(v: float | None, unit: str) -> str:
    """Dispatch on the unit name ("s", "B/s", "B", "fraction", "ranks", ""); an unknown unit
    is appended to the plain number. A negative time, rate or size is IMPOSSIBLE, never a
    value."""
    if impossible(v, unit):
        return IMPOSSIBLE
    f = _BY_UNIT.get(unit)
    if f is not None:
        return f(v)
    s = fmt_plain(v)
    return s if s == DASH else f"{s} {unit}"


def fmt_ci(lo: float | None, hi: float | None, unit: str) -> str:
    """An interval in the unit of its value: "3.41 .. 3.62 us" shares the unit when both
    ends have the same one; UNDETERMINED when it is wider than a decade or reaches 0 for a
    positive quantity (undetermined())."""
    if not (_finite(lo) and _finite(hi)):
        return DASH
    if undetermined(lo, hi, unit):
        return UNDETERMINED
    a, b = fmt_value(lo, unit), fmt_value(hi, unit)
    ua, ub = a.rpartition(" ")[2], b.rpartition(" ")[2]
    if " " in a and ua == ub:
        return f"{a.rpartition(' ')[0]} .. {b}"
    return f"{a} .. {b}"


def axis_scale(values: list[float], unit: str) -> tuple[float, str]:
    """One display unit for a whole axis (plotly ticks read naturally in us or MB/s):
    (divide by this, unit label). Chosen from the median magnitude of the finite values."""
    vals = sorted(abs(v) for v in values if _finite(v) and v != 0)
    mid = vals[len(vals) // 2] if vals else 0.0
    if unit == "s":
        scale, name = time_unit(mid) if mid else (1e-6, "us")
        return scale, name
    if unit == "B/s":
        return (1e9, "GB/s") if mid >= 1e10 else (1e6, "MB/s")
    if unit == "msg/s":
        return next(((k, f"{pre} msg/s") for k, pre in ((1e9, "G"), (1e6, "M"), (1e3, "k"))
                     if mid >= k), (1.0, "msg/s"))
    if unit == "fraction":
        return 0.01, "%"
    if unit == "B":
        return 1.0, "B"
    return 1.0, unit
