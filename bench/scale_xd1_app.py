#!/usr/bin/env python3
"""The InfiniPath / XD1 study's application scaling curve, simulated: scaled-size
(weak-scaling) efficiency from 2 to 128 ranks at one and two processes per node, with the
application the wavefront in MPI mode (Livermore loop 23, one band of rows per rank), on the
XD1-like flat platform of bench/scale_xd1.py grown to 128 nodes (`mpilab sim platform flat
--nodes 128 --cores 2 --bw 7.6Gbit --lat 0.65us --loopback-bw 20Gbit --loopback-lat 0.3us`,
cores of 1 Gflop/s).

The paper's application is LAMMPS (scaled-size runs to 128 nodes, 1 and 2 processes per
node, its Figure 11); LAMMPS is not here, the wavefront is. Its computation is simulated
deterministically: `--sim-cell-flops 11` (the kernel's 11 floating-point operations per cell,
executed on the simulated 1 Gflop/s core), so the simulated time is computation plus the
frontier messages and the waits they cause; file I/O takes no simulated time.

Per rank: ROWS x COLS cells (one block row of ROWS x NB blocks), ITER iterations with all of
them in flight (--waves ITER); the whole problem grows with the ranks. Each point is run
twice: on the XD1-like platform and on the same platform with a network of almost no cost
(links 100 Gbit/s, 1 ns: the fastest the platform tool makes), which leaves the computation
and the pipeline's dependencies. So:
  efficiency     = compute / T(n)             (compute: the busiest rank's computation,
                                               its interior cells x ITER x 11 flop / 1 Gflop/s)
  comm share     = 1 - efficiency              (time not computing: messages and waits)
  network share  = 1 - T_free(n) / T(n)       (what the XD1-like network itself costs; the
                                               rest of comm share is the pipeline's fill)
The largest run's
result is checked bitwise against the sequential reference (mpilab wavefront verify).
Simulated time is deterministic (no bench slot needed).
  python3 bench/scale_xd1_app.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from harness import loadavg, mpilab, write_json

ROWS, COLS, NB, ITER, FLOPS, SPEED = 32, 1024, 64, 8, 11.0, 1e9
RANKS = (1, 2, 4, 8, 16, 32, 64, 128)
XD1 = ("--bw", "7.6Gbit", "--lat", "0.65us", "--loopback-bw", "20Gbit", "--loopback-lat",
       "0.3us")
FREE = ("--bw", "100Gbit", "--lat", "1ns", "--loopback-bw", "100Gbit", "--loopback-lat",
        "1ns")


def problem(d: Path, n: int) -> None:
    """Band files d/dN.0.. and d/cN.0.. of n x ROWS rows, one band per rank."""
    mpilab("wavefront", "create", "--rows", str(n * ROWS), "--cols", str(COLS),
           str(d / f"d{n}"), str(d / f"c{n}"), capture=True)
    for x in ("d", "c"):
        mpilab("wavefront", "convert", "--layout", "rowmajor", "--mb", str(ROWS), "--nb",
               str(NB), "--bands", str(n), str(d / f"{x}{n}"), str(d / f"{x}{n}b"),
               capture=True)


def simulate(d: Path, plat: Path, n: int, ppn: int, tag: str, iters: int) -> float:
    """One simulated run on fresh copies of the n-rank problem; its total simulated time."""
    from mpilab.sim import run as simrun

    for k in range(n):
        shutil.copyfile(d / (f"d{n}b.{k}" if n > 1 else "d1b"), d / f"w{n}.{k}")
    out = d / f"{tag}.json"
    j = simrun.job("mpilab-wavefront",
                   ["run", "--data", str(d / f"w{n}"), "--coef", str(d / f"c{n}b"), "--mb",
                    str(ROWS), "--nb", str(NB), "--iterations", str(iters), "--waves",
                    str(iters), "--mpi", "--sim-cell-flops", str(FLOPS), "--quiet", "--json",
                    str(out)], n, str(plat), ppn=ppn)
    if simrun.run(j, timeout=1800) != 0:
        raise SystemExit(f"simulated mpilab-wavefront failed ({tag})")
    return float(json.loads(out.read_text())["wavefront"]["total_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the table here as JSON")
    ap.add_argument("--max-ranks", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=ITER,
                    help=f"iterations, all in flight (default {ITER}); a rank starts n - 1 "
                         "block steps after rank 0, a fill that more iterations amortize")
    a = ap.parse_args()
    if a.iterations < 1:
        ap.error("--iterations must be >= 1")
    iters = a.iterations
    print(f"load at start: {loadavg()}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="xd1app-") as tmp:
        d = Path(tmp)
        plats = {}
        for name, links in (("xd1", XD1), ("free", FREE)):
            plats[name] = d / f"{name}.xml"
            mpilab("sim", "platform", "flat", "--nodes", "128", "--cores", "2", *links, "-o",
                   str(plats[name]), capture=True)
        for n in (r for r in RANKS if r <= a.max_ranks):
            problem(d, n)
            for ppn in ((1,) if n == 1 else (1, 2)):
                t0 = time.monotonic()
                t = simulate(d, plats["xd1"], n, ppn, f"x{n}_{ppn}", iters)
                tf = simulate(d, plats["free"], n, ppn, f"f{n}_{ppn}", iters)
                # interior rows of the busiest rank: the matrix's first and last rows are
                # boundary (not updated); a middle rank has none of them
                busy = ROWS - (2 if n == 1 else 1 if n == 2 else 0)
                compute = busy * (COLS - 2) * iters * FLOPS / SPEED
                rows.append({"ranks": n, "ppn": ppn, "nodes": (n + ppn - 1) // ppn,
                             "T_s": t, "T_free_s": tf, "compute_s": compute,
                             "efficiency": compute / t,
                             "comm_share": 1 - compute / t, "network_share": 1 - tf / t})
                print(f"{n} ranks x {ppn} ppn: {time.monotonic() - t0:.0f} s wall",
                      file=sys.stderr)
            if n == max(r for r in RANKS if r <= a.max_ranks):
                mpilab("wavefront", "verify", "--initial", str(d / f"d{n}"), "--coef",
                       str(d / f"c{n}"), "--iterations", str(iters), str(d / f"w{n}"),
                       capture=True)
                print(f"{n} ranks: result bitwise equal to the sequential reference",
                      file=sys.stderr)
            for f in d.glob(f"[dcw]{n}*"):
                f.unlink()
    print(f"\nper rank {ROWS} x {COLS} cells, blocks {ROWS} x {NB}, {iters} iterations in "
          "flight")
    print("\n| ranks | ppn | nodes | compute (ms) | T (ms) | efficiency | comm share | "
          "network share |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['ranks']} | {r['ppn']} | {r['nodes']} | {r['compute_s'] * 1e3:.3f} | "
              f"{r['T_s'] * 1e3:.3f} | "
              f"{r['efficiency']:.3f} | {r['comm_share']:.3f} | {r['network_share']:.4f} |")
    if a.json:
        write_json(a.json, {"rows_per_rank": ROWS, "cols": COLS, "nb": NB,
                            "iterations": iters, "cell_flops": FLOPS, "points": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
