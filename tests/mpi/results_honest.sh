#!/usr/bin/env bash
# No negative time or impossible parameter unflagged: mpilab-bench runs that provoke them
# (root timing of tiny messages, where the corrected time can be <= 0; Hockney and LogGP fits
# on a loaded machine, where a fit can come out negative) write results files, and
# `python3 -m mpilab.quality` scans every one of them (plus any results file given in
# $MPILAB_SCAN_DIR). Usage: results_honest.sh RUNNER LAUNCH SRCDIR
# (LAUNCH: the build's mpilab-test-launch)
set -u
runner=$1
launch=$2
src=$3
. "$(dirname "$0")/tmpdir.sh"
run() { "$launch" -q "$@"; }
fail=0
run 2 "$runner" --quiet --ops p2p,scatter,gather --timing max,root,opspec --sizes 0,1,1K,64K \
    --max-reps 30 --models hockney,loggp --out "$tmp/a.json" >/dev/null || { echo "FAIL: run a"; fail=1; }
run 3 "$runner" --quiet --ops p2p,bcast --timing root,global --sizes 0,16,4K --max-reps 20 \
    --out "$tmp/b.json" >/dev/null || { echo "FAIL: run b"; fail=1; }
files=("$tmp"/*.json)
if [ -n "${MPILAB_SCAN_DIR:-}" ]; then
    while IFS= read -r f; do files+=("$f"); done < <(find "$MPILAB_SCAN_DIR" -name '*.json' -print)
fi
for f in "${files[@]}"; do
    [ -e "$f" ] || { echo "FAIL: $f missing"; fail=1; continue; }
    if ! PYTHONPATH="$src/python" python3 -m mpilab.quality "$f"; then
        echo "FAIL: $f has unflagged impossible values"
        fail=1
    else
        echo "ok: $f"
    fi
done
exit $fail
