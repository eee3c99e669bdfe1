#!/usr/bin/env python3
"""Many seeded random faults against running jobs (the issue's target: 100 injected faults,
0 bytes lost, 0 hung jobs, every result correct). Each run is a ping-pong over MPTCP
connections with the agents (every byte checked by the program, --stall watchdog); once
it has made progress, a seeded plan of non-overlapping faults (either rail of either
node, link down or silent drop, healed after 0.5-1.5 s) runs against it. A run is hung if
it does not finish within --timeout.

    MPILAB_BIN=build/bin python3 bench/pathmig_faults.py --runs 10 --faults 10 --out F.json
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python"))

from mpilab.fsutil import atomic_write_text  # noqa: E402
from mpilab.pathmig import agents, inject  # noqa: E402
from mpilab.pathmig import pingpong as ppm  # noqa: E402
from mpilab.pathmig.pingpong import Step  # noqa: E402
from mpilab.testbed import faults, net  # noqa: E402
from pathmig_pause import testbed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--faults", type=int, default=10, help="faults per run")
    ap.add_argument("--within", type=float, default=30.0, help="seconds per plan")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--bytes", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--prefix", default="pmflt")
    ap.add_argument("--work", default="/tmp/pathmig-faults")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    sp = testbed(a.prefix, work)
    runs = []
    try:
        for k in range(a.runs):
            seed = a.seed + k
            plan = inject.make_plan(seed, sp.node_names(), list(range(sp.rails)), a.faults,
                                    a.within, duration=(0.5, 1.5))
            agents.stop(sp)
            agents.clear_logs(sp)
            agents.start(sp)
            done = threading.Event()
            applied: list[dict[str, object]] = []
            def injector(p: list[inject.Fault] = plan, out: list[dict[str, object]] = applied,
                         ev: threading.Event = done) -> None:
                out.extend(inject.run_plan(sp, p, stop=ev.is_set))

            th = threading.Thread(target=injector)
            r = ppm.run(sp, "s0n0", "s1n0", work / "pp", connections=a.connections,
                        nbytes=a.bytes, iters=a.iters, timeout=a.timeout,
                        steps=[Step(200, "call", fn=th.start)])
            done.set()
            if th.is_alive() or th.ident is not None:
                th.join()
            faults.heal(sp, None)
            nfail = sum(1 for e in applied if e["event"] == "fail")
            evs = agents.events(sp)
            rec = {"run": k, "seed": seed, "rc": r.rc, "hung": r.hung,
                   "verified": r.summary.get("verified", False),
                   "iterations": r.summary.get("iterations"), "faults_applied": nfail,
                   "migrations": sum(1 for e in evs if e["event"] == "state"
                                     and e["from"] == "ARMED" and e["to"] == "MIGRATED"),
                   "failed_actions": sum(1 for e in evs if e["event"] == "action"
                                         and not e["ok"]),
                   "max_rtt": r.summary.get("max_rtt"), "stderr": r.stderr.strip()[-300:]}
            runs.append(rec)
            print(json.dumps(rec), flush=True)
    finally:
        agents.stop(sp)
        net.down(a.prefix)
    total = {"runs": len(runs), "faults": sum(r["faults_applied"] for r in runs),
             "correct": sum(1 for r in runs if r["rc"] == 0 and r["verified"]),
             "hung": sum(1 for r in runs if r["hung"])}
    doc = {"summary": total, "runs": runs}
    atomic_write_text(Path(a.out), json.dumps(doc, indent=1) + "\n")
    print(json.dumps(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
