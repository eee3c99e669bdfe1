"""Several runs in one report: `mpilab report A.json B.json ...` and the shared part of
`mpilab compare`. Runs are overlaid in the figures (one curve per run) and every
measurement the runs have in common gets a ratio to the first run (the baseline) with the
significance rule of report.signif."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from mpilab import __version__, quality
from mpilab.errors import MpilabError
from mpilab.report import html, render, signif, summary, tables, values
from mpilab.report.figs import Figure
from mpilab.report.render import Card, FigureSink, Section
from mpilab.report.tables import Cell, Table
from mpilab.results_model import Measurement, Results

MAX_PAIR_FIGS = 3


@dataclass
class Run:
    label: str
    res: Results


def labels_for(paths: list[str], res: list[Results], given: list[str] | None,
               label_by: str | None) -> list[str]:
    """--label NAME per file (in order), else the provenance field `label_by` (default:
    transport), else the file name; duplicates get #2, #3."""
    if given:
        if len(given) != len(paths):
            raise MpilabError(f"--label given {len(given)} time(s) for {len(paths)} results "
                              "files (give one per file, in order)")
        out = list(given)
    else:
        out = []
        for p, r in zip(paths, res, strict=True):
            v = r.provenance.get(label_by or "transport")
            if v is None and label_by:
                raise MpilabError(f"{p}: --label-by {label_by}: provenance has no such field")
            out.append(str(v) if v is not None and str(v) else Path(p).stem)
    seen: dict[str, int] = defaultdict(int)
    final = []
    for lab in out:
        seen[lab] += 1
        final.append(lab if seen[lab] == 1 else f"{lab} #{seen[lab]}")
    return final


def _key(m: Measurement) -> tuple[object, ...]:
    return (m.op, m.impl, m.timing, m.isolation or "", m.pair or (), m.schedule or "",
            -1 if m.root is None else m.root, m.bytes, m.bytes_back if m.bytes_back is not None
            else m.bytes)


def ratio_table(runs: list[Run], table_id: str = "ratios") -> tuple[Table, dict[str, list[int]]]:
    """Every measurement of each later run matched with the baseline's (same op, impl,
    timing, isolation, pair/root, sizes): ratio of the medians and the verdict.
    Returns the table and per run [faster, slower, not significant, unmatched]."""
    base = runs[0]
    bidx = {_key(m): m for m in base.res.measurements}
    rows, rf = [], []
    counts: dict[str, list[int]] = {}
    for run in runs[1:]:
        c = [0, 0, 0, 0]
        for m in run.res.measurements:
            b = bidx.get(_key(m))
            if b is None:
                c[3] += 1
                continue
            eb, em = values.time_estimate(b), values.time_estimate(m)
            v = signif.compare(eb, em)
            fl = sorted(set(values.flags(b)) | set(values.flags(m)))
            if v.significant and v.ratio is not None:
                faster = v.ratio < 1
                c[0 if faster else 1] += 1
                verdict = Cell(f"{run.label} {'faster' if faster else 'slower'}", bold=True)
            else:
                c[2] += 1
                verdict = Cell(v.text)
            rows.append([Cell(run.label), Cell(m.op), Cell(m.impl), Cell(m.timing),
                         Cell(values.where(m)), Cell(values.size_label(m), sort=m.bytes, num=True),
                         tables.value(eb.value, "s", values.flags(b)),
                         tables.value(em.value, "s", values.flags(m)),
                         Cell("-" if v.ratio is None else f"{v.ratio:.3f}", sort=v.ratio,
                              num=True),
                         verdict, Cell(v.method + (f", p={v.p:.2g}" if v.p is not None else ""))])
            rf.append(fl)
        counts[run.label] = c
    t = Table(["run", "op", "impl", "timing", "pair/root", "size", f"{base.label} (baseline)",
               "this run", "ratio (run / baseline)", "verdict", "test"], rows, rf,
              caption=f"Median time of every common measurement against {base.label}",
              table_id=table_id)
    return t, counts


def ratio_section(runs: list[Run]) -> Section:
    sec = Section("ratios", "Run against baseline")
    if len(runs) < 2:
        return sec
    t, counts = ratio_table(runs)
    sec.note(f"Baseline: {runs[0].label}. A difference is significant when the Mann-Whitney "
             "test on the repetitions gives p < 0.05 (files that keep them), else when the "
             "medians' 95% intervals do not overlap; without intervals no verdict is given.")
    items = []
    for lab, (f, s, n, u) in counts.items():
        items.append(f"{lab}: {f} significantly faster, {s} significantly slower, {n} without "
                     f"a significant difference ({u} measurement(s) with no match in the "
                     "baseline)")
    sec.add("list", items)
    sec.add("table", t)
    return sec


def _summary(runs: list[Run]) -> Section:
    s = Section("summary", "Summary")
    s.add("legend", summary.flag_legend(*(run.res for run in runs)))  # beside the cards
    cards: list[Card] = []
    for run in runs:
        for c in summary.headline_cards(run.res, prefix=f"run:{run.label}:", label=run.label):
            cards.append(c)
        q = quality.summary(run.res.raw)
        if q["measurements"]:
            cards.append(Card(f"converged ({run.label})",
                              f"{q['converged']} of {q['measurements']}", q["converged"],
                              f"run:{run.label}:converged",
                              "PARTIAL file" if q["partial"] else "",
                              ["not_converged"] if q["converged"] < q["measurements"] else []))
    s.add("cards", cards)
    heads = []
    for run in runs:
        hs = summary.pair_headlines(run.res)
        heads.append({h.pair + (f" {h.schedule}" if h.schedule else ""): h for h in hs})
    common = [k for k in heads[0] if all(k in h for h in heads[1:])] if heads else []
    if common and len(runs) > 1:
        rows = []
        for k in common:
            for what, get, unit, low in (("latency", lambda h: h.latency, "s", True),
                                         ("bandwidth", lambda h: h.bandwidth, "B/s", False)):
                ests = [(run.label, get(h[k])) for run, h in zip(runs, heads, strict=True)]
                best, _, v = signif.winner(ests, lowest=low)
                cells = [Cell(k), Cell(what)]
                for _, e in ests:
                    cells.append(tables.value(e.value, unit))
                if v is None or not v.significant:
                    cells.append(Cell("no significant difference" if v else "-"))
                else:
                    cells.append(Cell(f"{best} ({v.ratio:.2f}x)" if v.ratio else str(best),
                                      bold=True))
                rows.append(cells)
        s.h3("Headline values per pair")
        s.add("table", Table(["pair", "value"] + [r.label for r in runs] + ["best (significant)"],
                             rows, caption="Latency (smallest size) and bandwidth (largest size)",
                             table_id="headline-compare"))
    return s


def provenance_section(runs: list[Run]) -> Section:
    """The runs' provenance side by side, folded, after the figures and tables."""
    s = Section("provenance", "Provenance")
    s.add("table", provenance_side_by_side(runs))
    return s


def provenance_side_by_side(runs: list[Run]) -> Table:
    cols = []
    for run in runs:
        t = summary.provenance_table(run.res)
        cols.append({row[0].text: row[1].text for row in t.rows})
    keys: list[str] = []
    for c in cols:
        keys += [k for k in c if k not in keys]
    rows = []
    for k in keys:
        vals = [c.get(k, "-") for c in cols]
        row = [Cell(k)] + [Cell(v) for v in vals]
        rows.append(row)
    return Table(["item"] + [r.label for r in runs], rows, caption="Provenance",
                 table_id="provenance-table", collapse=True)


def _overlays(runs: list[Run], sink: FigureSink) -> list[Section]:
    out = []
    # point-to-point: the first pairs all runs share
    pairs = None
    for run in runs:
        ps = {m.pair for m in run.res.p2p() if m.pair}
        pairs = ps if pairs is None else pairs & ps
    if pairs:
        sec = Section("p2p", "Point-to-point")
        sec.note("One-way time (half the median round trip) and bandwidth per run, for the "
                 f"first {MAX_PAIR_FIGS} pairs the runs have in common.")
        for pair in sorted(pairs)[:MAX_PAIR_FIGS]:
            lat, bw = [], []
            for run in runs:
                ms = [m for m in run.res.p2p() if m.pair == pair
                      and m.bytes_back in (None, m.bytes)]
                lat.append(html.curve(run.label, ms, values.oneway))
                bw.append(html.curve(run.label, ms, lambda m, r=run.res: values.bandwidth(r, m)))
            p = f"{pair[0]}-{pair[1]}"
            sec.add("fig", sink.html(Figure(sink.uid(f"cmp-p2p-{p}"), f"pair {p}: one-way time",
                                            lat, "message size", "one-way time", "B", "s")))
            sec.add("fig", sink.html(Figure(sink.uid(f"cmp-bw-{p}"), f"pair {p}: bandwidth",
                                            bw, "message size", "bandwidth", "B", "B/s")))
        out.append(sec)
    keys: dict[tuple[str, str], None] = {}
    for run in runs:
        for m in run.res.collectives():
            keys[(m.op, m.impl)] = None
    if keys:
        sec = Section("collectives", "Collective operations")
        sec.note("Median time per run, preferred timing method (max, else global, root, "
                 "opspec); error bars: the medians' 95% intervals.")
        for op, impl in sorted(keys):
            curves = []
            for run in runs:
                ms = [m for m in run.res.collectives() if m.op == op and m.impl == impl]
                if not ms:
                    continue
                t = summary._preferred_timing(ms)
                curves.append(html.curve(f"{run.label} ({t})", [m for m in ms if m.timing == t
                                                                 and m.root in (None, 0)],
                                         values.time_estimate))
            sec.add("fig", sink.html(Figure(sink.uid(f"cmp-{op}-{impl}"), f"{op}/{impl}",
                                            curves, "message size", "time", "B", "s")))
        out.append(sec)
    return out


def measurements_section(runs: list[Run]) -> Section:
    sec = Section("measurements", "All measurements")
    rows, rf = [], []
    head: list[str] = []
    for run in runs:
        t = html.measurement_table(run.res, run.label)
        head = t.head
        rows += t.rows
        rf += t.row_flags
    if rows:
        sec.add("table", Table(head, rows, rf, caption="All measurements of every run",
                               table_id="measurements"))
    return sec


def render_comparison(runs: list[Run], static: bool = False,
                      shared_runtime: bool = False) -> str:
    if not runs:
        raise MpilabError("no results to compare")
    sink = FigureSink(static, shared_runtime)
    sections = [_summary(runs), ratio_section(runs), *_overlays(runs, sink),
                measurements_section(runs), provenance_section(runs)]
    title = "mpilab comparison: " + ", ".join(r.label for r in runs)
    sub = (f"Generated by mpilab {__version__} from "
           + ", ".join(f"{r.label} = {r.res.path}" for r in runs)
           + f"; baseline {runs[0].label}.")
    return render.page(title, sub, sections, sink,
                       html.banners([(r.label, r.res.raw) for r in runs]))
