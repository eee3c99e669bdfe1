"""The statistics of `mpilab tune` and `mpilab diff`: is one measured time really lower than
another, by how much, and how sure is that?

On this kind of machine a whole launch (one mpirun) sits at its own level: the same command
gave shared-memory medians 0.4 to 2.6 us apart between launches, each with a tight interval
of its own (docs/bench-launches.md). So the unit of replication is the launch, and the
raw samples inside one launch are only evidence about that launch's median: every decision
here is a test on launch medians, never on pooled raw samples (a rank test on pooled samples
gave p = 1e-217 between two launches of one configuration: it counts the samples of one
launch as independent evidence about the configuration).

* Paired (`paired`: the sweep's choice, `mpilab tune validate`, and `mpilab diff --paired` /
  `--run` with fewer than RANK_MIN pairs): A and B were measured in the same launches or in
  adjacent launches of an alternating order. Per pair k the log ratio x_k = ln(m_B,k /
  m_A,k) of the two launch medians cancels the shared level. Student's t test on the x_k
  with a moderated variance (Smyth's limma, as mpilab.launchvar): the pairs' own variance
  shrunk towards the pooled variance of the same test at the other sizes of the operation
  (`group`) and towards the machine's stored launch-to-launch variation (`prior`), with at
  most mpilab.launchvar.D0 prior degrees of freedom; the interval is never narrower than the
  medians' own sampling intervals. Significant when p < alpha and the interval excludes 1.
* Paired with RANK_MIN pairs or more (`paired_rank`): Wilcoxon's signed-rank test and the
  Hodges-Lehmann interval on the same x_k, robust to a pair in which one launch met a load
  spike.
* Unpaired (`unpaired`, `mpilab diff` of two separate runs): the difference of the mean log
  launch medians with the same moderated t (the launches' pooled within-side variance, the
  group's and the store's). With one launch a side and nothing to moderate with, the launch
  variation cannot be told from the difference: the comparison says so (`separable` False)
  and is never significant.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import binom, wilcoxon
from scipy.stats import t as student_t

ALPHA = 0.05
MIN_EFFECT = 0.05
MIN_SAMPLES = 6


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) else None


def launch_groups(m: dict[str, Any]) -> list[list[float]]:
    """The valid raw samples of one measurement, one list per launch (a file merged from N
    launches keeps every launch's samples in launch order, `launches.reps` each)."""
    samples = m.get("samples") if isinstance(m.get("samples"), list) else []
    valid = m.get("valid") if isinstance(m.get("valid"), list) else [True] * len(samples)
    la = m.get("launches") if isinstance(m.get("launches"), dict) else None
    reps = la.get("reps") if la else None
    if not isinstance(reps, list) or not all(isinstance(r, int) and r >= 0 for r in reps) \
            or sum(reps) != len(samples):
        reps = [len(samples)]
    out, at = [], 0
    for r in reps:
        g = [float(s) for s, ok in zip(samples[at:at + r], valid[at:at + r], strict=False)
             if ok is not False and _num(s) is not None and s > 0]
        out.append(g)
        at += r
    return out


def _rel_half(g: Sequence[float], cl: float) -> float:
    """Relative half width of a sample median's distribution-free interval (order
    statistics, as mpilab_median_ci), or of +-1 sample step when too few."""
    s = sorted(g)
    n = len(s)
    med = statistics.median(s)
    if med <= 0:
        return math.inf
    k = int(binom.ppf((1 - cl) / 2, n, 0.5))
    lo, hi = (s[k - 1], s[n - k]) if k >= 1 else (s[0], s[-1])
    return (hi - lo) / 2 / med


@dataclass
class Comparison:
    """b against a: ratio = figure(b) / figure(a) with its interval at level cl."""
    ratio: float | None
    lo: float | None
    hi: float | None
    p: float | None              # the launch-level test's p-value
    launches: int                # launches used (pairs of launches when paired)
    launch_level: bool           # the interval includes launch-to-launch variation
    significant: bool            # interval excludes 1 and the rank test agrees
    method: str
    per_launch: list[dict[str, float]] = field(default_factory=list)
    separable: bool = True       # launch variation can be told from the difference

    @property
    def faster(self) -> bool:
        return self.significant and self.ratio is not None and self.ratio < 1

    @property
    def slower(self) -> bool:
        return self.significant and self.ratio is not None and self.ratio > 1

    def as_json(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "lo": self.lo, "hi": self.hi, "p": self.p,
                "launches": self.launches, "launch_level": self.launch_level,
                "significant": self.significant, "method": self.method,
                "per_launch": self.per_launch, "separable": self.separable}


def _none(method: str, n: int = 0) -> Comparison:
    return Comparison(None, None, None, None, n, False, False, method)


#: prior for a moderated variance: (variance of one log value, its degrees of freedom)
Prior = tuple[float, float]


def moderate(ss: float, df: float, group: Sequence[Prior] = (),
             prior: Prior | None = None) -> Prior | None:
    """Smyth's moderated variance (as mpilab.launchvar.moderated): the own sum of squares
    `ss` with `df` degrees of freedom shrunk towards the pooled variance of `group` (each a
    variance and its degrees of freedom) and the stored `prior`, with at most
    mpilab.launchvar.D0 prior degrees of freedom; the result's degrees of freedom are the own
    plus the prior's. None when nothing has a degree of freedom."""
    from mpilab.launchvar import D0

    pool = [g for g in group if g[1] > 0 and math.isfinite(g[0])]
    if prior is not None and prior[1] > 0 and math.isfinite(prior[0]):
        pool.append(prior)
    gdf = sum(g[1] for g in pool)
    if gdf <= 0:
        return (ss / df, df) if df > 0 else None
    s2g = sum(g[0] * g[1] for g in pool) / gdf
    d0 = min(D0, gdf)
    return (d0 * s2g + ss) / (d0 + df), d0 + df


def _ss(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = statistics.fmean(xs)
    return sum((x - m) ** 2 for x in xs)


def pair_logs(a: list[list[float]], b: list[list[float]], cl: float = 0.95,
              min_samples: int = MIN_SAMPLES
              ) -> tuple[list[float], list[float], list[dict[str, float]]]:
    """Per pair with enough samples on both sides: the log ratio of the launch medians, the
    squared relative half widths of the two medians' own intervals, and what the report
    shows. min_samples 1: each launch gives one figure (an unmodified benchmark's), whose
    own sampling error is not known (taken as nil: the launches' spread is the test)."""
    logs, within, per = [], [], []
    for x, y in zip(a, b, strict=False):
        if len(x) < min_samples or len(y) < min_samples or min(x + y) <= 0:
            continue
        mx, my = statistics.median(x), statistics.median(y)
        logs.append(math.log(my / mx))
        within.append(_rel_half(x, cl) ** 2 + _rel_half(y, cl) ** 2)
        per.append({"a": mx, "b": my, "ratio": my / mx})
    return logs, within, per


def variance_of(logs: Sequence[float]) -> Prior:
    """The (variance, degrees of freedom) a list of per-pair log ratios lends a group."""
    n = len(logs)
    return (_ss(logs) / (n - 1), float(n - 1)) if n >= 2 else (0.0, 0.0)


def _t_test(mean: float, s2df: Prior | None, n_eff: float, floor: float, cl: float,
            alpha: float) -> tuple[float, float, float, bool]:
    """(lo, hi, p, significant) of a log-scale mean with a moderated variance."""
    if s2df is None or s2df[1] <= 0:
        return math.exp(mean - floor), math.exp(mean + floor), 1.0, False
    s2, df = s2df
    se = math.sqrt(max(s2, 0.0) / n_eff)
    if se > 0:
        p = float(2 * student_t.sf(abs(mean) / se, df))
    else:
        p = 0.0 if mean != 0 else 1.0
    h = min(max(float(student_t.ppf((1 + cl) / 2, df)) * se, floor), 700.0)
    lo, hi = math.exp(mean - h), math.exp(mean + h)
    return lo, hi, p, p < alpha and (hi < 1 or lo > 1)


def paired(a: list[list[float]], b: list[list[float]], cl: float = 0.95,
           alpha: float = ALPHA, group: Sequence[Prior] = (),
           prior: Prior | None = None, min_samples: int = MIN_SAMPLES) -> Comparison:
    """b against a, measured in the same launches or in pairs of adjacent launches (a[k] and
    b[k] from launch or pair k): the moderated t test on the per-pair log ratios of the
    launch medians (see the module's text). group: variance_of(...) of the same test at the
    operation's other sizes; prior: the stored launch variation of such a log ratio."""
    logs, within, per = pair_logs(a, b, cl, min_samples)
    n = len(logs)
    if n == 0:
        return _none("paired: too few samples", 0)
    mean = statistics.fmean(logs)
    s2df = moderate(_ss(logs), float(n - 1), group, prior)
    floor = math.sqrt(sum(within)) / n
    lo, hi, p, sig = _t_test(mean, s2df, n, floor, cl, alpha)
    how = ("paired launches: moderated t test on the per-pair log ratios of launch medians "
           f"({n} pairs, {s2df[1]:.0f} degrees of freedom; interval never narrower than the "
           "medians' own)" if s2df else
           "paired launches: one pair and no variation to moderate with: launch variation "
           "cannot be told from the difference")
    c = Comparison(math.exp(mean), lo, hi, p, n, s2df is not None, sig, how, per)
    c.separable = s2df is not None
    return c


#: from this many pairs `mpilab diff` decides by the signed-rank test (robust to a pair far
#: off); below, by the moderated t test (a signed-rank test cannot reach p < 0.05 with
#: fewer than 6 pairs)
RANK_MIN = 10


def signed_rank_cut(n: int, alpha: float) -> int:
    """c of the distribution-free interval of the Hodges-Lehmann shift [W_(c), W_(M+1-c)]
    (Walsh averages sorted, 1-based, M = n(n+1)/2): the largest c with P(T+ <= c-1) <=
    alpha/2 under the null distribution of Wilcoxon's signed-rank statistic T+ (counted
    exactly: the number of subsets of the ranks 1..n with each sum, over 2^n); 0 when n is too
    small for any interval at that level."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    for r in range(1, n + 1):
        for s in range(len(counts) - 1, r - 1, -1):
            counts[s] += counts[s - r]
    total, cum, c = 2 ** n, 0, 0
    for s, k in enumerate(counts):
        cum += k
        if cum * 2 > alpha * total:   # P(T+ <= s) > alpha/2: c - 1 = s is too far
            break
        c = s + 1
    return c


def paired_rank(a: list[list[float]], b: list[list[float]], cl: float = 0.95,
                alpha: float = ALPHA, min_samples: int = MIN_SAMPLES) -> Comparison:
    """b against a from pairs of adjacent launches (`mpilab diff --paired`), robust to
    pairs far off: Wilcoxon's signed-rank test (scipy.stats.wilcoxon) on the per-pair log
    ratios of the launch medians (min_samples 1: one figure per launch, an unmodified
    benchmark's), the Hodges-Lehmann estimate (median of the Walsh averages)
    and its distribution-free interval at level cl, never narrower than the medians' own
    intervals. Significant when p < alpha and the interval excludes 1.

    Why not the t test: one pair in which a launch met a load spike moves the mean and
    inflates the standard deviation of all pairs, so a real 10% slowdown was missed with an
    interval of 0.96..1.26 among 30 pairs; a rank test counts that pair as one sign. Under no
    difference the log ratio of two launches of one program, run in ABBA order, is symmetric
    about 0, which is all the signed-rank test assumes."""
    logs, within, per = pair_logs(a, b, cl, min_samples)
    n = len(logs)
    if n < 2:
        return _none("paired signed-rank: too few pairs", n)
    walsh = sorted((logs[i] + logs[j]) / 2 for i in range(n) for j in range(i, n))
    hl = statistics.median(walsh)
    c = signed_rank_cut(n, 1 - cl)
    if c < 1:  # too few pairs for any interval at this level
        return Comparison(math.exp(hl), None, None, None, n, True, False,
                          f"paired signed-rank: {n} pairs give no interval at {cl:g}", per)
    lo_l, hi_l = walsh[c - 1], walsh[len(walsh) - c]
    floor = math.sqrt(sum(within)) / n
    lo_l, hi_l = max(min(lo_l, hl - floor), -700.0), min(max(hi_l, hl + floor), 700.0)
    p = 1.0
    if any(v != 0 for v in logs):
        p = float(wilcoxon(logs, alternative="two-sided").pvalue)
        p = p if math.isfinite(p) else 1.0
    lo, hi = math.exp(lo_l), math.exp(hi_l)
    sig = p < alpha and (hi < 1 or lo > 1)
    return Comparison(math.exp(hl), lo, hi, p, n, True, sig,
                      "paired launches: Wilcoxon signed-rank test and Hodges-Lehmann interval "
                      "of the per-pair log ratios of medians (never narrower than the "
                      "medians' own intervals)", per)


def unpaired(a: list[list[float]], b: list[list[float]], cl: float = 0.95,
             alpha: float = ALPHA, group: Sequence[Prior] = (),
             prior: Prior | None = None) -> Comparison:
    """b against a from separate runs (launches not paired): the difference of the mean log
    launch medians, moderated t (the two sides' pooled variance of log launch medians shrunk
    towards `group`'s and the stored `prior`, a variance of one log launch median)."""
    ga = [g for g in a if len(g) >= MIN_SAMPLES]
    gb = [g for g in b if len(g) >= MIN_SAMPLES]
    if not ga or not gb:
        return _none("unpaired: too few samples")
    la = [math.log(statistics.median(g)) for g in ga]
    lb = [math.log(statistics.median(g)) for g in gb]
    na, nb = len(la), len(lb)
    d = statistics.fmean(lb) - statistics.fmean(la)
    s2df = moderate(_ss(la) + _ss(lb), float(na + nb - 2), group, prior)
    floor = math.sqrt(sum(_rel_half(g, cl) ** 2 for g in ga) / na ** 2
                      + sum(_rel_half(g, cl) ** 2 for g in gb) / nb ** 2)
    n_eff = 1 / (1 / na + 1 / nb)
    lo, hi, p, sig = _t_test(d, s2df, n_eff, floor, cl, alpha)
    how = ("unpaired runs: moderated t test on the log launch medians "
           f"({na} and {nb} launches, {s2df[1]:.0f} degrees of freedom)" if s2df else
           f"unpaired runs: {na} and {nb} launch(es) and no stored launch variation: launch "
           "variation cannot be told from the difference")
    c = Comparison(math.exp(d), lo if s2df else None, hi if s2df else None,
                   p if s2df else None, min(na, nb), s2df is not None, sig, how, [])
    c.separable = s2df is not None
    return c


def unpaired_variance(a: list[list[float]], b: list[list[float]]) -> Prior:
    """What an unpaired comparison lends its group: the pooled within-side variance of the
    log launch medians and its degrees of freedom."""
    la = [math.log(statistics.median(g)) for g in a if len(g) >= MIN_SAMPLES]
    lb = [math.log(statistics.median(g)) for g in b if len(g) >= MIN_SAMPLES]
    df = len(la) + len(lb) - 2
    return ((_ss(la) + _ss(lb)) / df, float(df)) if df > 0 else (0.0, 0.0)
