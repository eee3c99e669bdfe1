#!/usr/bin/env bash
# One full pass of the test suite with two busy-loop CPU hogs running (issue 11: the suite
# must pass 5 times in a row under two hogs). Runs from this worktree without installing
# anything: ctest in build/ and build-asan/ (both built beforehand), then pytest with
# PYTHONPATH=python. Prints one line per part (status, seconds) and a summary line.
#
#   /work/bin/busy bench/suite_under_hogs.sh [LOGDIR]     (on the shared machine: busy)
set -uo pipefail
. "$(dirname "$0")/harness.sh"
cd "$REPO"
logdir=${1:-/tmp/suite-under-hogs.$$}
mkdir -p "$logdir"
yes >/dev/null & h1=$!
yes >/dev/null & h2=$!
trap 'kill $h1 $h2 2>/dev/null' EXIT
fail=0
part() {  # part NAME CMD...: run, log, one line
    local name=$1 t0=$SECONDS rc
    shift
    "$@" >"$logdir/$name.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || fail=1
    printf '%-10s rc=%d %5d s  %s\n' "$name" $rc $((SECONDS - t0)) "$(grep -E "passed|failed" "$logdir/$name.log" | tail -1)"
}
t0=$SECONDS
echo "pass start $(date -u +%T) load $(harness_loadavg); logs in $logdir"
part ctest ctest --test-dir build -j2 --output-on-failure
part ctest-asan env ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -j2 --output-on-failure
part pytest "$PYTHON" -m pytest -q -p no:cacheprovider \
    --durations=25 tests/python
echo "pass end $(date -u +%T): $([ $fail -eq 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0)) s"
exit $fail
