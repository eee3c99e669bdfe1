#!/usr/bin/env bash
# mpilab-bench command line: every kind of bad input gives exactly one line
# "mpilab-bench: ..." on stderr, a non-zero exit under mpirun, and no output file; a small
# good run writes a complete results file.  Usage: bench_runner_cli.sh RUNNER LAUNCH (build/mpilab-test-launch)
set -u
runner=$1
launch=$2
. "$(dirname "$0")/tmpdir.sh"
run() { "$launch" -q 2 "$runner" "$@"; }
# the runner without MPI ranks to talk to (--list, --help, --version): directly, or, in the
# SMPI flavour (whose programs only smpirun starts), as one simulated rank
direct() {
    if [ "${MPILAB_TEST_MPI:-}" = smpi ]; then "$launch" -q 1 "$runner" "$@"; else "$runner" "$@"; fi
}
fail=0
# Bad-input cases run a few at a time (they mostly wait for mpirun's start-up).
cases=()
bad() { cases+=("$*"); }
check_case() { # index, args...
    local d="$tmp/case$1"; shift
    local rc lines ours
    rc=$(cat "$d/rc")
    lines=$(wc -l <"$d/stderr")
    ours=$(grep -c '^mpilab-bench: ' "$d/stderr")
    if [ "$rc" -eq 0 ] || [ "$lines" -ne 1 ] || [ "$ours" -ne 1 ] || [ -e "$d/out.json" ] || compgen -G "$d/out.json.tmp.*" >/dev/null; then
        echo "FAIL: $* -> rc=$rc, $lines stderr line(s), output exists: $([ -e "$d/out.json" ] && echo yes || echo no)"
        sed 's/^/    /' "$d/stderr"
        fail=1
    else
        echo "ok: $* -> rc=$rc: $(cat "$d/stderr")"
    fi
}
run_cases() {
    local i=0 c
    for c in "${cases[@]}"; do
        mkdir -p "$tmp/case$i/t"
        # Each concurrent mpirun has its own TMPDIR: sharing one, two of them raced on the
        # session directory (ORTE_ERROR_LOG in session_dir.c, seen under a CPU hog).
        # shellcheck disable=SC2086
        ( export TMPDIR="$tmp/case$i/t"
          run $c --out "$tmp/case$i/out.json" >"$tmp/case$i/stdout" 2>"$tmp/case$i/stderr"; echo $? >"$tmp/case$i/rc" ) &
        i=$((i + 1))
        if [ $((i % 6)) -eq 0 ]; then wait; fi
    done
    wait
    i=0
    for c in "${cases[@]}"; do
        # shellcheck disable=SC2086
        check_case $i $c
        i=$((i + 1))
    done
}
bad --ops foo
bad --ops scatter:nosuch
bad --ops p2p:nosuch
bad --ops ,
bad --sizes -4
bad --sizes 12abc
bad --sizes 1:-8:2
bad --sizes 64:1:x2
bad --eps 0
bad --eps 1.5
bad --eps nan
bad --cl 0
bad --cl 1
bad --min-reps 10 --max-reps 5
bad --models foo
bad --models loggp --loggp-burst 1
bad --models loggp --loggp-pairs some
bad --min-reps 1
bad --min-reps x
bad --timing fastest
bad --timing max,,root
bad --isolation sometimes
bad --isolation barrier,barrier
bad --isolation barrier,
bad --isolation ,none
bad --p2p-schedule random
bad --pairs random
bad --pair-groups 0
bad --pairs-seed -1
bad --sync ntp
# exact (no probing) only where every rank reads one clock: the SMPI build, no injected clocks
bad --sync exact --inject-clock offset=1ms,drift=10ppm,seed=1
[ "${MPILAB_TEST_MPI:-}" = smpi ] || bad --sync exact
bad --root 2
bad --bogus-option
bad --ops bcast extra-argument
bad --sizes 3G
bad --ops bcast --sizes 8 --out-of-place
bad --placement sideways
bad --placement
bad --inject-clock offset=ten
bad --inject-clock drift=1e9ppm
bad --inject-clock offset=1ms,colour=red
bad --min-time -1ms
bad --min-time soon
run_cases
# an unwritable output location
run --ops bcast --sizes 8 --out "$tmp/no/such/dir/out.json" >/dev/null 2>"$tmp/stderr"
rc=$?
if [ "$rc" -eq 0 ] || [ "$(wc -l <"$tmp/stderr")" -ne 1 ]; then echo "FAIL: unwritable --out rc=$rc"; fail=1; else echo "ok: unwritable --out: $(cat "$tmp/stderr")"; fi

# --list names every operation and implementation with its timing methods
direct --list >"$tmp/list" 2>/dev/null || { echo "FAIL: --list exit"; fail=1; }
for want in "p2p roundtrip p2p" "scatter linear max,root,global,opspec" "gather binomial max,root,global,opspec" \
            "bcast native max,root,global" "alltoall native max,root,global" "barrier native max,root,global"; do
    grep -qx "$want" "$tmp/list" || { echo "FAIL: --list lacks '$want'"; fail=1; }
done

# -h/--help (every option, units stated) and --version: stdout, exit 0, nothing on stderr.
# SimGrid's engine takes --help and --version out of a simulated program's arguments for its
# own (its options and its version), so the SMPI flavour checks -h only.
infos="-h --help --version"
[ "${MPILAB_TEST_MPI:-}" = smpi ] && infos="-h"
for a in $infos; do
    direct $a >"$tmp/info" 2>"$tmp/stderr" || { echo "FAIL: $a exit"; fail=1; }
    [ -s "$tmp/info" ] && [ ! -s "$tmp/stderr" ] || { echo "FAIL: $a output"; fail=1; }
done
direct -h >"$tmp/help" 2>/dev/null
grep -q "K = 1024" "$tmp/help" || { echo "FAIL: --help states no binary units"; fail=1; }
for o in --list --ops --sizes -m --timing --cl --eps --min-reps --max-reps --allow-single-rep --warmup \
         --isolation --pipeline-depth --root --sync --p2p-schedule --p2p-back --models --no-fit --loggp-burst \
         --loggp-or-wait --loggp-pairs --window --pairs --pair-groups --pairs-seed --poll-sweep --comb-msgs --out \
         --quiet --help --iterations -x -msglog; do  # every option described
    grep -q -- "^  \(-[a-z], \)\?$o " "$tmp/help" || { echo "FAIL: --help does not describe $o"; fail=1; }
done
grep -q -- "--version" "$tmp/help" || { echo "FAIL: --help does not mention --version"; fail=1; }
[ "${MPILAB_TEST_MPI:-}" = smpi ] || grep -q '^mpilab-bench [0-9]' "$tmp/info" \
    || { echo "FAIL: --version prints '$(cat "$tmp/info")'"; fail=1; }
# strict values: blank-then-minus and nan refused with one line, exit 2 (quoted, so not via bad())
for a in "--sizes= -4" "--max-reps= 5" "--cl=nan" "-m4K:1K" "--sizes=\xd9\xa4"; do
    a=$(printf "%b" "$a")
    run --ops bcast "$a" >/dev/null 2>"$tmp/stderr" && { echo "FAIL: '$a' accepted"; fail=1; }
    [ "$(grep -c '^mpilab-bench: ' "$tmp/stderr")" -eq 1 ] || { echo "FAIL: '$a': $(cat "$tmp/stderr")"; fail=1; }
done
# OSU's -i N / --iterations N (a fixed count) and -x N (warm-up), IMB's -msglog A:B (sizes 0
# and 2^A..2^B); IMB's -npmin is refused by name
run --ops bcast -msglog 2:4 -i 3 -x 1 --quiet --out "$tmp/osu.json" >/dev/null 2>&1 || { echo "FAIL: -msglog/-i/-x run"; fail=1; }
python3 -c "
import json,sys
o = json.load(open(sys.argv[1]))['provenance']['options']
assert o['sizes'] == [0, 4, 8, 16], o['sizes']
assert o['precision']['min_reps'] == o['precision']['max_reps'] == 3, o['precision']
assert o['warmup'] == 1, o['warmup']" "$tmp/osu.json" || { echo "FAIL: -msglog 2:4 -i 3 -x 1 options"; fail=1; }
for a in "-msglog 5:2" "-msglog 31" "-msglog x" "--iterations 0" "-npmin 2" "-x -1"; do
    # shellcheck disable=SC2086
    run --ops bcast $a >/dev/null 2>"$tmp/stderr" && { echo "FAIL: '$a' accepted"; fail=1; }
    [ "$(wc -l <"$tmp/stderr")" -eq 1 ] && [ "$(grep -c '^mpilab-bench: ' "$tmp/stderr")" -eq 1 ] \
        || { echo "FAIL: '$a': $(cat "$tmp/stderr")"; fail=1; }
done
# OSU-style -m MIN:MAX is --sizes MIN:MAX:x2
run --ops bcast -m 1K:4K --max-reps 2 --min-reps 2 --quiet --out "$tmp/m.json" >/dev/null 2>&1 || { echo "FAIL: -m run"; fail=1; }
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['provenance']['options']['sizes'] == [1024, 2048, 4096]" \
    "$tmp/m.json" || { echo "FAIL: -m 1K:4K sizes"; fail=1; }

# --inject-clock: a known clock error per rank, recorded in the results; global timing
# (synchronised clocks) still measures the operation, not the injected offsets. The offsets
# are minutes apart, so "corrected" needs no assumption about how long a bcast takes on a
# loaded machine (with yielding ranks a 1 KiB bcast can take milliseconds of wall time)
run --ops bcast --sizes 1K --timing global --max-reps 10 --placement keep --quiet \
    --inject-clock offset=500s,drift=100ppm,seed=2 --out "$tmp/inj.json" >/dev/null 2>"$tmp/stderr" \
    || { echo "FAIL: --inject-clock run"; cat "$tmp/stderr"; fail=1; }
python3 - "$tmp/inj.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
o, p = d["provenance"]["options"], d["provenance"]["placement"]
inj = o["inject_clock"]
assert inj["spec"] == "offset=500s,drift=100ppm,seed=2" and inj["seed"] == 2, inj
assert inj["max_offset_s"] == 500 and abs(inj["max_drift"] - 1e-4) < 1e-12, inj
assert [r["rank"] for r in inj["ranks"]] == [0, 1] and all(abs(r["offset_s"]) <= 500 for r in inj["ranks"])
assert o["placement"] == "keep" and p["mode"] == "keep" and p["pinned"] is False, p
diff = abs(inj["ranks"][1]["offset_s"] - inj["ranks"][0]["offset_s"])
m = d["measurements"][0]
med, unc = m["stats"]["median"], m["clock_sync_uncertainty_s"]
# seed 2 puts the two clocks minutes apart: unsynchronised, a global time would show it
assert diff > 100, diff
if unc < 1.0:  # the sync resolves the injected offsets: they must be corrected
    assert 0 < med < 1.0, (diff, med, unc, m["flags"])
else:          # it does not: the figure must say so
    assert "clock_uncertain" in m["flags"], (med, unc, m["flags"])
# the flag follows its rule: the bound at the end of the measurement against eps x median
assert ("clock_uncertain" in m["flags"]) == (unc > m["precision"]["eps"] * med), (med, unc, m["flags"])
# drift recovery: rank r's clock runs at (1 + d_r) / (1 + d_0) of rank 0's; the recovered
# drift lies within the drift uncertainty the sync states for it (resolved or not)
cs = d["provenance"]["clock_sync"]
d0 = inj["ranks"][0]["drift"]
for r in cs["ranks"]:
    true = (1 + inj["ranks"][r["rank"]]["drift"]) / (1 + d0) - 1
    assert abs(r["drift"] - true) <= r["drift_uncertainty"], (r, true)
print("ok: --inject-clock recorded, offsets", diff, "s apart, global median", med, "drift",
      cs["ranks"][0]["drift"], "+-", cs["ranks"][0]["drift_uncertainty"])
PY

# a good run: all four timing methods, p2p at two sizes (fit), results complete
out="$tmp/good.json"
run --ops p2p,scatter:linear,gather:binomial,bcast --sizes 16,1K --timing max,root,global,opspec \
    --max-reps 20 --quiet --out "$out" >"$tmp/table" 2>"$tmp/stderr"
rc=$?
if [ "$rc" -ne 0 ] || [ -s "$tmp/stderr" ]; then echo "FAIL: good run rc=$rc"; cat "$tmp/stderr"; fail=1; fi
python3 - "$out" "$tmp/table" <<'PY' || fail=1
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "mpilab.results/1"
p = d["provenance"]
assert p["tool"] == "mpilab-bench" and p["ranks"] == 2 and p["options"]["timing"] == ["max", "root", "global", "opspec"]
# the runner's default: skampi, or exact in the SMPI flavour (one simulated clock, nothing probed)
want_sync = "exact" if os.environ.get("MPILAB_TEST_MPI") == "smpi" else "skampi"
assert p["clock_sync"]["method"] == want_sync and p["clock_sync"]["max_residual_s"] >= 0, p["clock_sync"]
assert 1 <= p["clock_sync"]["last_attempts"] <= 6 and isinstance(p["clock_sync"]["last_precise"], bool)
assert p["placement"]["mode"] == "auto" and p["placement"]["reason"] and p["options"]["placement"] == "auto"
assert p["options"]["precision"]["min_time_s"] == 0.002
assert "options" in p and "inject_clock" not in p["options"]
m = d["measurements"]
p2p = [x for x in m if x["op"] == "p2p"]
# one compact pair matrix per size; 2 ranks: the full design, the one pair 0-1
assert len(p2p) == 2 and all(x["pair_matrix"]["i"] == [0] and x["pair_matrix"]["j"] == [1]
                             and x["pair_matrix"]["design"] == "full" and x["bytes"] == x["bytes_back"]
                             for x in p2p)
assert p["options"]["pairs"]["design"] == "full" and p["options"]["pairs"]["pairs"] == 1
coll = [x for x in m if x["op"] != "p2p"]
# scatter:linear and gather:binomial: 4 methods; bcast: 3 (opspec skipped and recorded)
assert len(coll) == 2 * (4 + 4 + 3), len(coll)
assert {"op": "bcast", "impl": "native", "timing": "opspec"} in p["options"]["timing_skipped"]
def stats_of(x):
    pm = x.get("pair_matrix")
    return {"reps": pm["reps"][0], "converged": pm["converged"][0]} if pm else x["stats"]
for x in m:
    s = stats_of(x)
    if "pair_matrix" in x:
        assert len(x["pair_matrix"]["samples"][0]) == s["reps"] and 1 <= s["reps"] <= 20
        continue
    assert len(x["samples"]) == s["reps"] == len(x["valid"]) and 1 <= s["reps"] <= 20
    if x["timing"] == "global":
        assert "clock_sync_residual_s" in x
    if x["op"] != "p2p":
        assert x["data_ok"] is True
pairs = d["models"]["hockney"]["pairs"]
assert len(pairs) == 1 and pairs[0]["ranges"]
preds = d["models"]["predictions"]
assert {(x["op"], x["impl"]) for x in preds} == {("scatter", "linear"), ("gather", "binomial")}
rows = [l for l in open(sys.argv[2]) if l.strip()]
# the table, then one line saying how many converged (and a verdict line if too few did)
conv = sum(1 for x in m if stats_of(x)["converged"])
assert rows[1 + len(m)].startswith(f"{conv} of {len(m)} measurements converged"), rows[1 + len(m):]
rows = rows[:1 + len(m)]
assert rows[0].split()[:4] == ["op", "impl", "timing", "bytes"] and len(rows) == 1 + len(m)
print("ok: good run,", len(m), "measurements")
PY
exit $fail
