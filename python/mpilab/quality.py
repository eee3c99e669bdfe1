"""Quality of the numbers in a results document: the flags every measurement and model
parameter carries, a summary of what converged and what should not be trusted, the one-line
verdict for a run too noisy to converge, and the scan for impossible values shown without a
flag (negative times, negative latency, bandwidth or gap).

Works on the raw JSON document (a dict), so that it also applies to partial files and to
files written by older runners (flags are then derived from the statistics).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from mpilab import samples_file, tcpcount
from mpilab.errors import MpilabError
from mpilab.pair_matrix import expand_all

# measurement flags (docs/results-schema.md)
NOT_CONVERGED = "not_converged"      # stopped (budget or max_reps) without the asked precision
INVALID_SAMPLES = "invalid_samples"  # some repetitions excluded (late start, negative time)
NEGATIVE_TIME = "negative_time"      # a corrected time <= 0 was excluded (root timing)
NO_VALID = "no_valid_samples"        # nothing left to report
CLOCK_UNCERTAIN = "clock_uncertain"  # global timing: the clock sync's uncertainty > eps * median
LAUNCHES_DISAGREE = "launches_disagree"  # over launches: some launch's interval missed the figure
ISOLATION_DIFFERS = "isolation_differs"  # isolated and back-to-back figures: intervals apart
# the interval is the machine's launch-to-launch limit, above the asked eps: converged there
AT_MACHINE_LIMIT = "at_machine_limit"
# one launch, the machine's launch-to-launch variation unknown: its own interval only
VARIATION_UNKNOWN = "launch_variation_unknown"
# this run's figure lies off the machine's usual level for the measurement (its stored launches)
OFF_USUAL_LEVEL = "off_usual_level"
# max or root timing whose interval misses the global-timing interval of the same entry,
# size and isolation (mpilab-bench sets it, with "global_other"): they missed a latency
GLOBAL_DIFFERS = "global_differs"
# all pairs asked in parallel: pairs measured again one at a time were slower in parallel
# beyond both intervals (mpilab-bench sets it, with "schedule_check"); the figures are then
# the sequential ones (docs/pairs.md, "Contention check")
PARALLEL_CONTENTION = "parallel_contention"
MEASUREMENT_FLAGS = (NOT_CONVERGED, INVALID_SAMPLES, NEGATIVE_TIME, NO_VALID, CLOCK_UNCERTAIN,
                     LAUNCHES_DISAGREE, ISOLATION_DIFFERS, AT_MACHINE_LIMIT, VARIATION_UNKNOWN,
                     OFF_USUAL_LEVEL, GLOBAL_DIFFERS, PARALLEL_CONTENTION)
ISOLATION_NOTE = ("isolated repetitions (barrier) each pay the whole operation from a common "
                  "start; back-to-back repetitions (none, as IMB and OSU time them) overlap one "
                  "operation's tail with the next one's start: neither is wrong, they answer "
                  "different questions (docs/bench.md, \"Isolation\")")

# parameter flags (mpilab_param_flags_str in C)
CLAMPED = "clamped"   # the fit's value was physically impossible (< 0) and is reported as 0
NO_CI = "no_ci"       # no interval could be computed
CI_WIDE = "ci_wide"   # the interval is wider than the precision asked
# over launches, a floor estimator (alpha, L): some launch's floor was set aside
# (launches.merge_floor_param: its interval lay wholly above the lowest launch's)
LAUNCHES_SET_ASIDE = "launches_set_aside"
# a Hockney beta whose sizes never reached the curve's top regime (mpilab-bench's model-size
# extension stopped at a limit first): the slope of the largest sizes, still bending
REGIME_NOT_REACHED = "regime_not_reached"
# a beta or G whose interval's fast end was moved down for TCP retransmissions during the run
# (mpilab.tcpcount; written by mpilab bench, not by the fitter)
RETRANS_WIDENED = tcpcount.RETRANS_WIDENED
# derived when read (the fitter does not write it): the estimate sits at an end of its own
# interval (lo < hi), which the fitter does when the bootstrap interval missed the estimate
# and was stretched to hold it: that interval says nothing about where a repeat would land
CI_EDGE = "ci_edge"

_PARAMS = ("alpha", "beta", "L", "G", "os", "or", "g")
_NOISY_FRACTION = 0.5


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _str_list(v: Any) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def measurement_flags(m: dict[str, Any]) -> list[str]:
    """The measurement's own flags, completed from its statistics (older files have none)."""
    flags = _str_list(m.get("flags"))
    st = m.get("stats") if isinstance(m.get("stats"), dict) else {}
    if st.get("converged") is False and NOT_CONVERGED not in flags:
        flags.append(NOT_CONVERGED)
    inv = _num(st.get("invalid"))
    if inv and inv > 0 and INVALID_SAMPLES not in flags:
        flags.append(INVALID_SAMPLES)
    return flags


def param_flags(quality: Any, name: str) -> list[str]:
    """Flags of parameter `name` in a model's "quality" object (empty if none)."""
    if not isinstance(quality, dict) or not isinstance(quality.get(name), dict):
        return []
    f = quality[name].get("flags")
    if isinstance(f, str):
        return [x for x in f.split(",") if x]
    return _str_list(f)


def at_interval_end(v: Any, lo: Any, hi: Any) -> bool:
    """The value equals an end of a non-empty interval lo < hi (10 significant digits)."""
    v, lo, hi = _num(v), _num(lo), _num(hi)
    if v is None or lo is None or hi is None or not all(map(math.isfinite, (v, lo, hi))):
        return False
    tol = 1e-9 * max(abs(v), abs(lo), abs(hi))
    if hi - lo <= tol:
        return False
    return abs(v - lo) <= tol or abs(v - hi) <= tol


def value_flags(value: Any, quality: Any, name: str) -> list[str]:
    """The flags of parameter `name` whose reported value is `value`: the file's, then
    ci_edge when the value sits at an end of its interval (not for a clamped value, whose
    interval starts at its clamp 0 by construction)."""
    fl = param_flags(quality, name)
    q = quality.get(name) if isinstance(quality, dict) else None
    # an interval widened for retransmissions (mpilab.tcpcount) is judged as measured
    lo = q.get("lo_measured", q.get("lo")) if isinstance(q, dict) else None
    if isinstance(q, dict) and CLAMPED not in fl and at_interval_end(value, lo, q.get("hi")):
        fl.append(CI_EDGE)
    return fl


def _model_pairs(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(label, parameter object, quality object) of every model parameter set, one at a time:
    a 10^5-measurement file has 67,000 sets and as many ranges, and a list of them with a
    quality object per range parameter held about 100 MB at once (the report's peak)."""
    models = doc.get("models") if isinstance(doc.get("models"), dict) else {}
    hock = models.get("hockney") if isinstance(models.get("hockney"), dict) else {}
    for p in hock.get("pairs", []) or []:
        if not isinstance(p, dict):
            continue
        label = f"hockney {p.get('i')}-{p.get('j')}"
        q = p.get("quality") if isinstance(p.get("quality"), dict) else {}
        yield label, p, q
        for r in p.get("ranges", []) or []:
            if isinstance(r, dict):
                # a range's flags apply to each of its parameters: one object for all
                rq = {"flags": _str_list(r.get("flags"))}
                yield (f"{label} range {r.get('from')}..{r.get('to')}", r,
                       dict.fromkeys(_PARAMS, rq))
    lg = models.get("loggp") if isinstance(models.get("loggp"), dict) else {}
    for p in lg.get("pairs", []) or []:
        if not isinstance(p, dict):
            continue
        label = f"loggp {p.get('i')}->{p.get('j')}"
        q = p.get("quality") if isinstance(p.get("quality"), dict) else {}
        # the parameters sit on the pair (older writers: under "params")
        yield label, (p["params"] if isinstance(p.get("params"), dict) else p), q


def unflagged_problems(doc: dict[str, Any]) -> list[str]:
    """Impossible values shown without a flag: a negative valid sample or statistic of a
    measurement, a negative model parameter (alpha, beta, L, G, o_s, o_r, g) without a flag
    saying why, a negative prediction. Empty when the document is honest."""
    probs: list[str] = []
    # compact all-pairs objects are checked pair by pair (k counts the expanded objects)
    for k, m in enumerate(expand_all(doc.get("measurements", []) or [])):
        if not isinstance(m, dict):
            continue
        flags = measurement_flags(m)
        st = m.get("stats") if isinstance(m.get("stats"), dict) else {}
        for key in ("mean", "median", "min"):
            v = _num(st.get(key))
            if v is not None and v < 0 and NEGATIVE_TIME not in flags:
                probs.append(f"measurements[{k}].stats.{key} = {v:g} without a flag")
        samples = m.get("samples") if isinstance(m.get("samples"), list) else []
        valid = m.get("valid") if isinstance(m.get("valid"), list) else []
        for i, s in enumerate(samples):
            v = _num(s)
            ok = valid[i] if i < len(valid) else True
            if v is not None and v < 0 and ok is not False:
                probs.append(f"measurements[{k}].samples[{i}] = {v:g} counted as valid")
                break
    for label, params, quality in _model_pairs(doc):
        lg_flags = _str_list(params.get("flags"))
        for name in _PARAMS:
            v = _num(params.get(name))
            if v is None or v >= 0:
                continue
            fl = param_flags(quality, name) + lg_flags
            if not fl:
                probs.append(f"{label}: {name} = {v:g} without a flag")
    models = doc.get("models") if isinstance(doc.get("models"), dict) else {}
    for key in ("predictions",):
        for k, p in enumerate(models.get(key, []) or []):
            v = _num(p.get("predicted")) if isinstance(p, dict) else None
            if v is not None and v < 0:
                probs.append(f"models.{key}[{k}].predicted = {v:g}")
    lm = models.get("lmo") if isinstance(models.get("lmo"), dict) else {}
    for k, p in enumerate(lm.get("predictions", []) or []):
        v = _num(p.get("predicted")) if isinstance(p, dict) else None
        if v is not None and v <= 0 and "nonpositive" not in _str_list(p.get("flags")):
            probs.append(f"models.lmo.predictions[{k}].predicted = {v:g} without a flag")
    lg = models.get("loggp") if isinstance(models.get("loggp"), dict) else {}
    for k, p in enumerate(lg.get("predictions", []) or []):
        v = _num(p.get("predicted")) if isinstance(p, dict) else None
        if v is not None and v < 0:
            probs.append(f"models.loggp.predictions[{k}].predicted = {v:g}")
    return probs


def summary(doc: dict[str, Any]) -> dict[str, Any]:
    """Counts for the report and the runner's last line: measurements, converged, flagged,
    not converged although each of their launches converged (launch_only), model parameters
    flagged (label: flags), whether the file is partial."""
    ms = [m for m in expand_all(doc.get("measurements", []) or []) if isinstance(m, dict)]
    flagged = {f: 0 for f in MEASUREMENT_FLAGS}
    launch_only = 0
    for m in ms:
        fl = measurement_flags(m)
        for f in fl:
            if f in flagged:
                flagged[f] += 1
        if NOT_CONVERGED in fl and _each_launch_converged(m):
            launch_only += 1
    params = []
    for label, p, q in _model_pairs(doc):
        for name in _PARAMS:
            if name not in p:  # a Hockney set has 2 of the 7, a LogGP set 5
                continue
            fl = value_flags(p[name], q, name)
            if fl:
                params.append(f"{label} {name}: {','.join(fl)}")
        fl = [f for f in _str_list(p.get("flags")) if f]
        if fl and "range" not in label:
            params.append(f"{label}: {','.join(fl)}")
    return {"measurements": len(ms), "converged": len(ms) - flagged[NOT_CONVERGED],
            "launch_only": launch_only,
            "flags": flagged, "params": params, "partial": doc.get("partial") is True,
            "partial_reason": doc.get("partial_reason")}


def _each_launch_converged(m: dict[str, Any]) -> bool:
    """A measurement over several launches each of which converged on its own (so what
    kept it from converging is the launches' disagreement, not any one launch's noise)."""
    la = m.get("launches")
    conv = la.get("converged") if isinstance(la, dict) else None
    return isinstance(conv, list) and len(conv) >= 2 and all(c is True for c in conv)


def _advice_context(doc: dict[str, Any]) -> dict[str, Any]:
    """What the verdict reads from the provenance (the same fields as the runner's C verdict,
    mpilab/quality.h): ranks bound to CPUs, ranks and CPUs of a node, fixed repetitions."""
    prov = doc.get("provenance") if isinstance(doc.get("provenance"), dict) else {}
    mapping = prov.get("mapping") if isinstance(prov.get("mapping"), list) else []
    placement = prov.get("placement") if isinstance(prov.get("placement"), dict) else {}
    bound = bool(mapping) and all(isinstance(m, dict) and m.get("bound") is True for m in mapping)
    local = _num(placement.get("local_ranks"))
    cpus = _num(placement.get("node_cpus"))
    if local is None and mapping:  # older files: ranks on the busiest host from the mapping
        hosts = [m.get("host") for m in mapping if isinstance(m, dict)]
        local = float(max(hosts.count(h) for h in set(hosts))) if hosts else None
    fixed = False
    precs = [m.get("precision") for m in doc.get("measurements") or [] if isinstance(m, dict)]
    for p in precs:
        if isinstance(p, dict):
            lo, hi = _num(p.get("min_reps")), _num(p.get("max_reps"))
            # the median's 95% interval needs 6 samples: fewer at most is a fixed-count run
            fixed = fixed or (hi is not None and (hi < 6 or (lo is not None and lo >= hi)))
    return {"pinned": bound or placement.get("pinned") is True, "local": local, "cpus": cpus,
            "fixed": fixed}


def noisy_verdict(doc: dict[str, Any], s: dict[str, Any] | None = None) -> str | None:
    """One line when most measurements did not converge (the machine was too noisy for the
    precision asked), with what to do, advising only what the provenance says was not done
    (pinning, oversubscription); None otherwise, and None for a fixed-count (quick) run, which
    could not converge by design (quick_note says so). `s`: summary(doc) when the caller
    already has it (it walks every measurement and model parameter: seconds at 10^5)."""
    s = summary(doc) if s is None else s
    n = s["measurements"]
    ctx = _advice_context(doc)
    if n == 0 or s["converged"] >= _NOISY_FRACTION * n or ctx["fixed"]:
        return None
    over = ctx["local"] is not None and ctx["cpus"] is not None and ctx["local"] > ctx["cpus"] > 0
    cause = (f" ({ctx['local']:.0f} ranks share {ctx['cpus']:.0f} CPUs on a node: "
             "oversubscription is the likely cause)") if over else ""
    # most of the others converged in each launch: the level moved between launches, which
    # a longer budget per launch does not change; more launches narrow the interval over
    # their medians. Pinning cannot help ranks that outnumber the CPUs.
    others = n - s["converged"]
    advice = ["a larger --time-budget", "a looser --eps"]
    if 2 * int(s.get("launch_only") or 0) >= others:  # walks the measurements only then
        nl = max([int(m["launches"]["n"]) for m in expand_all(doc.get("measurements") or [])
                  if isinstance(m, dict) and isinstance(m.get("launches"), dict)
                  and isinstance(m["launches"].get("n"), int)] or [1])
        advice[0] = f"more launches (--launches, more than {nl})"
    if not ctx["pinned"] and not over:
        advice.append("pinned ranks (--bind-to core)")
    advice.append("fewer ranks per node" if over else "fewer ranks")
    launches = ""
    if s.get("launch_only"):
        # each launch converged: the level moved between launches (what one launch cannot
        # see), so a longer budget per launch does not help; eps or the machine do
        launches = (f"; {s['launch_only']} of the {n - s['converged']} others converged in "
                    "each launch alone, but their launches' levels differed by more than it")
    return (f"too noisy to converge: only {s['converged']} of {n} measurements reached the "
            f"asked precision{cause}{launches}; repeat with {', '.join(advice)}, or on a "
            "quieter machine")


def quick_note(doc: dict[str, Any], s: dict[str, Any] | None = None) -> str | None:
    """For a fixed-count run (a quick survey): one line saying that its measurements were not
    meant to converge, instead of a verdict on the machine; None otherwise. `s` as in
    noisy_verdict."""
    s = summary(doc) if s is None else s
    if s["measurements"] == 0 or not _advice_context(doc)["fixed"]:
        return None
    return (f"quick run: repetitions fixed, not converged by design ({s['converged']} of "
            f"{s['measurements']} reached the asked precision anyway); run without --quick for "
            "figures with intervals")


def fmt_ci(lo: Any, hi: Any) -> str:
    a, b = _num(lo), _num(hi)
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return "-"
    return f"{a:.6g}..{b:.6g}"


def main(argv: list[str] | None = None) -> int:
    """`python -m mpilab.quality FILE...`: list impossible values shown without a flag;
    exit 1 if there are any, 2 if a file cannot be read."""
    import sys

    from mpilab.results import read_raw

    files = sys.argv[1:] if argv is None else argv
    bad = 0
    for f in files:
        try:
            doc = read_raw(f)  # the strict reader: one line naming file and line
            samples_file.attach(doc, f)  # a compact file's samples, checked like inline ones
        except MpilabError as e:
            sys.stderr.write(f"{e}\n")
            return 2
        for p in unflagged_problems(doc):
            print(f"{f}: {p}")
            bad += 1
    return 1 if bad else 0


def _interval(m: dict[str, Any]) -> tuple[float, float, float] | None:
    st = m.get("stats") if isinstance(m.get("stats"), dict) else {}
    med, lo, hi = _num(st.get("median")), _num(st.get("med_lo")), _num(st.get("med_hi"))
    if med is None or lo is None or hi is None or not all(map(math.isfinite, (med, lo, hi))):
        return None
    return med, lo, hi


def isolation_pairs(ms: list[dict[str, Any]]) -> list[tuple[int, int, bool]]:
    """(a, b, differs): measurements a and b of the same entry, timing, size, pair or root
    and rank count under two isolations (a's isolation first in file order); differs when
    the intervals of their medians do not overlap."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k, m in enumerate(ms):
        if not isinstance(m, dict) or not isinstance(m.get("isolation"), str):
            continue
        pair = m.get("pair")
        key = (m.get("op"), m.get("impl"), m.get("timing"), m.get("bytes"), m.get("root"),
               m.get("ranks"), tuple(pair) if isinstance(pair, list) else None)
        groups.setdefault(key, []).append(k)
    out = []
    for idx in groups.values():
        for i, a in enumerate(idx):
            for b in idx[i + 1:]:
                if ms[a]["isolation"] == ms[b]["isolation"]:
                    continue
                x, y = _interval(ms[a]), _interval(ms[b])
                if x is None or y is None:
                    continue
                out.append((a, b, x[2] < y[1] or y[2] < x[1]))
    return out


def mark_isolation(ms: list[dict[str, Any]]) -> int:
    """Set (or clear) the isolation_differs flag and the isolation_other figure on every
    measurement from isolation_pairs (as mpilab-bench does for one launch; after merging
    launches the figures changed). Returns how many pairs differ."""
    for m in ms:
        if isinstance(m, dict):
            if isinstance(m.get("flags"), list):
                m["flags"] = [f for f in m["flags"] if f != ISOLATION_DIFFERS]
            m.pop("isolation_other", None)
    n = 0
    for a, b, differs in isolation_pairs(ms):
        if not differs:
            continue
        n += 1
        for k, o in ((a, b), (b, a)):
            other = _interval(ms[o])
            assert other is not None
            ms[k].setdefault("flags", []).append(ISOLATION_DIFFERS)
            ms[k]["isolation_other"] = {"isolation": ms[o]["isolation"], "median": other[0],
                                        "med_lo": other[1], "med_hi": other[2]}
    return n


if __name__ == "__main__":
    raise SystemExit(main())
