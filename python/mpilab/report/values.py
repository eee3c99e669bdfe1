"""The values the reports show, taken from measurements: the median with its interval
(the figure issue 9's stopping rule reports), flags, derived one-way time and bandwidth."""

from __future__ import annotations

import math
from collections.abc import Callable

from mpilab import quality
from mpilab.report import units
from mpilab.report.figs import Point
from mpilab.report.signif import Estimate
from mpilab.results_model import Measurement, Results

# Data moved by one call, as a multiple of the per-rank block m, for p ranks. Each entry
# declares its own volume (mpilab_op_t.volume, "volume" in `mpilab-bench --list --json`) and
# the results carry it per measurement as "bytes_moved"; this table only serves results files
# written before that.
VOLUME: dict[str, Callable[[int], int]] = {
    "scatter": lambda p: p - 1,
    "gather": lambda p: p - 1,
    "bcast": lambda p: p - 1,
    "reduce": lambda p: p - 1,
    "allreduce": lambda p: 2 * (p - 1),
    "allgather": lambda p: p * (p - 1),
    "alltoall": lambda p: p * (p - 1),
}


def num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) else None


def flags(m: Measurement) -> list[str]:
    """The measurement's flags (the file's, completed from its statistics) plus "negative"
    when the reported time is below zero, "no_ci" when it carries no interval and
    "ci_undetermined" when its interval determines nothing (units.undetermined: a rate
    computed from the time has the same ratio of ends)."""
    fl = quality.measurement_flags(m.raw)
    e = time_estimate(m)
    if e.value is not None and e.value < 0 and "negative" not in fl:
        fl.append("negative")
    if e.value is not None and not e.has_ci:
        fl.append("no_ci")
    if e.value is not None and units.undetermined(e.lo, e.hi, "s"):
        fl.append(units.FLAG_UNDETERMINED)
    return fl


def time_estimate(m: Measurement) -> Estimate:
    """Median and its order-statistic interval (med_lo..med_hi); files without those give
    the mean with its Student-t interval."""
    st = m.raw.get("stats") if isinstance(m.raw.get("stats"), dict) else {}
    samples = tuple(s for s, ok in zip(m.samples, m.valid or (True,) * len(m.samples),
                                       strict=False) if ok and s is not None and math.isfinite(s))
    med, lo, hi = num(st.get("median")), num(st.get("med_lo")), num(st.get("med_hi"))
    mean, half = num(st.get("mean")), num(st.get("ci_half"))
    if med is not None:
        if "med_lo" not in st and "med_hi" not in st and half is not None:
            # files from before the median's interval: the mean's half-width around it
            lo, hi = med - half, med + half
        return Estimate(med, lo, hi, samples)
    if mean is None:
        return Estimate(None)
    if half is None:
        return Estimate(mean, samples=samples)
    return Estimate(mean, mean - half, mean + half, samples)


def scaled(e: Estimate, k: float) -> Estimate:
    """k * value (k > 0): the interval scales with it."""
    def f(v: float | None) -> float | None:
        return None if v is None else v * k
    return Estimate(f(e.value), f(e.lo), f(e.hi), tuple(s * k for s in e.samples))


def inverse(e: Estimate, k: float) -> Estimate:
    """k / value (a rate from a time): the interval's ends swap."""
    def f(v: float | None) -> float | None:
        return None if v is None or v <= 0 else k / v
    return Estimate(f(e.value), f(e.hi), f(e.lo),
                    tuple(k / s for s in e.samples if s > 0))


# derived values of the suite entries: how they depend on the measured time t
PROPORTIONAL = ("latency_s",)                 # value = t / k
INVERSE = ("bandwidth_Bps", "msg_rate")       # value = k / t


def derived(m: Measurement, key: str) -> float | None:
    d = m.raw.get("derived")
    return num(d.get(key)) if isinstance(d, dict) else None


def derived_estimate(m: Measurement, key: str) -> Estimate:
    """A derived value with the interval of the time it was computed from (scaled for a
    value proportional to the time, ends swapped for a rate); other derived values (CPU
    availability, overlap) have no interval."""
    v = derived(m, key)
    if v is None:
        return Estimate(None)
    t = time_estimate(m)
    if t.value is None or t.value <= 0 or key not in PROPORTIONAL + INVERSE:
        return Estimate(v)
    if key in PROPORTIONAL:
        return scaled(t, v / t.value)
    return inverse(t, v * t.value)


def oneway(m: Measurement) -> Estimate:
    """Point-to-point: half the round trip."""
    return scaled(time_estimate(m), 0.5)


def ranks_of(r: Results, m: Measurement) -> int:
    if m.ranks:
        return m.ranks
    pr = r.provenance.get("ranks")
    return int(pr) if isinstance(pr, int) else 0


def volume(r: Results, m: Measurement) -> float | None:
    """Bytes moved by one call (None: not known for this op)."""
    moved = num(m.raw.get("bytes_moved"))
    if moved is not None:
        return moved
    if m.is_p2p:
        return float(m.bytes)
    f = VOLUME.get(m.op)
    p = ranks_of(r, m)
    if f is None or p < 2:
        return None
    return float(f(p) * m.bytes)


def bandwidth(r: Results, m: Measurement) -> Estimate:
    """Data moved divided by the time (one-way time for point-to-point)."""
    vol = volume(r, m)
    if not vol or vol <= 0:
        return Estimate(None)
    e = oneway(m) if m.is_p2p else time_estimate(m)
    return inverse(e, vol)


def point(x: float, e: Estimate, fl: list[str], reps: int | None) -> Point:
    return Point(x=x, y=e.value, lo=e.lo, hi=e.hi, reps=reps, flags=list(fl))


def size_label(m: Measurement) -> str:
    from mpilab.report.units import fmt_bytes
    if m.bytes_back is None or m.bytes_back == m.bytes:
        return fmt_bytes(m.bytes)
    return f"{fmt_bytes(m.bytes)} / {fmt_bytes(m.bytes_back)}"


def where(m: Measurement) -> str:
    if m.pair:
        return f"{m.pair[0]}-{m.pair[1]}" + (f" {m.schedule}" if m.schedule else "")
    return "" if m.root is None else f"root {m.root}"
