#!/bin/bash
# The LAN-queue diagnosis of docs/multilane-predictions.md: one 1 MiB scatter job
# (single-lane and P = 4, 3 repetitions) on a multilane testbed, then each namespace's TCP
# retransmission counters and every qdisc that dropped packets; with MODE=thread the ranks
# run Open MPI's TCP progress thread.  Needs root; takes about a minute.
#   MPILAB_BIN=build/bin bench/multilane_queue_diag.sh [SPEC] [PREFIX] [MODE] [OUT.json]
set -u
. "$(dirname "$0")/harness.sh"
cd "$REPO"
SPEC=${1:-examples/testbed/multilane-2x4.toml}
P=${2:-${MPILAB_TESTBED_PREFIX:-mlqd}}
MODE=${3:-plain}
OUT=${4:-out/queue-diag-$MODE.json}
trap 'mpilab testbed down --prefix "$P" || true' EXIT
mpilab testbed up --prefix "$P" "$SPEC" || exit 1
[ "$MODE" = thread ] && export OMPI_MCA_btl_tcp_progress_thread=1
mkdir -p "$(dirname "$OUT")"
mpilab multilane run --testbed "$P" --ops scatter --sizes 1M --impls single,multilane --lanes 4 \
    --reps 3 --model-reps 1 --alpha-bytes 0 -o "$OUT" || exit 1
for ns in $(ip netns list | awk '{print $1}' | grep "^$P-"); do
    echo "== $ns $(ip netns exec "$ns" nstat -az 2>/dev/null |
        awk '/TcpRetransSegs|TCPTimeouts|TCPLossProbes /{printf "%s=%s ", $1, $2}')"
    ip netns exec "$ns" tc -s qdisc 2>/dev/null | grep -E "^qdisc|dropped" | paste - - |
        awk '$0 ~ /dropped [1-9]/'
done
"$PYTHON" - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["runs"]:
    print(r["impl"], "P =", r["lanes"], "times", [round(t, 3) for t in r["times"]],
          "predicted (schedule)", round(r["predicted_sim"], 3))
PY
