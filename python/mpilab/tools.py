"""Locating mpilab's C tools and launching MPI jobs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mpilab.errors import MpilabError

REPO = Path(__file__).resolve().parents[2]


def find_tool(name: str) -> str:
    """Path of a C tool: $MPILAB_BIN, then the source tree's build/bin, then PATH."""
    candidates = []
    if os.environ.get("MPILAB_BIN"):
        candidates.append(Path(os.environ["MPILAB_BIN"]) / name)
    candidates.append(REPO / "build" / "bin" / name)
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which(name)
    if found:
        return found
    raise MpilabError(f"{name}: tool not found (build it with 'make build' or set MPILAB_BIN)")


def mpi_env() -> dict[str, str]:
    """Environment for launching Open MPI jobs (also as root)."""
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def mpirun_prefix(np: int, extra: list[str] | None = None) -> list[str]:
    """Open MPI's mpirun command prefix for np local ranks (mpilab.launch's flags)."""
    from mpilab import launch

    return launch.Launcher("mpirun", launch.find_executable("mpirun"), "openmpi",
                           list(extra or [])).command(np)
