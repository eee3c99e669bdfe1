#!/usr/bin/env bash
# Full all-pairs matrix at NP ranks, then per-node estimates from it and from the sampled
# design's subset of its pairs (python -m mpilab.pairs). Without --sim: Open MPI, ranks
# oversubscribed on this machine. With --sim PLATFORM: SMPI (smpirun, from libsimgrid-dev or
# the SMPI build flavour in build-smpi/) on a SimGrid platform file, e.g. 256 ranks.
#   bench/pairs_design.sh [--sim PLATFORM.xml] [NP] [BYTES]    env: MPILAB_BIN, OUTDIR
set -euo pipefail
. "$(dirname "$0")/harness.sh"
cd "$REPO"
sim=
if [ "${1:-}" = --sim ]; then
    [ $# -ge 2 ] || { echo "pairs_design.sh: --sim needs a platform file" >&2; exit 2; }
    sim=$2
    shift 2
    [ -f "$sim" ] || { echo "pairs_design.sh: $sim: no such platform file" >&2; exit 2; }
    command -v smpirun >/dev/null || { echo "pairs_design.sh: --sim needs smpirun (apt-get install libsimgrid-dev, or the SMPI build flavour)" >&2; exit 2; }
fi
np=${1:-8}
bytes=${2:-8}
case "$np$bytes" in *[!0-9]*) echo "pairs_design.sh: NP and BYTES must be integers" >&2; exit 2;; esac
out=${OUTDIR:-bench/out}
mkdir -p "$out"
f="$out/pairs_design.np$np.results.json"
if [ -n "$sim" ]; then
    bin=${MPILAB_BIN:-build-smpi/bin}
    launch=(timeout 3600 smpirun -platform "$sim" -np "$np")
else
    bin=${MPILAB_BIN:-build/bin}
    harness_mpirun launch "$np" --mca btl self,vader,tcp
    launch=(timeout 600 "${launch[@]}")
fi
harness_loadavg
"${launch[@]}" "$bin/mpilab-bench" --ops p2p --sizes "$bytes" --min-reps 30 --max-reps 30 \
    --p2p-schedule parallel --no-fit --quiet --out "$f" >/dev/null
"$PYTHON" -m mpilab.pairs "$f" "$bytes"
