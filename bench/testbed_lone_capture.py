#!/usr/bin/env python3
"""A lone packet's hold in the testbed's WAN router, from kernel timestamps of raw packet
sockets (AF_PACKET, SO_TIMESTAMPNS) on the router's two site legs: the time from a packet's
arrival on the leg of site 0 (s0r0, ingress) to its departure on the leg of site 1 (s1r0,
egress), and back for the reply. Nothing of the delay line's own counters is used; the
capture sees the packets before the delay line reads them and after the kernel has routed
what it wrote back, so the one-way figure is the delay line's hold plus the router's own
forwarding and tun copies (an upper bound of the delay line's error).

For each configured delay D a fresh 2 sites x 2 nodes testbed (prefix --prefix) is brought
up and --runs runs are made on it; in each, `ping` sends --count lone ICMP echo requests
s0n0 -> s1n0 (one every max(0.2 s, 3 D)) while the router captures them on s0r0, dl0 (the
delay line's tun device) and s1r0. Per run (medians over both directions of every echo):
`total` - D, arrival on the ingress leg to departure on the egress leg; its parts `in`
(routing into dl0), `hold` - D (into dl0 and back out: the delay line alone) and `out`
(forwarding to the egress leg, htb); `worst` - D, the worst single crossing; `ICMP`, the
round trip's own excess (median WAN RTT - median LAN RTT) / 2 - D, s0n1 in the same site
as the LAN reference; and the delay line's claimed lateness p50 over the testbed's life.

Needs root. Example (bench slot, load recorded):
  /work/shared/tools/mlock bench python3 bench/testbed_lone_capture.py --runs 10
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time

from harness import loadavg, write_json
from mpilab.testbed import capture, net, oneway, spec
from mpilab.units import parse_duration

DELAYS = ["10us", "100us", "1ms", "10ms", "100ms"]

def ping(ns: str, addr: str, count: int, interval: float) -> list[float]:
    p = subprocess.run(["ip", "netns", "exec", ns, "ping", "-n", "-c", str(count), "-i",
                        f"{interval:g}", "-W", "2", addr], capture_output=True, text=True,
                       timeout=count * (interval + 2) + 10, check=False)
    rtts = [float(m.group(1)) * 1e-3 for m in re.finditer(r"time=([\d.]+) ms", p.stdout)]
    if len(rtts) != count:
        raise SystemExit(f"ping {addr} in {ns}: {len(rtts)} of {count} replies\n{p.stdout}")
    return rtts


def delayline_p50(prefix: str) -> float | None:
    st = net.load_state(prefix) or {}
    path = net.state_dir(prefix) / "delayline.json"
    before = path.stat().st_mtime_ns if path.exists() else 0
    import os
    import signal
    os.kill(int(st["delayline_pid"]), signal.SIGUSR1)
    for _ in range(200):
        if path.exists() and path.stat().st_mtime_ns != before:
            break
        time.sleep(0.01)
    try:
        pct = json.loads(path.read_text()).get("late_percentiles_s") or {}
    except (OSError, ValueError):
        return None
    v = pct.get("p50")
    return float(v) if isinstance(v, int | float) else None


def one_run(sp: spec.Spec, d: float, count: int) -> dict[str, object]:
    """One run on a testbed that is up: `count` lone echoes s0n0 -> s1n0 captured in the
    router, then as many s0n0 -> s0n1 (same site: the path without the router)."""
    interval = oneway.lone_gap(d)
    cap = capture.start(sp, count * interval + 2)
    try:
        wan = ping(sp.ns("s0n0"), sp.addr("s1n0", 0), count, interval)
        lines, _ = cap.communicate(timeout=30)
    finally:
        if cap.poll() is None:
            cap.kill()
            cap.wait()
    lan = ping(sp.ns("s0n0"), sp.addr("s0n1", 0), count, interval)
    seg = capture.segments(lines.splitlines())
    if len(seg) < count:
        raise SystemExit(f"capture: {len(seg)} one-way crossings seen for {count} echoes")
    med = {k: statistics.median(x[k] for x in seg) for k in ("total", "in", "hold", "out")}
    return {"delay_s": d, "segments_s": seg, "median_s": med,
            "hold_err_s": med["hold"] - d, "total_err_s": med["total"] - d,
            "worst_total_err_s": max((x["total"] - d for x in seg), key=abs),
            "wan_rtt_s": wan, "lan_rtt_s": lan,
            "icmp_err_s": (statistics.median(wan) - statistics.median(lan)) / 2 - d}


def one_delay(delay: str, prefix: str, runs: int, count: int) -> list[dict[str, object]]:
    """A fresh 2 x 2 testbed at WAN delay `delay`, `runs` runs on it, then down."""
    text = (f'prefix = "{prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 2\n'
            f'[lan]\nrate = "10Gbit"\n[wan]\nnode_rate = "1Gbit"\ntotal_rate = "1Gbit"\n'
            f'delay = "{delay}"\ndelay_backend = "delayline"\n')
    sp = spec.load_text(text, f"<lone {delay}>")
    d = parse_duration(delay)
    net.up(sp)
    try:
        rows = [one_run(sp, d, count) for _ in range(runs)]
        p50 = delayline_p50(prefix)
    finally:
        net.down(prefix)
    for r in rows:
        r["delayline_p50_s"] = p50
    return rows


def _us(x: object) -> float:
    return float(x) * 1e6  # type: ignore[arg-type]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--count", type=int, default=7, help="echo requests per run")
    ap.add_argument("--delays", default=",".join(DELAYS))
    ap.add_argument("--prefix", default="truth")
    ap.add_argument("--out", default="results/testbed_lone_capture.json")
    a = ap.parse_args()
    if a.runs < 1 or a.count < 1:
        ap.error("--runs and --count must be at least 1")
    delays = a.delays.split(",")
    for x in delays:
        try:
            parse_duration(x)
        except ValueError as e:
            ap.error(f"--delays {x}: {e}")
    import os
    if os.geteuid() != 0:
        ap.error("needs root (network namespaces)")
    load = loadavg()
    print(f"load at start: {load}", flush=True)
    print(f"{'delay':>6} {'run':>3} {'total':>7} {'in':>6} {'hold':>7} {'out':>6} "
          f"{'worst':>7} {'ICMP':>7} {'line p50':>8}   (errors and segments in us; total, "
          f"hold, worst and ICMP minus the configured delay)")
    rows: list[dict[str, object]] = []
    for delay in delays:
        for r, res in enumerate(one_delay(delay, a.prefix, a.runs, a.count)):
            res["delay"], res["run"] = delay, r + 1
            rows.append(res)
            med = res["median_s"]
            assert isinstance(med, dict)
            p50 = res["delayline_p50_s"]
            print(f"{delay:>6} {r + 1:>3} {_us(res['total_err_s']):7.1f} {_us(med['in']):6.1f} "
                  f"{_us(res['hold_err_s']):7.1f} {_us(med['out']):6.1f} "
                  f"{_us(res['worst_total_err_s']):7.1f} {_us(res['icmp_err_s']):7.1f} "
                  f"{'-' if p50 is None else f'{_us(p50):8.1f}'}", flush=True)
    print("\nerror against configured (us): delay, method, runs within 10 us, median, worst run")
    for delay in delays:
        sel = [r for r in rows if r["delay"] == delay]
        for name, key in (("router", "total_err_s"), ("hold", "hold_err_s"),
                          ("ICMP", "icmp_err_s")):
            xs = [_us(r[key]) for r in sel]
            ok = sum(1 for x in xs if abs(x) <= 10)
            print(f"{delay:>6} {name:>6} {ok:>2}/{len(xs)} {statistics.median(xs):8.1f} "
                  f"{max(xs, key=abs):8.1f}")
    write_json(a.out, {"bench": "testbed_lone_capture", "load": load, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
