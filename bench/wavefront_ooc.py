#!/usr/bin/env python3
"""Out-of-core wavefront benchmark (the paper's Fig. 4, 7a, 7b) under a cgroup v1 memory limit.

Robust by construction: every configuration is run once per ROUND, configurations are
interleaved inside a round (A B C .. A B C ..; the order is rotated from round to round),
the page cache is dropped before every run, and each round measures the disk next to its
runs: a cold buffered read of a file as large as the data set and a buffered write + fsync,
both inside the same memory cgroup. Every target ratio is computed per round (runs of the
same round only) and reported as median, min and max over the rounds.

Configurations per round:
  * Fig. 7a: block and optimized layouts at each --blocks size (square blocks, P workers,
    1 wave, pread, I/O helper on); per round the ratio block-best / optimized-best, each
    at its own best block size of that round.
  * overlap: the optimized layout at --overlap-block without the I/O helper (--no-prefetch).
  * Fig. 7b: 1 vs 2 waves in two geometries: "chain" (--chain-workers workers, several
    block rows per band and few blocks per row: without chaining the bands run nearly one
    after the other, so chaining is expected to help) and "flat" (2 workers, one block row
    per band, many blocks per row: the flushed pipeline loses one block step of ~N/NB, so
    no measurable gain is expected).
  * I/O back ends: the Fig. 7a grid for each of --backends (pread with its helper thread,
    io_uring with --uring-depth blocks in flight per worker); a queue-depth sweep of io_uring
    (--depths) and mmap, both with the optimized layout at --overlap-block. Configurations
    whose resident buffers (see resident_bytes) would exceed 60% of the limit are skipped.
  * block chaining (--bc-block, --bc-workers, --bc-waves, --bc-iterations): in one geometry,
    band chaining with 1 and 2 waves and block chaining (--chain block) with each of
    --bc-waves; ratios band-1-wave / each, and each block-chained run against its own I/O
    bound (the engine's bytes per iteration, about 7/W matrices, at the round's disk
    bandwidths) and against the 1-wave bound.
  * I/O bound per round = 6 matrices / read bandwidth + 1 matrix / write bandwidth.

Needs root (cgroup v1 memory controller at /sys/fs/cgroup/memory, drop_caches).
Example:  python3 bench/wavefront_ooc.py --rows 4096 --cols 4096 --limit 192M --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import find_tool, write_json

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


def tool_run(tool: str, args: list[str]) -> None:
    p = subprocess.run([tool, *args], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"wavefront_ooc: {' '.join(args[:2])}: {p.stderr.strip()}")


def disk_bandwidth(cg: MemCgroup, d: Path, src: Path, wbytes: int) -> tuple[float, float]:
    """(read, write) bytes/s inside the cgroup: cold buffered read of `src` (as large as
    the data set) after drop_caches; buffered write of `wbytes` then fsync."""
    drop_caches()
    t0 = time.perf_counter()
    p = cg.run(["dd", f"if={src}", "of=/dev/null", "bs=4M"])
    tr = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"wavefront_ooc: dd read: {p.stderr.strip()}")
    f = d / "dd.bin"
    count = max(1, wbytes // (4 << 20))
    drop_caches()
    t0 = time.perf_counter()
    p = cg.run(["dd", "if=/dev/zero", f"of={f}", "bs=4M", f"count={count}", "conv=fsync"])
    tw = time.perf_counter() - t0
    f.unlink(missing_ok=True)
    if p.returncode != 0:
        raise SystemExit(f"wavefront_ooc: dd write: {p.stderr.strip()}")
    return src.stat().st_size / tr, count * (4 << 20) / tw


def resident_bytes(io: str, depth: int, mb: int, nb: int, rows: int, pf: bool = True,
                   chain: str = "band", waves: int = 1, band_rows: int = 1,
                   nbc: int = 1) -> int:
    """Engine buffers of one worker (docs/wavefront-engine.md): per slot the halo'd block, five
    coefficient blocks and an east-halo column; io_uring adds a block of scratch per slot,
    the others share one. Block chaining: a pool of band_rows * min(2W, nbc) slots (+2
    for the I/O helper's reads ahead, at most all blocks of the band) and a row of stored
    top frontiers. (`rows` is the row length N.)"""
    slots = depth if io == "uring" else (2 if pf else 1)
    extra = 0
    if chain == "block":
        slots = min(band_rows * min(2 * waves, nbc) + (2 if pf else 0), band_rows * nbc)
        extra = rows + nb + 2
    per_slot = (mb + 2) * (nb + 2) + 5 * mb * nb + mb
    scratch = (mb * nb + 4 + mb) * (slots if io == "uring" else 1)
    coef_scratch = 5 * mb * nb + 4  # allocated once per worker (untouched for block files)
    return 8 * (slots * per_slot + scratch + coef_scratch + rows + 2 * mb + nb + extra)


def summary(v: list[float]) -> dict[str, float]:
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


# the configurations: name -> (data, coef, layout, mb, nb, workers, waves, iters, pf, io,
# queue depth, chain)
Cfg = tuple[Path, Path, str, int, int, int, int, int, bool, str, int, str]


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--limit", default="192M", help="cgroup memory limit")
    ap.add_argument("--blocks", default="256,512,1024", help="square block sizes (Fig. 7a)")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--overlap-block", type=int, default=512,
                    help="block size of the prefetch on/off comparison")
    ap.add_argument("--chain-workers", type=int, default=4)
    ap.add_argument("--chain-block", default="256x512", help="MBxNB of the 'chain' geometry")
    ap.add_argument("--flat-nb", type=int, default=128, help="NB of the 'flat' geometry")
    ap.add_argument("--wave-iterations", type=int, default=3)
    ap.add_argument("--rowmajor", action="store_true",
                    help="also row-major at the largest block, round 1 only (slow)")
    ap.add_argument("--backends", default="pread,uring",
                    help="I/O back ends of the Fig. 7a grid (pread, uring, mmap)")
    ap.add_argument("--uring-depth", type=int, default=4,
                    help="blocks in flight per worker for the io_uring grid")
    ap.add_argument("--depths", default="2,4,8",
                    help="io_uring queue depths swept at --overlap-block (optimized)")
    ap.add_argument("--waves-io", default="pread", help="back end of the wave-chaining runs")
    ap.add_argument("--bc-block", default="2048x64",
                    help="MBxNB of the block-chaining comparison ('' to skip it)")
    ap.add_argument("--bc-workers", type=int, default=2)
    ap.add_argument("--bc-waves", default="2,3", help="waves of the block-chained runs")
    ap.add_argument("--bc-iterations", type=int, default=6,
                    help="iterations of the block-chaining comparison (a multiple of the waves)")
    ap.add_argument("--dir", default="/tmp/mpilab-wf-bench")
    ap.add_argument("--out", default=None, help="JSON summary (default DIR/wavefront_ooc.json)")
    return ap.parse_args()


def configs(a: argparse.Namespace, tool: str, d: Path, limit: int, blocks: list[int]
            ) -> tuple[dict[str, Cfg], list[str], list[int]]:
    """The runs by name (their files converted in d), those whose buffers fit in 60% of the
    memory limit; the back ends and the block-chained runs' waves that remain."""
    d0, c0 = d / "d0", d / "c0"
    cmb, cnb = (int(x) for x in a.chain_block.lower().split("x"))
    cfgs: dict[str, Cfg] = {}
    backends = [x for x in a.backends.split(",") if x]
    fits: dict[str, bool] = {}

    def add(name: str, cfg: Cfg) -> None:
        nbr = -(-a.rows // cfg[3])
        need = cfg[5] * resident_bytes(cfg[9], cfg[10], cfg[3], cfg[4], a.cols, cfg[8],
                                       cfg[11], cfg[6], -(-nbr // cfg[5]),
                                       -(-a.cols // cfg[4]))
        if need > 0.6 * limit:
            print(f"  skipped {name}: {need >> 20} MiB of buffers for a "
                  f"{limit >> 20} MiB limit", flush=True)
            fits[name] = False
            return
        fits[name] = True
        cfgs[name] = cfg

    ob = a.overlap_block
    for b in blocks:
        tool_run(tool, ["convert", "--quiet", "--layout", "block", "--mb", str(b), "--nb",
                        str(b), str(c0), str(d / f"c.{b}")])
        for lay in ("block", "optimized"):
            tool_run(tool, ["convert", "--quiet", "--layout", lay, "--mb", str(b), "--nb",
                            str(b), str(d0), str(d / f"d.{lay}.{b}")])
            for io in backends:
                qd = a.uring_depth if io == "uring" else 0
                add(f"{lay}/{b}/{io}", (d / f"d.{lay}.{b}", d / f"c.{b}", lay, b, b,
                                        a.workers, 1, a.iterations, True, io, qd, "band"))
    odata, ocoef = d / f"d.optimized.{ob}", d / f"c.{ob}"
    add(f"optimized/{ob}/noprefetch", (odata, ocoef, "optimized", ob, ob, a.workers, 1,
                                       a.iterations, False, "pread", 0, "band"))
    add(f"optimized/{ob}/mmap", (odata, ocoef, "optimized", ob, ob, a.workers, 1,
                                 a.iterations, True, "mmap", 0, "band"))
    for qd in (int(x) for x in a.depths.split(",") if x):
        if qd != a.uring_depth or "uring" not in backends:
            add(f"optimized/{ob}/uring{qd}", (odata, ocoef, "optimized", ob, ob, a.workers,
                                              1, a.iterations, True, "uring", qd, "band"))
    fmb = -(-a.rows // 2)
    for geo, (mb, nb, pw) in {"chain": (cmb, cnb, a.chain_workers),
                              "flat": (fmb, a.flat_nb, 2)}.items():
        tool_run(tool, ["convert", "--quiet", "--layout", "optimized", "--mb", str(mb),
                        "--nb", str(nb), str(d0), str(d / f"d.{geo}")])
        tool_run(tool, ["convert", "--quiet", "--layout", "block", "--mb", str(mb),
                        "--nb", str(nb), str(c0), str(d / f"c.{geo}")])
        wio = a.waves_io
        for w in (1, 2):
            add(f"{geo}/waves{w}", (d / f"d.{geo}", d / f"c.{geo}", "optimized", mb, nb,
                                    pw, w, a.wave_iterations, True, wio,
                                    a.uring_depth if wio == "uring" else 0, "band"))
    bc_waves = [int(x) for x in a.bc_waves.split(",") if x] if a.bc_block else []
    if bc_waves:
        bmb, bnb = (int(x) for x in a.bc_block.lower().split("x"))
        tool_run(tool, ["convert", "--quiet", "--layout", "optimized", "--mb", str(bmb),
                        "--nb", str(bnb), str(d0), str(d / "d.bc")])
        tool_run(tool, ["convert", "--quiet", "--layout", "block", "--mb", str(bmb),
                        "--nb", str(bnb), str(c0), str(d / "c.bc")])
        for chain, w in [("band", 1), ("band", 2)] + [("block", w) for w in bc_waves]:
            add(f"bc/{chain}{w}", (d / "d.bc", d / "c.bc", "optimized", bmb, bnb,
                                   a.bc_workers, w, a.bc_iterations, True, "pread", 0,
                                   chain))
        bc_waves = [w for w in bc_waves if f"bc/block{w}" in cfgs]
    return cfgs, backends, bc_waves


def run(tool: str, cg: MemCgroup, d: Path, mat: int, name: str, cfg: Cfg) -> dict[str, Any]:
    """One run of configuration `name` inside the cgroup, caches dropped: its times,
    volumes, memory and per-worker accounting (printed on one line)."""
    data, coef, lay, mb, nb, pw, waves, iters, pf, io, qd, chain = cfg
    out = d / "run.json"
    cmd = [tool, "run", "--data", str(data), "--coef", str(coef), "--iterations",
           str(iters), "--workers", str(pw), "--waves", str(waves), "--io", io,
           "--chain", chain, "--json", str(out), "--quiet"]
    if qd:
        cmd += ["--queue-depth", str(qd)]
    if lay == "rowmajor":
        cmd += ["--mb", str(mb), "--nb", str(nb)]
    if not pf:
        cmd.append("--no-prefetch")
    drop_caches()
    cg.reset_peak()
    f0 = cg.failcnt()
    p = cg.run(cmd)
    if p.returncode != 0:
        raise SystemExit(f"wavefront_ooc: run {name} failed: {p.stderr.strip()}")
    wf = json.loads(out.read_text())["wavefront"]
    pwk = wf["per_worker"]
    r = {"name": name, "time_per_iteration_s": wf["time_per_iteration_s"],
         "iteration_s": wf["iteration_s"], "bytes_read": wf["bytes_read"],
         "bytes_written": wf["bytes_written"], "dev_read_bytes": wf["dev_read_bytes"],
         "dev_write_bytes": wf["dev_write_bytes"],
         "peak_rss_bytes": wf["peak_rss_bytes"], "cgroup_peak_bytes": cg.peak(),
         "buffer_bytes": wf["buffer_bytes"], "iterations": iters,
         "cgroup_limit_hits": cg.failcnt() - f0, "per_worker": pwk}
    acc = {k: sum(x[k] for x in pwk) / len(pwk)
           for k in ("compute_s", "io_wait_s", "dep_wait_s", "io_busy_s")}
    dev = wf["dev_read_bytes"]
    print(f"  {name:30s} {r['time_per_iteration_s']:7.3f} s/iter  per worker: compute "
          f"{acc['compute_s']:.2f} io-wait {acc['io_wait_s']:.2f} dep-wait "
          f"{acc['dep_wait_s']:.2f} s; dev read "
          f"{(dev or 0) / iters / mat:.2f} mat/iter (engine "
          f"{(wf['bytes_read'] + wf['bytes_written']) / iters / mat:.2f}); RSS "
          f"{r['peak_rss_bytes'] >> 20} MiB (buffers {wf['buffer_bytes'] >> 20}), cg "
          f"{r['cgroup_peak_bytes'] >> 20} MiB",
          flush=True)
    return r


def round_ratios(rd: dict[str, Any], runs: dict[str, dict[str, Any]], blocks: list[int],
                 backends: list[str], bc_waves: list[int], overlap_block: int) -> str:
    """The round's ratios (same round, side by side) into rd["ratios"], its best and fastest
    configurations into rd; returns the fastest."""
    bound = rd["io_bound_s"]
    bw_r, bw_w = rd["read_Bps"], rd["write_Bps"]
    t = {n: r["time_per_iteration_s"] for n, r in runs.items()}

    def best_of(prefix: str, suffix: str, t: dict[str, float] = t) -> str:
        c = [f"{prefix}/{b}/{suffix}" for b in blocks if f"{prefix}/{b}/{suffix}" in t]
        return min(c, key=t.__getitem__)

    rd["ratios"] = {}
    best: dict[str, str] = {}
    for io in backends:
        best[f"block/{io}"] = best_of("block", io)
        best[f"optimized/{io}"] = best_of("optimized", io)
        rd["ratios"][f"block_best_over_optimized_best/{io}"] = (
            t[best[f"block/{io}"]] / t[best[f"optimized/{io}"]])
    if "pread" in backends and "uring" in backends:
        for lay in ("block", "optimized"):
            rd["ratios"][f"pread_best_over_uring_best/{lay}"] = (
                t[best[f"{lay}/pread"]] / t[best[f"{lay}/uring"]])
    # fastest among the configurations that move every matrix every iteration (the
    # block-chained runs have their own, W-fold lower bound below)
    fastest = min((n for n in t if n != "rowmajor" and not n.startswith("bc/block")),
                  key=lambda n: t[n])
    rd["best"] = best
    rd["fastest"] = fastest
    rd["ratios"]["fastest_over_io_bound"] = t[fastest] / bound
    ob = overlap_block
    ref_pf = f"optimized/{ob}/pread"
    if ref_pf in t:
        for n in (f"optimized/{ob}/noprefetch", f"optimized/{ob}/mmap"):
            if n in t:
                rd["ratios"][f"{n.split('/')[-1]}_over_pread"] = t[n] / t[ref_pf]
    rd["ratios"]["chain_waves1_over_waves2"] = t["chain/waves1"] / t["chain/waves2"]
    rd["ratios"]["flat_waves1_over_waves2"] = t["flat/waves1"] / t["flat/waves2"]
    if bc_waves and "bc/band1" in t and "bc/band2" in t:
        rd["ratios"]["bc_band1_over_band2"] = t["bc/band1"] / t["bc/band2"]
        rd["bound_w"] = {}
        for w in bc_waves:
            n = f"bc/block{w}"
            r = runs[n]
            # what must move per iteration for this run: its own engine bytes
            bw_bound = ((r["bytes_read"] / bw_r + r["bytes_written"] / bw_w)
                        / r["iterations"])
            rd["bound_w"][n] = bw_bound
            rd["ratios"][f"bc_band1_over_block{w}"] = t["bc/band1"] / t[n]
            rd["ratios"][f"bc_band2_over_block{w}"] = t["bc/band2"] / t[n]
            rd["ratios"][f"bc_block{w}_over_own_bound"] = t[n] / bw_bound
            rd["ratios"][f"bc_block{w}_over_1wave_bound"] = t[n] / bound
            rd["ratios"][f"bc_block{w}_over_best_optimized"] = (
                t[n] / t[best[f"optimized/{backends[0]}"]])
    return fastest


def summarize(res: dict[str, Any], names: list[str], backends: list[str], bc_waves: list[int],
              nrounds: int) -> None:
    """res["summary"] over the rounds (median, min, max of every ratio and time), printed
    beside the targets."""
    keys = list(res["rounds"][0]["ratios"])
    res["summary"] = {k: summary([r["ratios"][k] for r in res["rounds"]]) for k in keys}
    res["summary"]["io_bound_s"] = summary([r["io_bound_s"] for r in res["rounds"]])
    res["summary"]["time_per_iteration_s"] = {
        n: summary([r["runs"][n]["time_per_iteration_s"] for r in res["rounds"]])
        for n in names}
    allr = [x for r in res["rounds"] for x in r["runs"].values()]
    res["summary"]["max_cgroup_peak_bytes"] = max(x["cgroup_peak_bytes"] for x in allr)
    res["summary"]["max_peak_rss_bytes"] = max(x["peak_rss_bytes"] for x in allr)
    target = {"fastest_over_io_bound": "<= 1.30", "chain_waves1_over_waves2": "> 1",
              "flat_waves1_over_waves2": "~1 expected", "bc_band1_over_band2": "> 1"}
    for w in bc_waves:
        target[f"bc_band1_over_block{w}"] = "> 1"
    for io in backends:
        target[f"block_best_over_optimized_best/{io}"] = ">= 1.20"
    print(f"summary over {nrounds} rounds (median [min, max]):")
    for k in keys:
        s = res["summary"][k]
        print(f"  {k:40s} {s['median']:.3f} [{s['min']:.3f}, {s['max']:.3f}]  "
              f"{('target ' + target[k]) if k in target else ''}")
    for n in names:
        s = res["summary"]["time_per_iteration_s"][n]
        print(f"  {n:30s} {s['median']:.3f} s/iter [{s['min']:.3f}, {s['max']:.3f}]")
    print(f"  peak cgroup memory {res['summary']['max_cgroup_peak_bytes'] >> 20} MiB, "
          f"peak RSS {res['summary']['max_peak_rss_bytes'] >> 20} MiB")


def main() -> int:
    a = parse_args()
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
                           "dataset_bytes": total, "limit_bytes": limit, "workers": a.workers,
                           "rounds": [], "convert": [], "command": " ".join(sys.argv)}
    print(f"data set {total / 2**30:.2f} GiB (6 matrices {a.rows}x{a.cols}), memory limit "
          f"{limit / 2**20:.0f} MiB ({total / limit:.1f}x smaller), {a.rounds} rounds",
          flush=True)
    d0, c0 = d / "d0", d / "c0"
    tool_run(tool, ["create", "--rows", str(a.rows), "--cols", str(a.cols), "--seed", "1",
                    str(d0), str(c0)])
    ref = d / "ref.bin"  # a file as large as the data set, for the cold-read bandwidth
    subprocess.run(["dd", "if=/dev/urandom", f"of={ref}", "bs=4M",
                    f"count={total // (4 << 20)}"], check=True, capture_output=True)

    cg = MemCgroup(limit)
    try:
        def conv(src: Path, dst: Path, lay: str, mb: int, nb: int) -> float:
            drop_caches()
            t0 = time.perf_counter()
            blk = ["--mb", str(mb), "--nb", str(nb)] if mb else []
            p = cg.run([tool, "convert", "--quiet", "--layout", lay, *blk, str(src), str(dst)])
            if p.returncode != 0:
                raise SystemExit(f"wavefront_ooc: convert: {p.stderr.strip()}")
            return time.perf_counter() - t0

        # Fig. 4: pre/post-processing of the data matrix, inside the cgroup
        b0 = blocks[len(blocks) // 2]
        for lay in ("block", "optimized"):
            t_pre = conv(d0, d / "pre", lay, b0, b0)
            t_post = conv(d / "pre", d / "post", "rowmajor", 0, 0)
            res["convert"].append({"layout": lay, "block": b0, "pre_s": t_pre, "post_s": t_post})
            print(f"pre-processing to {lay} ({b0}x{b0}): {t_pre:.2f} s, post-processing "
                  f"{t_post:.2f} s ({mat / 2**20:.0f} MiB matrix)", flush=True)
        for f in ("pre", "post"):
            (d / f).unlink()

        cfgs, backends, bc_waves = configs(a, tool, d, limit, blocks)
        res["configs"] = {k: {"layout": v[2], "mb": v[3], "nb": v[4], "workers": v[5],
                              "waves": v[6], "iterations": v[7], "prefetch": v[8], "io": v[9],
                              "queue_depth": v[10], "chain": v[11]}
                          for k, v in cfgs.items()}

        names = list(cfgs)
        for rnd in range(a.rounds):
            rot = names[rnd % len(names):] + names[:rnd % len(names)]
            print(f"round {rnd + 1}/{a.rounds}", flush=True)
            bw_r, bw_w = disk_bandwidth(cg, d, ref, mat)
            bound = 6 * mat / bw_r + mat / bw_w
            print(f"  disk (in the cgroup): cold read {bw_r / 1e6:.0f} MB/s, write+fsync "
                  f"{bw_w / 1e6:.0f} MB/s; I/O bound {bound:.3f} s/iter", flush=True)
            runs = {n: run(tool, cg, d, mat, n, cfgs[n]) for n in rot}
            if a.rowmajor and rnd == 0:
                bmax = max(blocks)
                cfgs["rowmajor"] = (d0, c0, "rowmajor", bmax, bmax, a.workers, 1, 1, True,
                                    backends[0], a.uring_depth if backends[0] == "uring" else 0,
                                    "band")
                runs["rowmajor"] = run(tool, cg, d, mat, "rowmajor", cfgs["rowmajor"])
                del cfgs["rowmajor"]
            rd = {"read_Bps": bw_r, "write_Bps": bw_w, "io_bound_s": bound, "runs": runs}
            fastest = round_ratios(rd, runs, blocks, backends, bc_waves, a.overlap_block)
            print("  ratios: " + ", ".join(f"{k} {v:.3f}" for k, v in rd["ratios"].items())
                  + f"; fastest {fastest}", flush=True)
            res["rounds"].append(rd)

        summarize(res, names, backends, bc_waves, a.rounds)
    finally:
        cg.close()
        for f in d.iterdir():
            if f.is_file() and f.name != "wavefront_ooc.json":
                f.unlink()
    out = Path(a.out) if a.out else d / "wavefront_ooc.json"
    write_json(out, res)
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
