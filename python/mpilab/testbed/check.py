"""`mpilab testbed check`: measure each configured link with iperf3 and ping, and set the
measurements beside the configuration.

Rates: iperf3 reports TCP goodput; the shapers count whole Ethernet frames, so the wire
rate is goodput x (MSS + 66) / MSS (Ethernet 14 + IP 20 + TCP with timestamps 32 bytes per
segment). Both are reported; the comparison with the configured rate uses the wire rate.
Delay: ping RTT on an idle path; the configured value is 2L for inter-site paths.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass
from typing import Any

from mpilab.errors import MpilabError
from mpilab.testbed import net
from mpilab.testbed.spec import Spec, format_rate

HDR_BYTES = 66
BASE_PORT = 5301


@dataclass
class Row:
    kind: str            # lan, wan-node, wan-total, rtt-lan, rtt-wan
    path: str
    flows: int
    configured: float    # bit/s for rates, s for RTTs
    measured: float      # wire bit/s for rates, mean RTT s
    goodput: float | None = None
    max_rtt: float | None = None
    src: str | None = None           # first node of the path
    dst: str | None = None           # last node (for wan-total: of the first pair)
    rail: int | None = None
    nodes: int = 1                   # node pairs sending at once (wan-total)
    bytes: int | None = None         # iperf3: bytes received in total
    seconds: float | None = None     # iperf3: duration of the transfer
    samples: list[float] | None = None  # ping: every round-trip time (s)

    @property
    def rel_err(self) -> float:
        if self.kind.startswith("rtt"):
            return abs(self.measured - self.configured)
        return (self.measured - self.configured) / self.configured


def _wait_listen(ns: str, port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        p = net.sh(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{port}"], check=False)
        if p.stdout.strip():
            return
        time.sleep(0.05)
    raise MpilabError(f"iperf3 server in {ns} did not start listening on port {port}")


def iperf(spec: Spec, pairs: list[tuple[str, str, int]], seconds: float,
          parallel: int = 1) -> list[tuple[float, float]]:
    """Run one iperf3 flow group per (client, server, rail) pair, all at the same time.
    Returns (goodput bit/s, wire bit/s) per pair. Servers are killed afterwards."""
    return [(d["goodput"], d["wire"]) for d in iperf_detail(spec, pairs, seconds, parallel)]


def iperf_detail(spec: Spec, pairs: list[tuple[str, str, int]], seconds: float,
                 parallel: int = 1) -> list[dict[str, float]]:
    """As iperf(), with per pair: goodput and wire (bit/s), bytes received and the
    transfer's duration in seconds."""
    servers: list[subprocess.Popen[bytes]] = []
    clients: list[subprocess.Popen[bytes]] = []
    try:
        for i, (_, srv, rail) in enumerate(pairs):
            servers.append(subprocess.Popen(
                ["ip", "netns", "exec", spec.ns(srv), "iperf3", "-s", "-1", "-B",
                 spec.addr(srv, rail), "-p", str(BASE_PORT + i)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 5
        for i, (_, srv, _) in enumerate(pairs):
            _wait_listen(spec.ns(srv), BASE_PORT + i, deadline)
        for i, (cli, srv, rail) in enumerate(pairs):
            clients.append(subprocess.Popen(
                ["ip", "netns", "exec", spec.ns(cli), "iperf3", "-c", spec.addr(srv, rail),
                 "-B", spec.addr(cli, rail), "-p", str(BASE_PORT + i), "-t", f"{seconds:g}",
                 "-P", str(parallel), "-J"],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL))
        out = []
        for c, (cli, srv, _) in zip(clients, pairs, strict=True):
            try:
                text, _ = c.communicate(timeout=seconds + 20)
            except subprocess.TimeoutExpired:
                raise MpilabError(f"iperf3 {cli} -> {srv}: no result within "
                                  f"{seconds + 20:g} s") from None
            try:
                d = json.loads(text)
                recv = d["end"]["sum_received"]
                good = float(recv["bits_per_second"])
                nbytes = float(recv["bytes"])
                dur = float(recv["seconds"])
                mss = int(d["start"].get("tcp_mss_default") or 1448)
            except (ValueError, KeyError, TypeError):
                why = ""
                try:
                    why = json.loads(text).get("error", "")
                except ValueError:
                    pass
                raise MpilabError(f"iperf3 {cli} -> {srv}: no measurement "
                                  f"({why or 'unreadable output'})") from None
            out.append({"goodput": good, "wire": good * (mss + HDR_BYTES) / mss,
                        "bytes": nbytes, "seconds": dur})
        return out
    finally:
        for p in clients + servers:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


def ping(spec: Spec, src: str, dst: str, rail: int, count: int = 20) -> tuple[float, float]:
    """(mean, max) RTT in seconds on an idle path."""
    rtts = ping_samples(spec, src, dst, rail, count)
    return sum(rtts) / len(rtts), max(rtts)


def ping_samples(spec: Spec, src: str, dst: str, rail: int, count: int = 20) -> list[float]:
    """Every round-trip time (seconds) of `count` pings on an idle path, in order."""
    p = net.sh(["ip", "netns", "exec", spec.ns(src), "ping", "-n", "-c", str(count),
                "-i", "0.02", "-W", "2", spec.addr(dst, rail)], check=False, timeout=count + 10)
    rtts = [float(m.group(1)) * 1e-3 for m in re.finditer(r"time=([\d.]+) ms", p.stdout)]
    if not rtts:
        raise MpilabError(f"ping {src} -> {dst} rail {rail}: no reply")
    return rtts


def check(spec: Spec, seconds: float = 3.0, parallel: int = 1, rail: int = 0,
          lan: bool = True, per_node: bool = True) -> list[Row]:
    if not 0 <= rail < spec.rails:
        raise MpilabError(f"--rail {rail}: testbed has {spec.rails} rail(s)")
    rows: list[Row] = []
    n = spec.nodes_per_site
    if lan and n >= 2:
        for s in range(spec.sites):
            a, b = f"s{s}n0", f"s{s}n1"
            conf = min(spec.link_rates(a, rail)[0], spec.link_rates(b, rail)[0])
            d, = iperf_detail(spec, [(a, b, rail)], seconds, parallel)
            rows.append(_rate_row("lan", f"{a}->{b}:{rail}", parallel, conf, d, a, b, rail))
            rows.append(_rtt_row("rtt-lan", a, b, rail, 0.0, ping_samples(spec, a, b, rail)))
    if spec.sites >= 2:
        src_nodes = [f"s0n{j}" for j in range(n)]
        pairs = [(a, f"s1n{j % spec.nodes_per_site}", rail) for j, a in enumerate(src_nodes)]

        def cap(a: str, b: str) -> float:
            la, wa = spec.link_rates(a, rail)
            lb, wb = spec.link_rates(b, rail)
            return float(min(la, lb, wa, wb, spec.wan_total_rate))

        for a, b, r in (pairs if per_node else pairs[:1]):
            d, = iperf_detail(spec, [(a, b, r)], seconds, parallel)
            rows.append(_rate_row("wan-node", f"{a}->{b}:{r}", parallel, cap(a, b), d, a, b, r))
        if len(pairs) > 1:
            res = iperf_detail(spec, pairs, seconds, parallel)
            conf = min(float(spec.wan_total_rate), sum(cap(a, b) for a, b, _ in pairs))
            tot = {"goodput": sum(x["goodput"] for x in res), "wire": sum(x["wire"] for x in res),
                   "bytes": sum(x["bytes"] for x in res),
                   "seconds": max(x["seconds"] for x in res)}
            row = _rate_row("wan-total", f"site0->site1:{rail} ({len(pairs)} nodes)",
                            parallel * len(pairs), conf, tot, pairs[0][0], pairs[0][1], rail)
            row.nodes = len(pairs)
            rows.append(row)
        # each direction carries its sender's delay (per-node [[link]] wan_delay)
        rtt = spec.node_delay("s0n0", rail) + spec.node_delay("s1n0", rail)
        rows.append(_rtt_row("rtt-wan", "s0n0", "s1n0", rail, rtt,
                             ping_samples(spec, "s0n0", "s1n0", rail)))
    return rows


def _rate_row(kind: str, path: str, flows: int, conf: float, d: dict[str, float], src: str,
              dst: str, rail: int) -> Row:
    return Row(kind, path, flows, conf, d["wire"], d["goodput"], src=src, dst=dst, rail=rail,
               bytes=int(d["bytes"]), seconds=d["seconds"])


def _rtt_row(kind: str, a: str, b: str, rail: int, conf: float, rtts: list[float]) -> Row:
    return Row(kind, f"{a}<->{b}:{rail}", 1, conf, sum(rtts) / len(rtts), max_rtt=max(rtts),
               src=a, dst=b, rail=rail, samples=list(rtts))


def format_rows(rows: list[Row]) -> str:
    out = [f"{'link':8} {'path':34} {'flows':>5} {'configured':>12} {'measured':>12} "
           f"{'goodput':>12} {'error':>9}"]
    for r in rows:
        if r.kind.startswith("rtt"):
            out.append(f"{r.kind:8} {r.path:34} {r.flows:5d} {r.configured * 1e3:9.3f} ms "
                       f"{r.measured * 1e3:9.3f} ms {'':12} {r.rel_err * 1e3:+6.3f} ms")
        else:
            out.append(f"{r.kind:8} {r.path:34} {r.flows:5d} {format_rate(r.configured):>12} "
                       f"{format_rate(r.measured):>12} {format_rate(r.goodput or 0):>12} "
                       f"{r.rel_err * 100:+8.1f}%")
    return "\n".join(out)


PING_BYTES = 56  # ICMP echo payload of ping's default


def _summary(xs: list[float]) -> dict[str, Any]:
    n = len(xs)
    ss = sorted(xs)
    mean = sum(xs) / n
    median = ss[n // 2] if n % 2 else (ss[n // 2 - 1] + ss[n // 2]) / 2
    return {"mean": mean, "ci_half": None, "median": median, "min": ss[0], "max": ss[-1],
            "stdev": statistics.stdev(xs) if n > 1 else 0.0, "reps": n, "invalid": 0,
            "converged": True}


def row_measurement(spec: Spec, r: Row) -> dict[str, Any]:
    """One `mpilab.results/1` measurement for one checked link: op "link", impl "iperf3"
    (stats: the transfer's duration, `bytes` received in it) or "ping" (stats: round-trip
    times, all in `samples`); the configured and measured values are in "derived"."""
    link: dict[str, Any] = {"kind": r.kind, "path": r.path, "from": r.src, "to": r.dst,
                            "rail": r.rail, "flows": r.flows, "nodes": r.nodes,
                            "site_to_site": r.kind.startswith(("wan", "rtt-wan"))}
    if r.kind.startswith("rtt"):
        samples = r.samples or [r.measured]
        return {"op": "link", "impl": "ping", "timing": "rtt", "bytes": PING_BYTES,
                "link": link, "stats": _summary(samples), "samples": samples,
                "valid": [True] * len(samples),
                "derived": {"configured_rtt_s": r.configured, "rtt_s": r.measured,
                            "max_rtt_s": r.max_rtt, "latency_s": r.measured / 2,
                            "configured_one_way_delay_s": r.configured / 2,
                            "rtt_error_s": r.measured - r.configured}}
    seconds = r.seconds or 0.0
    return {"op": "link", "impl": "iperf3", "timing": "link", "bytes": int(r.bytes or 0),
            "link": link,
            "stats": {"mean": seconds, "ci_half": None, "median": seconds, "min": seconds,
                      "max": seconds, "stdev": 0.0, "reps": 1, "invalid": 0,
                      "converged": True},
            "samples": [seconds], "valid": [True],
            "derived": {"configured_bps": r.configured, "wire_bps": r.measured,
                        "goodput_bps": r.goodput, "bandwidth_Bps": (r.goodput or 0.0) / 8,
                        "rel_err": r.rel_err}}


def rows_json(spec: Spec, rows: list[Row], command: str,
              options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The check as a results file (schema mpilab.results/1): one measurement per link."""
    import datetime as dt

    from mpilab import __version__

    hosts = sorted({h for r in rows for h in (r.src, r.dst) if h},
                   key=lambda h: spec.node_names().index(h))
    return {
        "schema": "mpilab.results/1",
        "provenance": {"tool": "mpilab testbed check", "version": __version__,
                       "command": command,
                       "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "hosts": hosts or spec.node_names(), "transport": "testbed",
                       "clock_sync": None, "options": dict(options or {}),
                       "testbed": {"prefix": spec.prefix, "spec": spec.to_dict()}},
        "measurements": [row_measurement(spec, r) for r in rows],
        "testbed_check": {"spec": spec.to_dict(),
                          "rows": [dict(asdict(r), rel_err=r.rel_err) for r in rows]},
    }
