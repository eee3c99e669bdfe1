#!/usr/bin/env python3
"""The sampled pair design against the full matrix on a simulated 256-rank cluster with one
slow node and one slow link (docs/pairs.md, docs/scale-results.md).

    /work/shared/tools/mlock bench python3 bench/pairs_sim.py [--ranks 256] [--out DIR]
                                                              [--designs sampled,full]

The platform: `mpilab sim platform spec` of 4 sites x (ranks/4) nodes (LAN 10 Gbit/s with
2 us per node link, WAN L = 20 us), then two edits the generator cannot express, made here
on its XML: node s2n17's LAN link gets 12 us instead of 2 us (a slow node: +20 us per round
trip) and a direct link between the gateways of sites 1 and 3 with latency 50 us instead of
the two 10 us uplinks (a slow link: +60 us per round trip between those sites; SimGrid's
Dijkstra takes it, one link fewer). Each design is one `mpilab bench --sim` run of 8 B
round trips (deterministic network: --min-time 0, 5 to 20 repetitions), its wall time
measured here; `python -m mpilab.pairs` fits node and link terms with the recorded site
groups. Prints one line per design: pairs, rounds, wall seconds, slow nodes and links found,
and the largest difference between the two designs' node estimates.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import harness
from harness import mpilab

SPEC = """prefix = "pr"
[cluster]
sites = 4
nodes_per_site = {per}
rails = 1
[lan]
rate = "10Gbit"
[wan]
node_rate = "2Gbit"
total_rate = "20Gbit"
delay = "20us"
"""


def platform(out: Path, ranks: int) -> tuple[Path, int, tuple[int, int]]:
    """The platform file; (path, the slow node's rank, the slow link's sites)."""
    spec = out / "spec.toml"
    spec.write_text(SPEC.format(per=ranks // 4))
    xml = out / "platform.xml"
    mpilab("sim", "platform", "spec", str(spec), "-o", str(xml), "--lan-latency", "2us")
    text = xml.read_text()
    slow_node = f"pr-s2n{min(17, ranks // 4 - 1)}"
    text, n = re.subn(rf'(<link id="{slow_node}-lan" [^>]*latency=")[^"]*"', r'\g<1>1.2e-05s"',
                      text)
    assert n == 1, "the slow node's LAN link was not found"
    # links before the first route (SimGrid's DTD), the route beside the others
    first = text.index("  <route ")
    text = (text[:first] + '  <link id="pr-slow13" bandwidth="20000000000bps" '
            'latency="5e-05s" sharing_policy="SPLITDUPLEX" />\n' + text[first:])
    text = text.replace(
        '<route src="pr-gw0" dst="pr-wan">',
        '<route src="pr-gw1" dst="pr-gw3">\n   <link_ctn id="pr-slow13" direction="UP" />\n'
        '  </route>\n  <route src="pr-gw0" dst="pr-wan">', 1)
    assert "pr-slow13" in text
    xml.write_text(text)
    rank = 2 * (ranks // 4) + min(17, ranks // 4 - 1)
    return xml, rank, (1, 3)


def run(out: Path, xml: Path, ranks: int, design: str) -> dict[str, object]:
    res = out / f"{design}.json"
    t0 = time.monotonic()
    p = mpilab("bench", "--sim", str(xml), "--np", str(ranks), "--out", str(res), "--",
               "--ops", "p2p", "--sizes", "8", "--pairs", design, "--min-reps", "5",
               "--max-reps", "20", "--min-time", "0", "--time-budget", "0", "--no-fit",
               capture=True, check=False, timeout=3600)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-2000:])
        raise SystemExit(f"pairs_sim: the {design} run failed ({p.returncode})")
    fit = subprocess.run([sys.executable, "-m", "mpilab.pairs", str(res)], capture_output=True,
                         text=True, check=True, env=harness.env()).stdout
    doc = json.loads(res.read_text())
    d = doc["provenance"]["options"]["pairs"]
    nodes = {int(m.group(1)): float(m.group(2))
             for m in re.finditer(r"^node\s+(\d+)\s+([-\d.]+) us", fit, re.M)}
    slow = re.search(r"^slow nodes (\[.*?\]), slow links (\[.*?\])$", fit, re.M)
    return {"design": design, "pairs": d["pairs"], "full_pairs": d["full_pairs"],
            "rounds": d["rounds"], "groups": f"{d['groups']} ({d['ngroups']})", "wall_s": wall,
            "slow": slow.group(0) if slow else "?", "nodes": nodes, "file": str(res),
            "size": res.stat().st_size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--out", default="/tmp/mpilab-pairs-sim")
    ap.add_argument("--designs", default="sampled,full")
    a = ap.parse_args()
    if a.ranks < 16 or a.ranks % 4:
        raise SystemExit("pairs_sim: --ranks must be a multiple of 4, at least 16")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"load at start: {os.getloadavg()}")
    xml, rank, link = platform(out, a.ranks)
    print(f"{a.ranks} ranks in 4 sites; injected: slow node rank {rank} (+20 us per round "
          f"trip), slow link between sites {link} (+60 us per round trip)")
    rows = [run(out, xml, a.ranks, d) for d in a.designs.split(",")]
    for r in rows:
        print(f"{r['design']:8s} {r['pairs']:6d} of {r['full_pairs']} pairs, {r['rounds']:4d} "
              f"rounds, groups {r['groups']}, wall {r['wall_s']:.1f} s, file {r['size']} B: "
              f"{r['slow']}")
    if len(rows) == 2:
        n0, n1 = rows[0]["nodes"], rows[1]["nodes"]
        assert isinstance(n0, dict) and isinstance(n1, dict)
        worst = max(abs(n0[k] - n1[k]) for k in n0)
        print(f"node estimates: largest difference between the designs {worst:.3f} us "
              f"(slow node: {n0[rank]:.2f} us sampled, {n1[rank]:.2f} us full; median node "
              f"{sorted(n1.values())[len(n1) // 2]:.2f} us)")
        print(f"wall time full / sampled: {rows[1]['wall_s'] / rows[0]['wall_s']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
