"""mpilab.multilane/1 documents (written by mpilab-multilane, extended by `mpilab multilane
run` with the testbed spec and WAN samples): loading with one-line errors, and the numbers
the report and the bench script derive from them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpilab import schemacheck
from mpilab.errors import MpilabError
from mpilab.strict_json import PathT, located, read_json

SCHEMA = "mpilab.multilane/1"
SCHEMA_FILE = "multilane-1.schema.json"
MAX_DOC_BYTES = 256 << 20


@dataclass
class Run:
    op: str
    impl: str  # native | single | multilane
    lanes: int | None
    bytes: int
    times: list[float]
    wall_start: float
    wall_end: float
    predicted_paper: float | None = None
    predicted_sim: float | None = None
    # phase marks (s after the root's start): first / last lane's WAN start, first / last
    # lane's arrival across the WAN; measured (mean over the repetitions) and predicted
    phases: list[float | None] | None = None
    phases_sim: list[float | None] | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.times)


@dataclass
class Doc:
    path: str
    data: dict[str, Any]
    runs: list[Run] = field(default_factory=list)

    @property
    def model(self) -> dict[str, Any] | None:
        m = self.data.get("model")
        return m if isinstance(m, dict) else None

    @property
    def simulated(self) -> dict[str, Any] | None:
        """provenance.simulated of a simulated run (`multilane run --sim`), else None."""
        p = self.data.get("provenance")
        s = p.get("simulated") if isinstance(p, dict) else None
        return s if isinstance(s, dict) else None

    @property
    def testbed(self) -> dict[str, Any] | None:
        t = self.data.get("testbed")
        return t if isinstance(t, dict) else None


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load(path: str | Path) -> Doc:
    p = str(path)
    # a regular file only (a FIFO would block), RFC 8259 numbers (no NaN, Infinity, 1e400)
    data, text = read_json(p, "multilane document", MAX_DOC_BYTES)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else None
        raise MpilabError(f"{p}: not a {SCHEMA} document (schema "
                          f"{schemacheck.short(got)})")
    try:  # every key the report reads, against schemas/multilane-1.schema.json
        err = schemacheck.first_error(SCHEMA_FILE, data)
    except RecursionError:
        raise MpilabError(f"{p}: nested too deeply to validate") from None
    if err is None:
        err = next(_relations(data), None)
    if err is not None:
        raise located(p, text, *err)
    runs = data.get("runs")
    if not isinstance(runs, list):
        raise MpilabError(f"{p}: 'runs' must be a list")
    doc = Doc(p, data)
    for k, r in enumerate(runs):
        where = f"{p}: runs[{k}]"
        if not isinstance(r, dict):
            raise MpilabError(f"{where}: not an object")
        if r.get("op") not in ("scatter", "gather") or r.get("impl") not in (
                "native", "single", "multilane"):
            raise MpilabError(f"{where}: bad op/impl {r.get('op')!r}/{r.get('impl')!r}")
        ts = r.get("times")
        if not isinstance(ts, list) or not ts or not all(_num(t) for t in ts):
            raise MpilabError(f"{where}: 'times' must be a non-empty list of numbers")
        if any(t <= 0 for t in ts):
            raise MpilabError(f"{where}: non-positive time {min(ts)} s (impossible)")
        b = r.get("bytes")
        if not isinstance(b, int) or isinstance(b, bool) or b < 0:
            raise MpilabError(f"{where}: 'bytes' must be a non-negative integer")
        lanes = r.get("lanes")
        if lanes is not None and (not isinstance(lanes, int) or isinstance(lanes, bool)
                                  or lanes < 1):
            raise MpilabError(f"{where}: 'lanes' must be null or a positive integer")
        pp, ps = r.get("predicted_paper"), r.get("predicted_sim")
        for key in ("wall_start", "wall_end", "predicted_paper", "predicted_sim"):
            if r.get(key) is not None and not _num(r[key]):
                raise MpilabError(f"{where}: '{key}' must be null or a number")
        doc.runs.append(Run(r["op"], r["impl"], lanes, b, [float(t) for t in ts],
                            float(r.get("wall_start") or 0), float(r.get("wall_end") or 0),
                            float(pp) if _num(pp) else None, float(ps) if _num(ps) else None,
                            _phases(r, "phases", where), _phases(r, "phases_sim", where)))
    if data.get("testbed") is not None and not isinstance(data["testbed"], dict):
        raise MpilabError(f"{p}: 'testbed' must be null or an object")
    m = data.get("model")
    if m is not None:
        if not isinstance(m, dict):
            raise MpilabError(f"{p}: 'model' must be an object")
        for key in ("L", "l", "alpha", "b_lan"):
            if not _num(m.get(key)) or m[key] < 0:
                raise MpilabError(f"{p}: model.{key} must be a number >= 0")
        bs = m.get("b")
        if not isinstance(bs, list) or not bs or not all(_num(x) and x > 0 for x in bs):
            raise MpilabError(f"{p}: model.b must be a non-empty list of positive numbers")
    return doc


def _relations(d: dict[str, Any]) -> Iterator[tuple[PathT, str]]:
    """What the schema cannot say: the grid's rank count and site map agree, the root and
    every run's lanes exist on that grid, each WAN counter has one value per sample time,
    sample times do not go back."""
    grid = d.get("grid")
    if isinstance(grid, dict):
        n, sites = grid["nranks"], grid["site_of_rank"]
        if len(sites) != n:
            yield ("grid", "site_of_rank"), f"{len(sites)} sites for {n} ranks"
        if isinstance(grid.get("nsites"), int) and max(sites) >= grid["nsites"]:
            yield ("grid", "site_of_rank"), f"site {max(sites)} of {grid['nsites']} sites"
        if isinstance(d.get("root"), int) and d["root"] >= n:
            yield ("root",), f"rank {d['root']} does not exist on a grid of {n} ranks"
        sup = grid.get("P_sup")
        for k, r in enumerate(d["runs"]):
            lanes = r.get("lanes")
            if isinstance(lanes, int) and isinstance(sup, int) and lanes > sup:
                yield ("runs", k, "lanes"), f"{lanes} lanes on a grid of at most {sup} (P_sup)"
    elif isinstance(d.get("root"), int) and d["root"] > 0 and "grid" not in d:
        yield ("root",), "a root without a grid"
    ws = d.get("wan_samples")
    if isinstance(ws, dict):
        t = ws["t"]
        if any(b < a for a, b in zip(t, t[1:], strict=False)):
            yield ("wan_samples", "t"), "sample times go back"
        for iface, counts in ws["tx_bytes"].items():
            if len(counts) != len(t):
                yield ("wan_samples", "tx_bytes", iface), \
                    f"{len(counts)} counter values for {len(t)} sample times"
        for iface in ws.get("ifaces_into_site") or {}:
            if iface not in ws["tx_bytes"]:
                yield ("wan_samples", "ifaces_into_site", iface), "no counters for it"


def _phases(r: dict[str, Any], key: str, where: str) -> list[float | None] | None:
    v = r.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 4 or not all(x is None or _num(x) for x in v):
        raise MpilabError(f"{where}: '{key}' must be a list of 4 numbers or nulls")
    return [float(x) if x is not None else None for x in v]


def phase_split(r: Run) -> dict[str, tuple[float | None, float | None]] | None:
    """A multilane run's time split into the paper's three steps, measured and predicted
    (None where unknown): prepare = until the last lane's WAN start; WAN = from there to
    the last lane's arrival; LAN = from there to the end (the mean time, as the marks are
    means over the same repetitions; the schedule model's time for the prediction)."""
    if r.impl == "native" or not r.phases:
        return None

    def split(ph: list[float | None] | None, total: float | None
              ) -> tuple[float | None, float | None, float | None]:
        if not ph or total is None or ph[1] is None or ph[3] is None:
            return None, None, None
        return ph[1], ph[3] - ph[1], total - ph[3]

    m = split(r.phases, statistics.fmean(r.times))
    p = split(r.phases_sim, r.predicted_sim)
    return {"prepare": (m[0], p[0]), "wan": (m[1], p[1]), "lan": (m[2], p[2])}


def multilane_curve(doc: Doc, op: str, size: int) -> dict[int, Run]:
    """The multilane runs of one operation and size by P."""
    return {r.lanes: r for r in doc.runs
            if r.op == op and r.impl == "multilane" and r.bytes == size and r.lanes}


def model_size(doc: Doc, size: int) -> dict[str, Any] | None:
    m = doc.model
    if not m:
        return None
    for s in m.get("sizes", []):
        if isinstance(s, dict) and s.get("bytes") == size:
            return s
    return None


def p_choice(doc: Doc, op: str, size: int) -> dict[str, Any] | None:
    """For a size measured at several P: the best measured P, the paper model's and the
    schedule model's P_opt, and the measured time at each (median of the repetitions)."""
    curve = multilane_curve(doc, op, size)
    ms = model_size(doc, size)
    if len(curve) < 2 or not ms:
        return None
    best = min(curve, key=lambda P: curve[P].median)
    paper = ms.get("P_opt")
    sim = ms.get(f"P_opt_sim_{op}")
    out: dict[str, Any] = {"op": op, "bytes": size, "best_P": best,
                           "best_time": curve[best].median}
    for name, P in (("paper", paper), ("sim", sim)):
        out[f"{name}_P"] = P
        run = curve.get(P) if isinstance(P, int) else None
        out[f"{name}_time"] = run.median if run else None
        out[f"{name}_excess"] = run.median / curve[best].median - 1 if run else None
    return out


def wan_rates(doc: Doc, iface: str, t0: float, t1: float, window: float = 0.01
              ) -> list[tuple[float, float]]:
    """(time since t0, bit/s) of the sampled interface over windows of `window` seconds
    between wall times t0 and t1 (padded by 5 windows on either side)."""
    s = doc.data.get("wan_samples")
    if not isinstance(s, dict) or iface not in s.get("tx_bytes", {}):
        return []
    ts, cs = s["t"], s["tx_bytes"][iface]
    pts = [(t, c) for t, c in zip(ts, cs, strict=True) if t0 - 5 * window <= t <= t1 + 5 * window]
    out = []
    k = 0
    while k < len(pts) - 1:
        j = k + 1
        while j < len(pts) - 1 and pts[j][0] - pts[k][0] < window:
            j += 1
        dt = pts[j][0] - pts[k][0]
        if dt > 0:
            out.append((0.5 * (pts[j][0] + pts[k][0]) - t0, (pts[j][1] - pts[k][1]) * 8 / dt))
        k = j
    return out


def wan_phase_use(rates: list[tuple[float, float]], capacity: float) -> dict[str, float] | None:
    """The WAN phase: from the first to the last window above 10% of capacity. Its mean
    rate and the mean over windows as fractions of capacity, and its length."""
    busy = [k for k, (_, r) in enumerate(rates) if r > 0.1 * capacity]
    if not busy or capacity <= 0:
        return None
    a, b = busy[0], busy[-1]
    phase = rates[a:b + 1]
    mean = statistics.fmean(r for _, r in phase)
    return {"start": phase[0][0], "end": phase[-1][0], "mean_bps": mean,
            "mean_fraction": mean / capacity,
            "p90_fraction": sorted(r for _, r in phase)[int(0.9 * (len(phase) - 1))] / capacity}
