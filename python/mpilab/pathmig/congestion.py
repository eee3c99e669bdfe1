"""The TCP congestion control of a job's node namespaces, set per route (`ip route ...
congctl ALGO`), so nothing outside the testbed changes.

Why (docs/pathmig.md, "Job set-up"): this machine's default is BBR, and BBR
paces MPTCP subflows at its bandwidth estimate. A ping-pong is application-limited, and
plain TCP marks its samples so (tcp_sendmsg checks for it), which keeps BBR in STARTUP
with a pacing gain of 2.89; MPTCP pushes data to its subflows without that check, so BBR
takes the ping-pong's small bursts for the path's capacity, leaves STARTUP and paces every
64 KiB message at ~1.25 x 200 Mbit/s: about 2 ms more per direction at 1 Gbit/s. With a
loss-based algorithm (cubic) nothing is paced and MPTCP is as fast as TCP.
`testbed run --mptcp/--pathmig` therefore uses cubic unless told otherwise; a plain run
uses the namespaces' default unless given `--congestion`."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
from collections.abc import Iterator

from mpilab.errors import MpilabError
from mpilab.testbed.spec import Spec

MPTCP_DEFAULT = "cubic"


def _sysctl(spec: Spec, node: str, key: str, value: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    """Read (`value` None) or write one sysctl inside a node's namespace."""
    args = ["-n", key] if value is None else ["-qw", f"{key}={value}"]
    return subprocess.run(["ip", "netns", "exec", spec.ns(node), "sysctl", *args],
                          capture_output=True, text=True, timeout=30)


def _err(p: subprocess.CompletedProcess[str]) -> str:
    return next((ln for ln in p.stderr.splitlines() if ln.strip()), "failed")


def _sysctl_set(spec: Spec, node: str, key: str, value: str, what: str) -> None:
    p = _sysctl(spec, node, key, value)
    if p.returncode:
        raise MpilabError(f"{what} on {node}: {_err(p)}")


def available(spec: Spec, node: str) -> list[str]:
    return _sysctl(spec, node, "net.ipv4.tcp_available_congestion_control").stdout.split()


_KERNEL_LIST = "/proc/sys/net/ipv4/tcp_available_congestion_control"


def kernel_available() -> set[str] | None:
    """The congestion controls this kernel has now (every namespace shares them); None
    when the kernel does not say (no IPv4 sysctls)."""
    try:
        with open(_KERNEL_LIST, encoding="ascii") as f:
            return set(f.read().split())
    except (OSError, UnicodeDecodeError):
        return None


def kernel_module(name: str) -> bool:
    """Whether a module that provides congestion control `name` (tcp_NAME) is installed
    for the running kernel: the kernel loads it when a route asks for it."""
    base = os.path.join("/lib/modules", os.uname().release, "kernel", "net", "ipv4")
    try:
        files = os.listdir(base)
    except OSError:
        return False
    return any(f.split(".ko", 1)[0] == f"tcp_{name}" for f in files if ".ko" in f)


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
         "ssthresh", "reordering", "fastopen_no_cookie", "rto_min")


def _quickack(r: dict[str, object]) -> bool:
    return str(_metrics(r).get("quickack", 0)) not in ("0", "", "False")


def _route_line(r: dict[str, object], algo: str | None, quickack: bool | None = None) -> str:
    """`ip route replace` of route `r` with congestion control `algo` (None: none) and the
    quickack metric on or off (None: as it is); its other metrics kept."""
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
    if quickack if quickack is not None else _quickack(r):
        parts += ["quickack", "1"]
    if algo:
        parts += ["congctl", algo]
    return " ".join(parts)


def current(spec: Spec, node: str) -> set[str]:
    """The congestion controls set on `node`'s routes ('' for a route without one)."""
    return {_cc(r) for r in _routes(spec.ns(node))}


SYSCTL = "net.ipv4.tcp_congestion_control"


def host_default() -> str:
    """The congestion control new namespaces start with: the host's default (read in the
    namespace mpilab runs in, the host's)."""
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip() or "reno"
    except OSError:
        return "reno"


def ns_default(spec: Spec, node: str) -> str:
    """A node namespace's default congestion control (its sysctl)."""
    return _sysctl(spec, node, SYSCTL).stdout.strip()


ALLOWED = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
#: taken by every mpilab process around its change of ALLOWED (jobs started at the same
#: moment on one host)
ALLOWED_LOCK = "/run/lock/mpilab-allowed-congestion.lock"


def _set_ns_default(spec: Spec, node: str, algo: str) -> None:
    """A namespace other than the host's may take as its default only an algorithm the
    host allows unprivileged programs (tcp_allowed_congestion_control, e.g. "reno bbr"):
    for another one it is added to that list for the moment of the change and the list
    restored at once (the namespace keeps its default; the host ends as it was). That
    moment holds ALLOWED_LOCK, so two jobs starting together never restore the list under
    each other's change; a list that already names the algorithm (another program's own
    moment) is only used to retry."""
    if ns_default(spec, node) == algo:
        return
    p = _sysctl(spec, node, SYSCTL, algo)
    if p.returncode and "not permitted" in p.stderr:
        with _locked(ALLOWED_LOCK):
            try:
                with open(ALLOWED) as f:
                    allowed = f.read().strip()
            except OSError:
                allowed = ""
            if algo in allowed.split():
                p = _sysctl(spec, node, SYSCTL, algo)
            elif allowed:
                try:
                    with open(ALLOWED, "w") as f:
                        f.write(f"{allowed} {algo}")
                    p = _sysctl(spec, node, SYSCTL, algo)
                except OSError:
                    pass
                finally:
                    try:
                        with open(ALLOWED, "w") as f:
                            f.write(allowed)
                    except OSError as e:
                        raise MpilabError(f"congestion control {algo}: could not restore "
                                          f"{ALLOWED} to '{allowed}': {e.strerror}"
                                          ) from None
    if p.returncode:
        raise MpilabError(f"congestion control {algo} on {node}: {_err(p)}")


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """An exclusive flock on `path` (created if missing; without a writable lock folder,
    no lock)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def apply(spec: Spec, hosts: list[str], algo: str | None, quickack: bool = False) -> None:
    """Set `algo` on every route of `hosts`' namespaces and as their default; None removes
    any from the routes and gives the namespaces the host's default again. `quickack`: the
    routes' quickack metric on (every TCP socket on them, MPTCP subflows included, acks
    every segment at once) or off (the kernel's delayed ACKs). Routes already as asked are
    left alone.
    Why quickack under MPTCP (docs/pathmig.md, "Job set-up"): when a
    subflow is closed the kernel re-sends the connection's whole unacknowledged data on
    another subflow, also what the peer already has (its data-level ack was lost on the
    dead path). The peer's subflow drops those duplicates without acking them at once: the
    ack waits for the delayed-ACK timer (~40 ms), and the new data queued behind the
    duplicates on that subflow with it. Measured with Open MPI at 64 KiB: 16 of 60
    link-down pauses 56-62 ms instead of 12-19 ms.
    Why both: a route's congestion control reaches the sockets opened towards it and the
    connections accepted from it, but not the subflows an MPTCP server accepts by MP_JOIN:
    the kernel gives every subflow the MPTCP socket's algorithm, which a server's
    connection inherits from its listener, created with the namespace's default. With BBR
    as the default, the server's side of every migrated connection was paced as the
    docstring above says (a 64 KiB ping-pong 55% slower after a migration, measured on
    the testbed: docs/pathmig.md, "Job set-up")."""
    for node in hosts:
        ns = spec.ns(node)
        if algo and algo not in available(spec, node):
            raise MpilabError(f"--congestion {algo}: not available in this kernel (have: "
                              f"{' '.join(available(spec, node)) or 'none'})")
        _set_ns_default(spec, node, algo or host_default())
        lines = [_route_line(r, algo, quickack) for r in _routes(ns)
                 if r.get("dst") and r.get("dev") and
                 (_cc(r) != (algo or "") or _quickack(r) != quickack)]
        if not lines:
            continue
        p = subprocess.run(["ip", "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n",
                           capture_output=True, text=True, timeout=60)
        if p.returncode:
            raise MpilabError(f"congestion control {algo or 'default'} on {node}: {_err(p)}")


# The default send buffer of a job's nodes under MPTCP (tcp_wmem's middle value).
MPTCP_SNDBUF = 1 << 20
WMEM = "net.ipv4.tcp_wmem"
KERNEL_SNDBUF = 16384  # the kernel's tcp_wmem default of a new namespace


def _wmem(spec: Spec, node: str) -> list[int]:
    p = _sysctl(spec, node, WMEM)
    try:
        v = [int(x) for x in p.stdout.split()]
    except ValueError:
        v = []
    if len(v) != 3:
        raise MpilabError(f"{node}: {WMEM} unreadable ({p.stdout.strip() or p.stderr.strip()})")
    return v


def send_buffers(spec: Spec, hosts: list[str], mptcp: bool) -> None:
    """The default TCP send buffer of the job's nodes: MPTCP_SNDBUF under MPTCP, the
    kernel's (16 KiB) otherwise; never where the spec sets `wan.socket_buffer` (the user's
    limit stands).
    Why: an MPTCP connection's send buffer is the sum of its subflows' (the kernel syncs
    it), and a subflow's grows only while it sends. A backup subflow never sent, so it keeps
    the 16 KiB default; once a fault's migration closes the first subflow, whose buffer had
    grown, the connection's buffer collapses to the backup's, and every message larger than
    it waits an extra round trip for acknowledgements to free space, for the rest of the
    connection's life (a 64 KiB ping-pong 2.44 -> 6.87 ms per round trip after a fault,
    -1% with a 1 MiB default; docs/pathmig.md, "Job set-up")."""
    if spec.socket_buffer:
        return
    for node in hosts:
        lo, mid, hi = _wmem(spec, node)
        want = MPTCP_SNDBUF if mptcp else KERNEL_SNDBUF
        if mid == want or (not mptcp and mid != MPTCP_SNDBUF):
            continue  # as asked, or a value this module did not set
        _sysctl_set(spec, node, WMEM, f"{lo} {want} {max(hi, want)}", "send buffer")
