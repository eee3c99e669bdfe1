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


def text(v: object) -> Cell:
    return Cell("-" if v is None else str(v))


def value(v: float | None, unit: str, flags: Iterable[str] = ()) -> Cell:
    """A number in the report's units; negative values and values not finite are flagged
    even when the file did not flag them."""
    fl = list(flags)
    ok = v is not None and not isinstance(v, bool) and math.isfinite(v)
    if ok and v < 0 and "negative" not in fl:  # type: ignore[operator]
        fl.append("negative")
    return Cell(units.fmt_value(v, unit), sort=v if ok else None, num=True, flags=fl)


def interval(lo: float | None, hi: float | None, unit: str) -> Cell:
    c = Cell(units.fmt_ci(lo, hi, unit), num=True)
    c.sort = lo if lo is not None and math.isfinite(lo) else None
    return c


def count(v: float | None) -> Cell:
    return Cell(units.fmt_count(v), sort=v, num=True)


def flags_cell(flags: list[str]) -> Cell:
    return Cell(" ".join(flags) or "-", flags=list(flags))
