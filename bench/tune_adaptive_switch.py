#!/usr/bin/env python3
"""Adaptive sizes' target: `mpilab-bench --sizes auto:MIN:MAX` (default budget) brackets the
eager switch of shared memory and of TCP within one size step of the default list (a factor
4: `1:64K:x4`) in every run, with no more sizes than the default list's spacing gives for
MIN..MAX.

Per run and transport: one 2-rank launch (the harness's launcher, `--mca btl vader,self`
or `tcp,self`) of
`mpilab-bench --ops p2p --sizes auto:MIN:MAX --max-reps R --time-budget T --no-fit`; the
switch is Open MPI's eager limit for that transport (`ompi_info --param btl vader|tcp
--level 9`: btl_vader_eager_limit, btl_tcp_eager_limit; the header is counted, so a message
of exactly the limit already goes by rendezvous). A run finds the switch when the largest
measured size below the limit and the smallest at or above it are at most --step apart
(default 4) and the entry measured at most as many sizes as MIN..MAX x4 has. Prints one line
per run (sizes measured, the bracket, which size's bend brought it) and the counts; --out
keeps the JSON.

    /work/shared/tools/mlock bench python3 bench/tune_adaptive_switch.py --runs 3
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import env, loadavg, mpirun, tool, write_json
from mpilab import units

BTL = {"shm": ("vader", "vader,self"), "tcp": ("tcp", "tcp,self")}
#: the ranges measured: shared memory the default list's own (1..64K), TCP up to 1 MiB
#: (its switch, 64 KiB, is the default list's last size)
RANGES = {"shm": "auto:1:64K", "tcp": "auto:1:1M"}


def eager_limit(btl: str) -> int:
    p = subprocess.run(["ompi_info", "--param", "btl", btl, "--level", "9", "--parsable"],
                       capture_output=True, text=True, timeout=60)
    m = re.search(rf"mca:btl:{btl}:param:btl_{btl}_eager_limit:value:(\d+)", p.stdout)
    if not m:
        raise SystemExit(f"ompi_info names no btl_{btl}_eager_limit")
    return int(m.group(1))


def x4_count(lo: int, hi: int) -> int:
    n, s = 0, lo
    while s < hi:
        n, s = n + 1, s * 4
    return n + 1


def one_run(kind: str, spec: str, limit: int, a: argparse.Namespace, d: Path, i: int) -> dict:
    out = d / f"{kind}{i}.json"
    cmd = mpirun(2, ["--mca", "btl", BTL[kind][1]]) + [
        tool("mpilab-bench"), "--ops", "p2p", "--sizes", spec, "--max-reps", str(a.max_reps),
        "--time-budget", a.budget, "--no-fit", "--quiet", "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=300)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(2)
    auto = json.loads(out.read_text())["provenance"]["options"]["sizes_auto"]
    e = auto["entries"][0]
    sizes = sorted(e["sizes"])
    below = [s for s in sizes if s < limit]
    above = [s for s in sizes if s >= limit]
    lo, hi = (below[-1] if below else None), (above[0] if above else None)
    ratio = hi / lo if lo and hi else float("inf")
    _, mn, mx = spec.split(":")[:3]
    allowed = min(auto["budget"], x4_count(int(units.parse_size(mn)), int(units.parse_size(mx))))
    by = sorted({a2["bent_at"] for a2 in e["added"] if a2["bytes"] in (lo, hi)})
    found = ratio <= a.step and len(sizes) <= allowed
    return {"transport": kind, "run": i, "sizes": sizes, "limit": limit, "bracket": [lo, hi],
            "ratio": round(ratio, 3), "budget": auto["budget"], "allowed": allowed,
            "repeated": e["repeated"],
            "added": e["added"], "bracket_from_bend_at": by, "found": found}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--transports", default="shm,tcp")
    ap.add_argument("--shm-sizes", default=RANGES["shm"])
    ap.add_argument("--tcp-sizes", default=RANGES["tcp"])
    ap.add_argument("--max-reps", type=int, default=200)
    ap.add_argument("--budget", default="8s", help="mpilab-bench --time-budget")
    ap.add_argument("--step", type=float, default=4.0, help="one step of the default list")
    ap.add_argument("--out")
    a = ap.parse_args()
    print(f"load at start: {loadavg()}")
    d = Path(tempfile.mkdtemp(prefix="tune-adaptive-"))
    results = []
    for kind in a.transports.split(","):
        spec = a.shm_sizes if kind == "shm" else a.tcp_sizes
        limit = eager_limit(BTL[kind][0])
        for i in range(1, a.runs + 1):
            r = one_run(kind, spec, limit, a, d, i)
            results.append(r)
            lo, hi = r["bracket"]
            print(f"{kind} {spec} run {i}: {len(r['sizes'])} sizes (budget {r['budget']}, "
                  f"default list x4 allows {r['allowed']}), switch {limit} bracketed by "
                  f"{lo}..{hi} (x{r['ratio']}), "
                  f"repeated {r['repeated']}, bends at "
                  f"{sorted({x['bent_at'] for x in r['added']})}: "
                  f"{'FOUND' if r['found'] else 'MISSED'}")
            print(f"    sizes {r['sizes']}")
            sys.stdout.flush()
    for kind in a.transports.split(","):
        rs = [r for r in results if r["transport"] == kind]
        print(f"{kind}: switch within one step in {sum(r['found'] for r in rs)} of {len(rs)} "
              f"runs, at most {max(len(r['sizes']) for r in rs)} sizes")
    if a.out:
        write_json(a.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
