"""Building and removing the emulated cluster: namespaces, veth rails, site bridges, the WAN
router with its delay line, and tc shaping (htb + bfifo + u32).

Layout (prefix P, site s, node j, rail r):
  P-sSnJ   node namespace; interface rR (address in the (s, r) subnet)
  P-swS    site switch: bridge brR, node ports nJrR, uplink upR (WAN egress, by source)
  P-wan    router: sSrR (gateway .1 of each (s, r) subnet; WAN egress, by destination),
           mpilab-delayline. On packet sockets (wan.delay_io = "packet", and "auto" where
           one line delays every site) the router does not forward: the line takes the
           frames off the sSrR legs and sends them on itself. On a tun device (dl0), the
           packets arriving from any uplink are policy-routed (table 100) through dl0 and
           come back out of it after L.
Nothing is created in the root namespace: deleting the namespaces removes every link,
qdisc and iptables rule. The state dir holds the spec, logs and per-node TMPDIRs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from mpilab import documents, pidfile
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text, pid_alive
from mpilab.testbed.lineinfo import delay_verdict, fresh_stats, signal_line, trim_text
from mpilab.testbed.spec import Spec, check_address_plan, parse_node
from mpilab.tools import find_tool

DELAY_TABLE = 100
DL_DEV = "dl0"
DELAYLINE = "mpilab-delayline"  # its program name, checked in its pid files
#: the cgroup v1 cpu controller: a node with a [[node]] cpu_quota runs its jobs in
#: CPU_CGROUP_ROOT/<prefix>-<node> (cpu.cfs_quota_us / cpu.cfs_period_us)
CPU_CGROUP_ROOT = Path("/sys/fs/cgroup/cpu")


# ---- small helpers ----

def sh(cmd: list[str], check: bool = True, input: str | None = None,
       timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a command; on failure raise a one-line MpilabError naming it."""
    try:
        p = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise MpilabError(f"{cmd[0]}: command not found (run scripts/install-deps)") from None
    except subprocess.TimeoutExpired:
        raise MpilabError(f"{' '.join(cmd[:4])}: no answer within {timeout:g} s") from None
    if check and p.returncode != 0:
        lines = [ln for ln in (p.stderr or p.stdout).splitlines() if ln.strip()]
        why = lines[0] if lines else f"exit status {p.returncode}"
        raise MpilabError(f"{' '.join(cmd[:6])}: {why}")
    return p


def batch(tool: str, ns: str, lines: list[str]) -> None:
    """Run many `ip`/`tc` commands inside one namespace in one process."""
    if not lines:
        return
    p = subprocess.run([tool, "-n", ns, "-batch", "-"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        errs = [ln for ln in p.stderr.splitlines() if ln.strip() and "quantum" not in ln]
        raise MpilabError(f"{tool} -n {ns}: {errs[0] if errs else 'failed'}")


def state_root() -> Path:
    return Path(os.environ.get("MPILAB_TESTBED_STATE_ROOT", "/run"))


def state_dir(prefix: str) -> Path:
    return state_root() / f"{prefix}-testbed"


def require_root() -> None:
    if os.geteuid() != 0:
        raise MpilabError("testbed: needs root (network namespaces)")
    if shutil.which("ip") is None or shutil.which("tc") is None:
        raise MpilabError("testbed: ip/tc not found (run scripts/install-deps)")


def list_namespaces(prefix: str) -> list[str]:
    """Namespaces carrying the prefix, read from the system (not from any state file)."""
    p = sh(["ip", "netns", "list"], check=False)
    names = [ln.split()[0] for ln in p.stdout.splitlines() if ln.strip()]
    return sorted(n for n in names if n.startswith(prefix + "-"))


def ns_pids(ns: str) -> list[int]:
    p = sh(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def sched_of(pid: int) -> dict[str, Any]:
    """Scheduling policy of a process: {'sched': 'fifo'|'rr'|'other', 'rt_priority': N}."""
    try:
        pol = os.sched_getscheduler(pid)
        prio = os.sched_getparam(pid).sched_priority
    except OSError:
        return {}
    name = {os.SCHED_FIFO: "fifo", os.SCHED_RR: "rr"}.get(pol, "other")
    return {"sched": name, "rt_priority": prio}


def kill_pids(pids: list[int], grace: float = 2.0) -> None:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL what is left."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if pid_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


STATE_SCHEMA = "testbed-state-1.schema.json"


def load_state(prefix: str) -> dict[str, Any] | None:
    """The state `up` wrote for testbed `prefix`, None when it has none. It is checked
    against schemas/testbed-state-1.schema.json and its spec must name this prefix (a state
    file must never make a command act on another testbed's namespaces); any problem is one
    line naming the file."""
    path = state_dir(prefix) / "state.json"
    if not os.path.lexists(path):
        return None
    doc: dict[str, Any] = documents.load(path, "testbed state", STATE_SCHEMA, limit=16 << 20)
    if doc["spec"]["prefix"] != prefix:
        raise MpilabError(f"{path}: spec.prefix is '{doc['spec']['prefix']}', not this "
                          f"testbed's '{prefix}'; not acting on another testbed")
    check_address_plan(path, doc["spec"])
    return doc



def delayline_stats(prefix: str, wait_s: float = 2.0) -> dict[str, Any] | None:
    """The running delay line's own statistics, fresh: SIGUSR1 makes it rewrite its JSON
    file, read once it changed (or after wait_s). None without a delay line or readable
    statistics."""
    pid = pidfile.verified(state_dir(prefix) / "delayline.pid", DELAYLINE)
    if pid is None:
        return None
    return fresh_stats(state_dir(prefix) / "delayline.json", pid, wait_s)


def current_spec(prefix: str) -> Spec:
    """The spec of the running testbed with this prefix, or a one-line error."""
    st = load_state(prefix)
    if st is None or not list_namespaces(prefix):
        raise MpilabError(f"testbed '{prefix}' is not up (mpilab testbed up)")
    return Spec.from_dict(st["spec"])


# ---- shaping ----

def _burst(rate: int) -> int:
    # at least two GSO super-packets, else ~1 ms of traffic
    return max(2 * 65536 + 3000, rate // 8 // 1000)


def htb_single(dev: str, rate: int, queue: int) -> list[str]:
    """One class at `rate` with a byte-limited queue (LAN links)."""
    b = _burst(rate)
    return [
        f"qdisc replace dev {dev} root handle 1: htb default 1",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {rate}bit ceil {rate}bit "
        f"burst {b} cburst {b} quantum 65536",
        f"qdisc add dev {dev} parent 1:1 handle 10: bfifo limit {queue}",
    ]


def netem_limit(rate: int, delay: float, queue: int, mtu: int = 1500) -> int:
    """netem's queue limit (packets) for a leaf that holds every packet for `delay` at up
    to `rate` plus the byte queue `queue` waiting behind the shaper (counted in MTU-sized
    packets; smaller packets only make it roomier), at least 1000."""
    held = rate / 8.0 * delay + queue
    return max(1000, int(held / mtu * 1.25) + 1)


def leaf_qdisc(dev: str, parent: str, handle: str, queue: int,
               delay: float | None = None, rate: int = 0) -> str:
    """The leaf under an htb class: a byte-limited bfifo, or with `delay` a netem that
    holds each packet for `delay` seconds (netem's own queue then replaces the bfifo)."""
    if delay is None:
        return f"qdisc add dev {dev} parent {parent} handle {handle} bfifo limit {queue}"
    us = max(1, int(round(delay * 1e6)))
    return (f"qdisc add dev {dev} parent {parent} handle {handle} netem delay {us}us "
            f"limit {netem_limit(rate, delay, queue)}")


def htb_wan(dev: str, total: int, nodes: list[tuple[str, int]], match: str,
            queue: int, delay: float | None = None, burst: int | None = None) -> list[str]:
    """WAN uplink: a parent at B_WAN and one class per node, u32 on source or destination.
    Each child's guaranteed rate is min(b_WAN, B_WAN/n) and its ceiling b_WAN: htb honours
    a child's rate even beyond the parent's ceiling, so rates must add up to at most B.
    With `delay` (the netem backend) the per-node leaves are netem qdiscs instead of bfifo:
    htb dequeues a packet only once netem releases it, so it is delayed, then shaped.
    `burst`: every class's burst and cburst (bytes; default _burst of its rate)."""
    b = burst or _burst(total)
    out = [
        f"qdisc replace dev {dev} root handle 1: htb default 2",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {total}bit ceil {total}bit "
        f"burst {b} cburst {b} quantum 65536",
        # unclassified traffic (ARP, other addresses) shares the uplink at low priority
        f"class add dev {dev} parent 1:1 classid 1:2 htb rate 1mbit ceil {total}bit "
        f"quantum 65536 prio 7",
        f"qdisc add dev {dev} parent 1:2 handle 2: bfifo limit {queue}",
    ]
    n = max(1, len(nodes))
    for i, (addr, rate) in enumerate(nodes):
        cid = 10 + i
        guaranteed = max(8000, min(rate, (total - 1_000_000) // n))
        ceil = min(rate, total)
        cb = burst or _burst(ceil)
        out += [
            f"class add dev {dev} parent 1:1 classid 1:{cid:x} htb rate {guaranteed}bit "
            f"ceil {ceil}bit burst {cb} cburst {cb} quantum 65536 prio 1",
            leaf_qdisc(dev, f"1:{cid:x}", f"{cid:x}:", queue, delay, ceil),
            f"filter add dev {dev} parent 1: protocol ip prio 1 u32 "
            f"match ip {match} {addr}/32 flowid 1:{cid:x}",
        ]
    return out


# ---- the WAN delay: delay line or netem ----

def netem_available(prefix: str) -> bool:
    """Whether this kernel has netem: try `tc qdisc add dev lo root netem delay 1ms` in a
    scratch namespace `<prefix>-probe` (removed again; `down` also removes a leftover)."""
    ns = f"{prefix}-probe"
    sh(["ip", "netns", "del", ns], check=False)
    sh(["ip", "netns", "add", ns])
    try:
        p = sh(["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
               check=False)
        return p.returncode == 0
    finally:
        sh(["ip", "netns", "del", ns], check=False)


def choose_delay_backend(requested: str, delay: float, netem_ok: bool | None,
                         source: str = "spec") -> str:
    """'none' (L = 0), 'delayline' or 'netem'. `requested` is auto|delayline|netem;
    auto takes netem where the kernel has it. netem asked for on a kernel without it is a
    one-line error. `netem_ok` may be None when no probe was needed (L = 0, delayline)."""
    if requested not in ("auto", "delayline", "netem"):
        raise MpilabError(f"delay backend {requested!r}: expected auto, delayline or netem")
    if delay <= 0:
        return "none"
    if requested == "delayline":
        return "delayline"
    if requested == "netem" and not netem_ok:
        raise MpilabError(f"{source}: delay backend netem: this kernel has no netem "
                          "(tc refuses the qdisc); use 'auto' or 'delayline'")
    return "netem" if netem_ok else "delayline"


def router_tc_lines(spec: Spec, backend: str) -> list[str]:
    """tc commands (batch lines) for the router's WAN legs sSrR: per-destination-node htb
    classes; with the netem backend their leaves are netem qdiscs holding packets for L."""
    delay = spec.wan_delay if backend == "netem" else None
    out: list[str] = []
    for s in range(spec.sites):
        nodes = [f"s{s}n{j}" for j in range(spec.nodes_per_site)]
        for r in range(spec.rails):
            out += htb_wan(f"s{s}r{r}", spec.wan_total_rate, _wan_nodes(spec, nodes, r), "dst",
                           spec.wan_queue, delay, spec.wan_burst)
    return out


def tc_argv(ns: str, line: str) -> list[str]:
    """A batch line as the argv of one `tc -n NS ...` command."""
    return ["tc", "-n", ns, *line.split()]


def netem_commands(spec: Spec) -> list[list[str]]:
    """Every tc command the netem backend runs in the router namespace, as argv lists
    (pure: used by `up` through tc -batch, and by the tests)."""
    return [tc_argv(spec.router_ns(), ln) for ln in router_tc_lines(spec, "netem")]


def _wan_nodes(spec: Spec, nodes: list[str], rail: int) -> list[tuple[str, int]]:
    return [(spec.addr(n, rail), min(spec.link_rates(n, rail)[1], spec.link_rates(n, rail)[0]))
            for n in nodes]


# ---- up / down ----

def _spec_key(spec: Spec) -> str:
    d = spec.to_dict()
    d.pop("source", None)
    return json.dumps(d, sort_keys=True)


def is_up(spec: Spec) -> bool:
    st = load_state(spec.prefix)
    if st is None or st.get("key") != _spec_key(spec):
        return False
    if set(spec.namespaces()) - set(list_namespaces(spec.prefix)):
        return False
    if st.get("delay_backend", "delayline" if spec.wan_delay > 0 else "none") == "delayline":
        pids = st.get("delayline_pids") or [st.get("delayline_pid")]
        if not all(p and pid_alive(int(p)) for p in pids):
            return False
    if any(not (cpu_cgroup(spec.prefix, lim.name) / "cgroup.procs").exists()
           for lim in spec.node_limits):
        return False
    if spec.cpu_group_shared() and not (job_cpu_group(spec.prefix) / "cgroup.procs").exists():
        return False
    return True


def up(spec: Spec, note: Callable[[str], None] | None = None) -> str:
    """Build the testbed; idempotent (an identical running testbed is left alone, anything
    else with the prefix is removed first). Returns a one-line summary; `note` gets a line
    before a step that takes seconds (the trim's measurement)."""
    require_root()
    if is_up(spec):
        return f"testbed '{spec.prefix}' already up ({len(spec.node_names())} nodes)"
    if list_namespaces(spec.prefix) or state_dir(spec.prefix).exists():
        down(spec.prefix)
    if spec.node_limits or spec.cpu_group_shared():
        check_cpu_controller()
    netem_ok = None
    if spec.delay_io == "packet" and spec.delay_backend == "netem":
        raise MpilabError(f"{spec.source}: wan.delay_io = \"packet\" is the delay line's; "
                          "the delay backend is netem")
    requested = "delayline" if spec.delay_io == "packet" else spec.delay_backend
    wan = spec.max_delay() if spec.sites > 1 else 0.0  # one site: no WAN to delay
    if wan > 0 and requested != "delayline":
        netem_ok = netem_available(spec.prefix)
    backend = choose_delay_backend(requested, wan, netem_ok, spec.source)
    if backend == "netem" and spec.delay_groups():
        raise MpilabError(f"{spec.source}: per-node wan_delay needs the delay line backend "
                          "(netem delays by destination)")
    delayline = find_tool("mpilab-delayline") if backend == "delayline" else None
    io = "packet" if backend == "delayline" and spec.packet_line_wanted() else "tun"
    if note and backend == "delayline" and spec.delay_trim is None and spec.wan_delay > 0 \
            and not spec.delay_groups():
        from mpilab.testbed.oneway import calibration_note

        note(calibration_note(spec.wan_delay))
    sd = state_dir(spec.prefix)
    try:
        _build(spec, sd, delayline, backend, netem_ok, io)
    except BaseException:
        down(spec.prefix)
        raise
    how = {"none": "no WAN delay" if spec.sites > 1 else "one site: no WAN, no delay line",
           "netem": f"WAN delay {spec.wan_delay * 1e3:g} ms by netem",
           "delayline": f"WAN delay {spec.wan_delay * 1e3:g} ms by the delay line"
           + (" on packet sockets" if io == "packet" else "")
           + "".join(f", {d * 1e3:g} ms from {len(g)} node rail(s) by a delay line of its own"
                     for d, g in spec.delay_groups())
           + ("" if netem_ok is None else " (no netem in this kernel)")}[backend]
    if spec.node_limits:
        how += ", CPU quota " + ", ".join(
            f"{lim.name} {lim.cpu_quota:g} CPU" for lim in spec.node_limits)
    if spec.cpu_group_shared():
        how += f", jobs in cpu group {job_cpu_group(spec.prefix).name}"
    if backend == "delayline":
        how += trim_text((load_state(spec.prefix) or {}).get("delay_trim"), spec.wan_delay)
    return (f"testbed '{spec.prefix}' up: {spec.sites} sites x {spec.nodes_per_site} nodes x "
            f"{spec.rails} rails, {how}, state in {sd}")


def socket_buffer_sysctls(spec: Spec) -> list[str]:
    """The per-namespace TCP buffer limits of `wan.socket_buffer` (empty if unset)."""
    b = spec.socket_buffer
    if not b:
        return []
    return [f"net.ipv4.tcp_rmem=4096 {b} {b}", f"net.ipv4.tcp_wmem=4096 {b} {b}"]


def node_link_lines(spec: Spec, rail: int) -> list[str]:
    """ip batch lines for a node's rail device beyond its address (segment offload)."""
    if spec.segment_offload is False:  # one TCP segment per packet, as on a real link
        return [f"link set dev r{rail} gso_max_segs 1"]
    return []


def node_sysctls(spec: Spec) -> list[str]:
    """The per-node-namespace sysctls the spec asks for (socket buffers, slow start after
    idle); empty when it asks for none."""
    out = socket_buffer_sysctls(spec)
    if spec.slow_start_after_idle is not None:
        out.append(f"net.ipv4.tcp_slow_start_after_idle={int(spec.slow_start_after_idle)}")
    return out


def job_cpu_group(prefix: str) -> Path:
    """The testbed's shared cgroup v1 cpu group: with `cluster.shared_cpu_group` (the default
    when a node has a CPU quota) every node's jobs run in it, a limited node's in its own
    group nested in it. Without it each node's MPI daemon (a session of its own) and so its
    ranks form an autogroup of their own in the root group, and the scheduler switches
    between autogroups only when a slice ends: a rank that polls and yields (Open MPI's
    mpi_yield_when_idle) does not hand its CPU to a rank of another node that has a message
    to take, which then waits milliseconds (docs/testbed-hetero.md, "CPU quotas")."""
    return CPU_CGROUP_ROOT / f"{prefix}-nodes"


def cpu_cgroup(prefix: str, node: str) -> Path:
    """The cgroup v1 cpu group of a node with a CPU quota (inside the shared group)."""
    return job_cpu_group(prefix) / f"{prefix}-{node}"


def check_cpu_controller() -> None:
    """One line unless the cgroup v1 cpu controller with bandwidth control is there."""
    if not (CPU_CGROUP_ROOT / "cpu.cfs_quota_us").exists() \
            or not os.access(CPU_CGROUP_ROOT, os.W_OK):
        raise MpilabError(f"[[node]] cpu_quota and cluster.shared_cpu_group need the cgroup "
                          f"v1 cpu controller with bandwidth control, writable at "
                          f"{CPU_CGROUP_ROOT} (not found)")


def make_cpu_cgroups(spec: Spec) -> None:
    """The shared group (when a node is limited or cluster.shared_cpu_group), and in it one
    cpu group per limited node: period first (the quota must fit the period's bounds), then
    the quota."""
    if not spec.node_limits and not spec.cpu_group_shared():
        return
    job_cpu_group(spec.prefix).mkdir(exist_ok=True)
    for lim in spec.node_limits:
        cg = cpu_cgroup(spec.prefix, lim.name)
        cg.mkdir(exist_ok=True)
        (cg / "cpu.cfs_period_us").write_text(str(lim.period_us()))
        (cg / "cpu.cfs_quota_us").write_text(str(lim.quota_us()))


def _remove_cpu_group(cg: Path) -> int:
    """Remove cpu group cg and the groups inside it (innermost first, their processes
    ended); returns how many were removed."""
    n = sum(_remove_cpu_group(c) for c in sorted(cg.iterdir()) if c.is_dir())
    try:
        pids = [int(x) for x in (cg / "cgroup.procs").read_text().split()]
    except OSError:
        pids = []
    if pids:
        kill_pids(pids)
    try:
        cg.rmdir()
        n += 1
    except OSError:
        pass
    return n


def remove_cpu_cgroups(prefix: str) -> int:
    """Remove the prefix's cpu groups (their processes are ended before); returns how many."""
    if not CPU_CGROUP_ROOT.is_dir():
        return 0
    return sum(_remove_cpu_group(cg) for cg in sorted(CPU_CGROUP_ROOT.glob(f"{prefix}-*"))
               if cg.is_dir())


def _build(spec: Spec, sd: Path, delayline: str | None, backend: str = "delayline",
           netem_ok: bool | None = None, delay_io: str = "tun") -> None:
    (sd / "tmp").mkdir(parents=True, exist_ok=True)
    for node in spec.node_names():
        (sd / "tmp" / node).mkdir(exist_ok=True)
    for ns in spec.namespaces():
        sh(["ip", "netns", "add", ns])
    sysctl_common = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
    for ns in spec.namespaces():
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        sh(["ip", "netns", "exec", ns, "sysctl", "-qw", *sysctl_common])
    if node_sysctls(spec):
        for node in spec.node_names():
            sh(["ip", "netns", "exec", spec.ns(node), "sysctl", "-qw", *node_sysctls(spec)])
    make_cpu_cgroups(spec)
    router = spec.router_ns()
    r_ip: list[str] = []
    r_tc = router_tc_lines(spec, backend)
    for s in range(spec.sites):
        sw = spec.sw_ns(s)
        sw_ip: list[str] = []
        sw_tc: list[str] = []
        nodes = [f"s{s}n{j}" for j in range(spec.nodes_per_site)]
        for r in range(spec.rails):
            plen = spec.rail_net(s, r).prefixlen
            sw_ip += [f"link add br{r} type bridge forward_delay 0 stp_state 0",
                      f"link set br{r} up",
                      f"link add up{r} type veth peer name s{s}r{r} netns {router}",
                      f"link set up{r} master br{r} up"]
            r_ip += [f"addr add {spec.gateway(s, r)}/{plen} dev s{s}r{r}",
                     f"link set s{s}r{r} up"]
            sw_tc += htb_wan(f"up{r}", spec.wan_total_rate, _wan_nodes(spec, nodes, r), "src",
                             spec.wan_queue, burst=spec.wan_burst)
            for j, node in enumerate(nodes):
                sw_ip += [f"link add n{j}r{r} type veth peer name r{r} netns {spec.ns(node)}",
                          f"link set n{j}r{r} master br{r} up"]
                lan = spec.link_rates(node, r)[0]
                sw_tc += htb_single(f"n{j}r{r}", lan, spec.lan_queue)
        batch("ip", sw, sw_ip)
        for node in nodes:
            n_ip: list[str] = []
            n_tc: list[str] = []
            for r in range(spec.rails):
                plen = spec.rail_net(s, r).prefixlen
                n_ip += [f"addr add {spec.addr(node, r)}/{plen} dev r{r}",
                         *node_link_lines(spec, r), f"link set r{r} up"]
                for s2 in range(spec.sites):
                    if s2 != s:
                        n_ip.append(f"route add {spec.rail_net(s2, r)} via {spec.gateway(s, r)} "
                                    f"dev r{r}")
                n_tc += htb_single(f"r{r}", spec.link_rates(node, r)[0], spec.lan_queue)
            batch("ip", spec.ns(node), n_ip)
            batch("tc", spec.ns(node), n_tc)
        batch("tc", sw, sw_tc)
    batch("ip", router, r_ip)
    batch("tc", router, r_tc)
    # with the delay line on packet sockets the line forwards between sites, not the kernel
    packet_line = backend == "delayline" and delay_io == "packet" and spec.wan_delay > 0
    sh(["ip", "netns", "exec", router, "sysctl", "-qw",
        f"net.ipv4.ip_forward={0 if packet_line else 1}",
        "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"])

    state: dict[str, Any] = {"spec": spec.to_dict(), "key": _spec_key(spec),
                             "created": time.time(), "delayline_pid": None,
                             "delay_backend": backend, "netem_available": netem_ok,
                             "delay_io": delay_io if backend == "delayline" else None}
    if backend == "delayline":
        if not delayline:
            raise MpilabError("mpilab-delayline not found (build it; see $MPILAB_BIN)")
        pids = []
        io = ["--dev", DL_DEV]
        if packet_line:
            pid, io = _start_packet_line(spec, sd, delayline)
            pids.append(pid)
        elif spec.wan_delay > 0:
            pids.append(_start_delayline(spec, sd, delayline, spec.wan_delay, DL_DEV,
                                         DELAY_TABLE, delay_rules(spec, 0)))
        if spec.wan_delay > 0:
            state["delay_trim"], pids[0] = _delay_trim(spec, sd, pids[0], delayline, io,
                                                       packet_line)
            state["delay_truth"] = delay_verdict(state["delay_trim"], spec.wan_delay)
        for k, (d, _) in enumerate(spec.delay_groups(), 1):
            pids.append(_start_delayline(spec, sd, delayline, d, f"dl{k}", DELAY_TABLE + k,
                                         delay_rules(spec, k), f"delayline-{k}"))
        state["delayline_pid"] = pids[0] if pids else None
        state["delayline_pids"] = pids
        state["delayline_args"] = delayline_args()
        state["delayline_io"] = io
    atomic_write_text(sd / "state.json", json.dumps(state, indent=1) + "\n")


def delay_rules(spec: Spec, group: int) -> list[str]:
    """The router's policy rules (ip batch lines) sending packets into delay line `group`:
    0, the default line (wan.delay): every packet that arrives from a site leg; k >= 1
    (spec.delay_groups()[k-1]): the packets of its nodes' addresses, at a higher priority."""
    if group == 0:
        return [f"rule add iif s{s}r{r} lookup {DELAY_TABLE} pref 100"
                for s in range(spec.sites) for r in range(spec.rails)]
    _, members = spec.delay_groups()[group - 1]
    out = []
    for node, rail in members:
        s = int(node[1:].split("n")[0])
        out.append(f"rule add from {spec.addr(node, rail)}/32 iif s{s}r{rail} "
                   f"lookup {DELAY_TABLE + group} pref 90")
    return out


def delayline_args() -> list[str]:
    """The extra options every delay line of `up` gets ($MPILAB_DELAYLINE_ARGS, e.g.
    --no-realtime or --cold-crossing); recorded in the state (`delayline_args`)."""
    return shlex.split(os.environ.get("MPILAB_DELAYLINE_ARGS", ""))


def _spawn_delayline(spec: Spec, sd: Path, delayline: str, delay: float, io: list[str],
                     name: str, extra: list[str]) -> int:
    """Start one mpilab-delayline in the router with I/O options `io` (["--dev", TUN] or
    ["--io", "packet", "--peer", ...]); its pid once it has attached (pidfile written), or
    a one-line error with the last line of its log."""
    router = spec.router_ns()
    pid_path = sd / f"{name}.pid"
    pid_path.unlink(missing_ok=True)
    log = open(sd / f"{name}.log", "ab")
    try:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", router, delayline, *extra, *io,
             "--delay", f"{delay!r}", "--buffer", str(spec.delayline_buffer),
             "--stats", str(sd / f"{name}.json"), "--pidfile", str(pid_path),
             "--trim-file", str(sd / f"{name}.trim")],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    finally:
        log.close()
    if pidfile.wait_recorded(pid_path, proc, DELAYLINE, 5.0, "delay line") is None:
        why = (sd / f"{name}.log").read_text().strip().splitlines()
        raise MpilabError(f"mpilab-delayline did not start: {why[-1] if why else '?'}")
    return proc.pid


def _start_delayline(spec: Spec, sd: Path, delayline: str, delay: float, dev: str,
                     table: int, rules: list[str], name: str = "delayline") -> int:
    router = spec.router_ns()
    sh(["ip", "-n", router, "tuntap", "add", dev, "mode", "tun"])
    # the trim (wan.delay_trim) is the default line's; per-node lines hold their delay whole
    trim = (spec.delay_trim or 0.0) if name == "delayline" else 0.0
    atomic_write_text(sd / f"{name}.trim", f"{trim * 1e9:.0f}ns\n")
    # extra options for the delay line, e.g. --no-realtime (benchmarks compare both)
    pid = _spawn_delayline(spec, sd, delayline, delay, ["--dev", dev], name, delayline_args())
    batch("ip", router, [
        f"link set {dev} txqueuelen 10000 up",
        f"route add default dev {dev} table {table}",
        *rules,
    ])
    sh(["ip", "netns", "exec", router, "sysctl", "-qw", f"net.ipv4.conf.{dev}.rp_filter=0"])
    return pid


def _start_packet_line(spec: Spec, sd: Path, delayline: str) -> tuple[int, list[str]]:
    """The default delay line on packet sockets (wan.delay_io = "packet"): every node's
    address on every rail is a peer behind its site's leg; the router does not forward.
    Returns its pid and I/O options."""
    atomic_write_text(sd / "delayline.trim", f"{(spec.delay_trim or 0.0) * 1e9:.0f}ns\n")
    io = ["--io", "packet"]
    for node in spec.node_names():
        site = parse_node(node)[0]
        for r in range(spec.rails):
            mac = _link_mac(spec.ns(node), f"r{r}")
            io += ["--peer", f"{spec.addr(node, r)},s{site}r{r},{mac}"]
    return _spawn_delayline(spec, sd, delayline, spec.wan_delay, io, "delayline",
                            delayline_args()), io


def _link_mac(ns: str, dev: str) -> str:
    """The MAC address of interface `dev` in namespace `ns`."""
    out = subprocess.run(["ip", "-n", ns, "-j", "link", "show", "dev", dev], capture_output=True,
                         text=True, check=False)
    try:
        return str(json.loads(out.stdout)[0]["address"])
    except (ValueError, LookupError, TypeError):
        raise MpilabError(f"{ns}: no MAC address for {dev} ({out.stderr.strip()})") from None


def restart_delayline(prefix: str, extra: list[str]) -> int:
    """Replace the running default delay line (wan.delay) of testbed `prefix` by one with
    the options `extra`, on the same tun device, routes and trim file (benchmarks compare
    the line's modes side by side on one testbed). The state records the new pid and
    options. Returns the new pid; a one-line error when the testbed has no delay line."""
    require_root()
    st = load_state(prefix)
    if not st or not st.get("delayline_pid"):
        raise MpilabError(f"testbed '{prefix}' has no running delay line")
    delayline = find_tool("mpilab-delayline")
    if not delayline:
        raise MpilabError("mpilab-delayline not found (build it; see $MPILAB_BIN)")
    spec = Spec.from_dict(st["spec"])
    sd = state_dir(prefix)
    pidfile.stop([(sd / "delayline.pid", DELAYLINE)])
    pid = _spawn_delayline(spec, sd, delayline, spec.wan_delay,
                           list(st.get("delayline_io") or ["--dev", DL_DEV]), "delayline", extra)
    st["delayline_pid"] = pid
    st["delayline_pids"] = [pid, *st.get("delayline_pids", [])[1:]]
    st["delayline_args"] = list(extra)
    atomic_write_text(sd / "state.json", json.dumps(st, indent=1) + "\n")
    return pid


def _delay_rules(spec: Spec) -> list[str]:
    """The `ip rule` arguments that send inter-site packets into the default delay line."""
    return [r.removeprefix("rule add ") for r in delay_rules(spec, 0)]


def _delay_trim(spec: Spec, sd: Path, pid: int, delayline: str, io: list[str],
                packet_line: bool) -> tuple[dict[str, Any], int]:
    """The trim the delay line takes off its hold: as configured, or (wan.delay_trim =
    "auto") measured now from lone packets (oneway.calibrate_trim). Returns it and the
    line's pid (a sleeping packet-socket line is restarted by the measurement)."""
    if spec.delay_trim is not None:
        return {"trim_s": spec.delay_trim, "measured": False}, pid
    if spec.delay_groups():
        # the calibration's lone packets would cross the per-node lines too
        return {"trim_s": 0.0, "measured": False,
                "not_measured": "per-node WAN delays ([[link]] wan_delay)"}, pid
    from mpilab.testbed import oneway

    cur = [pid]
    undelayed: Callable[[], AbstractContextManager[object]]
    if not packet_line:
        undelayed = partial(oneway.rules_removed, spec.router_ns(), _delay_rules(spec))
    elif (fresh_stats(sd / "delayline.json", pid) or {}).get("busy_poll") is True:
        undelayed = partial(_packet_line_standby, spec.router_ns(), pid)
    else:
        undelayed = partial(_packet_line_out, spec, sd, delayline, io, cur)
    res = oneway.calibrate_trim(spec, undelayed, sd / "delayline.trim", partial(cur.__getitem__, 0))
    res["measured"] = True
    return res, cur[0]


@contextmanager
def _packet_line_out(spec: Spec, sd: Path, delayline: str, io: list[str],
                     cur: list[int]) -> Iterator[None]:
    """The undelayed route of a sleeping delay line on packet sockets: the line (pid
    cur[0]) stopped and the router's kernel forwarding on; on the way out forwarding off
    again and a new line on the same peers and trim file (its pid into cur[0]). (A line
    in standby would be woken by every frame its socket still sees: undelayed crossings
    then came 10-20 us slower and the trims at 1-100 ms -17 to -25 us.)"""
    kill_pids([cur[0]])
    _ip_forward(spec.router_ns(), True)
    try:
        yield
    finally:
        _ip_forward(spec.router_ns(), False)
        cur[0] = _spawn_delayline(spec, sd, delayline, spec.wan_delay, io, "delayline",
                                  delayline_args())


@contextmanager
def _packet_line_standby(router: str, pid: int) -> Iterator[None]:
    """The undelayed route of a busy-polling delay line on packet sockets: the line (pid)
    in standby (SIGUSR2: it takes nothing in, and goes on polling and warming its paths as
    in service, so a core spins as it will for the delayed packets; a stopped line left it
    idle, and undelayed crossings up to 8 us slower: trims at 100 us of -14 to -16 us
    against about -8 in the runs) and the router's kernel forwarding on; on
    the way out forwarding off and the line back in service."""
    signal_line(pid, signal.SIGUSR2)
    _ip_forward(router, True)
    try:
        yield
    finally:
        _ip_forward(router, False)
        signal_line(pid, signal.SIGUSR2)


def _ip_forward(router: str, on: bool) -> None:
    sh(["ip", "netns", "exec", router, "sysctl", "-qw", f"net.ipv4.ip_forward={int(on)}"])


def scheduler_pids(prefix: str) -> list[int]:
    """Pending fault schedulers of this prefix (found in /proc, not only in the state)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (b"mpilab.testbed.faults" in argv or b"mpilab.pathmig.inject" in argv) \
                and b"--prefix" in argv:
            i = argv.index(b"--prefix")
            if i + 1 < len(argv) and argv[i + 1] == prefix.encode():
                out.append(int(d.name))
    return out


def down(prefix: str) -> list[str]:
    """Remove everything with this prefix: fault schedulers, processes in its namespaces,
    the namespaces (with their links, qdiscs, tun device and rules) and the state dir.
    Works from the system's view, so also after a crash. Returns what was removed."""
    require_root()
    removed = []
    sched = scheduler_pids(prefix)
    if sched:
        kill_pids(sched, grace=1.0)
        removed.append(f"{len(sched)} fault scheduler(s)")
    from mpilab.testbed import jobctl

    jobs = jobctl.reap_cgroups(prefix, stale_only=False)  # whole jobs, wherever they run
    if jobs:
        removed.append(f"{jobs} process(es) of jobs")
    namespaces = list_namespaces(prefix)
    pids = sorted({p for ns in namespaces for p in ns_pids(ns)})
    if pids:
        kill_pids(pids)
        removed.append(f"{len(pids)} process(es)")
    for ns in namespaces:
        sh(["ip", "netns", "del", ns], check=False)
    if namespaces:
        removed.append(f"{len(namespaces)} namespace(s)")
    ncg = remove_cpu_cgroups(prefix)
    if ncg:
        removed.append(f"{ncg} cpu cgroup(s)")
    left = list_namespaces(prefix)
    if left:
        raise MpilabError(f"testbed '{prefix}': could not remove namespace {left[0]}")
    sd = state_dir(prefix)
    if sd.exists():
        shutil.rmtree(sd, ignore_errors=True)
        removed.append(str(sd))
    return removed
