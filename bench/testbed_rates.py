#!/usr/bin/env python3
"""Configured versus measured b_WAN (one node) and B_WAN (all nodes of a site at once),
with 1, 2 and 4 parallel TCP flows per node, plus the WAN RTT against 2L.

Uses examples/testbed/dual-rail-2x2.toml by default (b_WAN 50 Mbit/s, B_WAN 80 Mbit/s,
L 5 ms). Needs root. Example:
  MPILAB_BIN=build/bin python3 bench/testbed_rates.py --time 3
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from harness import REPO, write_json
from mpilab.testbed import check, net, spec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", nargs="?", default=str(REPO / "examples/testbed/dual-rail-2x2.toml"))
    ap.add_argument("--time", type=float, default=3.0)
    ap.add_argument("--flows", default="1,2,4")
    ap.add_argument("--prefix", default="mlr")
    ap.add_argument("--out", default="results/testbed_rates.json")
    a = ap.parse_args()
    sp = spec.load(a.spec, a.prefix)
    net.up(sp)
    rows = []
    try:
        for flows in (int(x) for x in a.flows.split(",")):
            rows += check.check(sp, seconds=a.time, parallel=flows, lan=False, per_node=False)
    finally:
        net.down(sp.prefix)
    print(check.format_rows(rows))
    write_json(a.out, {"bench": "testbed_rates", "spec": sp.to_dict(),
                       "rows": [dict(asdict(r), rel_err=r.rel_err) for r in rows]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
