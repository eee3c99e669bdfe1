"""`mpilab survey [--np N] [--out DIR] [--quick]`: the main job.

One run of the runner measures all-pairs point-to-point (parallel schedule), scatter and
gather (native, linear, binomial) and bcast and allreduce (native) with every timing method
(max, root, global, and opspec where it applies), and fits the models (Hockney per pair,
predictions for linear/binomial scatter and gather; LogGP per pair from its own
measurement of the overheads and gaps, with linear scatter/gather predictions). Then the
results are validated, the report is rendered, and both land in DIR as results.json and
report.html, only if every step succeeded.

Ranks: by default one per CPU this process may run on (its affinity mask; under srun the
allocation's), at least 2; more only when asked (--np N, or --oversubscribe: two per CPU).
The choice is printed and recorded in the results (`survey`). Results: in the compact form
(mpilab.samples_file): the summaries in results.json, the raw samples in
results.samples.npz beside it. Every stage prints its progress on any output (mpilab.stage).
A stopped survey (SIGINT, SIGTERM, SIGHUP) stops its launcher, keeps what was measured as
results.partial.json and removes every temporary file it made; the hidden files of a run
that could not clean up (killed) are named and removed by the next survey in that folder.

The full survey runs the runner in one launch (mpirun invocation); with --launches N in N,
each with its share of the time budget, and reports the median of the launch medians with an
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

from mpilab import argtypes, procs
from mpilab.commands.bench import (
    RUNNER,
    Job,
    add_history_option,
    add_launch_options,
    exit_status,
    launches_count,
    runner_job,
    to_history,
    variation_store,
)
from mpilab.errors import MpilabError

DEFAULT_DIR = "results/survey"
MIN_NP = 2  # point-to-point needs a pair
OVERSUBSCRIBE_PER_CPU = 2  # --oversubscribe without --np: ranks per CPU
TMP_PREFIX = ".survey-"  # every temporary file of a survey starts with this
PARTIAL = "results.partial.json"

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
# sizes 10-15 us (about 30%) lower, the others unchanged (docs/scale-survey.md). It is no operation
# the survey measures (MPI_Allreduce's default does not use it); --sim-cfg
# smpi/reduce:default restores SimGrid's own.
SIM_CFG = ["smpi/reduce:binomial"]


def node_cpus() -> int:
    """The CPUs this process (and the ranks it starts) may run on: its affinity mask, which
    a cgroup cpuset, taskset or a batch system narrows; all online CPUs elsewhere."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Ranks:
    """How many ranks the survey asks for when --np is not given, and why."""

    np: int  # the default rank count (srun replaces it by the allocation's)
    cpus: int
    source: str  # "cores" or "oversubscribe"


def default_ranks(oversubscribe: bool = False, cpus: int | None = None) -> Ranks:
    """One rank per CPU (at least MIN_NP); with oversubscribe OVERSUBSCRIBE_PER_CPU."""
    c = node_cpus() if cpus is None else cpus
    if oversubscribe:
        return Ranks(max(MIN_NP, OVERSUBSCRIBE_PER_CPU * c), c, "oversubscribe")
    return Ranks(max(MIN_NP, c), c, "cores")


def ranks_record(np: int, asked: int | None, d: Ranks, launcher: str,
                 simulated: bool) -> dict[str, Any]:
    """The results' `survey` object: the ranks, the CPUs, where the count came from."""
    if simulated:
        src = "platform"
    elif asked is not None:
        src = "np"
    elif launcher == "srun":
        src = "allocation"
    else:
        src = d.source
    return {"ranks": np, "cores": d.cpus, "ranks_from": src,
            "oversubscribed": (not simulated) and launcher != "srun" and np > d.cpus}


def ranks_line(rec: dict[str, Any]) -> str:
    """The rank choice in words, for the survey's first line."""
    n, c, src = rec["ranks"], rec["cores"], rec["ranks_from"]
    if src == "platform":
        return f"{n} simulated ranks"
    if src == "allocation":
        return f"{n} ranks (the Slurm allocation's)"
    if rec["oversubscribed"] and src == "cores":
        return (f"{n} ranks on {c} CPU(s): oversubscribed (point-to-point needs {MIN_NP}); "
                "ranks share the CPU, so the times include waiting for it")
    if rec["oversubscribed"]:
        how = f"--np {n}" if src == "np" else "--oversubscribe"
        return (f"{n} ranks on {c} CPU(s): oversubscribed, as asked ({how}); ranks share "
                "CPUs, so the times include waiting for one")
    if src == "np":
        return f"{n} rank{'s' if n != 1 else ''} (--np {n}; {c} CPU(s) here)"
    why = f"one per CPU: {c} here" if n == c else f"{c} CPU(s) here, {MIN_NP} at least"
    return f"{n} ranks ({why}; --np N or --oversubscribe for more)"


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
# of a 60 s budget (seconds of samples), not by a repetition count: max_reps is a memory cap.
# 100,000 repetitions: a measurement of a few tens of nanoseconds (an opspec or root gather
# of a few bytes) that has not converged by then is flagged not converged; at 10^6 such
# measurements held 9 of the 11 million samples of a 2-rank survey, and the memory of the
# runner and of the report with them.
# On a quiet node most measurements converge long before their share (the survey takes
# about 15 s on 2 cores, docs/report.md); the budget bounds a busy node's survey to about a minute
# of samples. One launch: --launches N adds the launch-to-launch variation to the intervals
# at N launches' cost (mpilab.launches).
FULL = Plan(sizes="0,1:1M:x4,2K,8K,12K,32K,128K", min_reps=5, max_reps=100000, eps=0.025,
            time_budget=60.0, launches=1)
QUICK = Plan(sizes="0,4K,64K", min_reps=2, max_reps=3, eps=0.5)

_PROGRESS_RE = re.compile(r"(\d+)\s*/\s*(\d+)")
_RULE_RE = re.compile(r"^-{10,}$")


class RunnerFailed(MpilabError):
    pass


def _run_runner(j: Job, log_path: Path, quiet: bool) -> None:
    """Run the runner with a progress display fed by its stderr lines (a rich bar on a
    terminal, a line every few seconds elsewhere: mpilab.stage). The runner's stdout (its
    table) and stderr go to log_path. Raises RunnerFailed on failure."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from mpilab.stage import Stage

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
            with Stage(console, "measure", spinner=False) as stage, \
                    Progress(SpinnerColumn(), TextColumn("[bold]measure[/]"), BarColumn(),
                             TextColumn("{task.description}"), TimeElapsedColumn(),
                             console=console, transient=True) as progress:
                task = progress.add_task("starting ranks", total=None)
                stage.note("starting ranks")
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
                    stage.note(line[-100:])
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
    procs.end(proc, signal.SIGTERM, group=True)


def _doc_of(path: Path) -> dict[str, Any] | None:
    """A results document the runner left (None: unreadable, e.g. cut off by a kill)."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def _run_files(out: Path, stem: str) -> list[Path]:
    """The temporary files of the run whose names start with stem (results, checkpoints,
    archives and the writers' own temporaries)."""
    return sorted(f for f in out.iterdir() if f.name.startswith(stem))


def clear_leftovers(out: Path, console: Any) -> list[str]:
    """Remove, and name, the hidden files an earlier survey in out left (one killed before
    it could clean up). Returns their names."""
    gone = []
    for f in sorted(out.iterdir()):
        if f.name.startswith(TMP_PREFIX) and f.is_file():
            size = f.stat().st_size
            f.unlink(missing_ok=True)
            gone.append(f"{f.name} ({size / 1e6:.1f} MB)")
    if gone:
        console.print(f"removed {len(gone)} hidden file(s) an earlier survey in {out} left "
                      f"when it was killed: {', '.join(gone)}", markup=False, highlight=False)
    return gone


def _keep_stopped(out: Path, launch_tmps: list[Path], console: Any) -> None:
    """A stopped run: keep what it measured as DIR/results.partial.json (the checkpoint of
    the launch in progress, else the last launch completed, marked partial) and say so."""
    from mpilab.fsutil import partial_name

    kept: tuple[Path, dict[str, Any]] | None = None
    for k in range(len(launch_tmps) - 1, -1, -1):
        for cand in (Path(partial_name(launch_tmps[k])), launch_tmps[k]):
            doc = _doc_of(cand) if cand.is_file() else None
            if doc is not None and doc.get("measurements"):
                kept = (cand, doc)
                break
        if kept:
            break
    if kept is None:
        return
    path, doc = kept
    from mpilab import samples_file

    if samples_file.KEY in doc:  # stopped after its compaction: the samples are beside it
        samples_file.attach(doc, path, path.with_name(samples_file.sidecar_name(path.name)))
        del doc[samples_file.KEY]
    if doc.get("partial") is not True:
        doc["partial"] = True
        doc["partial_reason"] = (f"the survey was stopped: launch {launch_tmps.index(path) + 1}"
                                 f" of {len(launch_tmps)} completed, the others not merged")
    final = out / PARTIAL
    samples_file.write_compact(doc, final, out / samples_file.sidecar_name(PARTIAL))
    console.print(f"[bold]survey stopped[/]: the measurements made so far are in {final} "
                  f"(marked partial; 'mpilab report {final}' renders them)")


def _job(np: int | None, args: list[str], launcher: str | None,
         launcher_args: list[str] | None, testbed: str | None, mptcp: bool,
         sim: str | None, sim_cfg: list[str] | None = None,
         default_np: int = MIN_NP) -> tuple[Job, Any]:
    """The runner's launch (and, simulated, the SimJob whose provenance and hostfile go
    with it): mpirun/mpiexec/srun, the testbed's, or smpirun on a platform (--sim) with
    SIM_CFG and then sim_cfg (NAME:VALUE items, which override it)."""
    if sim is None:
        return runner_job(np, default_np, args, launcher, launcher_args, testbed, mptcp), None
    from mpilab.sim import run as simrun
    from mpilab.tools import mpi_env

    sj = simrun.job(RUNNER, args, np, sim,
                    config=simrun.cfg_options([*SIM_CFG, *(sim_cfg or [])]))
    return Job(sj.cmd, mpi_env(), sj.np), sj


def survey(out_dir: str | Path, np: int | None, plan: Plan, launcher: str | None = None,
           launcher_args: list[str] | None = None, quiet: bool = False,
           testbed: str | None = None, mptcp: bool = False,
           sim: str | None = None, sim_cfg: list[str] | None = None,
           oversubscribe: bool = False, store: Path | None = None) -> tuple[Path, Path]:
    """Run the survey; returns (results.json, report.html). Nothing is left in out_dir
    under those names unless every step succeeded (earlier files are kept as they were)."""
    from rich.console import Console

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
    d = default_ranks(oversubscribe)
    j, sj0 = _job(np, [], launcher, launcher_args, testbed, mptcp, sim, sim_cfg, d.np)
    if sj0 is not None:
        sj0.cleanup()
    rec = ranks_record(j.np, np, d, Path(j.cmd[0]).name, sim is not None)
    variation = None
    if sim is None and plan.launches == 1 and store is not None:
        from mpilab import launchvar

        variation = _Variation(launchvar.Session(store, launchvar.context(
            j.cmd, j.env, plan.runner_args("-", j.np), j.np)))
    out.mkdir(parents=True, exist_ok=True)
    clear_leftovers(out, console)
    fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".json", dir=out)
    os.close(fd)
    os.unlink(tmp_name)  # the runner creates it (atomically) when it succeeds
    tmp = Path(tmp_name)
    stem = tmp.stem  # every file of this run starts with it
    log = out / "runner.log"
    t0 = time.monotonic()
    n = plan.launches
    launch_tmps = [tmp.with_name(f"{stem}.launch{k}.json") for k in range(1, n + 1)]
    measuring = True
    try:
        console.print(f"[bold]survey[/]: {ranks_line(rec)} ({Path(j.cmd[0]).name}), "
                      f"sizes {plan.sizes}, reps {plan.min_reps}..{plan.max_reps}, "
                      f"eps {plan.eps}"
                      + (f", budget {plan.time_budget:g} s" if plan.time_budget > 0 else "")
                      + (f", {n} launches" if n > 1 else ""))
        walls = _measure(j, plan, tmp, launch_tmps, log, console, quiet,
                         (launcher, launcher_args, testbed, mptcp, sim, sim_cfg),
                         sj0 is not None)
        measuring = False
        done = _finish(plan, tmp, launch_tmps, out, rec, console, time.monotonic() - t0,
                       walls, variation)
    except BaseException as e:
        # the runner checkpoints while it measures: keep what it measured, marked partial
        # (a failure after measuring is about the data: nothing kept, the error says why)
        if measuring or isinstance(e, KeyboardInterrupt):
            try:
                _keep_stopped(out, [tmp] if n == 1 else launch_tmps, console)
            except (MpilabError, OSError, ValueError) as k:
                console.print(f"survey: the partial results could not be kept: {k}",
                              markup=False)
        raise
    finally:
        for f in _run_files(out, stem):
            f.unlink(missing_ok=True)
    stale = out / PARTIAL
    if stale.exists():
        from mpilab import samples_file

        stale.unlink()
        (out / samples_file.sidecar_name(PARTIAL)).unlink(missing_ok=True)
        console.print(f"removed {stale}, the partial results of an earlier stopped survey")
    return done


def _measure(j: Job, plan: Plan, tmp: Path, launch_tmps: list[Path], log: Path,
             console: Any, quiet: bool, how: tuple[Any, ...], simulated: bool) -> list[float]:
    """Stage 1: the runner's launches, each writing its own file; their wall times."""
    launcher, launcher_args, testbed, mptcp, sim, sim_cfg = how
    n = plan.launches
    console.print(f"[bold]1/3 measure[/]: p2p all pairs + {len(OPS) - 1} collectives "
                  f"x timing {','.join(timings_for(j.np))}"
                  + (f" (opspec left out above {OPSPEC_MAX_RANKS} ranks: p - 1 barriers "
                     "per sample)" if j.np > OPSPEC_MAX_RANKS else ""))
    if simulated:
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
        jk, sj = _job(j.np, plan.runner_args(str(target), j.np), launcher, launcher_args,
                      testbed, mptcp, sim, sim_cfg)
        log_k = log if k == 0 else log.with_name(f"runner.launch{k + 1}.log")
        tl = time.monotonic()
        try:
            _run_runner(jk, log_k, quiet)
        finally:
            if sj is not None:
                sj.cleanup()
        walls.append(time.monotonic() - tl)
        if not target.is_file():
            raise MpilabError(f"{RUNNER} exited 0 but wrote no results (log: {log_k})")
        if sj is not None:
            sj.annotate(str(target))
    return walls


class _Variation:
    """The machine's stored launch-to-launch variation applied to a one-launch survey
    (mpilab.launchvar, as `mpilab bench` applies it): each measurement the store knows gets
    the interval a repeat of the survey would land in; every measurement's launch median is
    added to the store after the survey."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.stubs: list[dict[str, Any]] = []
        self.applied = self.total = 0
        self.var = session.variation([], 1, None)

    def __call__(self, m: dict[str, Any]) -> dict[str, Any]:
        from mpilab import launches
        from mpilab.pair_matrix import expand_all

        st = m.get("stats") if isinstance(m.get("stats"), dict) else None
        if st is None:  # an all-pairs object: recorded, its pairs keep their own intervals
            self.stubs += [{k: v for k, v in x.items() if k not in ("samples", "valid")}
                           for x in expand_all([m]) if isinstance(x, dict)]
            return m
        self.total += 1
        self.stubs.append({k: v for k, v in m.items() if k not in ("samples", "valid")})
        med = st.get("median")
        if not isinstance(med, int | float) or isinstance(med, bool) or not med > 0 or \
                self.var(m, [float(med)]) is None:
            return m
        self.applied += 1
        return launches.merge_measurement([m], self.var)

    def record(self, tmp: Path) -> str | None:
        import json

        prov = json.loads(tmp.read_text(encoding="utf-8")).get("provenance") or {}
        return self.session.record([{"measurements": self.stubs}], prov.get("mpi"),
                                   str(prov.get("date") or ""))

    def line(self) -> str:
        stored, since = self.session.stored()
        if self.applied:
            return (f"intervals: {self.applied} of {self.total} measurements include this "
                    f"machine's launch-to-launch variation ({stored} stored launches since "
                    f"{since}); the others their launch's own (each survey adds its launch)")
        return ("intervals: this launch's own (the machine's launch-to-launch variation for "
                "the survey is not stored yet: each survey adds its launch, and from the "
                "third on the intervals include it)")


def _compact(src: Path, json_out: Path, npz_out: Path, final_npz_name: str,
             extra: dict[str, Any] | None = None, transform: Any = None) -> int:
    """The runner's file in the compact form, read as a stream (mpilab.compact); a file
    that is not a results document is refused in results.load's words (malformed JSON with
    its line, ...)."""
    from mpilab import compact, results

    try:
        return compact.compact_file(src, json_out, npz_out, final_npz_name, extra, transform)
    except (ValueError, UnicodeDecodeError):
        results.load(src)
        raise MpilabError(f"{src}: not a results document") from None


def _finish(plan: Plan, tmp: Path, launch_tmps: list[Path], out: Path,
            rec: dict[str, Any], console: Any, measured_s: float,
            walls: list[float], variation: _Variation | None = None) -> tuple[Path, Path]:
    """Stages 2 and 3: merge the launches, write the compact form (summaries in JSON, samples
    in an archive beside it), validate, render the report, then rename everything."""
    from mpilab import results, samples_file
    from mpilab.report.html import build_report
    from mpilab.stage import Stage

    n = plan.launches
    final_json, final_html = out / "results.json", out / "report.html"
    side = samples_file.sidecar_name
    side_tmp = tmp.with_name(side(tmp.name))
    console.print(f"[bold]2/3 validate[/]: {RUNNER} done in {measured_s:.0f} s")
    with Stage(console, "validate") as st:
        if n > 1:
            st.note(f"merging {n} launches")
            doc = _merge_launches(launch_tmps, out, walls, console)
            doc["survey"] = rec
            st.note(f"the compact form: samples into {side(final_json.name)}")
            count = samples_file.write_compact(doc, tmp, side_tmp, side(final_json.name))
            del doc
            for k, f in enumerate(launch_tmps, 1):
                st.note(f"launch {k}'s file in the compact form")
                _compact(f, f, f.with_name(side(f.name)), side(f"results.launch{k}.json"))
        else:
            st.note(f"reading {RUNNER}'s results into the compact form: samples into "
                    f"{side(final_json.name)}")
            count = _compact(tmp, tmp, side_tmp, side(final_json.name), {"survey": rec},
                             variation)
            if variation is not None:
                warn = variation.record(tmp)
                console.print(variation.line(), markup=False, highlight=False)
                if warn:
                    console.print(warn, markup=False, highlight=False)
        st.note(f"validating the summaries of {count} samples")
        r = results.load(tmp, samples=side_tmp)
    r.path = str(final_json)
    r.sources = [str(final_json)]
    console.print(f"[bold]3/3 report[/]: {len(r.measurements)} measurements, "
                  f"{len(r.hockney)} Hockney pairs, {len(r.loggp)} LogGP pairs, "
                  f"{len(r.predictions) + len(r.loggp_predictions)} predictions")
    with Stage(console, "report") as st:
        st.note(f"writing {final_html}")
        # the page, and beside it the CSV files of tables summarised at scale (a large run)
        build_report(r, final_html)
    if n > 1:
        for k, f in enumerate(launch_tmps, 1):
            os.replace(f.with_name(side(f.name)), out / side(f"results.launch{k}.json"))
            os.replace(f, out / f"results.launch{k}.json")
    os.replace(side_tmp, out / side(final_json.name))
    os.replace(tmp, final_json)
    return final_json, final_html


def _merge_launches(files: list[Path], out: Path, walls: list[float],
                    console: Any) -> dict[str, Any]:
    """The launches' documents merged (mpilab.launches); the file names recorded are those
    the launch files get in OUT; the cost line printed."""
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
    console.print(launches.cost_line(doc["launches"]["cost"]))
    return doc


def _run(args: argparse.Namespace) -> int:
    if args.sim is not None and args.np is not None and args.np < 2:
        # a simulated survey measures pairs and collectives on the platform's hosts: one
        # rank has neither (a real runner's one-rank survey is left to the runner)
        raise MpilabError(f"--np {args.np}: a simulated survey (--sim) needs at least 2 ranks")
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
    prev = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        rj, rh = survey(args.out, args.np, plan, args.launcher, args.launcher_arg,
                        args.quiet, args.testbed, args.mptcp, args.sim, args.sim_cfg,
                        args.oversubscribe, variation_store(args))
    except Stopped as e:
        sys.stderr.write(f"mpilab: survey stopped by {signal.Signals(e.signum).name}\n")
        return 128 + e.signum
    finally:
        for sig, h in prev.items():
            signal.signal(sig, h)
    sys.stdout.write(f"survey done in {time.monotonic() - t0:.0f} s\n"
                     f"results: {rj}\nreport:  {rh}\n")
    import json

    from mpilab import quality

    raw = json.loads(rj.read_text(encoding="utf-8"))  # the summaries are what it reads
    s = quality.summary(raw)
    verdict = quality.noisy_verdict(raw, s) or quality.quick_note(raw, s)
    if verdict:
        sys.stdout.write(verdict + "\n")
    else:
        sys.stdout.write(f"converged: {s['converged']} of {s['measurements']} measurements "
                         f"reached the asked precision (eps {plan.eps:g})\n")
    to_history(args, str(rj))
    return 0


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP while the survey runs: unwinds like Ctrl-C, so the launcher is
    stopped, what was measured is kept and the temporary files are removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stopped(signum: int, _frame: Any) -> None:
    raise Stopped(signum)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "survey", help="the main job: measure p2p and collectives, fit models, report",
        description="Measure all-pairs point-to-point, scatter/gather (native, linear, "
                    "binomial) and bcast/allreduce with every timing method, fit the models "
                    "and write DIR/results.json and DIR/report.html.")
    add_launch_options(p, MIN_NP)
    p.set_defaults(np=None)
    for a in p._actions:
        if a.dest == "np":
            a.help = ("number of ranks (default: one per CPU this process may run on, at "
                      f"least {MIN_NP}; under srun the allocation's); more ranks than CPUs "
                      "run oversubscribed, and the survey says so")
    p.add_argument("--oversubscribe", action="store_true",
                   help=f"without --np: {OVERSUBSCRIBE_PER_CPU} ranks per CPU (ranks share "
                        "CPUs; the times then include waiting for one)")
    p.add_argument("--out", default=DEFAULT_DIR, metavar="DIR", type=argtypes.out_dir,
                   help=f"output folder (default {DEFAULT_DIR})")
    p.add_argument("--quick", action="store_true",
                   help=f"a few sizes ({QUICK.sizes}) and at most {QUICK.max_reps} "
                        "repetitions: for tests")
    p.add_argument("--sizes", metavar="SPEC", type=argtypes.runner_sizes,
                   help="override the size list (runner syntax)")
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
    p.add_argument("--variation-store", metavar="PATH|none",
                   help="where this machine's launch-to-launch variation is kept (as for "
                        "mpilab bench; none: one launch's own intervals only)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    add_history_option(p)
    p.set_defaults(func=_run)
