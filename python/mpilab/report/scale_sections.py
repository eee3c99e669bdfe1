"""Pieces of the run report for large runs (report.scale's thresholds): pair outliers, pair
matrices as heat maps, pair curves from aggregates, model parameters as distributions and
summarised tables whose full rows go to CSV files beside the page."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mpilab import pairs, quality
from mpilab.report import scale, tables, units, values
from mpilab.report.bigfigs import Boxes, Heatmap
from mpilab.report.figs import Curve, Point
from mpilab.report.render import FigureSink, Section
from mpilab.report.scale import Attachments
from mpilab.report.tables import Cell, Table
from mpilab.results_model import Measurement, Results


def _csv_link(sec: Section, att: Attachments, tag: str, head: Sequence[str],
              rows: Sequence[Sequence[object]], what: str, kept: str) -> None:
    href = att.csv(tag, head, rows)
    sec.note_html(scale.link_note(href, len(rows), what, kept))


# ---------------------------------------------------------------- pair outliers

def run_groups(r: Results, ranks: int) -> tuple[list[int] | None, str]:
    """The ranks' groups the runner recorded (provenance.options.pairs.rank_groups) and what
    a group is ("site", "host", "group"); (None, "group") when none were recorded."""
    d = pairs.run_design(r.provenance)
    rg = d.get("rank_groups")
    if not isinstance(rg, list) or len(rg) != ranks or not all(
            isinstance(g, int) and not isinstance(g, bool) for g in rg):
        return None, "group"
    how = d.get("groups")
    return [int(g) for g in rg], how if how in ("site", "host") else "group"


def outliers(sms: list[Measurement], nbytes: int,
             r: Results | None = None) -> scale.PairOutliers | None:
    """The group-aware pair fit (mpilab.pairs.fit_pairs) of the round trips of one size, with
    the groups r's runner recorded."""
    try:
        ranks, times = pairs.pair_times(sms, nbytes)
    except ValueError:
        return None
    if ranks < scale.OUTLIER_MIN_RANKS or len(times) < ranks:
        return None
    groups, word = run_groups(r, ranks) if r is not None else (None, "group")
    return scale.pair_outliers(times, ranks, groups, word)


def _link_name(po: scale.PairOutliers, a: int, b: int) -> str:
    return f"{po.group_word}s {a}-{b}"


def outlier_tables(sec: Section, po: scale.PairOutliers, lab: str, tid: str) -> None:
    sec.h3(f"Slow nodes, links and pairs, {lab}", f"outliers-{tid}")
    sec.note(f"{po.pairs} pairs of {po.ranks} ranks; typical round trip "
             f"{units.fmt_time(po.typical)}. Each pair's round trip is modelled as "
             f"a_i + a_j + link(g_i, g_j) (robust Huber fit, mpilab.pairs; the link term "
             f"between the runner's {po.group_word}s, 0 inside one); a node, a link or a pair "
             "(its residual) is slow when its robust z-score is above "
             f"{scale.OUTLIER_Z} (median and MAD over the nodes, the links, the pairs).")
    rows = [[Cell(str(i), sort=i, num=True, bold=True), tables.value(float(po.node[i]), "s"),
             Cell(f"{po.node_z[i]:.1f}", sort=float(po.node_z[i]), num=True)]
            for i in po.slow_nodes[:scale.OUTLIER_ROWS]]
    if rows:
        more = len(po.slow_nodes) - len(rows)
        sec.add("table", Table(["rank", "node term a_i (round trip share)", "robust z"], rows,
                               caption=f"slow nodes, {lab}" + (f" ({more} more)" if more > 0
                                                                else ""),
                               table_id=f"slow-nodes-{tid}", collapse=False))
    else:
        sec.note("No node stands out.")
    lrow = [[Cell(_link_name(po, a, b), bold=True), tables.value(v, "s"),
             Cell(f"{lz:.1f}", sort=lz, num=True)]
            for a, b, v, lz in po.slow_links[:scale.OUTLIER_ROWS]]
    if lrow:
        sec.add("table", Table(["link", "link term (added to a round trip)", "robust z"], lrow,
                               caption=f"slow links, {lab}", table_id=f"slow-links-{tid}",
                               collapse=False))
    elif po.group_word != "group" or po.slow_links:
        sec.note("No link between groups stands out.")
    prow = [[Cell(f"{i}-{j}", bold=True), tables.value(t / 2, "s"), tables.value(e / 2, "s"),
             Cell(f"x{t / e:.2f}" if e > 0 else "-", sort=t / e if e > 0 else None, num=True),
             Cell(f"{z:.1f}", sort=z, num=True)]
            for i, j, t, e, z in po.slow_pairs[:scale.OUTLIER_ROWS]]
    if prow:
        more = len(po.slow_pairs) - len(prow)
        sec.add("table", Table(["pair", "one-way time", "expected (a_i + a_j + link) / 2",
                                "ratio", "robust z"], prow,
                               caption=f"slow pairs, {lab}" + (f" ({more} more)" if more > 0
                                                                else ""),
                               table_id=f"slow-pairs-{tid}", collapse=False))
    else:
        sec.note("No pair stands out beyond its nodes and link.")


def health_items(po: scale.PairOutliers, lab: str) -> list[str]:
    out = []
    if po.slow_nodes:
        out.append(f"slow node(s) at {lab}: rank " + ", ".join(
            str(i) for i in po.slow_nodes[:10]) + (" ..." if len(po.slow_nodes) > 10 else "")
            + " (Point-to-point: slow nodes, links and pairs)")
    if po.slow_links:
        out.append(f"slow link(s) at {lab}: " + ", ".join(
            f"{_link_name(po, a, b)} ({units.fmt_time(v)} per round trip"
            + (f", the median link {units.fmt_time(po.typical_link)})"
               if math.isfinite(po.typical_link) else ")")
            for a, b, v, _ in po.slow_links[:10]) + (" ..." if len(po.slow_links) > 10 else "")
            + " (Point-to-point: slow nodes, links and pairs)")
    if po.slow_pairs:
        out.append(f"slow pair(s) at {lab}: " + ", ".join(
            f"{i}-{j}" for i, j, *_ in po.slow_pairs[:10])
            + (" ..." if len(po.slow_pairs) > 10 else "") + " (Point-to-point)")
    return out


# ---------------------------------------------------------------- heat map, curves

def heatmap(sink: FigureSink, nranks: int, ms: list[Measurement], title: str,
            base: str) -> object:
    mat = np.full((nranks, nranks), np.nan)
    for m in ms:
        if m.pair:
            v = values.oneway(m).value
            if v is not None and math.isfinite(v):
                mat[m.pair[0], m.pair[1]] = mat[m.pair[1], m.pair[0]] = v
    red, b = scale.block_max(mat)
    return sink.html(Heatmap(sink.uid(base), title, red, b, nranks))


def aggregate_curves(sms: list[Measurement]) -> list[Curve]:
    """Per size over the pairs: median, 5th and 95th percentile and maximum of the one-way
    time (the caller adds the slowest pairs' own curves)."""
    by: dict[int, list[float]] = {}
    for m in sms:
        v = values.oneway(m).value
        if v is not None and math.isfinite(v):
            by.setdefault(m.bytes, []).append(v)
    return [Curve(name, [Point(float(b), float(np.percentile(v, q)), None, None, len(v), [])
                         for b, v in sorted(by.items())])
            for name, q in (("median over pairs", 50), ("95th percentile", 95),
                            ("5th percentile", 5), ("slowest pair", 100))]


# ---------------------------------------------------------------- models

def _dist_table(rows: list[tuple[str, str, list[float]]], caption: str, tid: str) -> Table:
    out = []
    for name, unit, v in rows:
        # a fit below 0 counts as its clamp 0 (flagged): never a negative percentile
        neg = sum(1 for x in v if x < 0)
        q = scale.quartiles([max(x, 0.0) if math.isfinite(x) else x for x in v])
        if q is None:
            continue
        fl = [f"clamped ({neg} of {int(q['n'])} pairs fitted below 0)"] if neg else []
        out.append([Cell(name, flags=fl), tables.count(q["n"])]
                   + [tables.value(q[k], unit, fl if q[k] == 0 and neg else [])
                      for k in ("min", "p5", "median", "p95", "max")])
    return Table(["parameter", "pairs", "min", "5th pct", "median", "95th pct", "max"], out,
                 caption=caption, table_id=tid, collapse=False)


def hockney_large(r: Results, sec: Section, sink: FigureSink | None, att: Attachments,
                  tid: str) -> None:
    hs = r.hockney
    alpha = [p.alpha for p in hs]
    rate = [1 / p.beta if p.beta > 0 else math.nan for p in hs]
    sec.add("table", _dist_table([("alpha (latency)", "s", alpha),
                                  ("1/beta (sustained rate)", "B/s", rate)],
                                 f"Hockney parameters over {len(hs)} pairs", f"{tid}-dist"))
    if sink is not None:
        sec.add("fig", sink.html(Boxes(sink.uid(f"{tid}-alpha"), "Hockney alpha over pairs",
                                       [("alpha", q)] if (q := scale.quartiles(
                                           [max(a, 0.0) for a in alpha])) else [],
                                       "s", "latency")))
        sec.add("fig", sink.html(Boxes(sink.uid(f"{tid}-rate"), "Hockney 1/beta over pairs",
                                       [("1/beta", q)] if (q := scale.quartiles(rate)) else [],
                                       "B/s", "sustained rate")))
    order = sorted(range(len(hs)), key=lambda k: -hs[k].alpha)[:scale.OUTLIER_ROWS]
    rows = [[Cell(f"{hs[k].i}-{hs[k].j}"), tables.param(hs[k].alpha, "s"),
             tables.value(rate[k] if math.isfinite(rate[k]) else None, "B/s")] for k in order]
    sec.add("table", Table(["pair", "alpha", "1/beta"], rows,
                           caption=f"Hockney: the {len(rows)} pairs of largest alpha",
                           table_id=tid, collapse=False))
    _csv_link(sec, att, "hockney", ["i", "j", "alpha_s", "beta_s_per_B", "ranges"],
              [[p.i, p.j, p.alpha, p.beta, " ".join(f"{g.lo}..{g.hi}:{g.alpha:.6g}+{g.beta:.6g}m"
                                                    for g in p.ranges)] for p in hs],
              "Hockney pairs", f"the {len(rows)} of largest alpha and the distributions")


LOGGP = (("L", "s"), ("o_s", "s"), ("o_r", "s"), ("g", "s"), ("1/G", "B/s"))


def _lg(p: object, name: str) -> float:
    v = {"L": "L", "o_s": "os", "o_r": "orr", "g": "g"}.get(name)
    if v is not None:
        return float(getattr(p, v))
    G = float(p.G)  # type: ignore[attr-defined]
    return 1 / G if G > 0 else math.nan


def loggp_large(r: Results, sec: Section, sink: FigureSink | None, att: Attachments,
                tid: str) -> None:
    ok = [lp for lp in r.loggp if lp.params is not None]
    failed = len(r.loggp) - len(ok)
    cols = {n: [_lg(lp.params, n) for lp in ok] for n, _ in LOGGP}
    sec.add("table", _dist_table([(n, u, cols[n]) for n, u in LOGGP],
                                 f"LogGP parameters over {len(ok)} pairs"
                                 + (f" ({failed} fits failed)" if failed else ""),
                                 f"{tid}-dist"))
    if sink is not None:
        bx = [(n, q) for n, u in LOGGP
              if u == "s" and (q := scale.quartiles([max(x, 0.0) for x in cols[n]]))]
        sec.add("fig", sink.html(Boxes(sink.uid(f"{tid}-times"), "LogGP parameters over pairs",
                                       bx, "s", "time")))
    order = sorted(range(len(ok)), key=lambda k: -ok[k].params.L)[:scale.OUTLIER_ROWS]  # type: ignore[union-attr]
    rows, rf = [], []
    for k in order:
        lp = ok[k]
        fl = list(lp.params.flags)  # type: ignore[union-attr]
        rows.append([Cell(f"{lp.i}->{lp.j}")] + [tables.param(cols[n][k], u) for n, u in LOGGP]
                    + [tables.flags_cell(fl)])
        rf.append(fl)
    sec.add("table", Table(["pair"] + [n for n, _ in LOGGP] + ["flags"], rows, rf,
                           caption=f"LogGP: the {len(rows)} pairs of largest L",
                           table_id=tid, collapse=False))
    _csv_link(sec, att, "loggp", ["i", "j", "L_s", "os_s", "or_s", "g_s", "G_s_per_B", "flags",
                                  "error"],
              [[lp.i, lp.j] + ([lp.params.L, lp.params.os, lp.params.orr, lp.params.g,
                                lp.params.G, " ".join(lp.params.flags), ""]
                               if lp.params else [None] * 5 + ["fit_failed", lp.error or ""])
               for lp in r.loggp],
              "LogGP pairs", f"the {len(rows)} of largest L and the distributions")


# ---------------------------------------------------------------- measurements

# point-to-point rows: the time columns one-way (half the round trip, as OSU and IMB print
# it), the round trip in roundtrip_median_s; collectives: roundtrip_median_s empty
MEAS_HEAD = ["index", "op", "impl", "timing", "isolation", "pair_i", "pair_j", "schedule",
             "root", "bytes", "bytes_back", "median_s", "med_lo_s", "med_hi_s", "mean_s",
             "ci_half_s", "roundtrip_median_s", "reps", "invalid", "flags"]


def measurement_csv_row(m: Measurement) -> list[object]:
    rt = values.time_estimate(m)
    k = 0.5 if m.is_p2p else 1.0
    e = values.scaled(rt, k)
    st = m.stats
    return [m.index, m.op, m.impl, m.timing, m.isolation or "",
            m.pair[0] if m.pair else "", m.pair[1] if m.pair else "", m.schedule or "",
            "" if m.root is None else m.root, m.bytes,
            "" if m.bytes_back is None else m.bytes_back, e.value, e.lo, e.hi, st.mean * k,
            st.ci_half * k, rt.value if m.is_p2p else "", st.reps, st.invalid,
            " ".join(values.flags(m))]


def kept_measurements(r: Results, slow: set[tuple[int, int]]) -> list[Measurement]:
    """The rows of a summarised measurement table: p2p measurements of the outlier pairs,
    then the collectives, then flagged p2p measurements, at most TABLE_ROWS in all."""
    cap = scale.TABLE_ROWS
    a = [m for m in r.measurements if m.pair and (min(m.pair), max(m.pair)) in slow]
    a = a[:scale.OUTLIER_ROWS * 2]
    b = [m for m in r.measurements if not m.is_p2p][:max(cap - len(a) - scale.OUTLIER_ROWS, 0)]
    seen = {m.index for m in a}
    c = []
    for m in r.measurements:
        if len(a) + len(b) + len(c) >= cap:
            break
        if m.is_p2p and m.index not in seen and quality.measurement_flags(m.raw):
            c.append(m)
    return sorted(a + b + c, key=lambda m: m.index)
