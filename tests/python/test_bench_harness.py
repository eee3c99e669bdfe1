"""bench/harness.py and bench/harness.sh, the shared harness of the bench/ scripts: the MPI
launch line is mpilab.launch.Launcher's (in Python and in the shell alike), mpilab runs from
this checkout and a failure ends a script with one line, JSON is written whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import harness  # noqa: E402
from mpilab import launch  # noqa: E402


def test_mpirun_is_the_launcher_of_every_mpilab_command() -> None:
    extra = ["--mca", "btl", "self,vader"]
    want = launch.Launcher("mpirun", launch.find_executable("mpirun"), "openmpi",
                           extra).command(3)
    assert harness.mpirun(3, extra) == want
    assert "--bind-to" in want and want[-3:] == extra
    pinned = harness.mpirun(2, ["--bind-to", "core", "--mca", "mpi_yield_when_idle", "0"])
    assert pinned.count("--bind-to") == 1 and "none" not in pinned
    assert pinned.count("mpi_yield_when_idle") == 1


def test_the_shell_harness_gives_the_same_line() -> None:
    out = subprocess.run(["bash", "-c", f'. "{REPO}/bench/harness.sh"; '
                          'harness_mpirun cmd 2 --mca btl self; printf "%s\\n" "${cmd[@]}"; '
                          'mpilab --version'],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[:-1] == harness.mpirun(2, ["--mca", "btl", "self"])
    assert out[-1].startswith("mpilab ")


def test_mpilab_runs_this_checkout_and_fails_in_one_line(tmp_path: Path) -> None:
    p = harness.mpilab("--version", capture=True)
    assert p.returncode == 0 and p.stdout.startswith("mpilab ")
    with pytest.raises(SystemExit) as e:
        harness.mpilab("report", str(tmp_path / "missing.json"), "-o",
                       str(tmp_path / "r.html"), capture=True)
    msg = str(e.value)
    assert msg.startswith("mpilab report") and "\n" not in msg and "missing.json" in msg
    assert not (tmp_path / "r.html").exists()
    p = harness.mpilab("report", str(tmp_path / "missing.json"), check=False, capture=True)
    assert p.returncode != 0


def test_write_json_is_whole_and_keeps_the_layout(tmp_path: Path) -> None:
    f = tmp_path / "out.json"
    harness.write_json(f, {"a": [1, 2]})
    assert f.read_text() == '{"a": [1, 2]}\n'
    harness.write_json(f, {"a": [1, 2]}, indent=1)
    assert f.read_text() == json.dumps({"a": [1, 2]}, indent=1) + "\n"
    harness.write_json(f, {"b": 1}, newline=False)
    assert f.read_text() == '{"b": 1}' and [p.name for p in tmp_path.iterdir()] == ["out.json"]
