"""The comparison report: the study's figures with one curve per transport, and a table
of who wins where. Reads only stored results files (DIR/<transport>.json)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from mpilab import results
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.report.plots import to_img
from mpilab.results import Measurement, Results

Point = tuple[float, float]


@dataclass
class Run:
    name: str
    res: Results

    def ms(self, op: str, ranks: int | None = None, impl: str | None = None) -> list[Measurement]:
        out = [m for m in self.res.measurements if m.op == op and (impl is None or m.impl == impl)]
        if ranks is not None:
            out = [m for m in out if m.ranks == ranks]
        return sorted(out, key=lambda m: m.bytes)

    def max_ranks(self, op: str) -> int | None:
        rs = [m.ranks for m in self.ms(op) if m.ranks]
        return max(rs) if rs else None


def derived(m: Measurement, key: str) -> float | None:
    d = m.raw.get("derived")
    if not isinstance(d, dict):
        return None
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def pair_avail(m: Measurement) -> float | None:
    """COMB: the CPU availability of the pair, the lower of the two ranks' values
    (`cpu_avail` of rank 0, `cpu_avail_peer` of rank 1; older files have only the first)."""
    vals = [v for v in (derived(m, "cpu_avail"), derived(m, "cpu_avail_peer")) if v is not None]
    return min(vals) if vals else None


def load_dir(d: str | Path) -> list[Run]:
    p = Path(d)
    if not p.is_dir():
        raise MpilabError(f"{d}: no such directory")
    files = sorted(f for f in p.glob("*.json"))
    if not files:
        raise MpilabError(f"{d}: no results files (*.json)")
    runs = []
    for f in files:
        r = results.load(f)
        name = str(r.provenance.get("transport") or f.stem)
        runs.append(Run(name, r))
    return runs


# ---------------------------------------------------------------------------------------
# figures

def _overlay(title: str, xlabel: str, ylabel: str, curves: list[tuple[str, list[Point]]],
             logx: bool = True, logy: bool = True) -> str | None:
    curves = [(n, pts) for n, pts in curves if pts]
    if not curves:
        return None
    fig = Figure(figsize=(6.0, 3.8))
    ax = fig.subplots()
    for name, pts in curves:
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, marker="o", markersize=3, label=name)
    allx = [x for _, pts in curves for x, _ in pts]
    ally = [y for _, pts in curves for _, y in pts]
    if logx:
        if min(allx) <= 0:
            ax.set_xscale("symlog", linthresh=1)
        else:
            ax.set_xscale("log")
    if logy and min(ally) > 0:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return to_img(fig, title)


def _series(runs: list[Run], op: str, y: Callable[[Measurement], float | None],
            ranks: Callable[[Run], int | None] | None = None,
            x: Callable[[Measurement], float | None] | None = None
            ) -> list[tuple[str, list[Point]]]:
    out = []
    for r in runs:
        rk = ranks(r) if ranks else None
        pts = []
        for m in r.ms(op, rk):
            xv = x(m) if x else float(m.bytes)
            yv = y(m)
            if xv is not None and yv is not None:
                pts.append((xv, yv))
        if x:
            pts.sort()
        out.append((r.name, pts))
    return out


def _two(r: Run) -> int:
    return 2


def _coll_time(m: Measurement) -> float | None:
    return m.stats.median if math.isfinite(m.stats.median) else None


def _mb(key: str) -> Callable[[Measurement], float | None]:
    def f(m: Measurement) -> float | None:
        v = derived(m, key)
        return None if v is None else v / 1e6
    return f


def _us(key: str) -> Callable[[Measurement], float | None]:
    def f(m: Measurement) -> float | None:
        v = derived(m, key)
        return None if v is None else v * 1e6
    return f


def _der(key: str) -> Callable[[Measurement], float | None]:
    return lambda m: derived(m, key)


def _efficiency(pts: list[dict[str, Any]], weak: bool) -> list[Point]:
    base = [p for p in pts if p.get("ranks") == 1]
    if not base:
        return []
    t1 = float(base[0]["seconds"])
    out = []
    for p in pts:
        n, t = int(p["ranks"]), float(p["seconds"])
        if t > 0:
            out.append((float(n), t1 / t if weak else t1 / (n * t)))
    return sorted(out)


# Entries with a figure of the study's own above; every other entry that carries derived
# values (a new suite entry, a user entry) gets one figure per value it declares.
_STUDY_OPS = {"pingpong", "pingping", "sendrecv", "exchange", "bcast", "allreduce", "alltoall",
              "stream", "stream_multi", "comb", "overlap_isend", "overlap_iallreduce"}
_VALUES: dict[str, tuple[str, Callable[[str], Callable[[Measurement], float | None]], bool]] = {
    "latency_s": ("latency (us)", _us, True), "bandwidth_Bps": ("MB/s", _mb, True),
    "msg_rate": ("messages/s", _der, True), "overlap_pct": ("overlap (%)", _der, False),
    "cpu_avail": ("fraction of CPU left", _der, False)}


def _other_entries(runs: list[Run]) -> list[tuple[str, str | None]]:
    """Figures of the entries the study's figures do not cover, from their derived values."""
    keys: dict[str, list[str]] = {}
    for r in runs:
        for m in r.res.measurements:
            d = m.raw.get("derived")
            if m.op in _STUDY_OPS or not isinstance(d, dict):
                continue
            ks = keys.setdefault(m.op, [])
            ks += [k for k in d if k in _VALUES and k not in ks]
    out: list[tuple[str, str | None]] = []
    for op in sorted(keys):
        for k in keys[op]:
            label, conv, logy = _VALUES[k]
            out.append((f"{op}: {k}", _overlay(f"{op}, {k}", "message size (bytes)", label,
                                               _series(runs, op, conv(k)), logy=logy)))
    return out


def figures(runs: list[Run]) -> list[tuple[str, str]]:
    B = "message size (bytes)"
    figs: list[tuple[str, str | None]] = [
        ("Ping-pong latency (Fig. 1)",
         _overlay("Ping-pong latency", B, "one-way latency (us)",
                  _series(runs, "pingpong", _us("latency_s"), _two))),
        ("Ping-pong bandwidth (Fig. 2)",
         _overlay("Ping-pong bandwidth", B, "MB/s", _series(runs, "pingpong", _mb("bandwidth_Bps"),
                                                             _two))),
        ("Ping-ping bandwidth",
         _overlay("Ping-ping bandwidth", B, "MB/s", _series(runs, "pingping", _mb("bandwidth_Bps"),
                                                             _two))),
        ("Send-receive (bidirectional) bandwidth (Fig. 3)",
         _overlay("Sendrecv bandwidth, 2 ranks", B, "MB/s",
                  _series(runs, "sendrecv", _mb("bandwidth_Bps"), _two))),
        ("Exchange bandwidth (Fig. 4)",
         _overlay("Exchange bandwidth, N ranks", B, "MB/s",
                  _series(runs, "exchange", _mb("bandwidth_Bps"),
                          lambda r: r.max_ranks("exchange")))),
    ]
    for op, fig in (("bcast", "Fig. 5"), ("allreduce", "Fig. 6"), ("alltoall", "Fig. 7")):
        figs.append((f"{op} ({fig})",
                     _overlay(f"{op}, N ranks", B, "time (us)",
                              _series(runs, op, lambda m: m.stats.median * 1e6,
                                      lambda r, o=op: r.max_ranks(o)))))  # type: ignore[misc]
    figs += [
        ("Streaming bandwidth (Fig. 8)",
         _overlay("Streaming bandwidth (window of sends, one reply)", B, "MB/s",
                  _series(runs, "stream", _mb("bandwidth_Bps")))),
        ("Message rate (Fig. 9)",
         _overlay("Message rate (streaming)", B, "messages/s",
                  _series(runs, "stream", _der("msg_rate")))),
        ("Aggregate message rate, k pairs",
         _overlay("Message rate, k pairs at once", B, "messages/s",
                  _series(runs, "stream_multi", _der("msg_rate")))),
        ("CPU availability (Fig. 10)",
         _overlay("CPU availability vs bandwidth (COMB polling)", "bandwidth per direction (MB/s)",
                  "fraction of CPU left to the application (lower of the two ranks)",
                  _series(runs, "comb", pair_avail, x=_mb("bandwidth_Bps")),
                  logx=True, logy=False)),  # bandwidths span decades across transports
        ("Overlap of Isend/Irecv with computation",
         _overlay("Overlap, Isend/Irecv", B, "overlap (%)",
                  _series(runs, "overlap_isend", _der("overlap_pct")), logy=False)),
        ("Overlap of Iallreduce with computation",
         _overlay("Overlap, Iallreduce", B, "overlap (%)",
                  _series(runs, "overlap_iallreduce", _der("overlap_pct")), logy=False)),
    ]
    for mode in ("strong", "weak"):
        curves = []
        for r in runs:
            sc = r.res.raw.get("scaling")
            if isinstance(sc, dict) and isinstance(sc.get(mode), list):
                curves.append((r.name, _efficiency(sc[mode], mode == "weak")))
        figs.append((f"Wavefront {mode} scaling (Fig. 11)",
                     _overlay(f"Parallel efficiency, {mode} scaling", "ranks", "efficiency",
                              curves, logx=False, logy=False)))
    figs += _other_entries(runs)
    return [(t, f) for t, f in figs if f]


# ---------------------------------------------------------------------------------------
# who wins where

def _best(runs: list[Run], value: Callable[[Run], tuple[float, str] | None],
          lowest: bool) -> tuple[str, str, list[str]]:
    vals = []
    for r in runs:
        v = value(r)
        if v is not None:
            vals.append((v[0], r.name, v[1]))
    if not vals:
        return "-", "no data", []
    vals.sort(reverse=not lowest)
    return vals[0][1], vals[0][2], [f"{n}: {s}" for _, n, s in vals]


def small_latency(r: Run) -> tuple[float, str] | None:
    ms = [m for m in r.ms("pingpong", 2) if derived(m, "latency_s") is not None]
    if not ms:
        return None
    m = ms[0]
    v = derived(m, "latency_s") or 0.0
    return v, f"{v * 1e6:.2f} us at {m.bytes} B"


def large_bandwidth(r: Run) -> tuple[float, str] | None:
    """Ping-pong bandwidth at the largest message size measured (small messages can beat
    a shaper's rate inside its burst allowance, so the maximum over sizes would mislead)."""
    ms = [m for m in r.ms("pingpong", 2) if derived(m, "bandwidth_Bps") is not None]
    if not ms:
        return None
    m = ms[-1]
    v = derived(m, "bandwidth_Bps") or 0.0
    return v, f"{v / 1e6:.0f} MB/s at {m.bytes} B"


def msg_rate(r: Run) -> tuple[float, str] | None:
    best = None
    for m in r.ms("stream"):
        v = derived(m, "msg_rate")
        if v is not None and (best is None or v > best[0]):
            best = (v, f"{v / 1e6:.2f} M msg/s at {m.bytes} B")
    return best


def cpu_left(r: Run) -> tuple[float, str] | None:
    """Most CPU left while still moving data: the highest availability (the lower of the
    pair's two ranks) among the COMB points that reach at least half of this transport's
    best COMB bandwidth."""
    pts = [(pair_avail(m), derived(m, "bandwidth_Bps")) for m in r.ms("comb")]
    pts2 = [(a, b) for a, b in pts if a is not None and b is not None]
    if not pts2:
        return None
    top = max(b for _, b in pts2)
    a, b = max((a, b) for a, b in pts2 if b >= 0.5 * top)
    return a, f"{a * 100:.0f}% at {b / 1e6:.0f} MB/s"


def summary(runs: list[Run]) -> list[tuple[str, str, str, list[str]]]:
    rows = []
    for title, fn, low in (("lowest small-message latency (ping-pong)", small_latency, True),
                           ("highest large-message bandwidth (ping-pong)", large_bandwidth, False),
                           ("highest message rate (streaming)", msg_rate, False),
                           ("most CPU left during transfers (COMB)", cpu_left, False)):
        w, v, all_ = _best(runs, fn, low)
        rows.append((title, w, v, all_))
    return rows


def render(runs: list[Run]) -> str:
    css = ("body{font-family:sans-serif;max-width:1100px;margin:auto}"
           "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}"
           "img.plot{max-width:100%}")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>mpilab compare</title>"
             f"<style>{css}</style></head><body><h1>Interconnect comparison</h1>"]
    parts.append("<h2>Transports</h2><table><tr><th>name</th><th>MPI parameters</th>"
                 "<th>ranks</th><th>MPI</th><th>date</th></tr>")
    for r in runs:
        pv = r.res.provenance
        tr = (r.res.raw.get("suite") or {}).get("transport") or {}
        mca = tr.get("mca") or pv.get("mca") or {}
        mca_s = " ".join(f"--mca {k} {v}" for k, v in mca.items())
        if tr.get("mptcp"):
            mca_s += " (under mptcpize)"
        parts.append(f"<tr><td>{escape(r.name)}</td><td><code>{escape(mca_s)}</code></td>"
                     f"<td>{escape(str(pv.get('ranks', '')))}</td>"
                     f"<td>{escape(str(pv.get('mpi', '')))}</td>"
                     f"<td>{escape(str(pv.get('date', '')))}</td></tr>")
    parts.append("</table><h2>Who wins where</h2><table><tr><th>criterion</th><th>winner</th>"
                 "<th>value</th><th>all</th></tr>")
    for title, w, v, all_ in summary(runs):
        parts.append(f"<tr><td>{escape(title)}</td><td><b>{escape(w)}</b></td>"
                     f"<td>{escape(v)}</td><td>{escape('; '.join(all_))}</td></tr>")
    parts.append("</table><p>Overlap = 100*(t_comm+t_comp-t_total)/min(t_comm,t_comp); CPU "
                 "availability = work rate during transfers / work rate without "
                 "communication (COMB polling method). Efficiency: strong T1/(N*TN), weak "
                 "T1/TN.</p>")
    for title, img in figures(runs):
        parts.append(f"<h2>{escape(title)}</h2>{img}")
    parts.append("</body></html>\n")
    return "".join(parts)


def build(d: str | Path) -> Path:
    runs = load_dir(d)
    out = Path(d) / "report.html"
    atomic_write_text(out, render(runs))
    return out
