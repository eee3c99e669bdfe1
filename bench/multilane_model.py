#!/usr/bin/env python3
"""Model accuracy of multilane scatter/gather on the emulated grid
(docs/multilane-predictions.md): each step brings up its own testbed, runs `mpilab multilane
run` (model inputs measured in the same job, alpha calibrated per operation on runs at
--alpha-bytes, then the timed points with per-rank phase marks), takes the testbed down,
and prints, per point, measured against both models' predictions and the three phases
(prepare, WAN, LAN) measured against the schedule model's.

Steps (--steps, comma list):
  accuracy  examples/testbed/multilane-2x4.toml (8 ranks, b_WAN 50, B_WAN 200 Mbit/s,
            L 5 ms): single-lane and multilane P = 1..4 at --sizes     -> OUT/acc-2x4.json
  sockbuf   examples/testbed/multilane-2x4-sockbuf.toml (b_WAN from 64 KiB TCP buffers
            instead of shaping): the same at the largest size          -> OUT/sockbuf-2x4.json
  sites3    examples/testbed/multilane-3x3.toml (3 sites): the S-site schedule model
            against measurement at --sizes                             -> OUT/sites-3x3.json
Benchmark, not a test: numbers are reported, not asserted.  Needs root.

  MPILAB_BIN=build/bin python3 bench/multilane_model.py --out out/mlmodel
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

import harness
from harness import REPO
from mpilab.multilane import doc, report
from mpilab.report.html import fmt_bytes

STEPS = {
    "accuracy": ("multilane-2x4.toml", "acc-2x4.json", False),
    "sockbuf": ("multilane-2x4-sockbuf.toml", "sockbuf-2x4.json", True),
    "sites3": ("multilane-3x3.toml", "sites-3x3.json", False),
}


mpilab = functools.partial(harness.mpilab, echo=True)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.0f}%"


def ms(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{1e3 * x:.{digits}f}"


def summary(d: doc.Doc) -> None:
    m = d.model or {}
    print(f"\n## {Path(d.path).name}: L {ms(m.get('L'))} ms, l {1e6 * m.get('l', 0):.0f} us, "
          f"b_LAN {m.get('b_lan', 0) * 8e-6:.0f} Mbit/s, b(P) "
          + ", ".join(f"{b * 8e-6:.1f}" for b in m.get("b", [])) + " Mbit/s")
    cal = m.get("alpha_calibration") or {}
    for op in ("scatter", "gather"):
        c = cal.get(op) or {}
        if c:
            print(f"alpha {op}: {ms(c.get('alpha'), 2)} ms (95% CI {ms(c['ci95'][0], 2)} .. "
                  f"{ms(c['ci95'][1], 2)}), measured {ms(c.get('measured_mean'), 2)} ms at "
                  f"{fmt_bytes(cal.get('bytes', 0))}, model without alpha "
                  f"{ms(c.get('model_without_alpha'), 2)} ms; runs "
                  + ", ".join(ms(t, 2) for t in c.get("times", [])))
    print("(measured: median of the repetitions; phases: their means, ms)")
    print("| op | impl | P | M | measured ms (min-max) | paper | err | schedule | err | "
          "prepare meas/model | WAN meas/model | LAN meas/model |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in d.runs:
        sp = doc.phase_split(r) or {}

        def ph(k: str, sp: dict[str, tuple[float | None, float | None]] = sp) -> str:
            a, b = sp.get(k, (None, None))
            return f"{ms(a)} / {ms(b)}"
        pe = r.predicted_paper / r.median - 1 if r.predicted_paper else None
        se = r.predicted_sim / r.median - 1 if r.predicted_sim else None
        print(f"| {r.op} | {r.impl} | {r.lanes or '-'} | {fmt_bytes(r.bytes)} | "
              f"{ms(r.median)} ({ms(min(r.times))}-{ms(max(r.times))}) | "
              f"{ms(r.predicted_paper)} | {pct(pe)} | {ms(r.predicted_sim)} | {pct(se)} | "
              f"{ph('prepare')} | {ph('wan')} | {ph('lan')} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/mlmodel")
    ap.add_argument("--prefix", default=os.environ.get("MPILAB_TESTBED_PREFIX", "mlm"))
    ap.add_argument("--steps", default="accuracy,sockbuf,sites3")
    ap.add_argument("--sizes", default="1M,4M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--model-reps", type=int, default=3)
    ap.add_argument("--alpha-bytes", default="1K")
    ap.add_argument("--report-only", action="store_true", help="summarise OUT/*.json only")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = [s for s in a.steps.split(",") if s]
    for s in steps:
        if s not in STEPS:
            print(f"--steps: unknown step '{s}' (known: {', '.join(STEPS)})", file=sys.stderr)
            return 2
    for s in steps if not a.report_only else []:
        spec, name, largest_only = STEPS[s]
        sizes = a.sizes.split(",")[-1] if largest_only else a.sizes
        mpilab("testbed", "up", "--prefix", a.prefix, str(REPO / "examples/testbed" / spec))
        try:
            mpilab("multilane", "run", "--testbed", a.prefix, "--sizes", sizes, "--impls",
                   "single,multilane", "--lanes", "all", "--reps", str(a.reps),
                   "--model-reps", str(a.model_reps), "--alpha-bytes", a.alpha_bytes,
                   "-o", str(out / name))
        finally:
            mpilab("testbed", "down", "--prefix", a.prefix)
    docs = [doc.load(p) for p in sorted(out.glob("*.json"))]
    for d in docs:
        summary(d)
    print()
    for row in report.targets(docs):
        print(" | ".join(str(x) for x in row))
    page = report.write(docs, out / "multilane-model.html")
    print(f"report: {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
