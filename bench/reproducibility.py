#!/usr/bin/env python3
"""Run-to-run reproducibility of mpilab-bench's ping-pong: the same command N times (2 ranks,
shared memory and TCP loopback, default 1 KiB and 1 MiB), then per size: the median of the
runs' reported medians, the spread (max - min) / that median, and in how many runs the
reported interval of the median covers the median of all runs. Optionally with busy-loop
hogs (`--hogs 2`: `yes > /dev/null` processes started before and killed after).

Example: MPILAB_BIN=build/bin python3 bench/reproducibility.py --runs 5 --hogs 2
`--launches L`: every run is `mpilab bench --launches L` (L separate launches merged: the
median of the launch medians with an interval that includes launch-to-launch variation,
docs/bench-launches.md); the table then also gives the spread of all launch medians.
`--wrap CMD`: prefix every launch with CMD (e.g. `--wrap 'setarch -R'` to start the ranks
without address-space randomisation, to see whether the levels follow the addresses).
Targets (issue 9): spread within 10% quiet / 25% with two hogs; CI covers the median of the
runs in >= 4 of 5.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import find_tool
from repro_runs import launches_run, one_run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="1K,1M")
    ap.add_argument("--hogs", type=int, default=0, help="busy-loop processes during the runs")
    ap.add_argument("--transports", default="shm,tcp")
    ap.add_argument("--out-dir", default=None)
    ap.add_argument("--op", default="p2p",
                    help="the entry to time (p2p, or a suite entry such as pingpong)")
    ap.add_argument("--launches", type=int, default=1,
                    help="launches per run (> 1: every run is mpilab bench --launches N)")
    ap.add_argument("--wrap", default="", help="command prefix for every run (e.g. 'setarch -R')")
    ap.add_argument("runner_args", nargs="*", help="extra mpilab-bench arguments (after --)")
    a = ap.parse_args()
    out = Path(a.out_dir or tempfile.mkdtemp(prefix="repro-"))
    out.mkdir(parents=True, exist_ok=True)
    bench = find_tool("mpilab-bench")
    btls = {"shm": "self,vader", "tcp": "self,tcp"}
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(a.hogs)]
    try:
        runs: dict[str, list[dict[int, Any]]] = {}
        for t in a.transports.split(","):
            if a.launches > 1:
                runs[t] = [launches_run(btls[t], a.sizes, out / f"{t}-{k}.json", a.runner_args,
                                        a.op, a.launches, a.wrap.split())
                           for k in range(a.runs)]
            else:
                runs[t] = [one_run(bench, btls[t], a.sizes, out / f"{t}-{k}.json",
                                   a.runner_args, a.op, a.wrap.split())
                           for k in range(a.runs)]
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    print(f"results in {out}; {a.op}, {a.runs} runs x {a.launches} launches, {a.hogs} hogs, "
          f"wrap {a.wrap!r}, runner args {a.runner_args}")
    print(f"{'link':<5} {'bytes':>8} {'median of runs':>15} {'spread':>8} {'CI covers':>9} "
          f"{'reps (min..max)':>15} {'converged':>9} {'pinned':>6}  per-run medians [CI]")
    for t, rs in runs.items():
        for size in sorted(rs[0]):
            meds = [r[size]["median"] for r in rs]
            mm = statistics.median(meds)
            spread = (max(meds) - min(meds)) / mm
            cover = sum(1 for r in rs if r[size]["lo"] <= mm <= r[size]["hi"])
            reps = [r[size]["reps"] for r in rs]
            conv = sum(1 for r in rs if r[size]["converged"])
            pinned = sum(1 for r in rs if r[size]["pinned"])
            print(f"{t:<5} {size:>8} {mm * 1e6:12.3f} us {spread * 100:7.1f}% "
                  f"{cover:>4}/{len(rs):<4} "
                  f"{min(reps):>7}..{max(reps):<7} {conv:>4}/{len(rs):<4} "
                  f"{pinned:>2}/{len(rs):<3}  "
                  + " ".join(f"{r[size]['median'] * 1e6:.3f} [{r[size]['lo'] * 1e6:.3f},"
                             f"{r[size]['hi'] * 1e6:.3f}]" for r in rs))
            if a.launches > 1:
                allm = [x for r in rs for x in r[size]["launch_medians"]]
                am = statistics.median(allm)
                print(f"{'':<5} {'':>8} all {len(allm)} launch medians: median {am * 1e6:.3f} us, "
                      f"spread {(max(allm) - min(allm)) / am * 100:.1f}%, sd "
                      f"{statistics.stdev(allm) / am * 100:.1f}% of it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
