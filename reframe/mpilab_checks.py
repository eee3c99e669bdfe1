"""ReFrame checks for mpilab (docs/reframe.md): ping-pong latency and bandwidth, collectives,
all pairs (the slowest pair against the median pair), the self-test.

Each check runs one tool of this checkout (mpilab-bench under the partition's launcher, or
`mpilab selftest`), checks that it wrote a valid results file, and hands mpilab's figures to
ReFrame as performance variables with units (reframe/mpilab_perf.py). References come from
a JSON file {variable: value} (MPILAB_REFS, or -S refs_file=PATH), which
reframe/mpilab_refs.py writes from results files or from the history; without one, the
checks report their figures and pass on sanity alone.

Settings (environment, or ReFrame's -S NAME=VALUE): MPILAB_BIN (the tools' folder; default
build/bin of this checkout), MPILAB_REFS, MPILAB_RFM_TOLERANCE (fraction, default 0.5),
MPILAB_RFM_PRELOAD and MPILAB_DELAY_US (a library preloaded into the ranks: a slowdown
injected on purpose, reframe/delay_preload.c).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable

import reframe as rfm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mpilab_perf  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = "results.json"


def _bin() -> str:
    return os.environ.get("MPILAB_BIN") or str(REPO / "build" / "bin")


class MpilabBenchCheck(rfm.RunOnlyRegressionTest):
    """mpilab-bench under the partition's launcher; its results file gives the variables."""

    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    num_tasks = 2
    num_tasks_per_node = 2
    time_limit = "5m"
    refs_file = variable(str, value=os.environ.get("MPILAB_REFS", ""))
    tolerance = variable(float, value=float(os.environ.get("MPILAB_RFM_TOLERANCE", "0.5")))
    preload = variable(str, value=os.environ.get("MPILAB_RFM_PRELOAD", ""))
    delay_us = variable(str, value=os.environ.get("MPILAB_DELAY_US", ""))
    bench_args: list[str] = []
    perf_names: tuple[str, ...] = ()

    @run_after("init")
    def set_command(self) -> None:
        self.executable = os.path.join(_bin(), "mpilab-bench")
        self.executable_opts = [*self.bench_args, "--time-budget", "20s", "--out", RESULTS]
        self.env_vars = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                         "OMPI_MCA_mpi_yield_when_idle": "1"}
        self.descr = f"mpilab-bench {' '.join(self.bench_args)}"

    @run_after("init")
    def set_references(self) -> None:
        if not self.refs_file:
            return
        refs = json.loads(Path(self.refs_file).read_text(encoding="utf-8"))
        table = {}
        for name in self.perf_names:
            if name not in refs:
                continue
            # worse by a factor of up to 1 + tolerance: a time up to (1 + tol) x the
            # reference, a bandwidth down to the reference / (1 + tol)
            tol = self.tolerance
            bounds = ((1 / (1 + tol) - 1, None) if mpilab_perf.higher_is_better(name)
                      else (None, tol))
            table[name] = (float(refs[name]), *bounds, mpilab_perf.unit(name))
        self.reference = {"*": table}

    @run_before("run")
    def set_launcher_options(self) -> None:
        if self.job.launcher.registered_name == "srun":
            self.job.launcher.options += ["--mpi=pmix"]  # Open MPI's ranks under Slurm
        if not self.preload:
            return
        env = {"LD_PRELOAD": self.preload, "MPILAB_DELAY_US": self.delay_us or "0"}
        if self.job.launcher.registered_name == "mpirun":
            self.job.launcher.options += [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
        else:  # srun and others: the ranks inherit the job's environment
            self.env_vars.update(env)

    @sanity_function
    def results_written(self) -> Any:
        return sn.assert_found(r'"schema"\s*:\s*"mpilab\.results/1"',
                               os.path.join(self.stagedir, RESULTS))

    @run_before("performance")
    def set_perf_variables(self) -> None:
        path = os.path.join(self.stagedir, RESULTS)
        self.perf_variables = {
            name: sn.make_performance_function(_figure(path, name),
                                               mpilab_perf.unit(name))
            for name in self.perf_names}


@sn.deferrable
def _figure(path: str, name: str) -> float:
    return mpilab_perf.from_file(path, name)


@rfm.simple_test
class MpilabPingPong(MpilabBenchCheck):
    """Point-to-point latency (1 B, one-way) and bandwidth (1 MiB) between two ranks."""
    bench_args = ["--ops", "p2p", "--sizes", "1,1M", "--no-fit"]
    perf_names = mpilab_perf.CHECKS["pingpong"]
    tags = {"mpilab", "p2p"}


@rfm.simple_test
class MpilabCollectives(MpilabBenchCheck):
    """Broadcast and allreduce at 64 KiB (the library's own algorithms)."""
    num_tasks = 2
    bench_args = ["--ops", "bcast,allreduce", "--sizes", "64K", "--no-fit"]
    perf_names = mpilab_perf.CHECKS["collectives"]
    tags = {"mpilab", "collectives"}


@rfm.simple_test
class MpilabAllPairs(MpilabBenchCheck):
    """Every pair's 1 KiB round trip; the variable is the slowest pair's over the median
    pair's (a slow node or link: well above 1)."""
    num_tasks = 3
    num_tasks_per_node = 3
    bench_args = ["--ops", "p2p", "--sizes", "1K", "--pairs", "full", "--no-fit"]
    perf_names = mpilab_perf.CHECKS["allpairs"]
    tags = {"mpilab", "allpairs"}

    @run_before("run")
    def oversubscribe(self) -> None:
        if self.job.launcher.registered_name == "mpirun":
            self.job.launcher.options += ["--oversubscribe"]


@rfm.simple_test
class MpilabSelftest(rfm.RunOnlyRegressionTest):
    """`mpilab selftest`: the measurement engine against known truth; passes when every
    case passes (its exit status and its summary line)."""
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    local = True
    time_limit = "10m"
    tags = {"mpilab", "selftest"}

    @run_after("init")
    def set_command(self) -> None:
        self.executable = sys.executable
        self.executable_opts = ["-m", "mpilab.cli", "selftest"]
        self.env_vars = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                         "PYTHONPATH": str(REPO / "python")}

    @sanity_function
    def passed(self) -> Any:
        return sn.assert_eq(self.job.exitcode, 0)
