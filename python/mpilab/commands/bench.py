"""`mpilab bench [--np N] [--launcher NAME] [--out FILE] [--report] -- RUNNER_ARGS...`

Launches the C runner `mpilab-bench` under mpirun, mpiexec (Hydra) or srun (see
mpilab.launch) and passes RUNNER_ARGS through unchanged; the runner measures, fits and
writes the results. The runner's exit status is mpilab's exit status.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from mpilab import argtypes, launch
from mpilab.errors import MpilabError
from mpilab.fsutil import check_output
from mpilab.tools import find_tool, mpi_env

RUNNER = "mpilab-bench"
DEFAULT_NP = 2


@dataclass
class Job:
    """A command line that starts the ranks, its environment, and the rank count."""
    cmd: list[str]
    env: dict[str, str]
    np: int


def job(program: str, runner_args: list[str], np: int | None, default_np: int,
        launcher: str | None = None, launcher_args: list[str] | None = None,
        testbed: str | None = None, mptcp: bool = False) -> Job:
    """Start `program runner_args` on np ranks (default_np when None, or the allocation's
    under srun) with the launcher chosen by mpilab.launch. With `testbed` (a testbed's
    name prefix), Open MPI's mpirun starts inside that emulated cluster (see
    mpilab.testbed.launch.job_prefix); `mptcp` runs the ranks under Multipath TCP."""
    if mptcp and testbed is None:
        raise MpilabError("--mptcp needs --testbed PREFIX (MPTCP runs over the testbed's rails)")
    if testbed is not None:
        if launcher is not None and launch.canonical(launcher) != "mpirun":
            raise MpilabError("--testbed works with --launcher mpirun only")
        n = default_np if np is None else np
        if n < 1:
            raise MpilabError(f"--np {n}: need at least 1 rank")
        from mpilab.testbed import launch as tb_launch
        from mpilab.testbed import net

        spec = net.current_spec(testbed)
        prefix = tb_launch.job_prefix(spec, n, mptcp=mptcp) + (launcher_args or [])
        return Job(prefix + [program] + runner_args, mpi_env(), n)
    lr = launch.choose(program, launcher, launcher_args)
    n = launch.resolve_np(lr, np, default_np)
    return Job(lr.command(n) + [program] + runner_args, lr.env(n), n)


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


def runner_job(np: int | None, default_np: int, runner_args: list[str],
               launcher: str | None = None, launcher_args: list[str] | None = None,
               testbed: str | None = None, mptcp: bool = False) -> Job:
    return job(find_tool(RUNNER), runner_args, np, default_np, launcher, launcher_args,
               testbed, mptcp)


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
    j = runner_job(args.np, DEFAULT_NP, runner_args, args.launcher, args.launcher_arg,
                   args.testbed, args.mptcp)
    if args.testbed is not None:
        # inside the testbed: the testbed's job control (time limit, signals end the whole
        # job in the node namespaces; docs/testbed.md); its status is already shell-style
        from mpilab.testbed import jobctl

        tag = jobctl.new_tag(args.testbed)
        proc, cg = jobctl.start(j.cmd, tag, j.env, stdin=subprocess.DEVNULL)
        status = jobctl.supervise(proc, tag, jobctl.default_timeout(), None, cg=cg)
    else:
        proc = subprocess.Popen(j.cmd, env=j.env)
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
    p.add_argument("--np", type=argtypes.count, default=None, metavar="N",
                   help=f"number of ranks (default {default_np}; under srun the "
                        "allocation's, or the CPUs of the node)")
    launch.add_options(p)
    p.add_argument("--testbed", metavar="PREFIX",
                   help="run inside the emulated cluster with this name prefix "
                        "(started with 'mpilab testbed up'; the default prefix is mlt)")
    p.add_argument("--mptcp", action="store_true",
                   help="with --testbed: run the ranks under Multipath TCP over both rails")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "bench", help="run the mpilab-bench runner under mpirun, mpiexec or srun",
        description="Launch mpilab-bench with N ranks; the arguments after -- go to the "
                    "runner unchanged (see mpilab-bench --help). Exit status is the "
                    "runner's.")
    add_launch_options(p, DEFAULT_NP)
    p.add_argument("--out", metavar="FILE", help="results file (forwarded as --out FILE)")
    p.add_argument("--report", action="store_true",
                   help="also write the HTML report beside the results (FILE with .html)")
    p.add_argument("runner_args", nargs=argparse.REMAINDER, metavar="-- RUNNER_ARGS",
                   help="arguments for mpilab-bench")
    p.set_defaults(func=_run)
