#!/usr/bin/env python3
"""Injected link faults without --mptcp: does every job end in bounded time, with one line
saying why, and leave nothing behind?

For each of N jobs (default 50): `mpilab testbed run` starts the ping-pong between two nodes
of different sites (no --mptcp, so a failed rail-0 link stalls it); once the job has shown
K progress lines (K random, seeded) a fault is injected on a link the job uses (random
host of the two, rail 0, mode down or drop); the job must then end by itself. Most jobs use
the fault watch (--fault-grace G); every fifth has --fault-grace none, so only its time
limit (--timeout T) ends it. Checked per job: it ended within T + 10 s of its start (the
start of its first process, as mpilab's time limit counts; the Python start-up of mpilab
itself, seconds on a loaded machine, is shown beside it), its
stderr has exactly one `mpilab: run:` line naming the failed link (or the time limit), and
no process of the job is left (by job tag and in the node namespaces). Healed after each.

    sudo python3 bench/testbed_faults.py --testbed PREFIX [--jobs 50] [--seed 1]
             [--timeout 60] [--grace 5]

The testbed needs >= 2 sites (examples: the default spec). Prints one line per job and a
summary; exit 0 when every job passed.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import selectors
import subprocess
import sys
import time
from pathlib import Path

import harness
from harness import REPO, find_tool, mpilab_cmd
from mpilab.testbed import faults, jobctl, net
from mpilab.testbed.spec import Spec


def left_behind(prefix: str, nodes: list[str], ns_of: dict[str, str]) -> list[int]:
    out = set(jobctl.job_pids(f"{prefix}-", prefix_only=True))
    for n in nodes:
        out.update(net.ns_pids(ns_of[n]))
    return sorted(out)


def job_start(prefix: str, mpilab_pid: int) -> float | None:
    """CLOCK_BOOTTIME seconds at which the job's first process (the launcher mpilab
    started) began: the instant its time limit counts from, without the Python start-up."""
    tick = os.sysconf("SC_CLK_TCK")
    starts = []
    for pid in jobctl.job_pids(f"{prefix}-{mpilab_pid}-", prefix_only=True):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        starts.append(int(stat[19]) / tick)
    return min(starts) if starts else None


def one_job(k: int, rng: random.Random, a: argparse.Namespace, sp: Spec,
            env: dict[str, str]) -> tuple[bool, str]:
    nodes = sp.node_names()
    a_host = rng.choice([n for n in nodes if n.startswith("s0")])
    b_host = rng.choice([n for n in nodes if n.startswith("s1")])
    victim = rng.choice([a_host, b_host])
    mode = rng.choice(faults.kind_names())
    after = rng.randint(1, 4)
    watch = k % 5 != 4  # every fifth job: no fault watch, the time limit must end it
    timeout = a.timeout if watch else a.timeout_only
    args = mpilab_cmd("testbed", "run", "--prefix", sp.prefix, "--hosts", f"{a_host},{b_host}",
                      "--timeout", str(timeout), "--fault-grace",
                      str(a.grace) if watch else "none", "--", find_tool("mpilab-tb-pingpong"),
                      "--count", "1000000000", "--bytes", "20000", "--progress", "20")
    tracefile = Path(a.trace_dir) / f"job{k}.trace"
    tracefile.unlink(missing_ok=True)
    t0 = time.monotonic()
    t0_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
    proc = subprocess.Popen(args, env=dict(env, **{jobctl.TRACE_ENV: str(tracefile)}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    seen = 0
    injected = None
    injected_boot = 0.0
    started: float | None = None
    while proc.poll() is None and time.monotonic() - t0 < timeout + 60:
        if sel.select(timeout=0.5):
            line = proc.stdout.readline()
            if not line:
                break
            if re.match(r"pingpong \S+ iteration", line):
                seen += 1
                if seen == after and injected is None:
                    started = job_start(sp.prefix, proc.pid)
                    faults.fail(sp, f"{victim}:0", mode)
                    injected = time.monotonic()
                    injected_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
                    break
    try:
        _, err = proc.communicate(timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return False, f"job {k}: mpilab itself did not end ({timeout + 60:g} s)"
    ended_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
    whole = time.monotonic() - t0
    ran = ended_boot - started if started is not None else whole
    faults.heal(sp, None)
    time.sleep(0.3)
    left = left_behind(sp.prefix, nodes, {n: sp.ns(n) for n in nodes})
    mine = [ln for ln in err.splitlines() if ln.startswith("mpilab: run:")]
    why = mine[0] if len(mine) == 1 else f"{len(mine)} mpilab lines: {mine}"
    ok = (injected is not None and ran <= timeout + 10 and len(mine) == 1 and not left
          and (f"link {victim}:0" in why if watch else "did not finish within" in why))
    detail = (f"job {k:2}: {'ok ' if ok else 'BAD'} {'watch' if watch else 'limit'} "
              f"{mode:4} {victim}:0 after {after} lines; job ran {ran:5.1f} s "
              f"(limit {timeout:g}+10; mpilab {whole:5.1f} s with start-up), "
              f"{'-' if injected is None else f'{time.monotonic() - injected:4.1f}'} s after "
              f"the fault; left {len(left)}; {why}")
    if not ok:  # the timeline, seconds from the start of the job's first process
        zero = started if started is not None else t0_boot
        events = [(t0_boot, "mpilab started (bench)"), (injected_boot, "fault injected"),
                  (ended_boot, "mpilab ended (bench)")] if injected else []
        try:
            for ln in tracefile.read_text().splitlines():
                t, _, ev = ln.split(" ", 2)
                events.append((float(t), "jobctl: " + ev))
        except (OSError, ValueError):
            events.append((zero, "(no jobctl trace)"))
        detail += "".join(f"\n    {t - zero:+7.2f} s  {ev}" for t, ev in sorted(events))
    return ok, detail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--testbed", required=True, metavar="PREFIX")
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="--timeout of the jobs with the fault watch")
    ap.add_argument("--timeout-only", type=float, default=25.0,
                    help="--timeout of the jobs without it")
    ap.add_argument("--grace", type=float, default=5.0)
    ap.add_argument("--trace-dir", default="/tmp",
                    help="where the jobs' jobctl timelines go (printed for a job that fails)")
    a = ap.parse_args(argv)
    sp = net.current_spec(a.testbed)
    if sp.sites < 2:
        ap.error("the testbed needs at least 2 sites")
    env = harness.env()
    rng = random.Random(a.seed)
    good = 0
    t0 = time.monotonic()
    for k in range(a.jobs):
        ok, detail = one_job(k, rng, a, sp, env)
        good += ok
        print(detail, flush=True)
    print(f"\n{good}/{a.jobs} jobs ended within their limit + 10 s with one line naming the "
          f"cause and nothing left behind ({time.monotonic() - t0:.0f} s)")
    return 0 if good == a.jobs else 1


if __name__ == "__main__":
    sys.exit(main())
