#!/usr/bin/env python3
"""Does an MPICH job survive a rail fault under the path migration agents, and how long is
its pause? MPICH (Debian's 4.0.2, ch4:ucx, UCX's TCP transport) is started exactly as
`testbed run --mpi mpich` starts it (launch.job_prefix: mpiexec.mpich through the
testbed's rsh agent, UCX over TCP on the job's rail, sockets turned into MPTCP by
mptcpize). UCX binds its listening socket to one address, so the agents' joins on the
other rail need the agents' join listeners (docs/pathmig.md, MPICH). The program is a
small data-checked ping-pong between two ranks compiled with mpicc.mpich; it prints the
median round trip, and the longest one from the round trip the fault is applied at on,
before MPI_Finalize, and "finalized" after it, so a hang in MPI_Finalize (a known MPICH
problem over TCP) is told apart from a failed run. Every run has a time limit.

    MPILAB_BIN=build/bin python3 bench/pathmig_mpich.py --reps 3 --out F.json   (root)
Modes: tcp; mptcp (the in-kernel path manager, `testbed run --mptcp`); pathmig (agents, no
fault); pathmig+down, pathmig+drop (rail 0 of the first node fails after --fault-at round
trips; healed after the run); pathmig-nojl+down, pathmig-nojl+drop (agents without
join listeners).
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness import testbed_up_in
from mpilab.fsutil import atomic_write_text
from mpilab.pathmig import agents, congestion
from mpilab.pathmig import pingpong as ppm
from mpilab.testbed import faults, launch, net
from mpilab.testbed.spec import Spec
from mpilab.tools import mpi_env

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n = argc > 1 ? atoi(argv[1]) : 1000, len = argc > 2 ? atoi(argv[2]) : 65536;
    int from = argc > 3 ? atoi(argv[3]) : 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char *b = malloc((size_t)len);
    double *rtt = malloc((size_t)n * sizeof(double)), worst = 0;
    int bad = 0, worst_at = -1;
    for (int it = 0; it < n; it++) {
        if (rank == 0) {
            for (int k = 0; k < len; k++) b[k] = (unsigned char)(it * 7 + k);
            double t = MPI_Wtime();
            MPI_Send(b, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(b, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            rtt[it] = MPI_Wtime() - t;
            if (it >= from && rtt[it] > worst) { worst = rtt[it]; worst_at = it; }
            for (int k = 0; k < len; k++) bad += b[k] != (unsigned char)(it * 7 + k + 1);
            if ((it + 1) % 100 == 0) { printf("progress %d\n", it + 1); fflush(stdout); }
        } else if (rank == 1) {
            MPI_Recv(b, len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int k = 0; k < len; k++) b[k]++;
            MPI_Send(b, len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) {
        qsort(rtt, (size_t)n, sizeof(double), cmp);
        printf("rtt median_ms %.4f max_ms %.4f at %d\n", 1e3 * rtt[n / 2], 1e3 * worst,
               worst_at);
        printf(bad ? "pingpong BAD %d\n" : "pingpong ok\n", bad);
        fflush(stdout);
    }
    MPI_Finalize();
    if (rank == 0) { printf("finalized\n"); fflush(stdout); }
    free(b);
    free(rtt);
    return bad != 0;
}
"""


def build(work: Path) -> Path:
    cc = shutil.which("mpicc.mpich")
    if not cc:
        sys.exit("pathmig_mpich: mpicc.mpich not found (apt package mpich)")
    src, exe = work / "pp.c", work / "pp-mpich"
    src.write_text(PROGRAM)
    subprocess.run([cc, "-O2", "-o", str(exe), str(src)], check=True)
    return exe


def run(sp: Spec, exe: Path, mode: str, iters: int, nbytes: int, fault_at: int,
        limit: float, events: Path) -> dict[str, object]:
    hosts = ["s0n0", "s1n0"]
    agents.stop(sp)
    agents.clear_logs(sp)
    base, _, fmode = mode.partition("+")
    mptcp = base != "tcp"
    pathmig = base.startswith("pathmig")
    for n in hosts:  # no path manager left over from the previous mode
        net.sh(["ip", "netns", "exec", sp.ns(n), "sysctl", "-qw", "net.mptcp.pm_type=0"])
        net.sh(["ip", "-n", sp.ns(n), "mptcp", "endpoint", "flush"])
    if pathmig:
        agents.start(sp, hosts=hosts,
                     extra=["--no-join-listeners"] if base == "pathmig-nojl" else [])
    # every mode under the congestion control of MPTCP runs (cubic), TCP too
    cmd = launch.job_prefix(sp, 2, ",".join(hosts), mptcp, None, pathmig,
                            congestion.MPTCP_DEFAULT, "mpich")
    cmd += [str(exe), str(iters), str(nbytes), str(fault_at if fmode else 0)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, env=mpi_env())
    assert p.stdout is not None
    lines: list[str] = []
    fault: dict[str, object] = {}
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    hung = False
    while True:
        left = t0 + limit - time.monotonic()
        if left <= 0:
            hung = True
            break
        if not sel.select(timeout=min(1.0, left)):
            if p.poll() is not None:
                break
            continue
        ln = p.stdout.readline()
        if not ln:
            break
        lines.append(ln.strip())
        if fmode and ln.strip() == f"progress {fault_at}" and not fault:
            faults.fail(sp, "s0n0:0", fmode)
            fault = {"target": "s0n0:0", "mode": fmode}
    if hung:
        os.killpg(p.pid, 9)
    p.wait()
    err = p.stderr.read() if p.stderr else ""
    faults.heal(sp, None)
    agents.stop(sp)
    ev = agents.events(sp) if pathmig else []
    if ev:
        atomic_write_text(events, "".join(json.dumps(e) + "\n" for e in ev))
    rtt = next((ln.split() for ln in lines if ln.startswith("rtt ")), None)
    jl = [e for e in ev if e["event"] == "join_listener"]
    out = {"mode": mode, "rc": p.returncode, "seconds": round(time.monotonic() - t0, 2),
           "pingpong_ok": "pingpong ok" in lines, "finalized": "finalized" in lines,
           "hung": hung, "fault": fault,
           "median_ms": float(rtt[2]) if rtt else None,
           "max_ms": float(rtt[4]) if rtt and fmode else None,
           "max_at": int(rtt[6]) if rtt and fmode else None,
           "migrations": sum(1 for e in ev if e["event"] == "state" and e["to"] == "MIGRATED"
                             and e.get("from") == "ARMED"),
           "armed": sum(1 for e in ev if e["event"] == "state" and e["to"] == "ARMED"),
           "join_listeners": {r: sum(1 for e in jl if e["result"] == r)
                              for r in sorted({str(e["result"]) for e in jl})},
           "failed_actions": agents.failed_actions(ev)[0] if ev else 0,
           "stderr": err.strip()[-400:]}
    out["verdict"] = ("ok" if out["pingpong_ok"] and out["finalized"] and p.returncode == 0
                      else "finalize hang" if out["pingpong_ok"] and hung
                      else "hung" if hung else "failed")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--bytes", type=int, default=65536)
    ap.add_argument("--fault-at", type=int, default=300, help="round trip of the fault")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per run")
    ap.add_argument("--modes", default="tcp,pathmig,pathmig+down,pathmig+drop")
    ap.add_argument("--prefix", default="pmmpi")
    ap.add_argument("--work", default="/tmp/pathmig-mpich")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    exe = build(work)
    sp = testbed_up_in(work, a.prefix, ppm.SPEC_2X1)
    runs = []
    try:
        for rep in range(a.reps):
            for mode in a.modes.split(","):
                rec = run(sp, exe, mode, a.iters, a.bytes, a.fault_at, a.limit,
                          work / f"ev-{rep}-{mode}.jsonl") | {"rep": rep}
                runs.append(rec)
                print(json.dumps(rec), flush=True)
    finally:
        agents.stop(sp)
        net.down(a.prefix)
    summary = {m: {v: sum(1 for r in runs if r["mode"] == m and r["verdict"] == v)
                   for v in ("ok", "finalize hang", "hung", "failed")}
               for m in a.modes.split(",")}
    doc = {"runs": runs, "summary": summary}
    atomic_write_text(Path(a.out), json.dumps(doc, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
