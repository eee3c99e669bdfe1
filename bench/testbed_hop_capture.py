#!/usr/bin/env python3
"""Where a lone datagram's time goes across the testbed's WAN, and what the delay line adds.

Issue 25's delay-line target compares the delayed WAN against the undelayed one. In
an earlier run the undelayed route's lone forward datagram (s0n0 -> s1n0, after the client
slept) took 175-912 us one way while its echo took 20-40 us, and separate testbeds (or runs
seconds apart) differed by hundreds of us: the comparison measured the machine, not the
line. Here, per delay, one 2 x 2 testbed; per run, lone UDP datagrams (kernel-stamped at
both ends, mpilab.testbed.oneway) alternate between the undelayed route (the router's
policy rules off; the echo waits D, so both ways have been idle as long as behind the
line) and the delayed one, a gap apart, so each pair sees the same machine. A kernel-stamped
packet capture (AF_PACKET, ETH_P_ALL, SO_TIMESTAMPNS) in every namespace on the path splits
each datagram's one-way time into: to the router's ingress leg, across the router, and from
its egress leg to the receiver; "in" is the receive stamp where the previous device handed
the packet over, "out" where a device starts transmitting it (after its qdisc).

`--variants 'NAME=ARGS;...'` compares delay-line modes side by side on one testbed per
delay: each run goes through the variants in turn, restarting the line with the variant's
options (net.restart_delayline) and sending `--warm` unrecorded pairs first (a line that
learns, such as --cold-crossing, starts each run from what those teach it); the line's own
statistics after each run are kept in the JSON.

Usage (root; a bench slot for numbers):
  /work/shared/tools/mlock bench python3 bench/testbed_hop_capture.py --runs 10 --pairs 5
  ... --variants 'default=;cold=--cold-crossing;spin=--spin-last auto'
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import statistics
import subprocess
import sys
from typing import Any

from harness import loadavg, write_json
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


#: the namespaces on the measured path (s0n0 <-> s1n0 across the router)
PATH_NODES = ("s0n0", "s1n0")


def start_captures(sp: spec.Spec) -> dict[str, subprocess.Popen[str]]:
    caps = {}
    path = [sp.ns(n) for n in PATH_NODES] + [sp.sw_ns(0), sp.sw_ns(1), sp.router_ns()]
    for ns in path:
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


SEGS = ("to router", "router", "from router", "end to end")


def segments(tl: dict[str, list[tuple[str, float]]]) -> dict[int, dict[str, dict[str, float]]]:
    """Per datagram (sequence number) and direction, its times (us) to the router's ingress
    leg, across the router (ingress leg to egress leg: the routing, the delay line if any,
    htb), from the egress leg to the receiver, and end to end (sender's interface to
    receiver's)."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    for key, v in tl.items():
        way = "back" if key.startswith("back") else "fwd"
        seq = key.removeprefix(way)
        if not seq.isdigit():
            continue
        src, ing, egr, dst = (("s0n0/r0/out", "wan/s0r0/in", "wan/s1r0/out", "s1n0/r0/in")
                              if way == "fwd" else
                              ("s1n0/r0/out", "wan/s1r0/in", "wan/s0r0/out", "s0n0/r0/in"))
        t = dict(v)
        if all(h in t for h in (src, ing, egr, dst)):
            out.setdefault(int(seq), {})[way] = {
                name: t[y] - t[x] for name, x, y in zip(
                    SEGS, (src, ing, egr, src), (ing, egr, dst, dst), strict=True)}
    return out


def one_run(sp: spec.Spec, pairs: int, interval: float, delay: float,
            verbose: bool) -> dict[int, dict[str, dict[str, float]]]:
    caps = start_captures(sp)
    try:
        oneway.udp_oneway_paired(sp, "s0n0", "s1n0", pairs, interval, delay,
                                 [r.removeprefix("rule add ") for r in net.delay_rules(sp, 0)])
    finally:
        rows = collect(caps)
    tl = timelines(rows, sp.prefix)
    if verbose:
        for key, v in sorted(tl.items()):
            print(f"   {key}: " + "  ".join(f"{h} {t:.1f}" for h, t in v))
    return segments(tl)


def pair_excess(seg: dict[int, dict[str, dict[str, float]]], pairs: int,
                d_us: float) -> dict[str, dict[str, list[float]]]:
    """Per direction and segment, delayed (odd) - undelayed (even) - D of every pair whose
    two datagrams were both seen whole (D only on the router and end to end)."""
    out: dict[str, dict[str, list[float]]] = {"fwd": {}, "back": {}}
    for i in range(pairs):
        b, x = seg.get(2 * i, {}), seg.get(2 * i + 1, {})
        for way in ("fwd", "back"):
            if way in b and way in x:
                for name in SEGS:
                    out[way].setdefault(name, []).append(
                        x[way][name] - b[way][name] - (d_us if name in SEGS[1::2] else 0.0))
    return out


def summarize(out: dict[str, list[dict[str, object]]]) -> None:
    """Per delay (and variant), direction and segment: the median of the runs' medians,
    their range, and the runs within 10 us (the target's measure)."""
    med = statistics.median
    for name, runs in out.items():
        for w in ("fwd", "back"):
            for segname in ("end to end", "router"):
                v = [med(x["excess"][w][segname]) for x in runs  # type: ignore[index]
                     if x["excess"][w]]  # type: ignore[index]
                if v:
                    print(f"{name:>14} {w:4s} {segname:10s}: run medians {med(v):+.1f} us "
                          f"(range {min(v):+.1f} .. {max(v):+.1f}), within 10 us in "
                          f"{sum(abs(x) <= 10 for x in v)}/{len(v)} runs")


def parse_variants(text: str | None) -> list[tuple[str, list[str]]]:
    """'NAME=ARGS;NAME=ARGS' -> [(name, argv)]; None: one variant, the line's defaults
    (or $MPILAB_DELAYLINE_ARGS)."""
    if text is None:
        return [("", shlex.split(os.environ.get("MPILAB_DELAYLINE_ARGS", "")))]
    out = []
    for item in filter(None, (x.strip() for x in text.split(";"))):
        name, eq, args = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise ValueError(f"--variants: '{item}' is not NAME=ARGS")
        out.append((name.strip(), shlex.split(args)))
    if not out or len({n for n, _ in out}) != len(out):
        raise ValueError("--variants: give at least one variant, each name once")
    return out


def line_summary(stats: dict[str, object] | None) -> dict[str, object] | None:
    """What the run's line said about itself: its options' effect (cold crossing learned and
    used, spin margin and gaps, read lag, release lateness, crossing p50)."""
    if not stats:
        return None
    keep = ("cold_crossing", "spin_last", "read_lag", "late_percentiles_s", "wake_margin_s",
            "router", "sched", "busy_poll", "packets")
    return {k: stats[k] for k in keep if k in stats}


def report_run(key: str, r: int, res: dict[str, object]) -> None:
    """One line per run: each direction's medians per segment, and what the line said."""
    med = statistics.median
    exc: dict[str, dict[str, list[float]]] = res["excess"]  # type: ignore[assignment]
    line: dict[str, Any] = res["line"] or {}  # type: ignore[assignment]
    cold, lag = line.get("cold_crossing", {}), line.get("read_lag", {})
    spin = line.get("spin_last", {})
    print(f"{key:>14} run {r + 1}: " + "; ".join(
        f"{w}: end-to-end {med(e['end to end']):+.1f} (router {med(e['router']):+.1f}, "
        f"to {med(e['to router']):+.1f}, from {med(e['from router']):+.1f}; "
        f"{len(e['end to end'])} pairs)" for w, e in exc.items() if e)
        + (f"; line: read lag p50 {lag.get('p50_s', 0) * 1e6:.1f} us, release late p50 "
           f"{line.get('late_percentiles_s', {}).get('p50', 0) * 1e6:.1f} us" if line else "")
        + (f", cold used {cold.get('used')}/learned {cold.get('learned')}, added mean "
           f"{cold.get('added_mean_s', 0) * 1e6:.1f} us" if cold.get("enabled") else "")
        + (f", spin margin {spin.get('margin_s', 0) * 1e6:.0f} us, gaps {spin.get('spin_gaps')}"
           if spin.get("mode", "off") != "off" else ""), flush=True)


def run_variant(sp: spec.Spec, a: argparse.Namespace, name: str, argv: list[str],
                current: list[str] | None, d: float, interval: float) -> dict[str, object]:
    if argv != current or current is None:
        if current is not None:
            net.restart_delayline(a.prefix, argv)
        oneway.udp_oneway(sp, "s0n0", "s1n0", 2, 0.05)  # the new line's path warm
        rules = [r.removeprefix("rule add ") for r in net.delay_rules(sp, 0)]
        if a.warm:  # what a learning line starts from
            oneway.udp_oneway_paired(sp, "s0n0", "s1n0", a.warm, interval, d, rules)
    seg = one_run(sp, a.pairs, interval, d, a.verbose)
    return {"variant": name, "args": argv, "segments": {str(k): v for k, v in seg.items()},
            "excess": pair_excess(seg, a.pairs, d * 1e6),
            "line": line_summary(net.delayline_stats(a.prefix))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=5,
                    help="pairs of lone datagrams (undelayed, delayed) per run (default 5)")
    ap.add_argument("--runs", type=int, default=3, help="runs per delay (default 3)")
    ap.add_argument("--delays", default="10us,100us,1ms,10ms,100ms",
                    help="WAN delays, one testbed each (default 10us,100us,1ms,10ms,100ms)")
    ap.add_argument("--prefix", default="hop", help="testbed prefix (default hop)")
    ap.add_argument("--line-args", default=None,
                    help="options for mpilab-delayline (MPILAB_DELAYLINE_ARGS), with '=', e.g. "
                         "--line-args='--arrival tun'")
    ap.add_argument("--variants", default=None,
                    help="'NAME=ARGS;...': delay-line options compared side by side, run by "
                         "run on one testbed per delay (e.g. 'default=;cold=--cold-crossing')")
    ap.add_argument("--warm", type=int, default=3,
                    help="unrecorded pairs after each restart of the line (default 3)")
    ap.add_argument("--block", type=int, default=1,
                    help="runs of a variant before the next variant's (default 1: they "
                         "alternate run by run; more: fewer restarts)")
    ap.add_argument("--verbose", action="store_true", help="print every datagram's hops")
    ap.add_argument("--json", help="write the segments here")
    a = ap.parse_args()
    if not 1 <= a.pairs <= 500 or not 1 <= a.runs <= 100 or not 0 <= a.warm <= 100 \
            or not 1 <= a.block <= 100:
        ap.error("--pairs must be 1..500, --runs 1..100, --warm 0..100 and --block 1..100")
    try:
        delays = [(d, parse_duration(d)) for d in a.delays.split(",")]
        if a.line_args is not None:
            os.environ["MPILAB_DELAYLINE_ARGS"] = a.line_args
        variants = parse_variants(a.variants)
    except (MpilabError, ValueError) as e:
        ap.error(str(e))
    if any(d <= 0 for _, d in delays):
        ap.error("every delay must be > 0 (each run measures the undelayed route too)")

    def _term(signum: int, _frame: object) -> None:  # mlock's slot end: still bring it down
        raise SystemExit(f"stopped by signal {signum}")
    signal.signal(signal.SIGTERM, _term)
    print("delay line variants: " + "; ".join(
        f"{n or 'line'}: {' '.join(v) or '(defaults)'}" for n, v in variants))
    load = loadavg()
    print(f"load at start: {load}", flush=True)
    print("each run: lone datagrams alternate between the undelayed route (policy rules "
          "off, echo sent D after the request arrives) and the delayed one, a gap apart; "
          "excess = delayed - undelayed - D per pair, the run's median over its pairs, us",
          flush=True)
    out: dict[str, list[dict[str, object]]] = {}
    try:
        for name, d in delays:
            text = (f'prefix = "{a.prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 2\n'
                    f'[lan]\nrate = "10Gbit"\n[wan]\nnode_rate = "1Gbit"\n'
                    f'total_rate = "1Gbit"\ndelay = "{name}"\ndelay_backend = "delayline"\n')
            sp = spec.load_text(text, f"<hop {name}>")
            interval = oneway.lone_gap(d)
            os.environ["MPILAB_DELAYLINE_ARGS"] = shlex.join(variants[0][1])
            net.up(sp)
            current: list[str] | None = None  # the line just started: warm it up first
            try:
                order = [(r0 + j, vname, argv) for r0 in range(0, a.runs, a.block)
                         for vname, argv in variants
                         for j in range(min(a.block, a.runs - r0))]
                for r, vname, argv in order:
                    res = run_variant(sp, a, vname, argv, current, d, interval)
                    current = argv
                    key = f"{name} {vname}".strip()
                    out.setdefault(key, []).append(res)
                    report_run(key, r, res)
            finally:
                net.down(a.prefix)
    finally:
        summarize(out)
        if a.json:
            write_json(a.json, {"delays": a.delays, "pairs": a.pairs, "warm": a.warm,
                                "variants": [{"name": n, "args": v} for n, v in variants],
                                "load_at_start": load, "runs": out})
    return 0


if __name__ == "__main__":
    sys.exit(main())
