"""The run report of one results file (and, through report.compare, of several): sections
built from the results, rendered by the one Jinja2 page template. Sections without data are
left out."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from mpilab import __version__, quality
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text, resolve_output
from mpilab.report import figs, lmo, render, scale, summary, tables, units, values
from mpilab.report import scale_sections as big
from mpilab.report.figs import Curve, Figure, Point
from mpilab.report.render import FigureSink, Section
from mpilab.report.tables import Cell, Table
from mpilab.results_model import Measurement, Results

# the names other pages import from here (the multilane page)
fmt_time = units.fmt_time
fmt_bytes = units.fmt_size_short

MAX_CURVES = 16  # per figure; more are left out with a note (legend toggling hides the rest)

K = TypeVar("K")
T = TypeVar("T")


def group(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    out: dict[K, list[T]] = defaultdict(list)
    for x in items:
        out[key(x)].append(x)
    return out


def curve(label: str, ms: list[Measurement],
          y: Callable[[Measurement], values.Estimate]) -> Curve:
    pts = [values.point(float(m.bytes), y(m), values.flags(m), m.stats.reps)
           for m in sorted(ms, key=lambda m: m.bytes)]
    return Curve(label, [p for p in pts if p.y is not None])


def _label(m: Measurement, parts: tuple[str, ...], iso: bool) -> str:
    s = "/".join(str(getattr(m, p)) for p in parts)
    return f"{s} ({m.isolation})" if iso and m.isolation else s


def _capped(sec: Section, curves: list[Curve]) -> list[Curve]:
    if len(curves) > MAX_CURVES:
        sec.note(f"{len(curves) - MAX_CURVES} more curves are not drawn (at most {MAX_CURVES} "
                 "per figure); the table at the end has every value.")
    return curves[:MAX_CURVES]


def _collectives(r: Results, sink: FigureSink) -> list[Section]:
    coll = r.collectives()
    if not coll:
        return []
    sec = Section("collectives", "Collective operations")
    sec.note("Median time against message size, error bars: the median's 95% interval; "
             "hollow markers: flagged measurements (hover for the flags). Bandwidth = data "
             "moved / median time, with data moved = (p-1)m for scatter, gather, bcast and "
             "reduce, 2(p-1)m for allreduce, p(p-1)m for allgather and alltoall (m = per-rank "
             "block, p = ranks), unless the measurement states its own.")
    tsec = Section("timing", "Timing methods side by side")
    tsec.note("Same operation and implementation, one curve per timing method (max: maximum "
              "of local times; root: time on the root until all confirmed, corrected; global: "
              "synchronised clocks; opspec: operation-specific).")
    cs = r.clock_sync
    if cs is not None and any(m.timing == "global" for m in coll):
        tsec.note(f"Global timing used clock synchronisation '{cs.label}' with maximum "
                  f"residual {units.fmt_time(cs.max_residual_s)}.")
    for op in r.ops():
        ms = [m for m in coll if m.op == op]
        if not ms:
            continue
        iso = len({m.isolation for m in ms}) > 1
        timing = summary._preferred_timing(ms)
        sel = [m for m in ms if m.timing == timing]
        sec.h3(f"{op} (timing {timing})", f"op-{op}")
        by = sorted(group(sel, lambda m, v=iso: _label(m, ("impl",), v)).items())
        curves = _capped(sec, [curve(k, v, values.time_estimate) for k, v in by])
        sec.add("fig", sink.html(Figure(sink.uid(f"{op}-time"), f"{op}: time vs size", curves,
                                        "message size", "time", "B", "s")))
        bw = [curve(k, v, lambda m: values.bandwidth(r, m)) for k, v in by]
        if any(c.points for c in bw):
            sec.add("fig", sink.html(Figure(sink.uid(f"{op}-bandwidth"),
                                            f"{op}: bandwidth vs size", _capped(sec, bw),
                                            "message size", "bandwidth", "B", "B/s")))
        for impl, ims in sorted(group(ms, lambda m: m.impl).items()):
            if len({m.timing for m in ims}) < 2:
                continue
            tc = [curve(k, v, values.time_estimate) for k, v in
                  sorted(group(ims, lambda m, v=iso: _label(m, ("timing",), v)).items())]
            tsec.add("fig", sink.html(Figure(sink.uid(f"{op}-{impl}-timing"),
                                             f"{op}/{impl}: timing methods", tc,
                                             "message size", "time", "B", "s")))
    return [sec] + ([tsec] if any(k == "fig" for k, _ in tsec.items) else [])


def _pick_sizes(sizes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    s = sorted(set(sizes))
    return s if len(s) <= 2 else [s[0], s[-1]]


def _matrix(n: int, cells: dict[tuple[int, int], tuple[values.Estimate, list[str]]],
            caption: str) -> Table:
    """A ranks x ranks table of one-way times, shaded from fast (light) to slow."""
    vals = [e.value for e, _ in cells.values() if e.value is not None and e.value > 0]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 0.0)
    rows = []
    for i in range(n):
        row = [Cell(str(i), sort=i, num=True, bold=True)]
        for j in range(n):
            e_fl = cells.get((i, j)) or cells.get((j, i))
            if i == j or e_fl is None:
                row.append(Cell(""))
                continue
            e, fl = e_fl
            c = tables.value(e.value, "s", fl)
            if e.value and hi > lo and e.value > 0:
                k = (math.log(e.value) - math.log(lo)) / (math.log(hi) - math.log(lo))
                c.shade = k
            row.append(c)
        rows.append(row)
    return Table(["rank"] + [str(j) for j in range(n)], rows, caption=caption, collapse=False)


def _p2p(r: Results, sink: FigureSink, matrix_sizes: list[int] | None,
         health: list[str] | None = None,
         slow_pairs: set[tuple[int, int]] | None = None) -> list[Section]:
    """The point-to-point section; outlier findings are added to health (one line each) and
    the outlier pairs to slow_pairs."""
    pts = r.p2p()
    if not pts:
        return []
    sec = Section("p2p", "Point-to-point")
    sec.note("Round trips i<->j; the matrices and curves show the one-way time, half the "
             "median round trip, with its interval.")
    nranks = max([max(m.pair) for m in pts if m.pair] + [values.ranks_of(r, pts[0]) - 1]) + 1
    large = nranks > scale.MATRIX_TABLE_RANKS
    for sched, sms in sorted(group(pts, lambda m: m.schedule or "-").items()):
        title_s = "" if sched == "-" else f" ({sched} schedule)"
        by_size = group(sms, lambda m: (m.bytes, m.bytes_back or m.bytes))
        if matrix_sizes:
            chosen = []
            for want in matrix_sizes:
                hit = sorted(k for k in by_size if k[0] == want)
                if not hit:
                    have = ", ".join(str(b) for b in sorted({k[0] for k in by_size}))
                    raise MpilabError(f"{r.path}: no point-to-point measurement of {want} "
                                      f"bytes{title_s} (sizes: {have})")
                chosen += hit
        else:
            chosen = _pick_sizes(list(by_size))
        slow: list[tuple[int, int]] = []
        for size in chosen:
            lab = units.fmt_bytes(size[0]) + ("" if size[0] == size[1]
                                              else f" / {units.fmt_bytes(size[1])}")
            sec.h3(f"Latency matrix, {lab}{title_s}")
            if large:
                sec.add("fig", big.heatmap(sink, nranks, by_size[size],
                                           f"one-way time, {lab}{title_s}",
                                           f"matrix-{sched}-{size[0]}"))
            else:
                cells = {m.pair: (values.oneway(m), values.flags(m))
                         for m in by_size[size] if m.pair}
                sec.add("table", _matrix(nranks, cells, f"one-way time, {lab}{title_s}"))
            po = big.outliers(by_size[size], size[0], r) if size[0] == size[1] else None
            if po is not None:
                big.outlier_tables(sec, po, f"{lab}{title_s}", f"{sched}-{size[0]}")
                slow += [(i, j) for i, j, *_ in po.slow_pairs]
                if slow_pairs is not None:
                    slow_pairs.update(slow)
                if health is not None:
                    health += big.health_items(po, f"{lab}{title_s}")
        def key(m: Measurement) -> str:
            return (f"{m.pair[0]}-{m.pair[1]}"  # type: ignore[index]
                    + ("" if m.bytes_back in (None, m.bytes) else " (asym)"))
        keys = {(m.pair, m.bytes_back in (None, m.bytes)) for m in sms}
        sec.h3(f"Time vs size per pair{title_s}")
        if large and len(keys) > MAX_CURVES:
            sec.note(f"{len(keys)} pairs: the curves are the median, the 5th and 95th "
                     "percentile and the maximum over the pairs at each size, and the slowest "
                     "pairs' own curves.")
            want = set(slow[:5])
            curves = big.aggregate_curves(sms) + [
                curve(f"{k} (slow)", v, values.oneway) for k, v in sorted(group(
                    [m for m in sms if m.pair and (min(m.pair), max(m.pair)) in want],
                    key).items())]
        else:
            curves = [curve(k, v, values.oneway) for k, v in sorted(group(sms, key).items())]
        sec.add("fig", sink.html(Figure(sink.uid(f"p2p-{sched}"),
                                        f"point-to-point one-way time{title_s}",
                                        _capped(sec, curves), "message size", "one-way time",
                                        "B", "s")))
    return [sec]


def _models(r: Results, sink: FigureSink, att: scale.Attachments) -> list[Section]:
    if not (r.hockney or r.predictions or r.loggp or r.loggp_predictions):
        return []
    sec = Section("models", "Models")
    if len(r.hockney) > scale.TABLE_ROWS:
        sec.h3("Hockney parameters per pair")
        sec.note("Headline per pair: alpha from the smallest sizes' range, 1/beta from the "
                 "largest sizes' range; shown as distributions over the pairs.")
        big.hockney_large(r, sec, sink, att, "hockney")
    elif r.hockney:
        sec.h3("Hockney parameters per pair")
        sec.note("Headline: alpha from the smallest sizes' range, 1/beta from the largest "
                 "sizes' range (sustained rate), each with its bootstrap interval; rows per "
                 "protocol range: the lines used for predictions.")
        rows, rf = [], []
        raw = ((r.raw.get("models") or {}).get("hockney") or {}).get("pairs") or []
        for k, p in enumerate(r.hockney):
            rp = raw[k] if k < len(raw) and isinstance(raw[k], dict) else {}
            q = rp.get("quality")
            fl = [f"alpha {x}" for x in quality.value_flags(p.alpha, q, "alpha")] + \
                 [f"beta {x}" for x in quality.value_flags(p.beta, q, "beta")]
            rows.append(_hrow(f"{p.i}-{p.j}", "headline" if q else "all sizes", p.alpha, p.beta,
                              fl))
            rf.append([])
            rr = rp.get("ranges") if isinstance(rp.get("ranges"), list) else []
            for n_r, g in enumerate(p.ranges):
                # the file's range flags (negative_intercept, beta_clamped) by parameter; a
                # range's value below 0 shows its clamp 0 and the flag
                ff = rr[n_r].get("flags") if n_r < len(rr) and isinstance(rr[n_r], dict) else []
                ff = [x for x in ff if isinstance(x, str)] if isinstance(ff, list) else []
                neg = [f"alpha {x}" for x in ff if not x.startswith("beta")] + \
                      [f"beta {x.removeprefix('beta_')}" for x in ff if x.startswith("beta")]
                neg += [f"{n} clamped" for n, v in (("alpha", g.alpha), ("beta", g.beta))
                        if v < 0 and not any(x.startswith(n) for x in neg)]
                rows.append(_hrow("", f"{units.fmt_bytes(g.lo)} .. {units.fmt_bytes(g.hi)}",
                                  g.alpha, g.beta, neg))
                rf.append(neg)
        sec.add("table", Table(["pair", "range", "alpha", "beta (per byte)", "1/beta",
                                "flags"], rows, rf, caption="Hockney parameters",
                               table_id="hockney"))
        meas: dict[tuple[int, int], list[Measurement]] = defaultdict(list)
        for m in r.p2p():
            if m.pair and m.bytes_back in (None, m.bytes):
                meas[(min(m.pair), max(m.pair))].append(m)
        curves: list[Curve] = []
        for p in r.hockney[:MAX_CURVES // 2]:
            ms = meas.get((min(p.i, p.j), max(p.i, p.j)), [])
            if ms:
                curves.append(curve(f"{p.i}-{p.j} measured", ms, values.oneway))
            xs = sorted({m.bytes for m in ms}) or [0, 1 << 20]
            curves.append(Curve(f"{p.i}-{p.j} Hockney", [Point(float(x), p.predict(x), None,
                                                               None, None, [])
                                                         for x in xs], kind="model"))
        sec.add("fig", sink.html(Figure(sink.uid("hockney"), "Hockney fits: one-way time",
                                        curves, "message size", "one-way time", "B", "s")))
    if r.predictions:
        sec.h3("Predicted versus measured")
        for op, ps in sorted(group(r.predictions, lambda p: p.op).items()):
            cs = []
            # one predicted curve per implementation (the model does not depend on the
            # timing method: the same curve beside each timing's measurement would repeat
            # one legend entry), labelled by timing only where they differ
            drawn: dict[str, list[tuple[tuple[int, float], ...]]] = {}
            for (impl, timing), qs in sorted(group(ps, lambda p: (p.impl, p.timing or "-"))
                                             .items()):
                qs.sort(key=lambda p: p.bytes)
                stat = "/".join(sorted({p.statistic for p in qs}))
                cs.append(Curve(f"{impl} measured {stat} ({timing})",
                                [Point(float(p.bytes), p.measured, None, None, None, [])
                                 for p in qs if p.measured is not None]))
                key = tuple((p.bytes, p.predicted) for p in qs)
                if key in drawn.setdefault(impl, []):
                    continue
                drawn[impl].append(key)
                label = f"{impl} predicted" + (f" ({timing})" if len(drawn[impl]) > 1 else "")
                cs.append(Curve(label, [Point(float(p.bytes), p.predicted, None,
                                              None, None, []) for p in qs], kind="model"))
            sec.add("fig", sink.html(Figure(sink.uid(f"pred-{op}"), f"{op}: predicted vs "
                                            "measured", cs, "message size", "time", "B", "s")))
        sec.note("Relative error = (predicted - measured) / measured.")
        sec.add("table", _pred_table(r.predictions, "predicted", "predictions"))
    if len(r.loggp) > scale.TABLE_ROWS:
        sec.h3("LogGP parameters per pair", "loggp")
        big.loggp_large(r, sec, sink, att, "loggp-params")
        if r.loggp_predictions:
            sec.h3("LogGP predictions versus measured")
            sec.add("table", _pred_table(r.loggp_predictions, "LogGP predicted", "loggp-pred"))
    elif r.loggp or r.loggp_predictions:
        _loggp(r, sec, sink)
    return [sec]


def _hrow(pair: str, rng: str, alpha: float, beta: float, fl: list[str]) -> list[Cell]:
    """A Hockney row: a parameter fitted below 0 shows its clamp 0 and the flag."""
    rate = 1 / beta if beta > 0 else None
    bfl = [x.partition(" ")[2] for x in fl if x.startswith("beta ")]
    return [Cell(pair), Cell(rng),
            tables.param(alpha, "s", [x.partition(" ")[2] for x in fl
                                      if x.startswith("alpha ")]),
            _per_byte(beta, bfl), tables.value(rate, "B/s", ["clamped"] if beta <= 0 else []),
            tables.flags_cell(fl)]


def _per_byte(v: float, fl: list[str]) -> Cell:
    """A time per byte (beta, G) in ns/B; below 0 it shows its clamp 0 with the flag."""
    fl = list(fl)
    if v < 0:
        if not any("clamped" in x for x in fl):
            fl.append("clamped")
        return Cell("0 ns/B", sort=0.0, num=True, flags=fl,
                    title=f"flagged: {', '.join(fl)} (fitted below 0: shown as its clamp 0)")
    return Cell(f"{v * 1e9:.4g} ns/B", sort=v, num=True, flags=fl)


def _pred_table(ps: list, what: str, tid: str) -> Table:  # type: ignore[type-arg]
    rows = []
    for p in sorted(ps, key=lambda p: (p.op, p.impl, p.bytes, p.timing or "")):
        e = p.rel_error
        rows.append([Cell(p.op), Cell(p.impl), Cell(p.timing or "-"),
                     tables.value(p.bytes, "B"), tables.value(p.predicted, "s"),
                     tables.value(p.measured, "s"),
                     Cell("-" if e is None else f"{e * 100:+.1f} %", sort=e, num=True)])
    stat = "/".join(sorted({p.statistic for p in ps})) or "median"
    cols = ["op", "impl", "timing", "size", what, f"measured ({stat})", "relative error"]
    note = ", the figure every table shows" if stat == "median" else ""
    return Table(cols, rows, caption=f"{what} versus measured (the {stat}{note})",
                 table_id=tid)


def _loggp(r: Results, sec: Section, sink: FigureSink) -> None:
    sec.h3("LogGP parameters per pair", "loggp")
    sec.note("Sender i, receiver j. Summary row: o_s, o_r, g measured at the smallest size "
             "(carried to 0 bytes), G per byte of the largest-size range (1/G as a rate), L "
             "from the smallest size's round trip minus the overheads. Flags: L_clamped (L "
             "came out negative, set to 0), G_clamped, g_clamped, fit_failed; per parameter "
             "(robust fits): clamped, ci_wide (interval wider than asked), no_ci; over "
             "several launches: launches_disagree, launches_set_aside (L: a launch whose "
             "floor lay wholly above another launch's was left out of the figure, its value "
             "kept in the file).")
    rows, rf = [], []
    lgm = (r.raw.get("models") or {}).get("loggp") or {}
    raw = lgm.get("pairs") or []
    shared = [str(x) for x in lgm.get("flags") or []]  # parallel_contention: every pair's
    if shared:
        sec.note("Flag parallel_contention: pairs measured again one at a time were slower in "
                 "the parallel rounds; every pair's figures here are from the sequential "
                 "measurement (docs/pairs.md, \"Contention check\").")

    def prow(pair: str, rng: str, q: object, fl: list[str]) -> list[Cell]:
        """A LogGP row: parameters fitted below 0 show their clamp 0 and the flag."""
        G = q.G  # type: ignore[attr-defined]

        def own(n: str) -> list[str]:
            return [x for x in fl if x.startswith((n + "_", n + ":"))]
        return [Cell(pair), Cell(rng), tables.param(q.L, "s", own("L")),  # type: ignore
                tables.param(q.os, "s", own("os")),  # type: ignore[attr-defined]
                tables.param(q.orr, "s", own("or")),  # type: ignore[attr-defined]
                tables.param(q.g, "s", own("g")),  # type: ignore[attr-defined]
                _per_byte(G, own("G")),
                tables.value(1 / G if G > 0 else None, "B/s", ["clamped"] if G <= 0 else []),
                tables.flags_cell(fl)]

    for k, lp in enumerate(r.loggp):
        name = f"{lp.i}->{lp.j}"
        q = raw[k].get("quality") if k < len(raw) and isinstance(raw[k], dict) else None
        qfl = [f"{n}:{x}" for n in ("L", "os", "or", "g", "G")
               for x in quality.value_flags(getattr(lp.params, "orr" if n == "or" else n, None),
                                            q, n)]
        if lp.params is None:
            rows.append([Cell(name), Cell("all sizes")] + [Cell("-")] * 6
                        + [tables.flags_cell(["fit_failed"] + ([lp.error] if lp.error else []))])
            rf.append(["fit_failed"])
            continue
        fl = list(lp.params.flags) + qfl + shared
        rows.append(prow(name, "summary", lp.params, fl))
        rf.append(fl if (lp.params.flags or any("clamped" in x for x in qfl)) else [])
        for g in lp.ranges:
            gp = g.params
            # a per-range fit below 0 (o_r, g: not clamped by the fitter): clamp 0 and flag
            neg = [f"{n}_clamped" for n, v in (("L", gp.L), ("os", gp.os), ("or", gp.orr),
                                               ("g", gp.g), ("G", gp.G))
                   if v < 0 and f"{n}_clamped" not in gp.flags]
            rows.append(prow("", f"{units.fmt_bytes(g.lo)} .. {units.fmt_bytes(g.hi)}",
                             gp, list(gp.flags) + neg))
            rf.append(list(gp.flags) + neg)
    if rows:
        sec.add("table", Table(["pair", "range", "L", "o_s", "o_r", "g", "G (per byte)", "1/G",
                                "flags"], rows, rf, caption="LogGP parameters",
                               table_id="loggp-params"))
    curves: list[Curve] = []
    srows = []
    for lp in r.loggp:
        for nm, get in (("o_s", lambda pt: pt.os), ("o_r", lambda pt: pt.orr),
                        ("g", lambda pt: pt.g)):
            pts = [Point(float(pt.bytes), get(pt), None, None, None, []) for pt in lp.per_size]
            if pts:
                curves.append(Curve(f"{lp.i}->{lp.j} {nm}", pts))
        for pt in lp.per_size:
            srows.append([Cell(f"{lp.i}->{lp.j}"), tables.value(pt.bytes, "B"),
                          tables.value(pt.rtt, "s"), tables.value(pt.os, "s"),
                          tables.value(pt.orr, "s"), tables.value(pt.g, "s")])
    if curves:
        sec.add("fig", sink.html(Figure(sink.uid("loggp"), "LogGP overheads and gap per size",
                                        curves[:MAX_CURVES], "message size", "time", "B", "s")))
    if srows:
        sec.add("table", Table(["pair", "size", "round trip", "o_s(m)", "o_r(m)", "g(m)"],
                               srows, caption="LogGP measurements per size (medians)",
                               table_id="loggp-sizes"))
    if r.loggp_predictions:
        sec.h3("LogGP predictions versus measured")
        sec.add("table", _pred_table(r.loggp_predictions, "LogGP predicted", "loggp-pred"))


def measurement_table(r: Results, label: str | None = None,
                      only: list[Measurement] | None = None) -> Table:
    rows, rf = [], []
    for m in (r.measurements if only is None else only):
        # point-to-point rows one-way (half the round trip, as OSU and IMB print it), the
        # round trip in its own column
        k = 0.5 if m.is_p2p else 1.0
        rt = values.time_estimate(m)
        e = values.scaled(rt, k)
        st = m.stats
        fl = values.flags(m)
        rows.append(([Cell(label)] if label is not None else []) + [
            tables.count(m.index), Cell(m.op), Cell(m.impl), Cell(m.timing),
            tables.text(m.isolation), Cell(values.where(m)),
            Cell(values.size_label(m), sort=m.bytes, num=True),
            tables.value(e.value, "s", fl), tables.interval(e.lo, e.hi, "s"),
            tables.value(st.mean * k if math.isfinite(st.mean) else None, "s"),
            tables.value(st.ci_half * k if math.isfinite(st.ci_half) else None, "s"),
            tables.value(rt.value, "s") if m.is_p2p else Cell("-"),
            tables.count(st.reps), tables.count(st.invalid), tables.flags_cell(fl)])
        rf.append(fl)
    head = ["#", "op", "impl", "timing", "isolation", "pair/root", "size",
            "median (p2p: one-way)", "median 95% CI", "mean", "+-CI (mean)",
            "p2p round trip (median)", "reps", "invalid", "flags"]
    return Table((["run"] if label is not None else []) + head, rows, rf,
                 caption="All measurements", table_id="measurements")


def isolation_table(r: Results) -> Table | None:
    """Every entry measured both isolated and back to back in this file: the two figures
    side by side, their ratio, and whether their intervals are apart."""
    raw = [m.raw for m in r.measurements]
    rows, rf = [], []
    for a, b, differs in quality.isolation_pairs(raw):
        ma, mb = r.measurements[a], r.measurements[b]
        ea, eb = values.time_estimate(ma), values.time_estimate(mb)
        fl = [quality.ISOLATION_DIFFERS] if differs else []
        ratio = eb.value / ea.value if ea.value and eb.value is not None else None
        rows.append([Cell(ma.op), Cell(ma.impl), Cell(ma.timing), Cell(values.where(ma)),
                     Cell(values.size_label(ma), sort=ma.bytes, num=True),
                     tables.text(ma.isolation), tables.value(ea.value, "s", fl),
                     tables.interval(ea.lo, ea.hi, "s"), tables.text(mb.isolation),
                     tables.value(eb.value, "s", fl), tables.interval(eb.lo, eb.hi, "s"),
                     Cell("-" if ratio is None else f"x{ratio:.2f}", sort=ratio, num=True),
                     Cell("intervals apart" if differs else "agree")])
        rf.append(fl)
    if not rows:
        return None
    return Table(["op", "impl", "timing", "pair/root", "size", "isolation", "median",
                  "median 95% CI", "isolation", "median", "median 95% CI", "ratio", "verdict"],
                 rows, rf, caption="Isolated against back-to-back", table_id="isolation")


def _measurements(r: Results, att: scale.Attachments,
                  slow: set[tuple[int, int]]) -> list[Section]:
    if not r.measurements:
        return []
    sec = Section("measurements", "All measurements")
    iso = isolation_table(r) if len(r.measurements) <= scale.MEASUREMENT_ROWS else None
    if iso is not None:
        sec.h3("Isolated against back-to-back")
        sec.note("The same operations measured with a barrier before every repetition and "
                 "back to back. Where the intervals are apart the rows are flagged "
                 f"isolation_differs: {quality.ISOLATION_NOTE}.")
        sec.add("table", iso)
    sec.note("The reported figure is the median, with its order-statistic 95% interval (the "
             "stopping rule's); the mean and its Student-t interval beside. Flagged rows: "
             "not_converged (stopped at the repetition limit without the asked precision), "
             "invalid_samples (repetitions excluded), negative_time (corrected times <= 0 "
             "excluded), clock_uncertain (global timing on a clock synchronisation less precise "
             "than the asked precision), launches_disagree (over several launches: some launch's "
             "own interval did not hold the figure), isolation_differs (the same operation "
             "measured isolated and back to back: intervals apart; see the table above), "
             "negative (a value below zero), no_ci (no interval).")
    if len(r.measurements) <= scale.MEASUREMENT_ROWS:
        sec.add("table", measurement_table(r))
        return [sec]
    kept = big.kept_measurements(r, slow)
    href = att.csv("measurements", big.MEAS_HEAD,
                   (big.measurement_csv_row(m) for m in r.measurements))
    sec.note_html(scale.link_note(href, len(r.measurements), "measurements",
                                  f"the {len(kept)} of the slow pairs, the collectives and "
                                  "flagged ones"))
    sec.add("table", measurement_table(r, only=kept))
    return [sec]


def banners(docs: list[tuple[str, dict]]) -> list[str]:  # type: ignore[type-arg]
    out = []
    for name, doc in docs:
        # the counts walk every measurement and model parameter: only when a banner needs them
        needs = doc.get("partial") is True or isinstance(doc.get("launches"), dict)
        s = quality.summary(doc) if needs else {"partial": False}
        if s["partial"]:
            why = s.get("partial_reason") or "the run did not finish"
            out.append(f"PARTIAL RESULTS{(' in ' + name) if len(docs) > 1 else ''} ({why}): "
                       f"the file holds the {s['measurements']} measurements completed before "
                       "the run stopped; models and predictions may be missing.")
        prov = doc.get("provenance") if isinstance(doc.get("provenance"), dict) else {}
        sim = prov.get("simulated") if isinstance(prov.get("simulated"), dict) else None
        if sim is not None:
            sha = str(sim.get("platform_sha256") or "")[:12]
            out.append(f"SIMULATED{(' in ' + name) if len(docs) > 1 else ''}: every time in "
                       f"this report is {sim.get('engine', 'SimGrid SMPI')}'s "
                       f"({sim.get('version', '')}), {sim.get('ranks')} ranks on the "
                       f"platform {sim.get('platform')} (sha256 {sha}..., "
                       f"{sim.get('hosts')} hosts), not a measurement on hardware.")
        la = doc.get("launches") if isinstance(doc.get("launches"), dict) else None
        if la is not None:
            dis = sum(1 for m in doc.get("measurements", []) or []
                      if isinstance(m, dict)
                      and quality.LAUNCHES_DISAGREE in (m.get("flags") or []))
            out.append(f"MERGED FROM {la.get('n')} LAUNCHES"
                       f"{(' in ' + name) if len(docs) > 1 else ''}: every figure is the "
                       "median of the launches' medians, its interval includes the "
                       f"launch-to-launch variation; in {dis} of {s['measurements']} "
                       "measurements some launch's own interval missed the figure "
                       "(launches_disagree). Models are in the per-launch files.")
    return out


def render_report(r: Results, matrix_sizes: list[int] | None = None,
                  static: bool = False, att: scale.Attachments | None = None,
                  shared_runtime: bool = False) -> str:
    """The whole report as an HTML string. matrix_sizes: message sizes of the
    point-to-point matrices (default: the smallest and the largest measured). Tables too long
    for the page go to CSV files collected in att (written by build_report)."""
    att = att if att is not None else scale.Attachments(None)
    sink = FigureSink(static, shared_runtime)
    health: list[str] = []
    slow: set[tuple[int, int]] = set()
    p2p = _p2p(r, sink, matrix_sizes, health, slow)
    sections = [summary.section(r, att, health), *_collectives(r, sink), *p2p,
                *_models(r, sink, att), *lmo.section(r, sink), *_measurements(r, att, slow),
                summary.provenance_section(r)]
    title = f"mpilab report: {os.path.basename(r.path)}"
    sub = (f"Generated by mpilab {__version__} from {r.path}: {len(r.measurements)} "
           "measurements.")
    return render.page(title, sub, sections, sink, banners([(r.path, r.raw)]))


def write_csv(rs: list[tuple[str, Results]], out: str | os.PathLike[str]) -> None:
    """`mpilab report --format csv`: every measurement of every file, one row each, times
    in seconds (point-to-point one-way, the round trip in roundtrip_median_s)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow((["run"] if len(rs) > 1 else []) + big.MEAS_HEAD)
    for name, r in rs:
        for m in r.measurements:
            w.writerow(([name] if len(rs) > 1 else []) + big.measurement_csv_row(m))
    atomic_write_text(out, buf.getvalue())


def write_runtime_for(text: str, out_html: str | os.PathLike[str]) -> None:
    """The shared plotting runtime beside a page that refers to it (before the page)."""
    if f'src="{figs.runtime_file_name()}"' in text:
        figs.write_runtime_file(Path(os.fspath(out_html)).parent)


def build_report(results: Results, out_html: str | os.PathLike[str],
                 matrix_sizes: list[int] | None = None, static: bool = False,
                 shared_runtime: bool = False) -> str:
    """Write the report of `results` to out_html atomically, and the CSV files of its
    summarised tables beside it (OUT.TAG.csv); returns the path written."""
    out = Path(out_html)
    att = scale.Attachments(out.with_suffix("") if out.suffix else out)
    try:
        # a page streamed (-, a FIFO, a device) has no folder to share a runtime file from
        streamed = os.fspath(out_html) == "-" or resolve_output(out_html)[1]
        text = render_report(results, matrix_sizes, static, att,  # the CSVs as temporaries
                             shared_runtime and not streamed)
        write_runtime_for(text, out_html)
        atomic_write_text(out_html, text)
    except BaseException:
        att.discard()
        raise
    att.commit()
    return str(out_html)
