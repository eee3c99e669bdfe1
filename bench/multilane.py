#!/usr/bin/env python3
"""The paper's experiments (Chiba, Endo, Matsuoka) on the emulated grid, as in
docs/multilane.md: builds the testbed (examples/testbed/multilane-2x8.toml unless --spec),
then
  1. time vs message size, native / single-lane / multilane at the schedule model's P_opt,
     measured and predicted, L = 5 ms (Fig. 4, 5)            -> OUT/sizes-L5.json
  2. time vs P at a fixed large M (default 4 MiB), L = 5 ms (Fig. 9, 10) -> OUT/lanes-L5.json
  3. WAN bandwidth in use over time during one M scatter and one M gather, single-lane and
     multilane, L = 20 ms, sampled on the WAN router every 5 ms (Fig. 7, 8)
                                                              -> OUT/timeline-L20.json
and writes OUT/multilane.html with the targets. Needs root (network namespaces). Takes
10-15 minutes with the defaults. Benchmark, not a test: numbers are reported, not asserted.

  MPILAB_BIN=build/bin python3 bench/multilane.py --out out/multilane
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from pathlib import Path

import harness
from harness import REPO
from mpilab.multilane import doc, report

mpilab = functools.partial(harness.mpilab, echo=True)


def with_delay(spec_text: str, delay: str) -> str:
    return re.sub(r'(?m)^delay\s*=.*$', f'delay = "{delay}"', spec_text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default=str(REPO / "examples/testbed/multilane-2x8.toml"))
    ap.add_argument("--prefix", default=os.environ.get("MPILAB_TESTBED_PREFIX", "mlb"))
    ap.add_argument("--out", default="out/multilane")
    ap.add_argument("--sizes", default="64K,256K,1M,4M")
    ap.add_argument("--big", default="4M", help="M of the P sweep and the timelines")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--skip", default="", help="comma list of steps to skip: sizes,lanes,timeline")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, a.skip.split(",")))
    spec = Path(a.spec).read_text()
    common = ["--testbed", a.prefix, "--reps", str(a.reps)]
    try:
        if not {"sizes", "lanes"} <= skip:
            s5 = out / "spec-L5.toml"
            s5.write_text(with_delay(spec, "5ms"))
            mpilab("testbed", "up", "--prefix", a.prefix, str(s5))
            if "sizes" not in skip:
                mpilab("multilane", "run", *common, "--sizes", a.sizes,
                       "--impls", "native,single,multilane", "--lanes", "opt",
                       "-o", str(out / "sizes-L5.json"))
            if "lanes" not in skip:
                mpilab("multilane", "run", *common, "--sizes", a.big, "--impls", "multilane",
                       "--lanes", "all", "-o", str(out / "lanes-L5.json"))
            mpilab("testbed", "down", "--prefix", a.prefix)
        if "timeline" not in skip:
            s20 = out / "spec-L20.toml"
            s20.write_text(with_delay(spec, "20ms"))
            mpilab("testbed", "up", "--prefix", a.prefix, str(s20))
            mpilab("multilane", "run", "--testbed", a.prefix, "--reps", "1", "--sizes", a.big,
                   "--impls", "single,multilane", "--lanes", "opt", "--sample-wan",
                   "-o", str(out / "timeline-L20.json"))
    finally:
        mpilab("testbed", "down", "--prefix", a.prefix)
    docs = [doc.load(p) for p in sorted(out.glob("*.json"))]
    page = report.write(docs, out / "multilane.html")
    print(f"report: {page}")
    for row in report.targets(docs):
        print(" | ".join(str(x) for x in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
