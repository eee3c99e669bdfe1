#!/usr/bin/env python3
"""In-core wavefront benchmark: loop-23 throughput versus the memory-bandwidth bound.

Measures, in one run: the machine's triad bandwidth (`mpilab-wavefront bounds`, 1 and P
threads), the in-memory sequential loop's update rate, and the engine on files in tmpfs
(/dev/shm, so no disk) for the optimized layout with P workers. The bound is bandwidth / 56
bytes per element update (read data + 5 coefficients, write data). Prints the ratios and
writes JSON.

Example:  python3 bench/wavefront_incore.py --rows 2048 --cols 2048 --workers 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import find_tool, write_json


def bounds(tool: str, threads: int, rows: int, cols: int) -> dict[str, float]:
    p = subprocess.run([tool, "bounds", "--threads", str(threads), "--rows", str(rows),
                        "--cols", str(cols)], capture_output=True, text=True, check=True)
    out: dict[str, float] = {}
    for line in p.stdout.splitlines():
        k, v = line.split()
        out[k] = float(v)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=2048)
    ap.add_argument("--block", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--out", default="wavefront_incore.json")
    a = ap.parse_args()
    tool = find_tool("mpilab-wavefront")
    res: dict[str, Any] = {"rows": a.rows, "cols": a.cols, "block": a.block,
                           "workers": a.workers}
    b1 = bounds(tool, 1, a.rows, a.cols)
    bp = bounds(tool, a.workers, a.rows, a.cols)
    res["bounds_1thread"] = b1
    res["bounds_threads"] = bp
    updates = (a.rows - 2) * (a.cols - 2)
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="mpilab-wf-") as tmp:
        t = Path(tmp)
        subprocess.run([tool, "create", "--rows", str(a.rows), "--cols", str(a.cols),
                        str(t / "d0"), str(t / "c0")], check=True)
        for src, dst, lay in (("d0", "d", "optimized"), ("c0", "c", "block")):
            subprocess.run([tool, "convert", "--quiet", "--layout", lay, "--mb", str(a.block),
                            "--nb", str(a.block), str(t / src), str(t / dst)], check=True)
        engine: dict[str, float] = {}
        for io in ("pread", "mmap", "uring"):
            for workers in sorted({1, a.workers}):
                subprocess.run([tool, "run", "--data", str(t / "d"), "--coef", str(t / "c"),
                                "--iterations", str(a.iterations), "--workers", str(workers),
                                "--waves", "2", "--io", io, "--no-drop-behind", "--quiet",
                                "--json", str(t / "r.json")], check=True)
                wf = json.loads((t / "r.json").read_text())["wavefront"]
                best = min(wf["iteration_s"])
                engine[f"{io}_P{workers}"] = updates / best
    res["engine_updates_per_s"] = engine
    bound1 = b1["kernel_bound_updates_per_s"]
    boundp = bp["kernel_bound_updates_per_s"]
    print(f"triad bandwidth: {b1['triad_bandwidth_Bps'] / 1e9:.2f} GB/s (1 thread), "
          f"{bp['triad_bandwidth_Bps'] / 1e9:.2f} GB/s ({a.workers} threads)")
    print(f"bound (bandwidth / 56 B): {bound1 / 1e6:.1f} M updates/s (1 thread), "
          f"{boundp / 1e6:.1f} M updates/s ({a.workers} threads)")
    print(f"in-memory sequential loop: {b1['kernel_updates_per_s'] / 1e6:.1f} M updates/s = "
          f"{b1['kernel_updates_per_s'] / bound1:.2f} of the 1-thread bound")
    for k, v in engine.items():
        ref = bound1 if k.endswith("_P1") else boundp
        print(f"engine on tmpfs, {k}: {v / 1e6:.1f} M updates/s = {v / ref:.2f} of the bound")
    res["ratios"] = {"sequential_over_bound": b1["kernel_updates_per_s"] / bound1,
                     **{f"engine_{k}_over_bound": v / (bound1 if k.endswith("_P1") else boundp)
                        for k, v in engine.items()}}
    write_json(a.out, res)
    print(f"results: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
