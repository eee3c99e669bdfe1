"""The report's section of the heterogeneous LMO model (models.lmo, docs/models-lmo.md
"Heterogeneous model"): which node and which link are slow. A per-node table (C_i, t_i with
their intervals and flags, and the node's cost C_i + M t_i at the experiments' size M), a
per-link heat map of L_ij + M/beta_ij (the link's cost of an M-byte message) with a per-link
table, and the model's scatter/gather predictions beside the measured values and beside
Hockney's where the run fitted both.

A node or link is called slow when its cost at M is more than SLOW_RATIO times the median
over the nodes (links) and its interval's low end is above the median's high end, so a
difference inside the measurement's own spread is never named.

Beside that rule, the section says in words which node, link and path the fit itself names
slowest (models.lmo.slowest, mpilab_lmo_headlines: on a star the largest processing part
C_i - h u_i (h: the MPI's header bytes, which cross the access link) or none when no node's
stands out, and the star view's slowest access link; otherwise the largest C_i + M t_i and
L_ij + M/beta_ij; and one M-byte message i -> j with the raw values, each with its ratio to
the median) and marks them in the per-node table, the per-link table and the two heat maps
(link cost, path cost)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from mpilab.report import tables, units
from mpilab.report.bigfigs import Heatmap
from mpilab.report.figs import Curve, Figure, Point
from mpilab.report.render import FigureSink, Section
from mpilab.report.tables import Cell, Table
from mpilab.results_model import Prediction, Results

SLOW_RATIO = 1.25  # cost above this many times the median (and outside its interval): slow
STAR_FITS = 0.05  # a star explains the pairs when one access link per node misses by at most this

K = TypeVar("K")
T = TypeVar("T")


@dataclass(frozen=True)
class Param:
    value: float | None
    raw: float | None
    lo: float | None
    hi: float | None
    flags: tuple[str, ...]


@dataclass(frozen=True)
class Cost:
    """A node's C + M t or a link's L + M/beta, with the interval of its two parts'
    intervals combined (lo + M lo, hi + M hi: both parts move together in the worst case)."""
    name: str
    value: float
    lo: float | None
    hi: float | None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) \
        and math.isfinite(v) else None


def _param(d: Any) -> Param:
    d = d if isinstance(d, dict) else {}
    return Param(_num(d.get("value")), _num(d.get("raw")), _num(d.get("lo")), _num(d.get("hi")),
                 tuple(str(f) for f in d.get("flags") or ()))


def _cost(name: str, a: Param, b: Param, m: float) -> Cost | None:
    if a.value is None or b.value is None:
        return None
    lo = a.lo + m * b.lo if a.lo is not None and b.lo is not None else None
    hi = a.hi + m * b.hi if a.hi is not None and b.hi is not None else None
    return Cost(name, a.value + m * b.value, lo, hi)


def slow(costs: list[Cost]) -> list[tuple[Cost, float]]:
    """The slow ones with their ratio to the median, slowest first (see the module note)."""
    if len(costs) < 2:
        return []
    med = statistics.median(c.value for c in costs)
    if med <= 0:
        return []
    # the median element's interval: that of the cost nearest the median
    mc = min(costs, key=lambda c: abs(c.value - med))
    med_hi = mc.hi if mc.hi is not None else med
    out = [(c, c.value / med) for c in costs
           if c.value > SLOW_RATIO * med and (c.lo if c.lo is not None else c.value) > med_hi]
    return sorted(out, key=lambda t: -t[1])


@dataclass(frozen=True)
class Named:
    """One of the fit's slowest: what (a rank or a pair), its cost at M and its ratio to the
    median of its kind."""
    key: Any
    cost: float | None
    ratio: float | None


@dataclass(frozen=True)
class Slowest:
    node: Named | None
    link: Named | None
    path: Named | None
    # on a star (models.lmo.slowest.link_by "star"): the node whose access link is the
    # slowest link (link is then None), and the node named by its C alone
    link_of: Named | None = None
    node_by_c: bool = False
    header_bytes: float | None = None


def _pair(v: Any) -> tuple[int, int] | None:
    if isinstance(v, list | tuple) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return (min(v), max(v))
    return None


def path_costs(lm: dict[str, Any], m: float) -> dict[tuple[int, int], float]:
    """Per pair one message of M bytes with the raw values: C_i + C_j + L_ij + M
    (t_i + t_j + 1/beta_ij), the sum the round trips fix whatever the node/link split."""
    def raw(p: Param) -> float | None:
        return p.raw if p.raw is not None else p.value

    C: dict[int, float] = {}
    t: dict[int, float] = {}
    for n in lm.get("nodes") or []:
        r = int(n.get("rank", -1))
        if (c := raw(_param(n.get("C")))) is not None:
            C[r] = c
        if (x := raw(_param(n.get("t")))) is not None:
            t[r] = x
    links = lm.get("links") or {}
    Ls, Bs = links.get("L") or [], links.get("inv_beta") or []
    given = links.get("path_inv_beta") or []
    out = {}
    for k, pr in enumerate(links.get("pairs") or []):
        i, j = int(pr[0]), int(pr[1])
        lr = raw(_param(Ls[k] if k < len(Ls) else None))
        ib = raw(_param(Bs[k] if k < len(Bs) else None))
        pb = _num(given[k]) if k < len(given) else None
        if pb is None and ib is not None and i in t and j in t:
            pb = t[i] + t[j] + ib
        if lr is None or pb is None or i not in C or j not in C:
            continue
        out[(min(i, j), max(i, j))] = C[i] + C[j] + lr + m * pb
    return out


def _named(key: Any, costs: dict[Any, float]) -> Named | None:
    if key is None or key not in costs:
        return None
    med = statistics.median(costs.values())
    return Named(key, costs[key], costs[key] / med if med > 0 else None)


def slowest(lm: dict[str, Any], m: float) -> Slowest:
    """The fit's slowest node, link and path (models.lmo.slowest); where the file has none
    (an older file), the same rule applied to its parameters."""
    ncost, lcost = _costs(lm, m)
    nodes = {int(c.name): c.value for c in ncost}
    links = {_pair([int(x) for x in c.name.split("-")]): c.value for c in lcost}
    paths = path_costs(lm, m)
    sl = lm.get("slowest") if isinstance(lm.get("slowest"), dict) else {}
    assert isinstance(sl, dict)

    def pick(kind: str, costs: dict[Any, float], key: Any) -> Named | None:
        if key is None:
            key = max(costs, key=lambda k: costs[k]) if costs else None
        got = _named(key, costs)
        cost, ratio = _num(sl.get(f"{kind}_cost_s")), _num(sl.get(f"{kind}_vs_median"))
        if got is not None and cost is not None:  # the fit's own figures where it gave them
            got = Named(got.key, cost, ratio if ratio is not None else got.ratio)
        return got

    nk = sl.get("node")
    lo = sl.get("link_of")
    if sl.get("link_by") == "star" and isinstance(lo, int) and not isinstance(lo, bool):
        # a star: the headlines from the parameters that identify them (mpilab_lmo_headlines)
        node = _named(nk, _node_c(lm)) if isinstance(nk, int) else None
        if node is not None and _num(sl.get("node_cost_s")) is not None:
            node = Named(node.key, _num(sl.get("node_cost_s")),
                         _num(sl.get("node_vs_median")) or node.ratio)
        return Slowest(node, None, pick("path", paths, _pair(sl.get("path"))),
                       Named(lo, _num(sl.get("link_cost_s")), _num(sl.get("link_vs_median"))),
                       True, _num(sl.get("header_bytes")))
    return Slowest(pick("node", nodes, nk if isinstance(nk, int) and nk in nodes else None),
                   pick("link", links, _pair(sl.get("link"))),
                   pick("path", paths, _pair(sl.get("path"))))


def _node_c(lm: dict[str, Any]) -> dict[int, float]:
    """Each node's C (its value)."""
    out = {}
    for n in lm.get("nodes") or []:
        if isinstance(n, dict) and isinstance(n.get("rank"), int):
            c = _param(n.get("C")).value
            if c is not None:
                out[int(n["rank"])] = c
    return out


def _ratio(n: Named) -> str:
    return f"{n.ratio:.2f}x the median" if n.ratio is not None else "no median"


def slowest_words(s: Slowest) -> str:
    parts = []
    h = s.header_bytes
    hdr = (f" less its access link's time for the MPI's {h:.0f} header bytes"
           if h is not None and h > 0 else "")
    if s.node is not None and s.node_by_c:
        parts.append(f"node {s.node.key} (its fixed delay per message C{hdr} = "
                     f"{units.fmt_value(s.node.cost, 's')}, {_ratio(s.node)} node; on a star "
                     "a node's time per byte is its access link's, so C alone names the node)")
    elif s.node_by_c:
        parts.append(f"no node (no node's fixed delay per message C{hdr} stands out: the "
                     "differences between the nodes are their access links')")
    elif s.node is not None:
        parts.append(f"node {s.node.key} (C + M t = {units.fmt_value(s.node.cost, 's')}, "
                     f"{_ratio(s.node)} node)")
    if s.link_of is not None:
        parts.append(f"link: node {s.link_of.key}'s access link (star view: a + M u = "
                     f"{units.fmt_value(s.link_of.cost, 's')}, {_ratio(s.link_of)} node's)")
    if s.link is not None:
        a, b = s.link.key
        parts.append(f"link {a}-{b} (its own L + M/beta = {units.fmt_value(s.link.cost, 's')}, "
                     f"{_ratio(s.link)} link)")
    if s.path is not None:
        a, b = s.path.key
        parts.append(f"path {a}-{b} (one M-byte message between the two nodes over their link, "
                     f"nodes and link with the raw values: "
                     f"{units.fmt_value(s.path.cost, 's')}, {_ratio(s.path)} path)")
    if not parts:
        return "The fit names no slowest node, link or path."
    return ("Slowest in the fit: " + "; ".join(parts) + ". Where the nodes' and the links' "
            "per-byte costs overlap instead of adding (a star network, docs/models-lmo.md), the "
            "path is the figure to trust.")


def cpu_words(lm: dict[str, Any]) -> str | None:
    """The node slowest at messaging (models.lmo.slowest.cpu: the largest C_i) in words;
    None for an older file without it."""
    sl = lm.get("slowest")
    if not isinstance(sl, dict) or not isinstance(sl.get("cpu"), int):
        return None
    c, q = _num(sl.get("cpu_C_s")), _num(sl.get("cpu_vs_median"))
    cost = units.fmt_value(c, "s") if c is not None else "?"
    ratio = f"{q:.2f}x the median node's" if q is not None else "no median"
    h = _num(sl.get("header_bytes")) if sl.get("link_by") == "star" else None
    what = f"C less its access link's time for {h:.0f} header bytes" if h else "C"
    return (f"Slowest at messaging: node {sl['cpu']} (its fixed delay per message {what} = {cost}, "
            f"{ratio}): its processor's work per message, whatever its links.")


def star_words(lm: dict[str, Any]) -> str | None:
    """The star view (models.lmo.star) in words: which node's access link is slowest and how
    well one access link per node explains the pairs; None for a file without it."""
    st = lm.get("star")
    if not isinstance(st, dict) or not isinstance(st.get("slowest_link_of"), int):
        return None
    ma, mu = _num(st.get("misfit_latency")), _num(st.get("misfit_inv_rate"))
    q = _num(st.get("slowest_vs_median"))
    fits = ma is not None and mu is not None and max(ma, mu) <= STAR_FITS
    mis = ("?" if ma is None or mu is None
           else f"{ma:.1%} of the pairs' fixed times, {mu:.1%} of their times per byte")
    head = (f"As a star (one access link per node, a message crossing the sender's and the "
            f"receiver's): the slowest access link is node {st['slowest_link_of']}'s"
            + (f" ({q:.2f}x the median node's)" if q is not None else "")
            + f"; one link per node misses by at most {mis}")
    return head + (", so the pairs are explained by the nodes' links: on a star this, not the "
                   "per-pair slowest link, is the slow link." if fits else
                   ", too much for a star: the pairs have links of their own, and the per-pair "
                   "figures above are the ones to read.")


def _group(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    out: dict[K, list[T]] = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out


def _pcells(p: Param, unit: str, scale: float = 1.0) -> list[Cell]:
    def s(v: float | None) -> float | None:
        return None if v is None else v * scale
    fl = list(p.flags)
    c = tables.value(s(p.value), unit, fl)
    if "clamped" in fl and p.raw is not None:
        c.title = "clamped: the fit fell below 0 (impossible), shown as 0"
    return [c, tables.interval(s(p.lo), s(p.hi), unit)]


def _verdict(rule: str | None, fit: Named | None, what: str) -> str:
    parts = ([rule] if rule else []) + ([f"the fit's slowest {what} ({_ratio(fit)})"]
                                        if fit is not None else [])
    return "; ".join(parts) or "-"


def _node_table(nodes: list[dict[str, Any]], m: float, slow_nodes: dict[int, float],
                fit: Named | None = None, star: bool = False) -> Table:
    # on a star t is the access link's: C + M t does not tell the processor from the link
    what = "the median node (a star: its access link or processor)" if star else "the median node"
    rows, rf = [], []
    for n in nodes:
        r = int(n.get("rank", -1))
        C, t = _param(n.get("C")), _param(n.get("t"))
        cost = _cost(str(r), C, t, m)
        fl = [f"C {f}" for f in C.flags] + [f"t {f}" for f in t.flags]
        mine = fit if fit is not None and fit.key == r else None
        verdict = _verdict(f"slow: {slow_nodes[r]:.2f}x {what}" if r in slow_nodes
                           else None, mine, "node")
        rows.append([Cell(str(r), sort=r, num=True, bold=r in slow_nodes or mine is not None),
                     *_pcells(C, "s"),
                     Cell("-" if t.value is None else f"{t.value * 1e9:.4g} ns/B",
                          sort=t.value, num=True, flags=list(t.flags),
                          title=("clamped: the fit fell below 0 (impossible), shown as 0"
                                 if "clamped" in t.flags and t.raw is not None else None)),
                     Cell(units.fmt_ci(None if t.lo is None else t.lo * 1e9,
                                       None if t.hi is None else t.hi * 1e9, "ns/B")
                          if t.lo is not None and t.hi is not None else "-", num=True),
                     tables.value(cost.value if cost else None, "s"),
                     Cell(verdict, flags=["slow"] if r in slow_nodes else []),
                     tables.flags_cell(fl)])
        rf.append(["slow"] if r in slow_nodes else [])
    return Table(["rank", "C", "C interval", "t", "t interval",
                  f"C + M t (M = {units.fmt_bytes(m)})", "verdict", "flags"], rows, rf,
                 caption="LMO per-node parameters (95% bootstrap intervals)", table_id="lmo-nodes")


def _link_table(links: dict[str, Any], m: float, slow_links: dict[tuple[int, int], float],
                paths: dict[tuple[int, int], float] | None = None,
                fit: Slowest | None = None) -> Table:
    rows, rf = [], []
    paths = paths or {}
    pairs = links.get("pairs") or []
    Ls, Bs = links.get("L") or [], links.get("inv_beta") or []
    rates = links.get("rate_Bps") or []
    for k, pr in enumerate(pairs):
        i, j = int(pr[0]), int(pr[1])
        L = _param(Ls[k] if k < len(Ls) else None)
        B = _param(Bs[k] if k < len(Bs) else None)
        cost = _cost(f"{i}-{j}", L, B, m)
        key = (min(i, j), max(i, j))
        fl = [f"L {f}" for f in L.flags] + [f"1/beta {f}" for f in B.flags]
        rate = _num(rates[k]) if k < len(rates) else None
        fl_ = fit.link if fit is not None and fit.link is not None \
            and fit.link.key == key else None
        fp = fit.path if fit is not None and fit.path is not None \
            and fit.path.key == key else None
        verdict = _verdict(f"slow: {slow_links[key]:.2f}x the median link"
                           if key in slow_links else None, fl_, "link")
        if fp is not None:
            verdict = _verdict(None if verdict == "-" else verdict, fp, "path")
        rows.append([Cell(f"{i}-{j}", bold=key in slow_links or fl_ is not None
                          or fp is not None), *_pcells(L, "s"),
                     tables.value(rate, "B/s", B.flags),
                     tables.value(cost.value if cost else None, "s"),
                     tables.value(paths.get(key), "s"),
                     Cell(verdict, flags=["slow"] if key in slow_links else []),
                     tables.flags_cell(fl)])
        rf.append(["slow"] if key in slow_links else [])
    return Table(["link", "L", "L interval", "beta (rate)", f"L + M/beta (M = "
                  f"{units.fmt_bytes(m)})", "path: C_i + C_j + L + M (t_i + t_j + 1/beta), raw",
                  "verdict", "flags"], rows, rf,
                 caption="LMO per-link parameters (95% bootstrap intervals)", table_id="lmo-links")


def _costs(lm: dict[str, Any], m: float) -> tuple[list[Cost], list[Cost]]:
    nodes = [c for n in lm.get("nodes") or []
             if (c := _cost(str(int(n.get("rank", -1))), _param(n.get("C")),
                            _param(n.get("t")), m)) is not None]
    links = lm.get("links") or {}
    Ls, Bs = links.get("L") or [], links.get("inv_beta") or []
    lc = [c for k, pr in enumerate(links.get("pairs") or []) if k < len(Ls) and k < len(Bs)
          if (c := _cost(f"{int(pr[0])}-{int(pr[1])}", _param(Ls[k]), _param(Bs[k]), m))
          is not None]
    return nodes, lc


def _heatmap(sink: FigureSink, lm: dict[str, Any], m: float, nranks: int,
             mark: Named | None = None) -> Any:
    mat = np.full((nranks, nranks), np.nan)
    links = lm.get("links") or {}
    Ls, Bs = links.get("L") or [], links.get("inv_beta") or []
    for k, pr in enumerate(links.get("pairs") or []):
        i, j = int(pr[0]), int(pr[1])
        if k < len(Ls) and k < len(Bs) and max(i, j) < nranks:
            c = _cost("", _param(Ls[k]), _param(Bs[k]), m)
            if c is not None:
                mat[i, j] = mat[j, i] = c.value
    return sink.html(Heatmap(sink.uid("lmo-links"),
                             f"LMO link cost L_ij + M/beta_ij, M = {units.fmt_bytes(m)}",
                             mat, 1, nranks, marks=_marks(mark, "slowest link")))


def _marks(n: Named | None, label: str) -> tuple[tuple[int, int, str], ...]:
    if n is None:
        return ()
    a, b = n.key
    return ((a, b, f"{label} {a}-{b} ({_ratio(n)})"),)


def _path_heatmap(sink: FigureSink, paths: dict[tuple[int, int], float], m: float,
                  nranks: int, mark: Named | None) -> Any:
    mat = np.full((nranks, nranks), np.nan)
    for (i, j), v in paths.items():
        if max(i, j) < nranks:
            mat[i, j] = mat[j, i] = v
    return sink.html(Heatmap(sink.uid("lmo-paths"),
                             f"LMO path cost: one message of M = {units.fmt_bytes(m)} i -> j, "
                             "C_i + C_j + L_ij + M (t_i + t_j + 1/beta_ij)", mat, 1, nranks,
                             marks=_marks(mark, "slowest path")))


def predictions(r: Results) -> list[Prediction]:
    lm = ((r.raw.get("models") or {}).get("lmo") or {})
    out = []
    for p in lm.get("predictions") or []:
        pv = _num(p.get("predicted")) if isinstance(p, dict) else None
        if pv is None or pv <= 0:  # flagged nonpositive by the fitter: impossible, not drawn
            continue
        out.append(Prediction(op=str(p.get("op")), impl=str(p.get("impl")),
                              bytes=int(p.get("bytes") or 0), predicted=pv,
                              measured=_num(p.get("measured")), timing=p.get("timing"),
                              statistic=str(p.get("measured_statistic") or "median")))
    return out


def _pred_figs(sec: Section, sink: FigureSink, lp: list[Prediction],
               hp: list[Prediction]) -> None:
    hock = _group(hp, lambda p: (p.op, p.impl))
    for (op, impl), qs in sorted(_group(lp, lambda p: (p.op, p.impl)).items()):
        qs.sort(key=lambda p: p.bytes)
        cs = [Curve(f"{impl} measured", [Point(float(p.bytes), p.measured, None, None, None, [])
                                         for p in qs if p.measured is not None]),
              Curve(f"LMO predicted ({impl})", [Point(float(p.bytes), p.predicted, None, None,
                                                    None, []) for p in qs], kind="model")]
        hq = sorted(hock.get((op, impl), []), key=lambda p: p.bytes)
        if hq:
            seen: dict[int, Prediction] = {}
            for p in hq:
                seen.setdefault(p.bytes, p)
            cs.append(Curve(f"Hockney predicted ({impl})",
                            [Point(float(b), p.predicted, None, None, None, [])
                             for b, p in sorted(seen.items())], kind="model"))
        sec.add("fig", sink.html(Figure(sink.uid(f"lmo-pred-{op}-{impl}"),
                                        f"{op}/{impl}: LMO predicted vs measured", cs,
                                        "message size", "time", "B", "s")))


def _pred_table(lp: list[Prediction], hp: list[Prediction]) -> Table:
    hmap = {(p.op, p.impl, p.bytes, p.timing): p for p in hp}
    rows = []
    for p in sorted(lp, key=lambda p: (p.op, p.impl, p.bytes, p.timing or "")):
        h = hmap.get((p.op, p.impl, p.bytes, p.timing))
        he = h.rel_error if h is not None else None
        e = p.rel_error
        rows.append([Cell(p.op), Cell(p.impl), Cell(p.timing or "-"), tables.value(p.bytes, "B"),
                     tables.value(p.predicted, "s"), tables.value(p.measured, "s"),
                     Cell("-" if e is None else f"{e * 100:+.1f} %", sort=e, num=True),
                     tables.value(h.predicted if h else None, "s"),
                     Cell("-" if he is None else f"{he * 100:+.1f} %", sort=he, num=True)])
    stat = "/".join(sorted({p.statistic for p in lp})) or "median"
    return Table(["op", "impl", "timing", "size", "LMO predicted", f"measured ({stat})",
                  "LMO error", "Hockney predicted", "Hockney error"], rows,
                 caption="LMO (and Hockney) predictions versus measured; error = "
                 "(predicted - measured) / measured", table_id="lmo-pred")


def section(r: Results, sink: FigureSink) -> list[Section]:
    lm = (r.raw.get("models") or {}).get("lmo")
    if not isinstance(lm, dict):
        return []
    sec = Section("lmo", "Heterogeneous model (LMO)")
    m = float(lm.get("bytes") or 0)
    sec.note(f"Per-node fixed and per-byte delays (C_i, t_i) and per-link latency and rate "
             f"(L_ij, beta_ij) from round trips and point-to-two experiments with 0 and "
             f"{units.fmt_bytes(m)} messages ({lm.get('mode', '?')} mode, "
             f"{lm.get('triplets', '?')} triplets in {lm.get('rounds', '?')} rounds, ranks "
             f"waiting by {'sleeping' if lm.get('wait') == 'sleep' else 'spinning'}). A node "
             f"or link is named slow when its cost at M is above {SLOW_RATIO}x the median and "
             "its interval clears the median's.")
    if lm.get("error"):
        sec.warn(f"The LMO fit failed: {lm['error']}")
        return [sec]
    ncost, lcost = _costs(lm, m)
    sn = {int(c.name): q for c, q in slow(ncost)}
    sl = {(min(a, b), max(a, b)): q for c, q in slow(lcost)
          for a, b in [tuple(int(x) for x in c.name.split("-"))]}
    fit = slowest(lm, m)
    # on a star t_i is the node's access link's: C + M t does not tell the CPU from the link
    whose = "node {}" if fit.link_of is None else "node {}'s access link or processor"
    if sn or sl:
        sec.warn("Slow: " + "; ".join(
            [f"{whose.format(k)} ({q:.2f}x the median node's C + M t"
             + (")" if fit.link_of is None else "; a star: the headline below says which)")
             for k, q in sn.items()]
            + [f"link {a}-{b} ({q:.2f}x the median link's L + M/beta)"
               for (a, b), q in sl.items()]) + ".")
    else:
        sec.note("No node and no link is slow by that rule.")
    sec.note(slowest_words(fit))
    cpu = cpu_words(lm)
    if cpu:
        sec.note(cpu)
    star = star_words(lm)
    if star:
        sec.note(star)
    sec.h3("Per node", "lmo-node")
    sec.add("table", _node_table(lm.get("nodes") or [], m, sn, fit.node,
                                 star=fit.link_of is not None))
    sec.h3("Per link", "lmo-link")
    nranks = max([int(n.get("rank", -1)) for n in lm.get("nodes") or []]
                 + [int(x) for pr in (lm.get("links") or {}).get("pairs") or [] for x in pr]
                 + [-1]) + 1
    paths = path_costs(lm, m)
    if nranks > 1:
        sec.add("fig", _heatmap(sink, lm, m, nranks, fit.link))
        if paths:
            sec.add("fig", _path_heatmap(sink, paths, m, nranks, fit.path))
    sec.add("table", _link_table(lm.get("links") or {}, m, sl, paths, fit))
    lp = predictions(r)
    bad = [p for p in lm.get("predictions") or [] if isinstance(p, dict)
           and (_num(p.get("predicted")) or 0.0) <= 0]
    if bad:
        sec.warn(f"{len(bad)} LMO prediction(s) not shown: the fit's raw parameters sum to a "
                 "time <= 0 there (noisy point-to-two experiments; flagged nonpositive).")
    if lp:
        sec.h3("LMO predictions versus measured", "lmo-pred")
        _pred_figs(sec, sink, lp, r.predictions)
        sec.add("table", _pred_table(lp, r.predictions))
    return [sec]
