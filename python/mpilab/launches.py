"""Measurements repeated over separate launches (`mpilab bench --launches N`).

One launch of mpilab-bench reports a median with an interval that holds the sampling error
of that launch only. On a shared machine (and in a virtual machine) a whole launch can sit
at another level: pinned to the same CPUs, the same command gave shared-memory 1 KiB round
trips of 0.41-0.53 us in five launches, each with an interval of a few percent that held
none of the others (docs/bench-launches.md, "Run-to-run reproducibility without mpilab").
As ReproMPI does, the remedy is to measure over several launches (mpirun invocations) and
report a figure and an interval that include the launch-to-launch variation:

* the figure is the median of the launches' medians;
* its interval is multiplicative, `median * exp(-+h)` (launch levels differ by factors), with
  `h = sqrt(2) * max(t(cl, N-1) * sqrt(pi/2) * sd(log launch medians) / sqrt(N),
                     sqrt(pi/2) * sqrt(sum of log(1 + r_i)^2) / N)`
  (r_i: a launch's own relative half width):
  the prediction interval for the figure a repeat of the command (N launches again) would
  report. The Student-t interval of the launch effects (sqrt(pi/2): a median of normal
  values is that much less efficient than their mean) is the confidence interval of the
  figure's level; a repeat's figure has its own launch effects too, hence sqrt(2) (the
  standard error of a difference of two independent figures). The launches' sampling
  error is the floor (launches that agree by chance do not make the figure more precise
  than its samples). From 6 launches on it also holds the distribution-free
  order-statistic interval of the launch medians (as mpilab_median_ci). Fitted model
  parameters keep the confidence interval (their target is the parameter's truth);
* `converged` holds when every launch converged and the interval meets the precision's
  eps; the flag `launches_disagree` says that some launch's own interval does not hold the
  figure (that launch alone would have misreported it);
* fitted parameters estimated from minima (Hockney alpha, LogGP L: floors of the link) set
  aside a launch whose own interval lies wholly above the lowest launch's and more than
  FLOOR_GAP above its value (merge_floor_param: scheduler contention kept that launch off
  the floor another launch reached), flag `launches_set_aside`, and name it.

`merge` is pure (documents in, document out); the command lives in commands/bench.py.
"""

from __future__ import annotations

import copy
import math
import statistics
from collections.abc import Callable
from typing import Any

from mpilab import quality
from mpilab.pair_matrix import expand_all
from mpilab.tdist import T_TABLE as T_TABLE  # the t quantiles, named here too
from mpilab.tdist import _scipy_stats, t_quantile
from mpilab.tdist import t_abs_cdf as t_abs_cdf
from mpilab.tdist import write_t_table as write_t_table

LAUNCHES_DISAGREE = quality.LAUNCHES_DISAGREE
METHOD = ("median of the launch medians m; prediction interval for a repeat's figure "
          "m exp(-+h), h = sqrt(2) max(t(cl, N-1) sqrt(pi/2) sd(log launch medians) / "
          "sqrt(N), sqrt(pi/2) sqrt(sum log(1 + r_i)^2) / N of the launches' own relative half "
          "widths r_i), holding the order-statistic interval of the launch medians from 6 "
          "launches on")
VARIATION_METHOD = (
    "median of the launch medians m (one launch: its median); prediction interval for a "
    "repeat's figure m exp(-+h), h = t(cl, df) s sqrt(c_N/N + c_R/R): s the moderated standard "
    "deviation of log launch medians from the machine's stored launch-to-launch variation "
    "(this measurement's own launches shrunk towards its operation's pooled over sizes), N "
    "launches here, R in the repeat, c = 1 for one or two launches and pi/2 from three; never "
    "narrower than the launches' own sampling error")
_KEY_FIELDS = ("op", "impl", "timing", "isolation", "schedule", "bytes", "bytes_back", "root",
               "ranks")
_SUM_FIELDS = ("wall_s", "all_pairs_wall_s")
_MAX_FIELDS = ("clock_sync_uncertainty_s", "clock_sync_residual_s")
MAX_LAUNCHES = 1000


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(v) else None


def os_interval(values: list[float], cl: float) -> tuple[float, float] | None:
    """Distribution-free interval of the median from order statistics (as
    mpilab_median_ci): the largest k with 1 - 2 P(B <= k-1) >= cl, B ~ Binomial(n, 1/2)
    (scipy.stats.binom); None when none exists."""
    import numpy as np  # only here: the default bench's path never needs numpy's 0.1 s import

    s = sorted(values)
    n = len(s)
    ks = np.arange(1, (n + 1) // 2 + 1)
    cover = 1 - 2 * _scipy_stats().binom.cdf(ks - 1, n, 0.5)
    # coverage falls as k grows: the k that reach cl are a prefix
    best = int(np.count_nonzero(cover >= cl))
    return (s[best - 1], s[n - best]) if best else None


def launch_interval(medians: list[float], halves: list[float | None], cl: float,
                    predict: bool = False) -> tuple[float, float, float, dict[str, Any]]:
    """(figure, lo, hi, parts) over launches with these medians and own half widths.
    Launch levels differ by factors (a launch 20% slower at every size), so the interval is
    computed on the logarithm of the launch medians and is multiplicative: m * exp(-+h),
    never below zero (a symmetric interval on seconds went negative when one launch of five
    sat 3x above the others). The parts are reported in seconds, relative to the figure.

    predict=False: the confidence interval of the figure's expected level (a fitted model
    parameter's truth). predict=True: the prediction interval for the figure a repeat of the
    same design (as many launches again) would report, which is what a user who runs the
    command again sees: the difference of two independent figures has sqrt(2) times one
    figure's standard error, so both parts are sqrt(1/N + 1/N) / sqrt(1/N) = sqrt(2) times
    the confidence interval's (the t quantile keeps N-1 degrees of freedom: the variance is
    still estimated from these N launches). `ci_half_s` keeps the confidence interval's half
    width beside it."""
    n = len(medians)
    m = statistics.median(medians)
    eff = math.sqrt(math.pi / 2)
    widen = math.sqrt(2.0) if predict else 1.0
    positive = all(x > 0 for x in medians)
    logs = [math.log(x) for x in medians] if positive else []
    sd = statistics.stdev(logs) if n >= 2 and positive else None
    between = t_quantile(cl, n - 1) * eff * sd / math.sqrt(n) if sd is not None else None
    # each launch's own half width relative to its median, on the same log scale as the
    # launch effects: log(1 + r) (= r for the usual few percent; a launch of 16 repetitions
    # whose interval reached 1200x its median gave r = 603, which as a log half width made
    # the merged interval 1e-169 .. 2e159 s)
    rel = [math.log1p(h / x) for h, x in zip(halves, medians, strict=True)
           if h is not None and x > 0]
    within = eff * math.sqrt(sum(h * h for h in rel)) / n if len(rel) == n else None
    parts = [h for h in (between, within) if h is not None]

    def secs(h: float | None) -> float | None:
        return None if h is None else m * h
    info = {"sd_s": secs(sd),
            "between_half_s": secs(None if between is None else widen * between),
            "within_half_s": secs(None if within is None else widen * within),
            "ci_half_s": secs(max(parts) if parts else None),
            "interval": "prediction" if predict else "confidence"}
    if not parts or m <= 0:
        return m, math.nan, math.nan, info
    # a half width beyond exp's range (a launch median next to zero with a wide interval of
    # its own) means no bound at all: capped so the interval is huge, never an error
    half = min(widen * max(parts), 700.0)
    lo, hi = m * math.exp(-half), m * math.exp(half)
    osi = os_interval(medians, cl) if n >= 6 else None
    if osi is not None:
        lo, hi = min(lo, osi[0]), max(hi, osi[1])
    return m, lo, hi, info


CI_WIDE = "ci_wide"
DURATION_MAX_S = 1e6  # the results schema's largest possible time (duration_or_null)


def merge_param(values: list[float], los: list[float | None], his: list[float | None],
                cl: float = 0.95, eps: float = 0.025) -> dict[str, Any]:
    """One fitted parameter (Hockney alpha, LogGP L, ...) over launches: the median of the
    launches' values with the launch-level interval of `launch_interval` (multiplicative
    when every value is positive; additive, m -+ h with the same two parts, when one is
    zero or negative, e.g. a clamped L), each launch's own interval half width (hi - lo) / 2
    as the floor. A one-launch fit holds only that launch's sampling error: on this machine
    the level of a whole launch moves by a few percent, so a single launch's alpha interval
    held the testbed's truth in 1 of 5 quiet runs (docs/models-robust.md). Returns value, lo, hi,
    launch values, `disagree` when some launch's own interval does not hold the value, and
    `wide` when the merged interval's half width exceeds eps * |value| (the fits' ci_wide,
    taken again on the merged interval: the launches' own verdicts no longer apply)."""
    n = len(values)
    if n == 0:
        raise ValueError("no launch value")
    halves: list[float | None] = []
    for lo_k, hi_k in zip(los, his, strict=True):
        ok = lo_k is not None and hi_k is not None and math.isfinite(lo_k) and math.isfinite(hi_k)
        halves.append((hi_k - lo_k) / 2 if ok and hi_k >= lo_k else None)  # type: ignore[operator]
    known = [h for h in halves if h is not None]
    if known and len(known) < n:  # a launch without an interval is taken as imprecise as
        rms = math.sqrt(sum(h * h for h in known) / len(known))  # the others, not exact
        halves = [rms if h is None else h for h in halves]
    if all(v > 0 for v in values):
        m, lo, hi, _ = launch_interval(values, halves, cl)
    else:
        m = statistics.median(values)
        eff = math.sqrt(math.pi / 2)
        parts = []
        if n >= 2:
            parts.append(t_quantile(cl, n - 1) * eff * statistics.stdev(values) / math.sqrt(n))
        if all(h is not None for h in halves):
            parts.append(eff * math.sqrt(sum(h * h for h in halves if h is not None)) / n)
        lo, hi = (m - max(parts), m + max(parts)) if parts else (math.nan, math.nan)
    disagree = any(lo_k is not None and hi_k is not None and not lo_k <= m <= hi_k
                   for lo_k, hi_k in zip(los, his, strict=True))
    wide = not (hi - lo) / 2 <= eps * abs(m)
    return {"value": m, "lo": lo, "hi": hi, "launch_values": list(values),
            "disagree": disagree, "wide": wide}


#: a floor estimator's launch set aside (merge_floor_param): its own interval lay wholly
#: above the lowest launch's and more than FLOOR_GAP above its value
LAUNCHES_SET_ASIDE = quality.LAUNCHES_SET_ASIDE
#: the parameters estimated from minima (a physical floor of the link: the latency)
FLOOR_PARAMS = frozenset({"L", "alpha"})
#: how far above the lowest launch's floor another launch's whole interval must lie to be set
#: aside. On the testbed (docs/models-robust.md) the floors of quiet launches of the same command
#: differed by up to 3.3% (0-byte minima 2049-2118 us over 5 runs; 0.3-1.4% in
#: later runs), launches held off their CPUs by two busy loops came out 45-50% high
#: and doubled ones 95%: 10% lies well between the two.
FLOOR_GAP = 0.10


def floor_outliers(values: list[float], los: list[float | None], his: list[float | None],
                   gap: float = FLOOR_GAP) -> list[int]:
    """The launches (0-based) a floor estimator sets aside. L and alpha are estimated from
    minima: each launch's value is the lowest its samples came, so a launch can be late
    (scheduler contention held its ranks off their CPUs for whole ticks and its floor never
    came near the link's) but never early. A launch is set aside when its own interval lies
    wholly above both the lowest launch's own interval and the lowest value plus `gap`: it
    did not reach a floor another launch of the same command reached. Launches closer than
    that, or whose intervals reach down to the lowest one's, are launch-to-launch variation
    and kept. A launch without an interval is kept, and so is the lowest; nothing is set
    aside when the lowest launch has no interval or its value is not positive."""
    n = len(values)
    if n < 2:
        return []
    low = min(range(n), key=lambda k: values[k])
    low_hi = his[low]
    if low_hi is None or not math.isfinite(low_hi) or not values[low] > 0:
        return []
    bar = max(low_hi, values[low] * (1 + gap))
    out = []
    for k in range(n):
        lk = los[k]
        if k != low and lk is not None and math.isfinite(lk) and lk > bar:
            out.append(k)
    return out


def merge_floor_param(values: list[float], los: list[float | None], his: list[float | None],
                      cl: float = 0.95, eps: float = 0.025,
                      gap: float = FLOOR_GAP) -> dict[str, Any]:
    """merge_param for a floor estimator (FLOOR_PARAMS): the launches floor_outliers sets
    aside are left out of the figure and its interval, which then describe what the kept
    launches saw (and what a repeat of the command reports as long as one of its launches
    reaches the floor: the figure is the floor reached, not how often it was reached). The
    result says which launches were set aside (1-based, `set_aside`) and why
    (`set_aside_why`); `launch_values` keeps every launch's value. `disagree` and `wide` are
    taken over the kept launches."""
    out_k = floor_outliers(values, los, his, gap)
    keep = [k for k in range(len(values)) if k not in out_k]
    r = merge_param([values[k] for k in keep], [los[k] for k in keep], [his[k] for k in keep],
                    cl, eps)
    r["launch_values"] = list(values)
    r["set_aside"] = [k + 1 for k in out_k]
    if out_k:
        r["set_aside_why"] = (
            f"launch(es) {', '.join(str(k + 1) for k in out_k)} of {len(values)} set aside: "
            "own interval wholly above the lowest launch's interval and more than "
            f"{gap * 100:g}% above its value {min(values):.6g} (a floor estimator is late, "
            "never early: such a launch never came down to the floor another launch of the "
            "same command reached, so it measured something on the way, not the link)")
    return r


_MODEL_KINDS = ("hockney", "loggp")


def merge_models(docs: list[dict[str, Any]], cl: float = 0.95) -> int:
    """Launch-level model parameters in place in docs[0]'s models: for every Hockney and
    LogGP pair that every launch fitted, each parameter with a stated interval (its
    `quality` entry) becomes merge_param over the launches (merge_floor_param for alpha and
    L, with `set_aside` and `set_aside_why` when it sets a launch aside); the quality entry
    gets the launch-level interval, the launches' values and the flags launches_disagree
    and launches_set_aside when they apply, and keeps the union of the launches' own flags.
    Per-range fits, residuals and predictions stay launch 1's. Returns how many parameters
    were merged."""
    base = docs[0].get("models")
    if not isinstance(base, dict) or len(docs) < 2:
        return 0
    merged = 0
    for kind in _MODEL_KINDS:
        pairs = (base.get(kind) or {}).get("pairs") if isinstance(base.get(kind), dict) else None
        if not isinstance(pairs, list):
            continue
        others = []
        for d in docs[1:]:
            mk = (d.get("models") or {}).get(kind) if isinstance(d.get("models"), dict) else None
            ps = mk.get("pairs") if isinstance(mk, dict) else None
            others.append({(p.get("i"), p.get("j")): p for p in ps or [] if isinstance(p, dict)})
        for p in pairs:
            if not isinstance(p, dict) or not isinstance(p.get("quality"), dict):
                continue
            mates = [o.get((p.get("i"), p.get("j"))) for o in others]
            if any(not isinstance(q, dict) for q in mates):
                continue
            group = [p, *mates]
            for name, q in p["quality"].items():
                merged += _merge_one(group, name, q, cl)
    return merged


def _merge_one(group: list[dict[str, Any]], name: str, q: Any, cl: float) -> int:
    vals, los, his, flags = [], [], [], []
    for g in group:
        gq = (g.get("quality") or {}).get(name)
        v = _num(g.get(name))
        if not isinstance(gq, dict) or v is None:
            return 0
        vals.append(v)
        los.append(_num(gq.get("lo")))
        his.append(_num(gq.get("hi")))
        flags += [f for f in gq.get("flags") or [] if isinstance(f, str) and f not in flags
                  and f not in (CI_WIDE, LAUNCHES_DISAGREE, LAUNCHES_SET_ASIDE)]
    # alpha and L are floors (minima): a launch that never came near another's is set aside
    r = (merge_floor_param if name in FLOOR_PARAMS else merge_param)(vals, los, his, cl)
    if not math.isfinite(r["lo"]):
        return 0
    # model parameters are times and rates, never below 0: a fit clamps them and their
    # intervals at 0 (plausible.py refuses a negative end), and so does the merge
    r["lo"], r["hi"] = max(r["lo"], 0.0), max(r["hi"], 0.0)
    group[0][name] = max(r["value"], 0.0)
    flags += [f for f, on in ((CI_WIDE, r["wide"]), (LAUNCHES_DISAGREE, r["disagree"]),
                              (LAUNCHES_SET_ASIDE, bool(r.get("set_aside")))) if on]
    raws = [_num((g.get("quality") or {}).get(name, {}).get("raw")) for g in group]
    q.update({"raw": statistics.median(x for x in raws if x is not None)
              if any(x is not None for x in raws) else q.get("raw"),
              "lo": r["lo"], "hi": r["hi"], "flags": flags,
              "launch_values": r["launch_values"]})
    if r.get("set_aside"):
        q.update({"set_aside": r["set_aside"], "set_aside_why": r["set_aside_why"]})
    return 1


def key_of(m: dict[str, Any]) -> tuple[Any, ...]:
    pair = m.get("pair")
    return tuple(m.get(f) for f in _KEY_FIELDS) + (tuple(pair) if isinstance(pair, list)
                                                    else None,)


def _pooled_stats(samples: list[Any], valid: list[bool], cl: float) -> dict[str, Any]:
    ok = [float(s) for s, v in zip(samples, valid, strict=True)
          if v and _num(s) is not None]
    out: dict[str, Any] = {"reps": len(samples), "invalid": len(samples) - len(ok)}
    if not ok:
        out.update(mean=None, ci_half=None, rel_err=None, min=None, max=None, stdev=None)
        return out
    mean = statistics.fmean(ok)
    sd = statistics.stdev(ok) if len(ok) >= 2 else 0.0
    half = t_quantile(cl, len(ok) - 1) * sd / math.sqrt(len(ok)) if len(ok) >= 2 else None
    out.update(mean=mean, ci_half=half,
               rel_err=(half / mean if half is not None and mean > 0 else None),
               min=min(ok), max=max(ok), stdev=sd)
    return out


def _half(st: dict[str, Any]) -> float | None:
    lo, hi = _num(st.get("med_lo")), _num(st.get("med_hi"))
    if lo is None or hi is None:
        return None
    return (hi - lo) / 2


def _merged_derived(ms: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The entry's derived values over the launches: each number the median of the
    launches' values (for an odd number of launches, a quantity derived monotonically from
    the figure, as a message rate or bandwidth, then equals the one derived from the
    launch-level figure); anything else as launch 1 had it."""
    ds = [m.get("derived") for m in ms]
    if not isinstance(ds[0], dict):
        return None
    out = copy.deepcopy(ds[0])
    for k, v in ds[0].items():
        vals = [_num(d.get(k)) if isinstance(d, dict) else None for d in ds]
        if _num(v) is not None and all(x is not None for x in vals):
            out[k] = statistics.median(x for x in vals if x is not None)
    return out


#: the machine's launch-to-launch variation for one measurement: given the measurement (its
#: first launch's dict) and the launch medians of this run, the half width on the log scale
#: that the machine's launch levels alone give a repeat's figure, and what it was made of
#: (mpilab.launchvar); None when the machine's variation is not known
Variation = Callable[[dict[str, Any], list[float]], "tuple[float, dict[str, Any]] | None"]
#: the precision reached is at the machine's limit (launch-to-launch variation above the asked
#: eps): the measurement converged there, not at eps
AT_MACHINE_LIMIT = quality.AT_MACHINE_LIMIT
#: one launch and no knowledge of the machine's launch-to-launch variation: the interval holds
#: this launch's sampling error only
VARIATION_UNKNOWN = quality.VARIATION_UNKNOWN
#: this run's figure lies outside the interval around the machine's usual level for it
OFF_USUAL_LEVEL = quality.OFF_USUAL_LEVEL


def _variation_interval(medians: list[float], halves: list[float | None], fig: float,
                        machine_h: float) -> tuple[float, float, float]:
    """(lo, hi, floor) around fig: the machine's half width on the log scale, never narrower
    than the launches' own sampling error (one launch: its own interval; several: the
    median's share of their intervals)."""
    rel = [math.log1p(h / x) for h, x in zip(halves, medians, strict=True)
           if h is not None and x > 0]
    n = len(medians)
    if len(rel) < n:
        floor = math.inf
    elif n == 1:
        floor = rel[0]
    else:
        floor = math.sqrt(math.pi / 2) * math.sqrt(sum(h * h for h in rel)) / n
    half = min(max(machine_h, floor), 700.0)
    return fig * math.exp(-half), fig * math.exp(half), floor


def merge_measurement(ms: list[dict[str, Any]],
                      variation: Variation | None = None) -> dict[str, Any]:
    """One measurement over its launches (ms: the same measurement from each launch that
    has a median, in launch order). With `variation` the interval is the machine's (stored
    launch-to-launch variation, floored by the launches' own sampling error) and a
    measurement whose launches converged is converged, at eps or at the machine's limit;
    without it, the interval comes from these launches alone (launch_interval)."""
    first = ms[0]
    prec = first.get("precision") if isinstance(first.get("precision"), dict) else {}
    cl = _num(prec.get("cl")) or 0.95
    eps = _num(prec.get("eps"))
    # one launch: its samples and sample statistics stand as they are (no copy of them)
    out = dict(first) if len(ms) == 1 else copy.deepcopy(first)
    if len(ms) > 1:
        samples: list[Any] = []
        valid: list[bool] = []
        for m in ms:
            s = m.get("samples") if isinstance(m.get("samples"), list) else []
            v = m.get("valid") if isinstance(m.get("valid"), list) else [True] * len(s)
            samples += s
            valid += [x is not False for x in v[:len(s)]] + [True] * (len(s) - len(v))
        out["samples"], out["valid"] = samples, valid
    sts = [m["stats"] for m in ms]
    medians = [float(st["median"]) for st in sts]
    halves = [_half(st) for st in sts]
    var = variation(first, medians) if variation is not None else None
    limit = None
    asked = _num(var[1].get("eps_asked")) if var is not None else None
    if asked is not None and asked != eps:
        # the launch measured to a relaxed eps (--eps-for); the verdict is against the asked
        out["precision"] = {**prec, "eps": asked, "eps_launch": eps}
        eps = asked
    off_level = False
    if var is not None:
        fig = statistics.median(medians)
        lo, hi, _floor = _variation_interval(medians, halves, fig, var[0])
        limit = math.expm1(var[0])
        usual = _num(var[1].get("usual"))
        if usual is not None and usual > 0 and not usual * math.exp(-var[0]) <= fig \
                <= usual * math.exp(var[0]):
            # this run sits off the machine's usual level: a repeat most likely reports the
            # usual level, so the interval reaches back to it
            off_level = True
            lo, hi = min(lo, usual * math.exp(-var[0])), max(hi, usual * math.exp(var[0]))
        parts: dict[str, Any] = {"interval": "prediction", "variation": {**var[1],
                                                                         "limit_rel": limit}}
    elif len(ms) == 1 and halves[0] is not None:
        fig, lo, hi = medians[0], medians[0] - halves[0], medians[0] + halves[0]
        parts = {"interval": "launch"}
    else:
        fig, lo, hi, parts = launch_interval(medians, halves, cl, predict=True)
    st = dict(sts[0]) if len(ms) == 1 else _pooled_stats(out["samples"], out["valid"], cl)
    # an interval reaching beyond any possible time (two launches whose medians differ by a
    # factor of 10^4 under load: t(0.975, 1) = 12.7 on the log scale gave 3e39 s) bounds
    # nothing: no interval, not converged, rather than a file its own reader refuses
    has_ci = math.isfinite(lo) and math.isfinite(hi) and hi <= DURATION_MAX_S
    rel = (hi - lo) / 2 / abs(fig) if has_ci and fig != 0 else None
    all_conv = all(s.get("converged") is True for s in sts)
    # at the machine's limit a launch that converged cannot do better: the interval is the
    # launch levels' (sinh(h) <= expm1(h) = limit), or its own, within eps
    reach = eps if limit is None or eps is None else max(eps, limit) * (1 + 1e-12)
    conv = all_conv and rel is not None and reach is not None and rel <= reach and not off_level
    at_limit = conv and eps is not None and rel is not None and rel > eps
    st.update(median=fig, med_lo=lo if has_ci else None, med_hi=hi if has_ci else None,
              med_rel_err=rel, converged=conv)
    out["stats"] = st
    flags: list[str] = []
    for m in ms:
        for f in quality.measurement_flags(m):
            if f not in flags and f not in (quality.NOT_CONVERGED, quality.ISOLATION_DIFFERS):
                flags.append(f)
    if not conv:
        flags.insert(0, quality.NOT_CONVERGED)
    if at_limit:
        flags.append(AT_MACHINE_LIMIT)
    if var is None and len(ms) == 1:
        flags.append(VARIATION_UNKNOWN)
    if off_level:
        flags.append(OFF_USUAL_LEVEL)
    own = [(_num(s.get("med_lo")), _num(s.get("med_hi"))) for s in sts]
    outside = sum(1 for a, b in own if a is None or b is None or not a <= fig <= b)
    if outside:
        flags.append(LAUNCHES_DISAGREE)
    out["flags"] = flags
    out["derived"] = _merged_derived(ms)
    if out["derived"] is None:
        del out["derived"]
    for f in _SUM_FIELDS:
        vals = [_num(m.get(f)) for m in ms]
        if all(v is not None for v in vals):
            out[f] = sum(v for v in vals if v is not None)
    for f in _MAX_FIELDS:
        vals = [v for v in (_num(m.get(f)) for m in ms) if v is not None]
        if vals:
            out[f] = max(vals)
    spread = (max(medians) - min(medians)) / abs(fig) if fig != 0 else None
    out["launches"] = {"n": len(ms), "medians": medians,
                       "med_lo": [a for a, _ in own], "med_hi": [b for _, b in own],
                       "reps": [s.get("reps") for s in sts],
                       "converged": [s.get("converged") is True for s in sts],
                       "spread": spread, "outside": outside, **parts}
    return out


def merge(docs: list[dict[str, Any]], files: list[str], asked: int | None = None,
          variation: Variation | None = None) -> dict[str, Any]:
    """The results document of N launches of the same command: provenance of the first
    launch, every measurement merged over the launches that measured it
    (docs/bench-launches.md); the per-launch files keep their models. `asked`: launches
    asked for (the file is partial when fewer completed, or when a launch's file is
    partial)."""
    if not docs:
        raise ValueError("no launch to merge")
    # one launch: its measurements are rebuilt below; the rest is shared with docs[0]
    base = dict(docs[0]) if len(docs) == 1 else copy.deepcopy(docs[0])
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    order: list[tuple[Any, ...]] = []
    for d in docs:
        # compact all-pairs objects are merged pair by pair (the merged file holds the
        # per-pair form, which every reader accepts)
        for m in expand_all(d.get("measurements", []) or []):
            if not isinstance(m, dict):
                continue
            st = m.get("stats") if isinstance(m.get("stats"), dict) else {}
            if _num(st.get("median")) is None:
                continue
            k = key_of(m)
            if k not in groups:
                groups[k] = []
                order.append(k)
            groups[k].append(m)
    base["measurements"] = [merge_measurement(groups[k], variation) for k in order]
    quality.mark_isolation(base["measurements"])  # on the merged figures, not launch 1's
    # each fitted parameter with an interval: the launch-level figure (merge_models); per
    # range fits, residuals and predictions stay launch 1's, said so in launches.models
    has_models = isinstance(base.get("models"), dict)
    merged_params = merge_models([base, *docs[1:]]) if has_models else 0
    n = len(docs)
    partial_launches = [i + 1 for i, d in enumerate(docs) if d.get("partial") is True]
    base["launches"] = {"n": n, "asked": asked if asked is not None else n, "files": files,
                        "dates": [(d.get("provenance") or {}).get("date") for d in docs],
                        "method": METHOD if variation is None else VARIATION_METHOD,
                        "models": (f"{merged_params} parameter(s) with an interval are the "
                                   "median over the launches' fits with a launch-level "
                                   "interval; ranges, residuals and predictions are launch "
                                   "1's (each launch's file has its own)") if has_models
                        else "none"}
    reasons = []
    if asked is not None and n < asked:
        reasons.append(f"{n} of {asked} launches completed")
    if partial_launches:
        reasons.append("partial launch file(s): " + ", ".join(map(str, partial_launches)))
    if reasons:
        base["partial"] = True
        base["partial_reason"] = "; ".join(reasons)
    else:
        base.pop("partial", None)
        base.pop("partial_reason", None)
    return base


def measuring_s(doc: dict[str, Any]) -> float:
    """The time a launch spent measuring: each measurement's own wall time (an all-pairs
    point-to-point object's `all_pairs_wall_s`, once for all its pairs)."""
    total = 0.0
    for m in doc.get("measurements") or []:
        if isinstance(m, dict):
            total += _num(m.get("wall_s")) or _num(m.get("all_pairs_wall_s")) or 0.0
    return total


def cost(docs: list[dict[str, Any]], walls: list[float]) -> dict[str, Any]:
    """What the launches cost: each launch's wall time, the part of it spent measuring (the
    measurements' own wall_s) and the rest (start-up, clock sync, set-up: paid once per
    launch); the estimate of one launch with the whole budget (the measuring time plus one
    launch's overhead) and the extra cost of N launches against it."""
    measuring = [measuring_s(d) for d in docs]
    over = [max(0.0, w - m) for w, m in zip(walls, measuring, strict=True)]
    total = sum(walls)
    single = sum(measuring) + (statistics.fmean(over) if over else 0.0)
    return {"wall_s": walls, "measuring_s": measuring, "overhead_s": over, "total_s": total,
            "single_launch_estimate_s": single, "extra_s": total - single,
            "extra_rel": (total - single) / single if single > 0 else None}


def cost_line(c: dict[str, Any]) -> str:
    """The one line a user reads about the launches' price."""
    n = len(c.get("wall_s") or [])
    rel = c.get("extra_rel")
    pct = f" (+{rel * 100:.0f}%)" if isinstance(rel, float) else ""
    return (f"mpilab: {n} launches took {c['total_s']:.1f} s; one launch with the whole budget "
            f"would take about {c['single_launch_estimate_s']:.1f} s: the launch-level interval "
            f"cost {c['extra_s']:.1f} s more{pct} (--launches 1 for one launch and its own "
            "interval only)")

