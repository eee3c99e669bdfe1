#!/usr/bin/env python3
"""mpilab-bench's default ping-pong sweep beside IMB-MPI1 PingPong and OSU osu_latency, in
one run, rounds interleaved: 2 ranks pinned (--bind-to core), shared memory
(btl self,vader) and TCP loopback (btl self,tcp), 1 B to 1 MiB in powers of 4 (11 sizes).

Per round and transport, each tool runs once, in rotating order, timed from launch to exit
(mpirun included: what a user waits for). Printed per transport: the wall time of each tool
(median over the rounds), the ratios mpilab/IMB and mpilab/OSU, how many of mpilab's 11
sizes converged (its own verdict at the asked precision), and the one-way figures side by
side (mpilab: median round trip / 2; IMB: t_avg; OSU: average latency), with mpilab's
deviation from the middle of the two peers.

IMB and OSU are public suites built OUTSIDE this tree (never copied into it):
  IMB:  https://github.com/intel/mpi-benchmarks, `make IMB-MPI1 CC=mpicc CXX=mpicxx`
  OSU:  osu-micro-benchmarks 7.x, `./configure CC=mpicc CXX=mpicxx && make`
Give their paths with --imb and --osu (or the IMB_MPI1 / OSU_LATENCY environment); OSU is
optional (without it the OSU columns are nan and the deviation is against IMB alone).

Example:
  ../shared/tools/mlock bench python3 bench/convergence_peers.py --rounds 3 \\
      --imb /work/peers/imb/IMB-MPI1 --osu /work/peers/osu/c/mpi/pt2pt/osu_latency
With --baseline PATH another mpilab-bench binary (a copy of the build before a change) runs
in the same rounds as the variant "baseline".
Target (issue 25): >= 90% of sizes converged, wall time <= IMB-MPI1's for the same sizes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import find_tool, mpi_env
from harness import mpirun as launcher
from mpilab.pair_matrix import expand_all

SIZES = [4 ** k for k in range(11)]  # 1 B .. 1 MiB
TRANSPORTS = {"shm": "self,vader", "tcp": "self,tcp"}
BASELINE_HELP = ("another mpilab-bench (e.g. built before a change), run with the default's "
                 "arguments as the variant 'baseline': before and after in the same rounds")


def mpirun(btl: str) -> list[str]:
    # pinned, no yielding: as this script measured before the launcher was shared
    return launcher(2, ["--bind-to", "core", "--mca", "mpi_yield_when_idle", "0",
                        "--mca", "btl", btl])


def timed(cmd: list[str], timeout: float = 900) -> tuple[float, str]:
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=timeout,
                       check=False)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return wall, p.stdout


def run_mpilab(btl: str, work: Path, extra: list[str], bench: str | None = None,
               name: str = "mpilab.json") -> tuple[float, dict[int, float], int]:
    out = work / name
    wall, _ = timed(mpirun(btl) + [bench or find_tool("mpilab-bench"), "--ops", "p2p", "--sizes",
                                   ",".join(map(str, SIZES)), "--quiet", "--out", str(out),
                                   *extra])
    doc = json.loads(out.read_text())
    vals, conv = {}, 0
    for m in expand_all(doc["measurements"]):  # p2p comes as one pair matrix per size
        if m["op"] == "p2p":
            vals[m["bytes"]] = m["stats"]["median"] / 2  # round trip -> one way
            conv += m["stats"].get("converged") is True
    return wall, vals, conv


def run_imb(imb: str, btl: str, work: Path) -> tuple[float, dict[int, float]]:
    lens = work / "imb-lengths"
    lens.write_text("".join(f"{s}\n" for s in SIZES))
    wall, out = timed(mpirun(btl) + [imb, "PingPong", "-msglen", str(lens)])
    vals = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[0].isdigit() and int(f[0]) in SIZES:
            vals[int(f[0])] = float(f[2]) * 1e-6
    return wall, vals


def run_osu(osu: str, btl: str) -> tuple[float, dict[int, float]]:
    wall, out = timed(mpirun(btl) + [osu, "-m", f"1:{SIZES[-1]}"])
    vals = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\d+)\s+([\d.]+)\s*$", line)
        if m and int(m.group(1)) in SIZES:
            vals[int(m.group(1))] = float(m.group(2)) * 1e-6
    return wall, vals


def _median_at(rounds: list[dict[str, dict[int, float]]], tool: str, size: int) -> float:
    xs = [v[tool][size] for v in rounds if size in v.get(tool, {})]
    return statistics.median(xs) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--imb", default=os.environ.get("IMB_MPI1"))
    ap.add_argument("--osu", default=os.environ.get("OSU_LATENCY"))
    ap.add_argument("--transport", action="append", choices=sorted(TRANSPORTS))
    ap.add_argument("--mpilab-arg", action="append", default=[],
                    help="extra mpilab-bench argument (repeatable)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="one more mpilab-bench run per round with these extra arguments "
                         "(space separated), shown as NAME beside the default (repeatable)")
    ap.add_argument("--baseline", metavar="PATH", help=BASELINE_HELP)
    ap.add_argument("--keep", metavar="DIR", help="keep every mpilab results file in DIR")
    a = ap.parse_args()
    variants: dict[str, list[str]] = {}
    for v in a.variant:
        name, sep, args = v.partition("=")
        if not sep or not name or name in ("mpilab", "imb", "osu", "conv", "vals"):
            ap.error(f"--variant {v!r}: expected NAME=ARGS with a new NAME")
        variants[name] = a.mpilab_arg + args.split()
    if a.baseline is not None:
        if not os.access(a.baseline, os.X_OK) or "baseline" in variants:
            ap.error(f"--baseline {a.baseline}: not an executable (or a variant named baseline)")
        variants["baseline"] = list(a.mpilab_arg)
    if not a.imb or not os.access(a.imb, os.X_OK):
        ap.error("--imb: need the path of the built IMB-MPI1 (see the docstring)")
    if a.osu is not None and not os.access(a.osu, os.X_OK):
        ap.error(f"--osu {a.osu}: not an executable (leave it out to run without OSU)")
    if a.rounds < 1:
        ap.error("--rounds: at least 1")
    transports = a.transport or list(TRANSPORTS)
    with open("/proc/loadavg") as f:
        print(f"load at start: {f.read().strip()}")
    tools = ["mpilab", *variants, "imb"] + (["osu"] if a.osu else [])
    rec: dict[str, dict[str, list]] = {t: {k: [] for k in [*tools, "conv", "vals"]}
                                       for t in transports}
    for name in variants:
        for t in transports:
            rec[t]["conv:" + name] = []
    if a.keep:
        Path(a.keep).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        work = Path(a.keep or tmp)
        for r in range(a.rounds):
            for t in transports:
                btl = TRANSPORTS[t]
                order = tools[r % len(tools):] + tools[:r % len(tools)]
                vals: dict[str, dict[int, float]] = {}
                for tool in order:
                    if tool == "mpilab":
                        w, v, c = run_mpilab(btl, work, a.mpilab_arg,
                                             name=f"{r + 1}-{t}-mpilab.json")
                        rec[t]["conv"].append(c)
                    elif tool in variants:
                        w, v, c = run_mpilab(btl, work, variants[tool],
                                             a.baseline if tool == "baseline" else None,
                                             f"{r + 1}-{t}-{tool}.json")
                        rec[t]["conv:" + tool].append(c)
                    elif tool == "imb":
                        w, v = run_imb(a.imb, btl, work)
                    else:
                        w, v = run_osu(a.osu, btl)
                    rec[t][tool].append(w)
                    vals[tool] = v
                rec[t]["vals"].append(vals)
                print(f"round {r + 1} {t}: " + ", ".join(
                    f"{k} {rec[t][k][-1]:.2f} s" for k in tools)
                    + f"; mpilab converged {rec[t]['conv'][-1]}/{len(SIZES)}"
                    + "".join(f", {n} converged {rec[t]['conv:' + n][-1]}/{len(SIZES)}"
                              for n in variants), flush=True)
    for t in transports:
        d = rec[t]
        wm, wi = (statistics.median(d[k]) for k in ("mpilab", "imb"))
        wo = statistics.median(d["osu"]) if d.get("osu") else math.nan
        conv = sum(d["conv"])
        total = len(SIZES) * len(d["conv"])
        print(f"\n== {t} ({TRANSPORTS[t]}), {a.rounds} rounds: wall (median) mpilab {wm:.2f} s, "
              f"IMB {wi:.2f} s, OSU {wo:.2f} s; mpilab/IMB {wm / wi:.2f}x, mpilab/OSU "
              f"{wm / wo:.2f}x; converged {conv}/{total} ({100 * conv / total:.0f}%)")
        for n in variants:
            wv, cv = statistics.median(d[n]), sum(d["conv:" + n])
            print(f"   variant {n} ({' '.join(variants[n])}): wall (median) {wv:.2f} s, "
                  f"/IMB {wv / wi:.2f}x, /OSU {wv / wo:.2f}x; converged {cv}/{total} "
                  f"({100 * cv / total:.0f}%)")
        print(f"{'bytes':>8} {'mpilab us':>10} {'IMB us':>9} {'OSU us':>9} {'IMB~OSU':>8} "
              f"{'mpilab-peers':>12}")
        for s in SIZES:
            m, i, o = (_median_at(d["vals"], tool, s) for tool in ("mpilab", "imb", "osu"))
            peers = (i + o) / 2 if math.isfinite(o) else i
            print(f"{s:>8} {m * 1e6:10.3f} {i * 1e6:9.3f} {o * 1e6:9.3f} {abs(i - o) / peers:7.1%} "
                  f"{(m - peers) / peers:+11.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
