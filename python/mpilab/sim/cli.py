"""`mpilab sim platform KIND`: write a SimGrid platform file (docs/sim.md).

    mpilab sim platform spec [SPEC] [--rail R] [--speed 1Gf] [--cores 1] [-o FILE]
    mpilab sim platform flat --nodes N [--bw 10Gbit] [--lat 1us] [--backbone-bw RATE]
    mpilab sim platform torus|fattree|dragonfly --shape SHAPE [--nodes N] ...
    mpilab sim platform hetero CLUSTER.toml

The file goes to -o (default `-`, standard output) through mpilab.fsutil (temporary name +
rename); one line on standard error names the file, its hosts and its sha256.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from mpilab import argtypes, fsutil, units
from mpilab.errors import MpilabError, no_action
from mpilab.sim import platform as plat


def _typed(fn: Callable[[object], Any], what: str) -> Callable[[str], Any]:
    return argtypes.wrap(fn, what)


_rate = _typed(plat.parse_rate, "rate")
_latency = _typed(plat.parse_latency, "latency")
_speed = _typed(plat.parse_speed, "speed")


def _window(v: object) -> int:
    n = units.parse_size(v)  # type: ignore[arg-type]
    if not 1024 <= n <= 1 << 32:
        raise ValueError("must be between 1K and 4G")
    return n


_size = _typed(_window, "size")


def _check_outputs(args: argparse.Namespace) -> None:
    fsutil.check_output(args.output)
    if args.hostfile is not None:
        if args.hostfile == "-" and args.output == "-":
            raise MpilabError("--hostfile -: the platform already goes to standard output")
        if args.hostfile != "-" and args.output != "-" and \
                os.path.realpath(args.hostfile) == os.path.realpath(args.output):
            raise MpilabError(f"--hostfile {args.hostfile}: the same file as -o")
        fsutil.check_output(args.hostfile)


def _write(gen: plat.Generated, out: str, hostfile: str | None = None) -> int:
    """The host file first (a FIFO, a device or a full disk refuses it before the platform
    is written), then the platform; a host file this call made is removed again when the
    platform cannot be written."""
    made = hostfile is not None and hostfile != "-" and not os.path.lexists(hostfile)
    try:
        if hostfile is not None:
            fsutil.atomic_write_text(hostfile, "".join(f"{h}\n" for h in gen.hosts))
        fsutil.atomic_write_bytes(out, gen.xml)
    except (OSError, MpilabError) as e:  # e.g. a folder that cannot be created
        if made and hostfile is not None and os.path.isfile(hostfile):
            os.unlink(hostfile)
        if isinstance(e, MpilabError):
            raise
        name = e.filename or out
        raise MpilabError(f"{name}: cannot write: {e.strerror or e}") from None
    where = "standard output" if out == "-" else out
    sys.stderr.write(f"mpilab: sim platform: wrote {where}: {gen.description}; "
                     f"{len(gen.hosts)} hosts; sha256 {gen.sha256}\n")
    return 0


def _spec(args: argparse.Namespace) -> int:
    _check_outputs(args)
    sp, keys = plat.load_spec(args.spec, args.prefix)
    opt = plat.SpecOptions(rail=args.rail, speed=args.speed, cores=args.cores,
                           lan_latency=args.lan_latency, ignore=set(args.ignore or []),
                           factors=args.factors, tcp_gamma=args.tcp_gamma,
                           wan_nic=args.wan_nic)
    return _write(plat.from_spec(sp, keys, opt), args.output, args.hostfile)


def _topology(args: argparse.Namespace) -> int:
    _check_outputs(args)
    t = plat.Topology(kind=args.kind, nodes=args.nodes, shape=args.shape, bw=args.bw,
                      lat=args.lat, speed=args.speed, cores=args.cores,
                      backbone_bw=getattr(args, "backbone_bw", None),
                      backbone_lat=getattr(args, "backbone_lat", 0.0),
                      loopback_bw=args.loopback_bw, loopback_lat=args.loopback_lat,
                      name=args.name,
                      factors=args.factors, tcp_gamma=args.tcp_gamma)
    return _write(plat.topology(t), args.output, args.hostfile)


def _hetero(args: argparse.Namespace) -> int:
    _check_outputs(args)
    h = plat.load_hetero(args.cluster)
    h.factors, h.tcp_gamma = args.factors, args.tcp_gamma
    return _write(plat.hetero(h), args.output, args.hostfile)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="the platform file to write (default -: standard output)")
    p.add_argument("--hostfile", metavar="FILE",
                   help="also write the hosts, one a line (smpirun -hostfile)")
    p.add_argument("--factors", choices=(plat.FACTORS_EXACT, plat.FACTORS_SMPI),
                   default=plat.FACTORS_EXACT,
                   help="exact (default): the file turns SMPI's bandwidth and latency "
                        "correction factors and cross traffic off, so flows get the links' "
                        "values; smpi: SimGrid's calibrated defaults")
    p.add_argument("--tcp-gamma", type=_size, metavar="BYTES",
                   help="SimGrid's TCP window (network/TCP-gamma; default 4M): a flow gets "
                        "at most BYTES / (2 x its route's latency)")


def _node_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--speed", type=_speed, default=1e9,
                   help="CPU speed of every core, flop/s (default 1Gf)")
    p.add_argument("--cores", type=argtypes.positive, default=1,
                   help="cores per node (default 1)")


def register(sub: Any) -> None:
    p = sub.add_parser("sim", help="simulated clusters on SimGrid SMPI (docs/sim.md)")
    s = p.add_subparsers(dest="sim_command", metavar="SUBCOMMAND")
    p.set_defaults(func=no_action("sim"))
    pl = s.add_parser("platform", help="write a SimGrid platform file")
    ps = pl.add_subparsers(dest="platform_kind", metavar="KIND")
    pl.set_defaults(func=no_action("sim platform"))

    sp = ps.add_parser("spec", help="a testbed spec (docs/testbed.md), link for link")
    sp.add_argument("spec", nargs="?", help="the spec file (default: the built-in default)")
    sp.add_argument("--prefix", help="host name prefix (default: the spec's prefix, else "
                    "mlt): hosts PREFIX-sSnJ, as the testbed's nodes")
    sp.add_argument("--rail", type=argtypes.count,
                    help="the rail to simulate (needed when the spec has several)")
    sp.add_argument("--lan-latency", type=_latency, default=0.0,
                    help="latency of each node's LAN link (the spec has none; default 0)")
    sp.add_argument("--ignore", action="append", metavar="KEY",
                    help="simulate without a key SimGrid cannot express (lan.queue, "
                         "wan.queue, wan.socket_buffer, cluster.rails); repeatable")
    sp.add_argument("--wan-nic", choices=plat.WAN_NICS, default="shared",
                    help="shared (default, as the testbed): a node's traffic to another site "
                         "crosses its LAN link, then its WAN share; separate: it leaves by a "
                         "second NIC (the WAN share only), so LAN and WAN traffic of one node "
                         "do not share a link")
    _node_options(sp)
    _common(sp)
    sp.set_defaults(func=_spec)

    for kind, what in (("flat", "N nodes behind one switch"),
                       ("fattree", "a fat tree (SimGrid FAT_TREE)"),
                       ("torus", "a torus (SimGrid TORUS)"),
                       ("dragonfly", "a dragonfly (SimGrid DRAGONFLY)")):
        tp = ps.add_parser(kind, help=what)
        tp.add_argument("--nodes", type=argtypes.positive,
                        help="hosts" + (" (required)" if kind == "flat" else
                                        " (optional: checked against the shape)"))
        if kind != "flat":
            tp.add_argument("--shape", required=True,
                            help={"torus": "dimensions, e.g. 4,4,4",
                                  "fattree": "LEVELS;DOWN;UP;PARALLEL, e.g. 2;4,4;1,2;1,2",
                                  "dragonfly": "GROUPS,LINKS;CHASSIS,LINKS;ROUTERS,LINKS;"
                                               "NODES, e.g. 3,4;4,3;5,1;2"}[kind])
        else:
            tp.add_argument("--backbone-bw", type=_rate,
                            help="the switch's capacity, shared by every flow (default: "
                                 "non-blocking)")
            tp.add_argument("--backbone-lat", type=_latency, default=0.0,
                            help="the switch's latency (with --backbone-bw)")
        tp.add_argument("--bw", type=_rate, default=10 * 10**9,
                        help="rate of every link, each direction (default 10Gbit)")
        tp.add_argument("--loopback-bw", type=_rate,
                        help="ranks on one host talk over a loopback link of this rate (a "
                             "cluster's loopback_bw; default: none, they cross the host's own "
                             "link up and down)")
        tp.add_argument("--loopback-lat", type=_latency, default=0.0,
                        help="the loopback link's latency (with --loopback-bw)")
        tp.add_argument("--lat", type=_latency, default=1e-6,
                        help="latency of every link (default 1us)")
        tp.add_argument("--name", default="node",
                        help="cluster id and host name prefix (hosts NAME-0 ...)")
        _node_options(tp)
        _common(tp)
        tp.set_defaults(func=_topology, kind=kind, shape=None)

    hp = ps.add_parser("hetero", help="a heterogeneous cluster file (per-node CPU and link)")
    hp.add_argument("cluster", help="the cluster file (TOML, e.g. "
                                    "examples/platforms/mpiblib16.toml)")
    _common(hp)
    hp.set_defaults(func=_hetero)
