#!/usr/bin/env python3
"""Does the stopping rule's minimum measuring time (--min-time) buy honesty, and at what
price? The same ping-pong command, repeated, under several --min-time values and launch
counts, interleaved (run k of every condition before run k+1 of any), 2 ranks, shared memory
and TCP loopback. Per condition, transport and size: in how many runs the reported interval
holds the median of that condition's runs (what a repeat shows), the spread of the runs'
medians, how many converged, the repetitions, and the wall time of a run.

`--launches 1` runs mpilab-bench once per run (its own interval); `--launches 3` runs
`mpilab bench --launches 3` (the launch-level interval, the default of `mpilab bench`).

Example:
  MPILAB_BIN=build/bin ../shared/tools/mlock bench python3 bench/min_time_coverage.py \\
      --runs 5 --min-times 10ms,2ms --launches 1,3 [--hogs 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import find_tool
from repro_runs import launches_run, one_run

BTLS = {"shm": "self,vader", "tcp": "self,tcp"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="1K,1M")
    ap.add_argument("--min-times", default="10ms,2ms")
    ap.add_argument("--launches", default="1,3")
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--transports", default="shm,tcp")
    a = ap.parse_args()
    mts, lcs = a.min_times.split(","), [int(x) for x in a.launches.split(",")]
    tps = a.transports.split(",")
    bench = find_tool("mpilab-bench")
    out = Path(tempfile.mkdtemp(prefix="mintime-"))
    res: dict[tuple[str, int, str], list[dict[int, Any]]] = {}
    walls: dict[tuple[str, int, str], list[float]] = {}
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(a.hogs)]
    try:
        for k in range(a.runs):
            for mt in mts:
                for lc in lcs:
                    for t in tps:
                        key = (mt, lc, t)
                        f = out / f"{t}-{mt}-{lc}-{k}.json"
                        extra = ["--min-time", mt]
                        t0 = time.monotonic()
                        r = (launches_run(BTLS[t], a.sizes, f, extra, "p2p", lc, [])
                             if lc > 1 else one_run(bench, BTLS[t], a.sizes, f, extra))
                        walls.setdefault(key, []).append(time.monotonic() - t0)
                        res.setdefault(key, []).append(r)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    print(f"{a.runs} runs per condition, {a.hogs} hogs, sizes {a.sizes}; files in {out}")
    print(f"{'min-time':>8} {'launches':>8} {'link':<4} {'bytes':>8} {'covers':>6} "
          f"{'spread':>7} {'conv':>5} {'reps':>13} {'wall/run':>8}  medians [interval] us")
    for (mt, lc, t), rs in res.items():
        for size in sorted(rs[0]):
            meds = [r[size]["median"] for r in rs]
            mm = statistics.median(meds)
            cover = sum(r[size]["lo"] <= mm <= r[size]["hi"] for r in rs)
            # the confidence interval of the level (the merge's interval before it became
            # the prediction interval for a repeat), from the same runs
            ci_cover = (f" ci {sum(r[size]['ci_lo'] <= mm <= r[size]['ci_hi'] for r in rs)}"
                        f"/{len(rs)}" if all("ci_lo" in r[size] for r in rs) else "")
            conv = sum(bool(r[size]["converged"]) for r in rs)
            reps = [r[size]["reps"] for r in rs]
            print(f"{mt:>8} {lc:>8} {t:<4} {size:>8} {cover:>3}/{len(rs):<2} "
                  f"{(max(meds) - min(meds)) / mm * 100:6.1f}% {conv:>2}/{len(rs):<2}{ci_cover} "
                  f"{min(reps):>6}..{max(reps):<6} {statistics.median(walls[(mt, lc, t)]):7.2f}s  "
                  + " ".join(f"{r[size]['median'] * 1e6:.3f} [{r[size]['lo'] * 1e6:.3f},"
                             f"{r[size]['hi'] * 1e6:.3f}]" for r in rs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
