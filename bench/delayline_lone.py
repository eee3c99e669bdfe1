#!/usr/bin/env python3
"""A lone packet's one-way delay across the testbed's delay line, measured from outside it,
against the configured delay: issue 25's target "within 10 us of the configured delay from
10 us to 100 ms, 10 of 10 runs".

For each configured delay D and run a fresh testbed of 2 sites x 2 nodes (WAN delay D,
1 Gbit/s, unshaped enough that a 64-byte packet's serialisation is negligible) is brought
up, and lone packets (one every max(0.2 s, 3 D), nothing else on the path) cross it s0n0 ->
s1n0 (the WAN: through the router and the delay line both ways) and s0n0 -> s0n1 (the same
site: the path without the router), measured two ways:
  * ICMP (`ping`): (median WAN round trip - median LAN round trip) / 2 - D;
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
interleaved, run by run.

Needs root. Example:
  /work/shared/tools/mlock bench python3 bench/delayline_lone.py --runs 10 --prefix tru
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from harness import loadavg
from mpilab.testbed import net, spec
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


# The one-way ping-pong: UDP datagrams stamped by the kernel where they leave the sender's
# interface (SO_TIMESTAMPING, TX_SOFTWARE: veth's transmit) and where they arrive at the
# receiver's (RX_SOFTWARE); both ends are namespaces of one machine, so one clock
# (CLOCK_REALTIME): each direction's one-way time is receiver's stamp - sender's stamp,
# without either end's wake-ups or system calls, and nothing from the delay line.
STAMP = r"""
import select, socket, struct, sys, time
SO_TS, TX, RX, SW, TSONLY = 37, 1 << 1, 1 << 3, 1 << 4, 1 << 11
def sock(bind):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_TS, TX | RX | SW | TSONLY)
    s.bind(bind)
    return s
def stamp(anc):
    for lv, ty, d in anc:
        if lv == socket.SOL_SOCKET and ty == SO_TS:
            sec, ns = struct.unpack('qq', d[:16])
            return sec * 1000000000 + ns
    return -1
def txstamp(s):
    for _ in range(2000):
        select.select([], [], [s], 1.0)
        try:
            _, anc, _, _ = s.recvmsg(64, 512, socket.MSG_ERRQUEUE)
        except BlockingIOError:
            continue
        return stamp(anc)
    return -1
"""
SERVER = STAMP + r"""
s = sock((sys.argv[1], int(sys.argv[2])))
s.settimeout(30)
print('ready', flush=True)
for _ in range(int(sys.argv[3])):
    d, anc, _, a = s.recvmsg(64, 512)
    rx = stamp(anc)
    s.sendto(d, a)
    print(d.decode(), rx, txstamp(s), flush=True)
"""
CLIENT = STAMP + r"""
s = sock(('0.0.0.0', 0))
s.settimeout(2)
dst = (sys.argv[1], int(sys.argv[2]))
for k in range(int(sys.argv[3])):
    time.sleep(float(sys.argv[4]))
    s.sendto(str(k).encode(), dst)
    tx = txstamp(s)
    d, anc, _, _ = s.recvmsg(64, 512)
    print(d.decode(), tx, stamp(anc), flush=True)
"""


def udp_oneway(sp: spec.Spec, client: str, server: str, count: int,
               interval: float) -> tuple[list[float], list[float]]:
    """Lone UDP datagrams client -> server and their echoes back, one every `interval`:
    the one-way times of both directions from kernel stamps at the two interfaces."""
    addr = sp.addr(server, 0)
    srv = subprocess.Popen(["ip", "netns", "exec", sp.ns(server), sys.executable, "-c", SERVER,
                            addr, "7777", str(count)], stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None
        srv.stdout.readline()
        p = subprocess.run(["ip", "netns", "exec", sp.ns(client), sys.executable, "-c", CLIENT,
                            addr, "7777", str(count), str(interval)], capture_output=True,
                           text=True, timeout=count * (interval + 2) + 20, check=False)
        out, _ = srv.communicate(timeout=60)  # it ends after `count` echoes
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    cl = {f[0]: (int(f[1]), int(f[2])) for f in (ln.split() for ln in p.stdout.splitlines())
          if len(f) == 3}
    sv = {f[0]: (int(f[1]), int(f[2])) for f in (ln.split() for ln in out.splitlines())
          if len(f) == 3}
    fwd = [(sv[k][0] - cl[k][0]) * 1e-9 for k in cl if k in sv and min(*cl[k], *sv[k]) > 0]
    back = [(cl[k][1] - sv[k][1]) * 1e-9 for k in cl if k in sv and min(*cl[k], *sv[k]) > 0]
    if len(fwd) != count:
        raise SystemExit(f"udp one-way {client} -> {server}: {len(fwd)} of {count} stamped "
                         f"({p.stderr.strip()[-300:]})")
    return fwd, back


def delayline_stats(prefix: str) -> dict[str, object]:
    return net.delayline_stats(prefix) or {}


def up(delay: str, prefix: str) -> spec.Spec:
    text = (f'prefix = "{prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 2\n'
            f'[lan]\nrate = "10Gbit"\n[wan]\nnode_rate = "1Gbit"\ntotal_rate = "1Gbit"\n'
            f'delay = "{delay}"\ndelay_backend = "delayline"\n')
    sp = spec.load_text(text, f"<lone {delay}>")
    net.up(sp)
    return sp


def one(sp: spec.Spec, delay: str, count: int,
        base: dict[str, object] | None = None) -> dict[str, object]:
    """One run on a testbed that is up: ICMP and the one-way ping-pong, WAN and LAN; with
    `base` (the same on an undelayed testbed) also the excess over the undelayed WAN."""
    d = parse_duration(delay)
    interval = max(0.2, 3 * d)
    wan = ping(sp.ns("s0n0"), sp.addr("s1n0", 0), count, interval)
    lan = ping(sp.ns("s0n0"), sp.addr("s0n1", 0), count, interval)
    fwd, back = udp_oneway(sp, "s0n0", "s1n0", count, interval)
    lfwd, lback = udp_oneway(sp, "s0n0", "s0n1", count, interval)
    dl = delayline_stats(sp.prefix) if d > 0 else {}
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
        x["udp_least_vs_undelayed_s"] = min(min(fwd) - med(bf), min(back) - med(bb)) - d
    return x


def undelayed(prefix: str, count: int) -> dict[str, object]:
    """The same measurements on the testbed without a WAN delay (no delay line): the path a
    delay of D should lengthen by exactly D."""
    sp = up("0ms", prefix)
    try:
        return one(sp, "0ms", count)
    finally:
        net.down(prefix)


def runs(delay: str, prefix: str, count: int, nruns: int, variants: list[tuple[str, str]],
         reuse: bool) -> Iterator[tuple[str, int, dict[str, object]]]:
    """Every run of one delay, after a measurement of the undelayed testbed: variants
    interleaved run by run (side by side in time), a fresh testbed per run, or with `reuse`
    one per variant kept for all its runs (the delay line's statistics then accumulate)."""
    base = undelayed(prefix, count)
    if reuse:
        for name, args in variants:
            os.environ["MPILAB_DELAYLINE_ARGS"] = args
            sp = up(delay, prefix)
            try:
                for r in range(nruns):
                    yield name, r, one(sp, delay, count, base)
            finally:
                net.down(prefix)
        return
    for r in range(nruns):
        for name, args in variants:
            os.environ["MPILAB_DELAYLINE_ARGS"] = args
            sp = up(delay, prefix)
            try:
                res = one(sp, delay, count, base)
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
                         "--no-advance --busy-poll off'")
    ap.add_argument("--reuse", action="store_true",
                    help="one testbed per delay and variant for all its runs (default: a "
                         "fresh one per run)")
    ap.add_argument("--hogs", type=int, default=0,
                    help="busy loops (`yes`) running through every measurement (default 0)")
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    if not 0 <= a.hogs <= 16:
        ap.error(f"--hogs {a.hogs}: expected 0..16")
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
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(a.hogs)]
    try:
        return measure(a, variants)
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def _us(v: object) -> str:
    return f"{float(v) * 1e6:6.1f}" if isinstance(v, int | float) else f"{'-':>6}"


def measure(a: argparse.Namespace, variants: list[tuple[str, str]]) -> int:
    print(f"{'variant':>8} {'delay':>6} {'run':>3} {'WAN rtt':>10} {'ICMP exc':>9} "
          f"{'UDP raw':>8} {'UDP exc':>8} {'UDP max':>8} {'UDP min':>8} {'ICMP-0':>8} "
          f"{'UDP-0':>8} {'UDPmin-0':>8} {'line x50':>8} "
          f"{'line x99':>8} {'early (max us)':>14} {'rel50':>6} {'fwd50':>6} {'adv':>6}")
    res: dict[tuple[str, str], list[dict[str, object]]] = {}
    for delay in a.delays.split(","):
        for name, r, x in runs(delay, a.prefix, a.count, a.runs, variants, a.reuse):
            res.setdefault((name, delay), []).append(x)
            dl = x["delayline"] if isinstance(x["delayline"], dict) else {}
            rt = dl.get("router") or {}
            pct = rt.get("late_percentiles_s") or {}
            x50, x99 = pct.get("p50"), pct.get("p99")
            us = [float(x[k]) * 1e6 for k in  # type: ignore[arg-type]
                  ("excess_s", "udp_raw_s", "udp_excess_s", "udp_worst_s", "udp_least_s",
                   "icmp_vs_undelayed_s", "udp_vs_undelayed_s", "udp_least_vs_undelayed_s")]
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
                      rt.get("advance_mean_s"))), flush=True)
    os.environ.pop("MPILAB_DELAYLINE_ARGS", None)
    print("\nexcess one-way delay beyond the configured (us), median of the runs (worst run); "
          "runs within 10 us")
    for (name, delay), xs in res.items():
        cells = []
        for key in ("excess_s", "udp_excess_s", "udp_raw_s", "icmp_vs_undelayed_s",
                    "udp_vs_undelayed_s"):
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
