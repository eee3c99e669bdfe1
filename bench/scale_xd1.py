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

Collective algorithms: SMPI's own defaults (`smpi/coll-selector:default`, naive: its
allreduce is a linear reduce then a bcast); `--selectors default,mpich` adds MPICH's
selection (InfiniPath's MPI was MPICH-based) side by side, but its 32 x 1 launch had not
finished after 6 minutes of wall time here.

Simulated times are deterministic; the wall time of each launch is printed with the load at
the start. Prints, per operation and size, the time at 32 x 1 and 32 x 2 and their ratio:
what the second process per node costs or gains.
  python3 bench/scale_xd1.py
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from harness import loadavg, mpilab

SIZES = "8,64,512,4K,32K,256K,1M"
SIZES_A2A = "8,64,512,4K,32K,64K"
OPS = ("exchange", "bcast", "allreduce", "alltoall")
# SMPI's collective algorithms (--selectors): its own defaults (naive: allreduce is a linear
# reduce and a bcast); "mpich" is MPICH's selection (InfiniPath's MPI was MPICH-based), but
# its 32 x 1 launch had not finished after 6 minutes here and was stopped


def launch(plat: Path, out: Path, ppn: int, ops: str, sizes: str, selector: str
           ) -> tuple[dict, float]:
    from mpilab.sim import run as simrun

    j = simrun.job("mpilab-bench", ["--ops", ops, "--sizes", sizes, "--min-time", "0",
                                    "--quiet", "--out", str(out)], None, str(plat), ppn=ppn,
                   config=[f"--cfg=smpi/coll-selector:{selector}"])
    t0 = time.monotonic()
    status = simrun.run(j, timeout=3000)
    if status != 0:
        raise SystemExit(f"simulated mpilab-bench failed (exit {status})")
    simrun.annotate(str(out), j.info)
    return json.loads(out.read_text()), time.monotonic() - t0


def medians(doc: dict) -> dict[tuple[str, int], float]:
    return {(m["op"], m["bytes"]): m["stats"]["median"] for m in doc["measurements"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--selectors", default="default",
                    help="SMPI collective selectors, comma-separated (default, mpich, ompi)")
    selectors = tuple(ap.parse_args().selectors.split(","))
    print(f"load at start: {loadavg()}")
    with tempfile.TemporaryDirectory(prefix="xd1-") as tmp:
        d = Path(tmp)
        plat = d / "xd1.xml"
        mpilab("sim", "platform", "flat", "--nodes", "32", "--cores", "2", "--bw", "7.6Gbit",
               "--lat", "0.65us", "--loopback-bw", "20Gbit", "--loopback-lat", "0.3us",
               "-o", str(plat), capture=True)
        res: dict[tuple[str, int], dict[tuple[str, int], float]] = {}
        for sel in selectors:
            for ppn in (1, 2):
                r = res[(sel, ppn)] = {}
                for ops, sizes in (("exchange,bcast,allreduce", SIZES),
                                   ("alltoall", SIZES_A2A)):
                    doc, wall = launch(plat, d / f"r{ppn}.json", ppn, ops, sizes, sel)
                    r.update(medians(doc))
                    print(f"{sel}: 32 x {ppn} ({32 * ppn} ranks) {ops}: {wall:.0f} s wall",
                          file=sys.stderr)
    print("\n| op | bytes | " + " | ".join(f"{s} 32 x 1 (us) | {s} 32 x 2 (us) | 2 / 1"
                                        for s in selectors) + " |")
    print("| --- | --- |" + " --- | --- | --- |" * len(selectors))
    for op in OPS:
        for o, b in sorted(k for k in res[(selectors[0], 1)] if k[0] == op):
            cells = []
            for sel in selectors:
                t1, t2 = res[(sel, 1)].get((o, b)), res[(sel, 2)].get((o, b))
                cells.append("- | - | -" if t1 is None or t2 is None else
                             f"{t1 * 1e6:.2f} | {t2 * 1e6:.2f} | {t2 / t1:.2f}")
            print(f"| {op} | {b} | " + " | ".join(cells) + " |")
    print("\n(median of each measurement's samples)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
