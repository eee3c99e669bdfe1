#!/usr/bin/env python3
"""The no-fault cost of path migration for bulk transfers: osu_bw (OSU Micro-Benchmarks,
built outside the tree) at 1 MiB between two nodes of a 2 x 1 x 2 testbed (1 Gbit/s,
1 ms WAN delay), unmodified, Open MPI, in configurations interleaved round by round:

  tcp        plain TCP under cubic (`testbed run --congestion cubic`)
  tcp-qa     the same with the quickack route metric `--pathmig` sets (its cost alone)
  raw1       MPTCP with one subflow and no agent (no path manager: the MPTCP floor), cubic
             and quickack as under --pathmig
  pathmig    `testbed run --pathmig` as it runs (agents, a backup subflow per connection)

    MPILAB_BIN=build/bin python3 bench/pathmig_bw.py --osu-bw PATH --rounds 3 --out F.json
Prints each run's bandwidth and, per round, pathmig against tcp and against raw1.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python"))

from mpilab.fsutil import atomic_write_text  # noqa: E402
from mpilab.pathmig import agents, congestion  # noqa: E402
from mpilab.testbed import launch, net  # noqa: E402
from mpilab.testbed.spec import Spec  # noqa: E402
from mpilab.tools import mpi_env  # noqa: E402
from pathmig_pause import testbed  # noqa: E402

HOSTS = ["s0n0", "s1n0"]
CONFIGS = ("tcp", "tcp-qa", "raw1", "pathmig")


def one(sp: Spec, cfg: str, osu: str, size: int, iters: int, warmup: int) -> dict[str, Any]:
    agents.stop(sp)
    agents.clear_logs(sp)
    mptcp = cfg in ("raw1", "pathmig")
    for n in HOSTS:  # no path manager, no endpoints: one subflow unless the agents add one
        net.sh(["ip", "netns", "exec", sp.ns(n), "sysctl", "-qw", "net.mptcp.pm_type=0"])
        net.sh(["ip", "-n", sp.ns(n), "mptcp", "endpoint", "flush"])
    if cfg == "pathmig":
        agents.start(sp, hosts=HOSTS)
    # pathmig=True also for raw1: the job is set up as --pathmig sets it up (no in-kernel
    # endpoints), only no agent runs
    cmd = launch.job_prefix(sp, 2, ",".join(HOSTS), mptcp, None, mptcp,
                            congestion.MPTCP_DEFAULT, "openmpi")
    if cfg == "tcp-qa":
        congestion.apply(sp, HOSTS, congestion.MPTCP_DEFAULT, quickack=True)
    cmd += [osu, "-m", f"{size}:{size}", "-i", str(iters), "-x", str(warmup)]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=300)
    agents.stop(sp)
    bw = None
    for ln in p.stdout.splitlines():
        f = ln.split()
        if len(f) == 2 and f[0] == str(size):
            bw = float(f[1])
    return {"config": cfg, "rc": p.returncode, "MBps": bw,
            "seconds": round(time.monotonic() - t0, 2), "stderr": p.stderr.strip()[-300:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--osu-bw", required=True, help="the osu_bw program (built for Open MPI)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--iters", type=int, default=20, help="osu_bw -i")
    ap.add_argument("--warmup", type=int, default=2, help="osu_bw -x")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--prefix", default="pmtbw")
    ap.add_argument("--work", default="/tmp/pathmig-bw")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cfgs = a.configs.split(",")
    bad = [c for c in cfgs if c not in CONFIGS]
    if bad:
        sys.exit(f"--configs: unknown {', '.join(bad)} (have {', '.join(CONFIGS)})")
    if not Path(a.osu_bw).is_file():
        sys.exit(f"--osu-bw {a.osu_bw}: no such file")
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    sp = testbed(a.prefix, Path(a.work))
    runs: list[dict[str, Any]] = []
    try:
        for rnd in range(a.rounds):
            order = cfgs[rnd % len(cfgs):] + cfgs[:rnd % len(cfgs)]  # rotate the order
            for cfg in order:
                rec = one(sp, cfg, a.osu_bw, a.size, a.iters, a.warmup) | {"round": rnd}
                runs.append(rec)
                print(json.dumps(rec), flush=True)
    finally:
        agents.stop(sp)
        net.down(a.prefix)
    by = {(r["round"], r["config"]): r["MBps"] for r in runs if r["MBps"]}
    ratios: dict[str, list[float]] = {}
    for ref in ("tcp", "tcp-qa", "raw1"):
        if ref in cfgs and "pathmig" in cfgs:
            ratios[f"pathmig/{ref}"] = [
                round(by[(k, "pathmig")] / by[(k, ref)] - 1, 4) for k in range(a.rounds)
                if (k, "pathmig") in by and (k, ref) in by]
    if "tcp" in cfgs:
        for c in ("tcp-qa", "raw1"):
            if c in cfgs:
                ratios[f"{c}/tcp"] = [round(by[(k, c)] / by[(k, "tcp")] - 1, 4)
                                      for k in range(a.rounds)
                                      if (k, c) in by and (k, "tcp") in by]
    summary = {"loadavg": load, "median_MBps": {
        c: statistics.median([r["MBps"] for r in runs if r["config"] == c and r["MBps"]])
        for c in cfgs if any(r["config"] == c and r["MBps"] for r in runs)},
        "paired_slowdown": ratios}
    atomic_write_text(Path(a.out), json.dumps({"runs": runs, "summary": summary}, indent=1)
                      + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
