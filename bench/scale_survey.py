#!/usr/bin/env python3
"""The survey at cluster scale, simulated (issue 26: a simulated survey of 256 ranks in under
10 minutes of wall time, 1024 in under 60; the survey's own cost at 16, 64, 256 and 1024
ranks per timing method and for clock synchronisation; the 1024-rank report under 10 MB).

    python3 bench/scale_survey.py --ranks 16,64 [--out DIR] [--json FILE] [--sizes SPEC]
                                  [--browser]

For each rank count N: a flat simulated cluster of N nodes (`mpilab sim platform flat`,
10 Gbit/s and 1 us per node link), then `mpilab survey --sim` on it (one launch; the
sampled pair design above 64 ranks; operation-specific timing left out above 64 ranks).
Recorded per N, from the survey's own output:

- wall and CPU seconds of the whole survey here (simulation, fits, report), the simulator's
  peak memory (the largest child's RSS);
- the survey's own cost on the simulated cluster, in simulated seconds: per timing method
  the sum of its measurements' wall_s (each includes the clock synchronisation it needed),
  the all-pairs p2p (all_pairs_wall_s), the LogGP measurement (models.loggp.wall_s), and
  the clock synchronisations (provenance.clock_sync.total_duration_s and how many);
- the results file's and the report page's size, and the CSV files beside the page;
- with --browser, the page loaded in headless Chromium (bench/report_browser.py): seconds
  until every figure is drawn, and figures that failed.

Simulated times are deterministic (`smpi/simulate-computation:no`), so they need no quiet
machine; wall and CPU seconds are this machine's and depend on its load (run under
`mlock bench`, or under `mlock build` when longer than a bench slot: then the wall time is
an upper bound). One line per N on stdout; --json writes every number.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from harness import env, loadavg, mpilab_cmd


def fail(msg: str) -> None:
    sys.stderr.write(f"scale_survey: {msg}\n")
    raise SystemExit(2)


def rank_list(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        fail(f"--ranks {text!r}: expected counts like 16,64,256")
    if not out or any(n < 2 or n > 4096 for n in out):
        fail(f"--ranks {text!r}: each count must be 2..4096")
    return out


def cost(doc: dict) -> dict[str, object]:
    """The survey's own cost on the simulated cluster, from its results document."""
    per: dict[str, dict[str, float]] = {}
    p2p = 0.0
    for m in doc.get("measurements", []):
        if m.get("op") == "p2p":
            p2p += float(m.get("all_pairs_wall_s") or 0.0)
            continue
        t = per.setdefault(str(m.get("timing")), {"measurements": 0, "seconds": 0.0})
        t["measurements"] += 1
        t["seconds"] += float(m.get("wall_s") or 0.0)
    models = doc.get("models") or {}
    lg = models.get("loggp") or {}
    cs = doc.get("provenance", {}).get("clock_sync") or {}
    return {"per_timing": per, "p2p_all_pairs_s": p2p,
            "loggp_s": lg.get("wall_s"), "loggp_pairs": len(lg.get("pairs", [])),
            "hockney_pairs": len((models.get("hockney") or {}).get("pairs", [])),
            "sync_method": cs.get("method"), "syncs_performed": cs.get("performed"),
            "sync_total_s": cs.get("total_duration_s"),
            "design": (doc.get("provenance", {}).get("options", {}).get("pairs")
                       or {}).get("design"),
            "measurements": len(doc.get("measurements", []))}


def one(n: int, out: Path, sizes: str | None, browser: bool) -> dict[str, object]:
    d = out / f"n{n}"
    d.mkdir(parents=True, exist_ok=True)
    plat = d / "platform.xml"
    subprocess.run(mpilab_cmd("sim", "platform", "flat", "--nodes", str(n), "--bw", "10Gbit",
                              "--lat", "1us", "-o", str(plat)),
                   check=True, stderr=subprocess.DEVNULL, env=env())
    cmd = [*mpilab_cmd("survey"), "--sim", str(plat), "--np", str(n), "--out", str(d / "survey"),
           "-q", *(["--sizes", sizes] if sizes else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env())
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        fail(f"{n} ranks: survey failed ({p.returncode}): {p.stderr.strip().splitlines()[-1:]}")
    rj, rh = d / "survey" / "results.json", d / "survey" / "report.html"
    doc = json.loads(rj.read_text())
    csvs = sorted(x.name for x in rh.parent.glob("report.*.csv"))
    drawn = None
    if browser:
        from report_browser import one_run
        drawn = one_run(rh)
    return {"ranks": n, "wall_s": wall, "browser": drawn,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "max_rss_mb": after.ru_maxrss / 1024.0,
            # the compact form: the summaries' JSON and the samples' archive beside it
            "results_bytes": rj.stat().st_size + sum(
                x.stat().st_size for x in rj.parent.glob("results.samples.npz")),
            "report_bytes": rh.stat().st_size,
            "csv_beside": csvs, "cost": cost(doc), "command": cmd,
            "loadavg_after": Path("/proc/loadavg").read_text().split()[:3]}


def line(r: dict[str, object]) -> str:
    c = r["cost"]
    assert isinstance(c, dict)
    per = c["per_timing"]
    tim = ", ".join(f"{k} {v['seconds']:.2f} s ({v['measurements']})"
                    for k, v in sorted(per.items()))
    lg = c["loggp_s"]
    return (f"{r['ranks']} ranks: wall {r['wall_s']:.0f} s, cpu {r['cpu_s']:.0f} s, "
            f"rss {r['max_rss_mb']:.0f} MB; simulated cost: {tim}; "
            f"p2p {c['p2p_all_pairs_s']:.2f} s "
            f"({c['design']}, {c['hockney_pairs']} pairs fitted); LogGP "
            f"{lg if lg is None else f'{lg:.2f}'} s ({c['loggp_pairs']} pairs); clock sync "
            f"{c['sync_method']} x {c['syncs_performed']} = {c['sync_total_s']} s; results "
            f"{r['results_bytes'] / 1e6:.1f} MB, page {r['report_bytes'] / 1e6:.2f} MB, "
            f"{len(r['csv_beside'])} CSV beside"  # type: ignore[arg-type]
            + (f"; browser: drawn in {b['drawn_s']:.2f} s, {b['failed_figures']:.0f} figures "
               "failed" if isinstance(b := r.get("browser"), dict) else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="16,64", type=rank_list)
    ap.add_argument("--out", default="/tmp/scale_survey")
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--sizes", help="the survey's --sizes (default: its own plan)")
    ap.add_argument("--browser", action="store_true",
                    help="load each page in headless Chromium (bench/report_browser.py)")
    a = ap.parse_args()
    out = Path(a.out)
    runs = []
    print(f"load at start: {loadavg()}", flush=True)
    for n in a.ranks:
        r = one(n, out, a.sizes, a.browser)
        runs.append(r)
        print(line(r), flush=True)
        if a.json:  # after each size: a long series stopped later keeps what it measured
            tmp = a.json + ".tmp"
            Path(tmp).write_text(json.dumps(runs, indent=1) + "\n")
            os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
