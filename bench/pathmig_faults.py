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

from harness import testbed_up_in
from mpilab.fsutil import atomic_write_text
from mpilab.pathmig import agents, congestion, inject
from mpilab.pathmig import pingpong as ppm
from mpilab.pathmig.pingpong import Step
from mpilab.testbed import faults, net


def around_max(max_at: object, applied: list[dict[str, object]],
               evs: list[dict[str, object]], window: float) -> dict[str, object]:
    """What happened before the longest round trip ended (`max_at`, wall clock): the faults
    and heals and the agents' path, state and failed-action events in the `window` seconds
    before it, each with its time relative to max_at. Explains a long pause after the run."""
    if not isinstance(max_at, (int, float)) or max_at <= 0:
        return {}
    t = float(max_at)

    def near(e: dict[str, object]) -> bool:
        return isinstance(e.get("time"), (int, float)) and \
            t - window <= float(e["time"]) <= t + 0.05  # type: ignore[arg-type]
    keep = ("node", "event", "target", "mode", "peer", "rail", "up", "cause", "token", "from",
            "to", "kind", "ok", "error", "moot")
    out = []
    for e in [x for x in applied if near(x)] + [
            x for x in evs if near(x) and (x.get("event") in ("path", "state", "link")
                                           or (x.get("event") == "action"
                                               and not x.get("ok")))]:
        out.append({"dt": round(float(e["time"]) - t, 4),  # type: ignore[arg-type]
                    **{k: e[k] for k in keep if k in e}})
    out.sort(key=lambda e: float(e["dt"]))  # type: ignore[arg-type]
    return {"max_rtt_at": t, "before_max": out}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--faults", type=int, default=10, help="faults per run")
    ap.add_argument("--within", type=float, default=30.0, help="seconds per plan")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--bytes", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=100, help="run k uses seed SEED + k")
    ap.add_argument("--seeds", help="comma-separated seeds, one run each (instead of --runs "
                                    "and --seed: re-run chosen plans)")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--prefix", default="pmflt")
    ap.add_argument("--work", default="/tmp/pathmig-faults")
    ap.add_argument("--window", type=float, default=2.0,
                    help="record the faults and agent events this many seconds before the "
                         "longest round trip ended (its cause)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        seeds = ([int(x) for x in a.seeds.split(",")] if a.seeds
                 else [a.seed + k for k in range(a.runs)])
    except ValueError:
        sys.exit(f"--seeds {a.seeds}: expected comma-separated integers")
    work = Path(a.work)
    sp = testbed_up_in(work, a.prefix, ppm.SPEC_2X1)
    # as --pathmig runs
    congestion.apply(sp, sp.node_names(), congestion.MPTCP_DEFAULT, quickack=True)
    congestion.send_buffers(sp, sp.node_names(), True)
    runs = []
    try:
        for k, seed in enumerate(seeds):
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
                   "failed_actions": agents.failed_actions(evs)[0],
                   "moot_actions": agents.failed_actions(evs)[1],
                   "max_rtt": r.summary.get("max_rtt"), "stderr": r.stderr.strip()[-300:]}
            rec.update(around_max(r.summary.get("max_rtt_at"), applied, evs, a.window))
            runs.append(rec)
            print(json.dumps(rec), flush=True)
    finally:
        agents.stop(sp)
        net.down(a.prefix)
    total = {"runs": len(runs), "faults": sum(r["faults_applied"] for r in runs),
             "correct": sum(1 for r in runs if r["rc"] == 0 and r["verified"]),
             "hung": sum(1 for r in runs if r["hung"])}
    doc = {"summary": total, "runs": runs}
    atomic_write_text(Path(a.out), json.dumps(doc) + "\n")
    print(json.dumps(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
