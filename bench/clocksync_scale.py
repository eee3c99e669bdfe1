#!/usr/bin/env python3
"""Clock synchronisation at scale in simulated time (SimGrid SMPI), flat SKaMPI against the
trees (hierarchical, leaders) and auto, the runner's default.

Compiles bench/clocksync_scale.c with smpicc against libmpilab's clocksync.c, clockfit.c,
wtime.c and parse.c in a temporary directory (outside the build tree), writes a flat cluster
platform (every node on its own 1 us, 10 Gbit/s link to a 0.5 us backbone), and runs each method at
16, 64, 256 and 1024 ranks, with the drift window (the default, 0.8 s) and without (0).
Every rank has an injected clock error (offset up to 10 ms, drift up to 100 ppm); the
simulated ranks share one clock, so each recovered offset is checked exactly against its
stated uncertainty. Prints one JSON line per run and the cost ratios 1024 : 16.

--platform asymmetric instead: every message from a lower rank to a higher one crosses a
9 us link, every message back a 1 us one (no bandwidth sharing). A round trip cannot see
this: every pair's offset is 4 us off, the same way along every path of the tree, so a
depth-d rank is 4d us off. Stated uncertainties that hold there are not just loose enough
for a symmetric network (its routes are listed pair by pair: at most 256 hosts).

--ppn N[,N...] puts N consecutive ranks on every host (block placement, as a cluster of N-core
nodes runs MPI); ranks of one host talk over its loopback (0.3 us, 20 Gbit/s, as shared
memory). The hierarchical method's tree then keeps every hop below a node's leader inside the
node (src/bench/clocktree.c); leaders also has rank 0 probe every node's leader itself, and
auto picks skampi below 128 ranks and leaders from there (each row records the method that
ran, "ran", and the nodes auto counted, "nodes").

Usage: bench/clocksync_scale.py [--ranks 16,64,256,1024]
                                [--methods skampi,hierarchical,leaders,auto] [--windows 0,0.8]
                                [--platform flat|asymmetric] [--ppn N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import harness
from harness import REPO

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="c" prefix="node-" suffix="" radical="0-{last}" speed="1Gf"
             bw="1.25GBps" lat="1us" bb_bw="100GBps" bb_lat="0.5us"
             loopback_bw="2.5GBps" loopback_lat="0.3us"/>
  </zone>
</platform>
"""
ASYM_HEAD = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <link id="up" bandwidth="1.25GBps" latency="9us" sharing_policy="FATPIPE"/>
    <link id="down" bandwidth="1.25GBps" latency="1us" sharing_policy="FATPIPE"/>
    <link id="loop" bandwidth="2.5GBps" latency="0.3us" sharing_policy="FATPIPE"/>
"""
ASYM_ROUTE = ('    <route src="node-{a}" dst="node-{b}" symmetrical="NO">'
              '<link_ctn id="{link}"/></route>\n')


def asymmetric_platform(n: int) -> str:
    """Full routing over n hosts: lower to higher host over 'up' (9 us), back over 'down';
    the ranks of one host over 'loop' (0.3 us, both ways)."""
    hosts = "".join(f'    <host id="node-{i}" speed="1Gf"/>\n' for i in range(n))
    def link(a: int, b: int) -> str:
        return "loop" if a == b else "up" if a < b else "down"
    routes = "".join(ASYM_ROUTE.format(a=a, b=b, link=link(a, b))
                     for a in range(n) for b in range(n))
    return ASYM_HEAD + hosts + routes + "  </zone>\n</platform>\n"


MPI_CHECK = (
    "#ifndef MPILAB_MPI_CHECK_H\n#define MPILAB_MPI_CHECK_H\n#include <mpi.h>\n"
    '#define MPILAB_MPI_IMPL "smpi"\n#endif\n'
)


def parse_list(text: str, kind: type, name: str) -> list:
    try:
        vals = [kind(v) for v in text.split(",") if v]
    except ValueError:
        sys.exit(f"clocksync_scale: {name}: not a comma-separated list: {text!r}")
    if not vals:
        sys.exit(f"clocksync_scale: {name}: empty")
    return vals


def build(work: Path) -> Path:
    (work / "inc" / "mpilab").mkdir(parents=True)
    (work / "inc" / "mpilab" / "mpi_check.h").write_text(MPI_CHECK)
    exe = work / "clocksync_scale"
    src = [
        REPO / "bench" / "clocksync_scale.c",
        REPO / "src" / "bench" / "clocksync.c",
        REPO / "src" / "bench" / "clocktree.c",
        REPO / "src" / "bench" / "clockfit.c",
        REPO / "src" / "bench" / "wtime.c",
        REPO / "src" / "common" / "parse.c",
    ]
    cmd = [
        "smpicc",
        "-O2",
        "-std=c11",
        "-D_GNU_SOURCE",
        f"-I{work / 'inc'}",
        f"-I{REPO / 'include'}",
        f"-I{REPO / 'src'}",
        "-o",
        str(exe),
        *map(str, src),
        "-lgsl",
        "-lgslcblas",
        "-lm",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"clocksync_scale: smpicc failed: {r.stderr.strip().splitlines()[-1:]}")
    return exe


def run(exe: Path, work: Path, np_: int, method: str, window: float) -> dict:
    cmd = [
        "smpirun",
        "-np",
        str(np_),
        "-platform",
        str(work / "plat.xml"),
        "-hostfile",
        str(work / "hosts"),
        "--cfg=smpi/simulate-computation:no",
        "--log=root.thr:critical",
        str(exe),
        method,
        str(window),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=1800)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        sys.exit(f"clocksync_scale: {method} at {np_} ranks failed (exit {r.returncode})")
    return json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="16,64,256,1024")
    ap.add_argument("--methods", default="skampi,hierarchical")
    ap.add_argument("--windows", default="0,0.8")
    ap.add_argument("--platform", default="flat")
    ap.add_argument("--ppn", default="1")
    ap.add_argument("--out")
    a = ap.parse_args()
    ranks = parse_list(a.ranks, int, "--ranks")
    methods = parse_list(a.methods, str, "--methods")
    windows = parse_list(a.windows, float, "--windows")
    ppns = parse_list(a.ppn, int, "--ppn")
    if any(v < 1 or v > 1024 for v in ppns):
        sys.exit("clocksync_scale: --ppn: each must be 1..1024")
    hosts = (max(ranks) + min(ppns) - 1) // min(ppns)
    if any(n < 2 or n > 4096 for n in ranks):
        sys.exit("clocksync_scale: --ranks: each must be 2..4096")
    if a.platform not in ("flat", "asymmetric"):
        sys.exit(f"clocksync_scale: --platform: flat or asymmetric, not {a.platform!r}")
    if a.platform == "asymmetric" and hosts > 256:
        sys.exit("clocksync_scale: --platform asymmetric: at most 256 hosts (routes per pair)")
    known = ("skampi", "regression", "hierarchical", "leaders", "auto")
    if any(m not in known for m in methods):
        sys.exit(f"clocksync_scale: --methods: {', '.join(known)}")
    for tool in ("smpicc", "smpirun"):
        if shutil.which(tool) is None:
            sys.exit(f"clocksync_scale: {tool} not found (apt-get install libsimgrid-dev)")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="clocksync_scale.") as tmp:
        work = Path(tmp)
        (work / "plat.xml").write_text(asymmetric_platform(hosts) if a.platform == "asymmetric"
                                       else PLATFORM.format(last=hosts - 1))
        exe = build(work)
        for ppn in ppns:
            (work / "hosts").write_text("".join(f"node-{i}\n" for i in range(hosts)
                                                for _ in range(ppn)))
            for w in windows:
                for m in methods:
                    for n in ranks:
                        row = run(exe, work, n, m, w)
                        row["platform"] = a.platform
                        row["ppn"] = ppn
                        print(json.dumps(row), flush=True)
                        rows.append(row)
    for ppn, w, m in ((ppn, w, m) for ppn in ppns for w in windows for m in methods):
        sel = {r["ranks"]: r for r in rows
               if r["method"] == m and r["window_s"] == w and r["ppn"] == ppn}
        lo, hi = min(sel), max(sel)
        ok = sum(r["within_uncertainty"] for r in sel.values())
        tot = sum(r["checked"] for r in sel.values())
        f_lo, f_hi = sel[lo]["first_attempt_s"], sel[hi]["first_attempt_s"]
        c_lo, c_hi = sel[lo]["cost_s"], sel[hi]["cost_s"]
        print(
            f"ppn {ppn}, window {w:g} s, {m}: cost {c_lo:.4f} s at {lo} ranks, "
            f"{c_hi:.4f} s at {hi} "
            f"(ratio {c_hi / c_lo:.2f}; first attempt {f_lo:.4f} s and {f_hi:.4f} s, "
            f"ratio {f_hi / f_lo:.2f}); offsets within the stated uncertainty: {ok} of {tot}"
        )
        us = [(n, sel[n]["mean_uncertainty_s"] * 1e6, sel[n]["max_uncertainty_s"] * 1e6)
              for n in sorted(sel)]
        print("  stated uncertainty mean / max (us): "
              + ", ".join(f"{n}: {mean:.2f} / {top:.2f}" for n, mean, top in us)
              + "; largest |error| / uncertainty: "
              + ", ".join(f"{sel[n]['max_error_to_uncertainty']:.2f}" for n in sorted(sel)))
    if a.out:
        harness.write_json(a.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
