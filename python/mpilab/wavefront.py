"""`mpilab wavefront create|convert|run|verify|regime`: wraps the C tool mpilab-wavefront.

Nothing is computed here: arguments are checked, passed through to the tool (launched
under the MPI launcher for `run --np N`, see mpilab.launch), and its exit status is returned.
`run --disk PREFIX` runs the tool inside an emulated disk's cgroups and, after it, prints
the disk regime the run was in (mpilab.wavefront_regime, from the cgroup's accounting of the
run); `regime RESULTS` classifies a finished run against a disk's limits.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mpilab import argtypes, launch
from mpilab.errors import MpilabError
from mpilab.tools import find_tool

if TYPE_CHECKING:
    from mpilab.disk.spec import Disk

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


def _disk_of(prefix: str, data: str) -> tuple[Disk, str]:
    """The throttle disk of disks PREFIX (up) that holds the file (or band files) data:
    (its Disk, its device number)."""
    from mpilab.disk import dev
    from mpilab.disk.spec import DiskSpec

    st = dev.load_state(prefix)
    if st is None:
        raise MpilabError(f"--disk {prefix}: disks '{prefix}' are not up (mpilab disk up SPEC "
                          f"--prefix {prefix})")
    sp = DiskSpec.from_dict(st["spec"])
    where = Path(data if os.path.exists(data) else os.path.dirname(data) or ".").resolve()
    for d in sp.disks:
        info = st.get("disks", {}).get(d.name, {})
        mnt = info.get("mount")
        if mnt and (where == Path(mnt).resolve() or Path(mnt).resolve() in where.parents):
            if d.model != "throttle" or not info.get("devnum"):
                raise MpilabError(f"--disk {prefix}: disk {d.name} is a {d.model} disk; the "
                                  "regime needs a throttle disk's requests/s and bytes/s")
            return d, str(info["devnum"])
    raise MpilabError(f"--disk {prefix}: {data} is not on any of its disks")


def _run_on_disk(args: argparse.Namespace) -> int:
    """run --disk PREFIX: the run inside the disks' cgroups, the cgroup's accounting before
    and after it, then the regime line."""
    from mpilab import wavefront_regime as wr
    from mpilab.disk import dev

    disk, devnum = _disk_of(args.disk, args.data)
    limits = wr.DiskLimits(disk.read_iops, disk.write_iops, disk.read_bw, disk.write_bw)
    tmp = None
    if not args.json:
        tmp = tempfile.mkdtemp(prefix="mpilab-wf-")
        args.json = os.path.join(tmp, "run.json")
    try:
        cmd = build_command(args)
        env = None
        if args.np:
            lr = launch.from_args(cmd[0], args)
            lr.check_np(args.np)
            env = lr.env(args.np)
            cmd = lr.command(args.np) + cmd
        c0 = dev.throttle_counters(args.disk, devnum)
        try:
            status = subprocess.run(cmd, env=env, check=False,
                                    preexec_fn=lambda: dev.join_cgroup(args.disk)  # noqa: PLW1509
                                    ).returncode
        except (OSError, subprocess.SubprocessError) as e:
            raise MpilabError(f"{cmd[0]}: cannot run: {e}") from None
        if status != 0:
            return status
        c1 = dev.throttle_counters(args.disk, devnum)
        d = {k: c1.get(k, 0.0) - c0.get(k, 0.0) for k in set(c0) | set(c1)}
        rc = wr.load_results(args.json)
        rc = wr.RunCounters(rc.iterations, rc.total_s, rc.bytes_read, rc.bytes_written,
                            rc.requests_read, rc.requests_written, d.get("bytes_read", 0.0),
                            d.get("bytes_write", 0.0), d.get("req_read", 0.0),
                            d.get("req_write", 0.0), rc.io_wait_s)
        print(wr.classify(rc, limits).line(), flush=True)
        return 0
    finally:
        if tmp:
            for f in Path(tmp).iterdir():
                f.unlink()
            os.rmdir(tmp)


def _regime(args: argparse.Namespace) -> int:
    """regime RESULTS: the run's regime against the disk's limits (a spec, or the options)."""
    from mpilab import wavefront_regime as wr

    given = [o for o in ("read_iops", "write_iops", "read_bw", "write_bw")
             if getattr(args, o) is not None]
    if args.spec and given:
        raise MpilabError(f"regime: --spec or --{given[0].replace('_', '-')}, not both")
    if args.disk_name and not args.spec:
        raise MpilabError("regime: --disk-name only with --spec")
    rc = wr.load_results(args.results)
    if args.spec:
        from mpilab.disk import spec as specmod

        sp = specmod.load(args.spec)
        disks = [d for d in sp.disks if args.disk_name in (None, d.name)]
        if not disks:
            raise MpilabError(f"{args.spec}: no disk named {args.disk_name!r}")
        d = disks[0]
        if d.model != "throttle":
            raise MpilabError(f"{args.spec}: disk {d.name} is a {d.model} disk; the regime "
                              "needs a throttle disk's requests/s and bytes/s")
        limits = wr.DiskLimits(d.read_iops, d.write_iops, d.read_bw, d.write_bw)
    else:
        if args.read_iops is None or args.read_bw is None:
            raise MpilabError("regime: give the disk's limits: --spec SPEC, or --read-iops N "
                              "and --read-bw RATE")
        limits = wr.DiskLimits(args.read_iops, args.write_iops or args.read_iops,
                               args.read_bw, args.write_bw or args.read_bw)
    dev = {k: getattr(args, k) for k in ("dev_requests_read", "dev_requests_written",
                                          "dev_bytes_read", "dev_bytes_written")}
    rc = wr.RunCounters(rc.iterations, rc.total_s, rc.bytes_read, rc.bytes_written,
                        rc.requests_read, rc.requests_written,
                        rc.dev_bytes_read if dev["dev_bytes_read"] is None
                        else dev["dev_bytes_read"],
                        rc.dev_bytes_written if dev["dev_bytes_written"] is None
                        else dev["dev_bytes_written"],
                        dev["dev_requests_read"], dev["dev_requests_written"], rc.io_wait_s)
    print(wr.classify(rc, limits).line())
    return 0


def _rate(t: str) -> int:
    from mpilab.disk.spec import parse_rate

    return parse_rate(t)


def check_paths(args: argparse.Namespace) -> None:
    """What the tool would refuse only after it has worked, or never, refused before it
    starts: an input named empty or naming a folder; a --json output it cannot write (the
    tool writes it after the iterations, which change DATA in place); a --launcher that is
    none (without --np it would be ignored)."""
    from mpilab.fsutil import check_output

    op = args.wf_command
    names = {"run": ("data", "coef"), "verify": ("initial", "coef", "result")}.get(op, ())
    for key in names:
        v = getattr(args, key)
        opt = key if key == "result" else f"--{key}"
        if not v:
            raise MpilabError(f"{opt}: empty file name")
        if os.path.isdir(v):
            raise MpilabError(f"{opt} {v}: is a directory, expected a file")
    if op != "run":
        return
    if args.json is not None:
        if not args.json:
            raise MpilabError("--json: empty file name")
        check_output(args.json)
    if args.launcher is not None and args.launcher not in launch.LAUNCHERS:
        raise MpilabError(f"--launcher {args.launcher}: unknown launcher (known: "
                          f"{', '.join(launch.LAUNCHERS)})")


def _handler(args: argparse.Namespace) -> int:
    if args.wf_command == "regime":
        return _regime(args)
    check_paths(args)
    if getattr(args, "sim", None) is not None:
        if getattr(args, "disk", None):
            raise MpilabError("--disk: not with --sim (simulated runs do no disk I/O)")
        return _run_sim(args)
    if getattr(args, "sim_cell_flops", None) is not None:
        raise MpilabError("--sim-cell-flops: only with --sim (simulated time)")
    if getattr(args, "disk", None):
        return _run_on_disk(args)
    cmd = build_command(args)
    env = None
    if getattr(args, "np", 0):
        lr = launch.from_args(cmd[0], args)
        lr.check_np(args.np)
        env = lr.env(args.np)
        cmd = lr.command(args.np) + cmd
    return run_forwarding(cmd, env)


def run_forwarding(cmd: list[str], env: dict[str, str] | None) -> int:
    """Run cmd and return its exit status; SIGINT, SIGTERM and SIGHUP that reach this process
    are passed on to it and waited for (the tool removes its temporary outputs before it
    exits); when the tool ends by the signal, SIGINT ends this command as an interrupt
    (status 130) and the others with 128 + the signal's number."""
    import signal
    import sys

    got: list[int] = []
    procs: list[subprocess.Popen[bytes]] = []

    def forward(sig: int, _frame: object) -> None:
        got.append(sig)
        if procs and procs[0].poll() is None:
            procs[0].send_signal(sig)

    # installed before the tool starts and kept for the rest of the command: a signal after
    # the tool has finished (its outputs in place) does not turn a complete run into an
    # interrupted one
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)
    if got:
        raise KeyboardInterrupt
    try:
        procs.append(subprocess.Popen(cmd, env=env))
    except OSError as e:
        raise MpilabError(f"{cmd[0]}: cannot run: {e.strerror}") from None
    if got:  # arrived while the tool was being started
        procs[0].send_signal(got[0])
    status = procs[0].wait()
    if got and status < 0:  # ended by the signal (it finished first: its status)
        if -status == signal.SIGINT:
            raise KeyboardInterrupt
        sys.stderr.write(f"mpilab: stopped by {signal.Signals(-status).name}\n")
        return 128 - status
    return status


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
    r.add_argument("--disk", metavar="PREFIX",
                   help="run inside the cgroups of emulated disks PREFIX (mpilab disk up; "
                        "--data on one of its throttle disks) and print the disk regime the "
                        "run was in and the layout gain to expect there")
    launch.add_options(r)

    f = sub.add_parser("verify", help="compare with the in-core sequential reference")
    f.add_argument("--initial", required=True)
    f.add_argument("--coef", required=True)
    f.add_argument("--iterations", "-k", type=argtypes.count, required=True)
    f.add_argument("result")

    g = sub.add_parser("regime", help="the disk regime a run was in, the layout gain to "
                       "expect there",
                       description="Classify a finished run (its --json results) against a "
                       "disk's limits: requests-bound, bandwidth-bound, memory-limited or not "
                       "I/O-bound, from its requests and bytes per iteration and its time "
                       "(docs/wavefront-perf.md).")
    g.add_argument("results", help="results of `mpilab-wavefront run --json`")
    g.add_argument("--spec", help="disk spec (TOML) with the disk's limits")
    g.add_argument("--disk-name", help="the spec's disk (default the first)")
    g.add_argument("--read-iops", type=argtypes.positive, help="the disk's read requests/s")
    g.add_argument("--write-iops", type=argtypes.positive, help="write requests/s (default: read)")
    g.add_argument("--read-bw", type=argtypes.wrap(_rate, "rate"),
                   help="read bytes/s, e.g. 150MB")
    g.add_argument("--write-bw", type=argtypes.wrap(_rate, "rate"),
                   help="write bytes/s (default: read)")
    for k in ("requests-read", "requests-written", "bytes-read", "bytes-written"):
        g.add_argument(f"--dev-{k}", type=argtypes.count,
                       help=f"device {k.replace('-', ' ')} during the run, in all (default: "
                            "the results' device bytes; the engine's requests, an upper bound "
                            "for buffered I/O)")

    for sp in (c, v, r, f, g):
        sp.set_defaults(func=_handler)
