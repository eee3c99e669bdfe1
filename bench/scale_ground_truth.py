#!/usr/bin/env python3
"""Model ground truth on simulated links: Hockney alpha/beta and LogGP L/G fitted by
mpilab-bench (SMPI build, `mpilab bench --sim`) on platforms whose latency and bandwidth are
known exactly, against those values.

Platforms: two hosts behind one switch (mpilab sim platform flat: one route = 2 links of
latency `lat` and rate `bw`, so alpha = 2 lat, beta = 8 / bw) at 10 Gbit/s and 5 us,
1 Gbit/s and 25 us, 100 Mbit/s and 1 ms; and a testbed spec of 2 sites x 1 node (one-way
L = 5 ms, bottleneck b_WAN = 100 Mbit/s: alpha = L, beta = 8 / b_WAN).
Hockney on p2p 0 B .. 1 MiB (both protocols), LogGP on 0 .. 32 KiB (the eager range:
SMPI delivers messages below 64 KiB eagerly with mpilab's smpi/async-small-thresh; LogGP's
o_s and o_r change with the protocol). LogGP's L of a platform is its latency plus one
byte's time (T(m) = o_s + L + (m - 1) G + o_r charges the first byte to L).

Targets (issue 26): every value within 2% of the platform's, with an interval that
contains it. Simulated times are deterministic: the load at the start only changes the
wall time.
  python3 bench/scale_ground_truth.py
"""

from __future__ import annotations

import functools
import json
import sys
import tempfile
import time
from pathlib import Path

import harness

FLATS = [("10Gbit", 10e9, "5us", 5e-6), ("1Gbit", 1e9, "25us", 25e-6),
         ("100Mbit", 100e6, "1ms", 1e-3)]
SPEC = """prefix = "gt"
[cluster]
sites = 2
nodes_per_site = 1
rails = 1
[lan]
rate = "1Gbit"
[wan]
node_rate = "100Mbit"
total_rate = "200Mbit"
delay = "5ms"
"""
HOCKNEY_SIZES = "0,1K,4K,16K,64K,256K,1M"
LOGGP_SIZES = "0,1K,2K,4K,8K,16K,32K"


mpilab = functools.partial(harness.mpilab, capture=True, timeout=1800)


def fit(plat: Path, out: Path, model: str, sizes: str) -> dict:
    mpilab("bench", "--sim", str(plat), "--np", "2", "--out", str(out), "--", "--ops", "p2p",
           "--sizes", sizes, "--models", model, "--quiet")
    return json.loads(out.read_text())["models"]


def row(name: str, truth: float, q: dict, unit: float, fmt: str) -> tuple[str, bool]:
    v, lo, hi = q["raw"], q["lo"], q["hi"]
    err = v / truth - 1
    ok = abs(err) <= 0.02 and lo <= truth <= hi
    return (f"| {name} | {truth / unit:{fmt}} | {v / unit:{fmt}} | [{lo / unit:{fmt}}, "
            f"{hi / unit:{fmt}}] | {100 * err:+.4f}% | {'yes' if lo <= truth <= hi else 'NO'} |",
            ok)


def main() -> int:
    with open("/proc/loadavg") as f:
        print(f"load at start: {f.read().strip()}")
    t0 = time.monotonic()
    lines, missed = [], 0
    with tempfile.TemporaryDirectory(prefix="gt-") as tmp:
        d = Path(tmp)
        cases = []
        for bw_s, bw, lat_s, lat in FLATS:
            plat = d / f"flat-{bw_s}.xml"
            mpilab("sim", "platform", "flat", "--nodes", "2", "--bw", bw_s, "--lat", lat_s,
                   "-o", str(plat))
            cases.append((f"flat 2 x {bw_s}, {lat_s} per link", plat, 2 * lat, 8 / bw))
        (d / "spec.toml").write_text(SPEC)
        plat = d / "spec.xml"
        mpilab("sim", "platform", "spec", str(d / "spec.toml"), "-o", str(plat))
        cases.append(("spec 2 sites: L 5 ms, b_WAN 100 Mbit/s", plat, 5e-3, 8 / 100e6))
        for name, plat, alpha, beta in cases:
            h = fit(plat, d / "h.json", "hockney", HOCKNEY_SIZES)["hockney"]
            (p,) = h["pairs"]
            lg = fit(plat, d / "l.json", "loggp", LOGGP_SIZES)["loggp"]
            (pl,) = lg["pairs"]
            wire = h.get("simulated_wire", {})
            lines.append(f"| **{name}** | | | | | |")
            for label, truth, q, unit, fmt in (
                    ("Hockney alpha (us)", alpha, p["quality"]["alpha"], 1e-6, ".4f"),
                    ("Hockney beta (ns/B)", beta, p["quality"]["beta"], 1e-9, ".6f"),
                    ("LogGP L (us)", alpha + beta, pl["quality"]["L"], 1e-6, ".4f"),
                    ("LogGP G (ns/B)", beta, pl["quality"]["G"], 1e-9, ".6f")):
                text, ok = row(label, truth, q, unit, fmt)
                lines.append(text)
                missed += not ok
        print(f"SMPI accounted for: envelope {wire.get('envelope_bytes')} B per message, "
              f"clock read cost {wire.get('clock_tick_s')} s per MPI_Wtime\n")
    print("| value | platform | fitted | interval | error | contains |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(lines))
    print(f"\ntargets missed: {missed} (within 2% with an interval containing the platform's "
          f"value); wall {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
