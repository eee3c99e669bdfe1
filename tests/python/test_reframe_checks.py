"""The ReFrame checks (reframe/) run under ReFrame: the ping-pong check locally (mpirun) with
references taken from a first run passes, and fails naming its latency variable when every
MPI_Send is delayed by a preloaded library; the same check through the project's single-node
Slurm (srun --mpi=pmix; root, skipped otherwise)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cli_env

BENCH = REPO / "build" / "bin" / "mpilab-bench"
REFRAME = Path(sys.executable).parent / "reframe"

pytestmark = pytest.mark.skipif(
    not REFRAME.exists() or not BENCH.exists() or shutil.which("mpirun") is None
    or shutil.which("mpicc") is None,
    reason="needs reframe-hpc in this environment (scripts/install-deps), the build and mpirun")


def _reframe(tmp: Path, system: str, env_extra: dict[str, str],
             name: str = "MpilabPingPong") -> subprocess.CompletedProcess[str]:
    # TMPDIR: ReFrame's own log (rfm-*.log, a temporary file) goes to the test's folder,
    # not to /tmp
    tmp.mkdir(parents=True, exist_ok=True)
    env = dict(cli_env(), RFM_PREFIX=str(tmp), TMPDIR=str(tmp), **env_extra)
    return subprocess.run([str(REFRAME), "-C", str(REPO / "reframe" / "config.py"),
                           "-c", str(REPO / "reframe" / "mpilab_checks.py"), "-n", name,
                           "--system", system, "-r", "--keep-stage-files",
                           "--prefix", str(tmp), "--nocolor"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def _results(tmp: Path) -> Path:
    found = list((tmp / "stage").rglob("results.json"))
    assert len(found) == 1, found
    return found[0]


def _refs(tmp: Path, results: Path) -> Path:
    out = tmp / "refs.json"
    r = subprocess.run([sys.executable, str(REPO / "reframe" / "mpilab_refs.py"), "-o",
                        str(out), str(results)], env=cli_env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def _delay_lib(tmp: Path) -> Path:
    lib = tmp / "delay.so"
    subprocess.run(["mpicc", "-shared", "-fPIC", "-O2", str(REPO / "reframe" / "delay_preload.c"),
                    "-o", str(lib)], check=True, timeout=120)
    return lib


def _first_then_slowed(tmp_path: Path, system: str, env: dict[str, str]) -> None:
    first = _reframe(tmp_path / "first", system, env)
    assert first.returncode == 0, first.stdout[-3000:]
    assert "Ran 1/1 test case(s)" in first.stdout and "latency_1B" in first.stdout
    refs = _refs(tmp_path, _results(tmp_path / "first"))
    # references from the first run; a wide tolerance (x10): on a busy machine a launch's
    # level moves by tens of percent, the injected delay (2 ms a send) by a factor of 100+
    same = _reframe(tmp_path / "again", system,
                    dict(env, MPILAB_REFS=str(refs), MPILAB_RFM_TOLERANCE="9"))
    assert same.returncode == 0, same.stdout[-3000:]
    slow = _reframe(tmp_path / "slow", system,
                    dict(env, MPILAB_REFS=str(refs), MPILAB_RFM_TOLERANCE="9",
                         MPILAB_RFM_PRELOAD=str(_delay_lib(tmp_path)), MPILAB_DELAY_US="2000"))
    assert slow.returncode != 0
    # ReFrame's failure report names the variable out of its reference
    out = slow.stdout
    assert "failed to meet reference(s)" in out, out[-3000:]
    reason = out[out.index("failed to meet reference(s)"):].split("\n--")[0]
    assert "latency_1B=" in reason, reason
    # the lines docs/reframe.md quotes (pytest -s shows them)
    for name, r in (("first", first), ("again", same), ("slow", slow)):
        for line in r.stdout.splitlines():
            if any(k in line for k in ("[  PASSED  ]", "[  FAILED  ]", "latency_1B",
                                       "failed to meet")):
                print(f"{system} {name}: {line.strip()}")


@pytest.mark.mpi
def test_pingpong_check_local(tmp_path: Path) -> None:
    _first_then_slowed(tmp_path, "local", {})



@pytest.mark.mpi
@pytest.mark.root
def test_pingpong_check_slurm(tmp_path: Path, slurm: dict[str, str]) -> None:
    _first_then_slowed(tmp_path, "slurm", slurm)
