#!/usr/bin/env python3
"""What a busy-polling delay line costs the rest of the machine: one CPU-bound worker per
core does a fixed amount of work while an idle testbed (2 sites x 1 node, WAN delay
--delay) is up with its delay line busy-polling (`--busy-poll on`) or sleeping
(`--busy-poll off`), rounds alternating side by side; printed per round: the workers' wall
time and the delay line's CPU time over that wall time, and the ratio busy / sleeping of
the median wall times. A busy line takes about one core: on a 2-core machine the workers'
wall time grows by about a third to a half.

Needs root. Example:
  /work/shared/tools/mlock bench python3 bench/delayline_busy_cost.py --rounds 3
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

import harness  # noqa: F401 (this checkout's package on the path)
from mpilab.testbed import net, spec

WORK = "s = 0\nfor i in range(int(__import__('sys').argv[1])):\n    s += i\n"


def workers(n: int, loops: int) -> float:
    """Wall time of n parallel workers, each summing `loops` integers."""
    t0 = time.perf_counter()
    ps = [subprocess.Popen([sys.executable, "-c", WORK, str(loops)]) for _ in range(n)]
    for p in ps:
        p.wait()
    return time.perf_counter() - t0


def line_cpu(prefix: str) -> float:
    st = net.delayline_stats(prefix) or {}
    return float(st.get("cpu_user_s", 0.0)) + float(st.get("cpu_sys_s", 0.0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loops", type=int, default=20_000_000, help="work per worker")
    ap.add_argument("--delay", default="10us")
    ap.add_argument("--prefix", default="mlb")
    a = ap.parse_args()
    if os.geteuid() != 0:
        ap.error("needs root (network namespaces)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    n = os.cpu_count() or 1
    with open("/proc/loadavg") as f:
        print(f"load at start: {f.read().strip()}; {n} workers of {a.loops} loops", flush=True)
    text = (f'prefix = "{a.prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 1\n'
            f'[wan]\ndelay = "{a.delay}"\ndelay_backend = "delayline"\n')
    sp = spec.load_text(text, "<busy cost>")
    walls: dict[str, list[float]] = {"busy": [], "sleeping": []}
    try:
        for r in range(a.rounds):
            for mode, arg in (("busy", "on"), ("sleeping", "off")):
                os.environ["MPILAB_DELAYLINE_ARGS"] = f"--busy-poll {arg}"
                net.down(a.prefix)
                net.up(sp)
                time.sleep(0.5)
                c0 = line_cpu(a.prefix)
                w = workers(n, a.loops)
                c1 = line_cpu(a.prefix)
                walls[mode].append(w)
                print(f"round {r + 1} {mode:>8}: workers {w:7.3f} s, delay line CPU "
                      f"{(c1 - c0) / w * 100:5.1f}% of a core", flush=True)
    finally:
        os.environ.pop("MPILAB_DELAYLINE_ARGS", None)
        net.down(a.prefix)
    ratio = statistics.median(walls["busy"]) / statistics.median(walls["sleeping"])
    print(f"median wall time, busy / sleeping delay line: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
