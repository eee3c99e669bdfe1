"""`mpilab bench [--np N] [--launcher NAME] [--out FILE] [--report] -- RUNNER_ARGS...`

Launches the C runner `mpilab-bench` under mpirun, mpiexec (Hydra) or srun (see
mpilab.launch) and passes RUNNER_ARGS through unchanged; the runner measures, fits and
writes the results. The runner's exit status is mpilab's exit status.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpilab import argtypes, launch, procs, units
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text, check_output, make_folders, remove_empty_folders
from mpilab.tools import find_tool, mpi_env

RUNNER = "mpilab-bench"
DEFAULT_NP = 2
# The answer a user reads includes launch-to-launch variation: by default one launch, its
# interval from the machine's stored launch-to-launch variation (mpilab.launchvar), measured
# over BOOTSTRAP_LAUNCHES launches the first time an operation runs in a setting; without a
# store (--variation-store none) DEFAULT_LAUNCHES launches, each with 1/N of the time budget.
DEFAULT_LAUNCHES = 3
DEFAULT_BUDGET_S = 60.0  # mpilab-bench's own default --time-budget


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
    name prefix), Open MPI's mpirun (or MPICH's mpiexec, for a program linked with MPICH)
    starts inside that emulated cluster (see mpilab.testbed.launch.job_prefix);
    `mptcp` runs the ranks under Multipath TCP."""
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
        # mpirun or MPICH's mpiexec, as the program is linked (its ELF NEEDED entries)
        mpi = launch.program_mpi_of([program])
        prefix = (tb_launch.job_prefix(spec, n, mptcp=mptcp, mpi=mpi) + (launcher_args or [])
                  + tb_launch.rank_prefix(spec))
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
    import time

    args.t_start = time.monotonic()
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
    if args.np is not None and args.np < 1:
        raise MpilabError(f"--np {args.np}: need at least 1 rank")
    if args.sim_cfg and args.sim is None:
        raise MpilabError("--sim-cfg applies to simulated runs only (give --sim PLATFORM)")
    for c in args.sim_cfg:
        if not re.fullmatch(r"[A-Za-z0-9_/.-]+:\S+", c):
            raise MpilabError(f"--sim-cfg {c!r}: expected NAME:VALUE, e.g. "
                              "smpi/send-is-detached-thresh:1048576")
    made = None if out is None or out == "-" else make_folders(Path(out).parent)
    try:
        # a launch series records the counters in the merged document before its one write;
        # a single launch's file (written by the runner) gets them after the job
        args.tcp_count = _tcp_before(args, runner_args, out)
        status = _measure(args, runner_args, out)
    finally:
        if made is not None and not Path(out).exists():
            remove_empty_folders(made, Path(out).parent)
    if status == 0 and args.tcp_count is not None and not args.tcp_count.applied:
        _tcp_after(args.tcp_count, out)
    to_history(args, out if status == 0 else None)
    return status


def _tcp_before(args: argparse.Namespace, runner_args: list[str],
                out: str | None) -> Any:
    """The TCP counters of the ranks' namespaces before the job (a mpilab.tcpcount.Count),
    when the run writes a results file and its ranks run here (not simulated, not under
    srun); None otherwise."""
    from mpilab import tcpcount

    informational = any(a in ("--list", "--help", "-h", "--version") for a in runner_args)
    if out is None or out == "-" or informational or args.sim is not None:
        return None
    if args.testbed is None and launch.choose(find_tool(RUNNER), args.launcher,
                                              args.launcher_arg).name == "srun":
        return None
    return tcpcount.Count.start(args.testbed)


def _tcp_after(count: Any, out: str) -> None:
    """A single launch's results file (the runner's): the counters' change recorded in it,
    beta's and G's intervals widened (rewritten atomically), and the one line about it."""
    import json

    p = Path(out)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # the results' readers name the problem
    if not isinstance(doc, dict) or not isinstance(doc.get("provenance"), dict):
        return
    line = count.apply(doc)
    atomic_write_text(out, json.dumps(doc, separators=(",", ":")) + "\n")
    if line:
        sys.stderr.write(line + "\n")


def to_history(args: argparse.Namespace, out: str | None) -> None:
    """--history / $MPILAB_HISTORY: add the results file to the history (docs/history.md)."""
    from mpilab.history_option import history_target

    if out is not None and history_target(getattr(args, "history", None)) is not None:
        from mpilab.commands.history import after_run

        after_run(args, [out])


def _measure(args: argparse.Namespace, runner_args: list[str], out: str | None) -> int:
    informational = any(a in ("--list", "--help", "-h", "--version") for a in runner_args)
    store = variation_store(args)
    if args.sim is None and args.launches is None and store is None:
        args.launches = DEFAULT_LAUNCHES
    if args.sim is not None:
        status = _run_sim(args, runner_args, out)
    elif (args.launches is None or args.launches > 1) and not informational:
        # the launcher and rank count are checked once, before any launch starts
        runner_job(args.np, DEFAULT_NP, runner_args, args.launcher, args.launcher_arg,
                   args.testbed, args.mptcp)
        if out is None or out == "-":
            status = _run_launches_tmp(args, runner_args, out)
        else:
            status = _run_launches(args, runner_args, out)
    elif out == "-" and not informational and args.testbed is None:
        status = _launch_to_stdout(args, runner_args)
    else:
        status = _launch(args, runner_args)
    if status != 0:
        return status
    if args.testbed is not None and out is not None and out != "-" and not informational:
        annotate_testbed(out, args.testbed)
    if args.report and out is not None:
        from mpilab.commands.report import make_report

        html = make_report(out)
        sys.stdout.write(f"report: {html}\n")
    return 0


def _run_sim(args: argparse.Namespace, runner_args: list[str], out: str | None) -> int:
    """--sim PLATFORM: one simulated launch of the SMPI build of the runner (simulated time
    is deterministic: several launches would repeat the same figures), its results file
    annotated with provenance.simulated."""
    from mpilab.sim import run as simrun

    simrun.check_options(args.launches, args.testbed, args.launcher)
    cfg = [f"--cfg={c}" for c in args.sim_cfg]
    if out == "-":
        raise MpilabError("--sim: give --out FILE (the simulated results are annotated in "
                          "place)")
    if not any(a == "--min-time" or a.startswith("--min-time=") for a in runner_args):
        # a noiseless simulated platform: no minimum of measuring time, the rule stops as
        # soon as the interval allows (6 repetitions of identical samples)
        runner_args = [*runner_args, "--min-time", "0"]
    j = simrun.job(RUNNER, runner_args, args.np, args.sim, config=cfg)
    status = simrun.run(j)
    if status == 0:  # after the run: a refused input stays one line
        sys.stderr.write(f"mpilab: simulated on {args.sim} ({j.np} ranks, SimGrid SMPI, "
                         f"platform sha256 {j.info['platform_sha256'][:12]})\n")
    if status == 0 and out is not None:
        simrun.annotate(out, j.info)
    elif status != 0 and status != 2:
        sys.stderr.write(f"mpilab: simulated {RUNNER} exited with status {status}\n")
    return status


@dataclass
class Started:
    """A launch of the runner: its process once started (None: a testbed job, started and
    supervised by _finish under the testbed's job control), its Job, and where its
    stdout goes."""
    proc: subprocess.Popen[bytes] | None
    job: Job
    sink: int | object | None


def _start(args: argparse.Namespace, runner_args: list[str], quiet_stdout: bool = False,
           discard_stdout: bool = False) -> Started:
    """Start one launch of the runner and return at once (a testbed job starts in
    _finish). quiet_stdout: the runner's stdout (its table) goes to stderr, keeping stdout
    for a document (--out -)."""
    j = runner_job(args.np, DEFAULT_NP, runner_args, args.launcher, args.launcher_arg,
                   args.testbed, args.mptcp)
    sink = subprocess.DEVNULL if discard_stdout else sys.stderr if quiet_stdout else None
    if args.testbed is not None:
        return Started(None, j, sink)
    return Started(subprocess.Popen(j.cmd, env=j.env, stdout=sink), j, sink)


def _stop(started: Started) -> None:
    """End a started launch (interrupted, or the work beside it failed): SIGINT, then
    SIGKILL after 10 s."""
    if started.proc is not None:
        procs.end(started.proc, signal.SIGINT)


def _beside(started: Started, work: Callable[[], None]) -> None:
    """Run work while the launch runs; the launch is ended when work fails or is
    interrupted."""
    try:
        work()
    except BaseException:
        _stop(started)
        raise


def _finish(args: argparse.Namespace, started: Started) -> int:
    """Wait for a started launch; its shell-style exit status (failures named on stderr)."""
    if started.proc is None:
        # inside the testbed: the testbed's job control (time limit, signals end the whole
        # job in the node namespaces; docs/testbed.md); its status is already shell-style
        from mpilab.testbed import jobctl

        assert args.testbed is not None
        j = started.job
        tag = jobctl.new_tag(args.testbed)
        proc, cg = jobctl.start(j.cmd, tag, j.env, stdin=subprocess.DEVNULL)
        status = jobctl.supervise(proc, tag, jobctl.default_timeout(), None, cg=cg)
    else:
        try:
            status = exit_status(started.proc.wait())
        except KeyboardInterrupt:
            _stop(started)
            raise
    if status != 0:
        named = status == 2 or (args.testbed is not None and (status in (124, 125)
                                                              or status >= 128))
        if not named:  # bad input (2) and job control's endings were named in one line
            sys.stderr.write(f"mpilab: {RUNNER} exited with status {status}\n")
    return status


def _launch(args: argparse.Namespace, runner_args: list[str], quiet_stdout: bool = False,
            discard_stdout: bool = False) -> int:
    """One launch of the runner, waited for; its shell-style exit status."""
    return _finish(args, _start(args, runner_args, quiet_stdout, discard_stdout))


def _launch_to_stdout(args: argparse.Namespace, runner_args: list[str]) -> int:
    """One launch with --out -: the runner writes a temporary file, copied to stdout after
    the launch. The launcher never holds our stdout: a reader that stops early (`| head`)
    would make Open MPI's mpirun die of SIGPIPE (it crashed, status 139, in
    PMIx_Finalize) instead of the quiet exit 0 a pipe user expects."""
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="mpilab-bench-")
    try:
        f = str(Path(tmp) / "results.json")
        status = _launch(args, without_out(runner_args) + ["--out", f], quiet_stdout=True)
        if status == 0:
            try:
                sys.stdout.write(Path(f).read_text(encoding="utf-8"))
                sys.stdout.flush()
            except BrokenPipeError:
                # the reader stopped: nothing more to say, and no second error at exit
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
        return status
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def without_out(args: list[str]) -> list[str]:
    """Runner arguments with --out FILE / --out=FILE removed."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--out":
            skip = True
            continue
        if a.startswith("--out="):
            continue
        out.append(a)
    return out


def launch_file(out: str, k: int) -> str:
    """The results file of launch k (1-based) beside OUT: run.json -> run.launch1.json."""
    p = Path(out)
    suffix = p.suffix or ".json"
    return str(p.with_name(f"{p.stem if p.suffix else p.name}.launch{k}{suffix}"))


def split_budget(runner_args: list[str], n: int) -> list[str]:
    """Runner arguments whose --time-budget (the runner's default when absent) is divided
    between n launches, so that n launches cost about what one would."""
    total = DEFAULT_BUDGET_S
    rest: list[str] = []
    skip = False
    for k, a in enumerate(runner_args):
        if skip:
            skip = False
            continue
        if a == "--time-budget" or a.startswith("--time-budget="):
            v = runner_args[k + 1] if a == "--time-budget" and k + 1 < len(runner_args) else \
                a.partition("=")[2]
            skip = a == "--time-budget"
            try:
                total = units.parse_duration(v)
            except (ValueError, MpilabError):
                raise MpilabError(f"--time-budget: '{v}' is not a duration like 60s") from None
            continue
        rest.append(a)
    return rest + ["--time-budget", f"{total / n:.6g}s"]


def variation_store(args: argparse.Namespace) -> Path | None:
    """The launch-variation store this run uses (None: --variation-store none)."""
    from mpilab import launchvar

    v = args.variation_store
    if v is None:
        return launchvar.default_store()
    return None if v == "none" else Path(v)


def annotate_testbed(results_file: str, prefix: str) -> None:
    """Record the emulated setting in a results file's provenance (rewritten atomically):
    provenance.testbed with the testbed's prefix, configured WAN delay, delay backend and
    whether `up` found that its delay line holds that delay (delay_truth; flags
    ["delay_off"] when it does not)."""
    import json

    from mpilab.testbed import net

    st = net.load_state(prefix) or {}
    p = Path(results_file)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise MpilabError(f"{results_file}: the run left no readable results ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("provenance"), dict):
        raise MpilabError(f"{results_file}: not a results document")
    truth = st.get("delay_truth")
    sp = st.get("spec") or {}
    doc["provenance"]["testbed"] = {
        "prefix": prefix, "wan_delay_s": sp.get("wan_delay"),
        "delay_backend": st.get("delay_backend"), "delay_truth": truth,
        "flags": ["delay_off"] if isinstance(truth, dict) and truth.get("held") is False
        else []}
    atomic_write_text(results_file, json.dumps(doc, indent=1) + "\n")
    if doc["provenance"]["testbed"]["flags"]:
        sys.stderr.write(f"mpilab: testbed '{prefix}': its delay line does not hold the "
                         f"configured delay ({truth.get('reason')}); the results carry the "
                         "flag delay_off\n")


def _run_launches_tmp(args: argparse.Namespace, runner_args: list[str], out: str | None) -> int:
    """Launches without a results file (no --out, or --out - for the merged document on
    stdout): the launch files live in a temporary directory, removed afterwards."""
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="mpilab-launches-")
    try:
        merged = str(Path(tmp) / "merged.json")
        status = _run_launches(args, runner_args, merged, table=out != "-")
        if status == 0 and out == "-":
            try:
                sys.stdout.write(Path(merged).read_text(encoding="utf-8"))
                sys.stdout.flush()
            except BrokenPipeError:
                pass
        return status
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_launches(args: argparse.Namespace, runner_args: list[str], out: str | None,
                  table: bool = True) -> int:
    """The runner over launches, each into its own file, merged at OUT (mpilab.launches).
    By default (no --launches) one launch whose interval comes from the machine's stored
    launch-to-launch variation (mpilab.launchvar), and BOOTSTRAP_LAUNCHES launches when an
    operation has no stored variation yet (the launch files then live in a temporary
    directory); --launches N: N launches with 1/N of the budget each, their files beside
    OUT. A failed launch stops the series and leaves a partial merged file of the launches
    completed."""
    import shutil
    import tempfile

    if out is None or out == "-":
        raise MpilabError("--launches needs --out FILE (each launch writes FILE.launchK.json, "
                          "the merged results go to FILE)")
    default = args.launches is None
    planned = 1 if default else args.launches
    base_args = without_out(runner_args)
    if not default:
        base_args = split_budget(base_args, planned)
    tmp = tempfile.mkdtemp(prefix="mpilab-launches-") if default else None
    try:
        return _launch_series(args, runner_args, base_args, out, table, planned,
                              (lambda k: str(Path(tmp) / f"launch{k}.json")) if tmp else
                              (lambda k: launch_file(out, k)))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _variation_session(args: argparse.Namespace, runner_args: list[str]) -> object | None:
    """The store's view of this run's context (None without a store)."""
    from mpilab import launchvar

    path = variation_store(args)
    if path is None:
        return None
    j = runner_job(args.np, DEFAULT_NP, runner_args, args.launcher, args.launcher_arg,
                   args.testbed, args.mptcp)
    prog = find_tool(RUNNER)
    cut = j.cmd.index(prog) if prog in j.cmd else len(j.cmd)
    return launchvar.Session(path, launchvar.context(j.cmd[:cut], j.env, runner_args, j.np))


def _limits_note(args: argparse.Namespace, session: object | None,
                 runner_args: list[str]) -> None:
    """The note on what the machine allows (stderr, one line; nothing without a store or
    with --quiet-launches)."""
    from mpilab import launch_table, launchvar

    if not isinstance(session, launchvar.Session) or args.quiet_launches:
        return
    stored, since = session.stored()
    limits = session.limits(_ops_named(runner_args), _sizes_named(runner_args))
    note = launch_table.limits_note(limits, _eps_asked(runner_args), stored, since,
                                    (session.entry or {}).get("mpi"), session.far_off())
    if note:
        sys.stderr.write(note + "\n")
        sys.stderr.flush()


def _analysis_setup(args: argparse.Namespace, session: object | None,
                    runner_args: list[str]) -> None:
    """What the analysis needs before the first launch ends, done while it runs: the note
    on the machine's limits, and the modules that merge, print and record the launches."""
    _limits_note(args, session, runner_args)
    from mpilab import launch_table, launches  # noqa: F401
    from mpilab.history_option import history_target

    if history_target(getattr(args, "history", None)) is not None:
        import mpilab.commands.history  # noqa: F401
        import mpilab.history.db  # noqa: F401


def _runner_value(runner_args: list[str], name: str) -> str | None:
    """The value of a runner option (--name V or --name=V), the last one given."""
    got = None
    for k, a in enumerate(runner_args):
        if a == name and k + 1 < len(runner_args):
            got = runner_args[k + 1]
        elif a.startswith(name + "="):
            got = a.partition("=")[2]
    return got


def _ops_named(runner_args: list[str]) -> list[str] | None:
    v = _runner_value(runner_args, "--ops")
    return None if v is None else [o.partition(":")[0] for o in v.split(",") if o]


def _sizes_named(runner_args: list[str]) -> list[int] | None:
    v = _runner_value(runner_args, "--sizes")
    try:
        return None if v is None else units.parse_size_list(v)
    except (ValueError, MpilabError):
        return None  # adaptive or invalid: the runner says which


def _eps_asked(runner_args: list[str]) -> float:
    v = _runner_value(runner_args, "--eps")
    try:
        return 0.025 if v is None else units.parse_real(v)
    except (ValueError, MpilabError):
        return 0.025


def _launch_series(args: argparse.Namespace, runner_args: list[str], base_args: list[str],
                   out: str, table: bool, planned: int, name_of: object) -> int:
    import json
    import time

    from mpilab import launchvar
    from mpilab.fsutil import atomic_write_text, partial_name

    t_start = getattr(args, "t_start", None) or time.monotonic()
    session = _variation_session(args, runner_args)  # checked before any launch starts
    if args.testbed is not None:  # a testbed job starts under job control: note first
        _limits_note(args, session, runner_args)
    files: list[str] = []
    docs: list[dict] = []  # type: ignore[type-arg]
    walls: list[float] = []
    status = 0
    bootstrap = None
    k = 0
    eps_asked = _eps_asked(runner_args)
    if isinstance(session, launchvar.Session) and args.launches is None:
        rules = session.eps_rules(eps_asked)
        if rules is not None and _runner_value(base_args, "--eps-for") is None:
            base_args = [*base_args, "--eps-for", rules]
        if session.entry is None:  # nothing known here: the first run's launches share
            base_args = split_budget(base_args, launchvar.BOOTSTRAP_LAUNCHES)  # the budget
    while k < planned:
        k += 1
        f = name_of(k)  # type: ignore[operator]
        check_output(f)
        if not args.quiet_launches and planned > 1:
            sys.stderr.write(f"mpilab: launch {k} of {planned} -> {f}\n")
        t0 = time.monotonic()
        started = _start(args, base_args + ["--out", f], quiet_stdout=not table,
                         discard_stdout=True)
        if k == 1 and args.testbed is None:
            # the job starts first; Python's own setup runs beside it
            _beside(started, lambda: _analysis_setup(args, session, runner_args))
        status = _finish(args, started)
        walls.append(time.monotonic() - t0)
        # a failed launch leaves its measurements under the partial name (mpilab-bench)
        got = f if Path(f).is_file() else partial_name(f) if status != 0 else None
        if got is not None and Path(got).is_file():
            try:
                doc = json.loads(Path(got).read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise MpilabError(f"{got}: launch {k} left an unreadable results file "
                                  f"({e})") from None
            files.append(got)
            docs.append(doc)
        if status != 0:
            break
        if k == 1 and isinstance(session, launchvar.Session) and args.launches is None:
            session.drop_if_other_mpi((docs[0].get("provenance") or {}).get("mpi"))
            unknown = session.unknown_ops(docs[:1])
            if unknown:
                planned = launchvar.BOOTSTRAP_LAUNCHES
                if session.entry is not None:  # the extra launches share a launch's budget
                    base_args = split_budget(base_args, planned - 1)
                bootstrap = ("measuring this machine's launch-to-launch variation for "
                             + ", ".join(unknown))
                if not args.quiet_launches:
                    sys.stderr.write(f"mpilab: launch-to-launch variation of "
                                     f"{', '.join(unknown)} is not yet known in this setting: "
                                     f"{planned - 1} more launches now, once (later runs make "
                                     "one launch)\n")
    from mpilab import launch_table, launches  # imported while the first launch ran

    # a failed series: the launches completed go under the partial name, nothing at OUT;
    # the store's record (its write and fsync) runs beside the merge and its write
    tcp_line = None
    recorded = _record_beside(session, docs) if isinstance(session, launchvar.Session) \
        and docs and status == 0 else None
    try:
        target = out if status == 0 else partial_name(out)
        merged = None
        if docs:
            repeat = 1 if args.launches is None else planned
            variation = session.variation(docs, repeat, eps_asked) \
                if isinstance(session, launchvar.Session) else None
            merged = launches.merge(docs, files if args.launches is not None else [],
                                    planned, variation)
            merged["launches"]["cost"] = launches.cost(docs, walls[:len(docs)])
            if variation is not None:
                stored, since = session.stored()  # type: ignore[union-attr]
                merged["launches"]["variation"] = {
                    "store": str(session.path), "context": session.ctx.key(),  # type: ignore
                    "launches_stored": stored, "since": since, "cl": 0.95,
                    "repeat_launches": repeat, "bootstrap": bootstrap is not None}
            if status != 0:
                merged["partial"] = True
                merged.setdefault("partial_reason", "a launch failed; the series stopped there")
            count = getattr(args, "tcp_count", None)
            if status == 0 and count is not None:
                tcp_line = count.apply(merged)  # before the table: both show the same interval
            atomic_write_text(target, json.dumps(merged, separators=(",", ":")) + "\n")
    finally:
        if recorded is not None:
            recorded()
    if status != 0:
        if docs:
            sys.stderr.write(f"mpilab: {len(docs)} of {planned} launches merged into "
                             f"{target} (partial); nothing written to {out}\n")
        return status
    try:
        os.unlink(partial_name(out))  # an earlier failed series' partial file is superseded
    except OSError:
        pass
    assert merged is not None
    if tcp_line:
        sys.stderr.write(tcp_line + "\n")
    if not args.quiet_launches and table:
        sys.stdout.write(launch_table.table(merged))
        sys.stdout.flush()
    if not args.quiet_launches:
        measuring = [launches.measuring_s(d) for d in docs]
        sys.stderr.write(launch_table.cost_line(time.monotonic() - t_start, walls, measuring,
                                                bootstrap) + "\n")
    return 0


def _record_beside(session: Any, docs: list[dict[str, Any]]) -> Callable[[], None]:
    """Start adding the launches to the launch-variation store in a thread; returns the
    join, which writes its one-line warning (the store not written) or raises its error."""
    import threading

    prov = docs[0].get("provenance") or {}
    got: list[str | None | BaseException] = []

    def work() -> None:
        try:
            got.append(session.record(docs, prov.get("mpi"), str(prov.get("date") or "")))
        except BaseException as e:  # noqa: BLE001 (raised again by the join)
            got.append(e)

    t = threading.Thread(target=work, name="mpilab-store-record")
    t.start()

    def join() -> None:
        t.join()
        r = got[0] if got else None
        if isinstance(r, BaseException):
            raise r
        if r:
            sys.stderr.write(r + "\n")

    return join


def _launches_count(text: str) -> int:
    from mpilab.launches import MAX_LAUNCHES

    n = units.parse_int(text)
    if not 1 <= n <= MAX_LAUNCHES:
        raise ValueError(f"must be 1..{MAX_LAUNCHES}")
    return n


launches_count = argtypes._wrap(_launches_count, "count")


def add_launch_options(p: argparse.ArgumentParser, default_np: int) -> None:
    p.add_argument("--np", type=argtypes.count, default=None, metavar="N",
                   help=f"number of ranks (default {default_np}; under srun the "
                        "allocation's, or the CPUs of the node)")
    launch.add_options(p)
    p.add_argument("--testbed", metavar="PREFIX", type=argtypes.testbed_prefix,
                   help="run inside the emulated cluster with this name prefix "
                        "(started with 'mpilab testbed up'; the default prefix is mlt)")
    p.add_argument("--mptcp", action="store_true",
                   help="with --testbed: run the ranks under Multipath TCP over both rails")


def add_history_option(p: argparse.ArgumentParser) -> None:
    from mpilab.history_option import add_option

    add_option(p)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "bench", help="run the mpilab-bench runner under mpirun, mpiexec or srun",
        description="Launch mpilab-bench with N ranks; the arguments after -- go to the "
                    "runner unchanged (see mpilab-bench --help). Exit status is the "
                    "runner's.")
    add_launch_options(p, DEFAULT_NP)
    p.add_argument("--out", metavar="FILE", help="results file (forwarded as --out FILE)")
    p.add_argument("--launches", type=launches_count, default=None, metavar="N",
                   help="run the measurement in N separate launches (mpirun invocations), "
                        "each with 1/N of the runner's --time-budget, and report the median of "
                        "the launch medians; --launches 1: one launch, the runner's own table "
                        "and interval only. Default: one launch whose interval includes this "
                        "machine's stored launch-to-launch variation (measured over "
                        "3 launches the first time an operation runs here)")
    p.add_argument("--sim", metavar="PLATFORM",
                   help="run simulated: the SMPI build of the runner (scripts/build --smpi) "
                        "under smpirun on this SimGrid platform file (mpilab sim platform), "
                        "one rank per host unless --np; one launch (simulated time is "
                        "deterministic); provenance.simulated records the platform and its "
                        "sha256")
    p.add_argument("--sim-cfg", action="append", default=[], metavar="NAME:VALUE",
                   help="with --sim: one more SimGrid option for smpirun (repeatable; after "
                        "mpilab's own, so it overrides them), e.g. "
                        "smpi/send-is-detached-thresh:1048576 (MPI's eager limit); recorded in "
                        "provenance.simulated")
    p.add_argument("--variation-store", metavar="PATH|none",
                   help="where this machine's launch-to-launch variation is kept (default "
                        "$MPILAB_DATA_DIR, $XDG_DATA_HOME/mpilab or ~/.local/share/mpilab, file "
                        "launch-variation.json); none: no store, the interval comes from this "
                        f"run's launches alone ({DEFAULT_LAUNCHES} by default)")
    p.add_argument("--quiet-launches", action="store_true",
                   help="with --launches: no progress lines and no summary table")
    p.add_argument("--report", action="store_true",
                   help="also write the HTML report beside the results (FILE with .html)")
    add_history_option(p)
    p.add_argument("runner_args", nargs=argparse.REMAINDER, metavar="-- RUNNER_ARGS",
                   help="arguments for mpilab-bench")
    p.set_defaults(func=_run)
