#!/usr/bin/env python3
"""The report at scale (issue 26: a results file of 10^5 measurements reports in under 20 s
and 500 MB of memory, into a page under 10 MB that a real browser loads in under 5 s; 10^6
measurements reported within limits or refused in one line before any work).

    python3 bench/report_scale.py [--counts 10000,100000] [--runs 3] [--baseline REV]
        [--baseline-browser-max 20000] [--keep DIR] [--json OUT]

For each count N it writes a synthetic all-pairs results file (bench/report_scale_synth.py:
P ranks, every pair at 0, 4 KiB and 64 KiB, 5 repetitions each, the quick survey's
collectives, one Hockney and one LogGP fit per pair, an injected slow node and slow pair;
P the smallest with 3 P (P-1) / 2 >= N), then for this tree's `mpilab report` (and, with
--baseline, the python/ tree of git revision REV, side by side in the same run):
  - wall time and peak RSS of the report process (os.wait4's rusage: the child alone);
  - the page's size and the CSV files written beside it;
  - headless Chromium (bench/report_render.py's driver, a fresh browser per run): from
    navigation start until the load event and every figure drawn, median of --runs
    (the baseline's page only up to --baseline-browser-max measurements: its 10^5 page is
    141 MB).
Then the refusal: a file the size of 10^6 measurements (sparse, the size of the 10^5 file
times its measurements ratio) must be refused in one line, before any work, timed.
Timed: run it in a bench slot (/work/shared/tools/mlock bench).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
from harness import REPO, mpilab_cmd
from report_browser import baseline_tree, one_run

SIZES = [0, 4096, 65536]
BOUND_S = 900


def ranks_for(n: int) -> int:
    k = len(SIZES)
    return math.ceil((1 + math.sqrt(1 + 8 * n / k)) / 2)


def synth(res: Path, p: int) -> int:
    """bench/report_scale_synth.py's all-pairs document of p ranks at SIZES (a slow node
    and a slow pair); returns its number of measurements."""
    out = subprocess.run([sys.executable, str(REPO / "bench" / "report_scale_synth.py"),
                          str(res), "--ranks", str(p), "--sizes", ",".join(map(str, SIZES)),
                          "--reps", "5", "--slow-node", str(p // 3), "--slow-pair",
                          f"1-{p - 2}"], check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])


def run_report(python_dir: Path, results: Path, out: Path,
               extra: list[str] | None = None) -> dict[str, object]:
    t0 = time.perf_counter()
    p = subprocess.Popen(mpilab_cmd("report", str(results), "-o", str(out), *(extra or [])),
                         env=harness.env(package=python_dir), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = t0 + BOUND_S
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    err = p.stderr.read() if p.stderr else ""
    csv = sorted(out.parent.glob(f"{out.stem}.*.csv"))
    return {"wall_s": wall, "peak_rss_mb": ru.ru_maxrss / 1024.0,
            "exit": os.waitstatus_to_exitcode(status), "stderr": err.strip(),
            "page_bytes": out.stat().st_size if out.exists() else None,
            "csv_bytes": {c.name: c.stat().st_size for c in csv}}


def browser(page: Path, runs: int) -> dict[str, float]:
    rs = [one_run(page) for _ in range(runs)]
    d = [r["drawn_s"] for r in rs]
    return {"drawn_median_s": statistics.median(d), "drawn_min_s": min(d),
            "drawn_max_s": max(d), "failed_figures": max(r["failed_figures"] for r in rs)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", default="10000,100000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--baseline-browser-max", type=int, default=20000)
    ap.add_argument("--keep", type=Path, help="keep the files here")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    counts = [int(float(c)) for c in a.counts.split(",")]
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
        work = a.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        trees = [("this tree", REPO / "python")]
        if a.baseline:
            trees.append((f"baseline {a.baseline}",
                          baseline_tree(a.baseline, Path(tmp))))
        per_meas = None
        for n in counts:
            p = ranks_for(n)
            res = work / f"r{n}.json"
            m = synth(res, p)
            per_meas = res.stat().st_size / m
            print(f"N={n}: {m} measurements, {p} ranks x {len(SIZES)} sizes, "
                  f"{res.stat().st_size / 1e6:.1f} MB of JSON", flush=True)
            for k, (name, tree) in enumerate(trees):
                out = work / f"r{n}-{k}.html"
                r = run_report(tree, res, out)
                r.update(report=name, measurements=m, ranks=p, json_bytes=res.stat().st_size)
                if r["exit"] == 0 and (k == 0 or m <= a.baseline_browser_max):
                    r.update(browser(out, a.runs if k == 0 else 1))
                rows.append(r)
                page = r["page_bytes"] or 0
                b = (f"drawn {r['drawn_median_s']:.2f} s ({r['drawn_min_s']:.2f}.."
                     f"{r['drawn_max_s']:.2f})" if "drawn_median_s" in r else "browser: not run")
                print(f"  {name:>22}: exit {r['exit']}, {r['wall_s']:.1f} s, peak RSS "
                      f"{r['peak_rss_mb']:.0f} MB, page {page / 1e6:.2f} MB, CSV "
                      f"{sum(r['csv_bytes'].values()) / 1e6:.1f} MB; {b}", flush=True)  # type: ignore[union-attr]
            if not a.keep:
                res.unlink()
        # 10^6 measurements: a file of that size (sparse) must be refused before any work
        big = work / "r1000000.json"
        with open(big, "wb") as f:
            f.truncate(int(1_000_000 * (per_meas or 1000)))
        r = run_report(REPO / "python", big, work / "r1000000.html")
        print(f"N=1000000 ({big.stat().st_size / 1e6:.0f} MB, sparse): exit {r['exit']} in "
              f"{r['wall_s']:.2f} s, peak RSS {r['peak_rss_mb']:.0f} MB: {r['stderr']}")
        r.update(report="refusal", measurements=1_000_000)
        rows.append(r)
        big.unlink()
    if a.json:
        harness.write_json(a.json, rows, newline=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
