"""What the emulated-disk wavefront benchmarks share (bench/wavefront_disk.py,
bench/wavefront_stripe.py): dropping our files' pages, the disk's request and byte counters,
the model-aware and bandwidth-only I/O bounds, a median [min, max] summary. A library of
bench/, not a script (moved unchanged from wavefront_disk.py, issue 27: scripts no longer
import each other)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path
from typing import Any

import harness  # noqa: F401  (python/ on the import path)
from mpilab.disk import dev
from mpilab.disk import spec as specmod


def run_wf(tool: str, prefix: str, *args: str,
           inside: bool = False) -> subprocess.CompletedProcess[str]:
    """`mpilab-wavefront ARGS` (tool), inside the emulated disk's cgroups when `inside`; a
    failure ends the script with the command and its reason (a signal: the memory limit?)."""
    cmd = [tool, *args]
    pre = (lambda: dev.join_cgroup(prefix)) if inside else None
    p = subprocess.run(cmd, capture_output=True, text=True, check=False,
                       preexec_fn=pre)  # noqa: PLW1509
    if p.returncode != 0:
        why = p.stderr.strip() or (f"killed by signal {-p.returncode} (the memory limit?)"
                                   if p.returncode < 0 else f"exit status {p.returncode}")
        raise SystemExit(f"{' '.join(cmd)}: {why}")
    return p


def drop_pages(paths: list[Path]) -> None:
    """Write back and drop the pages of our files (not the whole machine's cache)."""
    for p in paths:
        if not p.exists():
            continue
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Counters:
    """The cgroup's throttle accounting for one device (v1), or the seek model's stats."""

    def __init__(self, prefix: str, info: dict[str, Any]) -> None:
        self.cg = dev.cgroup_dir(prefix)
        self.devnum = info.get("devnum")
        self.stats = Path(info["stats"]) if info.get("stats") else None

    def read(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.stats is not None:
            try:
                out.update(json.loads(self.stats.read_text()))
            except (OSError, ValueError):
                pass
            return out
        for f, key in (("io_serviced", "req"), ("io_service_bytes", "bytes")):
            try:
                for ln in (self.cg / f"blkio.throttle.{f}").read_text().splitlines():
                    x = ln.split()
                    if len(x) == 3 and x[0] == self.devnum and x[1] in ("Read", "Write"):
                        out[f"{key}_{x[1].lower()}"] = float(x[2])
            except OSError:
                pass
        return out


def bounds(d: specmod.Disk, c0: dict[str, float], c1: dict[str, float]) -> dict[str, float]:
    dl = {k: c1.get(k, 0.0) - c0.get(k, 0.0) for k in set(c0) | set(c1)}
    if d.model == "throttle":
        rr, rb = dl.get("req_read", 0.0), dl.get("bytes_read", 0.0)
        wr, wb = dl.get("req_write", 0.0), dl.get("bytes_write", 0.0)
        return {"model": max(rr / d.read_iops, rb / d.read_bw, wr / d.write_iops,
                             wb / d.write_bw),
                "bandwidth": max(rb / d.read_bw, wb / d.write_bw),
                "dev_requests_read": rr, "dev_requests_written": wr,
                "dev_bytes_read": rb, "dev_bytes_written": wb}
    busy = dl.get("busy_s", 0.0)
    byts = dl.get("bytes_read", 0.0) + dl.get("bytes_written", 0.0)
    return {"model": busy, "bandwidth": byts / d.rate,
            "dev_requests_read": dl.get("reads", 0.0),
            "dev_requests_written": dl.get("writes", 0.0),
            "dev_bytes_read": dl.get("bytes_read", 0.0),
            "dev_bytes_written": dl.get("bytes_written", 0.0), "seeks": dl.get("seeks", 0.0)}


def summary(v: list[float]) -> str:
    v = [x for x in v if x == x]
    if not v:
        return "-"
    return f"{statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]"
