#!/usr/bin/env python3
"""Platform files at scale (docs/sim.md, "Measured"): for each kind, the time to generate
the file, its size, and smpirun's wall time for examples/platforms/pingpong.c on it, with
the simulated one-way times beside the values the platform was given.

    python3 bench/sim_platform.py [--ranks 2,1024]

Needs smpicc and smpirun (libsimgrid-dev); builds the ping-pong in a temporary folder.
Run it under `/work/shared/tools/mlock bench` when its wall times are to be quoted.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness import REPO, loadavg
from mpilab.sim import platform as plat
from mpilab.testbed import spec as tbspec

BIG_SPEC = """\
[cluster]
sites = 2
nodes_per_site = 512
site_prefixlen = 22
[wan]
node_rate = "100Mbit"
total_rate = "1Gbit"
delay = "5ms"
"""

# (label, generator, expected one-way (1 B, 1 MB) between the first and the last host)
L, B = 1e-6, 10e9  # the built-in topologies' defaults: 1 us, 10 Gbit/s per link


def cases() -> list[tuple[str, Callable[[], plat.Generated], tuple[float, float]]]:
    sp = tbspec.load_text(BIG_SPEC, "<bench: 2 x 512>")
    keys = plat.spec_keys(BIG_SPEC)
    out: list[tuple[str, Callable[[], plat.Generated], tuple[float, float]]] = [
        ("spec 2 x 512 (L 5 ms, b_WAN 100 Mbit/s)",
         lambda: plat.from_spec(sp, keys, plat.SpecOptions()),
         (sp.wan_delay, sp.wan_delay + 8e6 / sp.wan_node_rate))]
    # hops between the first and the last host: flat 2 links; torus 16x8x8: one wrap-around
    # hop per dimension (3); fat tree and dragonfly: up to the top and down (6)
    for label, t, hops in (
            ("flat 1024", plat.Topology("flat", nodes=1024), 2),
            ("torus 16,8,8", plat.Topology("torus", shape="16,8,8"), 3),
            ("fattree 3;16,8,8;1,8,8;1,1,1",
             plat.Topology("fattree", shape="3;16,8,8;1,8,8;1,1,1"), 6),
            ("dragonfly 8,2;4,2;8,1;4", plat.Topology("dragonfly", shape="8,2;4,2;8,1;4"), 6)):
        out.append((label, lambda t=t: plat.topology(t), (hops * L, hops * L + 8e6 / B)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2,1024",
                    help="rank counts (the ping-pong is between rank 0 and the last rank)")
    args = ap.parse_args()
    for tool in ("smpicc", "smpirun"):
        if shutil.which(tool) is None:
            sys.exit(f"sim_platform: {tool} not found (apt install libsimgrid-dev)")
    ranks = [int(x) for x in args.ranks.split(",")]
    print(f"load average at start: {loadavg().split()}")
    with tempfile.TemporaryDirectory(prefix="mpilab-sim-bench-") as d:
        tmp = Path(d)
        subprocess.run(["smpicc", "-O1", "-o", str(tmp / "pp"),
                        str(REPO / "examples" / "platforms" / "pingpong.c")], check=True)
        print("| platform | hosts | file bytes | generate s | ranks | smpirun wall s "
              "| one-way 1 B sim / given | one-way 1 MB sim / given |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for label, make, (e1, e2) in cases():
            t0 = time.perf_counter()
            gen = make()
            gen_s = time.perf_counter() - t0
            (tmp / "p.xml").write_bytes(gen.xml)
            for np in ranks:
                hosts = list(gen.hosts[:np])
                if np == 2:
                    hosts = [gen.hosts[0], gen.hosts[-1]]
                (tmp / "hosts").write_text("".join(h + "\n" for h in hosts))
                s = time.perf_counter()
                p = subprocess.run(["smpirun", "-np", str(np), "-platform", str(tmp / "p.xml"),
                                    "-hostfile", str(tmp / "hosts"), str(tmp / "pp")],
                                   capture_output=True, text=True, cwd=tmp, timeout=1800)
                wall = time.perf_counter() - s
                got = dict(line.split()[1:] for line in p.stdout.splitlines()
                           if line.startswith("oneway"))
                if p.returncode != 0 or len(got) != 2:
                    print(f"| {label} | {len(gen.hosts)} | failed: {p.stderr[-200:]!r} |")
                    continue
                a, b = float(got["1"]), float(got["1000000"])
                last = hosts[-1]
                print(f"| {label} | {len(gen.hosts)} | {len(gen.xml)} | {gen_s:.3f} "
                      f"| {np} (0 - {last}) | {wall:.2f} | {a * 1e6:.3f} us / {e1 * 1e6:.3f} us "
                      f"| {b * 1e3:.6f} ms / {e2 * 1e3:.6f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
