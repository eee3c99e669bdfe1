#!/usr/bin/env python3
"""The pause of a running ping-pong when a rail fails (the issue's targets: link down
<= 50 ms, silent drop <= 100 ms, for 1 KiB and 64 KiB), with the agents against raw MPTCP
(the in-kernel path manager with a signal endpoint per extra rail, as `testbed run
--mptcp`), and the no-fault cost against plain TCP. One testbed of 2 sites x 1 node x
2 rails, 1 ms WAN delay; the fault (client's rail 0) is applied after 400 round trips of
a run, never by the clock. Configurations are interleaved rep by rep.

    MPILAB_BIN=build/bin python3 bench/pathmig_pause.py --reps 5 --out F.json
The pause is the longest round trip that ended within 3 s of the fault; `base` is the
median round trip before it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from harness import testbed_up_in
from mpilab.pathmig import agents, congestion
from mpilab.pathmig import pingpong as ppm
from mpilab.pathmig.pingpong import Step
from mpilab.testbed import faults, launch, net
from mpilab.testbed.spec import Spec

# no-fault configurations: (name, congestion control, ping-pong over TCP, MPTCP set-up)
OVERHEAD = ("tcp-bbr", "tcp", "raw1-bbr", "raw1", "agent-bbr", "agent")


AGENT_ARGS: list[str] = []  # --agent-args


def configure(sp: Spec, cfg: str) -> None:
    """tcp | raw (in-kernel PM, both rails active) | raw1 (MPTCP, one subflow) | agent
    (backup subflow); each under cubic as `testbed run --mptcp/--pathmig` sets it up, or,
    with the suffix -bbr, under this machine's default BBR (the namespaces' default)."""
    agents.stop(sp)
    agents.clear_logs(sp)
    hosts = sp.node_names()
    base, _, algo = cfg.partition("-")
    congestion.apply(sp, hosts, algo or congestion.MPTCP_DEFAULT)
    congestion.send_buffers(sp, hosts, base != "tcp")  # as testbed run sets them up
    cfg = base
    if cfg == "agent":
        agents.start(sp, extra=AGENT_ARGS)
    elif cfg == "raw":
        for n in hosts:
            net.sh(["ip", "netns", "exec", sp.ns(n), "sysctl", "-qw", "net.mptcp.pm_type=0"])
        launch.setup_mptcp(sp, hosts)
    elif cfg == "raw1":  # MPTCP with one subflow only: no endpoints
        for n in hosts:
            net.sh(["ip", "netns", "exec", sp.ns(n), "sysctl", "-qw", "net.mptcp.pm_type=0"])
            net.sh(["ip", "-n", sp.ns(n), "mptcp", "endpoint", "flush"])


def one(sp: Spec, cfg: str, nbytes: int, mode: str | None, work: Path,
        iters: int = 1200, idle: float = 0.0, client: str = "s0n0") -> dict[str, object]:
    configure(sp, cfg)
    steps = []
    server = "s1n0" if client == "s0n0" else "s0n0"
    if mode:
        if cfg.startswith("agent"):
            steps.append(Step(350, "call", fn=lambda: wait_armed(sp)))
        if idle:  # the client waits `idle` s at round trip 400; the fault comes 1 s in
            steps.append(Step(400, "call", fn=lambda: (time.sleep(1.0),
                                                        faults.fail(sp, f"{client}:0", mode))))
        else:
            steps.append(Step(400, "fail", f"{client}:0", mode))
    r = ppm.run(sp, client, server, work / "pp", nbytes=nbytes, iters=iters, steps=steps,
                tcp=cfg.startswith("tcp"), timeout=600,
                idle=(400, idle) if idle and mode else None)
    faults.heal(sp, None)
    rec: dict[str, object] = {"config": cfg, "bytes": nbytes, "fault": mode, "rc": r.rc,
                              "verified": r.summary.get("verified", False),
                              "median_rtt": r.summary.get("median_rtt"),
                              "iterations": r.summary.get("iterations"), "hung": r.hung,
                              "stderr": r.stderr.strip()[-300:]}
    if r.rc != 0 and cfg.startswith("agent"):  # keep the evidence of a lost connection
        keep = work / f"failed-{nbytes}-{mode}-{time.time():.0f}.jsonl"
        keep.write_text("".join(json.dumps(e) + "\n" for e in agents.events(sp)))
        (keep.with_suffix(".stderr")).write_text(r.stderr)
        rec["evidence"] = str(keep)
    if mode and r.rtts:
        st = steps[-1]
        rec["pause"] = r.pause(st, 3.0 + idle)  # with --idle: the first round trips after it
        rec["base"] = statistics.median(r.baseline(st.t0))
        if cfg.startswith("agent") and rec["pause"] > (0.05 if mode == "down" else 0.1):
            # over the target: keep the agents' view of it (and the fault's time)
            keep = work / f"slow-{nbytes}-{mode}-{time.time():.0f}.jsonl"
            keep.write_text("".join(json.dumps(e) + "\n" for e in agents.events(sp)))
            rec["evidence"] = str(keep)
            rec["fault_time"] = st.t0
    return rec


def wait_armed(sp: Spec) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(c["state"] == "ARMED" for n in ("s0n0", "s1n0")
               for c in agents.request(sp, n, "status")["connections"]):
            return
        time.sleep(0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--prefix", default="pmpau")
    ap.add_argument("--work", default="/tmp/pathmig-pause")
    ap.add_argument("--sizes", default="1024,65536")
    ap.add_argument("--configs", default="agent,raw")
    ap.add_argument("--overhead-iters", type=int, default=3000,
                    help="round trips per no-fault run (at 1 MiB and more: scaled down to "
                         "move the same bytes as 64 KiB messages, at least 60)")
    ap.add_argument("--overhead-sizes", default="1024,65536,4194304")
    ap.add_argument("--overhead-configs", default=",".join(OVERHEAD))
    ap.add_argument("--no-overhead", action="store_true")
    ap.add_argument("--no-faults", action="store_true")
    ap.add_argument("--modes", default="down,drop", help="fault modes of the pause runs")
    ap.add_argument("--fault-iters", type=int, default=1200,
                    help="round trips per fault run (the fault comes after 400)")
    ap.add_argument("--budget", type=float, default=0,
                    help="start no new repetition after this many seconds (0: no limit)")
    ap.add_argument("--agent-args", default="",
                    help="extra arguments of the agents, e.g. '--probe-interval 20'")
    ap.add_argument("--idle", type=float, default=0.0,
                    help="fault runs: the client idles this many seconds at round trip 400 "
                         "and the fault comes 1 s into it (a path that carried nothing when "
                         "it failed); 0: the fault hits the running ping-pong")
    ap.add_argument("--client", default="s0n0", choices=("s0n0", "s1n0"),
                    help="the ping-pong's client, whose rail 0 fails (s0n0 decides for the "
                         "pair, s1n0 follows)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.idle and a.idle <= 1.0:
        sys.exit("--idle: more than 1 s (the fault comes 1 s into the idle time)")
    AGENT_ARGS[:] = a.agent_args.split()
    work = Path(a.work)
    sp = testbed_up_in(work, a.prefix, ppm.SPEC_2X1)
    sizes = [int(x) for x in a.sizes.split(",")]
    osizes = [int(x) for x in a.overhead_sizes.split(",")]
    ocfgs = a.overhead_configs.split(",")
    runs = []
    try:
        t_start = time.monotonic()
        for rep in range(a.reps):
            if rep and a.budget and time.monotonic() - t_start > a.budget:
                print(f"budget of {a.budget:g} s spent: {rep} repetition(s)", flush=True)
                break
            for nbytes in ([] if a.no_faults else sizes):
                for mode in a.modes.split(","):
                    for cfg in a.configs.split(","):
                        rec = one(sp, cfg, nbytes, mode, work, a.fault_iters, a.idle,
                                  a.client) | {"rep": rep}
                        runs.append(rec)
                        print(json.dumps(rec), flush=True)
            for nbytes in ([] if a.no_overhead else osizes):  # no fault: the cost
                iters = a.overhead_iters if nbytes <= 65536 else max(
                    60, a.overhead_iters * 65536 // nbytes)
                for cfg in ocfgs:
                    rec = one(sp, cfg, nbytes, None, work, iters) | {"rep": rep}
                    runs.append(rec)
                    print(json.dumps(rec), flush=True)
    finally:
        agents.stop(sp)
        net.down(a.prefix)
    summary: dict[str, object] = {}
    for nbytes in sizes:
        for mode in a.modes.split(","):
            for cfg in a.configs.split(","):
                ps = [r["pause"] for r in runs if r["bytes"] == nbytes and r["fault"] == mode
                      and r["config"] == cfg and "pause" in r]
                if ps:
                    summary[f"{cfg} {nbytes} {mode}"] = {
                        "pauses_ms": [round(p * 1e3, 1) for p in ps],  # type: ignore[operator]
                        "median_ms": round(statistics.median(ps) * 1e3, 1),  # type: ignore
                        "max_ms": round(max(ps) * 1e3, 1),  # type: ignore[type-var]
                        "over_target": sum(1 for p in ps  # type: ignore[misc]
                                           if p > (0.05 if mode == "down" else 0.1)),
                        "all_verified": all(r["verified"] for r in runs if r["bytes"] == nbytes
                                            and r["fault"] == mode and r["config"] == cfg)}
    for nbytes in osizes:
        for cfg in ocfgs:
            m = [r["median_rtt"] for r in runs if r["bytes"] == nbytes and r["fault"] is None
                 and r["config"] == cfg and r["median_rtt"]]
            if m:
                med = statistics.median(m)  # type: ignore[type-var]
                summary[f"{cfg} {nbytes} nofault"] = {
                    "median_rtt_us": [round(x * 1e6, 1) for x in m],  # type: ignore
                    "median_of_medians_us": round(med * 1e6, 1),  # type: ignore[operator]
                    # both directions carry the message once per round trip
                    "bandwidth_MBps": round(2 * nbytes / med / 1e6, 1)}  # type: ignore
    doc = {"reps": a.reps, "agent_args": a.agent_args, "idle": a.idle, "client": a.client,
           "runs": runs, "summary": summary}
    Path(a.out + ".tmp").write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(a.out + ".tmp", a.out)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
