#!/usr/bin/env python3
"""Where the multilane optimum comes from (docs/multilane.md, "Where the optimum comes
from"): multilane scatter/gather time against the number of lanes P on simulated two-site
grids that differ in one property each, SimGrid SMPI running mpilab-multilane through
`mpilab multilane run --sim --lanes all`.

Platforms (each from the same testbed spec: N + N nodes, 1 Gbit/s LAN, 1 Gbit/s per site
uplink B_WAN, one-way WAN latency 5 ms; `mpilab sim platform spec`):
  shared-250    as the testbed: a node's WAN traffic crosses its LAN link, then a 250
                Mbit/s WAN share (b_WAN shaped per node)
  separate-250  a second NIC for the WAN (--wan-nic separate, the paper's two
                1000Base-T per node), b_WAN 250 Mbit/s shaped per node
  shared-win    as the testbed, no per-node shaping (1 Gbit/s WAN share): each flow is
                limited by its TCP window over the round trip (--tcp-gamma WINDOW, default
                64 KiB: 64 KiB / 10 ms = 52 Mbit/s per lane)
  separate-win  the second NIC and the window limit together

  python3 bench/multilane_optimum.py --nodes 8 --platforms shared-250,separate-250 \
      --ops scatter,gather
  python3 bench/multilane_optimum.py --nodes 32 --platforms separate-win,shared-win \
      --ops scatter,gather
  python3 bench/multilane_optimum.py --nodes 32 --platforms separate-win,shared-win \
      --window 84K --ops scatter,gather --out out/multilane_optimum/w84
  python3 bench/multilane_optimum.py --nodes 32 --platforms separate-win --window W \
      --ops scatter,gather --out out/multilane_optimum/wW     # W = 79K, 81408, 80K, 96K

Each (platform, nodes) writes OUT/<platform>-<N>.json (the multilane document; one written
with the same options, OUT/<platform>-<N>.args.json, is reused; --force runs it again) and
the script prints, per platform and operation, the curve (simulated s against P), the best
P, the P within 1% of the best, and the two models' P_opt from the same document. Simulated
times are deterministic (one repetition per point); the wall time of each run is printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from harness import loadavg, mpilab, write_json

PLATFORMS = {
    # name: (wan NIC, per-node WAN rate, window limited)
    "shared-250": ("shared", "250Mbit", False),
    "separate-250": ("separate", "250Mbit", False),
    "shared-win": ("shared", "1Gbit", True),
    "separate-win": ("separate", "1Gbit", True),
}
SPEC = """# bench/multilane_optimum.py: {n} + {n} nodes, 1 Gbit/s LAN, {node_rate} per node
# across the WAN, 1 Gbit/s per site uplink, one-way WAN latency {L}
prefix = "mlo"
[cluster]
sites = 2
nodes_per_site = {n}
rails = 1
[lan]
rate = "1Gbit"
[wan]
node_rate = "{node_rate}"
total_rate = "1Gbit"
delay = "{L}"
"""


def _curve(doc: dict[str, Any], op: str, size: int) -> dict[int, float]:
    return {r["lanes"]: statistics.median(r["times"]) for r in doc["runs"]
            if r["op"] == op and r["impl"] == "multilane" and r["bytes"] == size}


def platform(out: Path, name: str, n: int, L: str, window: str) -> Path:
    nic, rate, win = PLATFORMS[name]
    spec = out / f"{name}-{n}.toml"
    spec.write_text(SPEC.format(n=n, node_rate=rate, L=L))
    plat = out / f"{name}-{n}.xml"
    args = ["sim", "platform", "spec", str(spec), "-o", str(plat), "--wan-nic", nic]
    if win:
        args += ["--tcp-gamma", window]
    mpilab(*args, capture=True, timeout=600)
    return plat


def run(out: Path, name: str, n: int, a: argparse.Namespace) -> dict[str, Any]:
    doc_path = out / f"{name}-{n}.json"
    used = out / f"{name}-{n}.args.json"
    args = {"ops": a.ops, "size": a.size, "L": a.L,
            "window": a.window if PLATFORMS[name][2] else None}
    if doc_path.is_file() and used.is_file() and not a.force:
        doc = json.loads(doc_path.read_text())
        if not doc.get("partial") and json.loads(used.read_text()) == args:
            print(f"{name} {n}+{n}: {doc_path} (reused: same options)")
            return doc
    plat = platform(out, name, n, a.L, a.window)
    load = loadavg().split()[0]
    t0 = time.monotonic()
    p = mpilab("multilane", "run", "--sim", str(plat), "--reps", "1", "--model-reps", "1",
               "--ops", a.ops, "--impls", "single,multilane", "--sizes", a.size,
               "--lanes", "all", "-o", str(doc_path), capture=True, check=False,
               timeout=a.timeout)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"{name} {n}+{n}: {p.stderr.strip().splitlines()[-1:]}")
    write_json(used, args)
    print(f"{name} {n}+{n}: {doc_path} in {wall:.0f} s wall (load {load} at the start)")
    return json.loads(doc_path.read_text())


def show(name: str, n: int, doc: dict[str, Any]) -> None:
    for op in ("scatter", "gather"):
        size = next((r["bytes"] for r in doc["runs"] if r["op"] == op), None)
        if size is None:
            continue
        curve = _curve(doc, op, size)
        single = [statistics.median(r["times"]) for r in doc["runs"]
                  if r["op"] == op and r["impl"] == "single" and r["bytes"] == size]
        best_p = min(curve, key=lambda P: (curve[P], P))
        best = curve[best_p]
        near = sorted(P for P in curve if curve[P] <= 1.01 * best)
        ms = next((s for s in doc["model"]["sizes"] if s["bytes"] == size), {})
        print(f"\n{name} {n}+{n} {op} {size >> 10} KiB: single-lane "
              f"{single[0] if single else float('nan'):.4f} s; best P {best_p} "
              f"({best:.4f} s), within 1% of it: P {', '.join(map(str, near))}; "
              f"P_opt paper model {ms.get('P_opt')}, schedule model "
              f"{ms.get(f'P_opt_sim_{op}')}")
        print("| P | " + " | ".join(str(P) for P in sorted(curve)) + " |")
        print("| --- " * (len(curve) + 1) + "|")
        print(f"| {op} (s) | " + " | ".join(f"{curve[P]:.4f}" for P in sorted(curve)) + " |")
    m = doc.get("model") or {}
    if m.get("b"):
        print(f"\nmodel inputs measured on {name}: b_LAN {8 * m['b_lan'] / 1e6:.0f} Mbit/s, "
              f"L {1e3 * m['L']:.3f} ms, b(P) per pair, Mbit/s, P = 1..{len(m['b'])}: "
              f"{', '.join(f'{8 * b / 1e6:.1f}' for b in m['b'])}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="out/multilane_optimum")
    ap.add_argument("--nodes", type=int, choices=(4, 8, 16, 32), default=32,
                    help="nodes per site (default 32, the paper's)")
    ap.add_argument("--platforms", default="separate-win",
                    help=f"comma list of {', '.join(PLATFORMS)} (default separate-win)")
    ap.add_argument("--ops", default="scatter", help="scatter, gather or scatter,gather")
    ap.add_argument("--size", default="4M", help="bytes per rank (default 4M)")
    ap.add_argument("--L", default="5ms", help="one-way WAN latency (default 5ms)")
    ap.add_argument("--window", default="64K",
                    help="TCP window of the -win platforms (default 64K)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--force", action="store_true", help="run again even if done")
    a = ap.parse_args()
    names = a.platforms.split(",")
    bad = [x for x in names if x not in PLATFORMS]
    if bad:
        ap.error(f"--platforms {','.join(bad)}: expected some of {', '.join(PLATFORMS)}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    docs = [(name, run(out, name, a.nodes, a)) for name in names]
    for name, doc in docs:
        show(name, a.nodes, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
