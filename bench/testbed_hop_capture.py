#!/usr/bin/env python3
"""Where a lone datagram's time goes, hop by hop, across the testbed's WAN.

Issue 25's delay-line target compares the delayed WAN against the undelayed one; in
session 20 the undelayed route's lone *forward* datagram (s0n0 -> s1n0, after the client
slept) took 175-912 us while its echo back took 20-40 us, so the comparison measured
that, not the line. This script brings up a 2 x 2 testbed (WAN delay given, default 0:
no delay line), starts a kernel-stamped packet capture (AF_PACKET, ETH_P_ALL,
SO_TIMESTAMPNS) in every namespace on the path (both nodes, both switches, the router),
sends lone UDP datagrams with the same kernel-stamped ping-pong as bench/delayline_lone.py
(mpilab.testbed.oneway), and prints, per datagram and direction, the time of every hop
relative to the sender's interface: each interface's "in" (the kernel's receive stamp,
taken where the previous device handed the packet over) and "out" (the stamp where the
device starts transmitting it, after its qdisc).

Usage (root; a bench slot for numbers):
  /work/shared/tools/mlock bench python3 bench/testbed_hop_capture.py --count 9
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from mpilab.errors import MpilabError
from mpilab.testbed import net, oneway, spec
from mpilab.units import parse_duration

# Runs in one namespace: blocks on its stdin until the lead closes it (a sleeping reader
# adds no wake-up to the path it watches), then drains and prints "iface pkttype sport
# dport payload sec nsec" for every UDP packet to or from the test port.
CAPTURE = r"""
import socket, struct, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
port = int(sys.argv[1])
print('ready', flush=True)
sys.stdin.read()
while True:
    try:
        data, anc, _, addr = s.recvmsg(128, socket.CMSG_SPACE(16), socket.MSG_DONTWAIT)
    except BlockingIOError:
        break
    if addr[1] != 0x0800 or len(data) < 28 or data[9] != 17:
        continue
    hl = (data[0] & 15) * 4
    sp, dp = struct.unpack('!HH', data[hl:hl + 4])
    if port not in (sp, dp):
        continue
    body = data[hl + 8:].decode(errors='replace')
    ts = [struct.unpack('qq', d[:16]) for lv, ty, d in anc if lv == socket.SOL_SOCKET and ty == 35]
    if ts:
        print(addr[0], addr[2], sp, dp, body or '-', ts[0][0], ts[0][1])
"""


def start_captures(sp: spec.Spec) -> dict[str, subprocess.Popen[str]]:
    caps = {}
    for ns in sp.namespaces():
        p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", CAPTURE,
                              str(oneway.PORT)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None
        if p.stdout.readline().strip() != "ready":
            raise MpilabError(f"capture in {ns} did not start")
        caps[ns] = p
    return caps


def collect(caps: dict[str, subprocess.Popen[str]]) -> list[tuple[str, str, str, str, int]]:
    """(namespace, iface, direction in|out, 'fwd'|'back' + payload, ns stamp) rows."""
    rows = []
    for ns, p in caps.items():
        out, _ = p.communicate("", timeout=120)
        for f in (ln.split() for ln in out.splitlines()):
            if len(f) != 7:
                continue
            iface, pkt, sport, _dport, body = f[0], int(f[1]), int(f[2]), f[3], f[4]
            way = "back" if sport == oneway.PORT else "fwd"
            rows.append((ns, iface, "out" if pkt == 4 else "in", f"{way}{body}",
                         int(f[5]) * 1_000_000_000 + int(f[6])))
    return rows


def timelines(rows: list[tuple[str, str, str, str, int]],
              short: str) -> dict[str, list[tuple[str, float]]]:
    """Per datagram: [(hop, us since its first stamp)] in time order."""
    by: dict[str, list[tuple[int, str]]] = {}
    for ns, iface, d, key, t in rows:
        by.setdefault(key, []).append((t, f"{ns.removeprefix(short + '-')}/{iface}/{d}"))
    out = {}
    for key, v in by.items():
        v.sort()
        out[key] = [(hop, (t - v[0][0]) * 1e-3) for t, hop in v]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=9, help="lone datagrams (default 9)")
    ap.add_argument("--interval", default="200ms", help="gap between datagrams")
    ap.add_argument("--delay", default="0ms", help="WAN delay of the testbed (default 0)")
    ap.add_argument("--prefix", default="hop", help="testbed prefix (default hop)")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    if a.count < 1 or a.count > 1000:
        ap.error("--count must be 1..1000")
    try:
        interval = parse_duration(a.interval)
        parse_duration(a.delay)
    except (MpilabError, ValueError) as e:
        ap.error(str(e))
    with open("/proc/loadavg") as f:
        print(f"load at start: {' '.join(f.read().split()[:3])}", flush=True)
    text = (f'prefix = "{a.prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 2\n'
            f'[lan]\nrate = "10Gbit"\n[wan]\nnode_rate = "1Gbit"\ntotal_rate = "1Gbit"\n'
            f'delay = "{a.delay}"\ndelay_backend = "delayline"\n')
    sp = spec.load_text(text, "<hop>")
    net.up(sp)
    try:
        oneway.udp_oneway(sp, "s0n0", "s1n0", 2, 0.05)  # resolve neighbours first
        caps = start_captures(sp)
        t0 = time.time()
        fwd, back = oneway.udp_oneway(sp, "s0n0", "s1n0", a.count, interval)
        print(f"ping-pong took {time.time() - t0:.1f} s; kernel-stamped one-way (us): fwd "
              + " ".join(f"{x * 1e6:.0f}" for x in fwd) + "; back "
              + " ".join(f"{x * 1e6:.0f}" for x in back), flush=True)
        rows = collect(caps)
    finally:
        net.down(a.prefix)
    tl = timelines(rows, a.prefix)
    hops: dict[str, dict[str, list[float]]] = {"fwd": {}, "back": {}}
    for key, v in sorted(tl.items()):
        print(f"{key}: " + "  ".join(f"{h} {t:.1f}" for h, t in v))
        for h, t in v:
            hops[key[:4] if key.startswith("back") else "fwd"].setdefault(h, []).append(t)
    for way, hs in hops.items():
        print(f"median per hop, {way} (us since the first stamp):")
        for h, ts in sorted(hs.items(), key=lambda kv: statistics.median(kv[1])):
            print(f"   {h:28s} {statistics.median(ts):9.1f}  (n {len(ts)}, max {max(ts):.1f})")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"rows": rows, "fwd_s": fwd, "back_s": back}, f)
        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
