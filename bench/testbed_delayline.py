#!/usr/bin/env python3
"""Delay line: accuracy (mean/max lateness), CPU cost and the highest throughput it carries.

For each WAN rate a fresh 2-site x 1-node testbed (L = 5 ms) carries one iperf3 TCP flow
for --time seconds; the delay line's own statistics give lateness and CPU time. The last
run leaves the WAN unshaped (10 Gbit/s) with 2 flows: the highest throughput carried.
By default the delay line runs real-time (SCHED_FIFO, as `testbed up` starts it as root);
--compare-realtime runs every rate twice, real-time and normal, side by side (--modes adds
--rt-adaptive: real-time only while a stream is held); --io packet
measures the line on packet sockets (wan.delay_io), which runs normal unless asked.
Needs root. Writes JSON (--out) and prints a table. Example:
  MPILAB_BIN=build/bin python3 bench/testbed_delayline.py --time 3 --compare-realtime
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from harness import write_json
from mpilab.testbed import check, net, spec


def delayline_stats(prefix: str) -> dict[str, object]:
    return net.delayline_stats(prefix) or {}


#: the line's scheduling per mode and I/O: the tun line runs real-time by default as root,
#: the packet line only when asked; adaptive is real-time only while it holds a stream
MODE_ARGS = {("tun", "fifo"): "", ("tun", "normal"): "--no-realtime",
             ("tun", "adaptive"): "--rt-adaptive",
             ("packet", "fifo"): "--rt-priority 10", ("packet", "normal"): "",
             ("packet", "adaptive"): "--rt-adaptive"}


def one(rate: str, flows: int, seconds: float, prefix: str,
        mode: str = "fifo", io: str = "tun") -> dict[str, float | str]:
    text = (f'prefix = "{prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 1\n'
            f'[lan]\nrate = "20Gbit"\n[wan]\nnode_rate = "{rate}"\ntotal_rate = "{rate}"\n'
            f'delay = "5ms"\nqueue = "4M"\ndelayline_buffer = "256M"\ndelay_io = "{io}"\n')
    sp = spec.load_text(text, f"<bench {rate}>")
    os.environ["MPILAB_DELAYLINE_ARGS"] = MODE_ARGS[io, mode]
    try:
        net.up(sp)
    finally:
        os.environ.pop("MPILAB_DELAYLINE_ARGS", None)
    try:
        rtt, rtt_max = check.ping(sp, "s0n0", "s1n0", 0, count=50)
        s0 = delayline_stats(prefix)
        t0 = time.monotonic()
        (good, wire), = check.iperf(sp, [("s0n0", "s1n0", 0)], seconds, flows)
        wall = time.monotonic() - t0
        s1 = delayline_stats(prefix)
        pk = s1["packets"] - s0["packets"]
        late_sum = s1["late_mean_s"] * s1["packets"] - s0["late_mean_s"] * s0["packets"]
        cpu = (s1["cpu_user_s"] + s1["cpu_sys_s"]) - (s0["cpu_user_s"] + s0["cpu_sys_s"])
        ad = s1.get("adaptive") if isinstance(s1.get("adaptive"), dict) else {}
        return {"wan_rate": rate, "flows": flows, "mode": mode,
                "sched": str(s1.get("sched", "other")),
                "fifo_s": float(ad.get("fifo_s", 0.0)),
                "goodput_bps": good, "wire_bps": wire,
                "idle_rtt_s": rtt, "idle_rtt_max_s": rtt_max, "packets": pk,
                "late_mean_s": late_sum / pk if pk else 0.0, "late_max_s": s1["late_max_s"],
                "cpu_core_fraction": cpu / wall, "dropped": s1["dropped"],
                # releases during the iperf3 run later than 1 ms (histogram buckets 3, 4)
                "late_over_1ms": sum(s1["late_hist"][3:]) - sum(s0["late_hist"][3:])}
    finally:
        net.down(prefix)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--rates", default="100Mbit,400Mbit,1Gbit")
    ap.add_argument("--prefix", default="mlb")
    ap.add_argument("--out", default="results/testbed_delayline.json")
    ap.add_argument("--no-realtime", action="store_true",
                    help="run the delay line with normal scheduling")
    ap.add_argument("--io", choices=("tun", "packet"), default="tun",
                    help="wan.delay_io: the line on a tun device or on packet sockets")
    ap.add_argument("--compare-realtime", action="store_true",
                    help="each rate twice, real-time (SCHED_FIFO) then normal scheduling")
    ap.add_argument("--modes", default=None,
                    help="scheduling modes side by side, of fifo, normal, adaptive "
                         "(--rt-adaptive), e.g. fifo,normal,adaptive")
    a = ap.parse_args()
    runs = [(r, 1) for r in a.rates.split(",")] + [("10Gbit", 2)]
    if a.modes:
        modes = a.modes.split(",")
        if not modes or any(m not in ("fifo", "normal", "adaptive") for m in modes):
            ap.error(f"--modes {a.modes}: a list of fifo, normal, adaptive")
    else:
        modes = ["fifo", "normal"] if a.compare_realtime else \
            ["normal" if a.no_realtime else "fifo"]
    rows = [one(r, f, a.time, a.prefix, m, a.io) for r, f in runs for m in modes]
    print(f"{'WAN rate':>9} {'mode':>8} {'sched':>5} {'flows':>5} {'wire Mbit/s':>11} "
          f"{'RTT ms':>7} {'late mean us':>12} {'late max us':>11} {'>1ms':>5} {'packets':>8} "
          f"{'CPU %core':>9} {'drops':>5}")
    for r in rows:
        print(f"{r['wan_rate']:>9} {r['mode']:>8} {r['sched']:>5} {r['flows']:5d} "
              f"{float(r['wire_bps']) / 1e6:11.1f} "
              f"{float(r['idle_rtt_s']) * 1e3:7.3f} {float(r['late_mean_s']) * 1e6:12.1f} "
              f"{float(r['late_max_s']) * 1e6:11.1f} {int(r['late_over_1ms']):5d} "
              f"{int(r['packets']):8d} {float(r['cpu_core_fraction']) * 100:9.1f} "
              f"{int(r['dropped']):5d}")
    write_json(a.out, {"bench": "testbed_delayline", "delay_s": 0.005, "seconds": a.time,
                       "io": a.io, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
