"""Assembling the HTML report. Sections without data are left out."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Callable, Iterable
from html import escape
from typing import Any

from matplotlib.figure import Figure

from mpilab import __version__, quality
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.report import plots
from mpilab.results import LogGPParams, Measurement, Results

# data moved by one call, as a multiple of the per-rank block m, for p ranks
# (used for the bandwidth plots unless a measurement carries its own "bytes_moved")
_VOLUME: dict[str, Callable[[int], int]] = {
    "scatter": lambda p: p - 1,
    "gather": lambda p: p - 1,
    "bcast": lambda p: p - 1,
    "reduce": lambda p: p - 1,
    "allreduce": lambda p: 2 * (p - 1),
    "allgather": lambda p: p * (p - 1),
    "alltoall": lambda p: p * (p - 1),
}

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
img.plot{max-width:100%;display:block;margin:.5em 0}
.note{color:#666;font-size:.85em}tr.bad td{background:#fff2f0}
code{font-size:.9em}nav a{margin-right:1em}
p.partial{background:#fff2f0;border:1px solid #e0a0a0;padding:.5em}
"""


def fmt_time(t: float | None) -> str:
    """Seconds in a readable unit (ns, us, ms, s)."""
    if t is None or not math.isfinite(t):
        return "-"
    a = abs(t)
    if a == 0:
        return "0"
    if a < 1e-6:
        return f"{t * 1e9:.3g} ns"
    if a < 1e-3:
        return f"{t * 1e6:.3g} us"
    if a < 1:
        return f"{t * 1e3:.3g} ms"
    return f"{t:.3g} s"


def fmt_bytes(n: float) -> str:
    for unit, f in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{int(n // f)}{unit}"
    return f"{int(n)}"


def _table(head: Iterable[str], rows: Iterable[Iterable[Any]],
           numeric: Iterable[int] = (), bad: Callable[[int], bool] | None = None) -> str:
    num = set(numeric)
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for k, row in enumerate(rows):
        cls = ' class="bad"' if bad is not None and bad(k) else ""
        cells = "".join(
            f'<td class="n">{escape(str(v))}</td>' if i in num else f"<td>{escape(str(v))}</td>"
            for i, v in enumerate(row))
        out.append(f"<tr{cls}>{cells}</tr>")
    out.append("</table>")
    return "\n".join(out)


def _ranks_of(r: Results, m: Measurement) -> int:
    if m.ranks:
        return m.ranks
    pr = r.provenance.get("ranks")
    return int(pr) if isinstance(pr, int) else 0


def _bandwidth(r: Results, m: Measurement) -> float | None:
    moved = m.raw.get("bytes_moved")
    if isinstance(moved, int | float) and not isinstance(moved, bool):
        vol = float(moved)
    else:
        f = _VOLUME.get(m.op)
        p = _ranks_of(r, m)
        if f is None or p < 2:
            return None
        vol = float(f(p) * m.bytes)
    if vol <= 0 or not (m.stats.mean > 0):
        return None
    return vol / m.stats.mean


def _oneway(m: Measurement) -> float:
    return m.stats.mean / 2


# ---------------------------------------------------------------------------------------
# sections


def _provenance(r: Results) -> str:
    p = r.provenance
    rows: list[tuple[str, str]] = []
    for key, label in (("tool", "tool"), ("version", "version"), ("mpi", "MPI library"),
                       ("mpi_standard", "MPI standard"), ("date", "date"),
                       ("command", "command"), ("ranks", "ranks"), ("transport", "transport")):
        if p.get(key) is not None:
            rows.append((label, str(p[key])))
    if isinstance(p.get("hosts"), list):
        rows.append(("hosts", ", ".join(map(str, p["hosts"]))))
    if isinstance(p.get("mapping"), list) and p["mapping"]:
        parts = []
        for e in p["mapping"]:
            if isinstance(e, dict):
                s = f"{e.get('rank', '?')}: {e.get('host', '?')}"
                if e.get("pu") is not None:
                    s += f" pu {e['pu']}"
                if e.get("cpus") is not None:
                    s += f" cpus {e['cpus']}" + (" bound" if e.get("bound") else " unbound")
                parts.append(s)
        rows.append(("mapping (rank: host, PU last run on, allowed CPUs)", "; ".join(parts)))
    lr = p.get("launcher")
    if isinstance(lr, dict) and lr.get("name"):
        args = lr.get("args")
        text = " ".join(map(str, args)) if isinstance(args, list) else str(lr["name"])
        rows.append(("launcher", text))
    if isinstance(p.get("slurm"), dict):
        sl = p["slurm"]
        rows.append(("Slurm", f"job {sl.get('job_id', '?')} step {sl.get('step_id', '?')}"))
    b = p.get("build")
    if isinstance(b, dict):
        rows.append(("build", f"{b.get('compiler', '?')}, {b.get('flags', '')}, "
                              f"commit {str(b.get('git_commit', '?'))[:12]}"
                              + (" (dirty)" if b.get("git_dirty") else "")))
    if p.get("options") is not None:
        rows.append(("options", json.dumps(p["options"], sort_keys=True)))
    cs = r.clock_sync
    if cs is not None:
        rows.append(("clock sync", f"{cs.method}, max residual {fmt_time(cs.max_residual_s)}"))
    else:
        rows.append(("clock sync", "none (no measurement used global timing)"))
    if len(r.sources) > 1:
        rows.append(("merged from", ", ".join(r.sources)))
    html = "<h2 id='provenance'>Provenance</h2>\n" + _table(("item", "value"), rows)
    if cs is not None and cs.ranks:
        html += "\n<h3>Clock synchronisation per rank</h3>\n" + _table(
            ("rank", "offset", "drift", "residual", "uncertainty"),
            [(x.get("rank", "?"), fmt_time(_num(x.get("offset_s"))), _g(x.get("drift")),
              fmt_time(_num(x.get("residual_s"))), fmt_time(_num(x.get("uncertainty_s"))))
             for x in cs.ranks], numeric=(1, 2, 3, 4))
    return html


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _g(v: Any) -> str:
    x = _num(v)
    return "-" if x is None else f"{x:.3g}"


def _label(m: Measurement, vary_iso: bool, parts: tuple[str, ...]) -> str:
    d = {"impl": m.impl, "timing": m.timing}
    s = "/".join(d[k] for k in parts)
    if vary_iso and m.isolation:
        s += f" [{m.isolation}]"
    return s


def _group(ms: list[Measurement], key: Callable[[Measurement], Any]
           ) -> dict[Any, list[Measurement]]:
    g: dict[Any, list[Measurement]] = defaultdict(list)
    for m in ms:
        g[key(m)].append(m)
    return g


def _collectives(r: Results) -> str:
    out: list[str] = []
    coll = r.collectives()
    if not coll:
        return ""
    out.append("<h2 id='collectives'>Collective operations</h2>")
    out.append("<p class='note'>Time: mean with confidence-interval half-width as error "
               "bars. Bandwidth: data moved divided by mean time, with data moved = "
               "(p-1)m for scatter, gather, bcast and reduce, 2(p-1)m for allreduce, "
               "p(p-1)m for allgather and alltoall (m = per-rank block, p = ranks).</p>")
    timing_sections: list[str] = []
    for op in r.ops():
        ms = [m for m in coll if m.op == op]
        vary_iso = len({m.isolation for m in ms}) > 1
        by = _group(ms, lambda m, v=vary_iso: _label(m, v, ("impl", "timing")))
        curves = sorted(by.items())
        out.append(f"<h3 id='op-{escape(op)}'>{escape(op)}</h3>")
        fig = Figure(figsize=(11, 4.0))
        ax1, ax2 = fig.subplots(1, 2)
        plots.curves_plot(f"{op}: time vs size", curves, "time (s)",
                          lambda m: m.stats.mean, lambda m: m.stats.ci_half, ax=ax1, fig=fig)
        has_bw = any(_bandwidth(r, m) for m in ms)
        if has_bw:
            plots.curves_plot(f"{op}: bandwidth vs size", curves, "bandwidth (bytes/s)",
                              lambda m: _bandwidth(r, m), None, ax=ax2, fig=fig)
        else:
            ax2.set_visible(False)
        fig.tight_layout()
        out.append(plots.to_img(fig, f"{op} time and bandwidth vs size"))
        # timing methods side by side: for each impl with more than one method
        by_impl = _group(ms, lambda m: m.impl)
        panels = []
        for impl, ims in sorted(by_impl.items()):
            tg = _group(ims, lambda m, v=vary_iso: _label(m, v, ("timing",)))
            if len({m.timing for m in ims}) > 1:
                panels.append((f"{op}/{impl}", sorted(tg.items())))
        if panels:
            fig = plots.grid_plot(f"{op}: timing methods side by side", panels, "time (s)",
                                  lambda m: m.stats.mean, lambda m: m.stats.ci_half)
            timing_sections.append(f"<h3>{escape(op)}</h3>\n"
                                   + plots.to_img(fig, f"{op} timing methods"))
    if timing_sections:
        out.append("<h2 id='timing'>Timing methods side by side</h2>")
        out.append("<p class='note'>Same operation and implementation, one curve per timing "
                   "method (max: maximum of local times; root: time on the root until all "
                   "confirmed, corrected; global: synchronised clocks; opspec: "
                   "operation-specific).</p>")
        cs = r.clock_sync
        if cs is not None and any(m.timing == "global" for m in coll):
            out.append(f"<p class='note'>Global timing used clock synchronisation "
                       f"'{escape(cs.method)}' with maximum residual "
                       f"{escape(fmt_time(cs.max_residual_s))}.</p>")
        out += timing_sections
    return "\n".join(out)


def _pick_sizes(sizes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The smallest and the largest size (one if there is only one)."""
    s = sorted(set(sizes))
    return s if len(s) <= 2 else [s[0], s[-1]]


def _p2p(r: Results, matrix_sizes: list[int] | None = None) -> str:
    pts = r.p2p()
    if not pts:
        return ""
    out = ["<h2 id='p2p'>Point-to-point</h2>",
           "<p class='note'>Round trips i&harr;j; the matrices and curves show the one-way "
           "time, half the mean round trip.</p>"]
    nranks = max([max(m.pair) for m in pts if m.pair] + [_ranks_of(r, pts[0]) - 1]) + 1
    for sched, sms in sorted(_group(pts, lambda m: m.schedule or "-").items()):
        title_s = "" if sched == "-" else f" ({sched} schedule)"
        out.append(f"<h3>Latency matrix{escape(title_s)}</h3>")
        by_size = _group(sms, lambda m: (m.bytes, m.bytes_back or m.bytes))
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
        imgs = []
        for size in chosen:
            cells: dict[tuple[int, int], float] = {}
            for m in by_size[size]:
                if m.pair:
                    cells[m.pair] = _oneway(m) * 1e6
            lab = fmt_bytes(size[0]) + ("" if size[0] == size[1] else f"/{fmt_bytes(size[1])}")
            fig = plots.heatmap(f"one-way time (us), {lab} bytes{title_s}", nranks, cells, "us")
            imgs.append(plots.to_img(fig, f"latency matrix {lab}"))
        out += imgs
        out.append(f"<h3>Time vs size per pair{escape(title_s)}</h3>")
        curves = sorted(_group(sms, lambda m: f"{m.pair[0]}-{m.pair[1]}"  # type: ignore
                               + ("" if (m.bytes_back is None or m.bytes_back == m.bytes)
                                  else " (asym)")).items())
        fig = plots.curves_plot(f"point-to-point{title_s}", curves, "one-way time (s)",
                                _oneway, lambda m: m.stats.ci_half / 2)
        out.append(plots.to_img(fig, "p2p time vs size"))
    return "\n".join(out)


def _models(r: Results) -> str:
    out: list[str] = []
    if r.hockney:
        out.append("<h2 id='models'>Models</h2>")
        out.append("<h3>Hockney parameters per pair</h3>")
        rows = []
        raw_pairs = ((r.raw.get("models") or {}).get("hockney") or {}).get("pairs") or []
        for k, p in enumerate(r.hockney):
            rp = raw_pairs[k] if k < len(raw_pairs) and isinstance(raw_pairs[k], dict) else {}
            q = rp.get("quality")
            bw = f"{1 / p.beta / 1e6:.4g}" if p.beta > 0 else "-"
            qa = q.get("alpha", {}) if isinstance(q, dict) else {}
            qb = q.get("beta", {}) if isinstance(q, dict) else {}
            fl = [f"alpha {x}" for x in quality.param_flags(q, "alpha")] + \
                 [f"beta {x}" for x in quality.param_flags(q, "beta")]
            rows.append((f"{p.i}-{p.j}", "headline" if q else "all sizes", fmt_time(p.alpha),
                         f"{p.beta * 1e9:.4g}", bw, _ci_time(qa), _ci_ns(qb),
                         " ".join(fl) or "-"))
            for g in p.ranges:
                gbw = f"{1 / g.beta / 1e6:.4g}" if g.beta > 0 else "-"
                rows.append(("", f"{fmt_bytes(g.lo)} .. {fmt_bytes(g.hi)}", fmt_time(g.alpha),
                             f"{g.beta * 1e9:.4g}", gbw, "", "", "-"))
        out.append("<p class='note'>Headline: alpha from the smallest sizes' range, beta "
                   "from the largest sizes' range (sustained rate), each with its bootstrap "
                   "interval; rows per protocol range: the lines used for predictions.</p>")
        out.append(_table(("pair", "range (bytes)", "alpha", "beta (ns/byte)", "1/beta (MB/s)",
                           "alpha CI", "beta CI", "flags"), rows, numeric=(2, 3, 4)))
        points: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
        for m in r.p2p():
            if m.pair and (m.bytes_back is None or m.bytes_back == m.bytes):
                key = (min(m.pair), max(m.pair))
                points[key].append((m.bytes, _oneway(m)))
        out.append(plots.to_img(plots.hockney_plot(r.hockney, points), "Hockney fits"))
    if r.predictions:
        if not r.hockney:
            out.append("<h2 id='models'>Models</h2>")
        out.append("<h3>Predicted versus measured</h3>")
        for op, ps in sorted(_group(r.predictions, lambda p: p.op).items()):  # type: ignore
            out.append(plots.to_img(plots.prediction_plot(op, ps), f"{op} predictions"))
        rows = []
        for p in sorted(r.predictions, key=lambda p: (p.op, p.impl, p.bytes, p.timing or "")):
            e = p.rel_error
            rows.append((p.op, p.impl, p.timing or "-", p.bytes, fmt_time(p.predicted),
                         fmt_time(p.measured), "-" if e is None else f"{e * 100:+.1f}%"))
        out.append("<p class='note'>Relative error = (predicted - measured) / measured.</p>")
        out.append(_table(("op", "impl", "timing", "bytes", "predicted", "measured",
                           "relative error"), rows, numeric=(3, 4, 5, 6)))
    return "\n".join(out)


def _loggp(r: Results) -> str:
    """LogGP parameters per pair (and per protocol range), the per-size measurements they
    were fitted on, and the LogGP predictions of the linear and binomial scatter/gather."""
    if not r.loggp and not r.loggp_predictions:
        return ""
    out: list[str] = []
    if not (r.hockney or r.predictions):
        out.append("<h2 id='models'>Models</h2>")
    out.append("<h3 id='loggp'>LogGP parameters per pair</h3>")
    out.append("<p class='note'>Sender i, receiver j. Summary row: o<sub>s</sub>, o<sub>r</sub>, "
               "g measured at the smallest size (carried to 0 bytes), G per byte of the "
               "largest-size range (1/G as a rate), L from the smallest size's round trip minus "
               "the overheads. Rows per range: that protocol range's lines. Flags: "
               "L_clamped (L came out negative, set to 0), G_clamped, g_clamped, fit_failed; "
               "per parameter (robust fits): clamped, ci_wide (interval wider than 5%), no_ci.</p>")
    rows = []
    bad: list[bool] = []

    def prow(pair: str, rng: str, q: LogGPParams) -> tuple[Any, ...]:
        rate = f"{1 / q.G / 1e6:.4g}" if q.G > 0 else "-"
        return (pair, rng, fmt_time(q.L), fmt_time(q.os), fmt_time(q.orr), fmt_time(q.g),
                f"{q.G * 1e9:.4g}", rate, " ".join(q.flags) or "-")

    raw_lp = ((r.raw.get("models") or {}).get("loggp") or {}).get("pairs") or []
    for k, lp in enumerate(r.loggp):
        name = f"{lp.i}->{lp.j}"
        q = raw_lp[k].get("quality") if k < len(raw_lp) and isinstance(raw_lp[k], dict) else None
        qfl = [f"{n}:{x}" for n in ("L", "os", "or", "g", "G") for x in quality.param_flags(q, n)]
        if lp.params is None:
            rows.append((name, "all sizes", "-", "-", "-", "-", "-", "-",
                         f"fit_failed: {lp.error or ''}".strip()))
            bad.append(True)
            continue
        row = prow(name, "summary", lp.params)
        rows.append(row[:-1] + (" ".join(list(lp.params.flags) + qfl) or "-",))
        bad.append(bool(lp.params.flags) or any("clamped" in x for x in qfl))
        for g in lp.ranges:
            rows.append(prow("", f"{fmt_bytes(g.lo)} .. {fmt_bytes(g.hi)}", g.params))
            bad.append(bool(g.params.flags))
    out.append(_table(("pair", "range (bytes)", "L", "o_s", "o_r", "g", "G (ns/byte)",
                       "1/G (MB/s)", "flags"), rows, numeric=(2, 3, 4, 5, 6, 7),
                      bad=lambda k: bad[k]))
    srows = []
    for lp in r.loggp:
        for pt in lp.per_size:
            srows.append((f"{lp.i}->{lp.j}", pt.bytes, fmt_time(pt.rtt), fmt_time(pt.os),
                          fmt_time(pt.orr), fmt_time(pt.g)))
    if srows:
        out.append(plots.to_img(plots.loggp_plot(r.loggp), "LogGP overheads and gap"))
        out.append("<h3>LogGP measurements per size (medians)</h3>")
        out.append(_table(("pair", "bytes", "round trip", "o_s(m)", "o_r(m)", "g(m)"), srows,
                          numeric=(1, 2, 3, 4, 5)))
    if r.loggp_predictions:
        out.append("<h3>LogGP predictions versus measured</h3>")
        prow2 = []
        for p in sorted(r.loggp_predictions, key=lambda p: (p.op, p.impl, p.bytes,
                                                            p.timing or "")):
            e = p.rel_error
            prow2.append((p.op, p.impl, p.timing or "-", p.bytes, fmt_time(p.predicted),
                          fmt_time(p.measured), "-" if e is None else f"{e * 100:+.1f}%"))
        out.append(_table(("op", "impl", "timing", "bytes", "LogGP predicted", "measured",
                           "relative error"), prow2, numeric=(3, 4, 5, 6)))
    return "\n".join(out)


def _quality(r: Results) -> str:
    """Partial-file banner and what converged / should not be trusted."""
    s = quality.summary(r.raw)
    out = []
    if s["partial"]:
        why = s.get("partial_reason") or "the run did not finish"
        out.append(f"<p class='partial'><b>PARTIAL RESULTS</b> ({escape(str(why))}): this file "
                   f"holds the {s['measurements']} measurements completed before the run "
                   "stopped; models and predictions may be missing.</p>")
    n = s["measurements"]
    if n:
        fl = s["flags"]
        items = [f"{s['converged']} of {n} measurements converged to the asked precision"]
        if fl[quality.INVALID_SAMPLES]:
            items.append(f"{fl[quality.INVALID_SAMPLES]} with invalid (excluded) repetitions")
        if fl[quality.NEGATIVE_TIME]:
            items.append(f"{fl[quality.NEGATIVE_TIME]} with negative corrected times excluded")
        out.append("<h2 id='quality'>Quality</h2>\n<p>" + "; ".join(items) + ".</p>")
        verdict = quality.noisy_verdict(r.raw)
        if verdict:
            out.append(f"<p class='partial'>{escape(verdict)}.</p>")
        if s["params"]:
            out.append("<p>Model parameters not to be trusted as they stand (clamped: the fit "
                       "gave an impossible value, reported as 0; ci_wide: interval wider than "
                       "the asked precision; no_ci: no interval):</p><ul>"
                       + "".join(f"<li>{escape(x)}</li>" for x in s["params"]) + "</ul>")
    bad = quality.unflagged_problems(r.raw)
    if bad:
        out.append("<p class='partial'>Impossible values without a flag (a bug in the writer of "
                   "this file): " + escape("; ".join(bad[:5])) + "</p>")
    return "\n".join(out)


def _ci_time(q: Any) -> str:
    if not isinstance(q, dict) or not all(isinstance(q.get(k), int | float) for k in ("lo", "hi")):
        return "-"
    return f"{fmt_time(q['lo'])} .. {fmt_time(q['hi'])}"


def _ci_ns(q: Any) -> str:
    if not isinstance(q, dict) or not all(isinstance(q.get(k), int | float) for k in ("lo", "hi")):
        return "-"
    return f"{q['lo'] * 1e9:.4g} .. {q['hi'] * 1e9:.4g}"


def _summary(r: Results) -> str:
    if not r.measurements:
        return ""
    rows = []
    bad = []
    for m in r.measurements:
        where = (f"{m.pair[0]}-{m.pair[1]} {m.schedule or ''}".strip() if m.pair
                 else ("" if m.root is None else f"root {m.root}"))
        size = str(m.bytes) if m.bytes_back in (None, m.bytes) else f"{m.bytes}/{m.bytes_back}"
        s = m.stats
        st = m.raw.get("stats", {}) if isinstance(m.raw.get("stats"), dict) else {}
        lo, hi = st.get("med_lo"), st.get("med_hi")
        mci = (f"{fmt_time(lo)} .. {fmt_time(hi)}"
               if isinstance(lo, int | float) and isinstance(hi, int | float) else "-")
        flags = quality.measurement_flags(m.raw)
        rows.append((m.index, m.op, m.impl, m.timing, m.isolation or "-", where, size,
                     fmt_time(s.median), mci, fmt_time(s.mean), fmt_time(s.ci_half),
                     s.reps, s.invalid, " ".join(flags) or "-"))
        bad.append(bool(flags))
    return ("<h2 id='summary'>All measurements</h2>\n<p class='note'>The reported figure is "
            "the median, with its order-statistic confidence interval (the stopping rule's); "
            "mean and its Student-t interval beside. Rows shaded: flagged (not_converged: "
            "stopped at the repetition limit without the asked precision; invalid_samples: "
            "repetitions excluded; negative_time: corrected times &lt;= 0 excluded).</p>\n"
            + _table(("#", "op", "impl", "timing", "isolation", "pair/root", "bytes", "median",
                      "median CI", "mean", "±CI (mean)", "reps", "invalid", "flags"),
                     rows, numeric=(0, 6, 7, 9, 10, 11, 12), bad=lambda k: bad[k]))


def render_report(r: Results, matrix_sizes: list[int] | None = None) -> str:
    """The whole report as an HTML string. matrix_sizes: message sizes of the
    point-to-point heat maps (default: the smallest and the largest measured)."""
    sections = [s for s in (_quality(r), _provenance(r), _collectives(r),
                            _p2p(r, matrix_sizes), _models(r), _loggp(r), _summary(r)) if s]
    nav = []
    for anchor, label in (("quality", "Quality"), ("provenance", "Provenance"),
                          ("collectives", "Collectives"),
                          ("timing", "Timing methods"), ("p2p", "Point-to-point"),
                          ("models", "Models"), ("summary", "All measurements")):
        if any(f"id='{anchor}'" in s for s in sections):
            nav.append(f"<a href='#{anchor}'>{label}</a>")
    title = f"mpilab report: {os.path.basename(r.path)}"
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>\n"
            f"<h1>{escape(title)}</h1>\n<p class='note'>Generated by mpilab {__version__} "
            f"from {escape(r.path)}: {len(r.measurements)} measurements.</p>\n"
            f"<nav>{''.join(nav)}</nav>\n" + "\n".join(sections) + "\n</body></html>\n")


def build_report(results: Results, out_html: str | os.PathLike[str],
                 matrix_sizes: list[int] | None = None) -> str:
    """Write the report of `results` to out_html atomically; returns the path written."""
    text = render_report(results, matrix_sizes)  # rendered before anything is written
    atomic_write_text(out_html, text)
    return str(out_html)
