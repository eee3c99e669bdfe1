"""`mpilab multilane`: run the multilane experiments on the testbed and report them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from mpilab import argtypes, fsutil, units
from mpilab.errors import MpilabError, no_action

# what mpilab-multilane accepts, checked here before a testbed or a job is looked at
OPS = ("scatter", "gather")
IMPLS = ("native", "single", "multilane")
MAX_SIZES = 1000


def _names(allowed: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        items = text.split(",")
        bad = [x for x in items if x not in allowed]
        if bad:
            raise ValueError(f"{bad[0] or 'an empty item'} is not one of {', '.join(allowed)}")
        return text
    return argtypes.wrap(parse, "list")


def _sizes(text: str) -> str:
    if 0 in units.parse_size_list(text, MAX_SIZES):
        raise ValueError("0 bytes per rank moves nothing (sizes start at 1)")
    return text


def _model_bytes(text: str) -> str:
    if units.parse_size(text) < 2:
        raise ValueError("need one size of at least 2 bytes")
    return text


def _alpha_bytes(text: str) -> str:
    if text != "0" and units.parse_size(text) > 1 << 24:
        raise ValueError("need one size 0..16M")
    return text


def _sites(text: str) -> str:
    kind, _, path = text.partition(":")
    if text in ("testbed", "detect") or (kind in ("hostfile", "map") and path):
        return text
    raise ValueError("need testbed, detect, hostfile:PATH or map:PATH")


def _interrupt(_sig: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    import signal

    from mpilab.multilane import run

    # SIGTERM (a bench slot's end, a batch system) stops the run like SIGINT: the completed
    # measurements are kept, marked partial (the testbed's supervisor handles both itself)
    signal.signal(signal.SIGTERM, _interrupt)
    fsutil.check_output(args.output)  # a directory, say, refused before any testbed is read

    tool_args = ["--sites", args.sites, "--ops", args.ops, "--impls", args.impls,
                 "--sizes", args.sizes, "--lanes", args.lanes, "--reps", str(args.reps),
                 "--model-bytes", args.model_bytes, "--model-reps", str(args.model_reps),
                 "--alpha-bytes", args.alpha_bytes, "--root", str(args.root)]
    if args.sim is not None:
        from mpilab.sim import run as simrun

        simrun.check_sim(args.sim, testbed=args.testbed, sample_wan=args.sample_wan)
        out, info = run.run_sim(args.sim, tool_args, args.output, np=args.np,
                                timeout=args.timeout, config=simrun.cfg_options(args.sim_cfg))
        sys.stdout.write(f"multilane: {out} (simulated on {args.sim}, {info['ranks']} ranks, "
                         f"platform sha256 {info['platform_sha256'][:12]})\n")
        return 0
    if args.sim_cfg:
        raise MpilabError("--sim-cfg applies to simulated runs only (give --sim PLATFORM)")
    prefix = args.testbed or os.environ.get("MPILAB_TESTBED_PREFIX")
    if not prefix:
        raise MpilabError("multilane run: --testbed PREFIX (or $MPILAB_TESTBED_PREFIX) needed "
                          "(or --sim PLATFORM)")
    if args.interval <= 0 or args.interval > 0.01:
        raise MpilabError(f"--interval {args.interval}: need 0 < interval <= 0.01 s")
    out = run.run(prefix, tool_args, args.output, np=args.np, sample=args.sample_wan,
                  interval=args.interval, timeout=args.timeout, root=args.root,
                  lanes=args.lanes)
    sys.stdout.write(f"multilane: {out}\n")
    return 0


def _report(args: argparse.Namespace) -> int:
    from mpilab.multilane import doc, report

    fsutil.check_output(args.output)
    docs = [doc.load(p) for p in args.documents]
    out = report.write(docs, args.output, args.self_contained)
    sys.stdout.write(f"report: {out}\n")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("multilane", help="multilane scatter/gather experiments (docs/multilane.md)")
    s = p.add_subparsers(dest="multilane_command", metavar="SUBCOMMAND")
    r = s.add_parser("run", help="run mpilab-multilane inside the testbed (or simulated)")
    r.add_argument("--testbed", type=argtypes.testbed_prefix,
                   help="testbed prefix (default $MPILAB_TESTBED_PREFIX)")
    r.add_argument("--sim", metavar="PLATFORM",
                   help="run simulated instead: the SMPI build of mpilab-multilane (scripts/"
                        "build --smpi) under smpirun on this SimGrid platform (mpilab sim "
                        "platform; --sites testbed reads the sites from host names PREFIX-sSnJ "
                        "as a platform from a testbed spec has them), one rank per host unless "
                        "--np; the document's provenance.simulated records the platform")
    r.add_argument("--sim-cfg", action="append", default=[], metavar="NAME:VALUE",
                   help="with --sim: one more SimGrid option for smpirun (--cfg=NAME:VALUE), "
                        "e.g. network/model:ns-3 (packet-level TCP; the platform's routes "
                        "must then be one link each); repeatable; recorded in provenance")
    r.add_argument("--np", type=argtypes.positive, help="ranks (default: one per node)")
    r.add_argument("--sites", default="testbed", type=argtypes.wrap(_sites, "sites"),
                   help="testbed (default), detect, hostfile:PATH or map:PATH")
    r.add_argument("--root", type=argtypes.count, default=0)
    r.add_argument("--ops", default="scatter,gather", type=_names(OPS))
    r.add_argument("--impls", default="single,multilane", type=_names(IMPLS))
    r.add_argument("--sizes", default="64K:4M:x4", type=argtypes.wrap(_sizes, "sizes"),
                   help="bytes per rank (K/M suffixes)")
    r.add_argument("--lanes", type=argtypes.lanes, default="opt", help="P: a number, opt or all")
    r.add_argument("--reps", type=argtypes.positive, default=3)
    r.add_argument("--model-bytes", default="4M", type=argtypes.wrap(_model_bytes, "size"))
    r.add_argument("--model-reps", type=argtypes.count, default=3)
    r.add_argument("--alpha-bytes", default="1K", type=argtypes.wrap(_alpha_bytes, "size"),
                   help="calibrate alpha per operation at this size (0: do not)")
    r.add_argument("--sample-wan", action="store_true",
                   help="sample the router's WAN byte counters during the job")
    r.add_argument("--interval", type=argtypes.duration, default=0.005,
                   help="sampling interval (s)")
    r.add_argument("--timeout", type=argtypes.duration, default=1800.0,
                   help="stop the job after this long (s); stopped by it, by SIGINT/SIGTERM or "
                        "by a failure, the run still writes every completed measurement to "
                        "the output, marked \"partial\": true with \"partial_reason\"")
    r.add_argument("-o", "--output", required=True, help="the document (JSON) to write")
    r.set_defaults(func=_run)
    q = s.add_parser("report", help="HTML page of one or more multilane documents")
    q.add_argument("documents", nargs="+")
    q.add_argument("-o", "--output", required=True)
    q.add_argument("--self-contained", action="store_true",
                   help="embed the plotting library in the page instead of one shared file "
                        "beside the reports of the folder")
    q.set_defaults(func=_report)
    p.set_defaults(func=no_action("multilane"))
