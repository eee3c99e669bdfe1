#!/usr/bin/env bash
# docs/architecture.md's recipes, followed literally through the plugin path: in a temporary
# directory, with nothing of the tree edited, each recipe's one file is compiled as the doc
# says (MPICC -shared -fPIC -I<include dirs> FILE.c -o FILE.so) and mpilab-bench --entries
# lists it and measures it with correct data. Then the mistakes a contributor makes on
# purpose, each built as its own plugin, are refused with one line naming the entry.
# Usage: recipe_plugin.sh MPILAB-BENCH LAUNCH MPICC SRCDIR BUILDDIR
set -u
bench=$1 launch=$2 mpicc=$3 src=$4 build=$5
. "$(dirname "$0")/tmpdir.sh"
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
plugin() { # NAME SOURCE: build $tmp/NAME.so from SOURCE as the recipe says
    "$mpicc" -shared -fPIC -Wall -Werror -I"$src/include" -I"$build/include" "$2" -o "$tmp/$1.so"
}

# ---- the two recipes: listed, measured, data checked ----
for recipe in pingpong:sendrecv_replace:2 scatter:flat_isend:3 bcast:ring:4; do
    IFS=: read -r name impl np <<<"$recipe"
    cp "$src/tests/mpi/recipe_$name.c" "$tmp/mine.c"
    if ! plugin "$name" "$tmp/mine.c"; then bad "$name: the recipe's file does not compile"; continue; fi
    "$bench" --entries "$tmp/$name.so" --list --json >"$tmp/list.json" && python3 - "$tmp/list.json" "$name" "$impl" "$tmp/$name.so" <<'PY' && ok "$name:$impl listed from its plugin" || bad "$name:$impl --list --json"
import json, sys
_, path, name, impl, so = sys.argv
e = [x for x in json.load(open(path))["entries"] if (x["name"], x["impl"]) == (name, impl)]
assert len(e) == 1 and e[0]["origin"] == so, e
PY
    MPILAB_RECIPE_CALLS="$tmp/$name.calls" timeout 200 "$launch" -q "$np" "$bench" --entries "$tmp/$name.so" --ops "$name:$impl" --sizes 1,4K \
        --max-reps 5 --no-fit --quiet --out "$tmp/$name.json" >/dev/null 2>"$tmp/$name.err" &&
    python3 - "$tmp/$name.json" "$impl" <<'PY' && ok "$name:$impl measured, data checked" || { bad "$name:$impl measured"; cat "$tmp/$name.err"; }
import json, sys
ms = [m for m in json.load(open(sys.argv[1]))["measurements"] if m["impl"] == sys.argv[2]]
assert len(ms) == 2 and all(m["data_ok"] and m["stats"]["reps"] >= 2 for m in ms), ms
PY
done
# the ring bcast's own count of its calls (recipe_bcast.c): every process ran it at least once
# per repetition of every measurement labelled with it
python3 - "$tmp/bcast.json" ring 4 "$tmp"/bcast.calls.* <<'PY' && ok "bcast:ring: the measured function is the plugin's" || bad "bcast:ring: the plugin's function did not run for its measurements"
import json, sys
path, impl, np, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
ms = [m for m in json.load(open(path))["measurements"] if m["op"] == "bcast"]
assert ms and all(m["impl"] == impl for m in ms), [(m["op"], m["impl"]) for m in ms]
reps = sum(m["stats"]["reps"] for m in ms)
calls = [int(open(f).read()) for f in files if not f.endswith("*")]
assert len(calls) == np and min(calls) >= reps, (calls, reps)
print(f"calls per process {calls}, repetitions measured {reps}")
PY

# ---- mistakes on purpose: one line naming the entry, exit non-zero, at --list already ----
refused() { # NAME WHAT-THE-LINE-SAYS SED-EXPRESSION (applied to the pingpong recipe)
    sed "$3" "$src/tests/mpi/recipe_pingpong.c" >"$tmp/$1.c"
    if ! plugin "$1" "$tmp/$1.c"; then bad "$1: does not compile"; return; fi
    "$bench" --entries "$tmp/$1.so" --list >/dev/null 2>"$tmp/$1.err"
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(wc -l <"$tmp/$1.err")" -eq 1 ] && grep -q "pingpong:sendrecv_replace" "$tmp/$1.err" &&
       grep -q "$2" "$tmp/$1.err"; then
        ok "$1 -> $(cat "$tmp/$1.err")"
    else
        bad "$1 -> rc=$rc: $(cat "$tmp/$1.err")"
    fi
}
refused derived_without_derive "no derive function" 's/\.derive = swap_derive//; s/^static int swap_derive/__attribute__((unused)) static int swap_derive/'
refused unknown_figure "figure 99 is not one of" 's/\.figure = MPILAB_FIGURE_EXCHANGE/.figure = (mpilab_op_figure_t)99/'
refused wrong_model_pattern "does not fit" 's/\.derive = swap_derive/.derive = swap_derive, .model = MPILAB_MODEL_GATHER_LINEAR/'
refused duplicate_name "defined twice" 's/MPILAB_PLUGIN_ENTRIES({/MPILAB_PLUGIN_ENTRIES({.name = "pingpong", .impl = "sendrecv_replace", .setup = swap_setup, .run = swap_run, .validate = swap_validate, .teardown = swap_teardown}, {/'
# a plugin that is not one, and a missing file
printf 'int unrelated;\n' >"$tmp/none.c"
plugin none "$tmp/none.c"
for f in "$tmp/none.so" "$tmp/missing.so"; do
    "$bench" --entries "$f" --list >/dev/null 2>"$tmp/f.err"
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(wc -l <"$tmp/f.err")" -eq 1 ] && grep -q "$f" "$tmp/f.err"; then
        ok "--entries $(basename "$f") -> $(cat "$tmp/f.err")"
    else
        bad "--entries $(basename "$f") -> rc=$rc: $(cat "$tmp/f.err")"
    fi
done
exit $fail
