"""`mpilab survey [--np N] [--out DIR] [--quick]`: the main job.

One run of the runner measures all-pairs point-to-point (parallel schedule), scatter and
gather (native, linear, binomial) and bcast and allreduce (native) with every timing method
(max, root, global, and opspec where it applies), and fits the models (Hockney per pair,
predictions for linear/binomial scatter and gather; LogGP per pair from its own
measurement of the overheads and gaps, with linear scatter/gather predictions). Then the
results are validated, the report is rendered, and both land in DIR as results.json and
report.html, only if every step succeeded.

The full survey runs the runner in several launches (mpirun invocations; default 3, each
with its share of the time budget) and reports the median of the launch medians with an
interval that includes launch-to-launch variation (mpilab.launches); each launch's own file
is kept beside the results (results.launchK.json) and the extra cost is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mpilab import argtypes
from mpilab.commands.bench import (
    RUNNER,
    Job,
    add_launch_options,
    exit_status,
    launches_count,
    runner_job,
)
from mpilab.errors import MpilabError
from mpilab.fsutil import atomic_write_text

DEFAULT_DIR = "results/survey"
DEFAULT_NP = 4  # under srun: the allocation's, never more than the node has

OPS = ["p2p",
       "scatter:native", "scatter:linear", "scatter:binomial",
       "gather:native", "gather:linear", "gather:binomial",
       "bcast:native", "allreduce:native"]
TIMINGS = ["max", "root", "global", "opspec"]
# Operation-specific timing times each rank's completion in its own repetition: p - 1
# barriers and acknowledgements per sample, so a survey of p ranks pays O(p^2) for it (at
# 256 simulated ranks, most of the survey). Above this many ranks the survey leaves it out
# and says so; `mpilab bench -- --timing opspec` still measures it.
OPSPEC_MAX_RANKS = 64


# Simulated, the runner collects every repetition's times with MPI_Reduce. SimGrid's default
# reduce is linear: every rank sends its time to the root at once, so the ranks that finish
# early send while the root is still receiving the measured operation's messages (a linear
# gather, the root timing's confirmations) and slow it down on the root's link; and the
# simulator's cost of one such call grows with the requests outstanding at the root, p^2 per
# call. A binomial reduce (what real MPIs use for small reductions) does neither: measured at
# 1024 simulated ranks, a third less CPU per measurement, root-timed and linear-gather small
# sizes 10-15 us (about 30%) lower, the others unchanged (docs/scale.md). It is no operation
# the survey measures (MPI_Allreduce's default does not use it); --sim-cfg
# smpi/reduce:default restores SimGrid's own.
SIM_CFG = ["smpi/reduce:binomial"]


def timings_for(np: int) -> list[str]:
    """The timing methods of a survey of np ranks."""
    return TIMINGS if np <= OPSPEC_MAX_RANKS else [t for t in TIMINGS if t != "opspec"]


@dataclass(frozen=True)
class Plan:
    """What one survey asks the runner for."""

    sizes: str
    min_reps: int
    max_reps: int
    eps: float
    cl: float = 0.95
    time_budget: float = 0.0  # seconds of samples for the whole run (0: none, max_reps ends it)
    launches: int = 1  # separate launches, each with time_budget / launches
    min_time: float | None = None  # the runner's --min-time (None: its default)

    def runner_args(self, out: str, np: int = 0) -> list[str]:
        return ["--ops", ",".join(OPS), "--timing", ",".join(timings_for(np)),
                "--sizes", self.sizes, "--p2p-schedule", "parallel",
                "--min-reps", str(self.min_reps), "--max-reps", str(self.max_reps),
                "--eps", repr(self.eps), "--cl", repr(self.cl),
                "--time-budget", f"{self.time_budget / self.launches:.6g}s",
                "--isolation", "barrier", "--models", "hockney,loggp", "--out", out,
                *(["--min-time", f"{self.min_time:g}s"] if self.min_time is not None else [])]


# Sizes: powers of 4 from 1 byte to 1 MiB, plus 0 and points around the eager/rendezvous
# switches of Open MPI's shared-memory (4 KiB) and TCP (64 KiB) transports.
# The full survey's repetitions are ended by the stopping rule or by each measurement's share
# of a 120 s budget (seconds of samples), not by a repetition count: max_reps is a memory cap.
FULL = Plan(sizes="0,1:1M:x4,2K,8K,12K,32K,128K", min_reps=5, max_reps=1000000, eps=0.025,
            time_budget=120.0, launches=3)
QUICK = Plan(sizes="0,4K,64K", min_reps=2, max_reps=3, eps=0.5)

_PROGRESS_RE = re.compile(r"(\d+)\s*/\s*(\d+)")
_RULE_RE = re.compile(r"^-{10,}$")


class RunnerFailed(MpilabError):
    pass


def _run_runner(j: Job, log_path: Path, quiet: bool) -> None:
    """Run the runner with a rich progress display fed by its stderr lines. The runner's
    stdout (its table) and stderr go to log_path. Raises RunnerFailed on failure."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True, quiet=quiet)
    tail: deque[str] = deque(maxlen=5)
    # line-buffered: the log is how a long run's progress is followed (block-buffered, its
    # last 8 KB of progress lines showed up minutes late: "no progress" while it had some)
    with open(log_path, "w", buffering=1) as log:
        log.write("$ " + " ".join(j.cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(j.cmd, env=j.env, stdout=log, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
        assert proc.stderr is not None
        try:
            with Progress(SpinnerColumn(), TextColumn("[bold]measure[/]"), BarColumn(),
                          TextColumn("{task.description}"), TimeElapsedColumn(),
                          console=console, transient=True) as progress:
                task = progress.add_task("starting ranks", total=None)
                in_block = False  # inside one of mpirun's ----- framed messages
                for line in proc.stderr:
                    log.write(line)
                    line = line.rstrip()
                    if _RULE_RE.match(line):
                        in_block = not in_block
                        continue
                    if not line or in_block:
                        continue
                    tail.append(line)
                    m = _PROGRESS_RE.search(line)
                    if m and int(m.group(2)) > 0:
                        progress.update(task, completed=int(m.group(1)),
                                        total=int(m.group(2)))
                    progress.update(task, description=line[-70:])
                rc = proc.wait()
        except BaseException:
            _stop(proc)
            raise
    if rc != 0:
        last = tail[-1] if tail else "no message"
        raise RunnerFailed(f"{RUNNER} failed (exit status {exit_status(rc)}): {last} "
                           f"(log: {log_path})")


def _stop(proc: subprocess.Popen[str]) -> None:
    """Stop the launcher we started (its own session: the signal reaches its ranks)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _is_partial(path: Path) -> bool:
    """A results checkpoint the runner left (valid JSON marked partial)."""
    import json

    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("partial") is True


def _job(np: int | None, args: list[str], launcher: str | None,
         launcher_args: list[str] | None, testbed: str | None, mptcp: bool,
         sim: str | None, sim_cfg: list[str] | None = None) -> tuple[Job, Any]:
    """The runner's launch (and, simulated, the SimJob whose provenance and hostfile go
    with it): mpirun/mpiexec/srun, the testbed's, or smpirun on a platform (--sim) with
    SIM_CFG and then sim_cfg (NAME:VALUE items, which override it)."""
    if sim is None:
        return runner_job(np, DEFAULT_NP, args, launcher, launcher_args, testbed, mptcp), None
    from mpilab.sim import run as simrun
    from mpilab.tools import mpi_env

    sj = simrun.job(RUNNER, args, np, sim,
                    config=simrun.cfg_options([*SIM_CFG, *(sim_cfg or [])]))
    return Job(sj.cmd, mpi_env(), sj.np), sj


def survey(out_dir: str | Path, np: int | None, plan: Plan, launcher: str | None = None,
           launcher_args: list[str] | None = None, quiet: bool = False,
           testbed: str | None = None, mptcp: bool = False,
           sim: str | None = None, sim_cfg: list[str] | None = None) -> tuple[Path, Path]:
    """Run the survey; returns (results.json, report.html). Nothing is left in out_dir
    under those names unless every step succeeded (earlier files are kept as they were)."""
    from rich.console import Console

    from mpilab.report.html import build_report

    console = Console(stderr=True, quiet=quiet)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise MpilabError(f"{out}: exists and is not a directory")
    # runner and launcher exist, the rank count can start: fail early
    if sim is not None:
        from mpilab.sim import run as simrun
        simrun.check_options(None, testbed, launcher)
    elif sim_cfg:
        raise MpilabError("--sim-cfg applies to simulated runs only (give --sim PLATFORM)")
    j, sj0 = _job(np, [], launcher, launcher_args, testbed, mptcp, sim, sim_cfg)
    if sj0 is not None:
        sj0.cleanup()
    out.mkdir(parents=True, exist_ok=True)
    final_json, final_html = out / "results.json", out / "report.html"
    fd, tmp_name = tempfile.mkstemp(prefix=".survey-", suffix=".json", dir=out)
    os.close(fd)
    os.unlink(tmp_name)  # the runner creates it (atomically) when it succeeds
    tmp = Path(tmp_name)
    log = out / "runner.log"
    t0 = time.monotonic()
    n = plan.launches
    launch_tmps = [tmp.with_name(f"{tmp.stem}.launch{k}.json") for k in range(1, n + 1)]
    try:
        console.print(f"[bold]survey[/]: {j.np} ranks ({Path(j.cmd[0]).name}), sizes {plan.sizes}, "
                      f"reps {plan.min_reps}..{plan.max_reps}, eps {plan.eps}"
                      + (f", budget {plan.time_budget:g} s" if plan.time_budget > 0 else "")
                      + (f", {n} launches" if n > 1 else ""))
        console.print(f"[bold]1/3 measure[/]: p2p all pairs + {len(OPS) - 1} collectives "
                      f"x timing {','.join(timings_for(j.np))}"
                      + (f" (opspec left out above {OPSPEC_MAX_RANKS} ranks: p - 1 barriers "
                         "per sample)" if j.np > OPSPEC_MAX_RANKS else ""))
        if sj0 is not None:
            from mpilab.sim import run as simrun
            console.print("  simulated, with the SimGrid options "
                          + " ".join(simrun.cfg_options([*SIM_CFG, *(sim_cfg or [])]))
                          + "; every rank reads the one simulated clock: global timing "
                          "synchronises exactly, without probing (clock_sync method exact)")
        walls: list[float] = []
        for k in range(n):
            target = tmp if n == 1 else launch_tmps[k]
            if n > 1:
                console.print(f"  launch {k + 1} of {n}")
            j, sj = _job(j.np, plan.runner_args(str(target), j.np), launcher, launcher_args,
                         testbed, mptcp, sim, sim_cfg)
            log_k = log if k == 0 else log.with_name(f"runner.launch{k + 1}.log")
            tl = time.monotonic()
            try:
                _run_runner(j, log_k, quiet)
            finally:
                if sj is not None:
                    sj.cleanup()
            walls.append(time.monotonic() - tl)
            if not target.is_file():
                raise MpilabError(f"{RUNNER} exited 0 but wrote no results (log: {log_k})")
            if sj is not None:
                sj.annotate(str(target))
        console.print(f"[bold]2/3 validate[/]: {RUNNER} done in {time.monotonic() - t0:.0f} s")
        if n > 1:
            _merge_launches(launch_tmps, tmp, out, walls, console)
        r = _load(tmp)
        r.path = str(final_json)
        r.sources = [str(final_json)]
        console.print(f"[bold]3/3 report[/]: {len(r.measurements)} measurements, "
                      f"{len(r.hockney)} Hockney pairs, {len(r.loggp)} LogGP pairs, "
                      f"{len(r.predictions) + len(r.loggp_predictions)} predictions")
        # the page, and beside it the CSV files of tables summarised at scale (a large run)
        build_report(r, final_html)
        if n > 1:
            for k, f in enumerate(launch_tmps, 1):
                os.replace(f, out / f"results.launch{k}.json")
        os.replace(tmp, final_json)
    except BaseException:
        # the runner checkpoints while it measures: keep what it measured, marked partial
        partial = [f for f in [tmp, *launch_tmps] if f.is_file() and _is_partial(f)]
        if partial:
            kept = out / "results.partial.json"
            os.replace(partial[0], kept)
            console.print(f"[bold]survey stopped[/]: the measurements made so far are in {kept} "
                          f"(marked partial; 'mpilab report {kept}' renders them)")
        raise
    finally:
        tmp.unlink(missing_ok=True)
        for f in launch_tmps:
            f.unlink(missing_ok=True)
    return final_json, final_html


def _load(path: Path) -> Any:
    """The results file as `mpilab report` reads it: a large one (a survey of hundreds of
    ranks) as a stream, without the p2p repetitions."""
    from mpilab import results
    from mpilab.commands.report import STREAM_BYTES

    if path.stat().st_size >= STREAM_BYTES:
        from mpilab.report.stream import load_large

        return load_large(path)
    return results.load(path)


def _merge_launches(files: list[Path], merged: Path, out: Path, walls: list[float],
                    console: Any) -> None:
    """The launches' documents merged (mpilab.launches) into `merged`; the file names
    recorded are those the launch files get in OUT; the cost line printed."""
    import json

    from mpilab import launches

    docs = []
    for f in files:
        try:
            docs.append(json.loads(f.read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            raise MpilabError(f"{f}: a launch left an unreadable results file ({e})") from None
    names = [str(out / f"results.launch{k}.json") for k in range(1, len(files) + 1)]
    doc = launches.merge(docs, names, len(files))
    doc["launches"]["cost"] = launches.cost(docs, walls)
    atomic_write_text(merged, json.dumps(doc, indent=1) + "\n")
    console.print(launches.cost_line(doc["launches"]["cost"]))


def _run(args: argparse.Namespace) -> int:
    plan = QUICK if args.quick else FULL
    if args.max_reps is not None:
        if args.max_reps < 1:
            raise MpilabError(f"--max-reps {args.max_reps}: need at least 1")
        plan = replace(plan, min_reps=min(plan.min_reps, args.max_reps), max_reps=args.max_reps)
    if args.sizes is not None:
        plan = replace(plan, sizes=args.sizes)
    if args.launches is not None:
        plan = replace(plan, launches=args.launches)
    if args.sim is not None:
        # simulated time is deterministic: one launch, no minimum of measuring time
        from mpilab.sim import run as simrun
        simrun.check_options(args.launches, None, None)
        plan = replace(plan, launches=1, min_time=0.0)
    t0 = time.monotonic()
    rj, rh = survey(args.out, args.np, plan, args.launcher, args.launcher_arg, args.quiet,
                    args.testbed, args.mptcp, args.sim, args.sim_cfg)
    sys.stdout.write(f"survey done in {time.monotonic() - t0:.0f} s\n"
                     f"results: {rj}\nreport:  {rh}\n")
    from mpilab import quality

    raw = _load(rj).raw
    verdict = quality.noisy_verdict(raw) or quality.quick_note(raw)
    if verdict:
        sys.stdout.write(verdict + "\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "survey", help="the main job: measure p2p and collectives, fit models, report",
        description="Measure all-pairs point-to-point, scatter/gather (native, linear, "
                    "binomial) and bcast/allreduce with every timing method, fit the models "
                    "and write DIR/results.json and DIR/report.html.")
    add_launch_options(p, DEFAULT_NP)
    p.add_argument("--out", default=DEFAULT_DIR, metavar="DIR",
                   help=f"output folder (default {DEFAULT_DIR})")
    p.add_argument("--quick", action="store_true",
                   help=f"a few sizes ({QUICK.sizes}) and at most {QUICK.max_reps} "
                        "repetitions: for tests")
    p.add_argument("--sizes", metavar="SPEC", help="override the size list (runner syntax)")
    p.add_argument("--max-reps", type=argtypes.count, metavar="N",
                   help="override the repetition cap")
    p.add_argument("--launches", type=launches_count, metavar="N",
                   help=f"separate launches (default {FULL.launches}, with --quick "
                        f"{QUICK.launches}), each with 1/N of the time budget; the figures "
                        "are the medians of the launch medians with intervals that include "
                        "launch-to-launch variation, each launch's file is kept as "
                        "DIR/results.launchK.json")
    p.add_argument("--sim", metavar="PLATFORM",
                   help="run simulated: the SMPI build of the runner (scripts/build --smpi) "
                        "under smpirun on this SimGrid platform (mpilab sim platform), one "
                        "rank per host unless --np; one launch (docs/scale.md)")
    p.add_argument("--sim-cfg", action="append", default=[], metavar="NAME:VALUE",
                   help="with --sim: one more SimGrid option for smpirun (repeatable; after "
                        f"the survey's own, {' '.join(SIM_CFG)}, so it overrides them); "
                        "recorded in provenance.simulated")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=_run)
