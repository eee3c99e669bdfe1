#!/usr/bin/env python3
"""The paper's Fig. 5-8 for 1..512 MPTCP connections between two processes (a ping-pong
using them round robin, 1 KiB, every byte checked), on one testbed of 2 sites x 1 node x
2 rails with a 1 ms WAN delay and --manual agents:
  - MIGRATED->ARMED: `arm all` on the client, time until the client's agent logged the last
    connection ARMED (Fig. 5: path loading = one backup subflow join per connection);
  - ARMED->MIGRATED: `migrate all`, time until the last MIGRATED on the client (its
    priority changes sent) and until the server's kernel reported the last priority change
    (the peer has applied them) (Fig. 6);
  - the pause (longest round trip) while each request is carried out (Fig. 7), and when a
    fault hits the primary rail with automatic migration on (Fig. 8; link down).
Each step is taken after a number of round trips (never by the clock).

    MPILAB_BIN=build/bin python3 bench/pathmig_conns.py --conns 1,4,16,64,256,512 --out F.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from harness import testbed_up_in
from mpilab.pathmig import agents, congestion
from mpilab.pathmig import pingpong as ppm
from mpilab.pathmig.pingpong import Step
from mpilab.testbed import faults, net
from mpilab.testbed.spec import Spec


def wait_states(sp: Spec, node: str, state: str, n: int, limit: float = 300) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        st = agents.request(sp, node, "status")
        if sum(1 for c in st["connections"] if c["state"] == state) >= n:
            return
        time.sleep(0.02)
    raise SystemExit(f"{node}: not {n} x {state} within {limit} s")


def first(evs: list[dict[str, object]], t0: float, t1: float, pred: object) -> float | None:
    """Time from t0 to the first event in [t0, t1) that matches."""
    ts = [e["time"] for e in evs if t0 <= e["time"] < t1 and pred(e)]  # type: ignore
    return min(ts) - t0 if ts else None  # type: ignore[type-var,operator]


def last(evs: list[dict[str, object]], t0: float, t1: float, pred: object) -> float | None:
    """Time from t0 to the last event in [t0, t1) that matches."""
    ts = [e["time"] for e in evs if t0 <= e["time"] < t1 and pred(e)]  # type: ignore
    return max(ts) - t0 if ts else None  # type: ignore[type-var,operator]


def agent_work(evs: list[dict[str, object]], t0: float) -> float | None:
    sign = [e["time"] for e in evs if t0 <= e["time"] < t0 + 5 and (
        (e["event"] == "link" and not e.get("up")) or (e["event"] == "path" and not e.get("up")))]
    if not sign:
        return None
    s0 = min(sign)  # type: ignore[type-var]
    acts = [e["time"] for e in evs if s0 <= e["time"] < s0 + 5 and e["event"] == "action"]
    return max(acts) - s0 if acts else None  # type: ignore[type-var,operator]


def one(sp: Spec, n: int, work: Path) -> dict[str, object]:
    agents.stop(sp)
    agents.clear_logs(sp)
    congestion.apply(sp, sp.node_names(), congestion.MPTCP_DEFAULT)  # as --pathmig runs
    congestion.send_buffers(sp, sp.node_names(), True)
    agents.start(sp, manual=True)
    a = 2 * n + 300
    b = a + max(600, 2 * n)
    c = b + max(600, 2 * n)
    steps = [Step(a, "arm", "s0n0"), Step(a + 100, "call", fn=lambda: wait_states(
                 sp, "s0n0", "ARMED", n)),
             Step(b, "migrate", "s0n0"),
             Step(b + 100, "call", fn=lambda: (wait_states(sp, "s0n0", "MIGRATED", n),
                                               agents.request(sp, "s0n0", "auto on"),
                                               agents.request(sp, "s1n0", "auto on"),
                                               wait_states(sp, "s0n0", "ARMED", n))),
             Step(c, "fail", "s0n0:1", "down")]  # rail 1 is the primary after migrating
    r = ppm.run(sp, "s0n0", "s1n0", work / "pp", connections=n, nbytes=1024,
                iters=c + max(1000, 2 * n), steps=steps, timeout=1200)
    faults.heal(sp, None)
    evs = agents.events(sp)
    cli = [e for e in evs if e["node"] == "s0n0"]
    srv = [e for e in evs if e["node"] == "s1n0"]
    arm, mig, flt = steps[0], steps[2], steps[4]
    end = max(t for _, t, _ in r.rtts) if r.rtts else flt.t0 + 10
    rec: dict[str, object] = {
        "connections": n, "rc": r.rc, "verified": r.summary.get("verified", False),
        "arm_answer": arm.result, "migrate_answer": mig.result,
        "migrated_to_armed_s": last(cli, arm.t0, mig.t0, lambda e: e["event"] == "state"
                                    and e["to"] == "ARMED"),
        "armed_to_migrated_local_s": last(cli, mig.t0, steps[3].t0, lambda e: e["event"] == "state"
                                          and e["to"] == "MIGRATED"),
        "armed_to_migrated_peer_s": last(srv, mig.t0, steps[3].t0, lambda e: e["event"] == "kernel"
                                         and e.get("type") == "sub_priority"),
        "median_rtt": r.summary.get("median_rtt"),
        # each window ends at the next step
        "pause_arm": r.pause(arm, steps[1].t0 - arm.t0 + 0.5),
        "pause_migrate": r.pause(mig, min(steps[3].t1, flt.t0) - mig.t0),
        "pause_fault": r.pause(flt, min(2.0, end - flt.t0)),
        # the client agent's own work on the fault: from the link event it saw to its
        # last action (priority change or subflow destroyed)
        "fault_link_event_s": first(cli, flt.t0, flt.t0 + 5, lambda e: e["event"] == "link"),
        "fault_last_action_s": last(cli, flt.t0, flt.t0 + 5, lambda e: e["event"] == "action"),
        # each agent's work: from the first sign of the fault it saw (link event or path
        # verdict) to its last action on it
        **{f"fault_{side}_work_s": agent_work(evs_side, flt.t0)
           for side, evs_side in (("client", cli), ("server", srv))},
        "fault_migrated": sum(1 for e in cli if e["event"] == "state" and e["time"] >= flt.t0
                              and e["cause"] == "fault on the primary path"),
    }
    # the per-iteration series around each step, for the figures
    rec["series"] = {name: [(i, round(t - st.t0, 6), rtt) for i, t, rtt in r.rtts
                            if st.t0 - 0.2 <= t <= st.t0 + 2.0]
                     for name, st in (("arm", arm), ("migrate", mig), ("fault", flt))}
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conns", default="1,4,16,64,256,512")
    ap.add_argument("--reps", type=int, default=1, help="runs per connection count")
    ap.add_argument("--prefix", default="pmcon")
    ap.add_argument("--work", default="/tmp/pathmig-conns")
    ap.add_argument("--budget", type=float, default=0,
                    help="start no new run after this many seconds (0: no limit)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    sp = testbed_up_in(work, a.prefix, ppm.SPEC_2X1)
    runs = []
    try:
        t_start = time.monotonic()
        for n in [int(x) for x in a.conns.split(",")] * a.reps:
            if runs and a.budget and time.monotonic() - t_start > a.budget:
                print(f"budget of {a.budget:g} s spent: {len(runs)} run(s)", flush=True)
                break
            rec = one(sp, n, work)
            runs.append(rec)
            print(json.dumps({k: v for k, v in rec.items() if k != "series"}), flush=True)
    finally:
        agents.stop(sp)
        net.down(a.prefix)
    Path(a.out + ".tmp").write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    os.replace(a.out + ".tmp", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
