#!/usr/bin/env bash
# The multilane / single-lane operation-table entries through mpilab-bench: not selected by
# a bare operation name (they need a grid), measured with every timing method when named,
# predicted in models.multilane (or its measurement refused as too noisy in one line), and
# a missing grid or a bad P reported in one line naming the reason.
# Usage: multilane_bench.sh MPILAB-BENCH LAUNCH
set -u
bench=$1
launch=$2
. "$(dirname "$0")/tmpdir.sh"
run() { timeout 200 "$launch" -q 4 "$bench" "$@"; }
printf '0 a\n1 b\n2 a\n3 b\n' >"$tmp/map"
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

"$bench" --list --json >"$tmp/list.json" && python3 - "$tmp/list.json" <<'PY' && ok "--list --json: grid entries need a grid" || bad "--list --json"
import json, sys
e = {(x["name"], x["impl"]): x for x in json.load(open(sys.argv[1]))["entries"]}
for op in ("scatter", "gather"):
    for impl in ("multilane", "single-lane"):
        assert "grid" in e[(op, impl)]["needs"] and e[(op, impl)]["timing"] == ["max", "root", "global"]
assert any(k[0] == "scatter" and "grid" not in x["needs"] for k, x in e.items())
PY

run --ops scatter --sizes 1K --max-reps 5 --out "$tmp/plain.json" >/dev/null 2>&1 &&
python3 -c "
import json, sys
ops = json.load(open('$tmp/plain.json'))['provenance']['options']['ops']
listed = json.load(open('$tmp/list.json'))['entries']
want = [e['name'] + ':' + e['impl'] for e in listed if e['name'] == 'scatter' and 'grid' not in e['needs']]
assert want and ops == want, (ops, want)
" && ok "--ops scatter leaves the grid entries out" || bad "--ops scatter"

export MPILAB_MULTILANE_SITES="map:$tmp/map" MPILAB_MULTILANE_MODEL_BYTES=8M
ops=scatter:multilane,scatter:single-lane,gather:multilane,gather:single-lane
if run --ops $ops --timing max,root,global --sizes 1K,64K --max-reps 10 --out "$tmp/ml.json" \
       >/dev/null 2>"$tmp/ml.err" && python3 - "$tmp/ml.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ms = [m for m in d["measurements"] if m["impl"] in ("multilane", "single-lane")]
keys = {(m["op"], m["impl"], m["timing"], m["bytes"]) for m in ms}
assert len(keys) == 2 * 2 * 3 * 2, sorted(keys)
# every repetition ran; a max-timed time is positive; a root- or global-timed one is positive
# or, when every corrected sample came out <= 0 (busy machine), null and flagged (issue 9)
for m in ms:
    st = m["stats"]
    assert st["reps"] >= 5, m
    if st["mean"] is None:
        assert m["timing"] != "max" and "no_valid_samples" in m["flags"], m
    else:
        assert st["mean"] > 0, m
ml = d["models"]["multilane"]
if "error" in ml:
    assert "too noisy" in ml["error"], ml["error"]
else:
    assert ml["n0"] == 2 and ml["n1"] == 2 and ml["lanes"] == 2 and len(ml["b"]) == 2
    pr = ml["predictions"]
    assert len(pr) == len(ms)
    for p in pr:
        assert p["lanes"] == (2 if p["impl"] == "multilane" else 1)
        assert p["predicted_paper"] > 0 and p["predicted_sim"] > 0 and p["measured"] > 0
    assert [s["bytes"] for s in ml["sizes"]] == [1024, 65536]
    # alpha is never an impossible value shown as fitted: a raw estimate <= 0 is 0 + "clamped"
    q = ml["quality"]["alpha"]
    assert ml["alpha"] >= 0 and "no_ci" in q["flags"], q
    assert ("clamped" in q["flags"]) == (q["raw"] <= 0) and (q["raw"] <= 0) == (ml["alpha"] == 0), (ml["alpha"], q)
    cal = ml["alpha_calibration"]
    assert cal["bytes"] == 1024 and cal["lanes"] == 2 and cal["reps"] == 5, cal
    for op in ("scatter", "gather"):
        c = cal[op]
        assert len(c["times"]) == 5 and c["ci95"][0] <= c["alpha"] <= c["ci95"][1], c
        assert ("clamped" in c["flags"]) == (c["alpha"] <= 0), c
        assert c["alpha_used"] == (c["alpha"] if c["alpha"] > 0 else 0), c
PY
then ok "grid entries measured with max, root, global; models.multilane: $(python3 -c "import json; m=json.load(open('$tmp/ml.json'))['models']['multilane']; print(m.get('error') or str(len(m['predictions'])) + ' predictions')")"
else bad "grid entries"; cat "$tmp/ml.err"; fi

MPILAB_MULTILANE_LANES=7 run --ops scatter:multilane --sizes 1K --max-reps 5 --out "$tmp/p7.json" \
    >/dev/null 2>"$tmp/p7.err"
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$tmp/p7.err")" -eq 1 ] && grep -q "P = 7 lanes: need 1 <= P <= P_sup = 2" "$tmp/p7.err"; then
    ok "P = 7: $(cat "$tmp/p7.err")"; else bad "P = 7 (rc=$rc)"; cat "$tmp/p7.err"; fi

MPILAB_MULTILANE_SITES=testbed run --ops gather:single-lane --sizes 1K --max-reps 5 \
    --out "$tmp/tb.json" >/dev/null 2>"$tmp/tb.err"
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$tmp/tb.err")" -eq 1 ] && grep -q "not a testbed node name" "$tmp/tb.err"; then
    ok "no grid: $(cat "$tmp/tb.err")"; else bad "no grid (rc=$rc)"; cat "$tmp/tb.err"; fi
exit $fail
