#!/usr/bin/env bash
# docs/architecture.md's built-in recipe, followed literally in a copy of the tree: one new
# file (the pingpong recipe with MPILAB_ENTRIES(swap, ...) instead of MPILAB_PLUGIN_ENTRIES)
# and one line, mpilab_entries(swap swap_entry.c), in src/suite/CMakeLists.txt. Nothing else
# edited: the copy's mpilab-bench lists the entry as built-in and measures it. Then the tag of
# the line is misspelt: the build fails, naming the tag no file defines; then the line is
# left out: the build fails with one line naming the file and its tag.
# Slow (it builds the library): ctest label "slow".
# Usage: recipe_builtin.sh SRCDIR LAUNCH MPICC (the copy is built with this build's MPI)
set -u
src=$1 launch=$2 mpicc=$3
. "$(dirname "$0")/tmpdir.sh"
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
tree="$tmp/tree"
mkdir "$tree"
(cd "$src" && tar -c --exclude='./build*' --exclude=./.venv --exclude=./.git . ) | tar -x -C "$tree"
sed 's/^MPILAB_PLUGIN_ENTRIES(/MPILAB_ENTRIES(swap, /' "$src/tests/mpi/recipe_pingpong.c" >"$tree/src/suite/swap_entry.c"
echo 'mpilab_entries(swap swap_entry.c)' >>"$tree/src/suite/CMakeLists.txt"
if cmake -S "$tree" -B "$tree/build" -G Ninja -DMPILAB_TESTS=OFF -DMPI_C_COMPILER="$mpicc" >"$tmp/cfg.log" 2>&1 &&
   cmake --build "$tree/build" --target mpilab-bench >"$tmp/build.log" 2>&1; then
    ok "1 new file + 1 line builds"
else
    bad "the built-in recipe does not build"; tail -5 "$tmp/cfg.log" "$tmp/build.log"
fi
bench="$tree/build/bin/mpilab-bench"
"$bench" --list --json 2>/dev/null | python3 -c '
import json, sys
e = [x for x in json.load(sys.stdin)["entries"] if (x["name"], x["impl"]) == ("pingpong", "sendrecv_replace")]
assert len(e) == 1 and e[0]["origin"] == "builtin", e
' && ok "listed as built-in" || bad "not listed as built-in"
timeout 200 "$launch" -q 2 "$bench" --ops pingpong:sendrecv_replace --sizes 1K --max-reps 5 --no-fit --quiet \
    --out "$tmp/r.json" >/dev/null 2>&1 && python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["measurements"]
assert len(m) == 1 and m[0]["data_ok"] and set(m[0]["derived"]) == {"latency_s", "bandwidth_Bps"}, m
' "$tmp/r.json" && ok "measured, data checked, derived values" || bad "measurement"
# the line names a tag the file does not define: the build check says which, in one line
sed -i 's/^mpilab_entries(swap swap_entry.c)$/mpilab_entries(swapp swap_entry.c)/' "$tree/src/suite/CMakeLists.txt"
if cmake --build "$tree/build" --target mpilab-bench >"$tmp/build2.log" 2>&1; then
    bad "a misspelt tag built"
elif grep -q "^mpilab_entries(swapp ...): no file" "$tmp/build2.log"; then
    ok "misspelt tag: $(grep "^mpilab_entries(swapp" "$tmp/build2.log")"
else
    bad "misspelt tag: the build failed without naming swapp"; tail -5 "$tmp/build2.log"
fi
# the line is left out: the build check names the file (file:line) and the tag
sed -i '/^mpilab_entries(swapp swap_entry.c)$/d' "$tree/src/suite/CMakeLists.txt"
if cmake --build "$tree/build" --target mpilab-bench >"$tmp/build3.log" 2>&1; then
    bad "an entry file without its mpilab_entries() line built"
elif grep -q "^src/suite/swap_entry.c:[0-9]*: defines built-in entries 'swap'" "$tmp/build3.log"; then
    ok "line left out: $(grep "^src/suite/swap_entry.c:" "$tmp/build3.log")"
else
    bad "line left out: the build failed without naming src/suite/swap_entry.c"; tail -5 "$tmp/build3.log"
fi
exit $fail
