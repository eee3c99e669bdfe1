"""How many MPI ranks this machine can start (memory, process ids, open files): checked by
the launchers before they start a job (mpilab.launch, mpilab.testbed.launch), so that a rank
count the machine cannot hold is refused in one line instead of a hung or half-started
mpirun. A leaf module: it imports nothing of mpilab."""

from __future__ import annotations

import os
from pathlib import Path

RANK_MEMORY = 32 << 20  # an Open MPI rank with its share of orted, measured ~20-30 MiB
RANK_FDS = 4  # file descriptors orted keeps per local rank (stdio forwarding, pipes)


def max_ranks(nodes: int) -> tuple[int, str]:
    """(the most ranks mpirun can start on this machine, the resource that limits it):
    available memory, free process ids, and the open-file limit of each node's orted.
    Asking for more would make mpirun hang or fail half-way."""
    import resource

    limits: list[tuple[int, str]] = []
    try:
        with open("/proc/meminfo") as f:
            kb = next(int(ln.split()[1]) for ln in f if ln.startswith("MemAvailable:"))
        limits.append((kb * 1024 // RANK_MEMORY,
                       f"{kb >> 10} MiB available at {RANK_MEMORY >> 20} MiB per rank"))
    except (OSError, StopIteration, ValueError):
        pass
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        used = sum(1 for d in os.listdir("/proc") if d.isdigit())
        limits.append(((pid_max - used) // 2, f"{pid_max - used} free process ids"))
    except (OSError, ValueError):
        pass
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile != resource.RLIM_INFINITY:
        limits.append((max(1, (nofile - 64) // RANK_FDS) * nodes,
                       f"open-file limit {nofile} per orted on {nodes} node(s)"))
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if nproc != resource.RLIM_INFINITY:
        limits.append((nproc // 2, f"process limit {nproc}"))
    return min(limits) if limits else (1 << 20, "no limit found")
