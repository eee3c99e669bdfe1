"""`mpilab compare`: the interconnect evaluation suite over several transports, and the
comparison report (DIR/<transport>.json + DIR/report.html)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from mpilab import argtypes, fsutil, launch, launches, units
from mpilab.commands import history
from mpilab.errors import MpilabError
from mpilab.suite import transports
from mpilab.suite.runner import Plan, run_transport, testbed_down, testbed_up

QUICK = {"sizes": "1,64,1K,16K,256K,1M", "max_reps": 20, "launches": 1,
         "poll_sweep": "0,1000,100000", "comb_msgs": 8, "window": 64, "scaling": [1, 2],
         "wf_rows": 256, "wf_cols": 256, "wf_iters": 3}


def _count(text: str) -> int:
    try:
        return units.parse_int(text)  # strict: no blanks, no Unicode digits
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None


def plan_from(args: argparse.Namespace) -> Plan:
    p = Plan()
    if args.quick:
        for k, v in QUICK.items():
            setattr(p, k, v)
    for k in ("window", "pairs", "poll_sweep", "comb_msgs", "np", "sizes", "max_reps",
              "launches"):
        v = getattr(args, k, None)
        if v is not None:
            setattr(p, k, v)
    if args.scaling is not None:  # checked at parse time (argtypes.rank_counts)
        p.scaling = list(args.scaling)
    p.entries = [str(Path(f).resolve()) for f in (getattr(args, "entries", None) or [])]
    p.launcher = getattr(args, "launcher", None)
    p.launcher_args = list(getattr(args, "launcher_arg", None) or [])
    if p.launcher is not None:
        launch.canonical(p.launcher)  # an unknown name fails before any measurement
    p.check()
    return p


def cmd_compare(args: argparse.Namespace) -> int:
    # imported here: it loads the report modules (jinja2, numpy, plotly), which
    # every other mpilab command would otherwise pay at start-up
    from mpilab.suite import report

    if args.from_dir:
        if args.transport:
            raise MpilabError("--from rebuilds the report from stored results; "
                              "it takes no --transport")
        out = report.build(args.from_dir)
        print(f"report: {out}")
        return 0
    ts = transports.parse(args.transport)
    plan = plan_from(args)
    outdir = Path(args.out)
    if any(t.networked for t in ts) and os.geteuid() != 0:
        raise MpilabError("testbed transports need root (network namespaces)")
    made = fsutil.make_folders(outdir)
    if not os.access(outdir, os.W_OK):
        raise MpilabError(f"--out {outdir}: not writable")
    used_testbed = False
    written: list[str] = []
    try:
        for t in ts:
            print(f"[{t.name}] measuring ...", file=sys.stderr, flush=True)
            if t.networked:
                testbed_up(t)
                used_testbed = True
            path = run_transport(t, plan, outdir, scaling=not args.no_scaling)
            print(f"[{t.name}] {path}", file=sys.stderr, flush=True)
            written.append(str(path))
            cost = (json.loads(path.read_text()).get("launches") or {}).get("cost")
            if cost:  # the price of the launch-level figures, per transport (issue 25 item 2)
                print(f"[{t.name}] {launches.cost_line(cost)}", file=sys.stderr, flush=True)
    finally:
        if used_testbed and not args.keep_testbed:
            testbed_down()
        if not written and made is not None:  # nothing measured: no folder of ours left
            fsutil.remove_empty_folders(made, outdir)
    if plan.launches > 1:
        print(f"each benchmark part ran in {plan.launches} launches (--launches 1: one, "
              "cheaper, with single-launch intervals only)", file=sys.stderr)
    out = report.build(outdir)
    for c in report.summary(report.load_dir(outdir)):
        who = c.winner or f"no clear winner, best {c.best}"
        print(f"{c.title}: {who} ({c.value}; {c.verdict})")
    print(f"report: {out}")
    history.after_run(args, written)
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("compare", help="run the interconnect suite over several "
                              "transports and write a comparison report",
                              description=__doc__)
    p.add_argument("--transport", action="append", metavar="NAME",
                   help=f"repeatable; one of {', '.join(transports.TRANSPORTS)} "
                   f"(default: {', '.join(transports.DEFAULT)})")
    p.add_argument("--out", default="compare-results", type=argtypes.out_dir,
                   help="output directory")
    p.add_argument("--from", dest="from_dir", metavar="DIR",
                   help="rebuild DIR/report.html from stored results, measure nothing")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    p.add_argument("--window", type=_count, help="streaming window (default 160)")
    p.add_argument("--pairs", type=_count, help="pairs of stream_multi (default ranks/2)")
    p.add_argument("--poll-sweep", help="COMB poll intervals, work iterations (e.g. 0,1K,100K)")
    p.add_argument("--comb-msgs", type=_count, help="COMB messages per direction per run")
    p.add_argument("--np", type=_count, help="ranks of the N-rank benchmarks (default 4)")
    p.add_argument("--sizes", type=argtypes.runner_sizes,
                   help="message sizes (mpilab-bench --sizes syntax)")
    p.add_argument("--max-reps", type=_count, help="repetitions at most per measurement")
    p.add_argument("--launches", type=_count, metavar="N",
                   help=f"separate launches of each benchmark part (default {Plan.launches}, "
                        "with --quick 1); figures and verdicts are launch-level (median of "
                        "the launch medians, intervals including launch-to-launch variation)")
    p.add_argument("--scaling", type=argtypes.rank_counts,
                   help="wavefront rank counts (default 1,2,4)")
    p.add_argument("--no-scaling", action="store_true", help="skip the application scaling")
    p.add_argument("--keep-testbed", action="store_true", help="leave the testbed up")
    p.add_argument("--entries", action="append", metavar="FILE.so",
                   help="repeatable; user entries for mpilab-bench (a plugin built from one "
                   "file with MPILAB_PLUGIN_ENTRIES, docs/architecture.md), measured with "
                   "the suite's entries of their family")
    history.add_option(p)
    launch.add_options(p)
    p.set_defaults(func=cmd_compare)
