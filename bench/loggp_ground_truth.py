#!/usr/bin/env python3
"""LogGP against known ground truth: fitted L and G across an emulated WAN (2 sites x 1 node,
configured one-way delay and rate) next to the configured values and the Hockney fit of the
same run, plus LogGP on shared memory and TCP loopback (2 ranks on this machine).

Needs root for the testbed (skip it with --no-wan). Writes the three results files into
--out-dir and prints one table. Example:
  MPILAB_BIN=build/bin python3 bench/loggp_ground_truth.py --delay 2ms --rate 100Mbit
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import find_tool, mpi_env, mpilab_cmd, mpirun
from mpilab import results


def _rate_bps(text: str) -> float:
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    t = text.lower()
    for u, f in units.items():
        if t.endswith(u):
            return float(t[: -len(u)]) * f
    raise SystemExit(f"--rate: '{text}' is not a rate like 100Mbit")


def _delay_s(text: str) -> float:
    t = text.lower()
    for u, f in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0)):
        if t.endswith(u):
            return float(t[: -len(u)]) * f
    raise SystemExit(f"--delay: '{text}' is not a delay like 2ms")


def runner_args(sizes: str, max_reps: int, burst: int, out: Path) -> list[str]:
    return ["--ops", "p2p", "--sizes", sizes, "--min-reps", "5", "--max-reps", str(max_reps),
            "--eps", "0.05", "--models", "hockney,loggp", "--loggp-burst", str(burst),
            "--quiet", "--out", str(out)]


def run(cmd: list[str], timeout: float) -> None:
    p = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}")


def row(name: str, path: Path) -> dict[str, Any]:
    r = results.load(path)
    lg = next(p for p in r.loggp if (p.i, p.j) == (0, 1))
    h = next(p for p in r.hockney if (p.i, p.j) == (0, 1))
    assert lg.params is not None, lg.error
    small = lg.per_size[0]
    return {"name": name, "L": lg.params.L, "os": lg.params.os, "or": lg.params.orr,
            "g": lg.params.g, "G": lg.params.G, "flags": ",".join(lg.params.flags) or "-",
            "alpha": h.alpha, "beta": h.beta,
            "beta_last": h.ranges[-1].beta if h.ranges else h.beta,
            "rtt0": small.rtt, "os0": small.os, "or0": small.orr, "g0": small.g,
            "ranges": [(g.lo, g.hi, g.params.G) for g in lg.ranges]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay", default="2ms", help="WAN one-way delay (default 2ms)")
    ap.add_argument("--rate", default="100Mbit", help="WAN rate per node (default 100Mbit)")
    ap.add_argument("--prefix", default="lg", help="testbed name prefix (default lg)")
    ap.add_argument("--local-sizes", default="0,64,1K,4K,16K,64K,256K,1M")
    ap.add_argument("--wan-sizes", default="0,1K,4K,16K,64K,128K")
    ap.add_argument("--max-reps", type=int, default=20)
    ap.add_argument("--burst", type=int, default=8)
    ap.add_argument("--no-wan", action="store_true", help="only shared memory and TCP loopback")
    ap.add_argument("--out-dir", default=None,
                    help="where the results files go (default: a temp dir)")
    a = ap.parse_args()
    out = Path(a.out_dir or tempfile.mkdtemp(prefix="loggp-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    bench = find_tool("mpilab-bench")
    rows = []
    for name, btl in (("shm (vader)", "self,vader"), ("TCP loopback", "self,tcp")):
        f = out / f"loggp-{btl.split(',')[1]}.json"
        run(mpirun(2, ["--mca", "btl", btl]) + [bench] +
            runner_args(a.local_sizes, a.max_reps, a.burst, f), 600)
        rows.append(row(name, f))
    delay, rate = _delay_s(a.delay), _rate_bps(a.rate)
    if not a.no_wan:
        spec = out / "lg-wan.toml"
        spec.write_text(f'prefix = "{a.prefix}"\n[cluster]\nsites = 2\nnodes_per_site = 1\n'
                        f'[lan]\nrate = "10Gbit"\n[wan]\nnode_rate = "{a.rate}"\n'
                        f'total_rate = "{a.rate}"\ndelay = "{a.delay}"\nqueue = "1M"\n')
        cli = mpilab_cmd("testbed")
        run(cli + ["up", str(spec)], 300)
        try:
            f = out / "loggp-wan.json"
            run(cli + ["run", "--prefix", a.prefix, "--np", "2", "--timeout", "1200", "--", bench]
                + runner_args(a.wan_sizes, a.max_reps, a.burst, f), 1300)
            rows.append(row(f"WAN {a.delay} {a.rate}", f))
        finally:
            run(cli + ["down", "--prefix", a.prefix], 300)
    us = 1e6
    print(f"results in {out}")
    print(f"{'link':<22} {'L us':>9} {'o_s us':>8} {'o_r us':>8} {'g us':>8} {'G ns/B':>8} "
          f"{'beta ns/B':>9} {'beta(last) ':>11} {'alpha us':>9} {'rtt0 us':>9}  flags")
    for r in rows:
        print(f"{r['name']:<22} {r['L'] * us:9.3f} {r['os'] * us:8.3f} {r['or'] * us:8.3f} "
              f"{r['g'] * us:8.3f} {r['G'] * 1e9:8.4f} {r['beta'] * 1e9:9.4f} "
              f"{r['beta_last'] * 1e9:11.4f} {r['alpha'] * us:9.3f} {r['rtt0'] * us:9.3f}  "
              f"{r['flags']}")
        print(f"{'':<22} per size at the smallest message: o_s {r['os0'] * us:.3f} us, "
              f"o_r {r['or0'] * us:.3f} us, g {r['g0'] * us:.3f} us; LogGP ranges "
              + ", ".join(f"{lo}..{hi}: G {G * 1e9:.4f}" for lo, hi, G in r["ranges"]))
    if not a.no_wan:
        w = rows[-1]
        wire = 8 / rate
        goodput = wire * 1514 / 1448  # Ethernet+IP+TCP headers per 1448-byte segment
        print(f"WAN ground truth: one-way delay {delay * us:.0f} us -> "
              f"fitted L {w['L'] * us:.0f} us "
              f"({(w['L'] - delay) / delay * 100:+.1f}%); 8/rate {wire * 1e9:.2f} ns/B "
              f"(goodput {goodput * 1e9:.2f}) -> G {w['G'] * 1e9:.2f} ns/B "
              f"({(w['G'] - goodput) / goodput * 100:+.1f}% vs goodput), "
              f"Hockney beta {w['beta'] * 1e9:.2f} ns/B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
