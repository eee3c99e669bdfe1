"""Stand-in for the report core's unit formatter (mpilab.report.units) until that module is
on this branch; iplot imports the real one when it exists. Same three functions, same
output for the common cases."""

from __future__ import annotations

import math


def _sig3(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def fmt_value(v: float | None, unit: str) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    if unit == "s":
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
            if abs(v) >= scale:
                return f"{_sig3(v / scale)} {name}"
        return f"{_sig3(v / 1e-9)} ns" if v else "0 s"
    if unit == "B/s":
        return f"{_sig3(v / 1e6)} MB/s"
    if unit == "B":
        for name, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if abs(v) >= f:
                q = v / f
                return f"{int(q)} {name}" if q == int(q) else f"{_sig3(q)} {name}"
        return f"{v:.0f} B"
    if unit == "fraction":
        return f"{_sig3(v * 100)} %"
    if unit in ("ranks", "count"):
        return str(int(v)) if v == int(v) else _sig3(v)
    return _sig3(v) if not unit else f"{_sig3(v)} {unit}"


def fmt_ci(lo: float | None, hi: float | None, unit: str) -> str:
    return f"{fmt_value(lo, unit)} .. {fmt_value(hi, unit)}"


def axis_scale(values: list[float], unit: str) -> tuple[float, str]:
    vals = sorted(abs(v) for v in values if math.isfinite(v) and v != 0)
    mid = vals[len(vals) // 2] if vals else 0.0
    if unit == "s":
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
            if mid >= scale:
                return scale, name
        return (1e-9, "ns") if mid else (1e-6, "us")
    if unit == "B/s":
        return (1e9, "GB/s") if mid >= 1e10 else (1e6, "MB/s")
    if unit == "fraction":
        return 0.01, "%"
    return 1.0, unit
