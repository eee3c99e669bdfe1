#!/usr/bin/env bash
# The 1 MiB point-to-point figures side by side (docs/bench.md, "Point-to-point", "Buffers"):
# mpilab-bench's p2p and pingpong entries, IMB-MPI1 PingPong and OSU osu_latency, 2 ranks
# --bind-to core, shared memory (btl self,vader), ROUNDS rounds, the tools in the same order
# each round. Prints one line per tool, size and round: the one-way time in us (mpilab: the
# median round trip / 2 as its table shows it; IMB: t[usec]; OSU: its average latency).
#   bench/p2p_buffers.sh [ROUNDS]
#   env: MPILAB_BIN (this build), BASELINE (another mpilab-bench, e.g. built before a change:
#        run in the same rounds as "baseline"), IMB (IMB-MPI1), OSU (osu_latency); IMB and OSU
#        are public suites built outside this tree and are skipped when not given. A
#        BASELINE built before entries declared their figure prints pingpong as the round trip.
# Run it in a bench slot: ../shared/tools/mlock bench bench/p2p_buffers.sh 3
set -euo pipefail
. "$(dirname "$0")/harness.sh"
rounds=${1:-3}
echo "load at start: $(harness_loadavg)"
harness_mpirun mr 2 --bind-to core --mca btl self,vader --mca mpi_yield_when_idle 0
sizes="256K,1M"
mpilab_rows() { # NAME BINARY
    "${mr[@]}" "$2" --ops p2p,pingpong --sizes "$sizes" --no-fit --quiet --time-budget 10s --format csv |
        awk -F, -v n="$1" -v r="$r" 'NR > 1 { printf "round %s %s:%s %s B one-way %.2f us\n", r, n, $1, $5, $6 * 1e6 }'
}
for r in $(seq 1 "$rounds"); do
    if [ -n "${BASELINE:-}" ]; then mpilab_rows baseline "$BASELINE"; fi
    mpilab_rows mpilab "$BIN/mpilab-bench"
    if [ -n "${IMB:-}" ]; then
        "${mr[@]}" "$IMB" PingPong -msglog 18:20 -iter 1000 2>/dev/null |
            awk -v r="$r" '/^ +(262144|1048576) / { printf "round %s IMB %s B one-way %.2f us\n", r, $1, $3 }'
    fi
    if [ -n "${OSU:-}" ]; then
        "${mr[@]}" "$OSU" 2>/dev/null |
            awk -v r="$r" '/^(262144|1048576)[ \t]/ { printf "round %s OSU %s B one-way %.2f us\n", r, $1, $2 }'
    fi
done
echo "load at end: $(harness_loadavg)"
