#!/usr/bin/env bash
# Cost of the timing methods (MPIBlib paper, Table 1): native scatter and gather, 0 to
# 100 KB in 1 KB steps, one repetition each, with global, maximum and root timing, all in
# one mpilab-bench run (methods interleaved size by size). The wall time per method is the
# sum of the per-measurement wall_s the runner records; global includes the clock
# synchronisation done before each of its measurements, as in the paper.
#   bench/timing_cost.sh [NP]      env: MPILAB_BIN, OUTDIR (default bench/out)
set -euo pipefail
. "$(dirname "$0")/harness.sh"
cd "$REPO"
np=${1:-4}
bin=${MPILAB_BIN:-build/bin}
out=${OUTDIR:-bench/out}
mkdir -p "$out"
harness_mpirun launch "$np" --mca btl self,vader,tcp
"${launch[@]}" \
    "$bin/mpilab-bench" --ops scatter:native,gather:native --sizes 0:100K:1K --timing global,max,root \
    --min-reps 1 --max-reps 1 --allow-single-rep --warmup 0 --quiet --out "$out/timing_cost.results.json" >/dev/null
python3 - "$out/timing_cost.results.json" "$out/timing_cost.json" "$np" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wall: dict = {}
for m in d["measurements"]:
    key = (m["op"], m["timing"])
    wall[key] = wall.get(key, 0.0) + m["wall_s"]
paper = {("scatter", "global"): 28.7, ("scatter", "max"): 0.8, ("scatter", "root"): 0.8,
         ("gather", "global"): 44.7, ("gather", "max"): 15.6, ("gather", "root"): 15.7}
summary = {"np": int(sys.argv[3]), "sizes": "0..100K step 1K", "reps": 1, "wall_s": {}, "ratios": {}}
print(f"timing-method cost, {sys.argv[3]} ranks, 101 sizes x 1 rep (paper: 16 nodes, GigE, LAM)")
print(f"{'op':8} {'method':7} {'wall (s)':>10} {'paper (s)':>10}")
for op in ("scatter", "gather"):
    for t in ("global", "max", "root"):
        w = wall[(op, t)]
        summary["wall_s"][f"{op}.{t}"] = w
        print(f"{op:8} {t:7} {w:10.4f} {paper[(op, t)]:10.1f}")
    for t in ("max", "root"):
        r = wall[(op, "global")] / wall[(op, t)]
        summary["ratios"][f"{op}.global/{t}"] = r
        print(f"{op:8} global/{t:5} = {r:6.1f}x  (paper {paper[(op, 'global')] / paper[(op, t)]:.1f}x, target >= 10x)")
cs = d["provenance"]["clock_sync"]
summary["clock_sync"] = {"method": cs["method"], "syncs": cs["syncs"], "max_residual_s": cs["max_residual_s"]}
print(f"clock syncs: {cs['syncs']}, max residual {cs['max_residual_s']:.3g} s")
tmp = sys.argv[2] + ".tmp"
json.dump(summary, open(tmp, "w"), indent=1)
import os
os.replace(tmp, sys.argv[2])
PY
