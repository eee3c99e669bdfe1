#!/usr/bin/env python3
"""The LMO model (docs/models.md "Heterogeneous model") against a simulated platform's exact
values: runs `mpilab bench --sim PLATFORM -- --ops p2p,scatter:...,gather:... --models
lmo,hockney` (SimGrid SMPI; simulated time is deterministic) and prints, side by side,

1. per link: the platform's L_ij (latency of the route's links) and 1/beta_ij (the slowest
   link of the route) against the fitted ones, with the relative error;
2. per node: the fitted C_i and t_i (the platform simulates no CPU work, so its exact
   values are 0) and which node and link the model calls slowest;
3. per operation and size >= --min-bytes per rank: measured, LMO's and Hockney's predictions
   and their errors.

Platforms: a SimGrid Cluster zone of host_links (what `mpilab sim platform hetero|flat`
writes for a one-switch cluster, e.g. examples/platforms/mpiblib16.xml); a route i -> j is
i's up link then j's down link. Anything else is refused in one line.

  python3 bench/lmo_sim.py [--platform examples/platforms/mpiblib16.xml] [--np 4]
                           [--sizes 1K,64K,256K] [--lmo-bytes 64K] [--json out.json]
  python3 bench/lmo_sim.py --results sim.json   (compare a file already run)

Targets (issue 32): each link's values within 5% of the platform's, the slow node and link
named; scatter/gather predictions within 10% of measured at >= 64 KiB and better than
Hockney's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from harness import REPO, loadavg, mpilab, write_json
from mpilab.sim.platform import hosts_of


def _num_unit(text: str, units: dict[str, float], what: str) -> float:
    for u in sorted(units, key=len, reverse=True):
        if text.endswith(u):
            try:
                return float(text[: -len(u)]) * units[u]
            except ValueError:
                break
    raise SystemExit(f"lmo_sim: {what} '{text}' is not understood")


def exact_links(path: str) -> dict[str, tuple[float, float]]:
    """host -> (latency s, up/down rate B/s) of its own link; one line and exit otherwise."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise SystemExit(f"lmo_sim: {path}: {e}") from None
    links = {}
    for ln in root.iter("link"):
        bw = _num_unit(ln.get("bandwidth", ""), {"bps": 1 / 8, "Bps": 1.0, "kbps": 125.0,
                                                 "Mbps": 125e3, "Gbps": 125e6}, "bandwidth")
        lat = _num_unit(ln.get("latency", "0s"), {"s": 1.0, "ms": 1e-3, "us": 1e-6,
                                                   "ns": 1e-9}, "latency")
        links[ln.get("id", "")] = (lat, bw)
    zones = [z for z in root.iter("zone") if z.get("routing") == "Cluster"]
    if len(zones) != 1 or zones[0].find("backbone") is not None:
        raise SystemExit(f"lmo_sim: {path}: not one Cluster zone without a backbone "
                         "(the exact values are computed for that case only)")
    out = {}
    for hl in zones[0].iter("host_link"):
        up = hl.get("up", "")[: -len("_UP")]
        if up not in links:
            raise SystemExit(f"lmo_sim: {path}: host_link {hl.get('id')} names no link")
        out[hl.get("id", "")] = links[up]
    return out


def run(platform: str, np: int, sizes: str, lmo_bytes: str, out: Path) -> dict[str, Any]:
    ops = "p2p,scatter:linear,gather:linear,scatter:binomial,gather:binomial"
    mpilab("bench", "--sim", platform, "--np", str(np), "--out", str(out), "--", "--ops", ops,
           "--sizes", sizes, "--models", "lmo,hockney", "--lmo-bytes", lmo_bytes, "--quiet",
           capture=True, timeout=3600)
    return json.loads(out.read_text())


def _rel(a: float | None, b: float) -> str:
    if a is None:
        return "-"
    return f"{(a - b) / b * 100:+.2f}%" if b else f"{a:.3g} (exact 0)"


def compare(doc: dict[str, Any], platform: str, min_bytes: int) -> dict[str, Any]:
    lm = (doc.get("models") or {}).get("lmo")
    if not isinstance(lm, dict) or lm.get("error"):
        raise SystemExit(f"lmo_sim: no LMO fit in the results ({(lm or {}).get('error')})")
    hosts = hosts_of(Path(platform).read_bytes(), platform)
    ex = exact_links(platform)
    rep: dict[str, Any] = {"links": [], "nodes": [], "predictions": []}
    print(f"{'link':>6} {'L exact us':>11} {'L fit us':>10} {'err':>8} "
          f"{'1/beta exact ns/B':>18} {'1/beta fit ns/B':>16} {'raw':>8} {'err':>9}")
    for k, (i, j) in enumerate(lm["links"]["pairs"]):
        li, lj = ex[hosts[i]], ex[hosts[j]]
        L_ex, ib_ex = li[0] + lj[0], 1 / min(li[1], lj[1])
        L, ib = lm["links"]["L"][k], lm["links"]["inv_beta"][k]
        row = {"pair": [i, j], "L_exact": L_ex, "L": L["value"], "inv_beta_exact": ib_ex,
               "inv_beta": ib["value"], "inv_beta_raw": ib["raw"],
               "flags": L["flags"] + ib["flags"]}
        rep["links"].append(row)
        print(f"{i:>3}-{j:<2} {L_ex * 1e6:11.3f} {L['value'] * 1e6:10.3f} "
              f"{_rel(L['value'], L_ex):>8} {ib_ex * 1e9:18.3f} {ib['value'] * 1e9:16.3f} "
              f"{ib['raw'] * 1e9:8.3f} {_rel(ib['value'], ib_ex):>9} {' '.join(row['flags'])}")
    print(f"\n{'node':>4} {'C fit us':>9} {'t fit ns/B':>11}  (exact: C = t = 0, no CPU work "
          "is simulated)")
    for n in lm["nodes"]:
        rep["nodes"].append({"rank": n["rank"], "C": n["C"]["value"], "t": n["t"]["value"]})
        print(f"{n['rank']:>4} {n['C']['value'] * 1e6:9.3f} {n['t']['value'] * 1e9:11.3f} "
              f"{' '.join(n['C']['flags'] + n['t']['flags'])}")
    sl = lm.get("slowest") or {}
    print(f"\nslowest node {sl.get('node')} ({sl.get('node_vs_median')}x the median), "
          f"slowest link {sl.get('link')} ({sl.get('link_vs_median')}x the median)")
    hock = {(p["op"], p["impl"], p["bytes"], p.get("timing")): p
            for p in (doc["models"].get("predictions") or [])}
    print(f"\n{'op':8} {'impl':9} {'bytes':>8} {'measured us':>12} {'LMO us':>10} {'err':>8} "
          f"{'Hockney us':>11} {'err':>8}")
    for p in sorted(lm.get("predictions") or [], key=lambda p: (p["op"], p["impl"], p["bytes"])):
        if p["bytes"] < min_bytes or p.get("measured") is None:
            continue
        h = hock.get((p["op"], p["impl"], p["bytes"], p.get("timing")))
        m = p["measured"]
        e_l = (p["predicted"] - m) / m
        e_h = None if h is None else (h["predicted"] - m) / m
        rep["predictions"].append({"op": p["op"], "impl": p["impl"], "bytes": p["bytes"],
                                   "measured": m, "lmo": p["predicted"], "lmo_err": e_l,
                                   "hockney": h and h["predicted"], "hockney_err": e_h})
        print(f"{p['op']:8} {p['impl']:9} {p['bytes']:8d} {m * 1e6:12.1f} "
              f"{p['predicted'] * 1e6:10.1f} {e_l * 100:+7.1f}% "
              f"{'-' if h is None else format(h['predicted'] * 1e6, '11.1f'):>11} "
              f"{'-' if e_h is None else format(e_h * 100, '+7.1f') + '%':>8}")
    lerr = [abs(r["L"] - r["L_exact"]) / r["L_exact"] for r in rep["links"]]
    berr = [abs(r["inv_beta"] - r["inv_beta_exact"]) / r["inv_beta_exact"] for r in rep["links"]]
    pe = rep["predictions"]
    rep["summary"] = {"L_max_err": max(lerr), "inv_beta_max_err": max(berr),
                      "pred_within_10": sum(abs(r["lmo_err"]) <= 0.10 for r in pe),
                      "pred_beats_hockney": sum(r["hockney_err"] is not None
                                                and abs(r["lmo_err"]) < abs(r["hockney_err"])
                                                for r in pe), "pred_n": len(pe)}
    s = rep["summary"]
    print(f"\nL within 5%: {'yes' if s['L_max_err'] <= 0.05 else 'no'} (max {s['L_max_err']:.2%});"
          f" 1/beta within 5%: {'yes' if s['inv_beta_max_err'] <= 0.05 else 'no'} "
          f"(max {s['inv_beta_max_err']:.2%}); predictions within 10%: {s['pred_within_10']}/"
          f"{s['pred_n']}, better than Hockney: {s['pred_beats_hockney']}/{s['pred_n']}")
    return rep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default=str(REPO / "examples/platforms/mpiblib16.xml"))
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--sizes", default="1K,64K,256K")
    ap.add_argument("--lmo-bytes", default="64K")
    ap.add_argument("--min-bytes", type=int, default=65536)
    ap.add_argument("--results", help="compare this results file instead of running")
    ap.add_argument("--json", help="write the comparison here")
    a = ap.parse_args()
    if a.np < 3:
        print("lmo_sim: --np must be >= 3 (a triplet)", file=sys.stderr)
        return 2
    print(f"load at start: {loadavg()}")
    if a.results:
        doc = json.loads(Path(a.results).read_text())
    else:
        with tempfile.TemporaryDirectory(prefix="lmo-sim-") as tmp:
            doc = run(a.platform, a.np, a.sizes, a.lmo_bytes, Path(tmp) / "sim.json")
    rep = compare(doc, a.platform, a.min_bytes)
    if a.json:
        write_json(a.json, {"platform": a.platform, "np": doc["provenance"].get("ranks"), **rep})
    return 0


if __name__ == "__main__":
    sys.exit(main())
