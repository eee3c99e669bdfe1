#!/usr/bin/env bash
# Sequential versus parallel all-pairs point-to-point (MPIBlib paper, section 5): 100
# repetitions of a 4 KB round trip for every pair, 4 ranks. The runner records the wall
# time of the whole all-pairs measurement; the two schedules alternate ROUNDS times and the
# medians are compared.   bench/p2p_schedule.sh [NP] [ROUNDS]   env: MPILAB_BIN, OUTDIR,
# TESTBED=PREFIX to run inside an emulated cluster (mpilab testbed up), where round trips
# are bound by the network as on the paper's cluster rather than by 2 shared cores.
set -euo pipefail
. "$(dirname "$0")/harness.sh"
cd "$REPO"
np=${1:-4}
rounds=${2:-3}
bin=${MPILAB_BIN:-build/bin}
out=${OUTDIR:-bench/out}
mkdir -p "$out"
files=()
for r in $(seq 1 "$rounds"); do
    for mode in sequential parallel; do
        f="$out/p2p_schedule.$mode.$r.results.json"
        if [ -n "${TESTBED:-}" ]; then
            launch=(env MPILAB_BIN="$bin" mpilab bench --np "$np" --testbed "$TESTBED" -- )
            runner=()
        else
            harness_mpirun launch "$np" --mca btl self,vader,tcp
            runner=("$bin/mpilab-bench")
        fi
        "${launch[@]}" "${runner[@]}" --ops p2p --sizes 4K --min-reps 100 --max-reps 100 --p2p-schedule "$mode" \
            --no-fit --quiet --out "$f" >/dev/null
        files+=("$f")
    done
done
python3 - "$out/p2p_schedule.json" "$np" "${files[@]}" <<'PY'
import json, os, statistics, sys
walls: dict = {"sequential": [], "parallel": []}
means: dict = {"sequential": [], "parallel": []}
for f in sys.argv[3:]:
    d = json.load(open(f))
    ms = d["measurements"]
    mode = ms[0]["schedule"]
    walls[mode].append(ms[0]["all_pairs_wall_s"])
    means[mode].append(statistics.mean(m["stats"]["mean"] for m in ms))
seq, par = statistics.median(walls["sequential"]), statistics.median(walls["parallel"])
print(f"all-pairs p2p, {sys.argv[2]} ranks, 100 x 4 KB round trips per pair")
print(f"sequential: {seq:.4f} s (runs {', '.join(f'{w:.4f}' for w in walls['sequential'])})  paper 3.5 s")
print(f"parallel:   {par:.4f} s (runs {', '.join(f'{w:.4f}' for w in walls['parallel'])})  paper 0.5 s")
print(f"speed-up sequential/parallel = {seq / par:.2f}x (paper 7.0x, target >= 1.5x)")
ms_, mp_ = statistics.median(means["sequential"]), statistics.median(means["parallel"])
print(f"mean round trip over pairs: sequential {ms_ * 1e6:.2f} us, parallel {mp_ * 1e6:.2f} us")
summary = {"np": int(sys.argv[2]), "bytes": 4096, "reps": 100, "wall_s": walls, "median_wall_s":
           {"sequential": seq, "parallel": par}, "speedup": seq / par,
           "mean_roundtrip_s": {"sequential": ms_, "parallel": mp_}}
tmp = sys.argv[1] + ".tmp"
json.dump(summary, open(tmp, "w"), indent=1)
os.replace(tmp, sys.argv[1])
PY
