"""Change detection on one series of run figures (pure functions).

The unit is the run: each run gives one launch-level figure (the median of its launch medians,
mpilab.launches), and runs are compared on the log scale, as `mpilab diff` compares launches
(mpilab.tune.stats): a level moves by factors. A change point k splits the runs y_0..y_n-1
into before (y_a..y_k-1) and after (y_k..y_b-1); its test is the two-sample t test on the
log figures with the pooled within-segment variance moderated (mpilab.tune.stats.moderate)
towards the variance the runs' own launch-level intervals state (each run's interval is the
prediction interval for a repeat's figure: half width h on the log scale gives a figure's
standard deviation h / (z sqrt 2)), so that a window of runs that happened to agree does not
make a change of a fraction of the machine's noise significant. The p-value of the best
split is multiplied by the number of splits the series allows (Bonferroni: the largest of
many t statistics is not one t statistic). A split counts when that p < alpha and the level moved
by at least min_effect.

* `segments`: binary segmentation: the best significant split of the whole series, then of
  each side, recursively (the report's change points);
* `check_latest`: is the newest run worse than the recent baseline? The change points of the
  last `window` runs; the last segment (which holds the newest run) against the segment
  before it: worse (significant, by at least min_effect, and the newest run itself above
  the baseline's level) names the run where the last segment begins.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from mpilab.launchvar import D0
from mpilab.tune.stats import moderate

ALPHA = 0.05
MIN_EFFECT = 0.05
WINDOW = 30
MIN_SEGMENT = 3      # runs on each side of an interior split; the newest segment may be 1
CL = 0.95


@dataclass(frozen=True)
class Split:
    at: int            # index of the first run after the change
    ratio: float       # level after / level before
    p: float           # Bonferroni-adjusted p-value
    t: float


def own_variance(los: list[float | None], his: list[float | None], figs: list[float],
                 cl: float = CL) -> float | None:
    """The variance of one log figure the runs' own launch-level intervals state (median over
    the runs that have one), None when none has."""
    z = float(norm.ppf((1 + cl) / 2))
    vs = []
    for lo, hi, f in zip(los, his, figs, strict=True):
        if lo is not None and hi is not None and 0 < lo <= f <= hi:
            h = (math.log(hi) - math.log(lo)) / 2
            vs.append((h / (z * math.sqrt(2))) ** 2)
    return statistics.median(vs) if vs else None


def _ss(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = statistics.fmean(xs)
    return sum((x - m) ** 2 for x in xs)


def best_split(y: list[float], prior: float | None, lo: int, hi: int, min_left: int,
               min_right: int, alpha: float = ALPHA, min_effect: float = MIN_EFFECT,
               worse_only: bool = False, tests: int = 0) -> Split | None:
    """The most significant split of y[lo:hi] (log figures) with at least min_left runs
    before and min_right after; None when no split is significant by at least min_effect.
    worse_only: only splits after which the level is higher (slower). The p-value is
    multiplied by the number of splits tried, or by `tests` when that is larger (binary
    segmentation counts the splits of the whole series at every level: a segment's own
    count let a single far-off newest run split an established level once more)."""
    cands = list(range(lo + min_left, hi - min_right + 1))
    if not cands:
        return None
    # every split at once from prefix sums (a series of 10,000 runs: one pass, not one per
    # split); the chosen one is tested again through tune.stats.moderate below
    seg = np.asarray(y[lo:hi], dtype=float)
    m = len(seg)
    cs, cs2 = np.cumsum(seg), np.cumsum(seg * seg)
    j = np.asarray(cands, dtype=float) - lo
    ji = j.astype(int)
    na, nb = j, m - j
    sa, sa2 = cs[ji - 1], cs2[ji - 1]
    sb, sb2 = cs[-1] - sa, cs2[-1] - sa2
    d = sb / nb - sa / na
    ss = np.maximum(sa2 - sa * sa / na + sb2 - sb * sb / nb, 0.0)
    df = m - 2.0
    use_prior = prior is not None and prior > 0
    if use_prior:
        s2 = (D0 * prior + ss) / (D0 + df)
    elif df > 0:
        s2 = ss / df
    else:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(d) / np.sqrt(s2 * (1 / na + 1 / nb))
    ok = (np.abs(np.expm1(np.abs(d))) >= min_effect) & (s2 > 0) & np.isfinite(t)
    if worse_only:
        ok &= d > 0
    if not ok.any():
        return None
    i = int(np.argmax(np.where(ok, t, -np.inf)))
    k = cands[i]
    a, b = y[lo:k], y[k:hi]
    dk = statistics.fmean(b) - statistics.fmean(a)
    s2df = moderate(_ss(a) + _ss(b), float(len(a) + len(b) - 2), (),
                    (prior, D0) if use_prior else None)
    if s2df is None or s2df[0] <= 0:
        return None
    tk = abs(dk) / math.sqrt(s2df[0] * (1 / len(a) + 1 / len(b)))
    best = (tk, k, dk, float(2 * student_t.sf(tk, s2df[1])))
    if best is None:
        return None
    t, k, d, p = best
    p_adj = min(1.0, p * max(len(cands), tests))
    if p_adj >= alpha:
        return None
    return Split(k, math.exp(d), p_adj, t)


def segments(figs: list[float], los: list[float | None] | None = None,
             his: list[float | None] | None = None, alpha: float = ALPHA,
             min_effect: float = MIN_EFFECT) -> list[Split]:
    """Change points of a whole series by binary segmentation, in run order."""
    n = len(figs)
    y = [math.log(f) for f in figs]
    prior = own_variance(los or [None] * n, his or [None] * n, figs)
    out: list[Split] = []
    todo = [(0, n)]
    while todo:
        a, b = todo.pop()
        s = best_split(y, prior, a, b, MIN_SEGMENT, 1 if b == n else MIN_SEGMENT, alpha,
                       min_effect, tests=max(n - MIN_SEGMENT, 1))
        if s is not None:
            out.append(s)
            todo += [(a, s.at), (s.at, b)]
    return sorted(out, key=lambda s: s.at)


@dataclass(frozen=True)
class Verdict:
    """The newest run against the recent baseline."""
    worse: bool
    began: int | None        # index (in the window) of the first run of the change
    ratio: float | None      # level of the last segment / the baseline's
    latest_ratio: float | None
    p: float | None
    baseline_runs: int
    why: str


def check_latest(figs: list[float], los: list[float | None] | None = None,
                 his: list[float | None] | None = None, window: int = WINDOW,
                 alpha: float = ALPHA, min_effect: float = MIN_EFFECT) -> Verdict:
    """Is the newest of figs (run order) worse than the recent baseline? Works on the last
    `window` runs; indices in the verdict are into those."""
    figs = figs[-window:]
    n = len(figs)
    los = (los or [None] * len(figs))[-window:] if los else [None] * n
    his = (his or [None] * len(figs))[-window:] if his else [None] * n
    if n < MIN_SEGMENT + 1:
        return Verdict(False, None, None, None, None, max(n - 1, 0),
                       f"{n} run(s): at least {MIN_SEGMENT + 1} are needed")
    cps = segments(figs, los, his, alpha, min_effect)
    start = cps[-1].at if cps else n
    if start == n or not cps:
        return Verdict(False, None, None, None, None, n - 1, "no change")
    base_lo = cps[-2].at if len(cps) >= 2 else 0
    y = [math.log(f) for f in figs]
    base = y[base_lo:start]
    last = cps[-1]
    latest_ratio = math.exp(y[-1] - statistics.fmean(base))
    worse = last.ratio > 1 and latest_ratio > 1
    why = (f"{(last.ratio - 1) * 100:+.1f}% since that run (p = {last.p:.2g}), newest run "
           f"{(latest_ratio - 1) * 100:+.1f}% against {len(base)} baseline run(s)")
    return Verdict(worse, start, last.ratio, latest_ratio, last.p, len(base), why)
