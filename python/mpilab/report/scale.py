"""The report at scale (issue 26): what replaces a table or a figure once it would hold one
row or one curve per pair of a large run.

- A table longer than its threshold is summarised: the rows an administrator needs (the
  slowest, the flagged, the outliers) stay in the page, the full table goes to a CSV file
  written beside the page (`Attachments`) and linked.
- Pair times are analysed for outliers by the group-aware fit of mpilab.pairs (one
  implementation for `python -m mpilab.pairs` and the report): t(i, j) = a_i + a_j +
  link(g(i), g(j)) by robust (Huber) regression, the groups (sites, hosts) recorded by the
  runner; a node, a link between groups or a pair stands out by the robust z-score of its
  term (pairs: of the residual).
- Pair matrices are heat maps (report.bigfigs), block-reduced above HEATMAP_MAX ranks.

Thresholds are module constants so tests and the docs name them."""

from __future__ import annotations

import csv
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mpilab import pairs as pairfit  # the one implementation of the pair fit

#: a table of more rows than this is summarised (the full table goes to a CSV file)
TABLE_ROWS = 200
#: the measurement table is summarised above this many rows (a default survey has 578)
MEASUREMENT_ROWS = 1000
#: rows kept of a summarised table (per kind: slowest, flagged, ...)
OUTLIER_ROWS = 25
#: above this many ranks a latency matrix is a heat map, not a table
MATRIX_TABLE_RANKS = 16
#: a heat map of more ranks is block-reduced to at most this many cells a side
HEATMAP_MAX = 128
#: pair outliers are looked for from this many ranks on (below, the matrix shows every pair)
OUTLIER_MIN_RANKS = 8
#: robust z-score above which a node or a pair is listed as an outlier
OUTLIER_Z = 3.5


@dataclass
class Attachments:
    """Files written beside the page (full tables as CSV). `base` is the page's path
    without its suffix; None: the page is rendered to a string only, nothing is attached.
    Each file is written as it is made, under a hidden temporary name, and renamed by
    commit() once the page is written (discard() removes them if it is not)."""
    base: Path | None
    files: dict[Path, Path] = field(default_factory=dict)  # final name -> temporary file

    def csv(self, tag: str, head: Sequence[str], rows: Iterable[Sequence[object]]) -> str | None:
        """Adds BASE.TAG.csv; returns the link (relative to the page) or None."""
        if self.base is None:
            return None
        path = self.base.with_name(f"{self.base.name}.{tag}.csv")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        self.files[path] = Path(tmp)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(head)
            for row in rows:
                w.writerow(["" if v is None or (isinstance(v, float) and not math.isfinite(v))
                            else (f"{v:.6g}" if isinstance(v, float) else v) for v in row])
        return path.name

    def commit(self) -> None:
        for path, tmp in self.files.items():
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        self.files.clear()

    def discard(self) -> None:
        for tmp in self.files.values():
            tmp.unlink(missing_ok=True)
        self.files.clear()


def link_note(href: str | None, rows: int, what: str, kept: str) -> str:
    """The HTML sentence above a summarised table."""
    from markupsafe import escape

    if href is None:
        return (f"{rows} {escape(what)}: {escape(kept)} shown; the full table is written as a "
                "CSV file beside the page by <code>mpilab report</code>.")
    return (f"{rows} {escape(what)}: {escape(kept)} shown; every row is in "
            f'<a href="{escape(href)}" download>{escape(href)}</a> (CSV, SI units).')


@dataclass
class PairOutliers:
    """What the pair fit (mpilab.pairs.fit_pairs) finds in the round trips of one size."""
    ranks: int
    pairs: int
    node: np.ndarray              # a_i, seconds (the node's share of a round trip)
    node_z: np.ndarray
    slow_nodes: list[int]         # slowest first
    slow_pairs: list[tuple[int, int, float, float, float]]  # i, j, time, expected, z
    typical: float                # median pair time
    # (group a, group b, the link's term in seconds, z), slowest first
    slow_links: list[tuple[int, int, float, float]] = field(default_factory=list)
    group_word: str = "group"     # what a group is: "site", "host", "group"
    typical_link: float = math.nan  # the median link term, seconds (NaN: no links)


def pair_outliers(times: dict[tuple[int, int], float], ranks: int,
                  groups: Sequence[int] | None = None, group_word: str = "group",
                  z: float = OUTLIER_Z) -> PairOutliers | None:
    """Slow nodes, links and pairs of pair times {(i, j): t} by mpilab.pairs.fit_pairs with
    the ranks' groups; None when the pairs do not determine every node and link."""
    try:
        fit = pairfit.fit_pairs(times, ranks, groups, z=z)
    except ValueError:
        return None
    node = np.asarray(fit.nodes, dtype=float)
    nz = np.asarray(fit.node_z, dtype=float)
    slow_nodes = sorted(fit.slow_nodes, key=lambda i: -nz[i])
    slow_pairs = []
    for i, j in sorted(fit.slow_pairs, key=lambda pq: -fit.pair_z[pq]):
        t = times[(i, j)] if (i, j) in times else times[(j, i)]
        slow_pairs.append((i, j, float(t), fit.expected(i, j, groups), fit.pair_z[(i, j)]))
    links = [(a, b, fit.links[(a, b)], fit.link_z[(a, b)])
             for a, b in sorted(fit.slow_links, key=lambda lk: -fit.link_z[lk])]
    typical = float(np.median(list(times.values()))) if times else math.nan
    tl = float(np.median(list(fit.links.values()))) if fit.links else math.nan
    return PairOutliers(ranks, len(fit.residuals), node, nz, slow_nodes, slow_pairs, typical,
                        links, group_word, tl)


def block_max(mat: np.ndarray, cap: int = HEATMAP_MAX) -> tuple[np.ndarray, int]:
    """The matrix reduced to at most cap x cap cells, each the largest value of its block
    of b x b ranks (a slow pair stays visible); (reduced, b)."""
    n = mat.shape[0]
    b = max(1, math.ceil(n / cap))
    if b == 1:
        return mat, 1
    m = math.ceil(n / b)
    pad = np.full((m * b, m * b), np.nan)
    pad[:n, :n] = mat
    blocks = pad.reshape(m, b, m, b).swapaxes(1, 2).reshape(m, m, b * b)
    allnan = np.all(np.isnan(blocks), axis=2)
    red = np.where(allnan, np.nan, np.nanmax(np.where(np.isnan(blocks), -np.inf, blocks),
                                             axis=2))
    return red, b


def quartiles(v: Sequence[float]) -> dict[str, float] | None:
    """Box of a distribution: min, 5th percentile, quartiles, 95th percentile, max, n."""
    x = np.asarray([t for t in v if t is not None and math.isfinite(t)], dtype=float)
    if not x.size:
        return None
    q = np.percentile(x, [0, 5, 25, 50, 75, 95, 100])
    return {"min": float(q[0]), "p5": float(q[1]), "q1": float(q[2]), "median": float(q[3]),
            "q3": float(q[4]), "p95": float(q[5]), "max": float(q[6]), "n": float(x.size)}
