"""Tables of the reports: cells that know their sort key and their flags.

A flagged cell (or row) is rendered with class "flagged" and a title naming the flags; the
template collapses tables longer than COLLAPSE_ROWS into a <details> element, and the page's
one small script makes every table sortable (click a header) and filterable."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from mpilab.report import units

COLLAPSE_ROWS = 25


@dataclass
class Cell:
    text: str
    sort: float | str | None = None   # data-sort (SI value for numbers); None: the text
    num: bool = False                 # right-aligned, sorted numerically
    flags: list[str] = field(default_factory=list)
    title: str | None = None          # hover text (the flags' meaning if flagged)
    metric: str | None = None         # data-metric hook of the summary's headline cells
    bold: bool = False
    shade: float | None = None        # 0..1: background intensity (latency matrices)
    unit: str | None = None           # a value or interval in this unit (SI)...
    value: float | None = None        # ...its value, or
    lo: float | None = None           # ...its interval's ends
    hi: float | None = None

    @property
    def tip(self) -> str | None:
        if self.title:
            return self.title
        return ("flagged: " + ", ".join(self.flags)) if self.flags else None


@dataclass
class Table:
    head: list[str]
    rows: list[list[Cell]]
    row_flags: list[list[str]] = field(default_factory=list)
    caption: str = ""
    table_id: str = ""
    collapse: bool | None = None      # None: collapse when longer than COLLAPSE_ROWS

    @property
    def collapsed(self) -> bool:
        return len(self.rows) > COLLAPSE_ROWS if self.collapse is None else self.collapse

    def flags_of(self, k: int) -> list[str]:
        return self.row_flags[k] if k < len(self.row_flags) else []

    def unify_units(self) -> None:
        """One unit per column: every time (or rate) in a column is shown in the unit of
        the column's median magnitude (us throughout, not ns beside us; MB/s, not MB/s
        beside GB/s)."""
        ncol = max((len(r) for r in self.rows), default=0)
        for j in range(ncol):
            cells = [r[j] for r in self.rows if j < len(r)]
            units_here = {c.unit for c in cells if c.unit is not None}
            if len(units_here) != 1 or next(iter(units_here)) not in ("s", "B/s"):
                continue
            unit = next(iter(units_here))
            vals = [v for c in cells for v in (c.value, c.lo, c.hi) if _ok(v)]
            scale, name = units.axis_scale(vals, unit)
            for c in cells:
                if c.unit is None:
                    continue
                if units.impossible(c.value, unit) or units.undetermined(c.lo, c.hi, unit):
                    continue  # the rule's text stays (units.IMPOSSIBLE, units.UNDETERMINED)
                if _ok(c.value):
                    c.text = f"{units.sig3(c.value / scale)} {name}"  # type: ignore[operator]
                elif _ok(c.lo) and _ok(c.hi):
                    c.text = (f"{units.sig3(c.lo / scale)} .. "  # type: ignore[operator]
                              f"{units.sig3(c.hi / scale)} {name}")  # type: ignore[operator]


def _ok(v: float | None) -> bool:
    return v is not None and not isinstance(v, bool) and math.isfinite(v)


def text(v: object) -> Cell:
    return Cell("-" if v is None else str(v))


def value(v: float | None, unit: str, flags: Iterable[str] = ()) -> Cell:
    """A number in the report's units; negative values and values not finite are flagged
    even when the file did not flag them."""
    fl = list(flags)
    ok = v is not None and not isinstance(v, bool) and math.isfinite(v)
    if ok and v < 0 and "negative" not in fl:  # type: ignore[operator]
        fl.append("negative")  # shown as units.IMPOSSIBLE for a time, rate or size
    return Cell(units.fmt_value(v, unit), sort=v if ok else None, num=True, flags=fl,
                unit=unit, value=v if ok else None)


def param(v: float | None, unit: str, flags: Iterable[str] = ()) -> Cell:
    """A fitted model parameter (a time, a time per byte or a rate: none can be below 0).
    A negative fit is never shown as a value: the cell shows its clamp 0 with the flag
    clamped (added if the file did not say so) and says in its hover that the fit fell
    below 0."""
    fl = list(flags)
    ok = v is not None and not isinstance(v, bool) and math.isfinite(v)
    if not ok or v >= 0:  # type: ignore[operator]
        return value(v, unit, fl)
    if not any(f == "clamped" or f.endswith("_clamped") or f.endswith(":clamped")
               for f in fl):
        fl.append("clamped")
    return Cell(units.fmt_value(0.0, unit), sort=0.0, num=True, flags=fl, unit=unit, value=0.0,
                title=f"flagged: {', '.join(fl)} (the fit fell below 0, impossible for this "
                      "parameter: shown as its clamp 0)")


def interval(lo: float | None, hi: float | None, unit: str) -> Cell:
    """An interval; one wider than a decade (or reaching 0 for a time or a rate) reads
    "undetermined" with the flag ci_undetermined (units.undetermined)."""
    c = Cell(units.fmt_ci(lo, hi, unit), num=True, unit=unit, lo=lo, hi=hi,
             flags=[units.FLAG_UNDETERMINED] if units.undetermined(lo, hi, unit) else [])
    c.sort = lo if lo is not None and math.isfinite(lo) else None
    return c


def count(v: float | None) -> Cell:
    return Cell(units.fmt_count(v), sort=v, num=True)


def flags_cell(flags: list[str]) -> Cell:
    return Cell(" ".join(flags) or "-", flags=list(flags))
