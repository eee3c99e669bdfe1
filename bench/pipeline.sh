#!/usr/bin/env bash
# Isolated versus pipelined repetitions of scatter and gather (the pipeline effect of the
# MPIBlib paper's Fig. 1). Isolated: a barrier before every repetition, maximum timing.
# Pipelined: repetitions back to back in chunks of DEPTH, per-repetition time = chunk time /
# DEPTH (maximum over ranks). Both in one script run, same sizes, fixed repetition count.
#   bench/pipeline.sh [NP] [DEPTH]   env: MPILAB_BIN, OUTDIR
set -euo pipefail
. "$(dirname "$0")/harness.sh"
cd "$REPO"
np=${1:-4}
depth=${2:-10}
bin=${MPILAB_BIN:-build/bin}
out=${OUTDIR:-bench/out}
mkdir -p "$out"
harness_mpirun launch "$np" --mca btl self,vader,tcp
for iso in barrier none; do
    "${launch[@]}" \
        "$bin/mpilab-bench" --ops scatter:native,gather:native,scatter:linear,gather:linear --sizes 1:256K:x4 \
        --timing max --min-reps 20 --max-reps 20 --isolation "$iso" --pipeline-depth "$depth" --quiet \
        --out "$out/pipeline.$iso.results.json" >/dev/null
done
python3 - "$out/pipeline.barrier.results.json" "$out/pipeline.none.results.json" "$out/pipeline.json" "$np" <<'PY'
import json, os, sys
iso = {(m["op"], m["impl"], m["bytes"]): m["stats"]["median"] for m in json.load(open(sys.argv[1]))["measurements"]}
pip = {(m["op"], m["impl"], m["bytes"]): m["stats"]["median"] for m in json.load(open(sys.argv[2]))["measurements"]}
print(f"isolated vs pipelined repetitions, {sys.argv[4]} ranks, median per-repetition time (us)")
print(f"{'op':8} {'impl':8} {'bytes':>8} {'isolated':>10} {'pipelined':>10} {'pip/iso':>8}")
rows = []
for k in sorted(iso):
    r = pip[k] / iso[k]
    rows.append({"op": k[0], "impl": k[1], "bytes": k[2], "isolated_s": iso[k], "pipelined_s": pip[k], "ratio": r})
    print(f"{k[0]:8} {k[1]:8} {k[2]:8d} {iso[k] * 1e6:10.2f} {pip[k] * 1e6:10.2f} {r:8.2f}")
tmp = sys.argv[3] + ".tmp"
json.dump({"np": int(sys.argv[4]), "rows": rows}, open(tmp, "w"), indent=1)
os.replace(tmp, sys.argv[3])
PY
