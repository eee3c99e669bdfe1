#!/usr/bin/env python3
"""MPIBlib's Table 1 at its own size, simulated: the 16-node heterogeneous cluster
(examples/platforms/mpiblib16.xml, SimGrid SMPI) running mpilab-bench.

1. Total benchmark time of scatter and gather (native), 0 to 100 KB in 1 KB steps, one
   repetition each, under global, maximum and root timing (paper: scatter 28.7 / 0.8 /
   0.8 s, gather 44.7 / 15.6 / 15.7 s). "Total" is the simulated time of the measurements
   (their wall_s, which includes each measurement's clock synchronisation for global
   timing), the way the paper timed the benchmark. The clocks are synchronised by probing
   (--sync skampi), as on the paper's cluster: the simulated run's own default, exact (every
   simulated rank reads one clock, nothing to probe), would leave out the cost the paper
   counts.
2. The values of the three methods side by side (the paper's Fig. 2): per size, max and
   root against global, relative difference.
3. 100 repetitions of a 4 KB ping-pong over all pairs, sequential against parallel
   (paper: 3.5 s against 0.5 s).

Needs the SMPI build (scripts/build --smpi) and smpirun. Example:
  python3 bench/scale_mpiblib.py [--platform examples/platforms/mpiblib16.xml]
Targets (issue 26): max and root timing at least 10x cheaper than global, with values
within the precision asked of global timing; parallel all-pairs at least 5x faster than
sequential at 16 nodes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import REPO, loadavg, mpilab
from mpilab.pair_matrix import expand_all

PAPER = {"scatter": {"global": 28.7, "max": 0.8, "root": 0.8},
         "gather": {"global": 44.7, "max": 15.6, "root": 15.7}}


def run(platform: str, out: Path, args: list[str]) -> tuple[dict, float]:
    t0 = time.monotonic()
    p = mpilab("bench", "--sim", platform, "--out", str(out), "--", *args, "--quiet",
               "--no-fit", capture=True, check=False, timeout=3600)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"mpilab bench --sim failed ({p.returncode}): "
                         f"{(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(out.read_text()), wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default=str(REPO / "examples/platforms/mpiblib16.xml"))
    ap.add_argument("--sizes", default="0:100K:1K")
    a = ap.parse_args()
    print(f"load at start: {loadavg()}")
    with tempfile.TemporaryDirectory(prefix="mpiblib-") as tmp:
        docs = {}
        for t in ("global", "max", "root"):
            doc, wall = run(a.platform, Path(tmp) / f"{t}.json",
                            ["--ops", "scatter:native,gather:native", "--sizes", a.sizes,
                             "--timing", t, "--min-reps", "1", "--max-reps", "1",
                             "--allow-single-rep", "--sync", "skampi"])
            docs[t] = doc
            print(f"{t}: {len(doc['measurements'])} measurements, {wall:.1f} s of wall time "
                  "to simulate", flush=True)
        print("\n1. total benchmark time (simulated s): mpilab [paper]")
        print(f"{'op':<8} {'global':>16} {'max':>16} {'root':>16} {'global/max':>11} "
              f"{'global/root':>12}")
        for op in ("scatter", "gather"):
            tot = {t: sum(m["wall_s"] for m in docs[t]["measurements"] if m["op"] == op)
                   for t in docs}
            print(f"{op:<8} " + " ".join(f"{tot[t]:8.3f} [{PAPER[op][t]:5.1f}]"
                                         for t in ("global", "max", "root"))
                  + f" {tot['global'] / tot['max']:10.1f}x {tot['global'] / tot['root']:11.1f}x")
        print("\n2. values against global timing (median |relative difference| over sizes, "
              "worst), precision asked of global: eps "
              f"{docs['global']['measurements'][0]['precision']['eps']}")
        for op in ("scatter", "gather"):
            g = {m["bytes"]: m["stats"]["median"] for m in docs["global"]["measurements"]
                 if m["op"] == op}
            for t in ("max", "root"):
                d = [abs(m["stats"]["median"] - g[m["bytes"]]) / g[m["bytes"]]
                     for m in docs[t]["measurements"] if m["op"] == op and g.get(m["bytes"])]
                print(f"{op:<8} {t:<5} median {statistics.median(d):6.1%} worst {max(d):6.1%}")
        print("\n3. all-pairs ping-pong, 4 KB, 100 repetitions (simulated s): mpilab [paper]")
        res = {}
        for sched in ("sequential", "parallel"):
            doc, wall = run(a.platform, Path(tmp) / f"p2p-{sched}.json",
                            ["--ops", "p2p", "--sizes", "4K", "--min-reps", "100",
                             "--max-reps", "100", "--p2p-schedule", sched])
            res[sched] = doc["measurements"][0]["all_pairs_wall_s"]
            ms = list(expand_all(doc["measurements"]))  # one pair matrix per size
            print(f"{sched:<10} {res[sched]:8.3f} [{3.5 if sched == 'sequential' else 0.5}] "
                  f"({len(ms)} pairs, {wall:.1f} s of wall time to simulate)", flush=True)
        print(f"sequential/parallel {res['sequential'] / res['parallel']:.1f}x [7.0x]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
