#!/usr/bin/env python3
"""Ground truth for the suite's bandwidth: over a testbed link shaped to a known rate
(tcp-testbed-shaped, 200 Mbit/s), large-message ping-pong and streaming bandwidth measured
by mpilab against the configured rate and against iperf3 on the same link (the testbed's
check module), in one run. Rates compare on the wire (goodput x (MSS+66)/MSS, as the shaper
counts frames) with the configured rate, and as goodput with iperf3. Needs root. Example:
  MPILAB_BIN=build/bin python3 bench/suite_validate_bw.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness import write_json
from mpilab.suite import runner
from mpilab.suite.transports import TRANSPORTS
from mpilab.testbed import check

MSS = 1448


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=4.0, help="seconds of iperf3")
    ap.add_argument("--out", default="results/suite_validate_bw.json")
    ap.add_argument("--keep", action="store_true", help="leave the testbed up")
    a = ap.parse_args()
    t = TRANSPORTS["tcp-testbed-shaped"]
    sp = runner.testbed_spec(t)
    configured = float(sp.lan_rate)
    plan = runner.Plan(window=32, max_reps=10)
    rows = []
    try:
        runner.testbed_up(t)
        good_iperf, wire_iperf = check.iperf(sp, [("s0n0", "s0n1", 0)], a.time)[0]
        with tempfile.TemporaryDirectory() as tmp:
            d = runner.run_bench(t, plan, 2, "pingpong,stream", "1M,4M", Path(tmp) / "bw.json")
        for m in d["measurements"]:
            good = 8.0 * m["derived"]["bandwidth_Bps"]
            wire = good * (MSS + check.HDR_BYTES) / MSS
            rows.append({"op": m["op"], "bytes": m["bytes"], "goodput_bps": good,
                         "wire_bps": wire, "vs_configured": wire / configured - 1,
                         "vs_iperf3": good / good_iperf - 1, "reps": m["stats"]["reps"]})
    finally:
        if not a.keep:
            runner.testbed_down()
    print(f"configured {configured / 1e6:.1f} Mbit/s; iperf3 goodput {good_iperf / 1e6:.1f} "
          f"Mbit/s (wire {wire_iperf / 1e6:.1f}, {wire_iperf / configured - 1:+.1%})")
    ok = True
    for r in rows:
        inside = abs(r["vs_configured"]) <= 0.05 and abs(r["vs_iperf3"]) <= 0.05
        ok &= inside if r["bytes"] >= 4 << 20 else True
        print(f"{r['op']:9} {r['bytes']:>8} B  goodput {r['goodput_bps'] / 1e6:6.1f} Mbit/s  "
              f"wire {r['wire_bps'] / 1e6:6.1f}  vs configured {r['vs_configured']:+.1%}  "
              f"vs iperf3 {r['vs_iperf3']:+.1%}  {'ok' if inside else 'OUTSIDE 5%'}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, {"bench": "suite_validate_bw", "configured_bps": configured,
                     "iperf3_goodput_bps": good_iperf, "iperf3_wire_bps": wire_iperf,
                     "rows": rows})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
