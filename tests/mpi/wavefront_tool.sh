#!/usr/bin/env bash
# The mpilab-wavefront tool end to end: create, convert into 3 band files (optimized
# layout), run --mpi on 3 ranks with JSON results, verify bitwise; bad input exits 2
# with one line and no output file.
set -euo pipefail
tool=$1; launch=$2
d=$(mktemp -d /tmp/mpilab-wf-tool-XXXXXX)
trap 'rm -rf "$d"' EXIT
export TMPDIR="$d"  # own Open MPI session directory: concurrent tests collide in /tmp
"$tool" create --rows 37 --cols 53 --seed 9 "$d/d0" "$d/c0"
"$tool" convert --quiet --layout optimized --mb 8 --nb 5 --bands 3 "$d/d0" "$d/d"
"$tool" convert --quiet --layout block --mb 8 --nb 5 --bands 3 "$d/c0" "$d/c"
"$launch" 3 "$tool" run --mpi --data "$d/d" --coef "$d/c" --iterations 5 --waves 2 --io mmap \
  --json "$d/r.json" --quiet
python3 - "$d/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "mpilab.results/1", r["schema"]
w = r["wavefront"]
assert w["mode"] == "mpi" and w["workers"] == 3 and w["iterations"] == 5, w
assert w["layout"] == "optimized" and w["MB"] == 8 and w["NB"] == 5 and w["T"] == 1, w
m = r["measurements"][0]
assert m["op"] == "wavefront" and len(m["samples"]) == 5 and all(s >= 0 for s in m["samples"])
assert r["provenance"]["ranks"] == 3
PY
"$tool" verify --initial "$d/d0" --coef "$d/c0" --iterations 5 "$d/d" | grep -q "bitwise equal"
# a wrong iteration count must be detected
if "$tool" verify --initial "$d/d0" --coef "$d/c0" --iterations 4 "$d/d" >/dev/null; then
  echo "verify accepted a wrong result" >&2; exit 1
fi
# bad input: one line on stderr, exit 2, nothing written
set +e
"$tool" convert --layout block --mb 99 --nb 5 "$d/d0" "$d/x" 2>"$d/err"; rc=$?
set -e
[ "$rc" = 2 ] && [ "$(wc -l <"$d/err")" = 1 ] && grep -q "larger than" "$d/err"
[ ! -e "$d/x" ] && ! ls "$d" | grep -q '\.tmp\.'
echo ok
