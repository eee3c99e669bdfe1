"""The TCP congestion control of a job's node namespaces, set per route (`ip route ...
congctl ALGO`), so nothing outside the testbed changes.

Why (docs/pathmig.md, "Cost without faults"): this machine's default is BBR, and BBR
paces MPTCP subflows at its bandwidth estimate. A ping-pong is application-limited, and
plain TCP marks its samples so (tcp_sendmsg checks for it), which keeps BBR in STARTUP
with a pacing gain of 2.89; MPTCP pushes data to its subflows without that check, so BBR
takes the ping-pong's small bursts for the path's capacity, leaves STARTUP and paces every
64 KiB message at ~1.25 x 200 Mbit/s: about 2 ms more per direction at 1 Gbit/s. With a
loss-based algorithm (cubic) nothing is paced and MPTCP is as fast as TCP.
`testbed run --mptcp/--pathmig` therefore uses cubic unless told otherwise; a plain run
uses the namespaces' default unless given `--congestion`."""

from __future__ import annotations

import json
import subprocess

from mpilab.errors import MpilabError
from mpilab.testbed.spec import Spec

MPTCP_DEFAULT = "cubic"


def available(spec: Spec, node: str) -> list[str]:
    p = subprocess.run(["ip", "netns", "exec", spec.ns(node), "sysctl", "-n",
                        "net.ipv4.tcp_available_congestion_control"],
                       capture_output=True, text=True, timeout=30)
    return p.stdout.split()


def _routes(ns: str) -> list[dict[str, object]]:
    p = subprocess.run(["ip", "-j", "-d", "-n", ns, "route", "show", "table", "main"],
                       capture_output=True, text=True, timeout=30)
    if p.returncode:
        raise MpilabError(f"ip -n {ns} route show: {p.stderr.strip() or 'failed'}")
    try:
        out = json.loads(p.stdout or "[]")
    except json.JSONDecodeError:
        raise MpilabError(f"ip -n {ns} route show: unreadable JSON") from None
    return out if isinstance(out, list) else []


def _metrics(r: dict[str, object]) -> dict[str, object]:
    out: dict[str, object] = {}
    for m in r.get("metrics") or []:  # type: ignore[attr-defined]
        if isinstance(m, dict):
            out.update(m)
    return out


def _cc(r: dict[str, object]) -> str:
    return str(_metrics(r).get("congestion") or "")


# route metrics kept when a route is rewritten (`ip route` words)
_KEEP = ("mtu", "advmss", "window", "rtt", "rttvar", "cwnd", "initcwnd", "initrwnd",
         "ssthresh", "reordering", "quickack", "fastopen_no_cookie", "rto_min")


def _route_line(r: dict[str, object], algo: str | None) -> str:
    parts = ["route", "replace", str(r["dst"])]
    if r.get("gateway"):
        parts += ["via", str(r["gateway"])]
    parts += ["dev", str(r["dev"])]
    for key, word in (("protocol", "proto"), ("scope", "scope"), ("prefsrc", "src")):
        if r.get(key):
            parts += [word, str(r[key])]
    if r.get("metric"):
        parts += ["metric", str(r["metric"])]
    ms = _metrics(r)
    for key in _KEEP:
        if key in ms:
            parts += [key, str(ms[key])]
    if algo:
        parts += ["congctl", algo]
    return " ".join(parts)


def current(spec: Spec, node: str) -> set[str]:
    """The congestion controls set on `node`'s routes ('' for a route without one)."""
    return {_cc(r) for r in _routes(spec.ns(node))}


def apply(spec: Spec, hosts: list[str], algo: str | None) -> None:
    """Set `algo` on every route of `hosts`' namespaces; None removes any (the namespace's
    default applies again). Routes already as asked are left alone."""
    for node in hosts:
        ns = spec.ns(node)
        if algo and algo not in available(spec, node):
            raise MpilabError(f"--congestion {algo}: not available in this kernel (have: "
                              f"{' '.join(available(spec, node)) or 'none'})")
        lines = [_route_line(r, algo) for r in _routes(ns)
                 if r.get("dst") and r.get("dev") and _cc(r) != (algo or "")]
        if not lines:
            continue
        p = subprocess.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n",
                           capture_output=True, text=True, timeout=60)
        if p.returncode:
            err = next((ln for ln in p.stderr.splitlines() if ln.strip()), "failed")
            raise MpilabError(f"congestion control {algo or 'default'} on {node}: {err}")
