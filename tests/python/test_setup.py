"""After the README's set-up (`scripts/build`, `. .venv/bin/activate`), the installed
libmpilab is found by pkg-config, CMake's find_package and man from any directory, and a
program linked through pkg-config runs without LD_LIBRARY_PATH; `deactivate` restores the
environment (issue 28 item 1)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from mpilab.tools import mpi_env

ACTIVATE = REPO / ".venv" / "bin" / "activate"
pytestmark = pytest.mark.skipif(not (REPO / ".venv" / "lib" / "pkgconfig" / "mpilab.pc").exists(),
                                reason="scripts/build has not installed mpilab into .venv")


def _clean_bash(script: str, cwd: Path, activate: bool = True) -> subprocess.CompletedProcess[str]:
    """bash with a minimal environment (no LD_LIBRARY_PATH, PKG_CONFIG_PATH, ...), the
    project's environment activated first unless `activate` is false."""
    env = {"HOME": str(cwd), "PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(cwd)}
    pre = f". {ACTIVATE}; " if activate else ""
    return subprocess.run(["bash", "-c", f"set -e; {pre}{script}"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600, check=False)


def test_pkg_config_link_runs_without_ld_library_path(tmp_path: Path) -> None:
    shutil.copy(REPO / "examples" / "measure_bcast.c", tmp_path)
    p = _clean_bash("pkg-config --modversion mpilab; "
                    "$(pkg-config --variable=mpicc mpilab) measure_bcast.c "
                    "$(pkg-config --cflags --libs mpilab) -o mb; "
                    "ldd ./mb | grep libmpilab; echo LD=${LD_LIBRARY_PATH-unset}", tmp_path)
    assert p.returncode == 0, p.stderr
    assert str(REPO / ".venv") in p.stdout and "LD=unset" in p.stdout, p.stdout
    launcher = ["mpirun", "--oversubscribe"] if shutil.which("ompi_info") else ["mpiexec"]
    run = subprocess.run([*launcher, "-np", "2", str(tmp_path / "mb")], env=mpi_env(),
                         capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "bcast" in run.stdout


def test_cmake_find_package_and_man_pages(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(consumer C)\n"
        "find_package(mpilab REQUIRED)\n"
        "message(STATUS \"mpilab found: ${mpilab_DIR}\")\n")
    p = _clean_bash("cmake -S . -B b >/dev/null && grep -m1 mpilab_DIR b/CMakeCache.txt; "
                    "man -w mpilab-bench", tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert str(REPO / ".venv" / "lib" / "cmake" / "mpilab") in p.stdout
    assert str(REPO / ".venv" / "share" / "man" / "man1" / "mpilab-bench.1") in p.stdout


def test_deactivate_restores_the_paths(tmp_path: Path) -> None:
    p = _clean_bash("export PKG_CONFIG_PATH=/opt/x; . " + str(ACTIVATE) + "; "
                    "echo IN=$PKG_CONFIG_PATH; deactivate; "
                    "echo OUT=$PKG_CONFIG_PATH CM=${CMAKE_PREFIX_PATH-unset} "
                    "MAN=${MANPATH-unset}", tmp_path, activate=False)
    assert p.returncode == 0, p.stderr
    assert f"IN={REPO / '.venv' / 'lib' / 'pkgconfig'}:/opt/x" in p.stdout, p.stdout
    assert "OUT=/opt/x CM=unset MAN=unset" in p.stdout, p.stdout
