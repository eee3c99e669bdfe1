#!/usr/bin/env python3
"""Where a round trip's time goes beside busy loops, without any fault and without path
migration: plain TCP (`testbed run --congestion cubic`: no MPTCP, no agent) of
mpilab-tb-pingpong (Open MPI, --bytes per message, every byte checked) on a testbed of 2
sites x 1 node x 2 rails brought up inside the measurement, its WAN delay line at
SCHED_FIFO priority 10 as in bench/pathmig_load.py. Configurations, interleaved run by run:

  quiet         no busy loop
  hogs          one busy loop per core at normal scheduling (the load of every loaded
                pathmig bench)
  hogs-idle     the same loops in SCHED_IDLE: they take only CPU time that nothing else
                wants, so the ranks are never kept off a core by them
  hogs-line     busy loops, and the delay line moved to normal scheduling for the run
                (chrt), competing with them

If `hogs` is slow and `hogs-idle` is as fast as `quiet`, the round trips wait for the
ranks' CPU time (CFS sharing each core with a busy loop), not for the emulated network.

    python3 bench/pathmig_noise.py --spec examples/testbed/pathmig-2x1.toml --prefix pmn \\
        --rounds 2 --count 1500 --bytes 65536 --out noise.json

Per run: the job's exit status, round trips, median, 99th percentile and longest round
trip, and how many took longer than 50 ms; the results file is rewritten after every run
(a series stopped part-way keeps its runs); --budget S starts no new run after S s."""

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

from harness import loadavg, mpilab_cmd, testbed_down, testbed_up, tool, write_json
from mpilab.testbed import net

#: the delay line's SCHED_FIFO priority (as bench/pathmig_load.py --network rt)
RT_NETWORK = 10
CONFIGS = ("quiet", "hogs", "hogs-idle", "hogs-line")


def _hogs(n: int, idle: bool) -> list[subprocess.Popen[bytes]]:
    loop = ["sh", "-c", "while :; do :; done"]
    return [subprocess.Popen((["chrt", "-i", "0"] if idle else []) + loop) for _ in range(n)]


def line_pids(prefix: str) -> list[int]:
    st = net.load_state(prefix) or {}
    pids = st.get("delayline_pids") or [st.get("delayline_pid")]
    return [int(p) for p in pids if p]


def set_line_class(pids: list[int], rt: bool) -> None:
    for pid in pids:
        cls = ["-f", "-p", str(RT_NETWORK)] if rt else ["-o", "-p", "0"]
        subprocess.run(["chrt", "-a", *cls, str(pid)], check=True, capture_output=True)


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def one(a: argparse.Namespace, cfg: str, k: int, ncpu: int) -> dict[str, Any]:
    rtt = Path(a.work) / f"rtt-{k}.log"
    cmd = mpilab_cmd("testbed", "run", "--prefix", a.prefix, "--congestion", "cubic",
                     "--timeout", "300", "--", tool("mpilab-tb-pingpong"), "--count",
                     str(a.count), "--bytes", str(a.bytes), "--progress", "0", "--rtt-log",
                     str(rtt))
    pids = line_pids(a.prefix)
    hogs = [] if cfg == "quiet" else _hogs(ncpu, cfg == "hogs-idle")
    try:
        if cfg == "hogs-line":
            set_line_class(pids, rt=False)
        p = subprocess.run(cmd, capture_output=True, text=True,
                           env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"), timeout=330)
    finally:
        if cfg == "hogs-line":
            set_line_class(pids, rt=True)
        for h in hogs:
            h.kill()
            h.wait()
    rows = [ln.split() for ln in rtt.read_text().splitlines()] if rtt.exists() else []
    # the job's first 50 round trips left out (its wire-up)
    rt = [float(r[2]) * 1e3 for r in rows][50:]
    return {"run": k, "config": cfg, "rc": p.returncode, "verified": "verified" in p.stdout,
            "round_trips": len(rt),
            "median_ms": statistics.median(rt) if rt else None,
            "p99_ms": quantile(rt, 0.99) if rt else None,
            "max_ms": max(rt) if rt else None,
            "over_50ms": sum(1 for x in rt if x > 50.0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True, help="the testbed to bring up (and down after)")
    ap.add_argument("--prefix", default="pmn")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--count", type=int, default=1500, help="round trips per run")
    ap.add_argument("--bytes", type=int, default=65536)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--budget", type=float, default=0.0)
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    configs = a.configs.split(",")
    if any(c not in CONFIGS for c in configs) or a.count < 100 or a.bytes < 1:
        ap.error(f"--configs: some of {', '.join(CONFIGS)}; --count at least 100; --bytes >= 1")
    a.work = a.work or str(Path(a.out).with_suffix(".d"))
    Path(a.work).mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ["MPILAB_DELAYLINE_ARGS"] = (
        os.environ.get("MPILAB_DELAYLINE_ARGS", "") + f" --rt-priority {RT_NETWORK}")
    doc: dict[str, Any] = {"load_at_start": loadavg(), "bytes": a.bytes, "count": a.count,
                           "runs": []}
    ncpu = os.cpu_count() or 2
    testbed_up(a.prefix, a.spec)
    t0, k = time.monotonic(), 0
    try:
        for rnd in range(a.rounds):
            for cfg in configs[rnd % len(configs):] + configs[:rnd % len(configs)]:
                if a.budget and time.monotonic() - t0 > a.budget:
                    doc["stopped_by_budget"] = True
                    return summary(doc, configs)
                rec = one(a, cfg, k, ncpu)
                k += 1
                doc["runs"].append(rec)
                print(json.dumps(rec), flush=True)
                write_json(a.out, doc)
    finally:
        write_json(a.out, doc)
        testbed_down(a.prefix)
    return summary(doc, configs)


def summary(doc: dict[str, Any], configs: list[str]) -> int:
    for cfg in configs:
        rs = [r for r in doc["runs"] if r["config"] == cfg and r["median_ms"] is not None]
        if rs:
            print(f"{cfg}: {len(rs)} run(s), median {[round(r['median_ms'], 2) for r in rs]} "
                  f"ms, p99 {[round(r['p99_ms'], 1) for r in rs]} ms, longest "
                  f"{[round(r['max_ms'], 1) for r in rs]} ms, over 50 ms "
                  f"{[r['over_50ms'] for r in rs]}, exit {[r['rc'] for r in rs]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
