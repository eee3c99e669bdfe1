"""The default `mpilab bench` starts the MPI job before the analysis is set up: the
modules that merge, print and record the launches are imported while the launch runs; the
testbed's modules are never imported outside a testbed."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mpilab.commands import bench

# the analysis side: table and verdict, quality flags, the history
ANALYSIS = ("mpilab.launch_table", "mpilab.quality", "mpilab.commands.history",
            "mpilab.history.db")

DRIVER = """
import json, subprocess, sys
seen = []
real = subprocess.Popen.__init__
def init(self, args, *a, **k):
    if any(str(x).endswith("mpilab-bench") for x in args):
        seen.append(sorted(m for m in sys.modules if m.startswith("mpilab")))
    real(self, args, *a, **k)
subprocess.Popen.__init__ = init
from mpilab.cli import main
try:
    rc = main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as f:
        json.dump({"at_start": seen, "at_end": sorted(sys.modules)}, f)
sys.exit(rc)
"""


def _run(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[
        subprocess.CompletedProcess[str], dict[str, Any]]:
    log = tmp_path / "modules.json"
    p = subprocess.run([sys.executable, "-c", DRIVER, str(log), *args], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    return p, json.loads(log.read_text())


def test_the_job_starts_before_the_analysis_modules_are_imported(
        fake_bench: Callable[[str], dict[str, str]], tmp_path: Path) -> None:
    env = fake_bench("ok")
    env["MPILAB_DATA_DIR"] = str(tmp_path / "data")
    env["MPILAB_HISTORY"] = str(tmp_path / "h.sqlite")  # the history's code is imported too
    for k, out in enumerate(("a.json", "b.json")):  # the first run measures the variation
        p, mods = _run(tmp_path, env, "bench", "--np", "1", "--out", out, "--", "--ops",
                       "bcast")
        assert p.returncode == 0, p.stderr
        assert mods["at_start"], "the runner was never started"
        early = [m for m in ANALYSIS if m in mods["at_start"][0]]
        assert early == [], f"run {k + 1}: imported before the job started: {early}"
        assert all(m in mods["at_end"] for m in ANALYSIS)  # the analysis did run
        # outside a testbed the launch goes through mpilab.launch alone
        assert "mpilab.launch" in mods["at_end"]
        assert [m for m in mods["at_end"] if m.startswith("mpilab.testbed")] == []
        assert "measurements converged" in p.stdout
    # the second run made one launch and still said what the machine allows, before the
    # table (the note is written while the launch runs)
    assert len(mods["at_start"]) == 1
    assert "launch-to-launch variation" in p.stderr and "mpilab: one launch," in p.stderr
    assert (tmp_path / "h.sqlite").is_file()


def _args() -> argparse.Namespace:
    return argparse.Namespace(testbed=None)


def test_a_failure_beside_the_launch_ends_the_launch() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    started = bench.Started(proc, bench.Job([], {}, 1), None)

    def fail() -> None:
        raise RuntimeError("setup failed")

    try:
        with pytest.raises(RuntimeError):
            bench._beside(started, fail)
        assert proc.wait(timeout=30) != 0  # ended, not left running
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_finish_reports_the_launchs_status(capsys: pytest.CaptureFixture[str]) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    started = bench.Started(proc, bench.Job([], {}, 1), None)
    assert bench._finish(_args(), started) == 3
    assert "exited with status 3" in capsys.readouterr().err
