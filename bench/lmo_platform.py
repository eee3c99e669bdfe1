#!/usr/bin/env python3
"""Writes examples/platforms/mpiblib16lmo.xml: MPIBlib's 16-node heterogeneous cluster
(examples/platforms/mpiblib16.xml, its CPUs and clock rates) in the shape where the LMO model's
nodes and links are separable, so that every configured value can be checked against the fit
(bench/lmo_sim.py; docs/models-lmo.md "Simulated platforms").

ASSUMED (the MPIBlib paper gives neither):
- every pair of nodes on its own path (SimGrid Full routing, one private split-duplex link per
  pair) of 1 Gbit/s and 50 us (mpiblib16's two 25 us access links), so one message's per-byte
  cost is its link's and no node's access link is shared;
- one degraded path: nodes 5 and 14 at 100 Mbit/s and 150 us (a port that negotiated Fast
  Ethernet, say), the slow link to be named;
- each node's CPU work per message it sends or receives (SMPI's per-host smpi/os, smpi/ois,
  smpi/or, charged to eager messages) of C = 10 us and t = 1 ns/B at 2.8 GHz, scaled by
  2.8 GHz / the node's clock: the two 1.8 GHz Opterons (nodes 14, 15) are the slowest nodes
  (15.6 us, 1.56 ns/B), the 3.6 GHz Xeons the fastest (7.8 us, 0.78 ns/B).
Run it with an eager limit above the largest message (bench/lmo_sim.py --eager 1048576).

  python3 bench/lmo_platform.py [-o examples/platforms/mpiblib16lmo.xml]
"""

from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from harness import REPO

SLOW = (5, 14)
C0, T0, F0 = 10e-6, 1e-9, 2.8e9


def build(src: Path) -> str:
    hosts = [(h.get("id", ""), float(h.get("speed", "0f").rstrip("f")))
             for h in ET.parse(src).getroot().iter("host")]
    if len(hosts) != 16 or any(f <= 0 for _, f in hosts):
        raise SystemExit(f"lmo_platform: {src}: expected 16 hosts with speeds")
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           '<platform version="4.1">',
           "<!-- Written by bench/lmo_platform.py from examples/platforms/mpiblib16.xml: its 16 "
           "nodes and clocks; every pair on its own 1 Gbit/s, 50 us path except 5-14 "
           "(100 Mbit/s, 150 us); per-host message overheads C = 10 us and t = 1 ns/B at 2.8 GHz, "
           "scaled by 2.8 GHz / clock (assumptions in the script). Eager limit above 256 KiB: "
           "bench/lmo_sim.py eager option. -->",
           " <config>", '  <prop id="smpi/bw-factor" value="0:1" />',
           '  <prop id="smpi/lat-factor" value="0:1" />',
           '  <prop id="network/crosstraffic" value="0" />', " </config>",
           ' <zone id="hl" routing="Full">']
    for name, f in hosts:
        v = f"0:{C0 * F0 / f:.6g}:{T0 * F0 / f:.6g}"
        out.append(f'  <host id="{name}" speed="{f:.0f}f" core="1">')
        out.append("   " + "".join(f'<prop id="smpi/{k}" value="{v}" />'
                                    for k in ("os", "ois", "or")))
        out.append("  </host>")
    n = len(hosts)
    for i in range(n):
        for j in range(i + 1, n):
            bw, lat = ("100000000bps", "150us") if (i, j) == SLOW else ("1000000000bps", "50us")
            out.append(f'  <link id="hl-{i}-{j}" bandwidth="{bw}" latency="{lat}" '
                       'sharing_policy="SPLITDUPLEX" />')
    for i in range(n):
        for j in range(i + 1, n):
            a, b = hosts[i][0], hosts[j][0]
            out.append(f'  <route src="{a}" dst="{b}" symmetrical="NO"><link_ctn id="hl-{i}-{j}" '
                       'direction="UP" /></route>')
            out.append(f'  <route src="{b}" dst="{a}" symmetrical="NO"><link_ctn id="hl-{i}-{j}" '
                       'direction="DOWN" /></route>')
    out += [" </zone>", "</platform>", ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", default=str(REPO / "examples/platforms/mpiblib16lmo.xml"))
    a = ap.parse_args()
    text = build(REPO / "examples/platforms/mpiblib16.xml")
    tmp = Path(a.out + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, a.out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
