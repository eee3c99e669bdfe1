#!/usr/bin/env python3
"""Does an MPICH job run over the testbed's rails under MPTCP, with the path migration
agents, and survive a fault? MPICH (Debian's 4.0.2, ch4:ucx, UCX's TCP transport) is
started with mpiexec.mpich through the testbed's rsh agent (UCX over TCP only: with shared
memory UCX joins the namespaces' ranks through /dev/shm), its sockets turned into MPTCP
by mptcpize, exactly as `testbed run --mptcp/--pathmig` does for Open MPI. The program is
a small data-checked ping-pong between two ranks compiled with mpicc.mpich; it prints
"pingpong ok" before MPI_Finalize and "finalized" after it, so a hang in MPI_Finalize (a
known MPICH problem over TCP) is told apart from a failed run. Every run has a time limit.

    python3 bench/pathmig_mpich.py --reps 3 --out F.json      (needs root; not timed)
Modes: tcp, mptcp (in-kernel path manager, both rails), pathmig (agents), pathmig+fault
(rail 0 of the first node fails after 300 round trips, link down or silent drop).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python"))

from mpilab.fsutil import atomic_write_text  # noqa: E402
from mpilab.pathmig import agents, congestion  # noqa: E402
from mpilab.testbed import faults, launch, net  # noqa: E402
from mpilab.testbed.spec import Spec  # noqa: E402
from pathmig_pause import testbed  # noqa: E402

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n = argc > 1 ? atoi(argv[1]) : 1000, len = argc > 2 ? atoi(argv[2]) : 65536;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char *b = malloc((size_t)len);
    int bad = 0;
    for (int it = 0; it < n; it++) {
        if (rank == 0) {
            for (int k = 0; k < len; k++) b[k] = (unsigned char)(it * 7 + k);
            MPI_Send(b, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(b, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int k = 0; k < len; k++) bad += b[k] != (unsigned char)(it * 7 + k + 1);
            if ((it + 1) % 100 == 0) { printf("progress %d\n", it + 1); fflush(stdout); }
        } else if (rank == 1) {
            MPI_Recv(b, len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int k = 0; k < len; k++) b[k]++;
            MPI_Send(b, len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) { printf(bad ? "pingpong BAD %d\n" : "pingpong ok\n", bad); fflush(stdout); }
    MPI_Finalize();
    if (rank == 0) { printf("finalized\n"); fflush(stdout); }
    free(b);
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


def run(sp: Spec, exe: Path, mode: str, iters: int, limit: float, work: Path
        ) -> dict[str, object]:
    hosts = ["s0n0", "s1n0"]
    agents.stop(sp)
    agents.clear_logs(sp)
    mptcp = mode != "tcp"
    congestion.apply(sp, hosts, congestion.MPTCP_DEFAULT)  # every mode alike
    for n in hosts:
        net.sh(["ip", "netns", "exec", sp.ns(n), "sysctl", "-qw", "net.mptcp.pm_type=0"])
        net.sh(["ip", "-n", sp.ns(n), "mptcp", "endpoint", "flush"])
    if mode == "mptcp":
        launch.setup_mptcp(sp, hosts)
    elif mode.startswith("pathmig"):
        agents.start(sp, hosts=hosts)
    agent = launch.write_agent(sp, mptcp)
    cmd = ["ip", "netns", "exec", sp.ns("s0n0"), "env", "UCX_TLS=tcp,self",
           "UCX_NET_DEVICES=r0", "HYDRA_LAUNCHER_EXEC=" + str(agent),
           *(["mptcpize", "run"] if mptcp else []),
           "mpiexec.mpich", "-launcher", "rsh", "-launcher-exec", str(agent),
           "-hosts", ",".join(sp.addr(h, 0) for h in hosts), "-np", "2",
           "-ppn", "1", "-genv", "UCX_TLS", "tcp,self", "-genv", "UCX_NET_DEVICES", "r0",
           str(exe), str(iters), "65536"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    assert p.stdout is not None
    lines: list[str] = []
    fault: dict[str, object] = {}
    os.set_blocking(p.stdout.fileno(), True)
    import selectors
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
        if mode == "pathmig+fault" and ln.startswith("progress 300") and not fault:
            m = "down" if len(lines) % 2 else "drop"
            faults.fail(sp, "s0n0:0", m)
            fault = {"target": "s0n0:0", "mode": m}
    if hung:
        os.killpg(p.pid, 9)
    p.wait()
    err = p.stderr.read() if p.stderr else ""
    faults.heal(sp, None)
    ev = agents.events(sp) if mode.startswith("pathmig") else []
    agents.stop(sp)
    out = {"mode": mode, "rc": p.returncode, "seconds": round(time.monotonic() - t0, 2),
           "pingpong_ok": "pingpong ok" in lines, "finalized": "finalized" in lines,
           "hung": hung, "fault": fault,
           "migrations": sum(1 for e in ev if e["event"] == "state" and e["to"] == "MIGRATED"
                             and e.get("from") == "ARMED"),
           "armed": sum(1 for e in ev if e["event"] == "state" and e["to"] == "ARMED"),
           "stderr": err.strip()[-400:]}
    out["verdict"] = ("ok" if out["pingpong_ok"] and out["finalized"] and p.returncode == 0
                      else "finalize hang" if out["pingpong_ok"] and hung
                      else "hung" if hung else "failed")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per run")
    ap.add_argument("--modes", default="tcp,mptcp,pathmig,pathmig+fault")
    ap.add_argument("--prefix", default="pmmpich")
    ap.add_argument("--work", default="/tmp/pathmig-mpich")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    exe = build(work)
    sp = testbed(a.prefix, work)
    runs = []
    try:
        for rep in range(a.reps):
            for mode in a.modes.split(","):
                rec = run(sp, exe, mode, a.iters, a.limit, work) | {"rep": rep}
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
