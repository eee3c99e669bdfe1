#!/usr/bin/env python3
"""The gate's target: one command, `mpilab diff --run A B --pairs N --max-pairs M --time-limit T
--fail-above 5%`, flags an injected 10% slowdown at every affected size and at no other, in 5
of 5 trials, each in under 2 minutes of wall time; and 10 identical pairs give 0 false
alarms.

Per trial, A and B are the same launch command (one mpirun of mpilab-bench, bcast:inj and
allreduce:inj of bench/tune_inject.c at --sizes, Open MPI told its on-node transport with
--mca pml ob1 --mca btl self,vader: the one it selects here anyway, named so that MPI_Init
does not spend 0.2 s probing the UCX PML it cannot select, two thirds of a launch; --runner
wrapper goes through `mpilab bench --launches 1`, --mca '' leaves Open MPI to probe); B's
environment sets MPILAB_INJECT_BCAST=SLOWDOWN and MPILAB_INJECT_MIN_BYTES=MIN (bcast spins
for that fraction of each call's own duration at MIN bytes and above), or nothing in an
identical trial. mpilab diff --run alternates the launches (A B B A ...) and tests each
measurement on the per-pair log ratios of the launch medians (each measurement at most
--max-reps repetitions a launch: the launch's median is what the test uses); with
--max-pairs it looks after N pairs and every N more up to M (each look at alpha 0.05 /
looks) and measures more pairs only while some measurement is undecided (--max-pairs 0: one
look at N pairs). A trial with injection passes when every bcast size >= MIN is "SLOWER
beyond 5%", nothing else is flagged and the exit is 1; an identical trial passes when
nothing is flagged and the exit is 0. Prints one line per trial (its pairs and wall time)
and the counts; --out keeps the JSON.

    MPILAB_BIN=build/bin python3 bench/tune_diff_inject.py --trials 5 --identical 10 \
        --pairs 40 --max-pairs 120 --time-limit 110 --dir D

--dir keeps every trial; a trial already there is not run again (a run longer than one
bench slot continues in the next).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import REPO, loadavg, mpilab_cmd, mpirun, tool, write_json
from harness import env as harness_env
from mpilab import units


def run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)


def launch_command(so: Path, a: argparse.Namespace) -> str:
    """The command A and B both run: one launch of the runner writing {out}."""
    runner = ["--entries", str(so), "--ops", "bcast:inj,allreduce:inj", "--sizes", a.sizes,
              "--time-budget", a.budget, "--max-reps", str(a.max_reps), "--no-fit", "--quiet",
              "--out"]
    mca = [x for kv in a.mca.split() for x in ("--mca", *kv.split("=", 1))]
    if a.runner == "direct":
        argv = [*mpirun(a.np, mca), tool("mpilab-bench"), *runner]
    else:
        argv = mpilab_cmd("bench", "--np", str(a.np), "--launches", "1", "--variation-store",
                          "none", "--quiet-launches",
                          *[f"--launcher-arg={x}" for x in mca], "--", *runner)
    return " ".join(shlex.quote(x) for x in argv) + " {out}"


def trial(name: str, d: Path, so: Path, a: argparse.Namespace, inject: bool) -> dict:
    cmd_a = launch_command(so, a)
    cmd_b = (f"env MPILAB_INJECT_BCAST={a.slowdown} MPILAB_INJECT_MIN_BYTES={a.min_bytes} "
             f"{cmd_a}" if inject else cmd_a)
    keep = d / name
    shutil.rmtree(keep, ignore_errors=True)
    t0 = time.monotonic()
    seq = (["--max-pairs", str(a.max_pairs), "--time-limit", str(a.time_limit)]
           if a.max_pairs else [])
    p = run(mpilab_cmd("diff", "--run", cmd_a, cmd_b, "--pairs", str(a.pairs), *seq,
                       "--fail-above", "5%", "--variation-store", "none", "--quiet",
                       "--keep", str(keep)), harness_env())
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1):
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(2)
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith(("bcast", "allreduce"))]
    looks = [ln for ln in p.stdout.splitlines() if ln.startswith("mpilab diff: look")]
    used = len(list(keep.glob("a.[0-9]*.json")))  # the pairs measured (every launch kept)
    flagged = [ln for ln in rows if "SLOWER" in ln]
    affected = [ln for ln in rows if inject and ln.startswith("bcast")
                and int(ln.split()[2]) >= a.min_bytes]
    hit = [ln for ln in affected if "SLOWER" in ln]
    false = [ln for ln in flagged if ln not in affected]
    ok = (len(hit) == len(affected) and not false
          and p.returncode == (1 if inject else 0) and (not inject or affected != []))
    return {"trial": name, "inject": inject, "pairs": used,
            "looks": looks, "wall_s": round(wall, 1),
            "affected": len(affected), "flagged": len(hit), "false_flags": len(false),
            "exit": p.returncode, "pass": ok, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5, help="trials with the slowdown")
    ap.add_argument("--identical", type=int, default=10, help="trials with A = B")
    ap.add_argument("--pairs", type=int, default=40, help="pairs before the first look")
    ap.add_argument("--max-pairs", type=int, default=120, help="pairs at most (0: one look)")
    ap.add_argument("--time-limit", type=float, default=110.0,
                    help="seconds: no further look whose pairs would end after it")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--slowdown", type=float, default=0.10)
    ap.add_argument("--min-bytes", default="16K")
    ap.add_argument("--sizes", default="1K,4K,16K,64K,256K")
    ap.add_argument("--budget", default="1s")
    ap.add_argument("--max-reps", type=int, default=4096,
                    help="repetitions at most per measurement and launch (a launch lends the "
                         "paired test its median; a measurement that does not converge stops "
                         "here, not at its 0.1 s)")
    ap.add_argument("--runner", choices=("direct", "wrapper"), default="direct",
                    help="direct: mpirun starts mpilab-bench itself; wrapper: through "
                         "`mpilab bench --launches 1` (about 0.15 s more a launch)")
    ap.add_argument("--mca", default="pml=ob1 btl=self,vader",
                    help="Open MPI parameters of both commands, space-separated NAME=VALUE "
                         "('' for none). The default names the on-node transport Open MPI "
                         "picks anyway, so a launch skips probing the others")
    ap.add_argument("--out")
    ap.add_argument("--dir", help="keep every trial here; a trial already there is not run "
                                  "again (a run longer than one bench slot continues)")
    a = ap.parse_args()
    a.min_bytes = int(units.parse_size(a.min_bytes))
    d = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="tune-inject-"))
    d.mkdir(parents=True, exist_ok=True)
    print(f"load at start: {loadavg()}")
    so = d / "inj.so"
    cc = run(["mpicc", "-shared", "-fPIC", "-O2", f"-I{REPO / 'include'}",
              f"-I{REPO / 'build' / 'include'}", str(REPO / "bench" / "tune_inject.c"),
              "-o", str(so)])
    if cc.returncode != 0:
        sys.stderr.write(cc.stderr)
        return 2
    results = []
    plan = [(f"slow{t}", True) for t in range(1, a.trials + 1)] \
        + [(f"same{t}", False) for t in range(1, a.identical + 1)]
    for name, inject in plan:
        done = d / f"{name}.result.json"
        kept = done.is_file()
        r = json.loads(done.read_text()) if kept else trial(name, d, so, a, inject)
        if not kept:
            write_json(str(done), r)
        results.append(r)
        what = (f"{r['flagged']} of {r['affected']} slowed sizes flagged, " if inject else "")
        print(f"{name}{' (kept)' if kept else ''}: {r['pairs']} pairs, {r['wall_s']:.0f} s, "
              f"{what}{r['false_flags']} other flagged, exit {r['exit']}: "
              f"{'PASS' if r['pass'] else 'FAIL'}")
        if not r["pass"]:
            for ln in r["rows"]:
                print("   ", ln)
        sys.stdout.flush()
    print(f"load at the end: {loadavg()}")
    slow = [r for r in results if r["inject"]]
    same = [r for r in results if not r["inject"]]
    alarms = sum(r["false_flags"] > 0 or r["exit"] != 0 for r in same)
    print(f"slowdown found: {sum(r['pass'] for r in slow)} of {len(slow)} trials "
          f"(longest {max((r['wall_s'] for r in slow), default=0):.0f} s); "
          f"identical pairs with a false alarm: {alarms} of {len(same)} "
          f"(longest {max((r['wall_s'] for r in same), default=0):.0f} s)")
    if a.out:
        write_json(a.out, results)
    if not a.dir:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
