"""`mpilab bench [--np N] [--launcher mpirun|srun] [--out FILE] [--report] -- RUNNER_ARGS...`

Launches the C runner `mpilab-bench` under mpirun or srun and passes RUNNER_ARGS through
unchanged; the runner measures, fits and writes the results. The runner's exit status is
mpilab's exit status.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from mpilab import argtypes
from mpilab.errors import MpilabError
from mpilab.fsutil import check_output
from mpilab.tools import find_tool, mpi_env, mpirun_prefix

RUNNER = "mpilab-bench"
LAUNCHERS = ("mpirun", "srun")


def launcher_prefix(launcher: str, np: int, extra: list[str] | None = None,
                    testbed: str | None = None, mptcp: bool = False) -> list[str]:
    """Command prefix that starts np ranks with the given launcher. With `testbed` (a
    testbed's name prefix), mpirun starts inside that emulated cluster (see
    mpilab.testbed.launch.job_prefix); `mptcp` runs the ranks under Multipath TCP."""
    if np < 1:
        raise MpilabError(f"--np {np}: need at least 1 rank")
    if mptcp and testbed is None:
        raise MpilabError("--mptcp needs --testbed PREFIX (MPTCP runs over the testbed's rails)")
    if testbed is not None:
        if launcher != "mpirun":
            raise MpilabError("--testbed works with --launcher mpirun only")
        from mpilab.testbed import launch, net

        spec = net.current_spec(testbed)
        return launch.job_prefix(spec, np, mptcp=mptcp) + (extra or [])
    if launcher == "mpirun":
        return mpirun_prefix(np, extra)
    if launcher == "srun":
        srun = shutil.which("srun")
        if not srun:
            raise MpilabError("srun not found (use --launcher mpirun outside Slurm)")
        return [srun, "-n", str(np)] + (extra or [])
    raise MpilabError(f"--launcher {launcher}: expected one of {', '.join(LAUNCHERS)}")


def out_in_args(args: list[str]) -> str | None:
    """The value of --out FILE / --out=FILE among runner arguments, if any."""
    for k, a in enumerate(args):
        if a == "--out":
            if k + 1 >= len(args):
                raise MpilabError("runner argument --out needs a FILE")
            return args[k + 1]
        if a.startswith("--out="):
            return a[len("--out="):]
    return None


def runner_command(np: int, launcher: str, runner_args: list[str],
                   launcher_args: list[str] | None = None, testbed: str | None = None,
                   mptcp: bool = False) -> list[str]:
    return (launcher_prefix(launcher, np, launcher_args, testbed, mptcp)
            + [find_tool(RUNNER)] + runner_args)


def exit_status(rc: int) -> int:
    """A subprocess return code as a shell exit status (signals as 128+N)."""
    return 128 - rc if rc < 0 else rc


def _strip_dashdash(args: list[str]) -> list[str]:
    return args[1:] if args[:1] == ["--"] else args


def _run(args: argparse.Namespace) -> int:
    runner_args = _strip_dashdash(list(args.runner_args))
    in_args = out_in_args(runner_args)
    if args.out is not None and in_args is not None:
        raise MpilabError("--out given twice (to mpilab bench and to the runner); give it once")
    out = args.out if args.out is not None else in_args
    if args.report and out is None:
        raise MpilabError("--report needs --out FILE (the results file to report on)")
    if args.out is not None:
        runner_args = runner_args + ["--out", args.out]
    if out is not None:
        check_output(out)  # a directory or dangling link is refused before measuring
        if out != "-":
            Path(out).parent.mkdir(parents=True, exist_ok=True)
    cmd = runner_command(args.np, args.launcher, runner_args, args.launcher_arg,
                         args.testbed, args.mptcp)
    if args.testbed is not None:
        # inside the testbed: the testbed's job control (time limit, signals end the whole
        # job in the node namespaces; docs/testbed.md); its status is already shell-style
        from mpilab.testbed import jobctl

        tag = jobctl.new_tag(args.testbed)
        proc = subprocess.Popen(cmd, env=dict(mpi_env(), **{jobctl.JOB_ENV: tag}),
                                stdin=subprocess.DEVNULL, start_new_session=True)
        status = jobctl.supervise(proc, tag, jobctl.default_timeout(), None)
    else:
        proc = subprocess.Popen(cmd, env=mpi_env())
        try:
            status = exit_status(proc.wait())
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise
    if status != 0:
        named = status == 2 or (args.testbed is not None and (status in (124, 125)
                                                              or status >= 128))
        if not named:  # bad input (2) and job control's endings were named in one line
            sys.stderr.write(f"mpilab: {RUNNER} exited with status {status}\n")
        return status
    if args.report and out is not None:
        from mpilab.commands.report import make_report

        html = make_report(out)
        sys.stdout.write(f"report: {html}\n")
    return 0


def add_launch_options(p: argparse.ArgumentParser, default_np: int) -> None:
    p.add_argument("--np", type=argtypes.count, default=default_np, metavar="N",
                   help=f"number of ranks (default {default_np})")
    p.add_argument("--launcher", choices=LAUNCHERS, default="mpirun",
                   help="how to start the ranks (default mpirun; srun passes -n N)")
    p.add_argument("--launcher-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for the launcher (repeatable), e.g. "
                        "--launcher-arg=--mca --launcher-arg=btl --launcher-arg=self,tcp")
    p.add_argument("--testbed", metavar="PREFIX",
                   help="run inside the emulated cluster with this name prefix "
                        "(started with 'mpilab testbed up'; the default prefix is mlt)")
    p.add_argument("--mptcp", action="store_true",
                   help="with --testbed: run the ranks under Multipath TCP over both rails")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "bench", help="run the mpilab-bench runner under mpirun or srun",
        description="Launch mpilab-bench with N ranks; the arguments after -- go to the "
                    "runner unchanged (see mpilab-bench --help). Exit status is the "
                    "runner's.")
    add_launch_options(p, 2)
    p.add_argument("--out", metavar="FILE", help="results file (forwarded as --out FILE)")
    p.add_argument("--report", action="store_true",
                   help="also write the HTML report beside the results (FILE with .html)")
    p.add_argument("runner_args", nargs=argparse.REMAINDER, metavar="-- RUNNER_ARGS",
                   help="arguments for mpilab-bench")
    p.set_defaults(func=_run)
