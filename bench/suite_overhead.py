#!/usr/bin/env python3
"""The suite's own measurement overhead: small-message ping-pong latency measured by mpilab
(engine + pingpong entry) against a bare hand loop of MPI_Send/MPI_Recv, alternating in the
same run (target: within 5%). Both are timed in the same chunks (pipelined round trips, a
barrier before each chunk); each round compares the medians over 20 chunks, so one
preempted chunk on this shared machine does not decide the ratio; the result is the median
ratio over rounds, with its range. Transports: shm and tcp-loopback. Example:
  MPILAB_BIN=build/bin python3 bench/suite_overhead.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from harness import find_tool, mpi_env, mpirun, write_json
from mpilab.suite.transports import TRANSPORTS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,64")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=4000)
    ap.add_argument("--transports", default="shm,tcp-loopback")
    ap.add_argument("--out", default="results/suite_overhead.json")
    a = ap.parse_args()
    tool = find_tool("suite_overhead")
    rows = []
    for tn in a.transports.split(","):
        t = TRANSPORTS[tn]
        for size in a.sizes.split(","):
            cmd = mpirun(2, t.mca_args()) + [tool, size, str(a.rounds), str(a.iters)]
            p = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, check=False)
            if p.returncode != 0:
                sys.stderr.write(f"suite_overhead: {tn} {size}: {p.stderr.strip()[-200:]}\n")
                return 1
            recs = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
            bare = statistics.median(r["bare_s"] for r in recs)
            mean = statistics.median(r["mpilab_median_s"] for r in recs)
            ratio = statistics.median(r["ratio"] for r in recs)
            rows.append({"transport": tn, "bytes": int(size), "bare_s": bare,
                         "mpilab_s": mean, "ratio": ratio, "rounds": recs})
            lo, hi = min(r["ratio"] for r in recs), max(r["ratio"] for r in recs)
            ok = "ok" if abs(ratio - 1) <= 0.05 else "OUTSIDE 5%"
            print(f"{tn:13} {size:>5} B  bare {bare * 1e6:7.3f} us  mpilab {mean * 1e6:7.3f} us"
                  f"  ratio {ratio:.3f} [{lo:.3f}, {hi:.3f}]  {ok}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, {"bench": "suite_overhead", "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
