"""Locating mpilab's C tools and launching MPI jobs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mpilab.errors import MpilabError

REPO = Path(__file__).resolve().parents[2]


#: `mpilab --mpi NAME`: the build of this checkout whose tools run (simulated runs take the
#: SMPI build through --sim, mpilab.sim.run)
MPI_BUILDS = {"openmpi": "build", "mpich": "build-mpich"}


def select_mpi(name: str) -> Path:
    """`mpilab --mpi NAME`: point MPILAB_BIN at that build's bin/ (scripts/build, scripts/build
    --mpich), refused in one line when that build does not exist."""
    if name not in MPI_BUILDS:
        raise MpilabError(f"--mpi {name}: expected one of {', '.join(MPI_BUILDS)}")
    d = REPO / MPI_BUILDS[name] / "bin"
    if not (d / "mpilab-bench").is_file():
        flag = {"openmpi": "", "mpich": " --mpich"}[name]
        raise MpilabError(f"--mpi {name}: {d.parent} is not built (scripts/build{flag})")
    os.environ["MPILAB_BIN"] = str(d)
    return d


def find_tool(name: str) -> str:
    """Path of a C tool: $MPILAB_BIN (and only there when it is set: a wrong or incomplete
    build directory is an error, never a silent fallback to another MPI's build), else the
    source tree's build/bin, then PATH."""
    bin_dir = os.environ.get("MPILAB_BIN")
    if bin_dir:
        c = Path(bin_dir) / name
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
        if not Path(bin_dir).is_dir():
            raise MpilabError(f"MPILAB_BIN={bin_dir}: no such directory (a build's bin/, "
                              "or choose a build with mpilab --mpi openmpi|mpich)")
        raise MpilabError(f"{name}: not in MPILAB_BIN={bin_dir} (that build has no {name})")
    c = REPO / "build" / "bin" / name
    if c.is_file() and os.access(c, os.X_OK):
        return str(c)
    found = shutil.which(name)
    if found:
        return found
    raise MpilabError(f"{name}: tool not found (build it with 'make build' or set MPILAB_BIN)")


def data_dir() -> Path:
    """Where mpilab keeps what it learns about a machine: $MPILAB_DATA_DIR, else
    $XDG_DATA_HOME/mpilab, else ~/.local/share/mpilab."""
    d = os.environ.get("MPILAB_DATA_DIR")
    if d:
        return Path(d)
    x = os.environ.get("XDG_DATA_HOME")
    return Path(x) / "mpilab" if x else Path.home() / ".local" / "share" / "mpilab"


def mpi_env() -> dict[str, str]:
    """Environment for launching Open MPI jobs (also as root)."""
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env

