#!/usr/bin/env python3
"""Does the stopping rule's minimum measuring time (--min-time) buy honesty, and at what
price? The same ping-pong command, repeated, under several --min-time values and launch
counts, interleaved (run k of every condition before run k+1 of any), 2 ranks, shared memory
and TCP loopback. Per condition, transport and size: in how many runs the reported interval
holds the median of that condition's runs (what a repeat shows), the spread of the runs'
medians, how many converged, the repetitions, and the wall time of a run.

`--launches 1` runs mpilab-bench once per run (its own interval); `--launches 3` runs
`mpilab bench --launches 3` (the launch-level interval, the default of `mpilab bench`).
The cost of the launch-level interval is printed as the ratio of a run's wall time to the
single launch's (when both are measured).

Each run prints a line as it ends, and with --json the table so far is rewritten after
every run (marked partial until the series is complete), so that a series stopped by its
bench slot keeps what it measured. --deadline S (default 540, for a 600 s slot) starts no
run that would end after S seconds (judged from that condition's longest run so far); the
table then covers the complete rounds and says so.

Example:
  MPILAB_BIN=build/bin ../shared/tools/mlock bench /work/shared/tools/hogs python3 \\
      bench/min_time_coverage.py --runs 5 --min-times 2ms --launches 1,3 --json cov.json
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import find_tool, loadavg, write_json
from repro_runs import launches_run, one_run

BTLS = {"shm": "self,vader", "tcp": "self,tcp"}


Key = tuple[str, int, str]


class _Deadline(Exception):
    """The next run would end after --deadline."""


def summary(res: dict[Key, list[dict[int, Any]]], walls: dict[Key, list[float]],
            rounds: int) -> list[dict[str, Any]]:
    """Per condition, transport and size, over the first `rounds` runs: how many intervals
    hold the median of the runs, the spread, convergence, repetitions, wall time."""
    rows = []
    for (mt, lc, t), all_rs in res.items():
        rs = all_rs[:rounds]
        if not rs:
            continue
        one = walls.get((mt, 1, t), [])[:rounds]
        for size in sorted(rs[0]):
            meds = [r[size]["median"] for r in rs]
            mm = statistics.median(meds)
            # the confidence interval of the level (the merge's interval before it became
            # the prediction interval for a repeat), from the same runs
            ci = (sum(r[size]["ci_lo"] <= mm <= r[size]["ci_hi"] for r in rs)
                  if all("ci_lo" in r[size] for r in rs) else None)
            wall = statistics.median(walls[(mt, lc, t)][:rounds])
            rows.append({
                "min_time": mt, "launches": lc, "link": t, "bytes": size, "runs": len(rs),
                "covers": sum(r[size]["lo"] <= mm <= r[size]["hi"] for r in rs),
                "ci_covers": ci, "median_of_runs_s": mm,
                "spread": (max(meds) - min(meds)) / mm if mm > 0 else float("nan"),
                "converged": sum(bool(r[size]["converged"]) for r in rs),
                "reps": [r[size]["reps"] for r in rs], "wall_per_run_s": wall,
                "cost_vs_one_launch": (wall / statistics.median(one)
                                       if one and lc != 1 else None),
                "runs_s": [[r[size]["median"], r[size]["lo"], r[size]["hi"]] for r in rs]})
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'min-time':>8} {'launches':>8} {'link':<4} {'bytes':>8} {'covers':>6} "
          f"{'spread':>7} {'conv':>5} {'reps':>13} {'wall/run':>8} {'cost':>6}  "
          "medians [interval] us")
    for w in rows:
        n = w["runs"]
        ci = f" ci {w['ci_covers']}/{n}" if w["ci_covers"] is not None else ""
        cost = f"{w['cost_vs_one_launch']:5.1f}x" if w["cost_vs_one_launch"] else f"{'':>6}"
        print(f"{w['min_time']:>8} {w['launches']:>8} {w['link']:<4} {w['bytes']:>8} "
              f"{w['covers']:>3}/{n:<2} {w['spread'] * 100:6.1f}% {w['converged']:>2}/{n:<2}{ci} "
              f"{min(w['reps']):>6}..{max(w['reps']):<6} {w['wall_per_run_s']:7.2f}s {cost}  "
              + " ".join(f"{m * 1e6:.3f} [{lo * 1e6:.3f},{hi * 1e6:.3f}]"
                         for m, lo, hi in w["runs_s"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="1K,1M")
    ap.add_argument("--min-times", default="10ms,2ms")
    ap.add_argument("--launches", default="1,3")
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--transports", default="shm,tcp")
    ap.add_argument("--deadline", type=float, default=540.0,
                    help="seconds: start no run that would end later (0: none)")
    ap.add_argument("--json", help="the table so far, rewritten after every run")
    a = ap.parse_args()
    mts = a.min_times.split(",")
    try:
        lcs = [int(x) for x in a.launches.split(",")]
    except ValueError:
        ap.error(f"--launches {a.launches!r}: expected counts such as 1,3")
    tps = a.transports.split(",")
    bad = [t for t in tps if t not in BTLS]
    if bad or a.runs < 1 or any(lc < 1 for lc in lcs) or a.deadline < 0:
        ap.error(f"--transports: {', '.join(BTLS)}; --runs and --launches >= 1; --deadline >= 0"
                 + (f" (not {', '.join(bad)})" if bad else ""))
    bench = find_tool("mpilab-bench")
    out = Path(tempfile.mkdtemp(prefix="mintime-"))
    res: dict[Key, list[dict[int, Any]]] = {}
    walls: dict[Key, list[float]] = {}
    start, load, done, stopped = time.monotonic(), loadavg(), 0, ""
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(a.hogs)]
    try:
        for k in range(a.runs):
            for mt in mts:
                for lc in lcs:
                    for t in tps:
                        key = (mt, lc, t)
                        longest = max(walls.get(key, [0.0]))
                        if a.deadline and time.monotonic() - start + longest > a.deadline:
                            stopped = (f"stopped before run {k + 1} of {a.runs}: the next run "
                                       f"would pass the deadline of {a.deadline:g} s")
                            raise _Deadline
                        f = out / f"{t}-{mt}-{lc}-{k}.json"
                        extra = ["--min-time", mt]
                        t0 = time.monotonic()
                        r = (launches_run(BTLS[t], a.sizes, f, extra, "p2p", lc, [])
                             if lc > 1 else one_run(bench, BTLS[t], a.sizes, f, extra))
                        walls.setdefault(key, []).append(time.monotonic() - t0)
                        res.setdefault(key, []).append(r)
                        print(f"run {k + 1} {mt} x{lc} {t}: {walls[key][-1]:.2f} s, "
                              + ", ".join(f"{b} B {v['median'] * 1e6:.3f} us "
                                          f"[{v['lo'] * 1e6:.3f}, {v['hi'] * 1e6:.3f}]"
                                          for b, v in sorted(r.items())),
                              file=sys.stderr, flush=True)
                        if a.json:
                            # complete rounds only: every condition's k-th run
                            full = min(len(v) for v in res.values())
                            write_json(a.json, {"partial": True, "load_at_start": load,
                                                "hogs": a.hogs, "rounds": full,
                                                "rows": summary(res, walls, full)})
            done = k + 1
    except _Deadline:
        pass
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    rows = summary(res, walls, done)
    if a.json:
        write_json(a.json, {"partial": bool(stopped), "stopped": stopped or None,
                            "load_at_start": load, "hogs": a.hogs, "rounds": done,
                            "elapsed_s": time.monotonic() - start, "rows": rows})
    print(f"{done} runs per condition, {a.hogs} hogs, sizes {a.sizes}; files in {out}; "
          f"load at start {load}; {time.monotonic() - start:.0f} s")
    if stopped:
        print(stopped)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
