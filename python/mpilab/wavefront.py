"""`mpilab wavefront create|convert|run|verify`: wraps the C tool mpilab-wavefront.

Nothing is computed here: arguments are checked, passed through to the tool (launched
under the MPI launcher for `run --np N`, see mpilab.launch), and its exit status is returned.
"""

from __future__ import annotations

import argparse
import subprocess

from mpilab import argtypes, launch
from mpilab.errors import MpilabError
from mpilab.tools import find_tool

TOOL = "mpilab-wavefront"
LAYOUTS = ("rowmajor", "block", "optimized")


def build_command(args: argparse.Namespace) -> list[str]:
    """The tool command line (without any mpirun prefix) for parsed arguments."""
    tool = find_tool(TOOL)
    op = args.wf_command
    if op == "create":
        return [tool, "create", "--rows", str(args.rows), "--cols", str(args.cols),
                "--seed", str(args.seed), args.data, args.coef]
    if op == "convert":
        cmd = [tool, "convert", "--layout", args.layout]
        if args.mb:
            cmd += ["--mb", str(args.mb)]
        if args.nb:
            cmd += ["--nb", str(args.nb)]
        cmd += ["--t", str(args.t), "--bands", str(args.bands)]
        return cmd + list(args.inputs) + [args.output]
    if op == "run":
        cmd = [tool, "run", "--data", args.data, "--coef", args.coef,
               "--iterations", str(args.iterations), "--workers", str(args.workers),
               "--waves", str(args.waves), "--chain", args.chain, "--io", args.io]
        if args.queue_depth:
            cmd += ["--queue-depth", str(args.queue_depth)]
        if args.mb:
            cmd += ["--mb", str(args.mb)]
        if args.nb:
            cmd += ["--nb", str(args.nb)]
        if args.no_drop_behind:
            cmd.append("--no-drop-behind")
        if args.io_turns:
            cmd.append("--io-turns")
        if args.json:
            cmd += ["--json", args.json]
        if args.np:
            cmd.append("--mpi")
        if getattr(args, "sim_cell_flops", None):
            cmd += ["--sim-cell-flops", repr(args.sim_cell_flops)]
        return cmd
    if op == "verify":
        return [tool, "verify", "--initial", args.initial, "--coef", args.coef,
                "--iterations", str(args.iterations), args.result]
    raise MpilabError(f"wavefront: unknown command {op!r}")


def _run_sim(args: argparse.Namespace) -> int:
    """run --np N --sim PLATFORM: the SMPI build of the tool in MPI mode under smpirun on the
    platform (simulated time is MPI_Wtime's: the frontier messages on the platform's links;
    computation and file I/O take no simulated time); --json results get
    provenance.simulated."""
    import sys

    from mpilab.sim import run as simrun

    simrun.check_sim(args.sim, launcher=args.launcher, launcher_arg=args.launcher_arg)
    if not args.np:
        raise MpilabError("--sim: give --np N (the distributed mode: one rank per band file "
                          "DATA.<rank>)")
    if args.sim_cell_flops is not None and not 0 <= args.sim_cell_flops <= 1e6:
        raise MpilabError(f"--sim-cell-flops {args.sim_cell_flops:g}: need 0..1e6 flops")
    tool_args = build_command(args)[1:]
    j = simrun.job(TOOL, tool_args, args.np, args.sim)
    status = simrun.run(j)
    if status == 0 and args.json:
        simrun.annotate(args.json, j.info)
    if status == 0:
        sys.stderr.write(f"mpilab: simulated on {args.sim} ({j.np} ranks, SimGrid SMPI, "
                         f"platform sha256 {j.info['platform_sha256'][:12]})\n")
    elif status != 2:
        sys.stderr.write(f"mpilab: simulated {TOOL} exited with status {status}\n")
    return status


def _handler(args: argparse.Namespace) -> int:
    if getattr(args, "sim", None) is not None:
        return _run_sim(args)
    if getattr(args, "sim_cell_flops", None) is not None:
        raise MpilabError("--sim-cell-flops: only with --sim (simulated time)")
    cmd = build_command(args)
    env = None
    if getattr(args, "np", 0):
        lr = launch.from_args(cmd[0], args)
        lr.check_np(args.np)
        env = lr.env(args.np)
        cmd = lr.command(args.np) + cmd
    try:
        return subprocess.run(cmd, env=env, check=False).returncode
    except OSError as e:
        raise MpilabError(f"{cmd[0]}: cannot run: {e.strerror}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "wavefront", help="out-of-core wavefront computation (Livermore loop 23)",
        description="Create, convert, run and verify out-of-core Livermore loop 23 problems.")
    sub = p.add_subparsers(dest="wf_command", metavar="OP", required=True)

    c = sub.add_parser("create", help="deterministic problem from a seed (row-major files)")
    c.add_argument("--rows", type=argtypes.positive, required=True, help="M, number of rows")
    c.add_argument("--cols", type=argtypes.positive, required=True, help="N, number of columns")
    c.add_argument("--seed", type=argtypes.count, default=1)
    c.add_argument("data")
    c.add_argument("coef")

    v = sub.add_parser("convert", help="pre/post-processing between layouts, band splitting")
    v.add_argument("--layout", choices=LAYOUTS, required=True)
    v.add_argument("--mb", type=argtypes.positive, default=0, help="block rows")
    v.add_argument("--nb", type=argtypes.positive, default=0, help="block columns")
    v.add_argument("--t", type=argtypes.positive, default=1, help="frontier thickness")
    v.add_argument("--bands", type=argtypes.positive, default=1, help="write N band files OUT.0..")
    v.add_argument("inputs", nargs="+", help="input file(s) (or band base name)")
    v.add_argument("output")

    r = sub.add_parser("run", help="run k iterations in place")
    r.add_argument("--data", required=True)
    r.add_argument("--coef", required=True)
    r.add_argument("--iterations", "-k", type=argtypes.count, required=True)
    r.add_argument("--workers", type=argtypes.positive, default=1)
    r.add_argument("--waves", type=argtypes.positive, default=1)
    r.add_argument("--chain", choices=("band", "block"), default="band",
                   help="wave chaining: band (whole band per iteration) or block (sweeps of "
                        "--waves iterations per resident block: I/O per iteration / W)")
    r.add_argument("--io", choices=("pread", "mmap", "uring", "direct", "auto"), default="pread",
                   help="I/O back end (direct: O_DIRECT, no page cache; auto: io_uring where "
                        "it works, else pread)")
    r.add_argument("--queue-depth", type=argtypes.positive, default=0,
                   help="io_uring: blocks in flight per worker (default 4)")
    r.add_argument("--mb", type=argtypes.positive, default=0)
    r.add_argument("--nb", type=argtypes.positive, default=0)
    r.add_argument("--no-drop-behind", action="store_true")
    r.add_argument("--io-turns", action="store_true",
                   help="the workers take turns at the storage (threads only; for one disk "
                        "with one head)")
    r.add_argument("--json", help="write results (mpilab.results/1) here")
    r.add_argument("--np", type=argtypes.positive, default=0,
                   help="distributed mode: N MPI ranks, band files DATA.<rank>")
    r.add_argument("--sim", metavar="PLATFORM",
                   help="with --np: run simulated, the SMPI build of the tool (scripts/build "
                        "--smpi) under smpirun on this SimGrid platform (mpilab sim platform); "
                        "--json results record provenance.simulated")
    r.add_argument("--sim-cell-flops", type=float, metavar="F",
                   help="with --sim: each cell's update executes F flops on the simulated "
                        "host (the kernel has 11; the platform's CPU speed gives their time; "
                        "default none: only the frontier messages take simulated time)")
    launch.add_options(r)

    f = sub.add_parser("verify", help="compare with the in-core sequential reference")
    f.add_argument("--initial", required=True)
    f.add_argument("--coef", required=True)
    f.add_argument("--iterations", "-k", type=argtypes.count, required=True)
    f.add_argument("result")

    for sp in (c, v, r, f):
        sp.set_defaults(func=_handler)
