#!/usr/bin/env python3
"""The report page of the path migration benches: markdown tables from the JSON files of
pathmig_pause.py, pathmig_conns.py, pathmig_faults.py and pathmig_apps.py (any subset).

    python3 bench/pathmig_report.py --pause P.json --conns C.json --faults F.json \
        --apps A.json [--apps B.json] > report.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.1f}"


def pause_tables(doc: dict[str, Any]) -> str:
    runs = doc["runs"]
    out = ["| message | fault | agent: pause per run (ms) | agent median | raw MPTCP: pause "
           "per run (ms) | raw median | all bytes verified |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for nbytes in sorted({r["bytes"] for r in runs}):
        for mode in ("down", "drop"):
            row = [f"{nbytes // 1024} KiB", "link down" if mode == "down" else "silent drop"]
            ok = True
            for cfg in ("agent", "raw"):
                sel = [r for r in runs if r["bytes"] == nbytes and r["fault"] == mode
                       and r["config"] == cfg]
                ps = [r["pause"] for r in sel if "pause" in r]
                ok &= all(r["verified"] and r["rc"] == 0 for r in sel)
                row += [", ".join(ms(p) for p in ps), ms(statistics.median(ps)) if ps else "-"]
            out.append("| " + " | ".join(row + ["yes" if ok else "NO"]) + " |")
    out += ["", "| message | TCP | MPTCP 1 subflow | raw MPTCP (2 active) | MPTCP + agent | "
            "agent vs TCP |", "| --- | --- | --- | --- | --- | --- |"]
    for nbytes in sorted({r["bytes"] for r in runs}):
        med = {}
        for cfg in ("tcp", "raw1", "raw", "agent"):
            m = [r["median_rtt"] for r in runs if r["bytes"] == nbytes and r["fault"] is None
                 and r["config"] == cfg and r["median_rtt"]]
            med[cfg] = statistics.median(m) if m else None
        cells = [f"{med[c] * 1e3:.3f} ms" if med[c] else "-" for c in med]
        rel = (f"{(med['agent'] / med['tcp'] - 1) * 100:+.1f}%" if med["agent"] and med["tcp"]
               else "-")
        out.append(f"| {nbytes // 1024} KiB | " + " | ".join(cells) + f" | {rel} |")
    return "\n".join(out)


def conns_table(doc: dict[str, Any]) -> str:
    out = ["| connections | MIGRATED->ARMED (arm all) | ARMED->MIGRATED local / at the peer "
           "| pause during arm | during migrate | on a link-down fault | migrated by the "
           "fault | median RTT | bytes verified |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["runs"]:
        out.append(f"| {r['connections']} | {ms(r['migrated_to_armed_s'])} ms | "
                   f"{ms(r['armed_to_migrated_local_s'])} / {ms(r['armed_to_migrated_peer_s'])}"
                   f" ms | {ms(r['pause_arm'])} ms | {ms(r['pause_migrate'])} ms | "
                   f"{ms(r['pause_fault'])} ms | {r['fault_migrated']} | "
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
    out = [f"{doc['app']}, {doc['np']} ranks, {doc['reps']} runs per configuration "
           f"(seed {doc['seed']}):", "",
           "| configuration | runs | median (s) | mean (s) | stdev (s) | min (s) | median vs TCP |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for cfg, s in doc["summary"].items():
        rel = s.get("slowdown_median")
        out.append(f"| {cfg} | {s['runs']} | {s['median']:.1f} | {s['mean']:.1f} | "
                   f"{s['stdev']:.1f} | {s['min']:.1f} | "
                   f"{'-' if rel is None else f'{rel * 100:+.1f}%'} |")
    missed = sum(1 for r in doc["runs"] if r["fault"].get("missed"))
    out.append("")
    out.append(f"Incorrect or failed runs: {doc['incorrect_or_failed']}; faults that came "
               f"after the job ended (not counted as faulted): {missed}.")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pause")
    ap.add_argument("--conns")
    ap.add_argument("--faults")
    ap.add_argument("--apps", action="append", default=[])
    a = ap.parse_args()
    parts = []
    for path, fn in ((a.pause, pause_tables), (a.conns, conns_table),
                     (a.faults, faults_text)):
        if path:
            parts.append(fn(json.loads(Path(path).read_text())))
    parts += [apps_table(json.loads(Path(p).read_text())) for p in a.apps]
    sys.stdout.write("\n\n".join(parts) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
