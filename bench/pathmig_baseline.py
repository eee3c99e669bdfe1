#!/usr/bin/env python3
"""What stretches plain-TCP round trips beside busy cores, without a fault and without the
agents: the baseline against which a loaded fault's pause is judged (docs/pathmig.md,
"Targets under load"). Each run is `mpilab testbed run --congestion cubic` (plain TCP, no
MPTCP, no agent) of mpilab-tb-pingpong (Open MPI, --bytes per message, every byte checked)
between s0n0 and s1n0, on the testbed of --spec (2 sites x 1 node x 2 rails) or on a copy of
it without a WAN delay (no delay line at all). The cases, interleaved run by run:

- `rt`: the WAN delay line at SCHED_FIFO (its memory locked), two busy loops beside the job,
  started by this script as bench/pathmig_load.py starts them (in this script's session,
  hence its autogroup: inside `mlock bench` that group has nice -15, and the job's ranks,
  each in its node's MPI daemon's session, have autogroups of nice 0);
- `fair`: as `rt`, each busy loop in a session of its own (an autogroup of nice 0, as the
  ranks'): the busy loops weigh what the ranks weigh, as on a node whose cores another
  program keeps busy at the job's priority;
- `shared`: as `rt`, the delay line moved to normal scheduling (sched_setscheduler) for the
  run: it competes with the busy loops for the CPU;
- `nodelay`: as `rt` on a copy of the testbed without a WAN delay (no delay line: the
  kernel's forwarding only);
- `quiet`: as `rt`, without the busy loops.

    python3 bench/pathmig_baseline.py --spec examples/testbed/pathmig-2x1.toml --prefix pbl \
        --runs 4 --count 1000 --bytes 65536 --budget 480 --out B.json

Per run: median, 99th percentile and longest round trip, how many exceeded 50 and 100 ms,
the longest round trip of each 3 s window (`window_max_ms`: what a fault's 3 s window would
hold without a fault), the ranks' and the delay line's run-queue wait (/proc/PID/schedstat:
time runnable but not running, as a share of the run), and the kernel's TCP counters of
both nodes over the run (retransmitted segments, tail-loss probes, timeouts). The results
file is rewritten after every run."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import (
    Watch,
    autogroup,
    delayline_pids,
    loadavg,
    long_summary,
    mpilab_cmd,
    schedstat,
    testbed_down,
    testbed_up,
    tool,
    write_json,
)
from harness import nstat as node_nstat
from mpilab.testbed import net

CASES = ("rt", "fair", "shared", "nodelay", "quiet")
#: the delay line's SCHED_FIFO priority in the rt cases (as bench/pathmig_load.py)
RT_NETWORK = 10
HOSTS = ("s0n0", "s1n0")
WINDOW_S = 3.0
#: TCP counters kept per run (nstat names)
COUNTERS = ("TcpRetransSegs", "TcpExtTCPLossProbes", "TcpExtTCPTimeouts",
            "TcpExtTCPFastRetrans", "TcpExtTCPSpuriousRTOs", "TcpExtDelayedACKs")
PROG = "mpilab-tb-pingpong"
#: round trips longer than this are attributed (s)
LONG_S = 0.030


def rtt_stats(ends: list[float], rtts: list[float], skip: int = 50) -> dict[str, Any]:
    """Round-trip figures of a run (pure; ends CLOCK_REALTIME s, rtts s, results ms): the
    first `skip` round trips (the job's wire-up) left out; `window_max_ms` the longest
    round trip of each whole WINDOW_S window after them."""
    e, r = ends[skip:], rtts[skip:]
    if not r:
        return {"round_trips": 0}
    ms = sorted(x * 1e3 for x in r)
    wins: list[float] = []
    t0, k = e[0], 0
    while t0 + WINDOW_S <= e[-1]:
        w = [x for t, x in zip(e[k:], r[k:], strict=True) if t0 <= t < t0 + WINDOW_S]
        wins.append(max(w) * 1e3 if w else 0.0)
        while k < len(e) and e[k] < t0 + WINDOW_S:
            k += 1
        t0 += WINDOW_S
    return {"round_trips": len(r), "median_ms": statistics.median(ms),
            "p99_ms": ms[min(len(ms) - 1, int(0.99 * len(ms)))], "max_ms": ms[-1],
            "over_50ms": sum(1 for x in ms if x > 50), "over_100ms": sum(1 for x in ms if x > 100),
            "window_max_ms": [round(x, 2) for x in wins]}


def nstat(sp: Any, node: str) -> dict[str, int]:
    k = node_nstat(sp, node)
    return {n: k.get(n, 0) for n in COUNTERS}


def set_sched(pids: list[int], rt: bool) -> None:
    for pid in pids:
        try:
            if rt:
                os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(RT_NETWORK))
            else:
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass


def one(prefix: str, work: Path, k: int, case: str, count: int, size: int,
        timeout: int) -> dict[str, Any]:
    sp = net.current_spec(prefix)
    rtt = work / f"rtt-{k}.log"
    prog = [tool(PROG), "--count", str(count), "--bytes", str(size), "--rtt-log", str(rtt)]
    cmd = mpilab_cmd("testbed", "run", "--prefix", prefix, "--mpi", "openmpi", "--congestion",
                     "cubic", "--timeout", str(timeout), "--", *prog)
    lines = delayline_pids(prefix)
    set_sched(lines, case != "shared")
    dl0 = {p: schedstat(p) for p in lines}
    nst0 = {h: nstat(sp, h) for h in HOSTS}
    hogs = [] if case == "quiet" else [
        subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=case == "fair")
        for _ in range(os.cpu_count() or 2)]
    hog_groups = [autogroup(h.pid) for h in hogs]
    watch = Watch([sp.ns(h) for h in HOSTS], lines)
    watch.start()
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60,
                           env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, out = 124, ""
    finally:
        wall = time.monotonic() - t0
        watch.stop.set()
        watch.join()
        for h in hogs:
            h.kill()
            h.wait()
        set_sched(lines, True)
    dl1 = {p: schedstat(p) for p in lines}
    nst1 = {h: nstat(sp, h) for h in HOSTS}
    rows = [ln.split() for ln in rtt.read_text().splitlines()] if rtt.exists() else []
    ends, rtts = [float(r[1]) for r in rows], [float(r[2]) for r in rows]
    dur = (ends[-1] - ends[0]) if len(ends) > 1 else wall
    rank_groups = sorted({g for g in watch.groups.values()})
    last: dict[int, tuple[int, int]] = {}
    for _, row in watch.samples:
        last |= {p: v for p, v in row.items() if p in watch.ranks}
    ranks = [last[p] for p in watch.ranks if p in last]
    dl_wait = sum(b[1] - a[1] for p, a in dl0.items() if a and (b := dl1.get(p)))
    dl_run = sum(b[0] - a[0] for p, a in dl0.items() if a and (b := dl1.get(p)))
    long_rtts = watch.attribution(ends[50:], rtts[50:], LONG_S)
    rec: dict[str, Any] = {
        "run": k, "case": case, "bytes": size, "rc": rc, "verified": "verified" in out,
        "duration_s": round(dur, 3),
        # /proc/PID/autogroup: the CPU share groups of the busy loops and of the ranks
        "hog_autogroups": hog_groups, "rank_autogroups": rank_groups,
        # each rank's time on a CPU and runnable but waiting for one, whole job (s)
        "rank_cpu_s": [round(r[0] / 1e9, 3) for r in ranks],
        "rank_wait_s": [round(r[1] / 1e9, 3) for r in ranks],
        "delayline_cpu_s": round(dl_run / 1e9, 3), "delayline_wait_s": round(dl_wait / 1e9, 4),
        "tcp": {h: {c: nst1[h].get(c, 0) - nst0[h].get(c, 0) for c in COUNTERS}
                for h in HOSTS},
        # the round trips over LONG_S: the ranks' and the delay line's wait during them
        "long": long_summary(long_rtts)}
    rec |= rtt_stats(ends, rtts)
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True, help="the testbed (brought up and down here)")
    ap.add_argument("--prefix", default="pbl")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--runs", type=int, default=1, help="rounds of the cases")
    ap.add_argument("--count", type=int, default=1000, help="round trips per run")
    ap.add_argument("--bytes", type=int, default=65536)
    ap.add_argument("--timeout", type=int, default=120, help="each job's time limit (s)")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="start no new run after this many seconds (0: no limit)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cases = a.cases.split(",")
    if any(c not in CASES for c in cases):
        ap.error(f"--cases {a.cases}: a comma-separated list of {', '.join(CASES)}")
    if a.runs < 1 or a.count < 100 or a.bytes < 1:
        ap.error("--runs at least 1, --count at least 100, --bytes at least 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(a.out).with_suffix(".d")
    work.mkdir(parents=True, exist_ok=True)
    nd = f"{a.prefix}n"
    os.environ["MPILAB_DELAYLINE_ARGS"] = (os.environ.get("MPILAB_DELAYLINE_ARGS", "")
                                           + f" --rt-priority {RT_NETWORK}")
    try:
        testbed_up(a.prefix, a.spec)
        if "nodelay" in cases:
            text = Path(a.spec).read_text()
            text = "\n".join('delay = "0ms"' if ln.strip().startswith("delay") else ln
                             for ln in text.splitlines()) + "\n"
            (work / "nodelay.toml").write_text(text)
            testbed_up(nd, work / "nodelay.toml")
        return measure(a, cases, work, nd)
    finally:
        testbed_down(a.prefix)
        if "nodelay" in cases:
            testbed_down(nd)


def measure(a: argparse.Namespace, cases: list[str], work: Path, nd: str) -> int:
    doc: dict[str, Any] = {"load_at_start": loadavg(), "count": a.count, "bytes": a.bytes,
                           "cases": cases, "runs": []}
    k, t0 = 0, time.monotonic()
    for _ in range(a.runs):
        for case in cases:
            if a.budget and time.monotonic() - t0 > a.budget:
                print(f"--budget {a.budget:g} s spent: {k} run(s) done", flush=True)
                return summary(a.out, doc)
            rec = one(nd if case == "nodelay" else a.prefix, work, k, case, a.count, a.bytes,
                      a.timeout)
            k += 1
            doc["runs"].append(rec)
            print(json.dumps({x: v for x, v in rec.items() if x not in ("window_max_ms", "long")}),
                  flush=True)
            write_json(a.out, doc)
    return summary(a.out, doc)


def summary(out: str, doc: dict[str, Any]) -> int:
    write_json(out, doc)
    for case in doc["cases"]:
        rs = [r for r in doc["runs"] if r["case"] == case and r.get("round_trips")]
        if not rs:
            continue
        wins = [w for r in rs for w in r["window_max_ms"]]
        share = [sum(r["rank_wait_s"]) / max(1e-9, sum(r["rank_cpu_s"]) + sum(r["rank_wait_s"]))
                 for r in rs if r["rank_cpu_s"]]
        med = statistics.median(r["median_ms"] for r in rs)
        lo, hi = min(r["max_ms"] for r in rs), max(r["max_ms"] for r in rs)
        n50, n100 = sum(r["over_50ms"] for r in rs), sum(r["over_100ms"] for r in rs)
        n = sum(r["round_trips"] for r in rs)
        wmed = statistics.median(wins) if wins else float("nan")
        wait = 100 * statistics.median(share) if share else float("nan")
        dl = sum(r["delayline_wait_s"] for r in rs)
        rx = sum(r["tcp"][h]["TcpRetransSegs"] for r in rs for h in HOSTS)
        ok = sum(1 for r in rs if r["rc"] == 0 and r["verified"])
        lng = [r["long"] for r in rs if r["long"]["ranks_wait_share"]]
        print(f"{case}: {len(rs)} run(s); median {med:.2f} ms; longest {lo:.1f}-{hi:.1f} ms; "
              f">50 ms {n50}, >100 ms {n100} of {n}; 3 s windows' longest: median {wmed:.1f} "
              f"ms of {len(wins)}; ranks waiting {wait:.0f}% of their runnable time; delay "
              f"line waited {dl:.3f} s; retransmitted segments {rx}; jobs ok {ok} of {len(rs)}")
        if lng:
            sh = [x["ranks_wait_share"][0] for x in lng]
            dlw = [x["delayline_wait_ms"] for x in lng]
            print(f"  {sum(x['count'] for x in lng)} round trip(s) over {LONG_S * 1e3:g} ms: "
                  f"the two ranks waited for a CPU {100 * min(sh):.0f}-{100 * max(sh):.0f}% of "
                  f"such a round trip (runs' medians; 200%: both throughout), the delay line "
                  f"{max(d[0] for d in dlw):.2f} ms at most by a run's median, "
                  f"{max(d[1] for d in dlw):.2f} ms at most")
    return 0


if __name__ == "__main__":
    sys.exit(main())
