#!/bin/sh
# The transitional runner: suite entries listed and measured with suite options, results
# carry "derived" values and the "suite" configuration; bad suite options are refused with
# one line and exit 2.   usage: suite_runner_cli.sh MPILAB_BENCH_SUITE LAUNCH
set -u
bin="$1"; launch="$2"
run() { "$launch" "$@"; }
. "$(dirname "$0")/tmpdir.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

run 2 "$bin" --poll-sweep 0,500 --list > "$tmp/list" || fail "--list"
for e in "pingpong mpi" "stream mpi" "comb poll500" "overlap_iallreduce mpi" "bcast native"; do
  grep -q "^$e " "$tmp/list" || fail "--list lacks $e"
done

# the largest legal sweep: one COMB entry per interval, none dropped, each selectable
sweep=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
"$bin" --poll-sweep $sweep --list > "$tmp/list16" || fail "--list with 16 intervals"
[ "$(grep -c '^comb ' "$tmp/list16")" -eq 16 ] || fail "--list shows $(grep -c '^comb ' "$tmp/list16") of 16 COMB entries"
"$bin" --poll-sweep $sweep --list --json > "$tmp/list16.json" || fail "--list --json"
python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['entries']; assert sum(x['name']=='comb' for x in e)==16" \
  "$tmp/list16.json" || fail "--list --json lacks COMB entries"
run 2 "$bin" --poll-sweep $sweep --ops comb:poll15 --sizes 8 --comb-msgs 2 --min-reps 2 --max-reps 2 --quiet \
  > /dev/null || fail "--ops comb:poll15 refused"

MPILAB_TRANSPORT=test-shm run 2 "$bin" --ops pingpong,stream,comb --sizes 1K --window 9 --poll-sweep 0,500 \
  --comb-msgs 3 --min-reps 2 --max-reps 3 --quiet --out "$tmp/r.json" > /dev/null || fail "measure"
python3 - "$tmp/r.json" <<'PY' || fail "results content"
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "mpilab.results/1"
assert d["suite"]["window"] == 9 and d["suite"]["poll_sweep"] == [0, 500], d["suite"]
assert d["provenance"]["transport"] == "test-shm"
if os.environ.get("MPILAB_TEST_MPI") == "openmpi":  # set by mpilab-test-launch
    assert d["provenance"]["mca"]["btl"] == "self,vader,tcp", d["provenance"]["mca"]
ms = {(m["op"], m["impl"]): m for m in d["measurements"]}
s = ms[("stream", "mpi")]
assert s["data_ok"] and s["derived"]["window"] == 9
assert abs(s["derived"]["msg_rate"] - 9 / s["stats"]["median"]) < 1e-6 * s["derived"]["msg_rate"]
assert ms[("comb", "poll0")]["derived"]["cpu_avail"] == 0.0
assert ms[("comb", "poll0")]["derived"]["cpu_avail_peer"] == 0.0
assert 0.0 < ms[("comb", "poll500")]["derived"]["cpu_avail_peer"] < 1.5
assert ms[("comb", "poll500")]["derived"]["poll_interval"] == 500
assert ms[("pingpong", "mpi")]["derived"]["latency_s"] > 0
PY

for bad in "--window 0" "--window=0" "--poll-sweep 1,,2" "--poll-sweep x" "--pairs -1"; do
  # shellcheck disable=SC2086
  run 2 "$bin" --ops stream $bad --out "$tmp/bad.json" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  [ "$rc" -ne 0 ] || fail "$bad accepted"
  grep -q "^mpilab-bench: --" "$tmp/err" || fail "$bad: no one-line message: $(cat "$tmp/err")"
  [ ! -e "$tmp/bad.json" ] || fail "$bad: output written"
done
echo "suite_runner_cli: ok"
