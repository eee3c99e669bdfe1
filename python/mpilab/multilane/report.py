"""The multilane report page: the paper's figures measured on the emulated grid beside the
two models' predictions, and the targets of issue 10 checked against the measurements."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from mpilab import __version__
from mpilab.fsutil import atomic_write_text, check_output, resolve_output
from mpilab.multilane.doc import (
    Doc,
    Run,
    model_size,
    multilane_curve,
    p_choice,
    phase_split,
    wan_phase_use,
    wan_rates,
)
from mpilab.report import figs, tables, units, values
from mpilab.report.figs import Curve, Figure, Point
from mpilab.report.render import FigureSink, Section, page
from mpilab.report.tables import Cell, Table
from mpilab.report.units import fmt_bytes, fmt_time


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _run_point(x: float, r: Run) -> Point:
    """A run's median with its range (min..max of the repetitions) as the bar."""
    return Point(x, r.median, min(r.times), max(r.times), len(r.times), [])


def sizes_figure(doc: Doc, op: str, sink: FigureSink) -> Figure | None:
    """Fig. 4/5: time against message size; measured medians (bars: min..max) and the
    predictions of both models."""
    curves: list[Curve] = []
    for impl in ("native", "single", "multilane"):
        runs = sorted((r for r in doc.runs if r.op == op and r.impl == impl),
                      key=lambda r: r.bytes)
        # multilane: the P the run chose per size (one point per size: the first recorded)
        seen: dict[int, Run] = {}
        for r in runs:
            seen.setdefault(r.bytes, r)
        pts = sorted(seen.values(), key=lambda r: r.bytes)
        if len(pts) < 2:
            continue
        label = impl if impl != "multilane" else "multilane (P per size: " + ", ".join(
            str(r.lanes) for r in pts) + ")"
        curves.append(Curve(f"{label}, measured", [_run_point(float(r.bytes), r) for r in pts]))
        for key, name in (("predicted_paper", "paper model"),
                          ("predicted_sim", "schedule model")):
            pv = [Point(float(r.bytes), getattr(r, key)) for r in pts
                  if getattr(r, key) is not None]
            if len(pv) >= 2 and impl != "native":
                curves.append(Curve(f"{impl}, {name}", pv, kind="model"))
    if not curves:
        return None
    return Figure(sink.uid(f"ml-sizes-{op}"), f"{op}: single-lane vs multilane", curves,
                  "message size per rank", "time", "B", "s", interval="min..max")


def lanes_figure(doc: Doc, op: str, size: int, sink: FigureSink) -> Figure | None:
    """Fig. 9/10: time against P at one message size (whole lanes on the axis)."""
    curve = multilane_curve(doc, op, size)
    ms = model_size(doc, size)
    if len(curve) < 2:
        return None
    Ps = sorted(curve)
    curves = [Curve("measured (median, min..max)",
                    [_run_point(float(P), curve[P]) for P in Ps])]
    if ms:
        T = ms.get("T") or []
        sim = ms.get(f"sim_{op}") or []
        curves.append(Curve(f"paper model (P_opt {ms.get('P_opt')})",
                            [Point(float(k + 1), t) for k, t in enumerate(T)], kind="model"))
        curves.append(Curve(f"schedule model (P_opt {ms.get(f'P_opt_sim_{op}')})",
                            [Point(float(k + 1), t) for k, t in enumerate(sim)], kind="model"))
    return Figure(sink.uid(f"ml-lanes-{op}-{size}"),
                  f"{op}, {fmt_bytes(size)} per rank: time vs P", curves, "lanes P", "time",
                  "ranks", "s", xlog=False, ylog=False, interval="min..max")


def _into_site(doc: Doc, op: str) -> str:
    """The router interface carrying the operation's WAN direction: into the root's
    remote site for scatter, into the root's site for gather (2 sites)."""
    grid = doc.data.get("grid") or {}
    sites = grid.get("site_of_rank") or [0]
    root = doc.data.get("root", 0)
    root_site = sites[root] if root < len(sites) else 0
    site = 1 - root_site if op == "scatter" else root_site
    return f"s{site}r0"


def timeline_figure(doc: Doc, op: str, sink: FigureSink
                    ) -> tuple[Figure | None, list[list[Cell]]]:
    """Fig. 7/8: WAN bandwidth over time during the first timed repetition of each run of
    the operation (single-lane and multilane), 10 ms windows."""
    tb = doc.testbed or {}
    cap = float(tb.get("wan_total_rate") or 0)
    runs = [r for r in doc.runs if r.op == op and r.impl in ("single", "multilane")
            and r.wall_end > r.wall_start > 0]
    if not runs or "wan_samples" not in doc.data:
        return None, []
    curves: list[Curve] = []
    rows = []
    iface = _into_site(doc, op)
    t_end = 0.0
    for r in runs:
        rates = wan_rates(doc, iface, r.wall_start, r.wall_end)
        if not rates:
            continue
        t_end = max(t_end, rates[-1][0])
        curves.append(Curve(f"{r.impl} P={r.lanes}, {fmt_bytes(r.bytes)}",
                            [Point(t, x / 1e6) for t, x in rates]))
        use = wan_phase_use(rates, cap) if cap else None
        rows.append([Cell(op), Cell(r.impl), tables.text(r.lanes), Cell(fmt_bytes(r.bytes)),
                     tables.value(r.wall_end - r.wall_start, "s"),
                     Cell(f"{use['mean_bps'] / 1e6:.0f}" if use else "-", num=True),
                     Cell(f"{100 * use['mean_fraction']:.0f}%" if use else "-", num=True),
                     Cell(f"{100 * use['p90_fraction']:.0f}%" if use else "-", num=True)])
    if not curves:
        return None, rows
    if cap:
        curves.append(Curve("B_WAN", [Point(0.0, cap / 1e6), Point(t_end, cap / 1e6)],
                            kind="model"))
    return Figure(sink.uid(f"ml-wan-{op}"),
                  f"{op}: WAN bandwidth in use (router counter, 10 ms windows)", curves,
                  "time since the collective started (s)", "WAN in use (Mbit/s, wire)", "", "",
                  xlog=False, ylog=False), rows


def targets(docs: list[Doc]) -> list[list[Any]]:
    """Issue 10's targets, each with the measured value and whether it was met."""
    rows: list[list[Any]] = []
    for d in docs:
        name = Path(d.path).name
        for op in ("scatter", "gather"):
            # speed-up at M >= 4 MiB: single median / multilane (the run's P) median
            for size in sorted({r.bytes for r in d.runs if r.op == op and r.bytes >= 4 << 20}):
                single = [r for r in d.runs
                          if r.op == op and r.impl == "single" and r.bytes == size]
                multi = multilane_curve(d, op, size)
                if single and multi:
                    best = min(multi.values(), key=lambda r: r.median)
                    sp = single[0].median / best.median
                    rows.append([name, f"{op} multilane >= 2x single-lane at {fmt_bytes(size)}",
                                 f"{sp:.2f}x (P={best.lanes})", "met" if sp >= 2 else "NOT met"])
            for size in sorted({r.bytes for r in d.runs if r.op == op}):
                pc = p_choice(d, op, size)
                if pc:
                    for model in ("paper", "sim"):
                        ex = pc[f"{model}_excess"]
                        rows.append([name, f"{op} {fmt_bytes(size)}: time at the {model} model's "
                                     f"P_opt = {pc[f'{model}_P']} within 5% of the best P "
                                     f"({pc['best_P']})", _pct(ex),
                                     "met" if ex is not None and ex <= 0.05 else "NOT met"])
            for model, key in (("paper", "predicted_paper"), ("schedule", "predicted_sim")):
                errs = [(getattr(r, key) / r.median - 1) for r in d.runs if r.op == op and
                        r.bytes >= 1 << 20 and getattr(r, key) is not None]
                if errs:
                    worst = max(errs, key=abs)
                    within = sum(abs(e) <= 0.15 for e in errs)
                    rows.append([name, f"{op} {model} model within 15% for M >= 1 MiB",
                                 f"{within}/{len(errs)} points; worst {_pct(worst)}",
                                 "met" if within == len(errs) else "NOT met"])
        tb = d.testbed or {}
        cap = float(tb.get("wan_total_rate") or 0)
        if cap and "wan_samples" in d.data:
            for r in d.runs:
                if r.op == "gather" and r.impl == "multilane" and r.wall_end > r.wall_start > 0:
                    use = wan_phase_use(wan_rates(d, _into_site(d, "gather"), r.wall_start,
                                                  r.wall_end), cap)
                    if use:
                        rows.append([name, f"gather multilane P={r.lanes} {fmt_bytes(r.bytes)}: "
                                     ">= 85% of B_WAN in use during the WAN phase",
                                     f"{100 * use['mean_fraction']:.0f}% mean "
                                     f"({use['mean_bps'] / 1e6:.0f} of {cap / 1e6:.0f} Mbit/s)",
                                     "met" if use["mean_fraction"] >= 0.85 else "NOT met"])
    return rows


def model_table(d: Doc) -> Table | None:
    m = d.model
    if not m:
        return None
    rows = [[Cell("L (one-way WAN latency)"), tables.value(m["L"], "s")],
            [Cell("l (one-way LAN latency)"), tables.value(m["l"], "s")],
            [Cell("alpha (overhead)"), tables.value(m["alpha"], "s")],
            [Cell("b_LAN"), Cell(f"{m['b_lan'] * 8 / 1e6:.0f} Mbit/s", num=True)],
            [Cell("n0, n1"), Cell(f"{m.get('n0')}, {m.get('n1')}")]]
    rows += [[Cell(f"b({j + 1})"), Cell(f"{b * 8 / 1e6:.1f} Mbit/s per pair, "
                                        f"{(j + 1) * b * 8 / 1e6:.0f} Mbit/s total")]
             for j, b in enumerate(m["b"])]
    cal = m.get("alpha_calibration")
    if isinstance(cal, dict):
        for op in ("scatter", "gather"):
            c = cal.get(op)
            if isinstance(c, dict) and isinstance(c.get("ci95"), list):
                # a raw estimate below 0 is impossible: shown as its clamp and the flag; the
                # interval by the reports' one rule (units.fmt_ci: "undetermined" when it
                # reaches 0 or spans more than a decade, with its flag)
                fl = [f for f in c.get("flags") or [] if isinstance(f, str)]
                ci = c["ci95"] + [None, None]
                lo, hi = (values.num(ci[0]), values.num(ci[1]))
                fl += [f for f in units.flags_for(values.num(c.get("alpha_used")), lo, hi, "s")
                       if f not in fl]
                rows.append([Cell(f"alpha ({op}; calibrated at "
                                  f"{fmt_bytes(int(cal.get('bytes', 0)))}, P = "
                                  f"{cal.get('lanes')}, {cal.get('reps')} runs)"),
                             Cell(f"{fmt_time(c.get('alpha_used'))}"
                                  + (f" ({', '.join(fl)}: the fit gave a value below 0)"
                                     if "clamped" in fl else
                                     f" (95% CI {units.fmt_ci(lo, hi, 's')})"), flags=fl)])
    return Table(["quantity", "measured"], rows, caption="Model inputs", collapse=False)


def phase_rows(d: Doc) -> list[list[Cell]]:
    """Per multilane run: the three steps measured / predicted by the schedule model."""
    rows = []
    for r in d.runs:
        sp = phase_split(r)
        if not sp:
            continue
        row: list[Cell] = [Cell(r.op), Cell(r.impl), tables.text(r.lanes or "-"),
                           Cell(fmt_bytes(r.bytes))]
        for step in ("prepare", "wan", "lan"):
            meas, pred = sp[step]
            row += [tables.value(meas, "s"), tables.value(pred, "s"),
                    Cell(_pct(pred / meas - 1) if meas and pred and meas > 0 else "-",
                         num=True)]
        rows.append(row)
    return rows


def _runs_table(d: Doc) -> Table:
    rows = []
    for r in d.runs:
        mean = statistics.fmean(r.times)
        rows.append([Cell(r.op), Cell(r.impl), tables.text(r.lanes or "-"),
                     Cell(fmt_bytes(r.bytes), sort=r.bytes, num=True),
                     tables.value(r.median, "s"), tables.value(mean, "s"),
                     tables.value(min(r.times), "s"), tables.value(max(r.times), "s"),
                     tables.value(r.predicted_paper, "s"),
                     Cell(_pct(r.predicted_paper / r.median - 1) if r.predicted_paper else "-",
                          num=True),
                     tables.value(r.predicted_sim, "s"),
                     Cell(_pct(r.predicted_sim / r.median - 1) if r.predicted_sim else "-",
                          num=True)])
    return Table(["op", "impl", "P", "M", "median", "mean", "min", "max", "paper model",
                  "error", "schedule model", "error"], rows,
                 caption="Every run: the median of the repetitions is the figure (the "
                         "mpilab-multilane progress lines print it too; the mean beside it); "
                         "errors against the median", table_id="ml-runs")


def render(docs: list[Doc], shared_runtime: bool = False) -> str:
    from mpilab.sim.run import describe

    sink = FigureSink(False, shared_runtime)
    sims = [(d, d.simulated) for d in docs if d.simulated]
    where = ("the simulated grid" if len(sims) == len(docs) else
             "the emulated grid" if not sims else "the emulated and simulated grids")
    banners = [describe(sim or {}) + (f" ({Path(d.path).name})" if len(docs) > 1 else "")
               for d, sim in sims]
    top = Section("about", "Multilane scatter / gather")
    top.note("After Chiba, Endo and Matsuoka. Measured: median of the repetitions (bars "
             "min..max). Paper model: T(P) = L + X(P) M/b(P) + Y(P) M/b_LAN + alpha. Schedule "
             "model: the same measured inputs played out step by step (docs/multilane.md).")
    trs = targets(docs)
    if trs:
        top.h3("Targets")
        top.add("table", Table(["document", "target", "measured", ""],
                               [[Cell(str(x)) for x in row] for row in trs],
                               [["not met"] if row[3] != "met" else [] for row in trs],
                               table_id="ml-targets", collapse=False))
    sections = [top]
    for k, d in enumerate(docs):
        sec = Section(f"doc{k}", Path(d.path).name)
        if d.data.get("partial") is True:
            sec.note(f"PARTIAL: the run stopped before its plan was complete "
                     f"({d.data.get('partial_reason', 'no reason given')}); {len(d.runs)} "
                     f"completed measurements are shown.")
        tb = d.testbed
        if tb:
            sec.note(f"Testbed: {tb.get('sites')} sites x {tb.get('nodes_per_site')} "
                     f"nodes, LAN {tb.get('lan_rate', 0) / 1e6:.0f} Mbit/s, b_WAN "
                     f"{tb.get('wan_node_rate', 0) / 1e6:.0f} Mbit/s, B_WAN "
                     f"{tb.get('wan_total_rate', 0) / 1e6:.0f} Mbit/s, L "
                     f"{tb.get('wan_delay', 0) * 1e3:g} ms.")
        mt = model_table(d)
        if mt is None:
            sec.note("No model measured.")
        else:
            sec.add("table", mt)
        for op in ("scatter", "gather"):
            f = sizes_figure(d, op, sink)
            if f:
                sec.add("fig", sink.html(f))
            for size in sorted({r.bytes for r in d.runs if r.op == op}):
                f = lanes_figure(d, op, size, sink)
                if f:
                    sec.add("fig", sink.html(f))
            tf, rows = timeline_figure(d, op, sink)
            if tf:
                sec.add("fig", sink.html(tf))
            if rows:
                sec.add("table", Table(["op", "impl", "P", "M", "duration",
                                        "WAN phase mean Mbit/s", "of B_WAN",
                                        "90th pct of B_WAN"], rows, collapse=False))
        sec.add("table", _runs_table(d))
        prs = phase_rows(d)
        if prs:
            sec.h3("Phases (s after the root's start; measured mean / schedule model)")
            sec.note("prepare: until the last lane starts across the WAN; WAN: until the last "
                     "lane has arrived (gather: lanes 1..P-1); LAN: the rest (measured: means "
                     "over the repetitions).")
            sec.add("table", Table(["op", "impl", "P", "M"] +
                                   [f"{s} {w}" for s in ("prepare", "WAN", "LAN")
                                    for w in ("measured", "model", "error")], prs))
        sections.append(sec)
    return page(f"mpilab multilane: {where}", f"Generated by mpilab {__version__} from "
                + ", ".join(d.path for d in docs), sections, sink, banners)


def write(docs: list[Doc], out: str | Path, self_contained: bool = False) -> Path:
    target = Path(out)
    check_output(target)
    # a page streamed (-, a FIFO, a device) has no folder to share a runtime file from
    shared = not self_contained and str(out) != "-" and not resolve_output(target)[1]
    text = render(docs, shared)
    if shared and f'src="{figs.runtime_file_name()}"' in text:
        figs.write_runtime_file(target.parent)
    atomic_write_text(target, text)
    return target
