"""Unmodified benchmarks for `mpilab tune validate --with`: Intel MPI Benchmarks (IMB-MPI1)
and the OSU micro-benchmarks (osu_bcast, osu_allreduce, ...), run as their users run them,
each launch once with the exported file and once without (mpilab.tune.validate).

Each launch of a benchmark gives one figure per collective and size, its headline time:
IMB's t_avg[usec] and OSU's "Avg Latency(us)". The figure of a launch is what is compared
(the launch is the unit of replication, mpilab.tune.stats); the benchmarks' own repetitions
stay inside their figure.

Found: `--with imb|osu|mpilab|auto|PATH`; auto is IMB-MPI1 on PATH, else osu_bcast on PATH,
else mpilab's own loop (mpilab-bench); a PATH is IMB-MPI1 itself, or a folder (or a program
in a folder) holding osu_<collective> programs."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mpilab.errors import MpilabError

IMB_NAMES = {"bcast": "Bcast", "allreduce": "Allreduce", "reduce": "Reduce",
             "allgather": "Allgather", "alltoall": "Alltoall", "gather": "Gather",
             "scatter": "Scatter", "barrier": "Barrier", "reduce_scatter": "Reduce_scatter"}
OSU_NAMES = {"bcast": "osu_bcast", "allreduce": "osu_allreduce", "reduce": "osu_reduce",
             "allgather": "osu_allgather", "alltoall": "osu_alltoall", "gather": "osu_gather",
             "scatter": "osu_scatter", "barrier": "osu_barrier",
             "reduce_scatter": "osu_reduce_scatter"}

#: a launch's figures: (collective, bytes) -> time (s)
Figures = dict[tuple[str, int], float]
#: (ranks, launcher arguments that load the file, program and its arguments) -> command
Launch = Callable[[int, list[str], list[str]], list[str]]


@dataclass(frozen=True)
class Peer:
    kind: str    # "imb" or "osu"
    path: str    # IMB-MPI1, or the folder of the osu_* programs

    def describe(self) -> str:
        return f"{'IMB-MPI1' if self.kind == 'imb' else 'OSU'} ({self.path})"

    def program(self, op: str) -> str:
        return self.path if self.kind == "imb" else str(Path(self.path) / OSU_NAMES[op])


def find(spec: str) -> Peer | None:
    """The benchmark `--with` names (None: mpilab's own loop), or one line."""
    if spec == "mpilab":
        return None
    if spec in ("auto", "imb", "osu"):
        imb = shutil.which("IMB-MPI1") if spec in ("auto", "imb") else None
        if imb:
            return Peer("imb", imb)
        osu = shutil.which("osu_bcast") if spec in ("auto", "osu") else None
        if osu:
            return Peer("osu", str(Path(osu).parent))
        if spec == "auto":
            return None
        raise MpilabError(f"--with {spec}: {'IMB-MPI1' if spec == 'imb' else 'osu_bcast'} is "
                          "not on PATH (give its path)")
    p = Path(spec)
    if p.is_dir():
        if not (p / "osu_bcast").is_file() and not any(p.glob("osu_*")):
            raise MpilabError(f"--with {spec}: a folder without osu_* programs")
        return Peer("osu", str(p))
    if not p.is_file() or not os.access(p, os.X_OK):
        raise MpilabError(f"--with {spec}: not an executable program or a folder of OSU's")
    if p.name.startswith("IMB-"):
        return Peer("imb", str(p))
    if p.name.startswith("osu_"):
        return Peer("osu", str(p.parent))
    raise MpilabError(f"--with {spec}: neither IMB-MPI1 nor an osu_* program")


def check_ops(peer: Peer, ops: list[str]) -> None:
    names = IMB_NAMES if peer.kind == "imb" else OSU_NAMES
    bad = [o for o in ops if o not in names]
    if bad:
        raise MpilabError(f"--with: {peer.describe()} has no benchmark for {bad[0]}")
    if peer.kind == "osu":
        missing = [o for o in ops if not Path(peer.program(o)).is_file()]
        if missing:
            raise MpilabError(f"--with: {peer.program(missing[0])} does not exist")


def commands(peer: Peer, np: int, ops: list[str], sizes: list[int], file_args: list[str],
             launch: Launch, msglen: Path, seconds: float) -> list[list[str]]:
    """The commands of one launch side (IMB: one command; OSU: one per collective)."""
    sized = [s for s in sizes if s > 0]
    if peer.kind == "imb":
        msglen.write_text("".join(f"{s}\n" for s in sized or [0]))
        args = ["-npmin", str(np), "-msglen", str(msglen), "-time", f"{seconds:g}",
                "-mem", "2", *[IMB_NAMES[o] for o in ops]]
        return [launch(np, file_args, [peer.path, *args])]
    out = []
    for o in ops:
        args = [] if o == "barrier" else ["-m", f"{min(sized or [1])}:{max(sized or [1])}"]
        out.append(launch(np, file_args, [peer.program(o), *args]))
    return out


_IMB_HEAD = re.compile(r"^# Benchmarking (\S+)")
_NUM_ROW = re.compile(r"^\s*\d")


def parse_imb(text: str, np: int) -> Figures:
    """IMB-MPI1's tables: per benchmark and #processes, rows of bytes, repetitions, t_min,
    t_max, t_avg (usec; Barrier without bytes)."""
    names = {v: k for k, v in IMB_NAMES.items()}
    out: Figures = {}
    op, procs = None, None
    for line in text.splitlines():
        m = _IMB_HEAD.match(line)
        if m:
            op, procs = names.get(m.group(1)), None
            continue
        if line.startswith("# #processes"):
            try:
                procs = int(line.split("=")[1].split()[0])
            except (IndexError, ValueError):
                procs = None
            continue
        if op is None or procs != np or not _NUM_ROW.match(line):
            continue
        f = line.split()
        try:
            if op == "barrier" and len(f) == 4:
                out[(op, 0)] = float(f[3]) * 1e-6
            elif len(f) >= 5:
                out[(op, int(f[0]))] = float(f[4]) * 1e-6
        except ValueError:
            continue
    return out


def parse_osu(text: str, op: str) -> Figures:
    """An OSU collective's table: size and average latency (us) per row (osu_barrier: the
    average latency alone)."""
    out: Figures = {}
    for line in text.splitlines():
        if not _NUM_ROW.match(line):
            continue
        f = line.split()
        try:
            if op == "barrier":
                out[(op, 0)] = float(f[0]) * 1e-6
            elif len(f) >= 2:
                out[(op, int(f[0]))] = float(f[1]) * 1e-6
        except ValueError:
            continue
    return out
