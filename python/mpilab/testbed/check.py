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
                good = float(d["end"]["sum_received"]["bits_per_second"])
                mss = int(d["start"].get("tcp_mss_default") or 1448)
            except (ValueError, KeyError, TypeError):
                why = ""
                try:
                    why = json.loads(text).get("error", "")
                except ValueError:
                    pass
                raise MpilabError(f"iperf3 {cli} -> {srv}: no measurement "
                                  f"({why or 'unreadable output'})") from None
            out.append((good, good * (mss + HDR_BYTES) / mss))
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
    p = net.sh(["ip", "netns", "exec", spec.ns(src), "ping", "-q", "-n", "-c", str(count),
                "-i", "0.02", "-W", "2", spec.addr(dst, rail)], check=False, timeout=count + 10)
    m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", p.stdout)
    if not m:
        raise MpilabError(f"ping {src} -> {dst} rail {rail}: no reply")
    return float(m.group(2)) * 1e-3, float(m.group(3)) * 1e-3


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
            (good, wire), = iperf(spec, [(a, b, rail)], seconds, parallel)
            rows.append(Row("lan", f"{a}->{b}:{rail}", parallel, conf, wire, good))
            mean, mx = ping(spec, a, b, rail)
            rows.append(Row("rtt-lan", f"{a}<->{b}:{rail}", 1, 0.0, mean, max_rtt=mx))
    if spec.sites >= 2:
        src_nodes = [f"s0n{j}" for j in range(n)]
        pairs = [(a, f"s1n{j % spec.nodes_per_site}", rail) for j, a in enumerate(src_nodes)]

        def cap(a: str, b: str) -> float:
            la, wa = spec.link_rates(a, rail)
            lb, wb = spec.link_rates(b, rail)
            return float(min(la, lb, wa, wb, spec.wan_total_rate))

        for a, b, r in (pairs if per_node else pairs[:1]):
            (good, wire), = iperf(spec, [(a, b, r)], seconds, parallel)
            rows.append(Row("wan-node", f"{a}->{b}:{r}", parallel, cap(a, b), wire, good))
        if len(pairs) > 1:
            res = iperf(spec, pairs, seconds, parallel)
            conf = min(float(spec.wan_total_rate), sum(cap(a, b) for a, b, _ in pairs))
            rows.append(Row("wan-total", f"site0->site1:{rail} ({len(pairs)} nodes)",
                            parallel * len(pairs), conf, sum(w for _, w in res),
                            sum(g for g, _ in res)))
        mean, mx = ping(spec, "s0n0", "s1n0", rail)
        rows.append(Row("rtt-wan", f"s0n0<->s1n0:{rail}", 1, 2 * spec.wan_delay, mean,
                        max_rtt=mx))
    return rows


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


def rows_json(spec: Spec, rows: list[Row], command: str) -> dict[str, Any]:
    import datetime as dt
    return {
        "schema": "mpilab.results/1",
        "provenance": {"tool": "mpilab testbed check", "command": command,
                       "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "hosts": spec.node_names(), "ranks": 0, "transport": "testbed"},
        "measurements": [],
        "testbed_check": {"spec": spec.to_dict(),
                          "rows": [dict(asdict(r), rel_err=r.rel_err) for r in rows]},
    }
