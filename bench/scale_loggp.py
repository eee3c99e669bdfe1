#!/usr/bin/env python3
"""LogGP at scale on a simulated flat cluster: the pairs of the sampled design against one
random perfect matching of the ranks (mpilab-bench --loggp-pairs design | matching), side by
side in one run: the wall time of the LogGP phase here and the fit against the platform.

The platform is the survey's (bench/scale_survey.py: `mpilab sim platform flat --nodes N`,
10 Gbit/s and 1 us per node link, so a route of 2 links: latency 2 us, G 0.8 ns/B; LogGP's L
is the latency plus one byte's time, as in bench/scale_ground_truth.py). Each design is one
`mpilab bench --sim` run of `--ops p2p` with the survey's point-to-point arguments and
`--models loggp`; its stderr lines are timestamped as they arrive, and the LogGP phase is the
time from the last line before LogGP's first progress line (the end of the p2p part) to its
"[loggp] ... measured" line.

--sizes survey: the survey's 17 sizes (0 .. 1 MiB; the wall time the survey pays);
--sizes eager: 0 .. 32 KiB, the eager range the ground-truth targets are checked on (SMPI's
rendezvous above 64 KiB changes o_s and o_r). Targets (issue 26): every pair's L and G
within 2% of the platform's, with intervals that contain them. Simulated times are
deterministic; the wall times are this machine's (report them from a bench slot only).

  python3 bench/scale_loggp.py --ranks 256 --sizes eager,survey [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

SIZES = {"survey": "0,1:1M:x4,2K,8K,12K,32K,128K", "eager": "0,1K,2K,4K,8K,16K,32K"}
LATENCY, G = 2e-6, 8 / 10e9  # the route: 2 links of 1 us; 10 Gbit/s


def run(plat: Path, n: int, design: str, sizes: str, out: Path) -> dict:
    cmd = harness.mpilab_cmd(
        "bench", "--sim", str(plat), "--np", str(n), "--out", str(out), "--",
        "--ops", "p2p", "--sizes", sizes, "--p2p-schedule", "parallel", "--min-reps", "5",
        "--max-reps", "1000000", "--eps", "0.025", "--isolation", "barrier",
        "--models", "loggp", "--loggp-pairs", design)
    t0 = time.monotonic()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(cmd, env=harness.env(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, errors="replace") as p:
        assert p.stderr is not None
        for line in p.stderr:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))
    total = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"scale_loggp: {design} at {n} ranks failed (exit {p.returncode}): "
                 f"{lines[-1][1] if lines else ''}")
    first = next(k for k, (_, t) in enumerate(lines) if t.startswith("[loggp]"))
    end = next(s for s, t in lines if t.startswith("[loggp]") and "measured" in t)
    start = lines[first - 1][0] if first > 0 else 0.0
    lg = json.loads(out.read_text())["models"]["loggp"]
    truth = {"L": LATENCY + G, "G": G}
    worst = {k: 0.0 for k in truth}
    contained = {k: 0 for k in truth}
    for pr in lg["pairs"]:
        for k, v in truth.items():
            q = pr["quality"][k]
            worst[k] = max(worst[k], abs(q["raw"] / v - 1))
            contained[k] += q["lo"] <= v <= q["hi"]
    return {"ranks": n, "design": design, "pairs_design": lg.get("pairs_design"),
            "pairs": len(lg["pairs"]), "sizes": sizes, "wall_s": round(total, 2),
            "loggp_wall_s": round(end - start, 2), "loggp_simulated_s": lg.get("wall_s"),
            "L_worst_error": worst["L"], "G_worst_error": worst["G"],
            "L_contained": contained["L"], "G_contained": contained["G"],
            "met": all(worst[k] <= 0.02 and contained[k] == len(lg["pairs"]) for k in truth)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--sizes", default="eager,survey")
    ap.add_argument("--designs", default="design,matching")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not 66 <= a.ranks <= 4096:
        sys.exit("scale_loggp: --ranks: 66..4096 (the sampled design starts above 64)")
    kinds = [s for s in a.sizes.split(",") if s]
    designs = [d for d in a.designs.split(",") if d]
    if not kinds or any(k not in SIZES for k in kinds):
        sys.exit(f"scale_loggp: --sizes: a list of {', '.join(SIZES)}")
    if not designs or any(d not in ("design", "matching") for d in designs):
        sys.exit("scale_loggp: --designs: a list of design, matching")
    with open("/proc/loadavg") as f:
        print(f"load at start: {f.read().strip()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="scale_loggp.") as tmp:
        d = Path(tmp)
        plat = d / "flat.xml"
        harness.mpilab("sim", "platform", "flat", "--nodes", str(a.ranks), "-o", str(plat),
                       capture=True)
        for kind in kinds:
            for design in designs:
                r = run(plat, a.ranks, design, SIZES[kind], d / "r.json")
                r["size_set"] = kind
                print(json.dumps(r), flush=True)
                rows.append(r)
    print("| sizes | pairs (design) | LogGP phase wall (s) | whole run wall (s) "
          "| LogGP simulated (s) | worst L error | worst G error | intervals containing L / G "
          "| target |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['size_set']} | {r['pairs']} ({r['pairs_design']}) | "
              f"{r['loggp_wall_s']:.1f} | {r['wall_s']:.1f} | {r['loggp_simulated_s']:.3f} | "
              f"{100 * r['L_worst_error']:.4f}% | {100 * r['G_worst_error']:.4f}% | "
              f"{r['L_contained']} / {r['G_contained']} of "
              f"{r['pairs']} | {'met' if r['met'] else 'NOT met'} |")
    if a.json:
        harness.write_json(a.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
