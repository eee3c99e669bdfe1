#!/usr/bin/env python3
"""The InfiniPath / Cray XD1 study's Pallas-style runs at its own size, simulated: exchange,
bcast, allreduce and alltoall on 32 nodes, one and two processes per node (32 and 64
ranks), mpilab-bench's SMPI build on a flat 32-node platform (`mpilab sim platform flat
--nodes 32 --cores 2`).

The platform's links are an assumption, stated here because the study's hardware is not
simulated from a description: each node's link 7.6 Gbit/s (about 950 MB/s, InfiniPath's
large-message rate) with 0.65 us latency, so node to node is 1.3 us (its small-message MPI
latency); two ranks of one node talk over a loopback link of 20 Gbit/s and 0.3 us (shared
memory, assumed: `--loopback-bw 20Gbit --loopback-lat 0.3us`; without one SimGrid routes
them over the node's own link, up and down). Sizes: 8 B .. 1 MiB by x8 (alltoall up to 64 KiB:
64 ranks x 64 x 1 MiB would be 4 GiB of copies per call in the simulator).

Simulated times are deterministic; the wall time of each launch is printed with the load at
the start. Prints, per operation and size, the time at 32 x 1 and 32 x 2 and their ratio:
what the second process per node costs or gains.
  python3 bench/scale_xd1.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = "8,64,512,4K,32K,256K,1M"
SIZES_A2A = "8,64,512,4K,32K,64K"
OPS = ("exchange", "bcast", "allreduce", "alltoall")


def launch(plat: Path, out: Path, ppn: int, ops: str, sizes: str) -> tuple[dict, float]:
    from mpilab.sim import run as simrun

    j = simrun.job("mpilab-bench", ["--ops", ops, "--sizes", sizes, "--min-time", "0",
                                    "--quiet", "--out", str(out)], None, str(plat), ppn=ppn)
    t0 = time.monotonic()
    status = simrun.run(j, timeout=3000)
    if status != 0:
        raise SystemExit(f"simulated mpilab-bench failed (exit {status})")
    simrun.annotate(str(out), j.info)
    return json.loads(out.read_text()), time.monotonic() - t0


def medians(doc: dict) -> dict[tuple[str, int], float]:
    return {(m["op"], m["bytes"]): m["stats"]["median"] for m in doc["measurements"]}


def main() -> int:
    with open("/proc/loadavg") as f:
        print(f"load at start: {f.read().strip()}")
    with tempfile.TemporaryDirectory(prefix="xd1-") as tmp:
        d = Path(tmp)
        plat = d / "xd1.xml"
        p = subprocess.run([sys.executable, "-m", "mpilab.cli", "sim", "platform", "flat",
                            "--nodes", "32", "--cores", "2", "--bw", "7.6Gbit", "--lat",
                            "0.65us", "--loopback-bw", "20Gbit", "--loopback-lat", "0.3us",
                            "-o", str(plat)], capture_output=True, text=True,
                           check=False)
        if p.returncode != 0:
            raise SystemExit(p.stderr.strip())
        res: dict[int, dict[tuple[str, int], float]] = {}
        for ppn in (1, 2):
            res[ppn] = {}
            for ops, sizes in (("exchange,bcast,allreduce", SIZES), ("alltoall", SIZES_A2A)):
                doc, wall = launch(plat, d / f"r{ppn}.json", ppn, ops, sizes)
                res[ppn].update(medians(doc))
                print(f"32 x {ppn} ({32 * ppn} ranks) {ops}: {wall:.0f} s wall")
    print("\n| op | bytes | 32 x 1 (us) | 32 x 2 (us) | 2 ppn / 1 ppn |")
    print("| --- | --- | --- | --- | --- |")
    for op in OPS:
        for (o, b), t1 in sorted(res[1].items(), key=lambda kv: (kv[0][0], kv[0][1])):
            if o != op or (o, b) not in res[2]:
                continue
            t2 = res[2][(o, b)]
            print(f"| {op} | {b} | {t1 * 1e6:.2f} | {t2 * 1e6:.2f} | {t2 / t1:.2f} |")
    print("\n(median of each measurement's samples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
