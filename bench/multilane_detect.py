#!/usr/bin/env python3
"""Site detection under load: `mpilab-multilane --sites detect` RUNS times on a live 2 x 3
testbed (2 ms WAN, the multilane test's testbed, trim fixed), each run counted as the right
grid (ranks 0-2 in one site, 3-5 in the other), a wrong grid, or a one-line refusal. Run it
beside busy loops to see what load does to detection (docs/multilane.md):

  /work/shared/tools/hogs python3 bench/multilane_detect.py --runs 10

Needs root (network namespaces). Benchmark, not a test: the counts are reported."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import harness

SPEC = """\
[cluster]
sites = 2
nodes_per_site = 3
rails = 1

[lan]
rate = "1Gbit"

[wan]
node_rate = "50Mbit"
total_rate = "100Mbit"
delay = "2ms"
delay_trim = "0us"
socket_buffer = "256K"
"""

RIGHT = [0, 0, 0, 1, 1, 1]


def one_run(work: Path, k: int) -> tuple[str, str]:
    """(outcome, detail) of one detection run."""
    out = work / f"detect-{k}.json"
    p = harness.mpilab("testbed", "run", "--np", "6", "--timeout", "300", "--",
                       harness.tool("mpilab-multilane"), "--sites", "detect", "--no-model",
                       "--lanes", "3", "--sizes", "1K", "--reps", "1", "--json", str(out),
                       check=False, capture=True, timeout=600)
    if p.returncode == 0:
        grid = json.loads(out.read_text())["grid"]["site_of_rank"]
        return ("right" if grid == RIGHT else "wrong"), str(grid)
    lines = [x for x in p.stderr.splitlines() if "--sites: detect:" in x]
    if lines:
        return "refused", lines[0]
    return "other", f"exit {p.returncode}: {p.stderr.strip()[-300:]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--prefix", default=f"md{os.getpid() % 10000}")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    os.environ["MPILAB_TESTBED_PREFIX"] = a.prefix
    print(f"load {harness.loadavg()}", flush=True)
    counts = {"right": 0, "wrong": 0, "refused": 0, "other": 0}
    with tempfile.TemporaryDirectory(prefix="multilane-detect-") as tmp:
        work = Path(tmp)
        try:
            harness.testbed_up_in(work, a.prefix, SPEC)
            for k in range(a.runs):
                what, detail = one_run(work, k)
                counts[what] += 1
                print(f"run {k}: {what}: {detail}", flush=True)
        finally:
            harness.testbed_down(a.prefix)
    print(" ".join(f"{k} {v}" for k, v in counts.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
