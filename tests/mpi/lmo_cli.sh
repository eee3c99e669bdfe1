#!/usr/bin/env bash
# mpilab-bench --models lmo: bad input (too few ranks for a triplet, bad --lmo-bytes, --no-fit
# with lmo) gives one line "mpilab-bench: ..." on stderr, a non-zero exit and no output file;
# a 3-rank run writes models.lmo with every node, every link, the experiments and predictions.
# Usage: lmo_cli.sh RUNNER LAUNCH
set -u
runner=$1
launch=$2
. "$(dirname "$0")/tmpdir.sh"
fail=0
bad() { # np, args...
    local np=$1; shift
    local out="$tmp/bad.json" rc lines ours
    "$launch" -q "$np" "$runner" "$@" --out "$out" >"$tmp/stdout" 2>"$tmp/stderr"
    rc=$?
    lines=$(wc -l <"$tmp/stderr")
    ours=$(grep -c '^mpilab-bench: ' "$tmp/stderr")
    if [ "$rc" -eq 0 ] || [ "$lines" -ne 1 ] || [ "$ours" -ne 1 ] || [ -e "$out" ]; then
        echo "FAIL: -np $np $* -> rc=$rc, $lines stderr line(s)"; sed 's/^/    /' "$tmp/stderr"; fail=1
    else
        echo "ok: -np $np $* -> rc=$rc: $(cat "$tmp/stderr")"
    fi
}
bad 2 --ops scatter:linear --sizes 1K --models lmo
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-bytes 0
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-bytes 12abc
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-bytes 4G
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-rendezvous 12abc
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-rendezvous 4G
bad 3 --ops scatter:linear --sizes 1K --models lmo --no-fit
bad 3 --ops scatter:linear --sizes 1K --models lmo,nosuch
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-wait nap
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-wait sleep:0
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-wait sleep:1s
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-eps 0
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-eps 1
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-eps nan
bad 3 --ops scatter:linear --sizes 1K --models lmo --lmo-eps 0.01x
out="$tmp/good.json"
if ! "$launch" 3 "$runner" --ops scatter:linear,gather:binomial --sizes 1K,8K --models hockney,lmo \
        --lmo-bytes 8K --lmo-wait sleep:50us --lmo-eps 0.01 --max-reps 20 --time-budget 10s --quiet --out "$out" >"$tmp/stdout" 2>"$tmp/stderr"; then
    echo "FAIL: the good run"; sed 's/^/    /' "$tmp/stderr"; fail=1
fi
python3 - "$out" <<'PY' || fail=1
import json, math, sys
d = json.load(open(sys.argv[1]))
l = d["models"]["lmo"]
assert d["provenance"]["options"]["lmo_bytes"] == 8192
assert d["provenance"]["options"]["lmo_rendezvous"] == 65536
assert d["provenance"]["options"]["lmo_eps"] == 0.01
assert d["models"]["lmo"]["rendezvous_bytes"] == 65536
assert "lmo" in d["provenance"]["options"]["models"]
assert l["bytes"] == 8192 and l["triplets"] == 1 and l["rounds"] == 1, l
assert [n["rank"] for n in l["nodes"]] == [0, 1, 2]
for n in l["nodes"]:
    for k in ("C", "t"):
        assert n[k]["value"] is not None and n[k]["value"] >= 0, n
        assert n[k]["value"] == 0 or n[k]["raw"] == n[k]["value"]
        assert n[k]["raw"] >= 0 or "clamped" in n[k]["flags"]
assert l["links"]["pairs"] == [[0, 1], [0, 2], [1, 2]]
e = l["experiments"]
assert len(e["rt_0"]["median"]) == 3 and "y" not in e["rt_0"]
assert e["p2t_m"]["root"] == [0, 1, 2] and e["p2t_m"]["bytes"] == 8192
for k in e:
    for s, r in zip(e[k]["samples"], e[k]["reps"]):
        assert len(s) == r and all(x > 0 for x in s)
# the empty point-to-two experiments are paired: the round trips to x and to y beside each
# repetition, as many as its samples, their medians with them; the other series are not
p0 = e["p2t_0"]
for a, b in (("rt_x", "rt_x_median"), ("rt_y", "rt_y_median")):
    assert len(p0[a]) == len(p0[b]) == 3, p0.keys()
    for s, r, med in zip(p0[a], p0["reps"], p0[b]):
        assert len(s) == r and all(x > 0 for x in s) and min(s) <= med <= max(s)
assert all("rt_x" not in e[k] for k in ("rt_0", "rt_m", "p2t_m"))
preds = {(p["op"], p["impl"], p["bytes"]) for p in l["predictions"]}
assert preds == {("scatter", "linear", 1024), ("scatter", "linear", 8192), ("gather", "binomial", 1024),
                 ("gather", "binomial", 8192)}, preds
# a time <= 0 (raw parameters from noisy experiments, e.g. under two CPU hogs) is flagged
assert all(math.isfinite(p["predicted"]) and (p["predicted"] > 0) != ("nonpositive" in p.get("flags", []))
           for p in l["predictions"]), l["predictions"]
w = d["provenance"]["options"]["lmo_wait"]
assert l["wait"] == "sleep" and w["mode"] == "sleep" and abs(w["interval_s"] - 50e-6) < 1e-12, w
st = l["star"]
assert len(st["latency_s"]) == 3 and len(st["inv_rate"]) == 3 and st["slowest_link_of"] in (0, 1, 2), st
sl = l["slowest"]
if sl["node_by"] == "C":
    # a star: the node by C's processing part C - h u (h header bytes cross the access
    # link), named only when it stands out; the CPU headline is the same node
    h, u = sl["header_bytes"], st["inv_rate"]
    proc = [max(l["nodes"][i]["C"]["value"] - h * u[i], 0.0) for i in range(3)]
    assert h >= 0, sl
    if "node" in sl:
        assert sl["node"] == max(range(3), key=lambda i: proc[i]) == sl["cpu"], (sl, proc)
        assert abs(sl["cpu_C_s"] - proc[sl["cpu"]]) <= 1e-9 * max(proc), (sl, proc)
    else:
        assert "cpu" not in sl, sl
else:
    # the node slowest at messaging: the largest C (clamped value), with that C in the file;
    # the slowest node by C + M t only when one stands out
    assert sl.get("node", 0) in (0, 1, 2), sl
    if "cpu" in sl:
        sc = sl["cpu"]
        assert sc == max(range(3), key=lambda i: l["nodes"][i]["C"]["value"]), sl
        assert sl["cpu_C_s"] == l["nodes"][sc]["C"]["value"] > 0, sl
    else:  # no node is slow at messaging only when every C is 0
        assert all(n["C"]["value"] <= 0 for n in l["nodes"]), sl
# with 3 nodes the star's latencies solve the three pair sums exactly
ys = [l["nodes"][i]["C"]["raw"] + l["nodes"][j]["C"]["raw"] + L["raw"]
      for (i, j), L in zip(l["links"]["pairs"], l["links"]["L"])]
a = st["latency_s"]
assert all(abs(a[i] + a[j] - y) <= 1e-9 * max(1.0, abs(y))
           for (i, j), y in zip(l["links"]["pairs"], ys)), (a, ys)
print("ok: 3-rank run: models.lmo complete")
PY
exit $fail
