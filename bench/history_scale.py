#!/usr/bin/env python3
"""The history's targets (docs/history.md, "Measured"):

1. scale: a history of RUNS synthetic runs (SERIES measurements each); the wall time of
   `mpilab history trend` for one measurement and of `mpilab history check` (each a whole
   command: interpreter start, imports, query, detection), best and median of REPEAT;
2. concurrent writers: ROUNDS rounds of two `mpilab history add` processes started at
   once, each adding a file of its own; after each round PRAGMA integrity_check and the
   counts of runs and points;
3. change detection: TRIALS series of NIGHTS nightly runs with this machine's noise and a
   10% step at a random run, and TRIALS without a step: how often `check` names the right
   run, and how often it raises an alarm without a change.

The noise of one run's figure: a standard deviation of 2% on the log scale, lognormal. From
docs/bench-launches.md: the machine's launch-to-launch limit for the default `mpilab bench`
reached +-4.1% (a prediction interval for one launch against one, h = 1.96 s sqrt 2: s =
1.45%), and shared-memory 1 KiB figures had half widths of 5.2-5.4% (s = 1.9%). Each run's
own interval is the one such noise states (+-5.5%). With --heavy the noise is Student's t
with 3 degrees of freedom at the same scale (a run now and then far off).

Usage: python3 bench/history_scale.py [--runs 10000] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness
from harness import loadavg, mpilab_cmd, write_json

harness.test_helpers()
from conftest import make_results  # noqa: E402
from mpilab.history import db, detect  # noqa: E402

NOISE_SD = 0.02
STEP = 0.10
OPS = ("p2p", "bcast", "allreduce", "scatter")
SIZES = (1, 1024, 65536, 1 << 20, 4 << 20)


def _key(op: str, size: int) -> dict[str, Any]:
    return {"op": op, "impl": "native" if op != "p2p" else "roundtrip", "timing": "max",
            "bytes": size, "ranks": 2, "pair": [0, 1] if op == "p2p" else None}


def _date(k: int) -> str:
    t = time.gmtime(1.7e9 + 86400 * k)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", t)


def fill(path: Path, runs: int, seed: int) -> int:
    """A history of `runs` nightly runs, len(OPS) x len(SIZES) measurements each."""
    rng = random.Random(seed)
    c = db.connect(path)
    c.execute("PRAGMA synchronous = NORMAL")
    prov = {"hosts": ["node0"], "mpi": "Open MPI v4.1.4", "options": {}}
    h = 1.96 * math.sqrt(2) * NOISE_SD
    for k in range(runs):
        pts = []
        for op in OPS:
            for size in SIZES:
                f = (5e-6 + 1e-9 * size) * math.exp(rng.gauss(0, NOISE_SD))
                pts.append(db.Point(_key(op, size), f, f * math.exp(-h), f * math.exp(h),
                                    [f], []))
        db.add_run(c, {**prov, "date": _date(k)}, pts, f"synthetic-{k}", f"scale-{k}")
    n = c.execute("SELECT count(*) FROM points").fetchone()[0]
    c.close()
    return int(n)


def timed(cmd: list[str], repeat: int) -> dict[str, Any]:
    walls, status = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=harness.env())
        walls.append(time.perf_counter() - t0)
        status = r.returncode
        if r.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return {"best_s": min(walls), "median_s": statistics.median(walls), "exit": status}


def scale(tmp: Path, runs: int, repeat: int) -> dict[str, Any]:
    path = tmp / "scale.sqlite"
    t0 = time.perf_counter()
    points = fill(path, runs, 1)
    fill_s = time.perf_counter() - t0
    mp = mpilab_cmd("history", "--db", str(path))
    trend = timed(mp + ["trend", "p2p:roundtrip/max/1024 *"], repeat)
    check = timed(mp + ["check"], repeat)
    noop = timed(mpilab_cmd("--version"), repeat)
    return {"runs": runs, "points": points, "fill_s": fill_s, "trend": trend, "check": check,
            "python_start_and_import_s": noop, "db_bytes": path.stat().st_size}


def concurrent(tmp: Path, rounds: int) -> dict[str, Any]:
    """`rounds` rounds of two `mpilab history add` processes started at once into one
    database, each adding a results file of its own; after each round, PRAGMA
    integrity_check and the counts of runs and points against what both added."""
    path = tmp / "conc.sqlite"
    per_file = len(make_results(ranks=2, sizes=(0, 1024))["measurements"])
    failures: list[dict[str, Any]] = []
    walls = []
    integrity_ok = 0
    for r in range(rounds):
        files = []
        for w in range(2):
            doc = make_results(ranks=2, sizes=(0, 1024), seed=2 * r + w)
            doc["models"].pop("predictions")
            doc["provenance"]["date"] = _date(2 * r + w)
            f = tmp / f"w{r}-{w}.json"
            f.write_text(json.dumps(doc))
            files.append(str(f))
        t0 = time.perf_counter()
        procs = [harness.start_mpilab("history", "--db", str(path), "add", f,
                                      stdout=subprocess.DEVNULL) for f in files]
        errs = [p.communicate(timeout=600)[1] for p in procs]
        walls.append(time.perf_counter() - t0)
        c = sqlite3.connect(path)
        integrity = c.execute("PRAGMA integrity_check").fetchone()[0]
        nruns = c.execute("SELECT count(*) FROM runs").fetchone()[0]
        npoints = c.execute("SELECT count(*) FROM points").fetchone()[0]
        c.close()
        ok = (integrity == "ok" and nruns == 2 * (r + 1) and npoints == 2 * (r + 1) * per_file
              and all(p.returncode == 0 for p in procs))
        integrity_ok += integrity == "ok"
        if not ok:
            failures.append({"round": r, "exit": [p.returncode for p in procs], "errors": errs,
                             "integrity": integrity, "runs": nruns, "points": npoints})
    return {"rounds": rounds, "processes_per_round": 2, "integrity_ok_rounds": integrity_ok,
            "failed_rounds": failures, "points_expected":
            2 * rounds * per_file, "round_wall_s_median": statistics.median(walls),
            "wall_s": sum(walls)}


def _noise(rng: random.Random, heavy: bool) -> float:
    if not heavy:
        return rng.gauss(0, NOISE_SD)
    # Student's t, 3 degrees of freedom, scaled to the same standard deviation
    t = rng.gauss(0, 1) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)
    return NOISE_SD * t / math.sqrt(3.0)


def ml_split(figs: list[float]) -> int:
    """The maximum-likelihood position of one step in the log figures (the split with the
    least within-segment sum of squares, at least 3 runs before it), knowing there is one:
    the best any detector can localise a step at on average; for comparison."""
    y = [math.log(f) for f in figs]

    def ss(xs: list[float]) -> float:
        m = statistics.fmean(xs)
        return sum((x - m) ** 2 for x in xs)

    return min(range(detect.MIN_SEGMENT, len(y)), key=lambda k: ss(y[:k]) + ss(y[k:]))


def detection(trials: int, nights: int, seed: int, heavy: bool) -> dict[str, Any]:
    rng = random.Random(seed)
    h = 1.96 * math.sqrt(2) * NOISE_SD
    right, wrong_run, missed, alarms, ml_right = 0, 0, 0, 0, 0
    cases = []
    for with_step in (True, False):
        for _ in range(trials):
            at = rng.randrange(nights // 2, nights) if with_step else None
            figs = [1e-5 * math.exp(_noise(rng, heavy))
                    * (1 + STEP if at is not None and k >= at else 1.0) for k in range(nights)]
            v = detect.check_latest(figs, [f * math.exp(-h) for f in figs],
                                    [f * math.exp(h) for f in figs], window=nights)
            ml = ml_split(figs)
            cases.append({"step_at": at, "worse": v.worse, "began": v.began, "ml_split": ml})
            if with_step:
                ml_right += ml == at
                if v.worse and v.began == at:
                    right += 1
                elif v.worse:
                    wrong_run += 1
                else:
                    missed += 1
            elif v.worse:
                alarms += 1
    return {"trials": trials, "nights": nights, "noise_sd": NOISE_SD, "heavy": heavy,
            "step": STEP, "right_run": right, "wrong_run": wrong_run, "missed": missed,
            "ml_split_right_run": ml_right,
            "alarms_without_change": alarms, "cases": cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--nights", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--heavy", action="store_true")
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--out", help="write the figures as JSON")
    a = ap.parse_args()
    out: dict[str, Any] = {"load_at_start": loadavg()}
    print(f"load at start: {out['load_at_start']}")
    with tempfile.TemporaryDirectory(prefix="history-scale-") as d:
        tmp = Path(d)
        if not a.skip_scale:
            s = scale(tmp, a.runs, a.repeat)
            out["scale"] = s
            print(f"scale: {s['runs']} runs, {s['points']} points, {s['db_bytes'] >> 20} MiB "
                  f"(filled in {s['fill_s']:.1f} s); trend {s['trend']['best_s']:.2f} s best, "
                  f"{s['trend']['median_s']:.2f} s median; check {s['check']['best_s']:.2f} s "
                  f"best, {s['check']['median_s']:.2f} s median (exit {s['check']['exit']}); "
                  f"mpilab --version {s['python_start_and_import_s']['median_s']:.2f} s")
            cw = concurrent(tmp, a.rounds)
            out["concurrent"] = cw
            print(f"concurrent: {cw['rounds']} rounds of 2 processes adding at once "
                  f"({cw['wall_s']:.1f} s, median round {cw['round_wall_s_median']:.2f} s): "
                  f"integrity ok after {cw['integrity_ok_rounds']} of {cw['rounds']} rounds, "
                  f"{len(cw['failed_rounds'])} round(s) with a failed add or a wrong count")
    if a.trials == 0:  # --trials 0: no change detection trials
        if a.out:
            write_json(a.out, out)
        return 0
    det = detection(a.trials, a.nights, a.seed, a.heavy)
    out["detection"] = det
    print(f"detection ({'t3' if a.heavy else 'lognormal'} noise sd {NOISE_SD:.0%}, "
          f"{a.nights} nights, 10% step): right run {det['right_run']} of {a.trials}, wrong "
          f"run {det['wrong_run']}, missed {det['missed']}; alarms without change "
          f"{det['alarms_without_change']} of {a.trials}; the maximum-likelihood split alone, "
          f"knowing there is a step: right run {det['ml_split_right_run']} of {a.trials}")
    if a.out:
        write_json(a.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
