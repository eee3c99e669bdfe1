"""The comparison report of `mpilab compare`: the study's figures with one curve per
transport, who wins where (only where the difference is significant) and the ratio of every
common measurement to the first transport. Reads only stored results files
(DIR/<transport>.json); rendered by the reports' one template (mpilab.report.render)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from mpilab import __version__, results
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.report import compare, signif, tables, units, values
from mpilab.report.figs import Curve, Figure, Point
from mpilab.report.render import FigureSink, Section, page
from mpilab.report.signif import Estimate
from mpilab.report.summary import flag_legend
from mpilab.report.tables import Cell, Table
from mpilab.results_model import Measurement, Results


@dataclass
class Run:
    name: str
    res: Results

    def ms(self, op: str, ranks: int | None = None, impl: str | None = None) -> list[Measurement]:
        """op's measurements (impl None: of a study operation, the study's implementations)."""
        out = [m for m in self.res.measurements if m.op == op and (impl is None or m.impl == impl)]
        if impl is None and op in _STUDY_OPS:
            out = [m for m in out if _study(m)]
        if ranks is not None:
            out = [m for m in out if m.ranks == ranks]
        return sorted(out, key=lambda m: m.bytes)

    def max_ranks(self, op: str) -> int | None:
        rs = [m.ranks for m in self.ms(op) if m.ranks]
        return max(rs) if rs else None


derived = values.derived


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

Y = Callable[[Measurement], Estimate]


def _der(key: str) -> Y:
    return lambda m: values.derived_estimate(m, key)


def _avail(m: Measurement) -> Estimate:
    return Estimate(pair_avail(m))


def _series(runs: list[Run], op: str, y: Y, ranks: Callable[[Run], int | None] | None = None,
            x: Callable[[Measurement], float | None] | None = None,
            impl: str | None = None) -> list[Curve]:
    out = []
    for r in runs:
        rk = ranks(r) if ranks else None
        pts = []
        for m in r.ms(op, rk, impl):
            xv = x(m) if x else float(m.bytes)
            e = y(m)
            if xv is not None and e.value is not None:
                pts.append(values.point(xv, e, values.flags(m), m.stats.reps))
        pts.sort(key=lambda p: p.x)
        out.append(Curve(r.name, pts))
    return out


def _two(r: Run) -> int:
    return 2


def _efficiency(pts: list[dict[str, Any]], weak: bool) -> list[tuple[float, float]]:
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


def _study(m: Measurement) -> bool:
    """A measurement the study's figures show: the suite's implementation ("mpi"), the native
    collectives, COMB's poll intervals. Another implementation of a study operation (a user
    entry, --entries) gets figures of its own."""
    return m.op in _STUDY_OPS and (m.impl in ("mpi", "native") or m.op == "comb")


# derived value -> (axis label, unit of the formatter, log axis)
_VALUES: dict[str, tuple[str, str, bool]] = {
    "latency_s": ("latency", "s", True), "bandwidth_Bps": ("bandwidth", "B/s", True),
    "msg_rate": ("messages/s", "", True), "overlap_pct": ("overlap (%)", "", False),
    "cpu_avail": ("CPU left to the application", "fraction", False)}


@dataclass
class Fig:
    title: str
    curves: list[Curve]
    ylabel: str
    y_unit: str
    xlabel: str = "message size"
    x_unit: str = "B"
    xlog: bool = True
    ylog: bool = True


def _other_entries(runs: list[Run]) -> list[Fig]:
    # (op, impl): impl None for an operation outside the study (all its implementations)
    keys: dict[tuple[str, str | None], list[str]] = {}
    for r in runs:
        for m in r.res.measurements:
            d = m.raw.get("derived")
            if _study(m) or not isinstance(d, dict):
                continue
            ks = keys.setdefault((m.op, m.impl if m.op in _STUDY_OPS else None), [])
            ks += [k for k in d if k in _VALUES and k not in ks]
    out = []
    for (op, impl) in sorted(keys, key=lambda k: (k[0], k[1] or "")):
        name = f"{op}:{impl}" if impl else op
        for k in keys[(op, impl)]:
            label, unit, logy = _VALUES[k]
            y = _avail if k == "cpu_avail" else _der(k)
            out.append(Fig(f"{name}: {k}", _series(runs, op, y, impl=impl), label, unit, ylog=logy))
    return out


def study_figures(runs: list[Run]) -> list[Fig]:
    bw = "bandwidth"
    figs = [
        Fig("Ping-pong latency (Fig. 1)", _series(runs, "pingpong", _der("latency_s"), _two),
            "one-way latency", "s"),
        Fig("Ping-pong bandwidth (Fig. 2)",
            _series(runs, "pingpong", _der("bandwidth_Bps"), _two), bw, "B/s"),
        Fig("Ping-ping bandwidth", _series(runs, "pingping", _der("bandwidth_Bps"), _two), bw,
            "B/s"),
        Fig("Send-receive (bidirectional) bandwidth, 2 ranks (Fig. 3)",
            _series(runs, "sendrecv", _der("bandwidth_Bps"), _two), bw, "B/s"),
        Fig("Exchange bandwidth, N ranks (Fig. 4)",
            _series(runs, "exchange", _der("bandwidth_Bps"), lambda r: r.max_ranks("exchange")),
            bw, "B/s"),
    ]
    for op, fig in (("bcast", "Fig. 5"), ("allreduce", "Fig. 6"), ("alltoall", "Fig. 7")):
        figs.append(Fig(f"{op}, N ranks ({fig})",
                        _series(runs, op, values.time_estimate,
                                lambda r, o=op: r.max_ranks(o)),  # type: ignore[misc]
                        "time", "s"))
    figs += [
        Fig("Streaming bandwidth (Fig. 8)", _series(runs, "stream", _der("bandwidth_Bps")), bw,
            "B/s"),
        Fig("Message rate, streaming (Fig. 9)", _series(runs, "stream", _der("msg_rate")),
            "messages/s", ""),
        Fig("Aggregate message rate, k pairs at once",
            _series(runs, "stream_multi", _der("msg_rate")), "messages/s", ""),
        Fig("CPU availability vs bandwidth, COMB polling (Fig. 10)",
            _series(runs, "comb", _avail, x=lambda m: derived(m, "bandwidth_Bps")),
            "CPU left to the application (lower of the two ranks)", "fraction",
            xlabel="bandwidth per direction", x_unit="B/s", ylog=False),
        Fig("Overlap of Isend/Irecv with computation",
            _series(runs, "overlap_isend", _der("overlap_pct")), "overlap (%)", "", ylog=False),
        Fig("Overlap of Iallreduce with computation",
            _series(runs, "overlap_iallreduce", _der("overlap_pct")), "overlap (%)", "",
            ylog=False),
    ]
    for mode in ("strong", "weak"):
        curves = []
        for r in runs:
            sc = r.res.raw.get("scaling")
            if isinstance(sc, dict) and isinstance(sc.get(mode), list):
                curves.append(Curve(r.name, [Point(x, y, None, None, None, [])
                                             for x, y in _efficiency(sc[mode], mode == "weak")]))
        figs.append(Fig(f"Wavefront {mode} scaling, parallel efficiency (Fig. 11)", curves,
                        "efficiency", "", xlabel="ranks", x_unit="ranks", xlog=False,
                        ylog=False))
    figs += _other_entries(runs)
    return [f for f in figs if any(c.points for c in f.curves)]


def figures(runs: list[Run], sink: FigureSink | None = None) -> list[tuple[str, str]]:
    """(title, html) of every figure with data; a figure whose values are all zero is a
    sentence instead (an all-zero plot on an arbitrary axis tells nothing)."""
    sink = sink or FigureSink()
    out = []
    for f in study_figures(runs):
        ys = [p.y for c in f.curves for p in c.points if p.y is not None]
        if ys and all(y == 0 for y in ys):
            out.append((f.title, f"all {len(ys)} values are 0 ({f.ylabel}) in every run"))
            continue
        fig = Figure(sink.uid(f.title.split(" (")[0]), f.title,
                     [c for c in f.curves if c.points], f.xlabel, f.ylabel, f.x_unit, f.y_unit,
                     f.xlog, f.ylog)
        out.append((f.title, sink.html(fig)))
    return out


# ---------------------------------------------------------------------------------------
# who wins where


@dataclass
class Criterion:
    title: str
    winner: str | None     # named only when significantly better than the runner-up
    best: str | None       # the best value's run, significant or not
    value: str
    all: list[str]
    verdict: str


# what a criterion shows for one run: its estimate, and "VALUE at WHERE" as (number, unit)
# pairs; _best writes each position of every run in one unit (axis_scale over the runs), so
# one column never mixes MB/s with GB/s, us with ms or M msg/s with k msg/s
Shown = tuple[Estimate, list[tuple[float | None, str]]]


#: the units written in one scale per column (units.axis_scale)
SCALED = ("s", "B/s", "msg/s")


def _texts(shown: dict[str, list[tuple[float | None, str]]]) -> dict[str, str]:
    """"VALUE at WHERE" per run, each position in one unit over all the runs."""
    names = list(shown)
    width = max((len(p) for p in shown.values()), default=0)
    cols: list[dict[str, str]] = []
    for k in range(width):
        cells = {n: shown[n][k] for n in names if k < len(shown[n])}
        unit_set = {u for _, u in cells.values()}
        unit = next(iter(unit_set)) if len(unit_set) == 1 else None
        out = {}
        if unit in SCALED:
            scale, label = units.axis_scale([v for v, _ in cells.values() if v is not None],
                                            unit)
        for n, (v, u) in cells.items():
            if unit in SCALED and v is not None and not units.impossible(v, u):
                out[n] = f"{units.sig3(v / scale)} {label}"
            else:
                out[n] = units.fmt_value(v, u)
        cols.append(out)
    return {n: " at ".join(c[n] for c in cols if n in c) for n in names}


def _best(runs: list[Run], value: Callable[[Run], Shown | None], lowest: bool,
          title: str) -> Criterion:
    cands, shown = [], {}
    for r in runs:
        v = value(r)
        if v is not None:
            cands.append((r.name, v[0]))
            shown[r.name] = v[1]
    texts = _texts(shown)
    best, second, verdict = signif.winner(cands, lowest)
    order = sorted(cands, key=lambda ne: (ne[1].value if lowest else -ne[1].value))  # type: ignore
    alls = [f"{n}: {texts[n]}" for n, _ in order]
    if best is None:
        return Criterion(title, None, None, "no data", [], "-")
    if verdict is None:
        return Criterion(title, best, best, texts[best], alls, "only one run")
    if verdict.significant:
        return Criterion(title, best, best, texts[best], alls,
                         f"significant against {second} ({verdict.method})")
    why = ("no interval" if verdict.method == "no-ci"
           else f"not significant against {second} ({verdict.method})")
    return Criterion(title, None, best, texts[best], alls, why)


def small_latency(r: Run) -> Shown | None:
    ms = [m for m in r.ms("pingpong", 2) if derived(m, "latency_s") is not None]
    if not ms:
        return None
    e = values.derived_estimate(ms[0], "latency_s")
    return e, [(e.value, "s"), (float(ms[0].bytes), "B")]


def large_bandwidth(r: Run) -> Shown | None:
    """Ping-pong bandwidth at the largest message size measured (small messages can beat
    a shaper's rate inside its burst allowance, so the maximum over sizes would mislead)."""
    ms = [m for m in r.ms("pingpong", 2) if derived(m, "bandwidth_Bps") is not None]
    if not ms:
        return None
    e = values.derived_estimate(ms[-1], "bandwidth_Bps")
    return e, [(e.value, "B/s"), (float(ms[-1].bytes), "B")]


def msg_rate(r: Run) -> Shown | None:
    best: Shown | None = None
    for m in r.ms("stream"):
        e = values.derived_estimate(m, "msg_rate")
        if e.value is not None and (best is None or e.value > best[0].value):  # type: ignore
            best = (e, [(e.value, "msg/s"), (float(m.bytes), "B")])
    return best


def cpu_left(r: Run) -> tuple[float, list[tuple[float | None, str]]] | None:
    """Most CPU left while still moving data: the highest availability (the lower of the
    pair's two ranks) among the COMB points that reach at least half of this transport's
    best COMB bandwidth."""
    pts = [(pair_avail(m), derived(m, "bandwidth_Bps")) for m in r.ms("comb")]
    pts2 = [(a, b) for a, b in pts if a is not None and b is not None]
    if not pts2:
        return None
    top = max(b for _, b in pts2)
    a, b = max((a, b) for a, b in pts2 if b >= 0.5 * top)
    return a, [(a, "fraction"), (b, "B/s")]


def _cpu_est(r: Run) -> Shown | None:
    v = cpu_left(r)
    return None if v is None else (Estimate(v[0]), v[1])


def summary(runs: list[Run]) -> list[Criterion]:
    return [_best(runs, small_latency, True, "lowest small-message latency (ping-pong)"),
            _best(runs, large_bandwidth, False, "highest large-message bandwidth (ping-pong)"),
            _best(runs, msg_rate, False, "highest message rate (streaming)"),
            _best(runs, _cpu_est, False, "most CPU left during transfers (COMB)")]


def _transports(runs: list[Run]) -> Table:
    rows = []
    for r in runs:
        pv = r.res.provenance
        tr = (r.res.raw.get("suite") or {}).get("transport") or {}
        mca = tr.get("mca") or pv.get("mca") or {}
        mca_s = " ".join(f"--mca {k} {v}" for k, v in mca.items())
        if tr.get("mptcp"):
            mca_s += " (under mptcpize)"
        rows.append([Cell(r.name), Cell(mca_s or "-"), tables.count(values.num(pv.get("ranks"))),
                     tables.text(pv.get("mpi")), tables.text(pv.get("date"))])
    return Table(["name", "MPI parameters", "ranks", "MPI", "date"], rows,
                 caption="Transports", table_id="transports", collapse=False)


def _wins_table(runs: list[Run]) -> Table:
    rows = []
    for c in summary(runs):
        who = (Cell(c.winner, bold=True) if c.winner
               else Cell(f"no clear winner (best: {c.best})" if c.best else "-"))
        rows.append([Cell(c.title), who, Cell(c.value), Cell(c.verdict), Cell("; ".join(c.all))])
    return Table(["criterion", "winner", "value", "significance", "all"], rows,
                 caption="Who wins where", table_id="winners", collapse=False)


def render(runs: list[Run], static: bool = False) -> str:
    sink = FigureSink(static)
    s = Section("summary", "Summary")
    s.add("legend", flag_legend(*(r.res for r in runs)))  # floats beside the first table
    s.add("table", _transports(runs))
    s.h3("Who wins where")
    s.note("A transport wins a criterion only when it is significantly better than the "
           "runner-up (Mann-Whitney test on the repetitions when kept, else non-overlapping "
           "95% intervals; the derived rates and latencies take the interval of the time they "
           "were computed from). CPU availability carries no interval, so its best value is "
           "shown without a winner.")
    s.add("table", _wins_table(runs))
    s.note("Overlap = 100*(t_comm+t_comp-t_total)/min(t_comm,t_comp); CPU availability = "
           "work rate during transfers / work rate without communication (COMB polling "
           "method), in percent. Efficiency: strong T1/(N*TN), weak T1/TN.")
    crs = [compare.Run(r.name, r.res) for r in runs]
    fsec = Section("figures", "Figures")
    for title, html in figures(runs, sink):
        fsec.h3(title)
        if html.startswith("<"):
            fsec.add("fig", Markup(html))
        else:
            fsec.note(html)
    sections = [s, fsec, compare.ratio_section(crs), compare.measurements_section(crs),
                compare.provenance_section(crs)]
    sub = (f"Generated by mpilab {__version__} from " + ", ".join(r.res.path for r in runs))
    return page("Interconnect comparison", sub, sections, sink,
                       [b for b in _banners(runs)])


def _banners(runs: list[Run]) -> list[str]:
    from mpilab.report.html import banners
    return banners([(r.name, r.res.raw) for r in runs])




def build(d: str | Path, static: bool = False) -> Path:
    runs = load_dir(d)
    out = Path(d) / "report.html"
    atomic_write_text(out, render(runs, static))
    return out
