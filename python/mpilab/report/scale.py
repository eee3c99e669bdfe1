"""The report at scale (issue 26): what replaces a table or a figure once it would hold one
row or one curve per pair of a large run.

- A table longer than its threshold is summarised: the rows an administrator needs (the
  slowest, the flagged, the outliers) stay in the page, the full table goes to a CSV file
  written beside the page (`Attachments`) and linked.
- Pair times are analysed for outliers in O(pairs): an additive model t(i, j) = a_i + a_j
  fitted by median polish on the ranks x ranks matrix (robust: one slow pair does not move
  a node's term, one slow node does not make its pairs outliers); a node stands out by the
  robust z-score of its term, a pair by the robust z-score of log(t / (a_i + a_j)) (timing
  noise is multiplicative; the MAD is floored at 1%).
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


def robust_z(x: np.ndarray, floor: float) -> np.ndarray:
    med = float(np.nanmedian(x))
    mad = 1.4826 * float(np.nanmedian(np.abs(x - med)))
    return (x - med) / max(mad, floor, 1e-300)


@dataclass
class PairOutliers:
    """Median polish of a ranks x ranks matrix of pair times."""
    ranks: int
    pairs: int
    node: np.ndarray              # a_i, seconds (NaN: rank in no pair)
    node_z: np.ndarray
    slow_nodes: list[int]
    slow_pairs: list[tuple[int, int, float, float, float]]  # i, j, time, expected, z
    typical: float                # median pair time


def pair_outliers(times: dict[tuple[int, int], float], ranks: int,
                  z: float = OUTLIER_Z, iters: int = 10) -> PairOutliers:
    """Outlier nodes and pairs of pair times {(i, j): t}, by median polish of
    t(i, j) = a_i + a_j (symmetric: both orders are the same pair)."""
    mat = np.full((ranks, ranks), np.nan)
    for (i, j), t in times.items():
        if math.isfinite(t):
            mat[i, j] = mat[j, i] = t
    typical = float(np.nanmedian(mat)) if times else math.nan
    a = np.full(ranks, typical / 2.0)
    have = ~np.all(np.isnan(mat), axis=1)
    for _ in range(iters):
        prev = a.copy()
        # a_i = median over j of (t_ij - a_j)
        a = _rowmed(mat - a[None, :], have)
        if np.allclose(a, prev, rtol=1e-9, atol=0.0, equal_nan=True):
            break
    floor = 0.01 * abs(typical) if math.isfinite(typical) else 0.0
    nz = robust_z(a, floor / 2.0)
    slow_nodes = [int(i) for i in np.argsort(-np.nan_to_num(nz, nan=-np.inf))
                  if have[i] and nz[i] > z]
    exp = a[:, None] + a[None, :]
    # timing noise is multiplicative (a slow node's pairs vary more in seconds, not in
    # ratio): the residual is log(t / expected)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.log(mat / exp)
    iu = np.triu_indices(ranks, 1)
    rv = res[iu]
    ok = np.isfinite(rv)
    rz = np.full(rv.shape, np.nan)
    if ok.any():
        rz[ok] = robust_z(rv[ok], 0.01)
    order = np.argsort(-np.nan_to_num(rz, nan=-np.inf))
    slow_pairs = []
    for k in order:
        if not ok[k] or rz[k] <= z:
            break
        i, j = int(iu[0][k]), int(iu[1][k])
        slow_pairs.append((i, j, float(mat[i, j]), float(exp[i, j]), float(rz[k])))
    return PairOutliers(ranks, int(ok.sum()), a, nz, slow_nodes, slow_pairs, typical)


def _rowmed(x: np.ndarray, have: np.ndarray) -> np.ndarray:
    out = np.full(x.shape[0], np.nan)
    out[have] = np.nanmedian(x[have], axis=1)
    return out


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
