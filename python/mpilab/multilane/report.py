"""The multilane report page: the paper's figures measured on the emulated grid beside the
two models' predictions, and the targets of issue 10 checked against the measurements."""

from __future__ import annotations

import statistics
from html import escape
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from mpilab.fsutil import atomic_write_text
from mpilab.multilane.doc import (
    Doc,
    model_size,
    multilane_curve,
    p_choice,
    phase_split,
    wan_phase_use,
    wan_rates,
)
from mpilab.report.html import fmt_bytes, fmt_time
from mpilab.report.plots import to_img

CSS = """body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}tr.bad td{background:#fff2f0}
img.plot{max-width:100%}.note{color:#666;font-size:.9em}"""


def _table(head: list[str], rows: list[list[Any]], bad: list[bool] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for k, row in enumerate(rows):
        cls = ' class="bad"' if bad and bad[k] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>")
    return "\n".join(out + ["</table>"])


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _spread(ts: list[float]) -> tuple[float, float]:
    m = statistics.median(ts)
    return m - min(ts), max(ts) - m


def sizes_figure(doc: Doc, op: str) -> Figure | None:
    """Fig. 4/5: time against message size; measured medians (bars: min..max) and the
    predictions of both models."""
    fig = Figure(figsize=(7, 4.2))
    ax = fig.add_subplot()
    drawn = False
    for impl, style in (("native", "s-"), ("single", "o-"), ("multilane", "^-")):
        runs = sorted((r for r in doc.runs if r.op == op and r.impl == impl), key=lambda r: r.bytes)
        # multilane: the P the run chose per size (one point per size: the first recorded)
        seen: dict[int, Any] = {}
        for r in runs:
            if impl != "multilane" or r.bytes not in seen:
                seen.setdefault(r.bytes, r)
        pts = sorted(seen.values(), key=lambda r: r.bytes)
        if len({r.bytes for r in pts}) < 2:
            continue
        xs = [r.bytes for r in pts]
        ys = [r.median for r in pts]
        err = list(zip(*[_spread(r.times) for r in pts], strict=True))
        label = impl if impl != "multilane" else "multilane (P per size: " + ", ".join(
            str(r.lanes) for r in pts) + ")"
        ax.errorbar(xs, ys, yerr=err, fmt=style, capsize=3, label=f"{label}, measured")
        for key, ls, name in (("predicted_paper", ":", "paper model"),
                              ("predicted_sim", "--", "schedule model")):
            pv = [(r.bytes, getattr(r, key)) for r in pts if getattr(r, key) is not None]
            if len(pv) >= 2 and impl != "native":
                ax.plot(*zip(*pv, strict=True), ls, label=f"{impl}, {name}")
        drawn = True
    if not drawn:
        return None
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size per rank (bytes)")
    ax.set_ylabel("time (s)")
    ax.set_title(f"{op}: single-lane vs multilane")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=.3)
    return fig


def lanes_figure(doc: Doc, op: str, size: int) -> Figure | None:
    """Fig. 9/10: time against P at one message size."""
    curve = multilane_curve(doc, op, size)
    ms = model_size(doc, size)
    if len(curve) < 2:
        return None
    fig = Figure(figsize=(7, 4.2))
    ax = fig.add_subplot()
    Ps = sorted(curve)
    ax.errorbar(Ps, [curve[P].median for P in Ps],
                yerr=list(zip(*[_spread(curve[P].times) for P in Ps], strict=True)),
                fmt="o-", capsize=3,
                label="measured (median, min..max)")
    if ms:
        T = ms.get("T") or []
        sim = ms.get(f"sim_{op}") or []
        ax.plot(range(1, len(T) + 1), T, ":", label=f"paper model (P_opt {ms.get('P_opt')})")
        ax.plot(range(1, len(sim) + 1), sim, "--",
                label=f"schedule model (P_opt {ms.get(f'P_opt_sim_{op}')})")
    ax.set_xlabel("lanes P")
    ax.set_ylabel("time (s)")
    ax.set_title(f"{op}, {fmt_bytes(size)} per rank: time vs P")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=.3)
    return fig


def _into_site(doc: Doc, op: str) -> str:
    """The router interface carrying the operation's WAN direction: into the root's
    remote site for scatter, into the root's site for gather (2 sites)."""
    root_site = doc.data.get("grid", {}).get("site_of_rank", [0])[doc.data.get("root", 0)]
    site = 1 - root_site if op == "scatter" else root_site
    return f"s{site}r0"


def timeline_figure(doc: Doc, op: str) -> tuple[Figure | None, list[list[Any]]]:
    """Fig. 7/8: WAN bandwidth over time during the first timed repetition of each run of
    the operation (single-lane and multilane), 10 ms windows."""
    tb = doc.testbed or {}
    cap = float(tb.get("wan_total_rate") or 0)
    runs = [r for r in doc.runs if r.op == op and r.impl in ("single", "multilane")
            and r.wall_end > r.wall_start > 0]
    if not runs or "wan_samples" not in doc.data:
        return None, []
    fig = Figure(figsize=(7, 4.2))
    ax = fig.add_subplot()
    rows = []
    iface = _into_site(doc, op)
    for r in runs:
        rates = wan_rates(doc, iface, r.wall_start, r.wall_end)
        if not rates:
            continue
        ax.plot([t for t, _ in rates], [x / 1e6 for _, x in rates],
                label=f"{r.impl} P={r.lanes}, {fmt_bytes(r.bytes)}")
        use = wan_phase_use(rates, cap) if cap else None
        rows.append([op, r.impl, r.lanes, fmt_bytes(r.bytes), fmt_time(r.wall_end - r.wall_start),
                     f"{use['mean_bps'] / 1e6:.0f}" if use else "-",
                     f"{100 * use['mean_fraction']:.0f}%" if use else "-",
                     f"{100 * use['p90_fraction']:.0f}%" if use else "-"])
    if cap:
        ax.axhline(cap / 1e6, color="k", lw=.8, ls=":", label="B_WAN")
    ax.set_xlabel("time since the collective started (s)")
    ax.set_ylabel("WAN in use (Mbit/s, wire)")
    ax.set_title(f"{op}: WAN bandwidth in use (router counter, 10 ms windows)")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=.3)
    return fig, rows


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


def model_table(d: Doc) -> str:
    m = d.model
    if not m:
        return "<p>No model measured.</p>"
    rows = [["L (one-way WAN latency)", fmt_time(m["L"])],
            ["l (one-way LAN latency)", fmt_time(m["l"])],
            ["alpha (overhead)", fmt_time(m["alpha"])],
            ["b_LAN", f"{m['b_lan'] * 8 / 1e6:.0f} Mbit/s"],
            ["n0, n1", f"{m.get('n0')}, {m.get('n1')}"]]
    rows += [[f"b({j + 1})", f"{b * 8 / 1e6:.1f} Mbit/s per pair, {(j + 1) * b * 8 / 1e6:.0f} "
              "Mbit/s total"] for j, b in enumerate(m["b"])]
    cal = m.get("alpha_calibration")
    if isinstance(cal, dict):
        for op in ("scatter", "gather"):
            c = cal.get(op)
            if isinstance(c, dict) and isinstance(c.get("ci95"), list):
                rows.append([f"alpha ({op}; calibrated at {fmt_bytes(int(cal.get('bytes', 0)))}, "
                             f"P = {cal.get('lanes')}, {cal.get('reps')} runs)",
                             f"{fmt_time(c.get('alpha'))} (95% CI {fmt_time(c['ci95'][0])} .. "
                             f"{fmt_time(c['ci95'][1])}; used {fmt_time(c.get('alpha_used'))})"])
    return _table(["quantity", "measured"], rows)


def phase_rows(d: Doc) -> list[list[Any]]:
    """Per multilane run: the three steps measured / predicted by the schedule model."""
    rows = []
    for r in d.runs:
        sp = phase_split(r)
        if not sp:
            continue
        row: list[Any] = [r.op, r.impl, r.lanes or "-", fmt_bytes(r.bytes)]
        for step in ("prepare", "wan", "lan"):
            meas, pred = sp[step]
            row += [fmt_time(meas), fmt_time(pred),
                    _pct(pred / meas - 1) if meas and pred and meas > 0 else "-"]
        rows.append(row)
    return rows


def render(docs: list[Doc]) -> str:
    from mpilab.sim.run import describe

    sims = [(d, d.simulated) for d in docs if d.simulated]
    where = ("the simulated grid" if len(sims) == len(docs) else
             "the emulated grid" if not sims else "the emulated and simulated grids")
    parts = ["<!doctype html><meta charset=utf-8><title>mpilab multilane</title>",
             f"<style>{CSS}</style><h1>Multilane scatter / gather on {where}</h1>"]
    for d, sim in sims:
        name = f" ({escape(Path(d.path).name)})" if len(docs) > 1 else ""
        parts.append(f'<p class="banner" style="background:#fff3cd;padding:.5em;'
                     f'font-weight:bold">{escape(describe(sim or {}))}{name}</p>')
    parts.append("<p class=note>After Chiba, Endo and Matsuoka. Measured: median of the "
                 "repetitions (bars min..max). Paper model: T(P) = L + X(P) M/b(P) + Y(P) "
                 "M/b_LAN + alpha. Schedule model: the same measured inputs played out step by "
                 "step (docs/multilane.md).</p>")
    trs = targets(docs)
    if trs:
        parts.append("<h2>Targets</h2>")
        parts.append(_table(["document", "target", "measured", ""], trs,
                            [r[3] != "met" for r in trs]))
    for d in docs:
        parts.append(f"<h2>{escape(Path(d.path).name)}</h2>")
        tb = d.testbed
        if tb:
            parts.append(f"<p>Testbed: {tb.get('sites')} sites x {tb.get('nodes_per_site')} "
                         f"nodes, LAN {tb.get('lan_rate', 0) / 1e6:.0f} Mbit/s, b_WAN "
                         f"{tb.get('wan_node_rate', 0) / 1e6:.0f} Mbit/s, B_WAN "
                         f"{tb.get('wan_total_rate', 0) / 1e6:.0f} Mbit/s, L "
                         f"{tb.get('wan_delay', 0) * 1e3:g} ms.</p>")
        parts.append(model_table(d))
        for op in ("scatter", "gather"):
            f = sizes_figure(d, op)
            if f:
                parts.append(to_img(f, f"{op} time vs size"))
            for size in sorted({r.bytes for r in d.runs if r.op == op}):
                f = lanes_figure(d, op, size)
                if f:
                    parts.append(to_img(f, f"{op} time vs P"))
            f, rows = timeline_figure(d, op)
            if f:
                parts.append(to_img(f, f"{op} WAN timeline"))
                parts.append(_table(["op", "impl", "P", "M", "duration", "WAN phase mean Mbit/s",
                                     "of B_WAN", "90th pct of B_WAN"], rows))
        rows = [[r.op, r.impl, r.lanes or "-", fmt_bytes(r.bytes), fmt_time(r.median),
                 fmt_time(min(r.times)), fmt_time(max(r.times)), fmt_time(r.predicted_paper),
                 _pct(r.predicted_paper / r.median - 1) if r.predicted_paper else "-",
                 fmt_time(r.predicted_sim),
                 _pct(r.predicted_sim / r.median - 1) if r.predicted_sim else "-"]
                for r in d.runs]
        parts.append(_table(["op", "impl", "P", "M", "median", "min", "max", "paper model",
                             "error", "schedule model", "error"], rows))
        prs = phase_rows(d)
        if prs:
            parts.append("<h3>Phases (s after the root's start; measured mean / schedule "
                         "model)</h3><p class=note>prepare: until the last lane starts across "
                         "the WAN; WAN: until the last lane has arrived (gather: lanes 1..P-1); "
                         "LAN: the rest (measured: means over the repetitions).</p>")
            parts.append(_table(["op", "impl", "P", "M"] +
                                [f"{s} {w}" for s in ("prepare", "WAN", "LAN")
                                 for w in ("measured", "model", "error")], prs))
    return "\n".join(parts)


def write(docs: list[Doc], out: str | Path) -> Path:
    target = Path(out)
    from mpilab.errors import MpilabError
    if target.is_dir():
        raise MpilabError(f"{out}: is a directory, expected an output file name")
    atomic_write_text(target, render(docs))
    return target
