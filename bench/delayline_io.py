#!/usr/bin/env python3
"""The delay line's I/O and scheduling side by side: a lone packet's one-way delay across a
2 x 2 testbed's WAN beyond the configured delay, for several delay-line variants brought up
at once (one testbed each) and measured run by run against the same testbed without a WAN
delay (the router forwarding directly), all probed at once with their lone packets
interleaved in time (--sequential: one after the other).

A variant is NAME=IO[:TRIM]|ARGS: IO is wan.delay_io (auto, tun or packet; auto is the
spec's default, which is packet here) or none, a control: a second testbed without a WAN
delay, probed like a variant and read against the same reference with nothing subtracted
(the probe's own floor: how far two undelayed testbeds read apart), TRIM wan.delay_trim
("auto": measured at up, printed), ARGS the delay line's extra options
($MPILAB_DELAYLINE_ARGS), e.g. "tun=tun|;norr=tun|--no-realtime;cal=packet:auto|".
Per run and variant: UDP-0, the worse direction's (further from D, early or late) median
one-way time of lone kernel-stamped UDP datagrams (mpilab.testbed.oneway: stamped where they
leave the sender's interface and reach the receiver's) minus the undelayed median minus D.
The echo is a lone packet too: on both routes it waits half the gap between datagrams, so
each way starts on an idle node and crosses an idle path (--echo-after delay: the undelayed
echo waits D and the delayed one none, an earlier probe, which starts the delayed echo
on a node its request has just warmed). ICMP-0 the same for
lone kernel-stamped ICMP echo requests, one way (stamped where they leave the sender's
interface and where they reach the far node's, whose kernel makes the reply); ICMP-rt half
the echo's round trip, likewise (the undelayed reply leaves at once over the path its request
has just warmed, which a reply behind the line finds idle: what remains is that, not the
line). Nothing here reads the delay line's own counters, except its CPU time and I/O
counters printed at the end of each delay.

Needs root. Example (one bench slot per delay or two):
  /work/shared/tools/mlock bench python3 bench/delayline_io.py --delays 100us,1ms --runs 4 \\
      --variants "tun=tun|;norr=tun|--no-realtime;packet=packet|"
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from harness import loadavg
from mpilab.errors import MpilabError
from mpilab.testbed import net, oneway, spec
from mpilab.units import parse_duration


def up(delay: str, prefix: str, io: str, args: str) -> spec.Spec:
    io, _, trim = io.partition(":")
    os.environ["MPILAB_DELAYLINE_ARGS"] = args
    try:
        text = (f'prefix = "{prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 2\n'
                f'[lan]\nrate = "10Gbit"\n[wan]\nnode_rate = "1Gbit"\ntotal_rate = "1Gbit"\n'
                f'delay = "{delay}"\ndelay_backend = "delayline"\ndelay_io = "{io}"\n'
                + (f'delay_trim = "{trim}"\n' if trim else ""))
        sp = spec.load_text(text, f"<{prefix}>")
        net.up(sp)
        return sp
    finally:
        os.environ.pop("MPILAB_DELAYLINE_ARGS", None)


def measure(sp: spec.Spec, d: float, count: int,
            reply_after: float | None = None) -> tuple[list[float], list[float], list[float],
                                                      list[float]]:
    """UDP one way both ways, ICMP echo requests one way, ICMP round trips (s). The UDP
    echo waits reply_after (None: half the gap, a lone packet)."""
    gap = oneway.lone_gap(d)
    wait = gap / 2 if reply_after is None else reply_after
    fwd, back = oneway.udp_oneway(sp, "s0n0", "s1n0", count, gap, wait)
    req, rep = oneway.icmp_oneway(sp, "s0n0", "s1n0", count, gap)
    return fwd, back, req, [a + b for a, b in zip(req, rep, strict=True)]


Row = tuple[float, float, float]  # UDP-0, ICMP-0 (the request), ICMP-rt (half the echo)
Probes = tuple[list[float], list[float], list[float], list[float]]


def turn(base: spec.Spec, delayed: list[tuple[spec.Spec, float]], d: float, count: int,
         old: bool, together: bool) -> list[Probes]:
    """One run's probes: the undelayed testbed's, then each variant's. Together (the
    default): all at once, started gap / (2 (n + 1)) apart, so that their lone packets
    interleave in time and never meet, and a level shift of the machine (seconds long here)
    moves the reference and the delayed figures alike; else one after the other. Each
    variant comes with its own delay (0 for a control)."""
    sps = [(base, d if old else None)] + [(sp, d - dv if old else None) for sp, dv in delayed]
    if not together:
        return [measure(sp, d, count, ra) for sp, ra in sps]
    step = oneway.lone_gap(d) / (2 * len(sps))

    def staggered(k: int) -> Probes:
        time.sleep(k * step)
        return measure(sps[k][0], d, count, sps[k][1])

    with ThreadPoolExecutor(len(sps)) as ex:
        return list(ex.map(staggered, range(len(sps))))


def one_delay(delay: str, a: argparse.Namespace,
              variants: list[tuple[str, str, str]]) -> dict[str, list[Row]]:
    d, med = parse_duration(delay), statistics.median
    out: dict[str, list[Row]] = {}
    prefixes = [f"{a.prefix}{k}" for k in range(len(variants) + 1)]
    try:
        base_sp = up("0ms", prefixes[-1], "tun", "")
        sps = [(name, up("0ms" if io == "none" else delay, prefixes[k],
                         "tun" if io == "none" else io, args), 0.0 if io == "none" else d)
               for k, (name, io, args) in enumerate(variants)]
        for name, sp, _ in sps:
            tr = (net.load_state(sp.prefix) or {}).get("delay_trim") or {}
            if tr.get("measured"):
                print(f"   {delay} {name}: trim measured at up {tr['trim_s'] * 1e6:.1f} us "
                      f"(excess fwd {tr['excess_fwd_s'] * 1e6:.1f}, back "
                      f"{tr['excess_back_s'] * 1e6:.1f}; spread {tr['spread_s'] * 1e6:.1f} us, "
                      f"steady {tr['steady']}; standard error "
                      f"{float(tr.get('se_s', 0.0)) * 1e6:.1f} us, {tr.get('blocks', 2)} turns)",
                      flush=True)
        for r in range(a.runs):
            old = a.echo_after == "delay"
            got = turn(base_sp, [(sp, dv) for _, sp, dv in sps], d, a.count, old, a.together)
            bf, bb, bq, bw = got[0]
            line = f"{delay} run {r + 1}: undelayed fwd {med(bf) * 1e6:.1f} back " \
                   f"{med(bb) * 1e6:.1f} us"
            for (name, _, dv), (f, b, q, w) in zip(sps, got[1:], strict=True):
                ways = (med(f) - med(bf) - dv, med(b) - med(bb) - dv)
                udp = max(ways, key=abs)  # the direction further from D, early or late
                icmp = med(q) - med(bq) - dv
                rt = (med(w) - med(bw)) / 2 - dv
                out.setdefault(name, []).append((udp, icmp, rt))
                line += (f" | {name}: UDP-0 {udp * 1e6:6.1f} (fwd {ways[0] * 1e6:.1f}, back "
                         f"{ways[1] * 1e6:.1f}) ICMP-0 {icmp * 1e6:6.1f} ICMP-rt {rt * 1e6:6.1f}")
            print(line, flush=True)
        for name, sp, dv in sps:
            if not dv:
                continue  # a control has no delay line
            st = net.delayline_stats(sp.prefix) or {}
            cpu = float(st.get("cpu_user_s", 0.0)) + float(st.get("cpu_sys_s", 0.0))
            print(f"   {delay} {name}: line sched {st.get('sched')}, cpu {cpu:.2f} s, "
                  f"io {st.get('io')}", flush=True)
    finally:
        for p in prefixes:
            net.down(p)
    return out


def parse_variants(text: str) -> list[tuple[str, str, str]]:
    """'NAME=IO[:TRIM]|ARGS;...' -> [(name, io[:trim], args)]; ValueError naming a
    malformed one (TRIM: wan.delay_trim, "auto" or a duration)."""
    out = []
    for v in text.split(";"):
        name, eq, rest = v.partition("=")
        io, bar, args = rest.partition("|")
        kind, colon, trim = io.partition(":")
        ok = bool(eq and name and bar) and kind in (*spec.DELAY_IOS, "none")
        ok = ok and not (kind == "none" and (colon or args))
        if ok and colon and trim != "auto":
            try:
                parse_duration(trim)
            except ValueError:
                ok = False
        if not ok:
            raise ValueError(f"'{v}' is not NAME=IO[:TRIM]|ARGS (IO auto, tun, packet or none, "
                             "which takes no TRIM or ARGS; TRIM auto or a duration)")
        out.append((name, io, args))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--delays", default="100us,1ms")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--count", type=int, default=7, help="lone packets per run, path, probe")
    ap.add_argument("--prefix", default="dio")
    ap.add_argument("--echo-after", choices=("lone", "delay"), default="lone",
                    help="the UDP echo: a lone packet on both routes (half the gap), or "
                         "the undelayed one after D and the delayed one at once")
    ap.add_argument("--variants", default="tun=tun|;packet=packet|")
    ap.add_argument("--sequential", dest="together", action="store_false",
                    help="probe the undelayed testbed and each variant one after the other "
                         "(an earlier probe), not all at once with interleaved packets")
    a = ap.parse_args()
    try:
        variants = parse_variants(a.variants)
    except ValueError as e:
        ap.error(f"--variants: {e}")
    if not 1 <= a.runs <= 100 or not 1 <= a.count <= 1000:
        ap.error("--runs 1..100, --count 1..1000")
    try:
        delays = [(x, parse_duration(x)) for x in a.delays.split(",")]
    except ValueError as e:
        ap.error(f"--delays: {e}")
    if os.geteuid() != 0:
        ap.error("needs root (network namespaces)")
    # a stopped bench slot (SIGTERM) still takes the testbeds down (the finally blocks)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"load at start: {loadavg()}", flush=True)
    try:
        res = {delay: one_delay(delay, a, variants) for delay, _ in delays}
    except MpilabError as e:
        print(f"delayline_io: {e}", file=sys.stderr)
        return 1
    print("\nbeyond the configured delay (us; a control, IO none: against the undelayed "
          "reference): median (range); runs within 10 us")
    for delay, per in res.items():
        for name, xs in per.items():
            cols = []
            for label, k in (("UDP-0", 0), ("ICMP-0", 1), ("ICMP-rt", 2)):
                v = [x[k] for x in xs]
                cols.append(f"{label} {statistics.median(v) * 1e6:6.1f} "
                            f"({min(v) * 1e6:.1f}..{max(v) * 1e6:.1f}) "
                            f"{sum(abs(u) <= 10e-6 for u in v)}/{len(v)}")
            print(f"{delay:>6} {name:>10}: " + "; ".join(cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
