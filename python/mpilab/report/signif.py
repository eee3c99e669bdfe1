"""When is a difference between two measured values real? The reports' one rule.

- If both values carry their raw repetitions (`samples`, at least MIN_SAMPLES valid ones
  each): a two-sided Mann-Whitney U test (scipy.stats.mannwhitneyu: exact for small samples
  without ties, the normal approximation with tie and continuity correction otherwise) at
  level ALPHA. It compares the distributions the medians come from.
- Otherwise: the confidence intervals the results carry (the median's order-statistic
  interval `med_lo..med_hi`, else mean +- ci_half). Two values differ significantly when
  their intervals do not overlap. This is conservative: non-overlapping 95% intervals mean
  a difference at a level well below 5%.
- A value without an interval is never declared different from anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

ALPHA = 0.05
MIN_SAMPLES = 8


@dataclass(frozen=True)
class Estimate:
    """A measured value with its interval (same units) and, if kept, its repetitions."""
    value: float | None
    lo: float | None = None
    hi: float | None = None
    samples: tuple[float, ...] = ()

    @property
    def has_ci(self) -> bool:
        return all(v is not None and math.isfinite(v) for v in (self.value, self.lo, self.hi))


@dataclass(frozen=True)
class Verdict:
    significant: bool
    method: str          # "mann-whitney", "ci-overlap" or "no-ci"
    ratio: float | None  # b / a
    p: float | None = None

    @property
    def text(self) -> str:
        if self.method == "no-ci":
            return "no interval"
        if not self.significant:
            return "not significant"
        return "significant" + (f" (p={self.p:.2g})" if self.p is not None else "")


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (scipy.stats.mannwhitneyu, method
    "auto": exact for small samples without ties, else the normal approximation with tie
    and continuity correction); 1.0 when a group is empty or every value is equal."""
    if len(a) == 0 or len(b) == 0:
        return 1.0
    if len(set(a) | set(b)) == 1:
        return 1.0  # every value equal: nothing to tell apart
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(list(a), list(b), alternative="two-sided", method="auto").pvalue)
    return p if math.isfinite(p) else 1.0


def intervals_overlap(a: Estimate, b: Estimate) -> bool:
    assert a.lo is not None and a.hi is not None and b.lo is not None and b.hi is not None
    return not (a.hi < b.lo or b.hi < a.lo)


def compare(a: Estimate, b: Estimate) -> Verdict:
    """Is b different from a? ratio = b / a."""
    ratio = None
    if a.value is not None and b.value is not None and a.value != 0 \
            and math.isfinite(a.value) and math.isfinite(b.value):
        ratio = b.value / a.value
    if len(a.samples) >= MIN_SAMPLES and len(b.samples) >= MIN_SAMPLES:
        p = mann_whitney_p(a.samples, b.samples)
        return Verdict(p < ALPHA, "mann-whitney", ratio, p)
    if not (a.has_ci and b.has_ci):
        return Verdict(False, "no-ci", ratio)
    return Verdict(not intervals_overlap(a, b), "ci-overlap", ratio)


def winner(cands: Sequence[tuple[str, Estimate]], lowest: bool = True
           ) -> tuple[str | None, str | None, Verdict | None]:
    """(best name, runner-up name, verdict). verdict.ratio = runner-up / best (> 1 when
    lowest wins); the best is a winner only if verdict.significant; with one candidate there
    is no verdict."""
    ok = [(n, e) for n, e in cands if e.value is not None and math.isfinite(e.value)]
    if not ok:
        return None, None, None
    ok.sort(key=lambda ne: ne[1].value if lowest else -ne[1].value)  # type: ignore[operator]
    if len(ok) == 1:
        return ok[0][0], None, None
    return ok[0][0], ok[1][0], compare(ok[0][1], ok[1][1])
