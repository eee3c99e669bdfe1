"""SimGrid platform files (XML, DTD version 4.1, read by SimGrid 3.32's smpirun -platform).

Three sources, one writer (docs/sim.md has the mapping tables):

* a testbed spec (mpilab.testbed.spec): the emulated cluster of `mpilab testbed up`,
  link for link: a node's LAN link (lan.rate), its WAN share (wan.node_rate, b_WAN), each
  site's uplink (wan.total_rate, B_WAN, per direction) and the WAN delay L (wan.delay),
  routed by DijkstraCache; keys SimGrid cannot express are refused with file:line;
* a built-in topology: `flat` (N nodes behind one switch), `fattree`, `torus`,
  `dragonfly` (SimGrid's <cluster topology=...>; the shape is checked here, so a bad one
  is a one-line error instead of a SimGrid abort);
* a heterogeneous cluster file (TOML, [[nodes]] groups): per-node CPU speed, cores,
  link rate and latency behind one switch (a routing="Cluster" zone with host_link).

Everything here is pure: it returns the document's bytes; the CLI (mpilab.sim.cli) writes
them with mpilab.fsutil and prints their sha256.
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mpilab import tomlread, units
from mpilab.errors import MpilabError
from mpilab.fsutil import read_regular
from mpilab.testbed import spec as tbspec

DTD_VERSION = "4.1"
DOCTYPE = '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
TOPOLOGIES = ("flat", "fattree", "torus", "dragonfly")
MAX_HOSTS = 65536
MAX_CORES = 4096
MAX_SPEED = 1e15  # flop/s per core
MAX_LATENCY = 10.0  # seconds, as the testbed's wan.delay
NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,31}", re.ASCII)
_SPEED_RE = re.compile(rf"({units._REAL})(f|kf|Mf|Gf|Tf)", re.ASCII)
_SPEED_UNITS = {"f": 1.0, "kf": 1e3, "Mf": 1e6, "Gf": 1e9, "Tf": 1e12}

# SMPI's calibrated correction factors turned off, so flows get exactly the links' rates
# and latencies; with FACTORS_SMPI nothing is written and SimGrid's defaults apply.
FACTORS_EXACT = "exact"
FACTORS_SMPI = "smpi"
EXACT_CONFIG = {"smpi/bw-factor": "0:1", "smpi/lat-factor": "0:1",
                "network/crosstraffic": "0"}

# Testbed spec keys: what each becomes. Keys in UNSUPPORTED are refused when the file
# sets them (the emulator's defaults for them are not simulated either; docs/sim.md).
UNSUPPORTED = {
    "lan.queue": "SimGrid's flow model has no queues (bandwidth is shared, nothing is "
                 "buffered or dropped)",
    "wan.queue": "SimGrid's flow model has no queues (bandwidth is shared, nothing is "
                 "buffered or dropped)",
    "wan.socket_buffer": "SimGrid's TCP window (network/TCP-gamma) is the window itself, "
                         "the kernel's is a part of the buffer (64K gave 31, not 52 Mbit/s "
                         "at 10 ms RTT: docs/multilane.md); choose it with --tcp-gamma",
    "link.wan_delay": "the generated platform has one WAN latency per site uplink, not one "
                      "per sending node",
    "node.cpu_quota": "a CPU quota throttles the node's processes in real time; simulated "
                      "hosts have speeds (SMPI's per-host overheads: docs/models-lmo.md)",
    "node.cpu_period": "a CPU quota throttles the node's processes in real time; simulated "
                       "hosts have speeds",
    "wan.slow_start_after_idle": "SimGrid's flows have no congestion window",
    "node.msg_cost": "a CPU time per message is spent by a library preloaded into real "
                     "ranks; simulated hosts take it as SMPI's per-host overheads (smpi/os, "
                     "smpi/or: docs/models-lmo.md)",
    "node.msg_cost_clock": "a message cost is spent by a library preloaded into real ranks; "
                           "simulated hosts take it as SMPI's per-host overheads (smpi/os, "
                           "smpi/or: docs/models-lmo.md)",
}
EMULATOR_ONLY = ("wan.delayline_buffer", "wan.delay_backend", "wan.delay_io", "wan.burst",
                 "cluster.segment_offload", "cluster.shared_cpu_group")


# ---- values ----

def parse_speed(value: object) -> float:
    """'2.8Gf' / '1e9f' / 2.8e9 (flop/s) -> flop/s, SimGrid's units (f, kf, Mf, Gf, Tf)."""
    if isinstance(value, bool):
        raise ValueError("not a speed")
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        m = _SPEED_RE.fullmatch(value)
        if not m:
            raise ValueError("not a speed (use e.g. 1Gf, 2.8Gf: flop/s)")
        v = float(m.group(1)) * _SPEED_UNITS[m.group(2)]
    else:
        raise ValueError("not a speed")
    if not math.isfinite(v) or v <= 0:
        raise ValueError("speed must be positive")
    if v > MAX_SPEED:
        raise ValueError("speed above 1000Tf")
    return v


def parse_rate(value: object) -> int:
    """A link rate in bit/s ('1Gbit', '100Mbit'), positive, at most 100 Gbit/s."""
    return tbspec.parse_rate(value)


def parse_latency(value: object) -> float:
    v = units.parse_duration(value)  # type: ignore[arg-type]
    if v > MAX_LATENCY:
        raise ValueError(f"more than {MAX_LATENCY:g} s")
    return v


def check_name(name: str, what: str = "name") -> str:
    if not NAME_RE.fullmatch(name):
        raise MpilabError(f"{what} {name!r}: must be 1-32 characters A-Za-z0-9_.-, "
                          "starting with a letter")
    return name


def fmt_bw(bps: float) -> str:
    """bit/s as SimGrid writes bits per second: '1000000000bps'."""
    return f"{round(bps)}bps"


def fmt_time(s: float) -> str:
    """Seconds with 15 significant digits: 5 x 1e-6 is '5e-06s', not '4.9999999999999996e-06s'."""
    return f"{s:.15g}s"


def fmt_speed(f: float) -> str:
    return f"{f:.15g}f"


# ---- the document ----

@dataclass(frozen=True)
class Generated:
    """A platform document and what it describes (for messages and provenance)."""

    xml: bytes
    hosts: tuple[str, ...]
    description: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.xml).hexdigest()


def _document(configs: dict[str, str], build: Any, hosts: Sequence[str],
              description: str) -> Generated:
    root = ET.Element("platform", version=DTD_VERSION)
    if configs:
        cfg = ET.SubElement(root, "config")
        for key, value in configs.items():
            ET.SubElement(cfg, "prop", id=key, value=value)
    build(root)
    ET.indent(root, space=" ")
    body = ET.tostring(root, encoding="unicode")
    text = f'<?xml version="1.0" encoding="UTF-8"?>\n{DOCTYPE}\n{body}\n'
    return Generated(text.encode("utf-8"), tuple(hosts), description)


def _configs(factors: str, tcp_gamma: int | None) -> dict[str, str]:
    if factors not in (FACTORS_EXACT, FACTORS_SMPI):
        raise MpilabError(f"factors {factors!r}: expected {FACTORS_EXACT} or {FACTORS_SMPI}")
    out = dict(EXACT_CONFIG) if factors == FACTORS_EXACT else {}
    if tcp_gamma is not None:
        out["network/TCP-gamma"] = str(tcp_gamma)
    return out


def _props(elem: ET.Element, props: dict[str, str]) -> None:
    for key, value in props.items():
        ET.SubElement(elem, "prop", id=key, value=value)


def _link(zone: ET.Element, ident: str, bps: float, lat: float,
          policy: str = "SPLITDUPLEX") -> None:
    ET.SubElement(zone, "link", id=ident, bandwidth=fmt_bw(bps), latency=fmt_time(lat),
                  sharing_policy=policy)


def _route(zone: ET.Element, src: str, dst: str, links: Sequence[str]) -> None:
    r = ET.SubElement(zone, "route", src=src, dst=dst)
    for ident in links:
        ET.SubElement(r, "link_ctn", id=ident, direction="UP")


# ---- built-in topologies ----

@dataclass
class Topology:
    """A homogeneous cluster: `kind` in TOPOLOGIES, `shape` in SimGrid's topo_parameters
    syntax (None for flat). Rates in bit/s, latencies in s, speed in flop/s per core."""

    kind: str
    nodes: int | None = None
    shape: str | None = None
    bw: int = 10 * 10**9
    lat: float = 1e-6
    speed: float = 1e9
    cores: int = 1
    backbone_bw: int | None = None
    backbone_lat: float = 0.0
    loopback_bw: int | None = None  # ranks of one host: a loopback link (else its own link
    loopback_lat: float = 0.0       # twice, up and down, as SimGrid's cluster routes them)
    name: str = "node"
    factors: str = FACTORS_EXACT
    tcp_gamma: int | None = None


def _positive_ints(text: str, what: str, count: int | None = None) -> list[int]:
    parts = text.split(",")
    if count is not None and len(parts) != count:
        raise MpilabError(f"{what} {text!r}: expected {count} comma-separated counts, "
                          f"got {len(parts)}")
    out = []
    for p in parts:
        try:
            v = units.parse_int(p)
        except ValueError:
            raise MpilabError(f"{what} {text!r}: {p!r} is not a count") from None
        if v < 1:
            raise MpilabError(f"{what} {text!r}: {p} must be at least 1")
        out.append(v)
    return out


def shape_hosts(kind: str, shape: str | None) -> int:
    """The number of hosts a shape describes; MpilabError (one line) for a bad shape.
    torus: 'X,Y,Z' (any number of dimensions); fattree: 'LEVELS;DOWN...;UP...;PARALLEL...'
    (each list LEVELS long, e.g. '2;4,4;1,2;1,2'); dragonfly:
    'GROUPS,BLUE;CHASSIS,BLACK;ROUTERS,GREEN;NODES' (e.g. '3,4;4,3;5,1;2'). Beyond the
    grammar, what SimGrid 3.32 cannot build is refused here: a torus dimension of 1, a
    dragonfly with more groups than routers per chassis."""
    if kind not in TOPOLOGIES:
        raise MpilabError(f"topology {kind!r}: unknown (expected {', '.join(TOPOLOGIES)})")
    if kind == "flat":
        if shape is not None:
            raise MpilabError("topology flat: takes --nodes, not --shape")
        raise MpilabError("topology flat: the number of hosts is --nodes")
    if not shape:
        raise MpilabError(f"topology {kind}: --shape is required")
    if kind == "torus":
        dims = _positive_ints(shape, "torus shape")
        if min(dims) < 2:
            # SimGrid 3.32 declares a size-1 dimension's link to itself twice and aborts
            raise MpilabError(f"torus shape {shape!r}: every dimension must be at least 2 "
                              "(drop the dimensions of size 1)")
        return math.prod(dims)
    if kind == "fattree":
        parts = shape.split(";")
        if len(parts) != 4:
            raise MpilabError(f"fattree shape {shape!r}: expected LEVELS;DOWN;UP;PARALLEL "
                              "(4 parts separated by ';', e.g. 2;4,4;1,2;1,2)")
        levels = _positive_ints(parts[0], "fattree levels", 1)[0]
        down = _positive_ints(parts[1], f"fattree shape {shape!r}: down counts", levels)
        _positive_ints(parts[2], f"fattree shape {shape!r}: up counts", levels)
        _positive_ints(parts[3], f"fattree shape {shape!r}: parallel link counts", levels)
        return math.prod(down)
    parts = shape.split(";")
    if len(parts) != 4:
        raise MpilabError(f"dragonfly shape {shape!r}: expected GROUPS,LINKS;CHASSIS,LINKS;"
                          "ROUTERS,LINKS;NODES (e.g. 3,4;4,3;5,1;2)")
    groups = _positive_ints(parts[0], f"dragonfly shape {shape!r}: groups,links", 2)
    chassis = _positive_ints(parts[1], f"dragonfly shape {shape!r}: chassis,links", 2)
    routers = _positive_ints(parts[2], f"dragonfly shape {shape!r}: routers,links", 2)
    nodes = _positive_ints(parts[3], f"dragonfly shape {shape!r}: nodes per router", 1)
    if groups[0] > routers[0]:
        # SimGrid 3.32 routes to another group through the router whose number in the
        # chassis is that group's (DragonflyZone::get_local_route): with more groups than
        # routers per chassis it reads past the chassis and crashes
        raise MpilabError(f"dragonfly shape {shape!r}: {groups[0]} groups need at least "
                          f"{groups[0]} routers per chassis, it has {routers[0]} (SimGrid "
                          "routes to group g through router g of each chassis)")
    return groups[0] * chassis[0] * routers[0] * nodes[0]


def _check_common(nodes: int, cores: int) -> None:
    if not 1 <= nodes <= MAX_HOSTS:
        raise MpilabError(f"{nodes} hosts: expected 1 to {MAX_HOSTS}")
    if not 1 <= cores <= MAX_CORES:
        raise MpilabError(f"cores {cores}: expected 1 to {MAX_CORES}")


def topology(t: Topology) -> Generated:
    """The <cluster> of a built-in topology; hosts NAME-0 ... NAME-(N-1)."""
    check_name(t.name)
    if t.kind not in TOPOLOGIES:
        raise MpilabError(f"topology {t.kind!r}: unknown (expected {', '.join(TOPOLOGIES)})")
    if t.kind == "flat":
        if t.shape is not None:
            raise MpilabError("topology flat: takes --nodes, not --shape")
        if t.nodes is None:
            raise MpilabError("topology flat: --nodes is required")
        n = t.nodes
    else:
        if t.backbone_bw is not None:
            raise MpilabError(f"topology {t.kind}: --backbone-bw is for flat (its switch); "
                              f"{t.kind} links all have --bw")
        n = shape_hosts(t.kind, t.shape)
        if t.nodes is not None and t.nodes != n:
            raise MpilabError(f"{t.kind} shape {t.shape!r} has {n} hosts, not --nodes "
                              f"{t.nodes}")
    _check_common(n, t.cores)
    hosts = [f"{t.name}-{i}" for i in range(n)]
    attrs = {"id": t.name, "prefix": f"{t.name}-", "suffix": "", "radical": f"0-{n - 1}",
             "speed": fmt_speed(t.speed), "core": str(t.cores), "bw": fmt_bw(t.bw),
             "lat": fmt_time(t.lat), "sharing_policy": "SPLITDUPLEX"}
    if t.kind != "flat":
        attrs["topology"] = {"fattree": "FAT_TREE", "torus": "TORUS",
                             "dragonfly": "DRAGONFLY"}[t.kind]
        attrs["topo_parameters"] = str(t.shape)
    elif t.backbone_bw is not None:
        attrs["bb_bw"] = fmt_bw(t.backbone_bw)
        attrs["bb_lat"] = fmt_time(t.backbone_lat)
    if t.loopback_bw is None and t.loopback_lat:
        raise MpilabError("--loopback-lat: give --loopback-bw too (the loopback link's rate)")
    if t.loopback_bw is not None:
        attrs["loopback_bw"] = fmt_bw(t.loopback_bw)
        attrs["loopback_lat"] = fmt_time(t.loopback_lat)
    desc = (f"{t.kind} cluster of {n} hosts" + (f" ({t.shape})" if t.shape else "")
            + f", {t.cores} core(s) of {t.speed / 1e9:g} Gf, links "
            f"{tbspec.format_rate(t.bw)} / {t.lat * 1e6:g} us"
            + (f", loopback {tbspec.format_rate(t.loopback_bw)} / {t.loopback_lat * 1e6:g} us"
               if t.loopback_bw is not None else ""))

    def build(root: ET.Element) -> None:
        c = ET.SubElement(root, "cluster", attrs)
        _props(c, {"mpilab.generator": "mpilab sim platform", "mpilab.topology": t.kind})

    return _document(_configs(t.factors, t.tcp_gamma), build, hosts, desc)


# ---- heterogeneous clusters ----

@dataclass
class NodeGroup:
    count: int
    speed: float
    rate: int
    latency: float
    cores: int = 1
    cpu: str = ""


@dataclass
class Hetero:
    """Nodes behind one switch, each with its own CPU speed and link (SPLITDUPLEX: the rate
    in each direction; node-to-node latency is the two nodes' latencies added)."""

    name: str
    groups: list[NodeGroup]
    switch_rate: int | None = None
    switch_latency: float = 0.0
    description: str = ""
    source: str = "<options>"
    factors: str = FACTORS_EXACT
    tcp_gamma: int | None = None

    def hosts(self) -> list[str]:
        n = sum(g.count for g in self.groups)
        return [f"{self.name}-{i}" for i in range(n)]


_HETERO_KEYS = {
    "": {"cluster", "nodes"},
    "cluster": {"name", "rate", "latency", "speed", "cores", "switch_rate",
                "switch_latency", "description"},
    "nodes": {"count", "cpu", "speed", "cores", "rate", "latency"},
}


_int_range = tbspec._int_in  # the testbed spec's converter (platform files share its grammar)


def _text(v: object) -> str:
    if not isinstance(v, str):
        raise ValueError("not a string")
    if any(not c.isprintable() for c in v) or len(v) > 200:
        raise ValueError("must be one printable line of at most 200 characters")
    return v


def load_hetero_text(text: str, source: str) -> Hetero:
    """Parse a heterogeneous cluster file (TOML; docs/sim.md). Errors name file:line."""
    data = tomlread.loads(text, source)
    ctx = tbspec._Ctx(source, text)
    for key in data:
        if key not in _HETERO_KEYS[""]:
            line = ctx.lines.get(("", 0, key)) or ctx.lines.get((key, 0, ""))
            raise MpilabError(f"{source}:{line}: {key}: unknown key" if line
                              else f"{source}: {key}: unknown key")
    cl = data.get("cluster", {})
    if not isinstance(cl, dict):
        raise ctx.err("", "cluster", "must be a table")
    for key in cl:
        if key not in _HETERO_KEYS["cluster"]:
            raise ctx.err("cluster", key, "unknown key")
    groups_in = data.get("nodes")
    if not isinstance(groups_in, list) or not groups_in:
        raise ctx.err("", "nodes", "expected at least one [[nodes]] group") if "nodes" in data \
            else MpilabError(f"{source}: no [[nodes]] groups")
    g = tbspec._get
    name = g(ctx, cl, "cluster", "name", _text, "node")
    if not NAME_RE.fullmatch(name):
        raise ctx.err("cluster", "name", f"{name!r}: must be 1-32 characters A-Za-z0-9_.-, "
                      "starting with a letter")
    rate = g(ctx, cl, "cluster", "rate", parse_rate, None)
    lat = g(ctx, cl, "cluster", "latency", parse_latency, None)
    speed = g(ctx, cl, "cluster", "speed", parse_speed, None)
    cores = g(ctx, cl, "cluster", "cores", _int_range(1, MAX_CORES), 1)
    h = Hetero(name=name, groups=[], source=source,
               switch_rate=g(ctx, cl, "cluster", "switch_rate", parse_rate, None),
               switch_latency=g(ctx, cl, "cluster", "switch_latency", parse_latency, 0.0),
               description=g(ctx, cl, "cluster", "description", _text, ""))
    total = 0
    for i, grp in enumerate(groups_in):
        if not isinstance(grp, dict):
            raise ctx.err("", "nodes", "must be an array of tables ([[nodes]])")
        for key in grp:
            if key not in _HETERO_KEYS["nodes"]:
                raise ctx.err("nodes", key, "unknown key", i)
        if "count" not in grp:
            raise ctx.err("nodes", "", "missing key 'count'", i)
        ng = NodeGroup(
            count=g(ctx, grp, "nodes", "count", _int_range(1, MAX_HOSTS), 1, i),
            speed=g(ctx, grp, "nodes", "speed", parse_speed, speed, i),
            rate=g(ctx, grp, "nodes", "rate", parse_rate, rate, i),
            latency=g(ctx, grp, "nodes", "latency", parse_latency, lat, i),
            cores=g(ctx, grp, "nodes", "cores", _int_range(1, MAX_CORES), cores, i),
            cpu=g(ctx, grp, "nodes", "cpu", _text, "", i))
        for key, val in (("speed", ng.speed), ("rate", ng.rate), ("latency", ng.latency)):
            if val is None:
                raise ctx.err("nodes", "", f"no {key}: give it here or in [cluster]", i)
        total += ng.count
        if total > MAX_HOSTS:
            raise ctx.err("nodes", "count", f"more than {MAX_HOSTS} hosts in all", i)
        h.groups.append(ng)
    return h


def hetero(h: Hetero) -> Generated:
    """A routing="Cluster" zone: one host and one SPLITDUPLEX link per node (host_link),
    the switch a shared backbone link when switch_rate is given (else non-blocking)."""
    check_name(h.name)
    if not h.groups:
        raise MpilabError(f"{h.source}: no nodes")
    hosts = h.hosts()
    _check_common(len(hosts), max(g.cores for g in h.groups))
    per_host: list[NodeGroup] = [grp for grp in h.groups for _ in range(grp.count)]
    desc = (f"heterogeneous cluster {h.name} of {len(hosts)} hosts in {len(h.groups)} "
            f"group(s) from {h.source}")

    def build(root: ET.Element) -> None:
        zone = ET.SubElement(root, "zone", id=h.name, routing="Cluster")
        props = {"mpilab.generator": "mpilab sim platform", "mpilab.source": h.source}
        if h.description:
            props["mpilab.description"] = h.description
        _props(zone, props)
        for host, grp in zip(hosts, per_host, strict=True):
            he = ET.SubElement(zone, "host", id=host, speed=fmt_speed(grp.speed),
                               core=str(grp.cores))
            if grp.cpu:
                _props(he, {"mpilab.cpu": grp.cpu})
        for host, grp in zip(hosts, per_host, strict=True):
            _link(zone, f"{host}-link", grp.rate, grp.latency)
        if h.switch_rate is not None:
            ET.SubElement(zone, "backbone", id=f"{h.name}-switch",
                          bandwidth=fmt_bw(h.switch_rate), latency=fmt_time(h.switch_latency))
        for host in hosts:
            ET.SubElement(zone, "host_link", id=host, up=f"{host}-link_UP",
                          down=f"{host}-link_DOWN")

    return _document(_configs(h.factors, h.tcp_gamma), build, hosts, desc)


# ---- testbed specs ----

@dataclass
class SpecOptions:
    """What a testbed spec does not say: the rail to simulate (specs with rails > 1), the
    hosts' CPU, the LAN links' latency, and keys the user accepts to lose."""

    rail: int | None = None
    speed: float = 1e9
    cores: int = 1
    lan_latency: float = 0.0
    ignore: set[str] = field(default_factory=set)
    factors: str = FACTORS_EXACT
    tcp_gamma: int | None = None
    wan_nic: str = "shared"


WAN_NICS = ("shared", "separate")
# A separate WAN NIC's path to the gateway: the node's -wan link, then this per-site link
# (no limit, no latency). It makes the gateway two links away from a node, so a path
# between two nodes of one site through the gateway (4 links) never ties with the path
# through the switch (2 links) in DijkstraCache's count.
NIC_LINK_BPS = 1e15


def spec_keys(text: str) -> dict[str, int]:
    """The keys a spec sets, as 'table.key' ('link.key' for [[link]] entries), with their
    line (0 when the line is not found, e.g. a dotted key or an inline table). What is set
    comes from the parsed TOML, so no way of writing a key escapes the checks."""
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return {}  # the spec parser reports it, with its line
    lines = tbspec._key_lines(text)
    out: dict[str, int] = {}
    for top, value in data.items():
        entries = value if isinstance(value, list) else [value]
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                out.setdefault(top, lines.get(("", 0, top), 0))
                continue
            for key in entry:
                line = (lines.get((top, index, key)) or lines.get((top, index, ""))
                        or lines.get(("", 0, top)) or 0)
                out.setdefault(f"{top}.{key}", line)
    return out


def _refuse(sp: tbspec.Spec, keys: dict[str, int], key: str, msg: str) -> MpilabError:
    line = keys.get(key)
    where = f"{sp.source}:{line}" if line else sp.source
    return MpilabError(f"{where}: {key}: {msg}")


def check_spec(sp: tbspec.Spec, keys: dict[str, int], opt: SpecOptions) -> int:
    """Refuse what SimGrid cannot express; returns the rail to simulate."""
    for key in sorted(opt.ignore):
        if key not in UNSUPPORTED and key != "cluster.rails":
            raise MpilabError(f"--ignore {key}: not a key the simulation refuses (those are "
                              f"{', '.join(sorted([*UNSUPPORTED, 'cluster.rails']))})")
    for key, why in UNSUPPORTED.items():
        if key in keys and key not in opt.ignore:
            raise _refuse(sp, keys, key, f"cannot be simulated: {why} (--ignore {key} "
                          "simulates without it)")
    rail = opt.rail
    if rail is None:
        if sp.rails > 1 and "cluster.rails" not in opt.ignore:
            raise _refuse(sp, keys, "cluster.rails", f"{sp.rails} rails cannot be simulated: "
                          "SimGrid routes each pair of hosts over one path (--rail R "
                          "simulates rail R, the one a non-MPTCP job uses)")
        rail = 0
    if not 0 <= rail < sp.rails:
        raise MpilabError(f"--rail {rail}: {sp.source} has rails 0 to {sp.rails - 1}")
    if not 1 <= opt.cores <= MAX_CORES:
        raise MpilabError(f"cores {opt.cores}: expected 1 to {MAX_CORES}")
    return rail


def from_spec(sp: tbspec.Spec, keys: dict[str, int], opt: SpecOptions) -> Generated:
    """The testbed's network, link for link (docs/sim.md, "From a testbed spec").

    Hosts P-sSnJ (the testbed's namespace names). Per node: LINK P-sSnJ-lan (lan.rate or
    its [[link]] override, latency --lan-latency) and P-sSnJ-wan (b_WAN: wan.node_rate or
    override, latency 0). Per site: router P-swS (the switch), router P-gwS (the site's
    side of the WAN) and link P-upS (B_WAN: wan.total_rate, latency L/2, so a path from
    one site to another crosses L). Router P-wan joins the sites. All links SPLITDUPLEX
    (each direction its own rate, as the testbed shapes each direction). Routes: node ->
    switch [lan]; node -> gateway [lan, wan]; gateway -> P-wan [up]. DijkstraCache takes the
    path with the fewest links: inside a site node-switch-node (2), across sites
    node-gw-wan-gw-node (6). wan_nic "separate": a node's WAN traffic leaves by a NIC of its
    own, node -> gateway [wan, P-nicS] (P-nicS: 1e15 bit/s, latency 0), so it does not
    cross the LAN link (the multilane paper's nodes: one NIC for the LAN, one for the WAN)."""
    rail = check_spec(sp, keys, opt)
    if opt.wan_nic not in WAN_NICS:
        raise MpilabError(f"wan-nic {opt.wan_nic!r}: expected {' or '.join(WAN_NICS)}")
    separate = opt.wan_nic == "separate"
    nodes = sp.node_names()
    hosts = [sp.ns(n) for n in nodes]
    p = sp.prefix
    half = sp.wan_delay / 2
    ignored = sorted(k for k in opt.ignore if k in keys or k == "cluster.rails")
    desc = (f"testbed spec {sp.source}: {sp.sites} site(s) x {sp.nodes_per_site} node(s), "
            f"rail {rail} of {sp.rails}, LAN {tbspec.format_rate(sp.lan_rate)}, b_WAN "
            f"{tbspec.format_rate(sp.wan_node_rate)}, B_WAN "
            f"{tbspec.format_rate(sp.wan_total_rate)}, L {sp.wan_delay * 1e3:g} ms"
            + (", WAN NIC separate" if separate else ""))

    def build(root: ET.Element) -> None:
        zone = ET.SubElement(root, "zone", id=p, routing="DijkstraCache")
        props = {"mpilab.generator": "mpilab sim platform", "mpilab.source": sp.source,
                 "mpilab.rail": str(rail)}
        if separate:
            props["mpilab.wan_nic"] = "separate"
        if ignored:
            props["mpilab.ignored"] = ",".join(ignored)
        emulator = [k for k in EMULATOR_ONLY if k in keys]
        if emulator:  # set in the spec, meaningless here (how the emulator delays)
            props["mpilab.emulator_only"] = ",".join(emulator)
        _props(zone, props)
        for node, host in zip(nodes, hosts, strict=True):
            he = ET.SubElement(zone, "host", id=host, speed=fmt_speed(opt.speed),
                               core=str(opt.cores))
            _props(he, {"mpilab.address": sp.addr(node, rail)})
        for s in range(sp.sites):
            ET.SubElement(zone, "router", id=f"{p}-sw{s}")
            ET.SubElement(zone, "router", id=f"{p}-gw{s}")
        ET.SubElement(zone, "router", id=f"{p}-wan")
        for host, node in zip(hosts, nodes, strict=True):
            lan, wan = sp.link_rates(node, rail)
            _link(zone, f"{host}-lan", lan, opt.lan_latency)
            _link(zone, f"{host}-wan", wan, 0.0)
        for s in range(sp.sites):
            _link(zone, f"{p}-up{s}", sp.wan_total_rate, half)
            if separate:
                _link(zone, f"{p}-nic{s}", NIC_LINK_BPS, 0.0)
        for host, node in zip(hosts, nodes, strict=True):
            s, _ = tbspec.parse_node(node)
            _route(zone, host, f"{p}-sw{s}", [f"{host}-lan"])
            _route(zone, host, f"{p}-gw{s}", [f"{host}-wan", f"{p}-nic{s}"] if separate
                   else [f"{host}-lan", f"{host}-wan"])
        for s in range(sp.sites):
            _route(zone, f"{p}-gw{s}", f"{p}-wan", [f"{p}-up{s}"])

    return _document(_configs(opt.factors, opt.tcp_gamma), build, hosts, desc)


def load_spec(path: str | None,
              prefix: str | None = None) -> tuple[tbspec.Spec, dict[str, int]]:
    """A testbed spec (None: the built-in default) and the keys its text sets; `prefix`
    replaces the spec's (as `mpilab testbed --prefix`; $MPILAB_TESTBED_PREFIX is not read,
    so the file does not depend on the environment)."""
    if path is None:
        text, source = tbspec.DEFAULT_SPEC, "<default>"
    else:
        data = read_regular(path, "testbed spec", 16 << 20)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise MpilabError(f"{path}: not UTF-8 text") from None
        source = path
    sp = tbspec.load_text(text, source, prefix)
    return sp, spec_keys(text)


def load_hetero(path: str) -> Hetero:
    data = read_regular(path, "cluster file", 16 << 20)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MpilabError(f"{path}: not UTF-8 text") from None
    return load_hetero_text(text, path)


def _radicals(text: str, where: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part.strip(), re.ASCII)
        if not m:
            raise MpilabError(f"{where}: radical {text!r}: expected e.g. 0-15 or 0-3,8")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo or len(out) + hi - lo + 1 > MAX_HOSTS:
            raise MpilabError(f"{where}: radical {text!r}: empty or more than {MAX_HOSTS} hosts")
        out.extend(range(lo, hi + 1))
    return out


def _xml_root(data: bytes, where: str) -> ET.Element:
    """The document's root element; MpilabError (one line) for what is not XML, including
    a declaration naming an encoding Python does not know."""
    try:
        return ET.fromstring(data)
    except ET.ParseError as e:
        raise MpilabError(f"{where}: not XML: {e}") from None
    except LookupError as e:  # <?xml ... encoding="UTF-0"?>
        raise MpilabError(f"{where}: not XML: {e}") from None


def hosts_of(data: bytes, where: str = "platform") -> list[str]:
    """The host names of a platform document, in document order: every <host> and the
    hosts of every <cluster> (prefix + radical + suffix). For a hostfile: SMPI places rank
    i on line i (mod the lines). MpilabError (one line) for XML that is not a platform."""
    root = _xml_root(data, where)
    if root.tag != "platform":
        raise MpilabError(f"{where}: not a SimGrid platform (root element <{root.tag}>)")
    hosts: list[str] = []
    for elem in root.iter():
        if elem.tag == "host" and elem.get("id"):
            hosts.append(str(elem.get("id")))
        elif elem.tag == "cluster":
            pre, suf = elem.get("prefix", ""), elem.get("suffix", "")
            hosts.extend(f"{pre}{i}{suf}" for i in _radicals(elem.get("radical", ""), where))
        if len(hosts) > MAX_HOSTS:
            raise MpilabError(f"{where}: more than {MAX_HOSTS} hosts")
    return hosts


def configs_of(data: bytes, where: str = "platform") -> dict[str, str]:
    """The <config> properties of a platform document (<prop id="KEY" value="V"/> inside
    every <config>), later ones overriding earlier ones. MpilabError (one line) for XML that
    is not a platform."""
    root = _xml_root(data, where)
    out: dict[str, str] = {}
    for cfg in root.iter("config"):
        for prop in cfg.iter("prop"):
            key, value = prop.get("id"), prop.get("value")
            if key and value is not None:
                out[key] = value
    return out


def file_sha256(path: str) -> str:
    """sha256 of a platform file as written (what provenance records)."""
    return hashlib.sha256(read_regular(path, "platform file", 1 << 30)).hexdigest()
