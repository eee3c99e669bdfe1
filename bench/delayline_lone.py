#!/usr/bin/env python3
"""A lone packet's one-way delay across the testbed's delay line, measured from outside it,
against the configured delay: issue 25's target "within 10 us of the configured delay from
10 us to 100 ms, 10 of 10 runs".

For each configured delay D and run a fresh testbed of 2 sites x 2 nodes (WAN delay D,
1 Gbit/s, unshaped enough that a 64-byte packet's serialisation is negligible) is brought
up, and lone packets (one every max(0.2 s, 3 D), nothing else on the path) cross it s0n0 ->
s1n0 (the WAN: through the router and the delay line both ways) and s0n0 -> s0n1 (the same
site: the path without the router), measured two ways:
  * ICMP: echoes from a raw socket stamped by the kernel where each request leaves the
    sender's interface and its reply comes back (across the WAN; mpilab.testbed.oneway, ns
    resolution: ping prints 0.1 ms steps at 10 ms), `ping` across the LAN:
    (median WAN round trip - median LAN round trip) / 2 - D;
  * a UDP ping-pong whose datagrams are stamped by the kernel where they leave the sender's
    interface and where they reach the receiver's (SO_TIMESTAMPING, software stamps; the
    namespaces share one clock): each direction's one-way time without either end's
    wake-ups. `UDP exc`: the worse direction's median WAN one-way - median LAN one-way - D
    (the router's crossing and one bridge hop beyond the LAN path); `UDP raw`: the WAN
    one-way alone - D; `UDP max` / `UDP min`: the slowest / fastest single datagram.
Both are also taken against the same testbed brought up without a WAN delay (no delay line,
the router forwarding directly; measured once per delay before its runs): `ICMP-0` and
`UDP-0` are the delayed WAN minus the undelayed WAN minus D, what the delay line adds
beyond its configuration, the figure the target is about (`UDPmin-0`: the fastest single
datagram; below 0 it was early). None of this uses the delay line's counters; its own
view of the router crossings (ingress leg to egress leg, kernel stamps: p50, p99, and how
many were shorter than D) is printed beside. --variants runs delay-line configurations
interleaved, run by run; `ARGS|auto` brings the testbed up with wan.delay_trim = "auto" (the
path's own lone-packet cost measured at up, the same way, and taken off the line's hold;
printed as `trim at up`). `fwd-0` / `back-0`: UDP-0 of each direction (UDP-0 is the worse).
`cpu`: the delay line's CPU time (user + system) over its life so far (its cost: the spin
before each release, busy polling below 100 us).

Needs root. Example:
  /work/shared/tools/mlock bench python3 bench/delayline_lone.py --runs 10 --prefix dly
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from harness import loadavg
from mpilab.errors import MpilabError
from mpilab.testbed import net, oneway, spec
from mpilab.units import parse_duration

DELAYS = ["10us", "100us", "1ms", "10ms", "100ms"]


def ping(ns: str, addr: str, count: int, interval: float) -> list[float]:
    p = subprocess.run(["ip", "netns", "exec", ns, "ping", "-n", "-c", str(count), "-i",
                        str(interval), "-W", "2", addr], capture_output=True, text=True,
                       timeout=count * (interval + 2) + 10, check=False)
    rtts = [float(m.group(1)) * 1e-3 for m in re.finditer(r"time=([\d.]+) ms", p.stdout)]
    if not rtts:
        raise SystemExit(f"ping {addr} in {ns}: no replies\n{p.stdout}{p.stderr}")
    return rtts


def udp_oneway(sp: spec.Spec, client: str, server: str, count: int,
               interval: float, reply_after: float = 0.0) -> tuple[list[float], list[float]]:
    try:
        return oneway.udp_oneway(sp, client, server, count, interval, reply_after)
    except MpilabError as e:
        raise SystemExit(str(e)) from None


def delayline_stats(prefix: str) -> dict[str, object]:
    return net.delayline_stats(prefix) or {}


def up(delay: str, prefix: str, trim: str = "0us") -> spec.Spec:
    """A fresh 2 x 2 testbed with WAN delay `delay` and wan.delay_trim `trim`; prints the
    trim the delay line got when it was measured ("auto")."""
    text = (f'prefix = "{prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 2\n'
            f'[lan]\nrate = "10Gbit"\n[wan]\nnode_rate = "1Gbit"\ntotal_rate = "1Gbit"\n'
            f'delay = "{delay}"\ndelay_backend = "delayline"\ndelay_trim = "{trim}"\n')
    sp = spec.load_text(text, f"<lone {delay}>")
    net.up(sp)
    tr = (net.load_state(prefix) or {}).get("delay_trim") or {}
    if tr.get("measured"):
        print(f"   trim at up ({delay}): {tr['trim_s'] * 1e6:.1f} us (steady "
              f"{tr['steady']}, spread {tr['spread_s'] * 1e6:.1f} us); excess before "
              f"{tr['excess_s'] * 1e6:.1f} us (fwd {tr['excess_fwd_s'] * 1e6:.1f}, back "
              f"{tr['excess_back_s'] * 1e6:.1f}); undelayed one-way fwd "
              f"{tr['base_fwd_s'] * 1e6:.1f} back {tr['base_back_s'] * 1e6:.1f} us", flush=True)
    return sp


def one(sp: spec.Spec, delay: str, count: int,
        base: dict[str, object] | None = None, lan_too: bool = True,
        reply_after: float = 0.0) -> dict[str, object]:
    """One run on a testbed that is up: ICMP and the one-way ping-pong, WAN and LAN; with
    `base` (the same on an undelayed testbed) also the excess over the undelayed WAN.
    `reply_after`: the UDP echo waits this long (an undelayed reference for a delay D)."""
    d = parse_duration(delay)
    interval = max(oneway.lone_gap(d), 3 * reply_after)
    try:  # kernel-stamped raw-socket echoes: ping's 3 digits are 0.1-1 ms steps at 10-100 ms
        wan = oneway.icmp_rtt(sp, "s0n0", "s1n0", count, interval)
    except MpilabError as e:
        raise SystemExit(str(e)) from None
    fwd, back = udp_oneway(sp, "s0n0", "s1n0", count, interval, reply_after)
    if lan_too:
        lan = ping(sp.ns("s0n0"), sp.addr("s0n1", 0), count, interval)
        lfwd, lback = udp_oneway(sp, "s0n0", "s0n1", count, interval)
    else:  # the LAN is only for the excess over the site's own path (not the -0 figures)
        lan, lfwd, lback = [float("nan")], [float("nan")], [float("nan")]
    dl = delayline_stats(sp.prefix) if d > 0 else {}
    created = (net.load_state(sp.prefix) or {}).get("created")
    if dl and isinstance(created, int | float):  # the line's CPU time over its life so far
        dl["cpu_share"] = (float(dl.get("cpu_user_s", 0.0)) + float(dl.get("cpu_sys_s", 0.0))) \
            / max(time.time() - created, 1e-3)
    med = statistics.median
    x: dict[str, object] = {
        "delay_s": d, "wan_rtt_s": wan, "lan_rtt_s": lan,
        "excess_s": (med(wan) - med(lan)) / 2 - d,
        "oneway_fwd_s": fwd, "oneway_back_s": back, "lan_fwd_s": lfwd, "lan_back_s": lback,
        "udp_raw_s": max(med(fwd), med(back)) - d,
        "udp_excess_s": max(med(fwd) - med(lfwd), med(back) - med(lback)) - d,
        "udp_worst_s": max(max(fwd) - med(lfwd), max(back) - med(lback)) - d,
        "udp_least_s": min(min(fwd) - med(lfwd), min(back) - med(lback)) - d,
        "delayline": dl}
    if base:
        bf, bb = base["oneway_fwd_s"], base["oneway_back_s"]
        assert isinstance(bf, list) and isinstance(bb, list)
        bw = base["wan_rtt_s"]
        assert isinstance(bw, list)
        x["icmp_vs_undelayed_s"] = (med(wan) - med(bw)) / 2 - d
        x["udp_vs_undelayed_s"] = max(med(fwd) - med(bf), med(back) - med(bb)) - d
        x["udp_fwd_vs_undelayed_s"] = med(fwd) - med(bf) - d
        x["udp_back_vs_undelayed_s"] = med(back) - med(bb) - d
        x["udp_least_vs_undelayed_s"] = min(min(fwd) - med(bf), min(back) - med(bb)) - d
    return x


def undelayed(prefix: str, count: int, lan_too: bool = True,
              hold: float = 0.0) -> dict[str, object]:
    """The same measurements on the testbed without a WAN delay (no delay line): the path a
    delay of D should lengthen by exactly D. `hold` (D): the UDP echo waits that long, so
    the way back has been idle as long as behind the line (an echo sent at once crosses a
    path its request has just warmed: 20-40 us against 175-900 us forward in a recorded run)."""
    sp = up("0ms", prefix)
    try:
        return one(sp, "0ms", count, lan_too=lan_too, reply_after=hold)
    finally:
        net.down(prefix)


def _variant(args: str) -> tuple[str, str]:
    """'DELAYLINE ARGS|TRIM' -> (args, wan.delay_trim); no '|': trim 0."""
    a, bar, trim = args.partition("|")
    return a, (trim.strip() or "0us") if bar else "0us"


def runs(delay: str, prefix: str, count: int, nruns: int, variants: list[tuple[str, str]],
         reuse: bool, lan_too: bool = True) -> Iterator[tuple[str, int, dict[str, object]]]:
    """Every run of one delay, after a measurement of the undelayed testbed: variants
    interleaved run by run (side by side in time), a fresh testbed per run, or with `reuse`
    one per variant kept for all its runs (the delay line's statistics then accumulate)."""
    base = undelayed(prefix, count, lan_too, parse_duration(delay))
    bf, bb, bw = base["oneway_fwd_s"], base["oneway_back_s"], base["wan_rtt_s"]
    assert isinstance(bf, list) and isinstance(bb, list) and isinstance(bw, list)
    print(f"   undelayed WAN ({delay}): UDP one-way fwd {statistics.median(bf) * 1e6:.1f} "
          f"(range {min(bf) * 1e6:.1f}-{max(bf) * 1e6:.1f}), back "
          f"{statistics.median(bb) * 1e6:.1f} (range {min(bb) * 1e6:.1f}-{max(bb) * 1e6:.1f}) "
          f"us; ICMP rtt {statistics.median(bw) * 1e6:.1f} us", flush=True)
    if reuse:
        for name, args in variants:
            os.environ["MPILAB_DELAYLINE_ARGS"], trim = _variant(args)
            sp = up(delay, prefix, trim)
            try:
                for r in range(nruns):
                    yield name, r, one(sp, delay, count, base, lan_too)
            finally:
                net.down(prefix)
        return
    for r in range(nruns):
        for name, args in variants:
            os.environ["MPILAB_DELAYLINE_ARGS"], trim = _variant(args)
            sp = up(delay, prefix, trim)
            try:
                res = one(sp, delay, count, base, lan_too)
            finally:
                net.down(prefix)
            yield name, r, res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--count", type=int, default=11, help="echo requests per run and path")
    ap.add_argument("--delays", default=",".join(DELAYS))
    ap.add_argument("--prefix", default="mll")
    ap.add_argument("--variants", default="default=",
                    help="NAME=DELAYLINE ARGS;... run side by side, each with its own delay "
                         "line options ($MPILAB_DELAYLINE_ARGS), e.g. 'new=;old=--no-leg-stamps "
                         "--no-advance --busy-poll off'; ARGS|TRIM also sets wan.delay_trim "
                         "(auto: measured at up), e.g. 'cal=--idle-poll|auto'")
    ap.add_argument("--no-lan", action="store_true",
                    help="skip the LAN measurements (only the figures against the undelayed "
                         "WAN, ICMP-0 and UDP-0, are then printed)")
    ap.add_argument("--reuse", action="store_true",
                    help="one testbed per delay and variant for all its runs (default: a "
                         "fresh one per run)")
    ap.add_argument("--hogs", type=int, default=0,
                    help="busy loops (`yes`) running through every measurement (default 0)")
    ap.add_argument("--cpu-latency", type=int, default=None, metavar="US",
                    help="hold a PM QoS request of US microseconds on /dev/cpu_dma_latency "
                         "while measuring (0: idle vCPUs poll instead of halting; this guest's "
                         "haltpoll driver halts at once, guest_halt_poll_ns 0, and a halted "
                         "vCPU waits for the host to run it again when a packet arrives)")
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    if not 0 <= a.hogs <= 16:
        ap.error(f"--hogs {a.hogs}: expected 0..16")
    if a.cpu_latency is not None and not 0 <= a.cpu_latency <= 2_000_000_000:
        ap.error(f"--cpu-latency {a.cpu_latency}: expected 0..2000000000 us")
    if os.geteuid() != 0:
        ap.error("needs root (network namespaces)")
    # a stopped bench slot (SIGTERM) still takes the testbed down (the finally blocks)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    variants = []
    for v in a.variants.split(";"):
        name, eq, args = v.partition("=")
        if not eq or not name:
            ap.error(f"--variants: '{v}' is not NAME=ARGS")
        variants.append((name, args))
    print(f"load at start: {loadavg()}; {a.hogs} hogs", flush=True)
    other = subprocess.run(["pgrep", "-af", "mpilab-delayline .*--dev "], capture_output=True,
                           text=True, check=False).stdout.strip()
    print(f"delay lines already running (not this bench's): {other or 'none'}", flush=True)
    qos = None
    if a.cpu_latency is not None:  # held for as long as the descriptor stays open
        qos = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
        os.write(qos, struct.pack("i", a.cpu_latency))
        print(f"PM QoS: cpu_dma_latency held at {a.cpu_latency} us (idle states: "
              f"{idle_states()})", flush=True)
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(a.hogs)]
    try:
        return measure(a, variants)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        if qos is not None:
            os.close(qos)


def idle_states() -> str:
    """cpu0's idle states with their exit latencies (us) and use counts."""
    out = []
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cpuidle").glob("state*")):
        try:
            name, lat, used = ((d / f).read_text().strip() for f in ("name", "latency", "usage"))
            out.append(f"{name} {lat} us x{used}")
        except OSError:
            continue
    return ", ".join(out) or "none"


def _us(v: object) -> str:
    return f"{float(v) * 1e6:6.1f}" if isinstance(v, int | float) else f"{'-':>6}"


def measure(a: argparse.Namespace, variants: list[tuple[str, str]]) -> int:
    print(f"{'variant':>8} {'delay':>6} {'run':>3} {'WAN rtt':>10} {'ICMP exc':>9} "
          f"{'UDP raw':>8} {'UDP exc':>8} {'UDP max':>8} {'UDP min':>8} {'ICMP-0':>8} "
          f"{'UDP-0':>8} {'UDPmin-0':>8} {'fwd-0':>8} {'back-0':>8} {'line x50':>8} "
          f"{'line x99':>8} {'early (max us)':>14} {'rel50':>6} {'fwd50':>6} {'adv':>6} "
          f"{'cpu':>6}")
    res: dict[tuple[str, str], list[dict[str, object]]] = {}
    for delay in a.delays.split(","):
        for name, r, x in runs(delay, a.prefix, a.count, a.runs, variants, a.reuse,
                               not a.no_lan):
            res.setdefault((name, delay), []).append(x)
            dl = x["delayline"] if isinstance(x["delayline"], dict) else {}
            rt = dl.get("router") or {}
            pct = rt.get("late_percentiles_s") or {}
            x50, x99 = pct.get("p50"), pct.get("p99")
            us = [float(x[k]) * 1e6 for k in  # type: ignore[arg-type]
                  ("excess_s", "udp_raw_s", "udp_excess_s", "udp_worst_s", "udp_least_s",
                   "icmp_vs_undelayed_s", "udp_vs_undelayed_s", "udp_least_vs_undelayed_s",
                   "udp_fwd_vs_undelayed_s", "udp_back_vs_undelayed_s")]
            print(f"{name:>8} {delay:>6} {r + 1:>3} "
                  f"{statistics.median(x['wan_rtt_s']) * 1e3:9.3f}m "  # type: ignore[arg-type]
                  + " ".join(f"{u:8.1f}" for u in us) + " "
                  f"{'-' if x50 is None else f'{x50 * 1e6:8.1f}'} "
                  f"{'-' if x99 is None else f'{x99 * 1e6:8.1f}'} "
                  f"{rt.get('crossings_early', '-'):>5} "
                  f"({float(rt.get('early_max_s', 0.0)) * 1e6:6.2f}) "
                  + " ".join(_us(v) for v in (
                      (dl.get("late_percentiles_s") or {}).get("p50"),
                      (rt.get("forward_percentiles_s") or {}).get("p50"),
                      rt.get("advance_mean_s")))
                  + f" {float(dl.get('cpu_share', float('nan'))) * 100:5.1f}%", flush=True)
    os.environ.pop("MPILAB_DELAYLINE_ARGS", None)
    print("\nexcess one-way delay beyond the configured (us), median of the runs (worst run); "
          "runs within 10 us")
    for (name, delay), xs in res.items():
        cells = []
        keys = ("icmp_vs_undelayed_s", "udp_vs_undelayed_s") if a.no_lan else (
            "excess_s", "udp_excess_s", "udp_raw_s", "icmp_vs_undelayed_s", "udp_vs_undelayed_s")
        for key in keys:
            v = [float(x[key]) for x in xs]  # type: ignore[arg-type]
            ok = sum(1 for u in v if abs(u) <= 10e-6)
            cells.append(f"{key[:-2]} {statistics.median(v) * 1e6:6.1f} "
                         f"({max(v, key=abs) * 1e6:6.1f}) {ok}/{len(v)}")
        print(f"{name:>8} {delay:>6}  " + "  ".join(cells))
    if a.json:
        Path(a.json).write_text(json.dumps({f"{n} {d}": xs for (n, d), xs in res.items()},
                                           indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
