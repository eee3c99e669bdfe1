"""The statistics of `mpilab tune` and `mpilab diff`: is one measured time really lower than
another, by how much, and how sure is that?

On this kind of machine a whole launch (one mpirun) sits at its own level: the same command
gave shared-memory medians 0.4 to 2.6 us apart between launches, each with a tight interval
of its own (docs/bench-launches.md). So the unit of replication is the launch, and the
raw samples inside one launch are only evidence about that launch:

* Paired (`paired`, for the sweep's choice): candidate and default were measured in the
  same launches, one after the other. Per launch k the log ratio x_k = ln(m_cand,k /
  m_def,k) of the two medians cancels the launch's level. The effect is exp(mean x) with a
  Student-t interval over the launches, never narrower than the launches' own sampling error
  (the medians' intervals, as mpilab.launches does for one figure). Inside every launch a
  two-sided Mann-Whitney U test on the raw samples (scipy.stats.mannwhitneyu) must agree in
  direction at level alpha: a candidate "wins" only when the interval lies wholly on one
  side of 1, the effect is at least the minimum effect size, and every launch saw it.
* Unpaired (`unpaired`, for `mpilab diff` of two separate runs): the log of each run's
  launch-level figure (median of launch medians) carries the launch-level interval of
  mpilab.launches; the ratio's half width on the log scale is the root sum of squares of the
  two; the Mann-Whitney test on the pooled raw samples must agree. With one launch per run
  only the samples' own variation is known, which the result says (`launch_level` False).

Why not Mann-Whitney on launch medians alone: unpaired, it needs four launches a side before
any p below 0.05 is possible and ignores that the two contenders shared their launches.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import binom, mannwhitneyu, ttest_1samp, wilcoxon
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


def mw_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value; 1.0 when a group is empty or all values tie."""
    if len(a) == 0 or len(b) == 0 or len(set(a) | set(b)) == 1:
        return 1.0
    p = float(mannwhitneyu(list(a), list(b), alternative="two-sided", method="auto").pvalue)
    return p if math.isfinite(p) else 1.0


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
    p: float | None              # Mann-Whitney (paired: the largest over the launches)
    launches: int                # launches used (pairs of launches when paired)
    launch_level: bool           # the interval includes launch-to-launch variation
    significant: bool            # interval excludes 1 and the rank test agrees
    method: str
    per_launch: list[dict[str, float]] = field(default_factory=list)

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
                "per_launch": self.per_launch}


def _none(method: str, n: int = 0) -> Comparison:
    return Comparison(None, None, None, None, n, False, False, method)


def paired(a: list[list[float]], b: list[list[float]], cl: float = 0.95,
           alpha: float = ALPHA, unanimous: bool = True) -> Comparison:
    """b against a, measured in the same launches or in pairs of adjacent launches (a[k] and
    b[k] from launch or pair k). unanimous (the sweep's choice): significant only when the
    Mann-Whitney test inside every pair agrees too; otherwise (`mpilab diff --paired`) a
    paired t test on the log ratios: significant when its p < alpha and the interval (t,
    never narrower than the medians' own) excludes 1; p is then the t test's."""
    pairs = [(x, y) for x, y in zip(a, b, strict=False)
             if len(x) >= MIN_SAMPLES and len(y) >= MIN_SAMPLES]
    if not pairs:
        return _none("paired: too few samples", 0)
    logs, within, ps, per = [], [], [], []
    agree = True
    for x, y in pairs:
        mx, my = statistics.median(x), statistics.median(y)
        lr = math.log(my / mx)
        p = mw_p(x, y)
        logs.append(lr)
        within.append(_rel_half(x, cl) ** 2 + _rel_half(y, cl) ** 2)
        ps.append(p)
        per.append({"a": mx, "b": my, "ratio": my / mx, "p": p})
        agree = agree and p < alpha
    n = len(logs)
    mean = statistics.fmean(logs)
    floor = math.sqrt(sum(within)) / n
    between = (float(student_t.ppf((1 + cl) / 2, n - 1)) * statistics.stdev(logs) / math.sqrt(n)
               if n >= 2 else 0.0)
    h = min(max(between, floor), 700.0)
    sides = {lr > 0 for lr in logs}
    agree = agree and len(sides) == 1
    lo, hi = math.exp(mean - h), math.exp(mean + h)
    if unanimous:
        sig = agree and (hi < 1 or lo > 1)
        return Comparison(math.exp(mean), lo, hi, max(ps), n, n >= 2, sig,
                          "paired launches: t interval of the per-launch log ratios of "
                          "medians, Mann-Whitney inside every launch", per)
    p_t = float(ttest_1samp(logs, 0.0).pvalue) if n >= 2 and statistics.stdev(logs) > 0 \
        else 1.0
    p_t = p_t if math.isfinite(p_t) else 1.0
    sig = n >= 2 and p_t < alpha and (hi < 1 or lo > 1)
    return Comparison(math.exp(mean), lo, hi, p_t, n, n >= 2, sig,
                      "paired launches: t test and interval of the per-pair log ratios of "
                      "medians (never narrower than the medians' own intervals)", per)


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
                alpha: float = ALPHA) -> Comparison:
    """b against a from pairs of adjacent launches (`mpilab diff --paired`), robust to
    pairs far off: Wilcoxon's signed-rank test (scipy.stats.wilcoxon) on the per-pair log
    ratios of the launch medians, the Hodges-Lehmann estimate (median of the Walsh averages)
    and its distribution-free interval at level cl, never narrower than the medians' own
    intervals. Significant when p < alpha and the interval excludes 1.

    Why not the t test: one pair in which a launch met a load spike moves the mean and
    inflates the standard deviation of all pairs, so a real 10% slowdown was missed with an
    interval of 0.96..1.26 (session 16); a rank test counts that pair as one sign. Under no
    difference the log ratio of two launches of one program, run in ABBA order, is symmetric
    about 0, which is all the signed-rank test assumes."""
    pairs = [(x, y) for x, y in zip(a, b, strict=False)
             if len(x) >= MIN_SAMPLES and len(y) >= MIN_SAMPLES]
    if len(pairs) < 2:
        return _none("paired signed-rank: too few pairs", len(pairs))
    logs, within, per = [], [], []
    for x, y in pairs:
        mx, my = statistics.median(x), statistics.median(y)
        logs.append(math.log(my / mx))
        within.append(_rel_half(x, cl) ** 2 + _rel_half(y, cl) ** 2)
        per.append({"a": mx, "b": my, "ratio": my / mx, "p": mw_p(x, y)})
    n = len(logs)
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


def _figure(groups: list[list[float]], cl: float) -> tuple[float, float] | None:
    """(log of the median of launch medians, its half width on the log scale)."""
    gs = [g for g in groups if len(g) >= MIN_SAMPLES]
    if not gs:
        return None
    meds = [statistics.median(g) for g in gs]
    n = len(meds)
    logs = [math.log(m) for m in meds]
    eff = math.sqrt(math.pi / 2)
    between = (float(student_t.ppf((1 + cl) / 2, n - 1)) * eff * statistics.stdev(logs)
               / math.sqrt(n)) if n >= 2 else 0.0
    within = eff * math.sqrt(sum(_rel_half(g, cl) ** 2 for g in gs)) / n
    return math.log(statistics.median(meds)), max(between, within)


def unpaired(a: list[list[float]], b: list[list[float]], cl: float = 0.95,
             alpha: float = ALPHA) -> Comparison:
    """b against a from separate runs (launches not paired)."""
    fa, fb = _figure(a, cl), _figure(b, cl)
    if fa is None or fb is None:
        return _none("unpaired: too few samples")
    la = len([g for g in a if len(g) >= MIN_SAMPLES])
    lb = len([g for g in b if len(g) >= MIN_SAMPLES])
    d = fb[0] - fa[0]
    h = min(math.sqrt(fa[1] ** 2 + fb[1] ** 2), 700.0)
    p = mw_p([s for g in a for s in g], [s for g in b for s in g])
    lo, hi = math.exp(d - h), math.exp(d + h)
    sig = p < alpha and (hi < 1 or lo > 1)
    return Comparison(math.exp(d), lo, hi, p, min(la, lb), min(la, lb) >= 2, sig,
                      "unpaired runs: launch-level intervals of both figures on the log scale, "
                      "Mann-Whitney on the pooled samples", [])
