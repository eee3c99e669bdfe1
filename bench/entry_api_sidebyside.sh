#!/usr/bin/env bash
# Two mpilab-bench builds side by side in one run (e.g. before and after an entry-API change):
# ROUNDS rounds, alternating which build goes first, of pingpong and scatter:linear at 8 B,
# 1 KiB and 64 KiB on 2 ranks; prints, per measurement, the paired ratios new/base of the
# medians and their median. Run it in a bench slot: /work/shared/tools/mlock bench ...
# Usage: entry_api_sidebyside.sh BASE-MPILAB-BENCH NEW-MPILAB-BENCH [ROUNDS]
set -eu
base=$1 new=$2 rounds=${3:-6}
[ -x "$base" ] && [ -x "$new" ] || { echo "entry_api_sidebyside.sh: need two mpilab-bench executables" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/harness.sh"
harness_mpirun launch 2
echo "load at start: $(harness_loadavg)"
for r in $(seq 1 "$rounds"); do
    order="base new"; [ $((r % 2)) = 1 ] && order="new base"
    for which in $order; do
        b=$base; [ "$which" = new ] && b=$new
        timeout 120 "${launch[@]}" "$b" --ops pingpong,scatter:linear --sizes 8,1K,64K --max-reps 200 \
            --min-reps 50 --no-fit --quiet --out "$tmp/${which}_$r.json" >/dev/null
    done
done
"$PYTHON" - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
res: dict = {}
for w in ("base", "new"):
    for r in range(1, rounds + 1):
        for m in json.load(open(f"{tmp}/{w}_{r}.json"))["measurements"]:
            res.setdefault((m["op"], m["impl"], m["bytes"]), {}).setdefault(w, []).append(m["stats"]["median"])
for (op, impl, b), v in res.items():
    rs = [n / o for o, n in zip(v["base"], v["new"])]
    print(f"{op}:{impl} {b:>6} B  base {statistics.median(v['base']) * 1e6:8.3f} us  "
          f"new {statistics.median(v['new']) * 1e6:8.3f} us  new/base paired median "
          f"{statistics.median(rs):.3f} (rounds: {' '.join(f'{x:.2f}' for x in rs)})")
PY
