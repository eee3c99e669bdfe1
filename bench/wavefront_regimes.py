#!/usr/bin/env python3
"""The frontier-optimized layout against the block layout in one disk regime: both layouts
side by side on one emulated disk (an `mpilab disk` spec: its requests/s, bytes/s and
memory limit are the regime), interleaved rounds, every run's output compared bitwise, and
every run classified from its own counters (mpilab.wavefront_regime: device requests and
bytes per iteration against the disk's limits, device against engine bytes read).

Per round each configuration runs once (order rotated), from a fresh copy of the same
initial data file, its pages and the coefficients' pages dropped first, inside the disk's
cgroups; the throttle's accounting (requests and bytes it charged) before and after each run
gives the device counters. After the run the result is converted to row-major outside the
cgroups (not throttled) and its payload hashed: every run of every configuration must give
the same bytes (the run fails otherwise). Ratios are taken inside a round.

Regimes (examples/disk/regime-*.toml):
  requests   200 requests/s, 150 MB/s, memory limit 256 MiB (the paper's: one disk whose
             request cost dominates)
  bandwidth  250 requests/s, 50 MB/s, memory limit 256 MiB
  memory     250 requests/s, 50 MB/s, memory limit 24 MiB (page cache smaller than the
             planes in flight)

Example (as root; one regime per bench slot):
  python3 bench/wavefront_regimes.py --regime requests --out /tmp/wfr-req
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import REPO, find_tool
from mpilab.disk import dev
from mpilab.disk import spec as specmod
from mpilab.fsutil import atomic_write_text
from mpilab.wavefront_regime import DiskLimits, RunCounters, classify
from wf_disklib import Counters, drop_pages, run_wf, summary

REGIMES = {"requests": "regime-requests.toml", "bandwidth": "regime-bandwidth.toml",
           "memory": "regime-memory.toml"}
HEADER = 4096  # bytes before a wavefront file's payload


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--regime", choices=sorted(REGIMES), help="one of the example regimes")
    g.add_argument("--spec", help="a disk spec (TOML) of your own; its first disk is used")
    ap.add_argument("--prefix", default="wfr", help="disk prefix (default wfr)")
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=2048)
    ap.add_argument("--block", type=int, default=256, help="square block size (default 256)")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--configs", default="block/pread,optimized/pread",
                    help="LAYOUT/IO,... (default block/pread,optimized/pread: the layouts "
                         "alone, same back end)")
    ap.add_argument("--out", required=True, help="directory for results (JSON, Markdown)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="bring the disk up, make the files, leave it up and stop")
    a = ap.parse_args()
    for k in ("rows", "cols", "block", "iterations", "workers", "rounds"):
        if getattr(a, k) < 1:
            ap.error(f"--{k} {getattr(a, k)}: need >= 1")
    return a


def payload_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(HEADER)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main() -> int:
    a = parse_args()
    spec_path = str(REPO / "examples" / "disk" / REGIMES[a.regime]) if a.regime else a.spec
    sp = specmod.load(spec_path, a.prefix)
    disk = sp.disks[0]
    if disk.model != "throttle":
        raise SystemExit(f"{spec_path}: disk {disk.name} is a {disk.model} disk; the regimes "
                         "are defined by a throttle disk's requests/s and bytes/s")
    limits = DiskLimits(disk.read_iops, disk.write_iops, disk.read_bw, disk.write_bw)
    cfgs = []
    for c in a.configs.split(","):
        lay, _, io = c.partition("/")
        if lay not in ("block", "optimized") or io not in ("pread", "direct", "mmap"):
            raise SystemExit(f"--configs {c!r}: expected block|optimized/pread|direct|mmap")
        cfgs.append((lay, io))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MPILAB_DISK_STATE_ROOT", str(out / "state"))
    made = dev.load_state(a.prefix) is None and not a.prepare_only
    if dev.load_state(a.prefix) is None:
        dev.up(sp)
    tool = find_tool("mpilab-wavefront")
    try:
        st = dev.load_state(a.prefix)
        assert st is not None
        info = st["disks"][disk.name]
        ctr = Counters(a.prefix, info)

        def wf(*args: str, inside: bool = False) -> None:
            run_wf(tool, a.prefix, *args, inside=inside)

        M, N, B = a.rows, a.cols, a.block
        mnt = Path(info["mount"]) / f"{M}x{N}"
        mnt.mkdir(exist_ok=True)
        d0, c0 = mnt / "d0", mnt / "c0"
        if not d0.exists():
            wf("create", "--rows", str(M), "--cols", str(N), "--seed", "1", str(d0), str(c0))
        coef = mnt / f"c-{B}"
        if not coef.exists():
            wf("convert", "--quiet", "--layout", "block", "--mb", str(B), "--nb", str(B),
               str(c0), str(coef))
        data: dict[str, Path] = {}
        for lay, _ in cfgs:
            data[lay] = mnt / f"d-{lay}-{B}"
            if not data[lay].exists():
                wf("convert", "--quiet", "--layout", lay, "--mb", str(B), "--nb", str(B),
                   str(d0), str(data[lay]))
        if a.prepare_only:
            print(f"prepared {len(cfgs)} configurations on disk '{a.prefix}' (left up)")
            return 0
        load0 = Path("/proc/loadavg").read_text().split()[:3]
        names = [f"{lay}/{io}" for lay, io in cfgs]
        rounds: list[dict[str, Any]] = []
        for r in range(a.rounds):
            res: dict[str, Any] = {}
            k = r % len(names)
            for name in names[k:] + names[:k]:
                lay, io = name.split("/")
                work, rm = mnt / "work", mnt / "work.rm"
                subprocess.run(["cp", str(data[lay]), str(work)], check=True)
                drop_pages([work, coef])
                jf = out / "run.json"
                c0_ = ctr.read()
                t0 = time.monotonic()
                wf("run", "--data", str(work), "--coef", str(coef), "--iterations",
                   str(a.iterations), "--workers", str(a.workers), "--io", io, "--quiet",
                   "--json", str(jf), inside=True)
                wall = time.monotonic() - t0
                c1 = ctr.read()
                d = {k2: c1.get(k2, 0.0) - c0_.get(k2, 0.0) for k2 in set(c0_) | set(c1)}
                doc = json.loads(jf.read_text())["wavefront"]
                wf("convert", "--quiet", "--layout", "rowmajor", str(work), str(rm))
                sha = payload_sha(rm)
                rm.unlink()
                rc = RunCounters(doc["iterations"], doc["total_s"], doc["bytes_read"],
                                 doc["bytes_written"], doc["requests_read"],
                                 doc["requests_written"], d.get("bytes_read", 0.0),
                                 d.get("bytes_write", 0.0), d.get("req_read", 0.0),
                                 d.get("req_write", 0.0),
                                 statistics.mean(w["io_wait_s"] for w in doc["per_worker"]))
                reg = classify(rc, limits)
                it = a.iterations
                res[name] = {"s_per_iter": doc["total_s"] / it, "wall_s": wall, "sha256": sha,
                             "engine_bytes_read": doc["bytes_read"] / it,
                             "engine_requests_read": doc["requests_read"] / it,
                             "dev_bytes_read": rc.dev_bytes_read / it,
                             "dev_requests_read": rc.dev_requests_read / it,
                             "peak_rss_bytes": doc["peak_rss_bytes"],
                             "io_wait_s": rc.io_wait_s / it,
                             "dep_wait_s": statistics.mean(w["dep_wait_s"]
                                                           for w in doc["per_worker"]) / it,
                             **reg.to_dict()}
                print(f"round {r + 1} {name}: {reg.t_iter:.3f} s/iter, {reg.line()}",
                      flush=True)
            shas = {v["sha256"] for v in res.values()} | {
                v["sha256"] for rr in rounds for v in rr.values()}
            if len(shas) != 1:
                raise SystemExit(f"round {r + 1}: outputs differ between runs: "
                                 + ", ".join(f"{n} {v['sha256'][:12]}" for n, v in res.items()))
            rounds.append(res)
            atomic_write_text(out / "rounds.json", json.dumps(rounds, indent=1) + "\n")
        report(a, sp, disk, names, rounds, load0, out)
    finally:
        if made:
            dev.down(a.prefix)
    return 0


def report(a: argparse.Namespace, sp: specmod.DiskSpec, disk: specmod.Disk, names: list[str],
           rounds: list[dict[str, Any]], load0: list[str], out: Path) -> None:
    mem = f"{sp.memory_limit / 2**20:.0f} MiB" if sp.memory_limit else "none"
    lines = [f"# Layout gain: {disk.read_iops} requests/s, {disk.read_bw / 1e6:.0f} MB/s, "
             f"memory limit {mem}", "",
             f"Spec {sp.source}; {a.rows}x{a.cols}, blocks {a.block}x{a.block}, "
             f"{a.workers} workers, {a.iterations} iterations per run, {a.rounds} rounds; "
             f"load at the start {' '.join(load0)}; outputs bitwise equal in every run "
             f"(sha256 of the row-major payload {rounds[0][names[0]]['sha256'][:16]}).", "",
             "| configuration | s/iteration | requests at the disk's rate | bytes at its "
             "bandwidth | wait for reads | device requests read/iter | device MB read/iter | "
             "device/engine bytes | regime |", "|---|---|---|---|---|---|---|---|---|"]
    for n in names:
        col = [r[n] for r in rounds]
        regs = sorted({x["regime"] for x in col})
        lines.append(
            f"| {n} | {summary([x['s_per_iter'] for x in col])} | "
            f"{summary([x['t_requests'] for x in col])} | "
            f"{summary([x['t_bandwidth'] for x in col])} | "
            f"{summary([x['io_wait_s'] for x in col])} | "
            f"{statistics.median([x['dev_requests_read'] for x in col]):.0f} | "
            f"{statistics.median([x['dev_bytes_read'] for x in col]) / 1e6:.0f} | "
            f"{statistics.median([x['reread'] for x in col]):.2f} | {', '.join(regs)} |")
    ratios = [r["block/pread"]["s_per_iter"] / r["optimized/pread"]["s_per_iter"]
              for r in rounds if "block/pread" in r and "optimized/pread" in r]
    if ratios:
        lines += ["", "| ratio (same round) | per round | median [min, max] |", "|---|---|---|",
                  f"| block / optimized (both pread) | {' '.join(f'{x:.2f}' for x in ratios)} "
                  f"| {summary(ratios)} |"]
    atomic_write_text(out / "report.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
