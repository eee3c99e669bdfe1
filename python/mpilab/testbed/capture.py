"""Kernel-timestamped capture of lone ICMP echoes crossing the testbed's WAN router: an
independent measure of the delay line (not its own counters). A raw packet socket
(AF_PACKET, ETH_P_ALL, SO_TIMESTAMPNS) in the router namespace records when each echo
arrives on a site leg, enters and leaves the delay line's tun device, and departs on the
other site leg. Used by bench/testbed_lone_capture.py and tests/python/test_testbed_delayline.py.
"""

from __future__ import annotations

import subprocess
import sys

from mpilab.testbed.spec import Spec

# Runs inside the router namespace: sleeps (so no packet wakes it: a sleeping reader costs
# the kernel no wake-up, which would otherwise be timed into the very path it watches), then
# drains the socket and prints "iface pkttype icmp_type id seq sec nsec" per ICMP echo packet
# seen on the given interfaces.
CAPTURE = r"""
import socket, struct, sys, time
ifs = set(sys.argv[1].split(','))
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(3))  # ETH_P_ALL: egress too
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
print('ready', flush=True)
time.sleep(float(sys.argv[2]))
while True:
    try:
        data, anc, _, addr = s.recvmsg(128, socket.CMSG_SPACE(16), socket.MSG_DONTWAIT)
    except BlockingIOError:
        break
    if addr[0] not in ifs or addr[1] != 0x0800 or len(data) < 28 or data[9] != 1:
        continue
    hl = (data[0] & 15) * 4
    typ = data[hl]
    if typ not in (0, 8):
        continue
    ident, seq = struct.unpack('!HH', data[hl + 4:hl + 8])
    ts = [struct.unpack('qq', d[:16]) for lv, ty, d in anc if lv == socket.SOL_SOCKET and ty == 35]
    if ts:
        print(addr[0], addr[2], typ, ident, seq, ts[0][0], ts[0][1])
"""



def start(sp: Spec, seconds: float, ifaces: str = "s0r0,s1r0,dl0") -> subprocess.Popen[str]:
    """Start a capture in the router namespace of `sp` that sleeps `seconds`, then prints
    what it saw; returns once it is listening. Read its output with communicate()."""
    cap = subprocess.Popen(["ip", "netns", "exec", sp.router_ns(), sys.executable, "-c",
                            CAPTURE, ifaces, f"{seconds:g}"], stdout=subprocess.PIPE, text=True)
    assert cap.stdout is not None
    if cap.stdout.readline().strip() != "ready":
        cap.kill()
        cap.wait()
        raise RuntimeError("packet capture in the router namespace did not start")
    return cap


def segments(lines: list[str]) -> list[dict[str, float]]:
    """Per one-way crossing (request s0r0 -> s1r0, reply s1r0 -> s0r0), matched by (ICMP
    type, id, seq), from capture lines (pkttype 4 = outgoing): `total` arrival on the
    ingress leg to departure on the egress leg; `in` ingress leg to the tun device (routing
    into dl0); `hold` into the tun device to back out of it (the delay line: its read,
    hold and write); `out` out of the tun device to the egress leg (forwarding, htb)."""
    t: dict[tuple[str, str, int, int, int], int] = {}
    for ln in lines:
        f = ln.split()
        if len(f) != 7:
            continue
        iface, pkt, typ, ident, seq = f[0], int(f[1]), int(f[2]), int(f[3]), int(f[4])
        t[(iface, "out" if pkt == 4 else "in", typ, ident, seq)] = \
            int(f[5]) * 1_000_000_000 + int(f[6])
    out = []
    for (iface, d, typ, ident, seq), t0 in t.items():
        if d != "in" or (iface, typ) not in (("s0r0", 8), ("s1r0", 0)):
            continue
        dst = "s1r0" if typ == 8 else "s0r0"
        t1 = t.get((dst, "out", typ, ident, seq))
        ta = t.get(("dl0", "out", typ, ident, seq))
        tb = t.get(("dl0", "in", typ, ident, seq))
        if t1 is None or ta is None or tb is None:
            continue
        out.append({"total": (t1 - t0) * 1e-9, "in": (ta - t0) * 1e-9,
                    "hold": (tb - ta) * 1e-9, "out": (t1 - tb) * 1e-9})
    return out
