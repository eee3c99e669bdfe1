#!/usr/bin/env python3
"""The multilane paper at its own size, simulated: scatter and gather over 32 + 32 nodes
(Chiba, Endo and Matsuoka), 1 Gbit/s WAN (B_WAN per site uplink), 250 Mbit/s per pair of
nodes across it (b_WAN), 1 Gbit/s LAN, one-way WAN latency L = 5 ms and 20 ms; SimGrid SMPI
running mpilab-multilane through `mpilab multilane run --sim`.

Parts (each one `mpilab multilane run --sim`, so each fits one bench slot):
  platforms                     the two testbed specs and their SimGrid platforms
  sizes  --L 5ms|20ms           time against message size: single-lane and multilane at the
                                schedule model's P_opt, 64 KiB .. 8 MiB per rank
  lanes  --L ... --op OP        time against the number of lanes P = 1 .. 32 at 4 MiB
  summary                       the tables (markdown) from the documents: speed-up over
                                single-lane, time against P, the models' P_opt against the
                                best measured P and the time lost at it
Example:
  for L in 5ms 20ms; do python3 bench/scale_multilane.py sizes --L $L; \\
    for op in scatter gather; do python3 bench/scale_multilane.py lanes --L $L --op $op; done; done
  python3 bench/scale_multilane.py summary
Simulated times are deterministic (one repetition each); the wall time of each part is
recorded beside its document. Paper: the model's P_opt 32, the measured optimum 16 to 25.
Targets (issue 26): multilane at least 2x single-lane at M >= 4 MiB; the time at the
model's P_opt within 5% of the best measured time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from harness import loadavg, mpilab

LATENCIES = ("5ms", "20ms")
SIZES = "64K,256K,1M,4M,8M"
LANES_BYTES = 4 << 20
SPEC = """# the multilane paper's grid (bench/scale_multilane.py): 32 + 32 nodes, 1 Gbit/s LAN,
# 250 Mbit/s per node across the WAN, 1 Gbit/s per site uplink, one-way WAN latency {L}
prefix = "mlp"
[cluster]
sites = 2
nodes_per_site = 32
rails = 1
[lan]
rate = "1Gbit"
[wan]
node_rate = "250Mbit"
total_rate = "1Gbit"
delay = "{L}"
"""


def platforms(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for L in LATENCIES:
        spec = out / f"ml32-{L}.toml"
        spec.write_text(SPEC.format(L=L))
        p = mpilab("sim", "platform", "spec", str(spec), "-o", str(out / f"ml32-{L}.xml"),
                   capture=True, timeout=3600)
        print(p.stderr.strip())


def run_part(out: Path, name: str, L: str, args: list[str]) -> None:
    plat = out / f"ml32-{L}.xml"
    if not plat.is_file():
        platforms(out)
    load = loadavg().split()[0]
    doc = out / f"{name}-{L}.json"
    t0 = time.monotonic()
    p = mpilab("multilane", "run", "--sim", str(plat), "--reps", "1", "--model-reps", "1",
               *args, "-o", str(doc), capture=True, check=False, timeout=3600)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"{name} {L}: {p.stderr.strip()}")
    (out / f"{name}-{L}.wall").write_text(json.dumps({"wall_s": wall, "load": load}))
    print(f"{name} {L}: {doc} in {wall:.0f} s wall (load {load} at the start)")


def _runs(doc: dict, op: str, impl: str, size: int | None = None) -> list[dict]:
    return [r for r in doc["runs"] if r["op"] == op and r["impl"] == impl
            and (size is None or r["bytes"] == size)]


def _t(r: dict) -> float:
    return statistics.median(r["times"])


def _wall(out: Path, stem: str) -> str:
    w = out / f"{stem}.wall"
    if not w.is_file():
        return "-"
    d = json.loads(w.read_text())
    return f"{d['wall_s']:.0f} s (load {d['load']})"


def summary(out: Path) -> int:
    print("### Time against message size (simulated s; multilane at the schedule model's "
          "P_opt)\n")
    print("| L | op | M per rank | single-lane | multilane (P) | speed-up |")
    print("| --- | --- | --- | --- | --- | --- |")
    missed = 0
    for L in LATENCIES:
        f = out / f"sizes-{L}.json"
        if not f.is_file():
            continue
        doc = json.loads(f.read_text())
        for op in ("scatter", "gather"):
            for s in _runs(doc, op, "single"):
                ml = _runs(doc, op, "multilane", s["bytes"])
                if not ml:
                    continue
                best = min(ml, key=_t)
                sp = _t(s) / _t(best)
                if s["bytes"] >= 4 << 20 and sp < 2:
                    missed += 1
                print(f"| {L} | {op} | {s['bytes'] >> 10} KiB | {_t(s):.4f} | "
                      f"{_t(best):.4f} ({best['lanes']}) | {sp:.2f}x |")
        print(f"\n(sizes-{L}: wall {_wall(out, f'sizes-{L}')})\n")
    print("### Time against lanes P at 4 MiB per rank (simulated s)\n")
    rows = []
    for L in LATENCIES:
        for op in ("scatter", "gather"):
            f = out / f"lanes-{op}-{L}.json"
            if not f.is_file():
                continue
            doc = json.loads(f.read_text())
            curve = {r["lanes"]: _t(r) for r in _runs(doc, op, "multilane", LANES_BYTES)}
            single = _runs(doc, op, "single", LANES_BYTES)
            if not curve:
                continue
            best_p = min(curve, key=lambda P: curve[P])
            best = curve[best_p]
            near = sorted(P for P in curve if curve[P] <= 1.05 * best)
            ms = next((s for s in doc["model"]["sizes"] if s["bytes"] == LANES_BYTES), {})
            pts = ", ".join(f"{P}: {curve[P]:.4f}" for P in sorted(curve)
                            if P in (1, 2, 4, 8, 12, 16, 20, 24, 28, 32) or P == best_p)
            print(f"{L} {op}: single-lane {_t(single[0]):.4f} s; multilane P -> s: {pts}")
            for model, key in (("paper", "P_opt"), ("schedule", f"P_opt_sim_{op}")):
                P = ms.get(key)
                t = curve.get(P) if isinstance(P, int) else None
                ex = t / best - 1 if t else None
                if ex is None or ex > 0.05:
                    missed += 1
                rows.append(f"| {L} | {op} | {model} | {P} | "
                            f"{'-' if t is None else f'{t:.4f}'} | {best_p} | {best:.4f} | "
                            f"{near[0]}-{near[-1]} | "
                            f"{'-' if ex is None else f'{100 * ex:+.1f}%'} |")
            print(f"  (wall {_wall(out, f'lanes-{op}-{L}')})")
    print("\n### The models' P_opt against the best measured P (4 MiB per rank)\n")
    print("| L | op | model | model P_opt | time at it (s) | best P | best time (s) | "
          "P within 5% of best | time lost at the model's P_opt |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print(f"\ntargets missed: {missed}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=("platforms", "sizes", "lanes", "summary"))
    ap.add_argument("--out", default="out/scale_multilane")
    ap.add_argument("--L", choices=LATENCIES, default="5ms")
    ap.add_argument("--op", choices=("scatter", "gather"), default="scatter")
    a = ap.parse_args()
    out = Path(a.out)
    if a.part == "platforms":
        platforms(out)
    elif a.part == "sizes":
        run_part(out, "sizes", a.L, ["--sizes", SIZES, "--lanes", "opt"])
    elif a.part == "lanes":
        run_part(out, f"lanes-{a.op}", a.L, ["--ops", a.op, "--sizes", str(LANES_BYTES),
                                             "--lanes", "all"])
    else:
        return summary(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
