"""Shared, generic pytest helpers. Capability-specific fixtures live in their own test files."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _stats(mean: float, reps: int, rng: random.Random) -> tuple[dict[str, Any], list[float]]:
    samples = [mean * (1 + 0.02 * rng.uniform(-1, 1)) for _ in range(reps)]
    m = sum(samples) / reps
    sd = math.sqrt(sum((x - m) ** 2 for x in samples) / (reps - 1)) if reps > 1 else 0.0
    ci = 2.0 * sd / math.sqrt(reps)
    ss = sorted(samples)
    return ({"mean": m, "ci_half": ci, "rel_err": ci / m, "median": ss[reps // 2],
             "min": ss[0], "max": ss[-1], "stdev": sd, "reps": reps, "invalid": 0,
             "converged": True}, samples)


def make_results(ranks: int = 4, sizes: tuple[int, ...] = (0, 1024, 65536, 1 << 20),
                 seed: int = 1) -> dict[str, Any]:
    """A complete, schema-conforming synthetic `mpilab.results/1` document: all-pairs p2p
    (parallel schedule), scatter/gather (native, linear, binomial) with max, root, global and
    opspec timing, bcast and allreduce (native), Hockney models and predictions, and clock
    synchronisation. Times follow alpha + beta*m with alpha 5 us, beta 1 ns/byte."""
    rng = random.Random(seed)
    alpha, beta = 5e-6, 1e-9
    prec = {"cl": 0.95, "eps": 0.025, "min_reps": 5, "max_reps": 100}
    meas: list[dict[str, Any]] = []

    def add(extra: dict[str, Any], mean: float, reps: int = 8) -> None:
        st, samples = _stats(mean, reps, rng)
        meas.append({**extra, "precision": prec, "stats": st, "samples": samples,
                     "valid": [True] * reps})

    for i in range(ranks):
        for j in range(i + 1, ranks):
            for m in sizes:
                add({"op": "p2p", "impl": "roundtrip", "timing": "p2p", "schedule": "parallel",
                     "isolation": "barrier", "pair": [i, j], "bytes": m, "bytes_back": m,
                     "root": 0, "ranks": ranks}, 2 * (alpha + beta * m) * (1 + 0.1 * (i + j)))
    for op in ("scatter", "gather"):
        for impl in ("native", "linear", "binomial"):
            for timing in ("max", "root", "global", "opspec"):
                if timing == "opspec" and impl == "native":
                    continue
                for m in sizes:
                    k = {"native": 1.0, "linear": ranks - 1.0, "binomial": 2.0}[impl]
                    add({"op": op, "impl": impl, "timing": timing, "isolation": "barrier",
                         "bytes": m, "root": 0, "ranks": ranks}, k * (alpha + beta * m))
    for op in ("bcast", "allreduce"):
        for timing in ("max", "root", "global"):
            for m in sizes:
                add({"op": op, "impl": "native", "timing": timing, "isolation": "barrier",
                     "bytes": m, "root": 0, "ranks": ranks}, 2 * (alpha + beta * m))
    pairs = [{"i": i, "j": j, "alpha": alpha, "beta": beta,
              "ranges": [{"from": 0, "to": 65536, "alpha": alpha, "beta": beta},
                         {"from": 65537, "to": 1 << 20, "alpha": 2 * alpha, "beta": beta}]}
             for i in range(ranks) for j in range(i + 1, ranks)]
    preds = [{"op": op, "impl": impl, "timing": "max", "bytes": m,
              "predicted": k * (alpha + beta * m), "measured": k * (alpha + beta * m) * 1.1}
             for op in ("scatter", "gather") for impl, k in (("linear", ranks - 1.0),
                                                             ("binomial", 2.0))
             for m in sizes]
    return {
        "schema": "mpilab.results/1",
        "provenance": {
            "tool": "mpilab-bench", "version": "0.1.0", "mpi": "Open MPI v4.1.4",
            "mpi_standard": "3.1", "date": "2026-11-21T10:00:00Z",
            "command": "mpilab-bench --ops p2p,scatter --timing max,root,global,opspec",
            "ranks": ranks, "hosts": ["node0"],
            "mapping": [{"rank": r, "host": "node0", "pu": r % 2} for r in range(ranks)],
            "options": {"timing": ["max", "root", "global", "opspec"], "isolation": "barrier"},
            "clock_sync": {"method": "skampi", "max_residual_s": 1.2e-7,
                           "ranks": [{"rank": r, "offset_s": 1e-6 * r, "drift": 1e-9,
                                      "residual_s": 1e-7} for r in range(1, ranks)]},
        },
        "measurements": meas,
        "models": {"hockney": {"pairs": pairs}, "predictions": preds},
    }


@pytest.fixture
def synthetic_results() -> Callable[..., dict[str, Any]]:
    """Factory: synthetic_results(ranks=4, sizes=(...)) -> a results document (dict)."""
    return make_results


@pytest.fixture
def write_json(tmp_path: Path) -> Callable[[Any, str], Path]:
    """write_json(obj, name) -> path of obj dumped (indented) into tmp_path/name."""

    def write(obj: Any, name: str = "results.json") -> Path:
        p = tmp_path / name
        p.write_text(json.dumps(obj, indent=1))
        return p

    return write


# Tests that stop a command with SIGINT need it not to be ignored: a suite started in the
# background of a non-interactive shell inherits SIGINT ignored, and so would every command
# the tests start (Python keeps an inherited SIG_IGN). Python's own handler here makes the
# commands start with the default action.
signal.signal(signal.SIGINT, signal.default_int_handler)

def cli_env() -> dict[str, str]:
    """Environment to run `python -m mpilab.cli` from this tree (also when not installed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


@pytest.fixture
def run_cli(tmp_path: Path) -> Callable[..., Any]:
    """run_cli(*args, timeout=..., cwd=tmp_path) -> CompletedProcess of `python -m mpilab.cli`."""
    import subprocess

    def run(*args: str, timeout: float = 300, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mpilab.cli", *args], cwd=cwd or tmp_path,
                              env=env or cli_env(), capture_output=True, text=True,
                              timeout=timeout)

    return run


FAKE_RUNNER = """#!{python}
# Stand-in for mpilab-bench in tests of the Python side (set FAKE_BENCH_MODE).
import json, os, sys
sys.path.insert(0, {tests!r})
from conftest import make_results
args = sys.argv[1:]
with open(os.environ["FAKE_BENCH_ARGS"], "w") as f:
    json.dump(args, f)
mode = os.environ.get("FAKE_BENCH_MODE", "ok")
sys.stderr.write("fake-bench: measuring 1/2\\nfake-bench: measuring 2/2\\n")
if mode == "slow":
    import time
    time.sleep(1.0)
    mode = "ok"
if mode.startswith("exit"):
    sys.stderr.write("fake-bench: unknown op 'nosuch'\\n")
    sys.exit(int(mode[4:]))
out = args[args.index("--out") + 1] if "--out" in args else None
if out is None or mode == "noout":
    print("op bytes mean")
    sys.exit(0)
doc = make_results(ranks=3, sizes=(0, 4096))
doc["measurements"] = [m for m in doc["measurements"] if m["op"] in ("p2p", "bcast")]
doc["models"].pop("predictions")
doc["provenance"]["command"] = " ".join(["mpilab-bench"] + args)
text = json.dumps(doc, indent=1) if mode == "ok" else '{{"schema": "mpilab.results/1",'
with open(out, "w") as f:
    f.write(text)
print("op bytes mean")
"""


@pytest.fixture
def fake_bench(tmp_path: Path) -> Callable[[str], dict[str, str]]:
    """fake_bench(mode) -> environment whose MPILAB_BIN holds a fake mpilab-bench.
    Modes: ok (writes a synthetic results file to --out), slow (ok after a second),
    exitN (fails with status N),
    garbage (writes truncated JSON), noout (writes nothing). The arguments it received are
    in the JSON list at env['FAKE_BENCH_ARGS']."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    exe = bindir / "mpilab-bench"
    exe.write_text(FAKE_RUNNER.format(python=sys.executable, tests=str(Path(__file__).parent)))
    exe.chmod(0o755)

    def env(mode: str = "ok") -> dict[str, str]:
        e = cli_env()
        e["MPILAB_BIN"] = str(bindir)
        e["FAKE_BENCH_MODE"] = mode
        e["FAKE_BENCH_ARGS"] = str(tmp_path / "fake-args.json")
        return e

    return env


def suite_built() -> bool:
    """Whether `mpilab compare` can run here: its runner built and an mpirun on PATH."""
    import shutil

    try:
        from mpilab.suite.runner import suite_tool
        suite_tool()
        return shutil.which("mpirun") is not None
    except Exception:  # noqa: BLE001 (any reason it cannot run is a skip)
        return False


def real_runner() -> str | None:
    """Path of the built mpilab-bench ($MPILAB_BIN, build/bin), or None."""
    cands = []
    if os.environ.get("MPILAB_BIN"):
        cands.append(Path(os.environ["MPILAB_BIN"]) / "mpilab-bench")
    cands.append(REPO / "build" / "bin" / "mpilab-bench")
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


@pytest.fixture(autouse=True)
def _progress_out_of_the_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long command's periodic progress lines (mpilab.stage.command) stay out of the
    standard error that tests read for one-line messages, however slow a busy machine makes
    the command: the period is an hour unless a test sets its own (test_progress.py does)."""
    monkeypatch.setenv("MPILAB_PROGRESS_S", "3600")


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """What mpilab learns about the machine (the launch-variation store) goes to a folder of
    the test's own, never to the user's data directory nor to a later test (a store filled
    by real launches on a busy machine would widen a later test's synthetic intervals)."""
    old = os.environ.get("MPILAB_DATA_DIR")
    os.environ["MPILAB_DATA_DIR"] = str(tmp_path_factory.mktemp("mpilab-data"))
    yield
    if old is None:
        os.environ.pop("MPILAB_DATA_DIR", None)
    else:
        os.environ["MPILAB_DATA_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def _no_unflagged_impossible_values(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """After the whole session: every results file the tests wrote (that the loader accepts;
    deliberately broken files are refused by it) has no negative time or impossible model
    parameter without a flag (mpilab.quality.unflagged_problems)."""
    yield
    from mpilab import fsutil, quality, results
    from mpilab.errors import MpilabError

    problems: list[str] = []
    for f in tmp_path_factory.getbasetemp().rglob("*.json"):
        try:
            # only regular files: tests also leave FIFOs named *.json (opening one blocks)
            doc = json.loads(fsutil.read_regular(f))
        except (MpilabError, OSError, ValueError, UnicodeDecodeError, RecursionError):
            continue
        if not isinstance(doc, dict) or doc.get("schema") != "mpilab.results/1":
            continue
        # the problems first, the loader (a full schema check: minutes for the tests'
        # 50 MB documents) only for a file that has some: the same files are reported
        try:
            found: list[str] | None = quality.unflagged_problems(doc)
        except Exception:  # noqa: BLE001 (a document the loader refuses is skipped below)
            found = None
        if found == []:
            continue
        try:
            results.load(f)
        except MpilabError:
            continue
        problems += [f"{f}: {p}" for p in (found if found is not None
                                            else quality.unflagged_problems(doc))]
    assert not problems, "\n".join(problems[:20])


@pytest.fixture(scope="module")
def slurm() -> Iterator[dict[str, str]]:
    """A single-node Slurm (munged, slurmctld, slurmd: `mpilab slurm up`) in a temporary
    folder, for a test module; yields the environment that points Slurm's commands at it.
    Stops only the daemons it started; skipped without root or without Slurm."""
    import tempfile

    from mpilab.commands import slurm as slurmlocal
    from mpilab.errors import MpilabError

    if os.geteuid() != 0:
        pytest.skip("Slurm's slurmd needs root")
    try:
        slurmlocal.check_can_run()
    except MpilabError as e:
        pytest.skip(str(e))
    d = Path(tempfile.mkdtemp(prefix="mpilab-slurm-", dir="/tmp"))
    try:
        yield slurmlocal.up(d)
    finally:
        slurmlocal.down(d)


# Modules that set up machine-wide things (network namespaces, testbeds, mounts, loop
# devices, cgroups, Slurm daemons) or measure a testbed's timing: the suite runs them one at
# a time (`-m serial`) and the rest on two workers (`-m "not serial" -n 2`), the two parts
# at once (scripts/test).
# A module with any test marked `root` is serial as a whole, unless it is in
# WORKER_SAFE_ROOT_MODULES. (Private namespaces of one process, `unshare -n`, and a tmpfs
# mounted in a test's own folder are not machine-wide.)
SERIAL_MODULES = frozenset({
    "test_disk", "test_jobctl", "test_launch", "test_pathmig",
    "test_pathmig_load", "test_pathmig_tail", "test_reframe_checks", "test_selftest",
    "test_testbed", "test_testbed_delayline",
})

# Root modules that run on the workers: each brings up its own testbed under a prefix
# holding the worker's pid and a state folder of its own (namespaces, interfaces, delay
# lines, cpu groups and job cgroups are named by that prefix, and `down` removes only
# them), changes no setting of the host, and judges no time (lower bounds of a delay line
# only, and measurements whose values are not asserted).
WORKER_SAFE_ROOT_MODULES = frozenset({
    "test_multilane_testbed", "test_testbed_hetero_live", "test_tune_testbed",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rooted = {item.module.__name__ for item in items
              if item.module is not None and item.get_closest_marker("root")}
    for item in items:
        name = item.module.__name__ if item.module is not None else ""
        if name in SERIAL_MODULES or (name in rooted and name not in WORKER_SAFE_ROOT_MODULES):
            item.add_marker(pytest.mark.serial)
