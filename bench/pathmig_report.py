#!/usr/bin/env python3
"""The report page of the path migration benches: markdown tables from the JSON files of
pathmig_pause.py, pathmig_conns.py, pathmig_faults.py and pathmig_apps.py (any subset),
and with --plots DIR the figures (PNG, exported by plotly: kaleido) for docs/pathmig-measured.md.

    python3 bench/pathmig_report.py --pause P.json --conns C.json --faults F.json \
        --apps A.json [--apps B.json] [--plots docs/img] > report.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import harness  # noqa: F401  (python/ on the import path)
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_bytes
from mpilab.report.iplot import spec_image

# configurations of pathmig_pause.py, in the order shown
LABELS = {"tcp-bbr": "TCP (BBR)", "tcp": "TCP (cubic)", "raw1-bbr": "MPTCP 1 subflow (BBR)",
          "raw1": "MPTCP 1 subflow (cubic)", "raw": "MPTCP 2 active (cubic)",
          "agent-bbr": "MPTCP + agent (BBR)", "agent": "MPTCP + agent (cubic)"}


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.1f}"


def size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1024 else f"{n} B"


def nofault_medians(runs: list[dict[str, Any]]) -> dict[tuple[int, str], float]:
    """(bytes, config) -> median of the runs' median round trips, no-fault runs only."""
    out: dict[tuple[int, str], float] = {}
    for key in {(r["bytes"], r["config"]) for r in runs if r["fault"] is None}:
        m = [r["median_rtt"] for r in runs if (r["bytes"], r["config"]) == key
             and r["fault"] is None and r["median_rtt"] and r["rc"] == 0]
        if m:
            out[key] = statistics.median(m)
    return out


def pause_tables(doc: dict[str, Any]) -> str:
    runs = doc["runs"]
    out = []
    faulted = [r for r in runs if r["fault"]]
    if faulted:
        out += ["| message | fault | config | pause per run (ms) | median | max | runs ok |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for nbytes in sorted({r["bytes"] for r in faulted}):
            for mode in ("down", "drop"):
                for cfg in sorted({r["config"] for r in faulted}):
                    sel = [r for r in faulted if r["bytes"] == nbytes and r["fault"] == mode
                           and r["config"] == cfg]
                    if not sel:
                        continue
                    ps = [r["pause"] for r in sel if "pause" in r]
                    ok = sum(1 for r in sel if r["verified"] and r["rc"] == 0)
                    what = "link down" if mode == "down" else "silent drop"
                    each = ", ".join(ms(p) for p in ps)
                    out.append(f"| {size(nbytes)} | {what} | {cfg} | {each} | "
                               f"{ms(statistics.median(ps)) if ps else '-'} | "
                               f"{ms(max(ps)) if ps else '-'} | {ok}/{len(sel)} |")
    med = nofault_medians(runs)
    if med:
        cfgs = [c for c in LABELS if any(k[1] == c for k in med)]
        reps = max((r["rep"] for r in runs if r["fault"] is None), default=0) + 1
        out += ["", f"Median round trip, no fault (median of {reps} interleaved runs' "
                "medians); last columns: MPTCP + agent (cubic) against each TCP:", "",
                "| message | " + " | ".join(LABELS[c] for c in cfgs)
                + " | agent vs TCP (cubic) | agent vs TCP (BBR) |",
                "| --- | " + " | ".join("---" for _ in cfgs) + " | --- | --- |"]
        for nbytes in sorted({k[0] for k in med}):
            cells = [f"{med[(nbytes, c)] * 1e3:.3f} ms" if (nbytes, c) in med else "-"
                     for c in cfgs]
            rel = []
            for base in ("tcp", "tcp-bbr"):
                a, b = med.get((nbytes, "agent")), med.get((nbytes, base))
                rel.append(f"{(a / b - 1) * 100:+.1f}%" if a and b else "-")
            out.append(f"| {size(nbytes)} | " + " | ".join(cells + rel) + " |")
    return "\n".join(out)


def conns_table(doc: dict[str, Any]) -> str:
    out = ["| connections | MIGRATED->ARMED (arm all) | ARMED->MIGRATED local / at the peer "
           "| pause during arm | during migrate | on a link-down fault | agent work on the "
           "fault, client / server | migrated by the fault | median RTT | bytes verified |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["runs"]:
        out.append(f"| {r['connections']} | {ms(r['migrated_to_armed_s'])} ms | "
                   f"{ms(r['armed_to_migrated_local_s'])} / {ms(r['armed_to_migrated_peer_s'])}"
                   f" ms | {ms(r['pause_arm'])} ms | {ms(r['pause_migrate'])} ms | "
                   f"{ms(r['pause_fault'])} ms | {ms(r.get('fault_client_work_s'))} / "
                   f"{ms(r.get('fault_server_work_s'))} ms | {r['fault_migrated']} | "
                   f"{ms(r['median_rtt'])} ms | {'yes' if r['verified'] else 'NO'} |")
    return "\n".join(out)


def faults_text(doc: dict[str, Any]) -> str:
    s = doc["summary"]
    runs = doc["runs"]
    worst = max((r["max_rtt"] or 0) for r in runs)
    return (f"{s['runs']} runs, {s['faults']} faults applied, {s['correct']} runs finished "
            f"with every byte verified, {s['hung']} hung; "
            f"{sum(r['migrations'] for r in runs)} ARMED->MIGRATED transitions, "
            f"{sum(r['failed_actions'] for r in runs)} failed agent actions; longest round "
            f"trip of any run {worst * 1e3:.0f} ms.")


def apps_table(doc: dict[str, Any]) -> str:
    rounds = doc.get("rounds", doc.get("reps"))  # "reps": the older layout
    out = [f"{doc['app']}, {doc['np']} ranks, {rounds} runs per configuration "
           f"(seed {doc['seed']}):", "",
           "| configuration | time | runs | median (s) | mean (s) | stdev (s) | min (s) | "
           "median vs TCP | mean vs TCP |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for key, s in doc["summary"].items():
        cfg, _, what = key.rpartition(" ")
        if not cfg:  # results of the older layout: configuration only, wall time
            cfg, what = key, "wall_s"
        rel = [s.get(k) for k in ("slowdown_median", "slowdown_mean")]
        out.append(f"| {cfg} | {'application' if what == 'app_s' else 'whole run'} | "
                   f"{s['runs']} | {s['median']:.2f} | {s['mean']:.2f} | {s['stdev']:.2f} | "
                   f"{s['min']:.2f} | "
                   + " | ".join('-' if x is None else f'{x * 100:+.1f}%' for x in rel) + " |")
    pairs = {k: v for k, v in doc.get("paired_vs_tcp", {}).items()
             if v and "median" in v and "window" not in k}
    if pairs:
        out += ["", "Paired by round (each configuration's time over its partner's in the "
                "same round; 95% interval of the median from order statistics):", "",
                "| comparison | time | rounds | median | 95% interval | mean | range |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for key, v in pairs.items():
            what, _, tkey = key.rpartition(" ")
            if " vs " not in what:
                what += " vs tcp"
            ci = v.get("median_ci95")
            out.append(f"| {what} | {'application' if tkey == 'app_s' else 'whole run'} | "
                       f"{v['rounds']} | {v['median'] * 100:+.1f}% | "
                       + (f"{ci[0] * 100:+.1f}% to {ci[1] * 100:+.1f}%" if ci else "-")
                       + f" | {v['mean'] * 100:+.1f}% | {v['min'] * 100:+.1f}% to "
                       f"{v['max'] * 100:+.1f}% |")
    missed = sum(1 for r in doc["runs"] if r["fault"].get("missed"))
    out.append("")
    out.append(f"Incorrect or failed runs: {doc['incorrect_or_failed']}; faults that came "
               f"after the job ended (not counted as faulted): {missed}.")
    return "\n".join(out)


# ---- figures ----

def _save(fig: Any, path: Path, width: int) -> None:
    """A plotly figure as a png (plotly's export, kaleido), written whole or not at all."""
    atomic_write_bytes(path, spec_image(fig.to_plotly_json(), "png", width, 380))


def _med_ms(xs: list[float | None]) -> float:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) * 1e3 if vals else float("nan")


def plots(outdir: Path, pause: dict[str, Any] | None, conns: dict[str, Any] | None,
          apps: list[dict[str, Any]]) -> list[Path]:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    outdir.mkdir(parents=True, exist_ok=True)
    made = []
    if pause:
        med = nofault_medians(pause["runs"])
        sizes = sorted({k[0] for k in med})
        if sizes:
            cfgs = [c for c in LABELS if any(k[1] == c for k in med)]
            fig = make_subplots(rows=1, cols=len(sizes), subplot_titles=[
                f"{size(nbytes)} ping-pong, no fault" for nbytes in sizes])
            for i, nbytes in enumerate(sizes, start=1):
                fig.add_trace(go.Bar(
                    x=[LABELS[c] for c in cfgs],
                    y=[med.get((nbytes, c), float("nan")) * 1e3 for c in cfgs],
                    marker_color=["#888" if c.startswith("tcp") else "#c44" if c.endswith("bbr")
                                  else "#48c" for c in cfgs], showlegend=False), 1, i)
                fig.update_yaxes(title_text="median round trip (ms)", row=1, col=i)
                fig.update_xaxes(tickangle=-60, tickfont_size=9, row=1, col=i)
            p = outdir / "pathmig-overhead.png"
            _save(fig, p, 400 * len(sizes))
            made.append(p)
    if conns and conns.get("runs"):
        byn: dict[int, list[dict[str, Any]]] = {}
        for r in conns["runs"]:
            byn.setdefault(r["connections"], []).append(r)
        ns = sorted(byn)
        fig = make_subplots(rows=1, cols=2, subplot_titles=["transition time (Fig. 5-6)",
                                                            "pause (Fig. 7-8)"])
        for key, label in (("migrated_to_armed_s", "MIGRATED->ARMED (arm all)"),
                           ("armed_to_migrated_local_s", "ARMED->MIGRATED (migrate all)"),
                           ("armed_to_migrated_peer_s", "ARMED->MIGRATED at the peer")):
            fig.add_trace(go.Scatter(x=ns, y=[_med_ms([x[key] for x in byn[n]]) for n in ns],
                                     mode="lines+markers", name=label), 1, 1)
        for key, label in (("pause_arm", "during arm"), ("pause_migrate", "during migrate"),
                           ("pause_fault", "link-down fault")):
            fig.add_trace(go.Scatter(x=ns, y=[_med_ms([x[key] for x in byn[n]]) for n in ns],
                                     mode="lines+markers", name=label), 1, 2)
        fig.add_trace(go.Scatter(x=[ns[0], ns[-1]], y=[50, 50], mode="lines",
                                 line={"color": "black", "dash": "dash", "width": 1},
                                 name="target (fault)"), 1, 2)
        fig.update_xaxes(type="log", title_text="connections")
        fig.update_yaxes(title_text="ms")
        p = outdir / "pathmig-conns.png"
        _save(fig, p, 900)
        made.append(p)
        fig = go.Figure()
        for n in ns:
            ser = byn[n][0].get("series", {}).get("fault") or []
            if ser:
                fig.add_trace(go.Scatter(x=[t * 1e3 for _, t, _ in ser],
                                         y=[rtt * 1e3 for _, _, rtt in ser], mode="lines",
                                         line={"shape": "vh", "width": 1},
                                         name=f"{n} connections"))
        fig.update_layout(title_text="ping-pong round trips around a link-down fault",
                          xaxis={"range": [-100, 600],
                                 "title_text": "time since the fault was injected (ms)"},
                          yaxis_title_text="round trip ending then (ms)")
        p = outdir / "pathmig-fault-series.png"
        _save(fig, p, 700)
        made.append(p)
    for doc in apps:
        key = "app_s" if any(r.get("app_s") for r in doc["runs"]) else "wall_s"
        cfgs = [c for c in ("tcp", "agent", "agent+fault")
                if any(r["config"] == c for r in doc["runs"])]
        data = [[r[key] for r in doc["runs"] if r["config"] == c and r["correct"] and r[key]]
                for c in cfgs]
        fig = make_subplots(rows=1, cols=2, subplot_titles=[
            f"{doc['app']}, {doc['np']} ranks", "paired by round (dashed: medians)"])
        for c, d in zip(cfgs, data, strict=True):
            fig.add_trace(go.Box(y=d, name=f"{c} ({len(d)} runs)", showlegend=False), 1, 1)
        fig.update_yaxes(title_text=("application" if key == "app_s" else "whole run")
                         + " time (s)", row=1, col=1)
        # paired by round: the machine drifts, so what counts is the ratio within a round
        by: dict[int, dict[str, float]] = {}
        for r in doc["runs"]:
            if r["correct"] and r.get(key):
                by.setdefault(int(r["rep"]), {})[r["config"]] = float(r[key])
        for (cfg, base, mark), colour in zip((("agent", "tcp", "circle"),
                                              ("agent+fault", "agent", "x")),
                                             ("#1f77b4", "#ff7f0e"), strict=True):
            pts = sorted((rep, (v[cfg] / v[base] - 1) * 100) for rep, v in by.items()
                         if cfg in v and base in v)
            if pts:
                fig.add_trace(go.Scatter(x=[x for x, _ in pts], y=[y for _, y in pts],
                                         mode="markers", marker={"symbol": mark,
                                                                 "color": colour},
                                         name=f"{cfg} / {base}"), 1, 2)
                fig.add_hline(statistics.median(y for _, y in pts), row=1, col=2,
                              line={"dash": "dash", "width": 1, "color": colour})
        fig.add_hline(2.0, row=1, col=2, line={"color": "#c44", "width": 1},
                      annotation_text="fault target +2%")
        fig.add_hline(0.0, row=1, col=2, line={"color": "#888", "width": 0.5})
        fig.update_xaxes(title_text="round", row=1, col=2)
        fig.update_yaxes(title_text="paired difference (%)", row=1, col=2)
        p = outdir / f"pathmig-apps-{doc['app']}.png"
        _save(fig, p, 1000)
        made.append(p)
    return made


def fail(msg: str) -> None:
    print(f"pathmig_report: {msg}", file=sys.stderr)
    raise SystemExit(2)


def load(path: str) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}:{e.lineno}: not JSON ({e.msg})")
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        fail(f"{path}: not a pathmig bench result (no 'runs' list)")
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pause")
    ap.add_argument("--conns")
    ap.add_argument("--faults")
    ap.add_argument("--apps", action="append", default=[])
    ap.add_argument("--plots", metavar="DIR", help="write the figures (PNG) here")
    a = ap.parse_args()
    docs = {k: load(v) for k, v in (("pause", a.pause), ("conns", a.conns),
                                    ("faults", a.faults)) if v}
    apps = [load(p) for p in a.apps]
    parts = []
    try:
        for key, fn in (("pause", pause_tables), ("conns", conns_table),
                        ("faults", faults_text)):
            if key in docs:
                parts.append(fn(docs[key]))
        parts += [apps_table(d) for d in apps]
        made = plots(Path(a.plots), docs.get("pause"), docs.get("conns"), apps) \
            if a.plots else []
    except (KeyError, TypeError, ValueError) as e:
        fail(f"a results file lacks what its bench writes ({e!r})")
    except (MpilabError, OSError) as e:
        fail(str(e))
    sys.stdout.write("\n\n".join(parts) + "\n")
    for p in made:
        print(f"figure: {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
