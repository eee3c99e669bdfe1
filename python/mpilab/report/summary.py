"""The summary at the top of a run report: headline latency and bandwidth per pair, the
fastest implementation per collective and size range (only where the difference is
significant), model parameters with their intervals, the run's health and provenance."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from mpilab import quality
from mpilab.report import scale, signif, tables, units, values
from mpilab.report.render import Card, Section
from mpilab.report.scale import Attachments
from mpilab.report.signif import Estimate
from mpilab.report.tables import Cell, Table
from mpilab.results_model import Measurement, Results

TIMING_PREFERENCE = ("max", "global", "root", "opspec")


@dataclass
class PairHeadline:
    pair: str
    schedule: str | None
    lat_bytes: int
    latency: Estimate
    lat_flags: list[str]
    bw_bytes: int
    bandwidth: Estimate
    bw_flags: list[str]


def pair_headlines(r: Results) -> list[PairHeadline]:
    """Per pair (and schedule): one-way time at the smallest size, bandwidth at the largest
    (symmetric round trips only)."""
    groups: dict[tuple[tuple[int, int], str | None], list[Measurement]] = defaultdict(list)
    for m in r.p2p():
        if m.pair and m.bytes_back in (None, m.bytes):
            groups[(m.pair, m.schedule)].append(m)
    out = []
    for (pair, sched), ms in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        ms.sort(key=lambda m: m.bytes)
        small, large = ms[0], ms[-1]
        out.append(PairHeadline(f"{pair[0]}-{pair[1]}", sched, small.bytes, values.oneway(small),
                                values.flags(small), large.bytes, values.bandwidth(r, large),
                                values.flags(large)))
    return out


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def headline_cards(r: Results, prefix: str = "", label: str = "",
                   hs: list[PairHeadline] | None = None) -> list[Card]:
    """Cards: latency and bandwidth (median over pairs), with the pairs' range as detail
    (hs: pair_headlines(r) if already computed)."""
    hs = pair_headlines(r) if hs is None else hs
    if not hs:
        return []
    scheds = sorted({h.schedule or "" for h in hs})
    hs = [h for h in hs if (h.schedule or "") == scheds[0]]
    lat = [h.latency.value for h in hs if h.latency.value is not None]
    bw = [h.bandwidth.value for h in hs if h.bandwidth.value is not None]
    cards = []
    what = f" ({label})" if label else ""
    for name, vals, fmt, desc, fl in (
            ("latency", lat, units.fmt_time, f"one-way, {units.fmt_bytes(hs[0].lat_bytes)}",
             {f for h in hs for f in h.lat_flags}),
            ("bandwidth", bw, units.fmt_rate, f"{units.fmt_bytes(hs[0].bw_bytes)} messages",
             {f for h in hs for f in h.bw_flags})):
        v = _median(vals)
        if v is not None:
            cards.append(Card(f"{name}{what}, {desc}", fmt(v), v, f"{prefix}{name}",
                              f"median of {len(vals)} pair(s); {fmt(min(vals))} .. "
                              f"{fmt(max(vals))}", sorted(fl)))
    return cards


def pair_table(r: Results, att: Attachments | None = None,
               hs: list[PairHeadline] | None = None) -> tuple[Table | None, str]:
    """The per-pair latency and bandwidth table, and (for more pairs than
    scale.TABLE_ROWS) the HTML sentence linking the CSV file that holds every pair: then
    the table keeps the pairs of highest latency and of lowest bandwidth."""
    hs = pair_headlines(r) if hs is None else hs
    if not hs:
        return None, ""
    note = ""
    total = len(hs)
    if len(hs) > scale.TABLE_ROWS:
        att = att if att is not None else Attachments(None)
        href = att.csv("pairs", ["i", "j", "schedule", "latency_bytes", "oneway_s",
                                 "oneway_lo_s", "oneway_hi_s", "bandwidth_bytes", "bandwidth_Bps",
                                 "bandwidth_lo_Bps", "bandwidth_hi_Bps", "flags"],
                       [[*h.pair.split("-"), h.schedule or "", h.lat_bytes, h.latency.value,
                         h.latency.lo, h.latency.hi, h.bw_bytes, h.bandwidth.value,
                         h.bandwidth.lo, h.bandwidth.hi, " ".join(sorted(set(h.lat_flags
                                                                           + h.bw_flags)))]
                        for h in hs])
        k = scale.OUTLIER_ROWS
        inf = float("inf")
        slow = sorted(hs, key=lambda h: -(h.latency.value if h.latency.value is not None
                                          else inf))[:k]
        low = sorted(hs, key=lambda h: h.bandwidth.value if h.bandwidth.value is not None
                     else -inf)[:k]
        keep = {id(h) for h in slow + low}
        hs = [h for h in hs if id(h) in keep]
        note = scale.link_note(href, total, "pairs",
                               f"the {k} of highest latency and the {k} of lowest bandwidth")
    rows, rf = [], []
    for h in hs:
        lat = tables.value(h.latency.value, "s", h.lat_flags)
        lat.metric = f"latency:{h.pair}"
        bw = tables.value(h.bandwidth.value, "B/s", h.bw_flags)
        bw.metric = f"bandwidth:{h.pair}"
        rows.append([Cell(h.pair), tables.text(h.schedule), tables.value(h.lat_bytes, "B"), lat,
                     tables.interval(h.latency.lo, h.latency.hi, "s"),
                     tables.value(h.bw_bytes, "B"), bw,
                     tables.interval(h.bandwidth.lo, h.bandwidth.hi, "B/s")])
        rf.append([])
    return Table(["pair", "schedule", "size", "one-way latency", "95% CI", "size", "bandwidth",
                  "95% CI"], rows, rf, caption="Latency and bandwidth per pair",
                 table_id="headline-pairs"), note


def _preferred_timing(ms: list[Measurement]) -> str:
    have = {m.timing for m in ms}
    for t in TIMING_PREFERENCE:
        if t in have:
            return t
    return sorted(have)[0]


def winners(r: Results) -> list[dict[str, Any]]:
    """Per collective op (preferred timing method, the most common isolation): consecutive
    sizes with the same significant fastest implementation form one size range; sizes
    where the fastest is not significantly faster than the runner-up form ranges of 'no
    significant difference'."""
    out = []
    by_op: dict[str, list[Measurement]] = defaultdict(list)
    for m in r.collectives():
        by_op[m.op].append(m)
    for op in sorted(by_op):
        ms = by_op[op]
        if len({m.impl for m in ms}) < 2:
            continue
        timing = _preferred_timing(ms)
        isos = [m.isolation for m in ms if m.timing == timing]
        iso = max(set(isos), key=isos.count)
        sel = [m for m in ms if m.timing == timing and m.isolation == iso and m.root in (None, 0)]
        by_size: dict[int, list[Measurement]] = defaultdict(list)
        for m in sel:
            by_size[m.bytes].append(m)
        ranges: list[dict[str, Any]] = []
        for size in sorted(by_size):
            best, second, v = signif.winner([(m.impl, values.time_estimate(m))
                                             for m in by_size[size]])
            if best is None or second is None or v is None:
                continue
            who = best if v.significant else None
            if ranges and ranges[-1]["winner"] == who and (who or ranges[-1]["method"] == v.method):
                ranges[-1]["hi"] = size
                ranges[-1]["ratios"].append(v.ratio)
            else:
                ranges.append({"op": op, "timing": timing, "lo": size, "hi": size,
                               "winner": who, "runner_up": second, "method": v.method,
                               "ratios": [v.ratio]})
        out += ranges
    return out


def winners_table(r: Results) -> Table | None:
    ws = winners(r)
    if not ws:
        return None
    rows = []
    for w in ws:
        rng = units.fmt_bytes(w["lo"]) + ("" if w["lo"] == w["hi"]
                                           else f" .. {units.fmt_bytes(w['hi'])}")
        ratios = [x for x in w["ratios"] if x is not None]
        if w["winner"]:
            who = Cell(w["winner"], bold=True)
            adv = (f"{min(ratios):.2f}x .. {max(ratios):.2f}x" if ratios else "-")
        elif w["method"] == "no-ci":
            who = Cell("unknown: no interval (too few repetitions)", flags=["no_ci"])
            adv = "-"
        else:
            who = Cell("no significant difference")
            adv = "-"
        rows.append([Cell(w["op"]), Cell(w["timing"]), Cell(rng, sort=w["lo"], num=True), who,
                     Cell(adv), Cell(w["method"])])
    return Table(["collective", "timing", "sizes", "fastest implementation",
                  "runner-up time / fastest", "test"], rows,
                 caption="Fastest implementation per collective and size range",
                 table_id="winners")


def _pcell(v: float | None, unit: str, q: Any, name: str, flags: list[str] = ()) -> list[Cell]:
    fl = list(flags) + quality.value_flags(v, q, name)
    c = tables.param(v, unit, fl)
    lo = hi = None
    if isinstance(q, dict) and isinstance(q.get(name), dict):
        lo, hi = values.num(q[name].get("lo")), values.num(q[name].get("hi"))
    return [c, tables.interval(lo, hi, unit)]


def _rate_ci(q: Any, name: str) -> dict[str, Any]:
    """The interval of 1/beta (a rate) from beta's: the ends swap."""
    if not isinstance(q, dict) or not isinstance(q.get(name), dict):
        return {}
    lo, hi = values.num(q[name].get("lo")), values.num(q[name].get("hi"))
    out: dict[str, Any] = {"flags": q[name].get("flags")}
    if lo is not None and hi is not None and lo > 0 and hi > 0:
        out.update(lo=1 / hi, hi=1 / lo)
    return out


def model_tables(r: Results) -> list[Table]:
    if max(len(r.hockney), len(r.loggp)) > scale.TABLE_ROWS:
        return _model_distributions(r)
    out = []
    raw = (r.raw.get("models") or {}) if isinstance(r.raw.get("models"), dict) else {}
    hraw = ((raw.get("hockney") or {}).get("pairs") or []) if isinstance(raw, dict) else []
    if r.hockney:
        rows = []
        for k, p in enumerate(r.hockney):
            rp = hraw[k] if k < len(hraw) and isinstance(hraw[k], dict) else {}
            q = rp.get("quality")
            rate = 1 / p.beta if p.beta > 0 else None
            rows.append([Cell(f"{p.i}-{p.j}"), *_pcell(p.alpha, "s", q, "alpha"),
                         *_pcell(rate, "B/s", {"rate": _rate_ci(q, "beta")}, "rate",
                                 ["clamped"] if p.beta <= 0 else [])])
        out.append(Table(["pair", "Hockney alpha (latency)", "95% CI",
                          "1/beta (sustained rate)", "95% CI"], rows,
                         caption="Hockney model per pair", table_id="summary-hockney"))
    lgm = (raw.get("loggp") or {}) if isinstance(raw, dict) else {}
    lraw = lgm.get("pairs") or []
    shared = [str(x) for x in lgm.get("flags") or []]  # parallel_contention: every pair's
    if r.loggp:
        rows, rf = [], []
        for k, lp in enumerate(r.loggp):
            rp = lraw[k] if k < len(lraw) and isinstance(lraw[k], dict) else {}
            q = rp.get("quality")
            if lp.params is None:
                rows.append([Cell(f"{lp.i}->{lp.j}")] + [Cell("-")] * 5
                            + [tables.flags_cell(["fit_failed"])])
                rf.append(["fit_failed"])
                continue
            pp = lp.params
            pf = list(pp.flags) + shared
            cells = [Cell(f"{lp.i}->{lp.j}")]
            for name, v in (("L", pp.L), ("os", pp.os), ("or", pp.orr), ("g", pp.g)):
                c = tables.param(v, "s", [f for f in pf if f.startswith(name + "_")]
                                 + quality.value_flags(v, q, name))
                cells.append(c)
            g_rate = 1 / pp.G if pp.G > 0 else None
            cells.append(tables.param(g_rate, "B/s", [f for f in pf if f.startswith("G_")]
                                      + quality.value_flags(pp.G, q, "G")
                                      + (["clamped"] if pp.G <= 0 else [])))
            cells.append(tables.flags_cell(pf))
            rows.append(cells)
            rf.append([])
        out.append(Table(["pair", "L", "o_s", "o_r", "g", "1/G", "flags"], rows, rf,
                         caption="LogGP model per pair (intervals and per-range values in the "
                                 "Models section)", table_id="summary-loggp"))
    return out


def _model_distributions(r: Results) -> list[Table]:
    """Model parameters over many pairs: one row per parameter (min, percentiles, max)."""
    rows: list[list[Cell]] = []
    params: list[tuple[str, str, list[float]]] = []
    if r.hockney:
        params += [("Hockney alpha (latency)", "s", [p.alpha for p in r.hockney]),
                   ("Hockney 1/beta (sustained rate)", "B/s",
                    [1 / p.beta for p in r.hockney if p.beta > 0])]
    ok = [lp.params for lp in r.loggp if lp.params is not None]
    if ok:
        params += [("LogGP L", "s", [p.L for p in ok]), ("LogGP o_s", "s", [p.os for p in ok]),
                   ("LogGP o_r", "s", [p.orr for p in ok]), ("LogGP g", "s", [p.g for p in ok]),
                   ("LogGP 1/G", "B/s", [1 / p.G for p in ok if p.G > 0])]
    for name, unit, v in params:
        # a negative fit counts as its clamp 0 (flagged): never a negative percentile
        neg = sum(1 for x in v if x < 0)
        q = scale.quartiles([max(x, 0.0) for x in v])
        if q is not None:
            fl = [f"clamped ({neg} of {int(q['n'])} pairs fitted below 0)"] if neg else []
            rows.append([Cell(name, flags=fl), tables.count(q["n"])] + [
                tables.value(q[k], unit, fl if q[k] == 0 and neg else [])
                for k in ("min", "p5", "median", "p95", "max")])
    return [Table(["parameter", "pairs", "min", "5th pct", "median", "95th pct", "max"], rows,
                  caption="Model parameters over the pairs (per pair: the Models section and "
                          "its CSV files)", table_id="summary-models", collapse=False)]


FLAG_MEANINGS = (
    (quality.NOT_CONVERGED, "stopped at the repetition limit without the asked precision"),
    (quality.INVALID_SAMPLES, "some repetitions excluded"),
    (quality.NEGATIVE_TIME, "corrected times <= 0 excluded"),
    (quality.NO_VALID, "no valid repetition: no figure"),
    (quality.CLOCK_UNCERTAIN, "global timing on a clock sync less precise than asked"),
    (quality.LAUNCHES_DISAGREE, "some launch's own interval missed the figure"),
    (quality.ISOLATION_DIFFERS, "isolated and back-to-back intervals apart"),
    (quality.GLOBAL_DIFFERS, "max or root timing outside global timing's interval: it missed "
                             "a latency between ranks (docs/bench.md, \"Which timing to "
                             "trust\")"),
    (quality.PARALLEL_CONTENTION, "all pairs asked in parallel: checked pairs were slower "
                                  "in parallel than alone (contention), every pair measured "
                                  "again one at a time (docs/pairs.md, \"Contention check\")"),
    (quality.CLAMPED, "a model parameter fitted below 0 (impossible), shown as its clamp 0"),
    (quality.CI_EDGE, "a model parameter at an end of its own interval (the interval was "
                      "stretched to hold it: not a range a repeat would land in)"),
    (quality.NO_CI, "no interval could be computed"),
    (quality.REGIME_NOT_REACHED, "Hockney beta from sizes still below the curve's top regime "
                                 "(the model-size extension stopped at a limit first)"),
    (quality.CI_WIDE, "interval wider than the asked precision"),
    (quality.RETRANS_WIDENED, "beta or G: TCP sent segments again during the run, so the "
                              "interval's fast end was moved down (docs/models.md, "
                              "\"Retransmissions\")"),
    ("negative", "a time, rate or size below zero (impossible): shown as "
                 f"\"{units.IMPOSSIBLE}\", never as a value"),
    (units.FLAG_UNDETERMINED, f"interval wider than a decade (hi/lo > {units.DECADE:g}) or "
                              f"reaching 0 for a time or a rate: shown as "
                              f"\"{units.UNDETERMINED}\""),
)


def flag_legend(*runs: Results,
                summaries: list[dict[str, Any]] | None = None) -> list[tuple[str, str, int]]:
    """(flag, meaning, how many measurements or parameters carry it, over the runs) for the
    legend beside the summary: the flags seen first, then the others. `summaries`: the runs'
    quality.summary, when the caller has them already."""
    counts: dict[str, int] = {}
    for k, r in enumerate(runs):
        s = summaries[k] if summaries is not None else quality.summary(r.raw)
        for f, n in s["flags"].items():
            counts[f] = counts.get(f, 0) + n
        for p in s["params"]:
            for f in p.rpartition(": ")[2].split(","):
                counts[f] = counts.get(f, 0) + 1
    rows = [(f, why, counts.get(f, 0)) for f, why in FLAG_MEANINGS]
    return sorted(rows, key=lambda x: x[2] == 0)


def grouped_params(params: list[str]) -> list[str]:
    """Flagged model parameters grouped by model, parameter and flags, with a count and a
    few of the pairs or ranges (one line instead of one per pair and range)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for p in params:  # "MODEL WHERE... NAME: FLAGS" or "MODEL WHERE...: FLAGS"
        head, _, flags = p.rpartition(": ")
        words = head.split()
        model = words[0] if words else head
        name = words[-1] if len(words) > 2 else ""
        where = " ".join(words[1:-1] if name else words[1:])
        groups.setdefault((f"{model} {name}".strip(), flags), []).append(where)
    out = []
    for (what, flags), wheres in groups.items():
        eg = ", ".join(w for w in wheres[:3] if w)
        more = f", ... ({len(wheres) - 3} more)" if len(wheres) > 3 else ""
        out.append(f"{len(wheres)} x model parameter {what} flagged {flags}"
                   + (f" (at {eg}{more})" if eg else ""))
    return out


def idle_note(prov: dict[str, Any]) -> str | None:
    """A line when ranks slept or yielded on a machine whose idle CPUs may halt: each wake-up
    then waits for the CPU (a vCPU: the host) to resume it, a cost spinning ranks never pay
    (provenance.cpu_idle, written by mpilab-bench; mpilab/cpuidle.h)."""
    ci = prov.get("cpu_idle")
    if not isinstance(ci, dict) or ci.get("may_halt") is not True:
        return None
    mca = prov.get("mca") if isinstance(prov.get("mca"), dict) else {}
    opts = prov.get("options") if isinstance(prov.get("options"), dict) else {}
    lw = opts.get("lmo_wait") if isinstance(opts.get("lmo_wait"), dict) else {}
    why = [w for w, on in (("Open MPI's ranks yield when idle (mpi_yield_when_idle 1)",
                            str(mca.get("mpi_yield_when_idle")) == "1"),
                           ("the lmo experiments' ranks sleep between tests (--lmo-wait sleep)",
                            lw.get("mode") == "sleep")) if on]
    if not why:
        return None
    state, driver = ci.get("deepest_state") or "?", ci.get("driver") or "none"
    return (f"{' and '.join(why)}, and idle CPUs may halt here (cpuidle {driver}, "
            f"deepest state '{state}', no CPU latency limit held): a rank woken from a halted "
            "CPU waits for it to resume, which can be hundreds of us in a virtual machine; "
            "mpilab-bench --idle-poll keeps idle CPUs polling [cpu_idle]")


def health(r: Results, s: dict[str, Any] | None = None) -> tuple[list[Card], list[str]]:
    """The run-health cards and lines; `s`: quality.summary(r.raw) if the caller has it."""
    s = quality.summary(r.raw) if s is None else s
    n, conv = s["measurements"], s["converged"]
    cards = []
    items = []
    if n:
        cards.append(Card("measurements converged", f"{conv} of {n}", conv, "converged",
                          f"{100 * conv / n:.0f} % reached the asked precision",
                          ["not_converged"] if conv < n else []))
    cs = r.clock_sync
    if cs is not None:
        res = cs.max_residual_s
        # the run's rank count (the per-rank list leaves out the reference rank 0)
        nr = r.provenance.get("ranks")
        nr = nr if isinstance(nr, int) else len(cs.ranks) + 1
        cards.append(Card("clock sync max residual", units.fmt_time(res), res, "clock_residual",
                          f"method {cs.label}, {nr} ranks"))
    else:
        items.append("no clock synchronisation (no measurement used global timing)")
    fl = s["flags"]
    for key, what in ((quality.NOT_CONVERGED, "stopped at the repetition limit without the "
                       "asked precision"),
                      (quality.INVALID_SAMPLES, "had invalid (excluded) repetitions"),
                      (quality.NEGATIVE_TIME, "had negative corrected times (excluded)"),
                      (quality.NO_VALID, "had no valid repetition at all"),
                      (quality.CLOCK_UNCERTAIN, "were converted with a clock synchronisation less "
                       "precise than the asked precision (global timing): do not trust them"),
                      (quality.LAUNCHES_DISAGREE, "had some launch whose own interval missed "
                       "the figure (merged launches: one launch alone would have misreported "
                       "it)")):
        if fl.get(key):
            items.append(f"{fl[key]} measurement(s) {what} [{key}]")
    note = idle_note(r.provenance)
    if note:
        items.append(note)
    verdict = quality.noisy_verdict(r.raw, s) or quality.quick_note(r.raw, s)
    if verdict:
        items.append(verdict)
    items += grouped_params(s["params"])
    bad = quality.unflagged_problems(r.raw)
    if bad:
        items.append("impossible values without a flag in the file (a bug of its writer): "
                     + "; ".join(bad[:5]))
    return cards, items


def _flatten(prefix: str, v: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(v, dict):
        if not v:
            out.append((prefix, "(none)"))
        for k in sorted(v):
            _flatten(f"{prefix}.{k}" if prefix else str(k), v[k], out)
    elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        for k, x in enumerate(v):
            _flatten(f"{prefix}[{k}]", x, out)
    elif isinstance(v, list):
        sep = " " if prefix.endswith("args") else ", "  # a command line stays one
        out.append((prefix, sep.join(map(str, v)) or "(none)"))
    else:
        out.append((prefix, "-" if v is None else str(v)))


def provenance_table(r: Results) -> Table:
    """Every provenance item as a row (nested objects as dotted names), times in units."""
    p = r.provenance
    rows: list[tuple[str, str]] = []
    first = ("tool", "version", "mpi", "mpi_standard", "date", "command", "ranks", "transport",
             "hosts")
    for key in first:
        if p.get(key) is not None:
            _flatten(key, p[key], rows)
    mp = p.get("mapping")
    if isinstance(mp, list) and mp:
        parts = []
        for e in mp:
            if isinstance(e, dict):
                s = f"{e.get('rank', '?')}: {e.get('host', '?')}"
                if e.get("pu") is not None:
                    s += f" pu {e['pu']}"
                if e.get("cpus") is not None:
                    s += f" cpus {e['cpus']}" + (" bound" if e.get("bound") else " unbound")
                parts.append(s)
        rows.append(("mapping (rank: host, PU, allowed CPUs)", "; ".join(parts)))
    for key in sorted(p):
        if key in first or key in ("mapping", "clock_sync"):
            continue
        _flatten(key, p[key], rows)
    cs = r.clock_sync
    if cs is not None:
        rows.append(("clock sync",
                     f"{cs.label}, max residual {units.fmt_time(cs.max_residual_s)}"))
    if len(r.sources) > 1:
        rows.append(("merged from", ", ".join(r.sources)))
    return Table(["item", "value"], [[Cell(k), Cell(v)] for k, v in rows],
                 caption="Provenance", table_id="provenance-table", collapse=False)


def section(r: Results, att: Attachments | None = None,
            extra_health: list[str] | None = None) -> Section:
    s = Section("summary", "Summary")
    hs = pair_headlines(r)
    cards = headline_cards(r, hs=hs)
    # quality.summary walks every measurement and model parameter (2.8 million parameter
    # flags at 10^5 measurements): once for the health lines and the legend
    qs = quality.summary(r.raw)
    hc, items = health(r, qs)
    items = (extra_health or []) + items
    s.add("legend", flag_legend(r, summaries=[qs]))  # floats beside the cards and the first table
    s.add("cards", cards + hc)
    t, note = pair_table(r, att, hs)
    if t:
        if note:
            s.note_html(note)
        s.add("table", t)
    w = winners_table(r)
    if w:
        s.h3("Fastest implementation")
        s.note("Per collective, with the preferred timing method; a size range names a winner "
               "only where the fastest implementation is significantly faster than the "
               "runner-up at every size in it (Mann-Whitney test on the repetitions when the "
               "file keeps them, else non-overlapping 95% intervals of the medians).")
        s.add("table", w)
    mts = model_tables(r)
    if mts:
        s.h3("Fitted models")
        for mt in mts:
            s.add("table", mt)
    s.h3("Run health")
    s.add("list", items or ["nothing flagged"])
    return s


def provenance_section(r: Results) -> Section:
    """The provenance, folded (a details element), after the figures and tables."""
    s = Section("provenance", "Provenance")
    t = provenance_table(r)
    t.collapse = True
    s.add("table", t)
    return s
