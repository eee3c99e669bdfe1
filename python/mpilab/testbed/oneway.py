"""One-way times across the testbed from kernel stamps, and the delay line's trim.

A UDP ping-pong between two nodes whose datagrams are stamped by the kernel where they
leave the sender's interface (SO_TIMESTAMPING, TX_SOFTWARE: veth's transmit) and where
they reach the receiver's (RX_SOFTWARE). The namespaces share one clock, so each
direction's one-way time is the receiver's stamp minus the sender's, without either end's
wake-ups or system calls, and nothing from the delay line's own counters. Used by
bench/delayline_lone.py and by `testbed up` with wan.delay_trim = "auto" (calibrate_trim):
the lone-packet one-way time across the delayed WAN minus the undelayed WAN minus the
delay is what the path itself adds (the detour through the tun device and the line, the
far side's path that the line's write runs cold); the line takes it off its hold.
"""

from __future__ import annotations

import json
import math
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text
from mpilab.testbed.lineinfo import TRIM_PRECISION_S, signal_line
from mpilab.testbed.spec import Spec

STAMP = r"""
import socket, struct, sys, time
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
    # the socket's timeout waits for the error queue (poll reports POLLERR with POLLIN);
    # select's exception set would not (POLLPRI only): it slept its whole timeout each time
    try:
        _, anc, _, _ = s.recvmsg(64, 512, socket.MSG_ERRQUEUE)
    except OSError:
        return -1
    return stamp(anc)
"""
SERVER = STAMP + r"""
s = sock((sys.argv[1], int(sys.argv[2])))
s.settimeout(30)
hold = float(sys.argv[4])
even_only = len(sys.argv) > 5 and sys.argv[5] == 'even'
print('ready', flush=True)
for _ in range(int(sys.argv[3])):
    d, anc, _, a = s.recvmsg(64, 512)
    rx = stamp(anc)
    if hold > 0 and not (even_only and int(d.decode()) % 2):
        time.sleep(hold)
    s.sendto(d, a)
    print(d.decode(), rx, txstamp(s), flush=True)
"""
CLIENT = STAMP + r"""
import json, subprocess
s = sock(('0.0.0.0', 0))
s.settimeout(2)
dst = (sys.argv[1], int(sys.argv[2]))
toggles = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
for k in range(int(sys.argv[3])):
    if toggles:  # the route of datagram k: the commands of its parity, then the idle gap
        for cmd in toggles[k % 2]:
            subprocess.run(cmd, check=True, capture_output=True)
    time.sleep(float(sys.argv[4]))
    s.sendto(str(k).encode(), dst)
    tx = txstamp(s)
    d, anc, _, _ = s.recvmsg(64, 512)
    print(d.decode(), tx, stamp(anc), flush=True)
"""

# ICMP echoes from a raw socket, stamped by the kernel where each request leaves the
# sender's interface and where its reply reaches it (the reply is made by the far node's
# kernel): round trips without the sender's wake-up, at nanosecond resolution (ping prints
# 3 significant digits: 0.1 ms steps at 10 ms, 1 ms at 100 ms).
ICMP_CLIENT = STAMP + r"""
import os
def csum(b):
    b += b'\0' * (len(b) & 1)
    t = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    t = (t >> 16) + (t & 0xffff)
    t += t >> 16
    return ~t & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.setsockopt(socket.SOL_SOCKET, SO_TS, TX | RX | SW | TSONLY)
s.settimeout(2)
ident = os.getpid() & 0xffff
for k in range(int(sys.argv[2])):
    time.sleep(float(sys.argv[3]))
    body = struct.pack('!HH', ident, k) + b'mpilab-oneway-16'
    s.sendto(struct.pack('!BBH', 8, 0, csum(b'\x08\x00\x00\x00' + body)) + body, (sys.argv[1], 0))
    tx = txstamp(s)
    while True:
        d, anc, _, _ = s.recvmsg(256, 512)
        hl = (d[0] & 15) * 4
        if d[hl] == 0 and struct.unpack('!HH', d[hl + 4:hl + 8]) == (ident, k):
            break
    print(k, tx, stamp(anc), ident, flush=True)
"""

# The far end of icmp_oneway: a raw ICMP socket that sees every echo request the node's
# kernel is about to answer, with the kernel's stamp where it reached the interface.
ICMP_SERVER = STAMP + r"""
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.setsockopt(socket.SOL_SOCKET, SO_TS, RX | SW)
s.settimeout(30)
print('ready', flush=True)
seen = 0
while seen < int(sys.argv[1]):
    d, anc, _, _ = s.recvmsg(256, 512)
    hl = (d[0] & 15) * 4
    if d[hl] == 8 and d[hl + 8:hl + 24] == b'mpilab-oneway-16':
        ident, k = struct.unpack('!HH', d[hl + 4:hl + 8])
        print(ident, k, stamp(anc), flush=True)
        seen += 1
"""

PORT = 7777


def icmp_rtt(sp: Spec, client: str, server: str, count: int, interval: float) -> list[float]:
    """Round trips (s) of lone ICMP echoes client -> server, one every `interval`, from the
    kernel's stamps at the client's interface (raw socket, SO_TIMESTAMPING)."""
    p = _run_probe(["ip", "netns", "exec", sp.ns(client), sys.executable, "-c",
                    ICMP_CLIENT, sp.addr(server, 0), str(count), str(interval)],
                   client, server, count, interval)
    rtts = []
    for f in (ln.split() for ln in p.stdout.splitlines()):
        if len(f) == 4 and int(f[1]) > 0 and int(f[2]) > 0:
            rtts.append((int(f[2]) - int(f[1])) * 1e-9)
    if len(rtts) != count:
        raise MpilabError(f"icmp echo {client} -> {server}: {len(rtts)} of {count} stamped "
                          f"({p.stderr.strip()[-300:]})")
    return rtts


#: how long a probe client may wait for one datagram's transmit stamp and for its echo
#: (the scripts' socket timeouts)
PROBE_WAIT_S = 2.0


def probe_limit(count: int, interval: float) -> float:
    """The time limit of a probe of `count` datagrams `interval` apart: each may wait
    PROBE_WAIT_S for its transmit stamp and as long for its echo, plus 20 s for starting
    the two processes (a busy machine)."""
    return count * (interval + 2 * PROBE_WAIT_S) + 20


def _run_probe(argv: list[str], client: str, server: str, count: int,
               interval: float) -> subprocess.CompletedProcess[str]:
    """Run a probe's client (argv) within probe_limit; one MpilabError line when it does
    not end in time (the process is killed)."""
    limit = probe_limit(count, interval)
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=limit,
                              check=False)
    except subprocess.TimeoutExpired:
        raise MpilabError(f"probe {client} -> {server}: {count} lone packets did not come "
                          f"back within {limit:.0f} s (a stalled delay line or an "
                          "overloaded machine)") from None


def _client_and_server(sp: Spec, client: str, client_args: list[str], server: str,
                       server_args: list[str], count: int,
                       interval: float) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run a probe's server script in `server`'s namespace (it prints 'ready', then ends
    after `count` packets) and its client script in `client`'s; the client's run and the
    server's output (its own errors are not shown: what it missed is missing from its
    stamps). The server is killed if it is still there at the end."""
    srv = subprocess.Popen(["ip", "netns", "exec", sp.ns(server), sys.executable, "-c",
                            *server_args], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    try:
        assert srv.stdout is not None
        srv.stdout.readline()
        p = _run_probe(["ip", "netns", "exec", sp.ns(client), sys.executable, "-c",
                        *client_args], client, server, count, interval)
        out, _ = srv.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        raise MpilabError(f"probe {client} -> {server}: the echo server did not end within "
                          "60 s of its client (an overloaded machine)") from None
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    return p, out


def icmp_oneway(sp: Spec, client: str, server: str, count: int,
                interval: float) -> tuple[list[float], list[float]]:
    """Lone ICMP echoes client -> server, one every `interval`, timed one way each: the
    request from the client's transmit stamp to the server's receive stamp (a raw socket
    beside the server's kernel, which makes the reply), the reply from there to the client's
    receive stamp (so it includes the kernel's turnaround, the same with and without a WAN
    delay). The echo request is the lone packet; its reply leaves at once, over a path the
    request has just crossed."""
    p, out = _client_and_server(sp, client, [ICMP_CLIENT, sp.addr(server, 0), str(count),
                                             str(interval)], server, [ICMP_SERVER, str(count)],
                                count, interval)
    seen = {}
    for f in (ln.split() for ln in out.splitlines()):
        if len(f) == 3 and all(x.lstrip("-").isdigit() for x in f) and int(f[2]) > 0:
            seen[(int(f[0]), int(f[1]))] = int(f[2])
    fwd, back = [], []
    for f in (ln.split() for ln in p.stdout.splitlines()):
        if len(f) != 4 or not all(x.isdigit() for x in f):
            continue
        at = seen.get((int(f[3]), int(f[0])))
        if at is not None and int(f[1]) > 0 and int(f[2]) > 0:
            fwd.append((at - int(f[1])) * 1e-9)
            back.append((int(f[2]) - at) * 1e-9)
    if len(fwd) != count:
        raise MpilabError(f"icmp one-way {client} -> {server}: {len(fwd)} of {count} stamped "
                          f"at both ends ({p.stderr.strip()[-300:]})")
    return fwd, back


def pair_times(client_out: str, server_out: str) -> tuple[list[float], list[float]]:
    """One-way times (s) of the datagrams both ends stamped: client -> server and back.
    Lines are 'seq stamp stamp' (client: sent, echo received; server: received, echo
    sent); anything else, and stamps the kernel did not give (-1), are left out."""
    got = paired_times(client_out, server_out)
    return [f for _, f, _ in got], [b for _, _, b in got]


def udp_oneway(sp: Spec, client: str, server: str, count: int, interval: float,
               reply_after: float = 0.0) -> tuple[list[float], list[float]]:
    """Lone UDP datagrams client -> server and their echoes back, one every `interval`:
    the one-way times of both directions from kernel stamps at the two interfaces.
    `reply_after`: the server sleeps this long before it echoes, so that the way back has
    been idle about as long as it is behind a WAN delay of that length (an echo sent at
    once crosses a path the request has just warmed; behind a delay line it does not)."""
    addr = sp.addr(server, 0)
    p, out = _client_and_server(sp, client, [CLIENT, addr, str(PORT), str(count), str(interval)],
                                server, [SERVER, addr, str(PORT), str(count),
                                         f"{reply_after:.9f}"], count, interval)
    fwd, back = pair_times(p.stdout, out)
    if len(fwd) != count:
        raise MpilabError(f"udp one-way {client} -> {server}: {len(fwd)} of {count} stamped "
                          f"({p.stderr.strip()[-300:]})")
    return fwd, back


def _stamped(text: str) -> dict[int, tuple[int, int]]:
    out = {}
    for f in (ln.split() for ln in text.splitlines()):
        if len(f) == 3 and f[0].isdigit() and all(x.lstrip("-").isdigit() for x in f[1:]):
            if min(int(f[1]), int(f[2])) > 0:
                out[int(f[0])] = (int(f[1]), int(f[2]))
    return out


def paired_times(client_out: str, server_out: str) -> list[tuple[int, float, float]]:
    """(seq, forward, back) one-way times (s) of every datagram both ends stamped."""
    cl, sv = _stamped(client_out), _stamped(server_out)
    return [(k, (sv[k][0] - cl[k][0]) * 1e-9, (cl[k][1] - sv[k][1]) * 1e-9)
            for k in sorted(cl) if k in sv]


def udp_oneway_paired(sp: Spec, client: str, server: str, pairs: int, interval: float,
                      delay: float, rules: list[str]) -> list[tuple[int, float, float]]:
    """Lone datagrams client -> server that alternate between the undelayed route (even
    sequence numbers: the router's policy `rules` removed, the echo sent `delay` after the
    request arrives, so both ways have been idle as long as behind the line) and the
    delayed one (odd: the rules back), the client switching the route before each idle
    gap. Datagrams 2i and 2i+1 are a pair a gap apart, so a level shift of the machine
    (seconds long here) moves both. Returns (seq, forward, back) per stamped datagram;
    the rules are back in place however it ends."""
    router = sp.router_ns()
    off = [["ip", "-n", router, "rule", "del", *r.split()] for r in rules]
    on = [["ip", "-n", router, "rule", "add", *r.split()] for r in rules]
    addr, count = sp.addr(server, 0), 2 * pairs
    srv = subprocess.Popen(["ip", "netns", "exec", sp.ns(server), sys.executable, "-c", SERVER,
                            addr, str(PORT), str(count), f"{delay:.9f}", "even"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert srv.stdout is not None
        srv.stdout.readline()
        p = _run_probe(["ip", "netns", "exec", sp.ns(client), sys.executable, "-c", CLIENT,
                        addr, str(PORT), str(count), str(interval), json.dumps([off, on])],
                       client, server, count, interval)
        out, _ = srv.communicate(timeout=60)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
        have = subprocess.run(["ip", "-n", router, "rule", "show"], capture_output=True,
                              text=True, check=False).stdout
        for r, cmd in zip(rules, on, strict=True):
            if f"iif {r.split('iif ')[1].split()[0]}" not in have:
                subprocess.run(cmd, check=False, capture_output=True)
    got = paired_times(p.stdout, out)
    if len(got) != count:
        raise MpilabError(f"udp one-way {client} -> {server}: {len(got)} of {count} stamped "
                          f"({p.stderr.strip()[-300:]})")
    return got


def lone_gap(delay: float) -> float:
    """The gap between lone probe packets across a WAN delay of `delay`: 0.2 s, or 3 times
    the delay when that is longer, so that each packet finds the path idle."""
    return max(0.2, 3 * delay)


# calibrate_trim's defaults: lone datagrams per turn of a route, warm-up datagrams before
# the delayed ones, turns of the two routes at least and at most, attempts while unsteady
CAL_COUNT, CAL_WARM, CAL_BLOCKS, CAL_MAX_BLOCKS, CAL_ATTEMPTS = 7, 2, 2, 6, 3


def calibration_s(delay: float) -> tuple[float, float]:
    """The probing time of calibrate_trim with its defaults: when its first attempt is
    steady and precise, and at most (attempts that are not steady take CAL_BLOCKS turns,
    the last one up to CAL_MAX_BLOCKS). Each turn sends CAL_COUNT lone datagrams
    undelayed and CAL_COUNT + CAL_WARM through the line, one every lone_gap(delay), each
    echoed half a gap after it arrives (plus the delay on the way: the client waits for
    the echo before its next gap). Starting the probe processes (four per turn) comes on
    top: `up` prints the time the measurement took."""
    gap = lone_gap(delay)
    turn = (2 * CAL_COUNT + CAL_WARM) * (gap + gap / 2) + (CAL_COUNT + CAL_WARM) * 2 * delay
    return CAL_BLOCKS * turn, ((CAL_ATTEMPTS - 1) * CAL_BLOCKS + CAL_MAX_BLOCKS) * turn


def calibration_note(delay: float) -> str:
    """What `up` says before it measures the trim: the probing time, at least and at
    most, and what comes on top."""
    usual, most = calibration_s(delay)
    stall = probe_limit(CAL_COUNT + CAL_WARM, lone_gap(delay))
    return (f"measuring the delay line's trim with lone packets (wan.delay_trim = auto): "
            f"{usual:.0f} s of probing when the first samples are steady and precise, up to "
            f"{most:.0f} s when they are not, plus starting the probe processes (four a "
            f"turn; a probe that stalls is given up after at most {stall:.0f} s and its "
            f"attempt made again); the time it took is printed at the end")


def _iqr(v: list[float]) -> float:
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) >= 2 else [0.0, 0.0, 0.0]
    return q[2] - q[0]


#: the calibration's samples must be this steady (interquartile range of every direction,
#: undelayed and delayed) for a trim: a disturbed machine measures its disturbance (a slot
#: in which undelayed lone datagrams took 200-500 us one way gave a 47 us trim that then
#: made packets 50 us early)
STEADY_IQR_S = 20e-6


def trim_from(delay: float, base: tuple[list[float], list[float]],
              delayed: tuple[list[float], list[float]], cap: float = 1e-3) -> dict[str, Any]:
    """The trim from lone packets measured across the undelayed and the delayed WAN (both
    directions): the mean of the two directions' median excess (delayed - undelayed - D),
    which puts D midway between them (the least either is off, the target being each
    direction within 10 us of D; their difference at up is mostly sampling noise, and the
    smaller of the two, an earlier rule, picked that noise: runs then leaned
    late by 4.5 us at 10 us), between -cap and min(D, cap) (negative: the line's path,
    warmed before each release, crosses faster than the undelayed route's cold one, and
    the hold is lengthened by as much); 0 when the samples were not steady (`steady`:
    every direction's interquartile range within STEADY_IQR_S). `path_exceeds_delay`: the
    path alone adds more than D, so no hold can give D (the hold is then 0)."""
    med = statistics.median
    exc = [med(delayed[i]) - med(base[i]) - delay for i in (0, 1)]
    spread = max(_iqr(v) for v in (*base, *delayed))
    steady = spread <= STEADY_IQR_S
    e = (exc[0] + exc[1]) / 2
    return {"trim_s": min(max(e, -cap), delay, cap) if steady else 0.0, "excess_s": e,
            "excess_fwd_s": exc[0], "excess_back_s": exc[1],
            "base_fwd_s": med(base[0]), "base_back_s": med(base[1]),
            "spread_s": spread, "steady": steady,
            "path_exceeds_delay": steady and e > delay}


def write_trim(path: Path, trim: float, pid: int) -> None:
    """Hand the delay line a new trim: the file (temp name + rename), then SIGHUP."""
    atomic_write_text(path, f"{trim * 1e9:.0f}ns\n")
    signal_line(pid, signal.SIGHUP)


def trim_se(base: tuple[list[float], list[float]],
            delayed: tuple[list[float], list[float]]) -> float:
    """The standard error of trim_from's estimate: the mean over the two directions of a
    difference of medians, each median's error taken as 1.253 sigma / sqrt(n) with sigma
    estimated robustly as IQR / 1.349."""
    def se2(v: list[float]) -> float:
        return (1.253 * _iqr(v) / 1.349) ** 2 / max(len(v), 1)

    return 0.5 * math.sqrt(sum(se2(v) for v in (*base, *delayed)))


def calibrate_trim(sp: Spec, undelayed: Callable[[], AbstractContextManager[object]],
                   trim_file: Path, pid: Callable[[], int], count: int = CAL_COUNT,
                   warm: int = CAL_WARM, attempts: int = CAL_ATTEMPTS,
                   blocks: int = CAL_BLOCKS, max_blocks: int = CAL_MAX_BLOCKS,
                   precision: float = TRIM_PRECISION_S) -> dict[str, Any]:
    """Measure the trim on a testbed that is up with its delay line (trim 0): lone UDP
    datagrams s0n0 <-> s1n0 (one every max(0.2 s, 3 D)), each echoed half that gap after
    it arrives so that the echo is a lone packet too, on the undelayed route (inside
    `undelayed()`, which takes the line out of the path and puts it back), then through
    the delay line (after `warm` datagrams that let it learn the forwarding cost of that
    idle gap); the line (`pid()`, asked after the undelayed route: putting the line back
    may start a new one) then gets the trim.

    The two routes take turns, `blocks` times each, and their samples are pooled: a level
    shift of the machine (seconds long here, 5-8 us on a lone packet's crossing) between
    one route's block and the other's then moves both (with one block each, two
    calibrations at 1 ms read -6.2 and -12.9 us). While the trim's standard error
    (trim_se) is above `precision`, the routes take another turn, up to `max_blocks`
    (`blocks` and `se_s` in the result; a calibration at 100 ms with a spread of
    7.1 us was 5 us off what the runs then needed). Samples that are not steady are measured
    again, up to `attempts` times in all (`attempts` in the result). Before this the
    echo left D after the request on the undelayed route and at once behind the line, from
    a node the request had just warmed: at 10 and 100 ms the echo's direction then read
    about 10 us early, and the trim overshot by as much."""
    if sp.sites < 2:
        raise MpilabError('wan.delay_trim = "auto" needs at least 2 sites')
    d = sp.wan_delay
    interval = lone_gap(d)
    started = time.monotonic()
    write_trim(trim_file, 0.0, pid())
    done: dict[str, Any] | None = None  # the last attempt that ended
    failed = 0
    for k in range(1, attempts + 1):
        base: tuple[list[float], list[float]] = ([], [])
        delayed: tuple[list[float], list[float]] = ([], [])
        nb = 0
        try:
            while True:
                with undelayed():
                    got = udp_oneway(sp, "s0n0", "s1n0", count, interval,
                                     reply_after=interval / 2)
                for i in (0, 1):
                    base[i].extend(got[i])
                got = udp_oneway(sp, "s0n0", "s1n0", count + warm, interval,
                                 reply_after=interval / 2)
                for i in (0, 1):
                    delayed[i].extend(got[i][warm:])
                nb += 1
                if nb < blocks:
                    continue
                res = trim_from(d, base, delayed)
                se = trim_se(base, delayed)
                if not res["steady"] or se <= precision or nb >= max_blocks:
                    break
        except MpilabError as e:
            # a probe that lost a packet or stalled (a busy machine): another attempt; when
            # none ended, the calibration fails in one line
            failed += 1
            if k == attempts and done is None:
                raise MpilabError(f"the delay line's hold at the configured "
                                  f"{d * 1e6:g} us could not be measured in {attempts} "
                                  f"attempt(s): {e}") from None
            continue
        res.update(count=count * nb, blocks=nb, se_s=se, interval_s=interval, attempts=k)
        done = res
        if res["steady"]:
            break
    assert done is not None
    res = done
    res.update(attempts=k, failed_attempts=failed)  # attempts made, those that failed
    write_trim(trim_file, res["trim_s"], pid())
    res["elapsed_s"] = time.monotonic() - started
    return res


@contextmanager
def rules_removed(router: str, rules: list[str]) -> Iterator[None]:
    """The undelayed route of a tun delay line: the router's policy rules that send
    packets into it (`ip rule` arguments) removed, and put back on the way out."""
    for r in rules:
        subprocess.run(["ip", "-n", router, "rule", "del", *r.split()], check=True)
    try:
        yield
    finally:
        for r in rules:
            subprocess.run(["ip", "-n", router, "rule", "add", *r.split()], check=True)
