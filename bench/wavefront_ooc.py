#!/usr/bin/env python3
"""Out-of-core wavefront benchmark (the paper's Fig. 4, 7a, 7b) under a cgroup v1 memory limit.

In one run it measures the disk's sequential bandwidth (dd with O_DIRECT), times
pre/post-processing, then time per iteration versus block size for the row-major, block and
optimized layouts, wave chaining 1 vs 2 (vs 3) waves and pread vs mmap, each run after
dropping the page cache, inside a memory cgroup limited to at most a quarter of the data
set. It prints the ratios the issue targets and writes everything as JSON.

Needs root (cgroup v1 memory controller at /sys/fs/cgroup/memory, drop_caches).
Example:  python3 bench/wavefront_ooc.py --rows 6144 --cols 6144 --limit 256M
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from mpilab.fsutil import atomic_write_text  # noqa: E402
from mpilab.tools import find_tool  # noqa: E402

CG_ROOT = Path("/sys/fs/cgroup/memory")


def parse_size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    if t and t[-1] in mult:
        return int(t[:-1]) * mult[t[-1]]
    return int(t)


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


class MemCgroup:
    """A cgroup v1 memory group limited to `limit` bytes; removed by close()."""

    def __init__(self, limit: int) -> None:
        self.path = CG_ROOT / f"mpilab-wf-{os.getpid()}"
        self.path.mkdir()
        (self.path / "memory.limit_in_bytes").write_text(str(limit))
        self.limit = int((self.path / "memory.limit_in_bytes").read_text())

    def reset_peak(self) -> None:
        (self.path / "memory.max_usage_in_bytes").write_text("0")

    def peak(self) -> int:
        return int((self.path / "memory.max_usage_in_bytes").read_text())

    def failcnt(self) -> int:
        return int((self.path / "memory.failcnt").read_text())

    def run(self, cmd: list[str]) -> subprocess.CompletedProcess[str]:
        procs = str(self.path / "cgroup.procs")

        def enter() -> None:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        return subprocess.run(cmd, preexec_fn=enter, capture_output=True, text=True,
                              check=False)

    def close(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def dd_bandwidth(d: Path, size: int) -> tuple[float, float]:
    """Sequential write and read bandwidth (bytes/s) with O_DIRECT, 4 MiB requests."""
    f = d / "dd.bin"
    count = max(1, size // (4 << 20))
    t0 = time.perf_counter()
    subprocess.run(["dd", "if=/dev/zero", f"of={f}", "bs=4M", f"count={count}", "oflag=direct",
                    "conv=fsync"], check=True, capture_output=True)
    tw = time.perf_counter() - t0
    drop_caches()
    t0 = time.perf_counter()
    subprocess.run(["dd", f"if={f}", "of=/dev/null", "bs=4M", "iflag=direct"], check=True,
                   capture_output=True)
    tr = time.perf_counter() - t0
    f.unlink()
    nbytes = count * (4 << 20)
    return nbytes / tw, nbytes / tr


def tool_run(tool: str, args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([tool, *args], capture_output=True, text=True, check=False)
    if check and p.returncode != 0:
        raise SystemExit(f"wavefront_ooc: {' '.join(args[:2])}: {p.stderr.strip()}")
    return p


def timed_convert(tool: str, args: list[str]) -> float:
    drop_caches()
    t0 = time.perf_counter()
    tool_run(tool, ["convert", "--quiet", *args])
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=6144)
    ap.add_argument("--cols", type=int, default=6144)
    ap.add_argument("--limit", default="256M", help="cgroup memory limit")
    ap.add_argument("--blocks", default="256,512,1024", help="square block sizes to sweep")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--rowmajor-iterations", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the waves comparison")
    ap.add_argument("--dir", default="/tmp/mpilab-wf-bench")
    ap.add_argument("--out", default=None, help="JSON summary (default DIR/wavefront_ooc.json)")
    ap.add_argument("--keep", action="store_true", help="keep the data files")
    a = ap.parse_args()
    if os.geteuid() != 0 or not CG_ROOT.is_dir():
        sys.stderr.write("wavefront_ooc: needs root and the cgroup v1 memory controller\n")
        return 2
    tool = find_tool("mpilab-wavefront")
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    limit = parse_size(a.limit)
    blocks = [int(b) for b in a.blocks.split(",")]
    mat = a.rows * a.cols * 8
    total = 6 * mat
    if limit * 4 > total:
        sys.stderr.write(f"wavefront_ooc: limit {limit} is more than a quarter of the data "
                         f"set ({total} bytes)\n")
        return 2
    res: dict[str, Any] = {"rows": a.rows, "cols": a.cols, "matrix_bytes": mat,
                           "dataset_bytes": total, "limit_bytes": limit,
                           "workers": a.workers, "runs": [], "convert": []}
    print(f"data set {total / 2**30:.2f} GiB (6 matrices {a.rows}x{a.cols}), "
          f"memory limit {limit / 2**20:.0f} MiB", flush=True)
    d0, c0 = d / "d0", d / "c0"
    tool_run(tool, ["create", "--rows", str(a.rows), "--cols", str(a.cols), "--seed", "1",
                    str(d0), str(c0)])

    bw_w, bw_r = dd_bandwidth(d, min(total, 2 << 30))
    # a cold buffered sequential read of the problem's own files (page cache, readahead)
    drop_caches()
    t0 = time.perf_counter()
    buf = bytearray(8 << 20)
    for f in (d0, c0):
        with open(f, "rb", buffering=0) as fh:
            while fh.readinto(buf):
                pass
    bw_cold = total / (time.perf_counter() - t0)
    res["disk"] = {"seq_write_Bps": bw_w, "seq_read_Bps": bw_r, "cold_read_Bps": bw_cold,
                   "method": "dd O_DIRECT 4M; cold buffered read of the data files"}
    bw_r = max(bw_r, bw_cold)
    print(f"disk: dd O_DIRECT read {res['disk']['seq_read_Bps'] / 1e6:.0f} MB/s, cold buffered "
          f"read {bw_cold / 1e6:.0f} MB/s", flush=True)
    # bytes that must move per iteration: read data + 5 coefficients, write data
    io_bound = 6 * mat / bw_r + mat / bw_w
    res["io_bound_s"] = io_bound
    print(f"disk: sequential read {bw_r / 1e6:.0f} MB/s, write {bw_w / 1e6:.0f} MB/s; "
          f"I/O bound per iteration {io_bound:.3f} s", flush=True)

    cg = MemCgroup(limit)
    try:
        def run(data: Path, coef: Path, layout: str, b: int, waves: int, io: str,
                iters: int) -> dict[str, Any]:
            out = d / "run.json"
            cmd = [tool, "run", "--data", str(data), "--coef", str(coef),
                   "--iterations", str(iters), "--workers", str(a.workers),
                   "--waves", str(waves), "--io", io, "--json", str(out), "--quiet"]
            if layout == "rowmajor":
                cmd += ["--mb", str(b), "--nb", str(b)]
            drop_caches()
            cg.reset_peak()
            f0 = cg.failcnt()
            p = cg.run(cmd)
            if p.returncode != 0:
                raise SystemExit(f"wavefront_ooc: run failed: {p.stderr.strip()}")
            wf = json.loads(out.read_text())["wavefront"]
            r = {"layout": layout, "block": b, "waves": waves, "io": io, "iterations": iters,
                 "time_per_iteration_s": wf["time_per_iteration_s"],
                 "iteration_s": wf["iteration_s"], "bytes_read": wf["bytes_read"],
                 "bytes_written": wf["bytes_written"],
                 "io_bandwidth_Bps": wf["io_bandwidth_Bps"],
                 "peak_rss_bytes": wf["peak_rss_bytes"], "cgroup_peak_bytes": cg.peak(),
                 "cgroup_limit_hits": cg.failcnt() - f0}
            res["runs"].append(r)
            print(f"  {layout:9s} block {b:5d} waves {waves} {io:5s}: "
                  f"{r['time_per_iteration_s']:.3f} s/iter, RSS {r['peak_rss_bytes'] >> 20} MiB, "
                  f"cgroup peak {r['cgroup_peak_bytes'] >> 20} MiB", flush=True)
            return r

        # Fig. 4: pre/post-processing of the data matrix
        b0 = blocks[len(blocks) // 2]
        for lay in ("block", "optimized"):
            t_pre = timed_convert(tool, ["--layout", lay, "--mb", str(b0), "--nb", str(b0),
                                         str(d0), str(d / "pre")])
            t_post = timed_convert(tool, ["--layout", "rowmajor", str(d / "pre"),
                                          str(d / "post")])
            res["convert"].append({"layout": lay, "block": b0, "pre_s": t_pre, "post_s": t_post})
            print(f"pre-processing to {lay} ({b0}x{b0}): {t_pre:.2f} s, post-processing "
                  f"{t_post:.2f} s (read+write {2 * mat / 2**20:.0f} MiB)", flush=True)
        for f in ("pre", "post"):
            (d / f).unlink()

        # Fig. 7a: time per iteration versus block size, one wave
        print("Fig. 7a: time per iteration vs block size (1 wave, pread)", flush=True)
        for b in blocks:
            tool_run(tool, ["convert", "--quiet", "--layout", "block", "--mb", str(b), "--nb",
                            str(b), str(c0), str(d / f"c.{b}")])
            for lay in ("block", "optimized"):
                tool_run(tool, ["convert", "--quiet", "--layout", lay, "--mb", str(b), "--nb",
                                str(b), str(d0), str(d / f"d.{lay}.{b}")])
                run(d / f"d.{lay}.{b}", d / f"c.{b}", lay, b, 1, "pread", a.iterations)
            shutil.copyfile(d0, d / "d.rowmajor")
            run(d / "d.rowmajor", c0, "rowmajor", b, 1, "pread", a.rowmajor_iterations)

        def best(lay: str) -> dict[str, Any]:
            rs = [r for r in res["runs"] if r["layout"] == lay and r["waves"] == 1
                  and r["io"] == "pread"]
            return min(rs, key=lambda r: r["time_per_iteration_s"])

        bb, bo = best("block"), best("optimized")
        # Fig. 7b: wave chaining with the paper's blocking (one block row per worker band,
        # NB = the optimized layout's best), 1/2/3 waves interleaved over several rounds;
        # then the mmap back end at the same configuration.
        mbw = -(-a.rows // a.workers)
        nbw = bo["block"]
        print(f"Fig. 7b: waves, optimized layout, blocks {mbw}x{nbw} "
              f"({a.repeat} interleaved rounds)", flush=True)
        tool_run(tool, ["convert", "--quiet", "--layout", "optimized", "--mb", str(mbw),
                        "--nb", str(nbw), str(d0), str(d / "d.waves")])
        tool_run(tool, ["convert", "--quiet", "--layout", "block", "--mb", str(mbw),
                        "--nb", str(nbw), str(c0), str(d / "c.waves")])
        wt: dict[int, list[float]] = {1: [], 2: [], 3: []}
        mt: list[float] = []
        for _ in range(a.repeat):
            for w in (1, 2, 3):
                r = run(d / "d.waves", d / "c.waves", "optimized", nbw, w, "pread",
                        a.iterations)
                r["mb"] = mbw
                wt[w].append(r["time_per_iteration_s"])
            r = run(d / "d.waves", d / "c.waves", "optimized", nbw, 2, "mmap", a.iterations)
            r["mb"] = mbw
            mt.append(r["time_per_iteration_s"])
        med = {w: statistics.median(v) for w, v in wt.items()}
        res["waves"] = {"mb": mbw, "nb": nbw, "time_per_iteration_s": wt, "median": med,
                        "mmap_waves2": mt}
        w1 = {"time_per_iteration_s": med[1]}
        w2 = {"time_per_iteration_s": med[2]}
        w3 = {"time_per_iteration_s": med[3]}
        mm = {"time_per_iteration_s": statistics.median(mt)}
        allr = [r for r in res["runs"]]
        fastest = min(allr, key=lambda r: r["time_per_iteration_s"])
        ratios = {
            "block_best_over_optimized_best": bb["time_per_iteration_s"]
            / bo["time_per_iteration_s"],
            "best_over_io_bound": fastest["time_per_iteration_s"] / io_bound,
            "waves1_over_waves2": w1["time_per_iteration_s"] / w2["time_per_iteration_s"],
            "waves1_over_waves3": w1["time_per_iteration_s"] / w3["time_per_iteration_s"],
            "pread_over_mmap": w2["time_per_iteration_s"] / mm["time_per_iteration_s"],
            "max_cgroup_peak_over_dataset": max(r["cgroup_peak_bytes"] for r in allr) / total,
            "max_rss_over_dataset": max(r["peak_rss_bytes"] for r in allr) / total,
        }
        res["ratios"] = ratios
        res["best"] = {"block": bb, "optimized": bo, "fastest": fastest}
        print("ratios (same run):")
        print(f"  block best ({bb['block']}) / optimized best ({bo['block']}): "
              f"{ratios['block_best_over_optimized_best']:.3f}  (target >= 1.20)")
        print(f"  fastest ({fastest['layout']} {fastest['block']} waves {fastest['waves']} "
              f"{fastest['io']}) / I/O bound: {ratios['best_over_io_bound']:.3f}  "
              f"(target <= 1.30)")
        print(f"  medians over {a.repeat} rounds at {mbw}x{nbw}:")
        print(f"  1 wave / 2 waves: {ratios['waves1_over_waves2']:.3f}, 1 wave / 3 waves: "
              f"{ratios['waves1_over_waves3']:.3f}  (target > 1)")
        print(f"  pread / mmap (2 waves): {ratios['pread_over_mmap']:.3f}")
        print(f"  peak cgroup memory / data set: {ratios['max_cgroup_peak_over_dataset']:.3f}, "
              f"peak RSS / data set: {ratios['max_rss_over_dataset']:.3f}")
    finally:
        cg.close()
        if not a.keep:
            for f in d.iterdir():
                if f.is_file():
                    f.unlink()
    out = Path(a.out) if a.out else d / "wavefront_ooc.json"
    atomic_write_text(out, json.dumps(res, indent=1) + "\n")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
