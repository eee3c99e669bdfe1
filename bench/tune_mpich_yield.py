#!/usr/bin/env python3
"""MPICH with more ranks than cores, with and without libmpilab_ucx_yield.so (waiting ranks
yield their CPU; `mpilab tune sweep|validate --mpich-yield`), side by side in one run:
per pair one launch of the same mpilab-bench command with the library preloaded and one
without, in ABBA order, each under a time limit (MPICH's ranks busy-poll: without the
library a launch may not finish). Prints per (collective, size) the median of the launch
medians on each side and their ratio, and every launch's wall time (or its time-out).

    MPILAB_BIN=build-mpich/bin python3 bench/tune_mpich_yield.py --np 4 [--testbed PREFIX] \
        [--pairs 2] [--ops allreduce:native,bcast:native] [--sizes 64,16K] [--limit 90]
        [--max-reps 1000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import loadavg, write_json
from mpilab.commands.bench import DEFAULT_NP, runner_job
from mpilab.tune import sweep


def one(np: int, testbed: str | None, yielding: bool, args: list[str], limit: float,
        out: Path) -> tuple[float, int, dict[tuple[str, int], float]]:
    extra = sweep.mpich_yield_args(testbed) if yielding else []
    j = runner_job(np, DEFAULT_NP, args + ["--out", str(out)] + sweep.placement_args(testbed),
                   None, extra, testbed)
    t0 = time.monotonic()
    rc = sweep.run_job(j.cmd, j.env, limit, out.with_suffix(".log"), testbed)
    wall = time.monotonic() - t0
    med: dict[tuple[str, int], float] = {}
    if rc == 0 and out.is_file():
        for m in json.loads(out.read_text(encoding="utf-8"))["measurements"]:
            med[(m["op"], int(m["bytes"]))] = float(m["stats"]["median"])
    return wall, rc, med


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--testbed", metavar="PREFIX")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--ops", default="allreduce:native,bcast:native")
    ap.add_argument("--sizes", default="64,16K")
    ap.add_argument("--budget", default="4s")
    ap.add_argument("--limit", type=float, default=90.0, help="seconds per launch")
    ap.add_argument("--max-reps", type=int, default=1000,
                    help="the runner's cap on repetitions (docs/tune.md, --max-reps)")
    ap.add_argument("--out", help="JSON of every launch")
    a = ap.parse_args()
    args = ["--ops", a.ops, "--sizes", a.sizes, "--time-budget", a.budget, "--no-fit",
            "--quiet", *sweep.max_reps_args(a.max_reps)]
    where = f"testbed {a.testbed}" if a.testbed else "shared memory"
    print(f"MPICH, {a.np} ranks, {where}; load {loadavg()}")
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="mpilab-yield-") as tmp:
        for k in range(1, a.pairs + 1):
            for yielding in ((True, False) if k % 2 else (False, True)):
                label = "yield" if yielding else "spin"
                wall, rc, med = one(a.np, a.testbed, yielding, args, a.limit,
                                    Path(tmp) / f"{label}.{k}.json")
                state = f"{wall:.1f} s" if rc == 0 else f"exit {rc} after {wall:.1f} s"
                print(f"pair {k} {label:<5}: {state}")
                runs.append({"pair": k, "side": label, "wall_s": wall, "rc": rc,
                             "medians": {f"{o}:{b}": v for (o, b), v in med.items()}})
    print(f"{'collective':<12} {'bytes':>8} {'yield (us)':>12} {'spin (us)':>12} "
          f"{'spin/yield':>10}")
    keys = sorted({key for r in runs for key in r["medians"]})  # type: ignore[attr-defined]
    for key in keys:
        side = {s: [r["medians"][key] for r in runs  # type: ignore[index]
                    if r["side"] == s and key in r["medians"]]  # type: ignore[operator]
                for s in ("yield", "spin")}
        y = statistics.median(side["yield"]) if side["yield"] else None
        s = statistics.median(side["spin"]) if side["spin"] else None
        op, b = key.rsplit(":", 1)
        print(f"{op:<12} {b:>8} {y * 1e6 if y else float('nan'):>12.1f} "
              f"{s * 1e6 if s else float('nan'):>12.1f} "
              f"{s / y if y and s else float('nan'):>10.2f}")
    if a.out:
        write_json(a.out, {"np": a.np, "testbed": a.testbed, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
