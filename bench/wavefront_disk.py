#!/usr/bin/env python3
"""The paper's figures on an emulated disk (mpilab disk): Fig. 7a (time per iteration
against block size for the row-major, block and optimized layouts), Fig. 7b (1 against 2
waves) and Fig. 4 (pre- and post-processing times), with the I/O bound of every run
computed from the device model beside the bandwidth-only bound.

Robust by construction: every configuration runs once per round, interleaved (the order
rotated from round to round); ratios are taken inside a round; medians [min, max] over
the rounds are reported. Every run starts with the files' pages dropped from the page
cache (posix_fadvise DONTNEED on our files only: the machine is shared) and runs inside
the disks' cgroup(s) (`mpilab disk run`), so the caps of the disk model apply.

Device model and bounds (request-capped disks, model "throttle"): from the cgroup's own
accounting of the run (blkio.throttle.io_serviced / io_service_bytes deltas for the
disk's device: the requests and bytes the throttle charged) the model-aware bound is
    max(requests_read / read_iops, bytes_read / read_bw,
        requests_written / write_iops, bytes_written / write_bw)
(reads and writes are capped independently), the bandwidth-only bound
    max(bytes_read / read_bw, bytes_written / write_bw).
For a seek-model disk (mpilab-seekfs), the model's own busy time during the run (the sum
of the modelled costs of the requests it served, read from its statistics file) is the
bound; the bandwidth-only bound is the bytes at the transfer rate.

Example (as root, the disk spec examples/disk/hdd.toml: 200 IOPS, 150 MB/s):
  python3 bench/wavefront_disk.py --spec examples/disk/hdd.toml --rows 3072 --cols 3072 \\
      --blocks 192,384,768 --rounds 3 --out /tmp/wfd
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import REPO, env, find_tool
from mpilab.disk import dev
from mpilab.disk import spec as specmod
from mpilab.fsutil import atomic_write_text
from wf_disklib import Counters, bounds, drop_pages, run_wf, summary


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", required=True, help="disk spec (TOML); its first disk is used")
    ap.add_argument("--prefix", default="wfd", help="disk prefix (default wfd)")
    ap.add_argument("--rows", type=int, default=3072)
    ap.add_argument("--cols", type=int, default=3072)
    ap.add_argument("--blocks", default="192,384,768", help="square block sizes (Fig. 7a)")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--block-backends", default="pread",
                    help="I/O back ends of the block layout (Fig. 7a; direct makes its east-halo "
                         "gather one device request per element); a back end followed by "
                         "'+turns' runs with --io-turns (the workers take turns at the disk)")
    ap.add_argument("--opt-backends", default="direct,pread",
                    help="I/O back ends of the optimized layout (Fig. 7a)")
    ap.add_argument("--rowmajor-block", type=int, default=0,
                    help="also row-major at this block size (slow: 1 iteration)")
    ap.add_argument("--wave-block", default="",
                    help="Fig. 7b: MBxNB for 1 vs 2 waves (optimized, direct), e.g. 384x768")
    ap.add_argument("--wave-workers", type=int, default=4)
    ap.add_argument("--fig4-block", type=int, default=0, help="Fig. 4 at this block size")
    ap.add_argument("--out", required=True, help="directory for results (JSON, Markdown)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="bring the disks up and make the files, leave them up and stop (so "
                         "a later timed run, e.g. in a quiet slot, does only the rounds; "
                         "`mpilab disk down --prefix P` afterwards)")
    return ap.parse_args()


def configs(a: argparse.Namespace, blocks: list[int], backends: dict[str, list[str]]
            ) -> dict[str, dict[str, Any]]:
    """The runs by name: Fig. 7a (each layout, block size and back end; row-major at one
    block size if asked) and Fig. 7b (1 and 2 waves at --wave-block)."""
    cfgs: dict[str, dict[str, Any]] = {}
    for lay in ("block", "optimized"):
        for b in blocks:
            for io in backends[lay]:
                if set(io.split("+")[1:]) - {"turns"}:
                    raise SystemExit(f"{io}: unknown back-end flag (expected BACKEND or "
                                     "BACKEND+turns)")
                cfgs[f"7a/{lay}/{b}/{io}"] = {"lay": lay, "mb": b, "nb": b, "io": io,
                                             "workers": a.workers, "waves": 1,
                                             "iters": a.iterations}
    if a.rowmajor_block:
        b = a.rowmajor_block
        cfgs[f"7a/rowmajor/{b}/pread"] = {"lay": "rowmajor", "mb": b, "nb": b, "io": "pread",
                                          "workers": a.workers, "waves": 1, "iters": 1}
    if a.wave_block:
        mb, nb = (int(x) for x in a.wave_block.split("x"))
        for w in (1, 2):
            cfgs[f"7b/waves{w}"] = {"lay": "optimized", "mb": mb, "nb": nb, "io": "direct",
                                    "workers": a.wave_workers, "waves": w,
                                    "iters": a.iterations}
    return cfgs


def fig4(wf: Callable[..., subprocess.CompletedProcess[str]], mnt: Path, d0: Path, b: int
         ) -> dict[str, float]:
    """Fig. 4: pre-processing (row-major to each layout at block size b) and
    post-processing (back to row-major) of the data matrix d0, inside the memory limit."""
    f4: dict[str, float] = {}
    for lay in ("block", "optimized"):
        o1, o2 = mnt / f"f4-{lay}", mnt / f"f4-{lay}-rm"
        drop_pages([d0])
        t0 = time.monotonic()
        wf("convert", "--quiet", "--layout", lay, "--mb", str(b), "--nb", str(b),
           str(d0), str(o1), inside=True)
        f4[f"pre_{lay}"] = time.monotonic() - t0
        drop_pages([o1])
        t0 = time.monotonic()
        wf("convert", "--quiet", "--layout", "rowmajor", str(o1), str(o2),
           inside=True)
        f4[f"post_{lay}"] = time.monotonic() - t0
        o1.unlink()
        o2.unlink()
    return f4


def main() -> int:
    a = parse_args()

    sp = specmod.load(a.spec, a.prefix)
    disk = sp.disks[0]
    os.environ.setdefault("MPILAB_DISK_STATE_ROOT", str(Path(a.out) / "state"))
    made = dev.load_state(a.prefix) is None and not a.prepare_only
    if dev.load_state(a.prefix) is None:
        dev.up(sp)
    tool = find_tool("mpilab-wavefront")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        st = dev.load_state(a.prefix)
        assert st is not None
        info = st["disks"][disk.name]
        mnt = Path(info["mount"])
        ctr = Counters(a.prefix, info)

        def wf(*args: str, inside: bool = False) -> subprocess.CompletedProcess[str]:
            return run_wf(tool, a.prefix, *args, inside=inside)

        M, N = a.rows, a.cols
        # files per geometry: disks left up (--prepare-only) may hold another size's files
        mnt = mnt / f"{M}x{N}"
        mnt.mkdir(exist_ok=True)
        d0, c0 = mnt / "d0", mnt / "c0"
        if not d0.exists():
            wf("create", "--rows", str(M), "--cols", str(N), "--seed", "1", str(d0), str(c0))
        blocks = [int(x) for x in a.blocks.split(",") if x]
        backends = {"block": [x for x in a.block_backends.split(",") if x],
                    "optimized": [x for x in a.opt_backends.split(",") if x]}
        def prepared(lay: str, mb: int, nb: int) -> tuple[Path, Path]:
            dp, cp = mnt / f"d-{lay}-{mb}x{nb}", mnt / f"c-{mb}x{nb}"
            if not dp.exists():
                wf("convert", "--quiet", "--layout", lay, "--mb", str(mb), "--nb", str(nb),
                   str(d0), str(dp))
            if not cp.exists():
                wf("convert", "--quiet", "--layout", "block", "--mb", str(mb), "--nb", str(nb),
                   str(c0), str(cp))
            return dp, cp

        cfgs = configs(a, blocks, backends)
        for c in cfgs.values():
            c["data"], c["coef"] = prepared(c["lay"], c["mb"], c["nb"])
        if a.prepare_only:
            print(f"prepared {len(cfgs)} configurations on disks '{a.prefix}' (left up)")
            return 0
        names = list(cfgs)
        rounds: list[dict[str, Any]] = []
        for r in range(a.rounds):
            res: dict[str, Any] = {}
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                c = cfgs[name]
                io, *flags = c["io"].split("+")
                work = mnt / "work"
                subprocess.run(["cp", str(c["data"]), str(work)], check=True)
                drop_pages([work, c["coef"]])
                jf = out / "run.json"
                args = ["run", "--data", str(work), "--coef", str(c["coef"]), "--iterations",
                        str(c["iters"]), "--workers", str(c["workers"]), "--waves",
                        str(c["waves"]), "--io", io, "--quiet", "--json", str(jf)]
                if "turns" in flags:
                    args.append("--io-turns")
                if c["lay"] == "rowmajor":
                    args = ["run", "--data", str(work), "--coef", str(c0), "--mb", str(c["mb"]),
                            "--nb", str(c["nb"])] + args[5:]
                k0 = ctr.read()
                t0 = time.monotonic()
                wf(*args, inside=True)
                wall = time.monotonic() - t0
                time.sleep(0.1)  # a seek model's statistics are written every 20 ms
                k1 = ctr.read()
                doc = json.loads(jf.read_text())["wavefront"]
                it = c["iters"]
                bd = bounds(disk, k0, k1)
                res[name] = {"s_per_iter": doc["total_s"] / it, "wall_s": wall,
                             "bound_model": bd["model"] / it, "bound_bw": bd["bandwidth"] / it,
                             "requests_read": doc["requests_read"] / it,
                             "requests_written": doc["requests_written"] / it,
                             "bytes_read": doc["bytes_read"] / it}
                res[name].update({k: v / it for k, v in bd.items()
                                  if k.startswith(("dev_", "seeks"))})
                print(f"round {r + 1} {name}: {res[name]['s_per_iter']:.3f} s/iter, bound "
                      f"model {res[name]['bound_model']:.3f} bw {res[name]['bound_bw']:.3f}",
                      flush=True)
            if a.fig4_block:
                res["fig4"] = fig4(wf, mnt, d0, a.fig4_block)
            rounds.append(res)
            atomic_write_text(out / "rounds.json", json.dumps(rounds, indent=1) + "\n")
        report(a, sp, disk, cfgs, rounds, out)
    finally:
        if made:
            dev.down(a.prefix)
    return 0


def report(a: argparse.Namespace, sp: specmod.DiskSpec, disk: specmod.Disk,
           cfgs: dict[str, Any], rounds: list[dict[str, Any]], out: Path) -> None:
    lines = [f"# Wavefront on an emulated disk ({disk.model})", "",
             f"Spec {sp.source}: {json.dumps(specmod.asdict(disk))}; memory limit "
             f"{sp.memory_limit or 'none'}; {a.rows}x{a.cols}, {a.rounds} rounds, "
             f"load average at the end {os.getloadavg()[0]:.1f}.", "",
             "| configuration | s/iteration | model bound | bandwidth bound | engine requests "
             "read/iter | device requests read/iter |", "|---|---|---|---|---|---|"]
    for name in cfgs:
        col = [r[name] for r in rounds if name in r]
        lines.append(f"| {name} | {summary([x['s_per_iter'] for x in col])} | "
                     f"{summary([x['bound_model'] for x in col])} | "
                     f"{summary([x['bound_bw'] for x in col])} | "
                     f"{statistics.median([x['requests_read'] for x in col]):.0f} | "
                     f"{statistics.median([x.get('dev_requests_read', 0) for x in col]):.0f} |")
    ratios: dict[str, list[float]] = {}
    for r in rounds:
        best: dict[str, tuple[float, str]] = {}
        for name, v in r.items():
            if not name.startswith("7a/"):
                continue
            lay = name.split("/")[1]
            if lay not in best or v["s_per_iter"] < best[lay][0]:
                best[lay] = (v["s_per_iter"], name)
        if "block" in best and "optimized" in best:
            ratios.setdefault("block best / optimized best", []).append(
                best["block"][0] / best["optimized"][0])
            overall = min(best.values())
            ratios.setdefault("best / its model bound", []).append(
                overall[0] / r[overall[1]]["bound_model"])
            ratios.setdefault("best / its bandwidth bound", []).append(
                overall[0] / r[overall[1]]["bound_bw"])
            lines.append(f"\nround: block best {best['block'][1]}, optimized best "
                         f"{best['optimized'][1]}")
        for b in {n.split("/")[2] for n in r if n.startswith("7a/")}:
            opt = [v["s_per_iter"] for n, v in r.items() if n.startswith(f"7a/optimized/{b}/")]
            blk = [v["s_per_iter"] for n, v in r.items() if n.startswith(f"7a/block/{b}/")]
            if opt and blk:
                ratios.setdefault(f"block / optimized at {b} (each its best back end)", []).append(
                    min(blk) / min(opt))
            # like for like: the same back end (and flags) for both layouts
            for n, v in r.items():
                io = n.split("/")[-1]
                if n == f"7a/optimized/{b}/{io}" and f"7a/block/{b}/{io}" in r:
                    ratios.setdefault(f"block / optimized at {b}, both {io}", []).append(
                        r[f"7a/block/{b}/{io}"]["s_per_iter"] / v["s_per_iter"])
        if "7b/waves1" in r and "7b/waves2" in r:
            ratios.setdefault("1 wave / 2 waves", []).append(
                r["7b/waves1"]["s_per_iter"] / r["7b/waves2"]["s_per_iter"])
        for k, v in r.get("fig4", {}).items():
            ratios.setdefault(f"Fig. 4 {k} (s)", []).append(v)
    lines += ["", "| ratio (same round) | per round | median [min, max] |", "|---|---|---|"]
    for k, v in ratios.items():
        lines.append(f"| {k} | {' '.join(f'{x:.2f}' for x in v)} | {summary(v)} |")
    if any(n.startswith("7a/") for r in rounds for n in r):
        # the figure from these rounds: bench/wavefront_fig7a.py (which also draws it from
        # several runs' rounds.json), run as the script it is
        subprocess.run([sys.executable, str(REPO / "bench" / "wavefront_fig7a.py"),
                        "--out", str(out / "fig7a.png"), "--title",
                        f"Fig. 7a, {disk.model} disk", str(out / "rounds.json")],
                       check=True, env=env(), stdout=subprocess.DEVNULL)
        lines += ["", "![Fig. 7a: time per iteration against block size](fig7a.png)"]
    atomic_write_text(out / "report.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
