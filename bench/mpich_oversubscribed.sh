#!/usr/bin/env bash
# 3 ranks on this machine's cores: 1-byte ping-pong medians of every pair under Open MPI
# (yield when idle) and MPICH (default, and with the settings that might make it yield),
# measured side by side in one run. Usage: bench/mpich_oversubscribed.sh [NP]
# Needs build/ (Open MPI) and build-mpich/ (scripts/build --mpich).
set -uo pipefail
. "$(dirname "$0")/harness.sh"
cd "$REPO"
np=${1:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
args=(--ops p2p --sizes 1 --min-reps 20 --max-reps 40 --quiet --no-fit)
run() { # label, then the command up to the program
    local label=$1; shift
    local t0=$SECONDS
    if timeout 600 "$@" "${args[@]}" --out "$tmp/$label.json" >/dev/null 2>"$tmp/$label.err"; then
        python3 - "$tmp/$label.json" "$label" "$((SECONDS - t0))" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# one compact pair matrix (pair_matrix: per-pair arrays) per size
med = ["%d-%d:%.1f" % (i, j, t * 1e6) for m in d["measurements"]
       for i, j, t in zip(m["pair_matrix"]["i"], m["pair_matrix"]["j"], m["pair_matrix"]["median"])]
print(f"{sys.argv[2]:32s} {sys.argv[3]:>4s} s   round-trip median us per pair: {' '.join(med)}")
PY
    else
        echo "$label: failed or timed out: $(tail -1 "$tmp/$label.err")"
    fi
}
harness_mpirun yield "$np" --mca mpi_yield_when_idle 1
harness_mpirun noyield "$np" --mca mpi_yield_when_idle 0
echo "$np ranks on $(nproc) cores"
run openmpi-yield "${yield[@]}" build/bin/mpilab-bench
run openmpi-noyield "${noyield[@]}" build/bin/mpilab-bench
run mpich-default mpiexec.mpich -n "$np" build-mpich/bin/mpilab-bench
run mpich-POLLS_BEFORE_YIELD=1 env MPIR_CVAR_POLLS_BEFORE_YIELD=1 mpiexec.mpich -n "$np" build-mpich/bin/mpilab-bench
run mpich-CH4_GLOBAL_PROGRESS=0 env MPIR_CVAR_CH4_GLOBAL_PROGRESS=0 mpiexec.mpich -n "$np" build-mpich/bin/mpilab-bench
run mpich-UCX_TLS=self,tcp env UCX_TLS=self,tcp mpiexec.mpich -n "$np" build-mpich/bin/mpilab-bench
