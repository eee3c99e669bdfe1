#!/usr/bin/env python3
"""Synthetic all-pairs results files for the report at scale (issue 26, item 4).

    python3 bench/report_scale_synth.py OUT.json --ranks 256 [--sizes 0,64K] [--reps 5]
        [--slow-node 7] [--slow-pair 3-200] [--no-models] [--seed 1]

Every pair i < j of P ranks at every size gets one p2p measurement whose round trip follows
t(i, j, m) = 2 (node_i + node_j + m / B) with node_i ~ U(0.9, 1.1) us and B = 5 GB/s, times
a multiplicative noise U(0.97, 1.03); a slow node's term is 4x, a slow pair's round trip 3x.
Each measurement keeps its repetitions (samples) and the statistics the runner writes. The
collectives, provenance and clock synchronisation of the stored quick survey
(tests/data/survey-quick-np3.json) are kept, so the page has every section; with models,
one Hockney and one LogGP fit per pair (made from the same law, not fitted). The file is
written as a stream (temporary name, then rename): generating 10^6 measurements needs no
more memory than one.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from harness import REPO

TEMPLATE = REPO / "tests" / "data" / "survey-quick-np3.json"
RATE = 5e9          # bytes per second of every link
NODE_S = 1e-6       # a node's share of the one-way time at 0 bytes
SLOW_NODE_X = 4.0   # a slow node's share, times this
SLOW_PAIR_X = 3.0   # a slow pair's round trip, times this


def _parse_size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    return int(t[:-1]) * mult[t[-1]] if t and t[-1] in mult else int(t)


def _pair(text: str) -> tuple[int, int]:
    a, b = (int(x) for x in text.split("-"))
    return (min(a, b), max(a, b))


class Law:
    """The synthetic network: per-node terms, one rate, the injected slow node and pair."""

    def __init__(self, p: int, slow_node: int | None, slow_pair: tuple[int, int] | None,
                 seed: int) -> None:
        rng = random.Random(seed)
        self.node = [NODE_S * rng.uniform(0.9, 1.1) for _ in range(p)]
        if slow_node is not None:
            self.node[slow_node] *= SLOW_NODE_X
        self.slow_pair = slow_pair

    def rtt(self, i: int, j: int, m: int) -> float:
        t = 2.0 * (self.node[i] + self.node[j] + m / RATE)
        return t * (SLOW_PAIR_X if (i, j) == self.slow_pair else 1.0)


def _measurement(law: Law, i: int, j: int, m: int, p: int, reps: int,
                 rng: random.Random) -> dict[str, Any]:
    base = law.rtt(i, j, m)
    s = sorted(base * rng.uniform(0.97, 1.03) for _ in range(reps))
    mean = sum(s) / reps
    sd = math.sqrt(sum((x - mean) ** 2 for x in s) / (reps - 1)) if reps > 1 else 0.0
    med = s[reps // 2] if reps % 2 else 0.5 * (s[reps // 2 - 1] + s[reps // 2])
    half = 2.776 * sd / math.sqrt(reps)
    rng.shuffle(s)
    return {"op": "p2p", "impl": "roundtrip", "timing": "p2p", "schedule": "parallel",
            "pair": [i, j], "bytes": m, "bytes_back": m, "ranks": p,
            "precision": {"cl": 0.95, "eps": 0.025, "min_reps": 5, "max_reps": 200},
            "stats": {"mean": mean, "ci_half": half, "rel_err": half / mean, "median": med,
                      "med_lo": min(s), "med_hi": max(s), "med_rel_err": 0.02,
                      "min": min(s), "max": max(s), "stdev": sd, "reps": reps, "invalid": 0,
                      "converged": True},
            "samples": s, "valid": [True] * reps}


def _hockney(law: Law, i: int, j: int, sizes: list[int]) -> dict[str, Any]:
    a = law.rtt(i, j, 0) / 2
    b = (law.rtt(i, j, 1 << 20) / 2 - a) / (1 << 20)
    lo, hi = min(sizes), max(sizes)
    return {"i": i, "j": j, "alpha": a, "beta": b, "points": len(sizes),
            "ranges": [{"from": lo, "to": hi, "alpha": a, "beta": b, "flags": []}],
            "quality": {"alpha": {"raw": a, "lo": 0.97 * a, "hi": 1.03 * a, "flags": []},
                        "beta": {"raw": b, "lo": 0.97 * b, "hi": 1.03 * b, "flags": []}}}


def _loggp(law: Law, i: int, j: int, sizes: list[int]) -> dict[str, Any]:
    rtt0 = law.rtt(i, j, 0)
    os_, or_ = 0.1 * rtt0, 0.15 * rtt0
    G = 1.0 / RATE
    par = {"L": rtt0 / 2 - os_ - or_, "os": os_, "os_per_byte": 0.0, "or": or_,
           "or_per_byte": 0.0, "g": 0.3 * rtt0, "G": G, "flags": []}
    per = [{"bytes": m, "rtt": law.rtt(i, j, m), "os": os_, "or": or_, "g": 0.3 * rtt0 + G * m}
           for m in sizes]
    return {"i": i, "j": j, **par, "per_size": per,
            "ranges": [{"from": min(sizes), "to": max(sizes), **par}]}


def _pairs(p: int) -> Iterator[tuple[int, int]]:
    for i in range(p):
        for j in range(i + 1, p):
            yield i, j


def _array(f: IO[str], items: Iterator[dict[str, Any]]) -> int:
    f.write("[")
    n = 0
    for x in items:
        f.write(",\n" if n else "\n")
        f.write(json.dumps(x, separators=(",", ":")))
        n += 1
    f.write("]")
    return n


def write(out: str | os.PathLike[str], p: int, sizes: list[int], reps: int = 5,
          slow_node: int | None = None, slow_pair: tuple[int, int] | None = None,
          models: bool = True, seed: int = 1) -> int:
    """Write the file; returns the number of measurements."""
    if p < 2 or reps < 1 or not sizes:
        raise ValueError("need at least 2 ranks, 1 repetition and 1 size")
    for r in (slow_node, *(slow_pair or ())):
        if r is not None and not 0 <= r < p:
            raise ValueError(f"rank {r} is not one of {p} ranks")
    tmpl = json.loads(TEMPLATE.read_text(encoding="utf-8"))
    prov = tmpl["provenance"]
    prov["ranks"] = p
    prov["hosts"] = [f"node{k:04d}" for k in range(p)]
    prov["mapping"] = [{"rank": k, "host": f"node{k:04d}"} for k in range(p)]
    prov["command"] = f"bench/report_scale_synth.py --ranks {p} (synthetic)"
    prov.pop("clock_sync", None)
    coll = [m for m in tmpl["measurements"] if m["op"] != "p2p"]
    law = Law(p, slow_node, slow_pair, seed)
    rng = random.Random(seed + 1)
    sizes = sorted(set(sizes))
    target = Path(out)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write('{"schema":"mpilab.results/1",\n"provenance":')
            f.write(json.dumps(prov))
            f.write(',\n"measurements":')
            p2p = (_measurement(law, i, j, m, p, reps, rng) for i, j in _pairs(p)
                   for m in sizes)
            n = _array(f, itertools.chain(coll, p2p))
            if models:
                f.write(',\n"models":{"hockney":{"pairs":')
                _array(f, (_hockney(law, i, j, sizes) for i, j in _pairs(p)))
                f.write('},\n"loggp":{"pairs":')
                _array(f, (_loggp(law, i, j, sizes) for i, j in _pairs(p)))
                f.write("}}")
            f.write("}\n")
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--sizes", default="0", help="comma-separated sizes (0,4K,64K)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--slow-node", type=int)
    ap.add_argument("--slow-pair", type=_pair)
    ap.add_argument("--no-models", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    try:
        sizes = [_parse_size(s) for s in a.sizes.split(",")]
        n = write(a.out, a.ranks, sizes, a.reps, a.slow_node, a.slow_pair, not a.no_models,
                  a.seed)
    except (ValueError, KeyError) as e:
        print(f"report_scale_synth: {e}", file=sys.stderr)
        return 2
    print(f"{n} measurements ({a.ranks} ranks, {len(sizes)} size(s)) -> {a.out} "
          f"({os.path.getsize(a.out) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
